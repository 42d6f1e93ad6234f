"""The controller's informers: one per registered kind plus Services, EndpointSlices (indexed by Service),
supported Secrets, the NGINX ConfigMap and our IngressClass; one set per `--watch-namespace` entry, or one for
all namespaces (Secrets: one per `--watch-secret-namespace` entry when given).

Guarantees:
- Informers are keyed by what they serve (a kind's registry name, or the plural of a built-in type) and a
  namespace ("" for all), so a kind served from the same API type as another informer never shares it.
- The `--external-service` is watched in the controller's namespace even when that namespace is not watched
  (a field selector on its name); the ConfigMap and the IngressClass are watched by name (with
  `--ingress-nginx-compat`, every IngressClass: see `controller/ingress_class.py`).
- Reads (`get_object`, `endpoint_slices`, `list`) are thread-safe reads of the informer stores.
- With `prevalidate_secret`, every Secret the Secret informers list or watch is handed to it (after the
  transform, on the reflector's thread, as each page arrives): the Secret store validates them there, while
  the other lists still wait for the API server, instead of on the critical path after the caches synced.
  A failure in it never reaches the informer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from ingressctl.controller.handlers import (
    ConfigMapHandler,
    EndpointSliceHandler,
    IngressClassHandler,
    SecretHandler,
    ServiceHandler,
)
from ingressctl.controller.ingress_class import IngressClasses, class_of
from ingressctl.controller.kinds import Enqueue, EventHandler, KindRegistry
from ingressctl.controller.secrets import supported_secret_types
from ingressctl.controller.task import Kind, Task
from ingressctl.controller.transforms import secret_transform, transform_for
from ingressctl.k8s.informer import SharedInformer
from ingressctl.k8s.reflector import Transform
from ingressctl.k8s.resource import (
    CONFIGMAPS,
    ENDPOINTSLICES,
    INGRESSCLASSES,
    SECRETS,
    SERVICES,
    ResourceType,
)
from ingressctl.k8s.store import BY_SERVICE_INDEX, endpoint_slices_by_service
from ingressctl.keys import INGRESS_KIND, object_key, split_key
from ingressctl.logging import get_logger

log = get_logger(__name__)

NewInformer = Callable[..., SharedInformer]


class InformerSet:
    """See the module docstring."""

    def __init__(self, client: Any, kinds: KindRegistry, enqueue: Enqueue, *,
                 ingress_class: str | IngressClasses,
                 watch_namespaces: Iterable[str], pod_namespace: str, external_service_key: str | None,
                 configmap_key: str | None, resync_period: float,
                 watch_secret_namespaces: Iterable[str] | None = None,
                 prevalidate_secret: Callable[[dict[str, Any]], None] | None = None,
                 special_secret_keys: Iterable[str] = ()) -> None:
        """`watch_secret_namespaces`: where Secrets are watched (`--watch-secret-namespace`); None: where
        everything else is, empty: all namespaces. `prevalidate_secret`: see the module docstring.
        `special_secret_keys`: the special TLS Secrets (`--default-server-tls-secret`, ...)."""
        self._client = client
        self._resync = resync_period
        self._informers: dict[tuple[str, str], SharedInformer] = {}   # (name, namespace or "") -> informer
        self.all: list[SharedInformer] = []
        watched = list(watch_namespaces)
        service_h = ServiceHandler(enqueue, external_service_key)
        slice_h = EndpointSliceHandler(enqueue, external_service_key)
        classes = ingress_class if isinstance(ingress_class,
                                              IngressClasses) else IngressClasses(ingress_class)
        # --ingress-nginx-compat: Opaque Secrets too, their data reduced (opaque_secrets.py)
        secret_h = SecretHandler(enqueue, special_secret_keys, supported_secret_types(classes.compat))
        for ns in watched or [""]:
            for kind in kinds:
                self._add(kind.name, kind.rt, ns, kind.handler(enqueue), transform=kind.transform)
            self._add("services", SERVICES, ns, service_h)
            self._add("endpointslices", ENDPOINTSLICES, ns, slice_h,
                      indexers={BY_SERVICE_INDEX: endpoint_slices_by_service})
        secret_namespaces = watched if watch_secret_namespaces is None else list(watch_secret_namespaces)
        for ns in secret_namespaces or [""]:
            self._add("secrets", SECRETS, ns, secret_h,
                      transform=_observed(secret_transform(opaque=True) if classes.compat
                                          else transform_for(SECRETS), prevalidate_secret))
        if external_service_key and watched and pod_namespace not in watched:
            # The external Service lives in the controller's namespace; watch just it (NIC would not see it).
            ns, name = split_key(external_service_key)
            self._add("services", SERVICES, ns, service_h, field_selector=f"metadata.name={name}")
        if configmap_key:
            ns, name = split_key(configmap_key)
            self._add("configmaps", CONFIGMAPS, ns, ConfigMapHandler(enqueue, configmap_key),
                      field_selector=f"metadata.name={name}")
        if classes.compat:  # every IngressClass: the ingress-nginx ones are served too
            self._add("ingressclasses", INGRESSCLASSES, "", IngressClassHandler(
                classes, functools.partial(self._requeue_class, classes, enqueue)))
        else:
            self._add("ingressclasses", INGRESSCLASSES, "", IngressClassHandler(classes),
                      field_selector=f"metadata.name={classes.primary}")

    def _add(self, name: str, rt: ResourceType, namespace: str, handler: EventHandler, *,
             transform: Transform | None = None, **kw: Any) -> None:
        inf = SharedInformer(self._client, rt, namespace or None, resync_period=self._resync,
                             transform=transform or transform_for(rt), **kw)
        inf.add_event_handler(handler)
        self.all.append(inf)
        self._informers[(name, namespace)] = inf

    def _requeue_class(self, classes: IngressClasses, enqueue: Enqueue, name: str) -> None:
        """Enqueue the cached Ingresses that ask for IngressClass `name` (it became, or stopped being,
        ours)."""
        for ing in self.list(INGRESS_KIND):
            if class_of(ing)[0] == name:
                enqueue(Task(Kind.INGRESS, object_key(ing)))

    def informer(self, name: str, namespace: str) -> SharedInformer | None:
        return self._informers.get((name, "")) or self._informers.get((name, namespace))

    def namespaces(self, name: str) -> set[str]:
        """The namespaces `name` is watched in ("" for all)."""
        return {ns for (n, ns) in self._informers if n == name}

    def get_object(self, name: str, key: str) -> dict[str, Any] | None:
        """An object from the cache of `name` (a kind's registry name or a built-in plural), by key."""
        inf = self.informer(name, split_key(key)[0])
        return inf.store.get_by_key(key) if inf is not None else None

    def endpoint_slices(self, namespace: str, service: str) -> list[dict[str, Any]]:
        """The cached EndpointSlices of a Service."""
        inf = self.informer("endpointslices", namespace)
        if inf is None:
            return []
        return inf.store.by_index(BY_SERVICE_INDEX, f"{namespace}/{service}")

    def list(self, name: str) -> list[dict[str, Any]]:
        """Every cached object of `name`, in every watched namespace."""
        return [obj for (n, _), inf in self._informers.items() if n == name for obj in inf.store.list()]


def _observed(transform: Transform, observe: Callable[[dict[str, Any]], None] | None) -> Transform:
    """`transform`, then `observe` the result (its exceptions are logged and dropped)."""
    if observe is None:
        return transform

    def observed(obj: dict[str, Any]) -> dict[str, Any]:
        out = transform(obj)
        try:
            observe(out)
        except Exception as e:
            log.warning("observing a listed or watched object failed", error=str(e))
        return out

    return observed
