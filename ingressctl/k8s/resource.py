"""Resource types (group/version/resource plus kind) and the REST paths a client builds from them.

Guarantees: `ResourceType` is immutable and hashable; `path()` builds the same URLs as client-go's REST client
(`/api/v1/...` for the core group, `/apis/<group>/<version>/...` otherwise). This module has no Kubernetes
client dependency and no knowledge of what the resources mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class ResourceType:
    """A GroupVersionResource plus the kind and scope a client needs to build URLs."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """`v1` for the core group, else `group/version`."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def base_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        """URL path for a collection (name None) or one object, in `namespace` when the type is namespaced.

        A namespaced type with namespace None addresses all namespaces (list/watch only).
        """
        parts = [self.base_path]
        if namespace and self.namespaced:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            if not name:
                raise ValueError(f"empty name for {self.plural}")
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        elif subresource:
            raise ValueError("a subresource needs an object name")
        return "/".join(parts)

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


NAMESPACES = ResourceType("", "v1", "namespaces", "Namespace", namespaced=False)
SERVICES = ResourceType("", "v1", "services", "Service")
SECRETS = ResourceType("", "v1", "secrets", "Secret")
CONFIGMAPS = ResourceType("", "v1", "configmaps", "ConfigMap")
PODS = ResourceType("", "v1", "pods", "Pod")
EVENTS = ResourceType("", "v1", "events", "Event")
ENDPOINTSLICES = ResourceType("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
INGRESSES = ResourceType("networking.k8s.io", "v1", "ingresses", "Ingress")
INGRESSCLASSES = ResourceType("networking.k8s.io", "v1", "ingressclasses", "IngressClass", namespaced=False)
LEASES = ResourceType("coordination.k8s.io", "v1", "leases", "Lease")

ALL: tuple[ResourceType, ...] = (
    NAMESPACES, SERVICES, SECRETS, CONFIGMAPS, PODS, EVENTS, ENDPOINTSLICES, INGRESSES, INGRESSCLASSES,
    LEASES,
)


def by_plural(plural: str, group: str | None = None) -> ResourceType:
    """Look a known type up by plural (and group when ambiguous); KeyError if unknown."""
    for rt in ALL:
        if rt.plural == plural and (group is None or rt.group == group):
            return rt
    raise KeyError(plural if group is None else f"{plural}.{group}")
