"""Resource keys: client-go's "namespace/name", and the kind-qualified key of a configuration resource.

Guarantees:
- `object_key(obj)` is the one "namespace/name" helper for objects (client-go's MetaNamespaceKeyFunc,
  lenient: "name" for a cluster-scoped object, never raises); `split_key(key)` is its inverse.
- `ResourceKey(kind, ns_name)` identifies a configuration resource across kinds: an Ingress and a
  VirtualServer with the same namespace and name are different keys, in every map, set and file name that
  holds them. It is a tuple (hashable, cheap), and keys sort by kind, then by "namespace/name" (the order
  Ingress keys always had). `str(key)` is "<kind>/<namespace>/<name>"; `key.ns_name` is what users see in
  events and messages.
- Pure: imports nothing of the project, so every layer may use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple


def resource_version(obj: Mapping[str, Any]) -> str:
    """metadata.resourceVersion of an object ("" when it has none)."""
    meta = obj.get("metadata")
    return str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""


def object_key(obj: Mapping[str, Any]) -> str:
    """"namespace/name" of an object, or "name" when it has no namespace."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return ""
    ns = meta.get("namespace") or ""
    name = meta.get("name") or ""
    return f"{ns}/{name}" if ns else str(name)


def split_key(key: str) -> tuple[str, str]:
    """(namespace, name) of a "namespace/name" key; the namespace is "" for a bare name."""
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else ("", ns)


class ResourceKey(NamedTuple):
    """A configuration resource's identity: its kind (a registry name such as "ingress") and "ns/name"."""

    kind: str
    ns_name: str

    @classmethod
    def of(cls, kind: str, obj: Mapping[str, Any]) -> ResourceKey:
        return cls(kind, object_key(obj))

    @property
    def namespace(self) -> str:
        return split_key(self.ns_name)[0]

    @property
    def name(self) -> str:
        return split_key(self.ns_name)[1]

    def __str__(self) -> str:
        return f"{self.kind}/{self.ns_name}"


INGRESS_KIND = "ingress"
"""The Ingress's name in the kind registry and in its `ResourceKey`s."""
