"""Per-kind informer transforms: the caches keep only the fields the controller reads.

Every listed and watched object passes through its kind's transform before the store sees it (in place of
the reflector's default `strip_managed_fields`). Guarantees:
- What is kept, per kind, and who reads it (anything else is dropped, because nothing in the controller,
  the configs, the metrics or the app reads it):
  - every kind: `kind`, `apiVersion`, `metadata.name`, `metadata.namespace` (keys, events) and
    `metadata.resourceVersion` (no-op update detection, relist diffs).
  - Ingress: everything but `metadata.managedFields` (the API server keeps its own when an update omits
    them). The status writer PUTs the cached Ingress back to `/status`, and the API server takes the metadata
    of that body as given, so a dropped label, annotation (kubectl's last-applied-configuration too, which
    `kubectl apply` diffs against), owner reference or finalizer would be erased from the cluster.
  - Service: `spec.type`, `spec.ports` (name, port, targetPort, protocol), `spec.clusterIP`
    (`nginx.org/use-cluster-ip`), `spec.externalName`, `spec.externalIPs` and the ip/hostname of
    `status.loadBalancer.ingress` (the `--external-service` address); a status with no entries is dropped
    (it reads the same as none).
  - EndpointSlice: the `kubernetes.io/service-name` label (index, handler, endpoint filter), `addressType`,
    each endpoint's `addresses`, `conditions.ready` and `targetRef` kind/name (per-Pod latency metrics), and
    each port's name and number.
  - Secret: `metadata.uid` (events), `type`, and `data` for the types the controller uses (TLS, htpasswd);
    the data of any other type is never read. With `--ingress-nginx-compat` (`opaque=True`), an `Opaque`
    Secret keeps the keys ingress-nginx's annotations read only (`opaque_secrets.py`).
  - ConfigMap: `metadata.uid` (events) and `data`.
  - IngressClass: `metadata.uid` and `spec.controller`.
- Equal small values that repeat across objects of one informer (Service and EndpointSlice ports, endpoint
  conditions, an Ingress's status and backend ports) are shared: one instance per distinct value, with the
  number of distinct values remembered bounded. Cached objects are read-only (the store's contract), so
  sharing changes memory only; dict key order is kept.
- Never raises, whatever the JSON: a field of an unexpected shape is kept as it came, so readers report it
  exactly as they would without the transform.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import orjson

from ingressctl.controller.opaque_secrets import OPAQUE, reduce_data
from ingressctl.controller.secrets import SUPPORTED_SECRET_TYPES
from ingressctl.k8s.reflector import Transform, strip_managed_fields
from ingressctl.k8s.resource import (
    CONFIGMAPS,
    ENDPOINTSLICES,
    INGRESSCLASSES,
    INGRESSES,
    SECRETS,
    SERVICES,
    ResourceType,
)
from ingressctl.k8s.store import SERVICE_NAME_LABEL

SHARED_VALUES_LIMIT = 1024        # distinct shared values remembered per informer
_MAX_SHARED_BYTES = 512           # larger values are never shared (their key would cost as much as they do)

_COMMON_META = ("name", "namespace", "resourceVersion")
_META_WITH_UID = ("name", "namespace", "uid", "resourceVersion")
_SERVICE_SPEC = ("type", "ports", "clusterIP", "externalName", "externalIPs")
_SERVICE_PORT = ("name", "port", "targetPort", "protocol")
_SLICE_PORT = ("name", "port")
_TARGET_REF = ("kind", "name")
_ADDRESS = ("ip", "hostname")


def _key(value: Any) -> bytes | None:
    """A key equal only for values equal in JSON terms (true is not 1, 1.0 is not 1, key order counts);
    None for a value too large to be worth sharing or not JSON at all."""
    try:
        key = orjson.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return None
    return key if len(key) <= _MAX_SHARED_BYTES else None


class SharedValues:
    """One instance per distinct small JSON value; at most `limit` distinct values are remembered (later ones
    are returned as they are)."""

    def __init__(self, limit: int = SHARED_VALUES_LIMIT) -> None:
        self._values: dict[Any, Any] = {}
        self._derived: dict[Any, Any] = {}   # key of a raw value -> the shared value derived from it
        self._limit = limit

    def __len__(self) -> int:
        return len(self._values)

    def __call__(self, value: Any) -> Any:
        key = _key(value)
        if key is None:
            return value
        shared = self._values.get(key)
        if shared is not None:
            return shared
        if len(self._values) < self._limit:
            self._values[key] = value
        return value

    def derived(self, raw: Any, make: Callable[[Any], Any]) -> Any:
        """The shared `make(raw)`; `make` must depend on raw's JSON value only (it runs once per distinct
        raw value, so repeated values skip the work)."""
        key = _key(raw)
        if key is None:
            return make(raw)
        got = self._derived.get(key)
        if got is None:
            got = self(make(raw))
            if len(self._derived) < self._limit:
                self._derived[key] = got
        return got


def _pick(value: Any, keys: tuple[str, ...]) -> Any:
    """A new dict with only `keys` (those present), or the value itself when it is not a dict."""
    if value.__class__ is not dict:
        return value
    return {k: value[k] for k in keys if k in value}


def _intern(value: Any) -> Any:
    """The interned string for a low-cardinality string field (type, protocol, ...)."""
    return sys.intern(value) if value.__class__ is str else value


def _head(obj: dict[str, Any], meta_keys: tuple[str, ...]) -> dict[str, Any]:
    """kind, apiVersion and the picked metadata of `obj` (the reflector has shared kind and apiVersion)."""
    out: dict[str, Any] = {}
    for k in ("kind", "apiVersion"):
        if k in obj:
            out[k] = obj[k]
    if "metadata" in obj:
        out["metadata"] = _pick(obj["metadata"], meta_keys)
    return out


def _picked_list(items: Any, keys: tuple[str, ...], shared: SharedValues,
                 intern: tuple[str, ...] = ()) -> Any:
    """A list of dicts reduced to `keys` (low-cardinality `intern` fields interned), shared as a whole."""
    if items.__class__ is not list:
        return items

    def make(raw: list[Any]) -> list[Any]:
        out = []
        for item in raw:
            item = _pick(item, keys)
            if item.__class__ is dict:
                for k in intern:
                    if k in item:
                        item[k] = _intern(item[k])
            out.append(item)
        return out

    return shared.derived(items, make)


# ---------------------------------------------------------------------------------------------- per kind


def ingress_transform() -> Transform:
    """Ingresses: see the module docstring (only managedFields go; values are shared)."""
    shared = SharedValues()

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata")
        if meta.__class__ is dict:
            meta.pop("managedFields", None)
        spec = obj.get("spec")
        if spec.__class__ is dict:
            if "ingressClassName" in spec:
                spec["ingressClassName"] = _intern(spec["ingressClassName"])
            backends: dict[Any, Any] = {}   # equal backends within this Ingress: one instance
            _share_backend(spec, "defaultBackend", shared, backends)
            rules = spec.get("rules")
            if rules.__class__ is list:
                for rule in rules:
                    http = rule.get("http") if rule.__class__ is dict else None
                    paths = http.get("paths") if http.__class__ is dict else None
                    if paths.__class__ is not list:
                        continue
                    for path in paths:
                        if path.__class__ is dict:
                            if "pathType" in path:
                                path["pathType"] = _intern(path["pathType"])
                            _share_backend(path, "backend", shared, backends)
        if "status" in obj:
            obj["status"] = shared(obj["status"])
        return obj

    return transform


def _share_backend(parent: dict[str, Any], field: str, shared: SharedValues, seen: dict[Any, Any]) -> None:
    """Share the backend's port (common to many Ingresses) and equal backends within one Ingress."""
    backend = parent.get(field)
    if backend.__class__ is not dict:
        return
    service = backend.get("service")
    if service.__class__ is dict and "port" in service:
        service["port"] = shared(service["port"])
    key = _key(backend)
    if key is not None:
        parent[field] = seen.setdefault(key, backend)


def service_transform() -> Transform:
    """Services: see the module docstring."""
    shared = SharedValues()

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        out = _head(obj, _COMMON_META)
        spec = obj.get("spec")
        if spec.__class__ is dict:
            spec = _pick(spec, _SERVICE_SPEC)
            if "type" in spec:
                spec["type"] = _intern(spec["type"])
            if "ports" in spec:
                spec["ports"] = _picked_list(spec["ports"], _SERVICE_PORT, shared, ("name", "protocol"))
        if spec is not None or "spec" in obj:
            out["spec"] = spec
        status = _service_status(obj.get("status"))
        if status is not None:
            out["status"] = status
        return out

    return transform


def _service_status(status: Any) -> Any:
    """status.loadBalancer.ingress reduced to ip/hostname; None when there is nothing to read."""
    if status is None:
        return None
    if status.__class__ is not dict:
        return status
    lb = status.get("loadBalancer")
    if lb is None:
        return None
    if lb.__class__ is not dict:
        return {"loadBalancer": lb}
    entries = lb.get("ingress")
    if not entries:
        return None
    if entries.__class__ is not list:
        return {"loadBalancer": {"ingress": entries}}
    return {"loadBalancer": {"ingress": [_pick(e, _ADDRESS) for e in entries]}}


def endpoint_slice_transform() -> Transform:
    """EndpointSlices: see the module docstring."""
    shared = SharedValues()

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        out = _head(obj, (*_COMMON_META, "labels"))
        meta = out.get("metadata")
        if meta.__class__ is dict and "labels" in meta:
            labels = meta["labels"]
            if labels.__class__ is dict:
                if SERVICE_NAME_LABEL in labels:
                    meta["labels"] = {SERVICE_NAME_LABEL: labels[SERVICE_NAME_LABEL]}
                else:
                    del meta["labels"]
        if "addressType" in obj:
            out["addressType"] = _intern(obj["addressType"])
        endpoints = obj.get("endpoints")
        if endpoints.__class__ is list:
            endpoints = [_endpoint(ep, shared) for ep in endpoints]
        if endpoints is not None or "endpoints" in obj:
            out["endpoints"] = endpoints
        if "ports" in obj:
            out["ports"] = _picked_list(obj["ports"], _SLICE_PORT, shared, ("name",))
        return out

    return transform


def _endpoint(ep: Any, shared: SharedValues) -> Any:
    if ep.__class__ is not dict:
        return ep
    out: dict[str, Any] = {}
    if "addresses" in ep:
        out["addresses"] = ep["addresses"]
    conditions = ep.get("conditions")
    if conditions.__class__ is dict:
        if "ready" in conditions:
            out["conditions"] = shared.derived(conditions, _ready_only)
    elif conditions is not None:
        out["conditions"] = conditions
    if "targetRef" in ep:
        ref = _pick(ep["targetRef"], _TARGET_REF)
        if ref.__class__ is dict and "kind" in ref:
            ref["kind"] = _intern(ref["kind"])
        out["targetRef"] = ref
    return out


def _ready_only(conditions: dict[str, Any]) -> dict[str, Any]:
    return {"ready": conditions["ready"]}


def secret_transform(opaque: bool = False) -> Transform:
    """Secrets: see the module docstring."""

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        out = _head(obj, _META_WITH_UID)
        if "type" in obj:
            out["type"] = _intern(obj["type"])
        secret_type = obj.get("type")
        if "data" in obj and secret_type.__class__ is str and secret_type in SUPPORTED_SECRET_TYPES:
            out["data"] = obj["data"]
        elif opaque and secret_type == OPAQUE and "data" in obj:
            kept = reduce_data(obj["data"])
            if kept is not None:
                out["data"] = kept
        return out

    return transform


def config_map_transform() -> Transform:
    """ConfigMaps: see the module docstring."""

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        out = _head(obj, _META_WITH_UID)
        if "data" in obj:
            out["data"] = obj["data"]
        return out

    return transform


def ingress_class_transform() -> Transform:
    """IngressClasses: see the module docstring."""

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        out = _head(obj, _META_WITH_UID)
        if "spec" in obj:
            out["spec"] = _pick(obj["spec"], ("controller",))
        return out

    return transform


_FACTORIES: dict[ResourceType, Callable[[], Transform]] = {
    INGRESSES: ingress_transform,
    SERVICES: service_transform,
    ENDPOINTSLICES: endpoint_slice_transform,
    SECRETS: secret_transform,
    CONFIGMAPS: config_map_transform,
    INGRESSCLASSES: ingress_class_transform,
}


def transform_for(rt: ResourceType) -> Transform:
    """A new transform for one informer of `rt` (its own shared values); the default strip for other kinds."""
    factory = _FACTORIES.get(rt)
    return factory() if factory is not None else strip_managed_fields


__all__ = [
    "SERVICE_NAME_LABEL", "SharedValues", "config_map_transform",
    "endpoint_slice_transform", "ingress_class_transform", "ingress_transform", "secret_transform",
    "service_transform", "transform_for",
]
