"""Which Ingresses are ours: the class of an Ingress against `--ingress-class` and, with
`--ingress-nginx-compat`, the IngressClasses of the retired community controller (ingress-nginx).

Guarantees:
- The class an Ingress asks for is its `kubernetes.io/ingress.class` annotation when non-empty, else its
  `spec.ingressClassName`; an Ingress without either is never ours (NIC's rule, and ingress-nginx's
  default without `--watch-ingress-without-class`).
- Compat off: an Ingress is ours exactly when its class is `--ingress-class` (unchanged NIC behaviour).
- Compat on, also ours: an Ingress whose class (annotation or spec) names an IngressClass whose
  `spec.controller` is `k8s.io/ingress-nginx`, and one with the legacy annotation
  `kubernetes.io/ingress.class: nginx` (ingress-nginx's default class name), whether or not such an
  IngressClass exists. `--ingress-class` stays the primary class: its IngressClass must exist at start-up
  and (compat on) may name either controller.
- The compat names follow the cluster: `observe` / `forget` (the IngressClass informer) update them and say
  whether they changed, so the caller re-enqueues the Ingresses of that class. Reads are lock-free: the set is
  replaced, never changed in place.
- `is_ours` costs one or two string comparisons for an Ingress of the primary class.
- `is_ingress_nginx` tells the Ingresses written for ingress-nginx (compat on): their hosts are shared by
  every such Ingress naming them, as ingress-nginx merged them (`controller/configuration.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

INGRESS_CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"
NGINX_CONTROLLER: Final = "nginx.org/ingress-controller"
INGRESS_NGINX_CONTROLLER: Final = "k8s.io/ingress-nginx"
INGRESS_NGINX_LEGACY_CLASS: Final = "nginx"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def class_of(ing: Mapping[str, Any]) -> tuple[str, bool]:
    """(the class an Ingress asks for, whether it comes from the legacy annotation); ("", False) for none."""
    annotations = _meta(ing).get("annotations")
    if isinstance(annotations, dict):
        cls = annotations.get(INGRESS_CLASS_ANNOTATION)
        if cls:
            return str(cls), True
    spec = ing.get("spec")
    name = spec.get("ingressClassName") if isinstance(spec, dict) else None
    return (str(name), False) if name else ("", False)


def controller_of(ingress_class: Mapping[str, Any]) -> str:
    spec = ingress_class.get("spec")
    controller = spec.get("controller") if isinstance(spec, dict) else None
    return controller if isinstance(controller, str) else ""


class IngressClasses:
    """The class filter of the Ingress kind (see the module docstring)."""

    def __init__(self, primary: str, *, ingress_nginx_compat: bool = False,
                 compat_names: Iterable[str] = ()) -> None:
        self.primary = primary
        self.compat = ingress_nginx_compat
        self._names: frozenset[str] = frozenset(compat_names) if ingress_nginx_compat else frozenset()

    @property
    def compat_names(self) -> frozenset[str]:
        """The names of the IngressClasses with controller `k8s.io/ingress-nginx` (compat on)."""
        return self._names

    def is_ours_class(self, cls: str, from_annotation: bool) -> bool:
        if cls == self.primary:
            return bool(cls)
        if not self.compat or not cls:
            return False
        return cls in self._names or (from_annotation and cls == INGRESS_NGINX_LEGACY_CLASS)

    def is_ours(self, ing: Mapping[str, Any]) -> bool:
        return self.is_ours_class(*class_of(ing))

    def is_ingress_nginx(self, ing: Mapping[str, Any]) -> bool:
        """Compat on: whether the Ingress asks for an ingress-nginx class (an IngressClass of controller
        `k8s.io/ingress-nginx`, or the legacy annotation `nginx` when that is not the primary class of
        another controller). Such Ingresses share a host as ingress-nginx's did."""
        if not self.compat:
            return False
        cls, from_annotation = class_of(ing)
        if cls in self._names:
            return True
        return from_annotation and cls == INGRESS_NGINX_LEGACY_CLASS and cls != self.primary

    def observe(self, ingress_class: Mapping[str, Any]) -> bool:
        """An IngressClass was listed, added or changed: True if the compat names changed."""
        name = _meta(ingress_class).get("name")
        if not self.compat or not isinstance(name, str) or not name:
            return False
        if controller_of(ingress_class) == INGRESS_NGINX_CONTROLLER:
            if name in self._names:
                return False
            self._names = self._names | {name}
            return True
        return self.forget(name)

    def forget(self, name: str) -> bool:
        """An IngressClass was deleted (or moved to another controller): True if the compat names changed."""
        if name not in self._names:
            return False
        self._names = self._names - {name}
        return True

    def describe(self) -> str:
        """The classes served, for logs."""
        if not self.compat:
            return self.primary
        names = sorted({self.primary, *self._names})
        return ", ".join(names) + f" (and the annotation {INGRESS_CLASS_ANNOTATION}: " \
                                  f"{INGRESS_NGINX_LEGACY_CLASS})"
