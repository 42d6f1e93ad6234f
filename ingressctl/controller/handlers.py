"""Informer event handlers: filter events and turn the ones that matter into `Task`s on the queue.

Guarantees:
- Handlers never sync anything themselves and never raise: they only decide and enqueue (NIC's handlers.go).
- Resyncs and no-op updates (same `metadata.resourceVersion`) are dropped by every handler.
- Tombstones (`DeletedFinalStateUnknown`, seen when a delete was missed during a watch gap) are unwrapped and
  handled like ordinary deletes; unlike NIC, no delete is ever dropped.
- Ingress class: the `kubernetes.io/ingress.class` annotation wins when non-empty, else
  `spec.ingressClassName`; an Ingress is ours only if that class equals `--ingress-class` (with
  `--ingress-nginx-compat`, also the ingress-nginx classes: `controller/ingress_class.py`); an Ingress with no
  class is ignored (NIC 2.1).
  An update is enqueued when the old OR the new object is ours, so a class change away from us removes the
  config. Deletes are always enqueued (deleting an unknown key is a cheap no-op downstream).
- Ingress updates that only change status or resourceVersion (our own status writes) are dropped.
- Services: enqueued on add and delete; on update only when ports, type or externalName change (selector and
  clusterIP changes are covered by EndpointSlice events), or for the `--external-service` on any change.
- EndpointSlices are enqueued by the Service they belong to (label `kubernetes.io/service-name`), so a deleted
  slice still re-renders its Service's Ingresses; slices without that label are ignored.
- Secrets: only supported types (`kubernetes.io/tls`, `nginx.org/htpasswd`, ...; with
  `--ingress-nginx-compat`, `Opaque` too); an update that moves a Secret to
  or from a supported type is enqueued so the store forgets or learns it.
- The adds of the informers' initial list of Services, EndpointSlices and Secrets are not enqueued, except
  those of the `--external-service` and of the special TLS Secrets: until the caches have synced nothing is
  rendered, and the start-up reads the caches (Secrets: the pre-sync) after that, so their tasks would
  be no-ops on the start-up's critical path (one per object: tens of thousands at scale).
- ConfigMaps: only the NGINX ConfigMap named by `--nginx-configmaps`.
- IngressClasses: a change of the primary class is logged; with `--ingress-nginx-compat` every IngressClass is
  watched, and one that becomes (or stops being) an ingress-nginx class re-enqueues the Ingresses of that
  class, so they are served (or removed) without waiting for their own next change.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable
from typing import Any

from ingressctl.controller.ingress_class import INGRESS_NGINX_CONTROLLER, IngressClasses
from ingressctl.controller.secrets import SUPPORTED_SECRET_TYPES
from ingressctl.controller.task import Kind, Task
from ingressctl.k8s.store import SERVICE_NAME_LABEL
from ingressctl.keys import object_key
from ingressctl.keys import resource_version as resource_version
from ingressctl.logging import get_logger

log = get_logger(__name__)

Enqueue = Callable[[Task], None]

INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
NGINX_CONTROLLER_NAME = "nginx.org/ingress-controller"


# ------------------------------------------------------------------------------------------------------------
# Pure helpers


def unwrap(obj: Any) -> dict[str, Any]:
    """Return the object itself, or the last known state carried by a DeletedFinalStateUnknown tombstone
    (an empty dict when the tombstone carries none)."""
    if isinstance(obj, dict):
        return obj
    if hasattr(obj, "key") and hasattr(obj, "obj"):
        inner = obj.obj
        return inner if isinstance(inner, dict) else {}
    raise TypeError(f"unexpected object in event handler: {type(obj).__name__}")


def tombstone_key(obj: Any) -> str | None:
    """The key a tombstone carries, or None for a plain object."""
    if isinstance(obj, dict):
        return None
    key = getattr(obj, "key", None)
    return key if isinstance(key, str) else None


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def ingress_class_of(ing: dict[str, Any]) -> str:
    """The class an Ingress asks for: the annotation if non-empty, else spec.ingressClassName, else ""."""
    annotations = meta(ing).get("annotations") or {}
    cls = annotations.get(INGRESS_CLASS_ANNOTATION) or ""
    if cls:
        return str(cls)
    spec = ing.get("spec") or {}
    return str(spec.get("ingressClassName") or "")


def has_correct_ingress_class(ing: dict[str, Any], ingress_class: str) -> bool:
    """NIC's HasCorrectIngressClass for Ingresses: the class must equal ours; no class means not ours."""
    return ingress_class_of(ing) == ingress_class


def _without_status_and_version(ing: dict[str, Any]) -> dict[str, Any]:
    c = dict(ing)
    c.pop("status", None)
    m = dict(meta(ing))
    for k in ("resourceVersion", "managedFields"):
        m.pop(k, None)
    c["metadata"] = m
    return c


def has_ingress_changes(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """True unless the two differ only in status and resourceVersion (NIC's hasChanges, without mutating
    old)."""
    return _without_status_and_version(old) != _without_status_and_version(new)


def _service_ports(svc: dict[str, Any]) -> list[tuple[str, int, str, str]]:
    ports = (svc.get("spec") or {}).get("ports") or []
    out = []
    for p in ports:
        out.append((str(p.get("name") or ""), int(p.get("port") or 0), str(p.get("targetPort") or ""),
                    str(p.get("protocol") or "TCP")))
    return sorted(out)


def has_service_changes(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """True when a Service change can alter the rendered config: ports (name, port, targetPort), type or
    externalName. Selector and clusterIP changes arrive as EndpointSlice events instead."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if _service_ports(old) != _service_ports(new):
        return True
    if (old_spec.get("type") or "ClusterIP") != (new_spec.get("type") or "ClusterIP"):
        return True
    return bool(old_spec.get("externalName") != new_spec.get("externalName"))


def is_supported_secret(secret: dict[str, Any], types: frozenset[str] = SUPPORTED_SECRET_TYPES) -> bool:
    return secret.get("type") in types


def endpoint_slice_service_key(slice_: dict[str, Any]) -> str | None:
    """"namespace/service-name" of the Service a slice belongs to, or None if it carries no service label."""
    m = meta(slice_)
    svc = (m.get("labels") or {}).get(SERVICE_NAME_LABEL)
    if not svc:
        return None
    return f"{m.get('namespace') or ''}/{svc}"


def _safe(fn: Callable[..., None]) -> Callable[..., None]:
    """Handlers run on informer threads: a bug here must be logged, never kill the informer's dispatch."""

    def wrapper(self: Any, *args: Any) -> None:
        try:
            fn(self, *args)
        except Exception as e:  # pragma: no cover - defensive; the logic above never raises on valid dicts
            log.error("event handler failed", handler=type(self).__name__, error=repr(e))

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


# ------------------------------------------------------------------------------------------------------------
# Handlers


class IngressHandler:
    """Enqueues Ingresses of our class (see the module docstring for the rules)."""

    def __init__(self, enqueue: Enqueue, ingress_class: str | IngressClasses) -> None:
        self._enqueue = enqueue
        self._classes = ingress_class if isinstance(ingress_class, IngressClasses) else \
            IngressClasses(ingress_class)

    @_safe
    def on_add(self, obj: dict[str, Any], is_initial_list: bool = False) -> None:
        if self._classes.is_ours(obj):
            self._enqueue(Task(Kind.INGRESS, object_key(obj)))

    @_safe
    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if resource_version(old) == resource_version(new):
            return
        if not (self._classes.is_ours(old) or self._classes.is_ours(new)):
            return
        if not has_ingress_changes(old, new):
            return
        self._enqueue(Task(Kind.INGRESS, object_key(new)))

    @_safe
    def on_delete(self, obj: Any) -> None:
        key = tombstone_key(obj) or object_key(unwrap(obj))
        self._enqueue(Task(Kind.INGRESS, key))


class ServiceHandler:
    """Enqueues Services; updates only when they can change the config (or for the external Service)."""

    def __init__(self, enqueue: Enqueue, external_service_key: str | None = None) -> None:
        self._enqueue = enqueue
        self._external = external_service_key

    @_safe
    def on_add(self, obj: dict[str, Any], is_initial_list: bool = False) -> None:
        key = object_key(obj)
        if not is_initial_list or key == self._external:
            self._enqueue(Task(Kind.SERVICE, key))

    @_safe
    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if resource_version(old) == resource_version(new):
            return
        key = object_key(new)
        if key == self._external:
            if old.get("spec") != new.get("spec") or old.get("status") != new.get("status"):
                self._enqueue(Task(Kind.SERVICE, key))
            return
        if has_service_changes(old, new):
            self._enqueue(Task(Kind.SERVICE, key))

    @_safe
    def on_delete(self, obj: Any) -> None:
        key = tombstone_key(obj) or object_key(unwrap(obj))
        self._enqueue(Task(Kind.SERVICE, key))


class EndpointSliceHandler:
    """Enqueues the owning Service's key for every slice change, including deletes. It remembers which Service
    each slice belongs to, so a tombstone that carries no object still finds its Service."""

    def __init__(self, enqueue: Enqueue, external_service_key: str | None = None) -> None:
        self._enqueue = enqueue
        self._external = external_service_key
        self._lock = threading.Lock()
        self._service_of: dict[str, str] = {}   # slice key -> service key

    def _enqueue_for(self, obj: dict[str, Any], is_initial_list: bool = False) -> None:
        key = endpoint_slice_service_key(obj)
        with self._lock:
            if key is None:
                self._service_of.pop(object_key(obj), None)
            else:
                self._service_of[object_key(obj)] = key
        if key is not None and (not is_initial_list or key == self._external):
            self._enqueue(Task(Kind.ENDPOINT_SLICE, key))

    @_safe
    def on_add(self, obj: dict[str, Any], is_initial_list: bool = False) -> None:
        self._enqueue_for(obj, is_initial_list)

    @_safe
    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if resource_version(old) == resource_version(new):
            return
        old_key, new_key = endpoint_slice_service_key(old), endpoint_slice_service_key(new)
        if old_key is not None and old_key != new_key:
            self._enqueue(Task(Kind.ENDPOINT_SLICE, old_key))
        self._enqueue_for(new)

    @_safe
    def on_delete(self, obj: Any) -> None:
        o = unwrap(obj)
        slice_key = tombstone_key(obj) or object_key(o)
        with self._lock:
            remembered = self._service_of.pop(slice_key, None)
        key = endpoint_slice_service_key(o) or remembered
        if key is not None:
            self._enqueue(Task(Kind.ENDPOINT_SLICE, key))


class SecretHandler:
    """Enqueues Secrets of supported types."""

    def __init__(self, enqueue: Enqueue, special_keys: Iterable[str] = (),
                 types: frozenset[str] = SUPPORTED_SECRET_TYPES) -> None:
        self._enqueue = enqueue
        self._special = frozenset(special_keys)
        self._types = types  # with --ingress-nginx-compat, Opaque too (opaque_secrets.py)

    @_safe
    def on_add(self, obj: dict[str, Any], is_initial_list: bool = False) -> None:
        if is_supported_secret(obj, self._types):
            key = object_key(obj)
            if not is_initial_list or key in self._special:
                self._enqueue(Task(Kind.SECRET, key))

    @_safe
    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if resource_version(old) == resource_version(new):
            return
        if is_supported_secret(old, self._types) or is_supported_secret(new, self._types):
            self._enqueue(Task(Kind.SECRET, object_key(new)))

    @_safe
    def on_delete(self, obj: Any) -> None:
        o = unwrap(obj)
        if is_supported_secret(o, self._types) or not o:  # a tombstone without its object: the sync decides
            self._enqueue(Task(Kind.SECRET, tombstone_key(obj) or object_key(o)))


class ConfigMapHandler:
    """Enqueues only the NGINX ConfigMap ("namespace/name" of `--nginx-configmaps`)."""

    def __init__(self, enqueue: Enqueue, configmap_key: str) -> None:
        self._enqueue = enqueue
        self._key = configmap_key

    def _maybe(self, obj: dict[str, Any], key: str | None = None) -> None:
        k = key or object_key(obj)
        if k == self._key:
            self._enqueue(Task(Kind.CONFIG_MAP, k))

    @_safe
    def on_add(self, obj: dict[str, Any], is_initial_list: bool = False) -> None:
        self._maybe(obj)

    @_safe
    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if resource_version(old) != resource_version(new):
            self._maybe(new)

    @_safe
    def on_delete(self, obj: Any) -> None:
        self._maybe(unwrap(obj), tombstone_key(obj))


class IngressClassHandler:
    """Watches our IngressClass: the controller keeps serving if it changes or disappears, but says so. With
    `--ingress-nginx-compat` (`classes.compat`) it watches every IngressClass and keeps the ingress-nginx
    class names of `classes` up to date; `requeue(name)` enqueues the Ingresses of a class whose being ours
    changed."""

    def __init__(self, ingress_class: str | IngressClasses,
                 requeue: Callable[[str], None] | None = None) -> None:
        self._classes = ingress_class if isinstance(ingress_class, IngressClasses) else \
            IngressClasses(ingress_class)
        self._class = self._classes.primary
        self._requeue = requeue

    @_safe
    def on_add(self, obj: dict[str, Any], is_initial_list: bool = False) -> None:
        self._check(obj)

    @_safe
    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if resource_version(old) != resource_version(new):
            self._check(new)

    @_safe
    def on_delete(self, obj: Any) -> None:
        o = unwrap(obj)
        name = meta(o).get("name") or (tombstone_key(obj) or "")
        if name == self._class:
            log.warning("the IngressClass this controller serves was deleted; its Ingresses are still served",
                        ingress_class=self._class)
        elif self._classes.forget(str(name)):
            self._changed(str(name), served=False)

    def _changed(self, name: str, *, served: bool) -> None:
        log.info("ingress-nginx IngressClass " + ("served" if served else "no longer served"),
                 ingress_class=name)
        if self._requeue is not None:
            self._requeue(name)

    def _check(self, obj: dict[str, Any]) -> None:
        name = meta(obj).get("name")
        if name != self._class:
            if self._classes.observe(obj):
                self._changed(str(name), served=str(name) in self._classes.compat_names)
            return
        controller = (obj.get("spec") or {}).get("controller")
        if self._classes.compat and controller == INGRESS_NGINX_CONTROLLER:
            return
        if controller != NGINX_CONTROLLER_NAME:
            log.warning("IngressClass names another controller", ingress_class=self._class,
                        controller=controller, expected=NGINX_CONTROLLER_NAME)


def deep_copy(obj: dict[str, Any]) -> dict[str, Any]:
    """Objects from stores are shared between threads: copy before changing one."""
    return copy.deepcopy(obj)
