"""IngressEx: an Ingress with everything the config generator needs already resolved.

The controller builds these (NIC's `createIngressEx`) from its stores; the configs package consumes them and
never looks anything up in Kubernetes. Objects are plain dicts; the dataclasses here only group them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ingressctl.keys import INGRESS_KIND, ResourceKey, object_key
from ingressctl.policies.base import ResolvedPolicy
from ingressctl.secret_types import SecretReference

INGRESS_TYPES = ("regular", "master", "minion")
"""The types of configured Ingresses, as `ingress_resources_total{type}` counts them."""


def string_annotations(ing: dict[str, Any]) -> dict[str, str]:
    """The Ingress's annotations with string keys and values (others are left out)."""
    meta = ing.get("metadata")
    anns = meta.get("annotations") if isinstance(meta, dict) else None
    return {k: v for k, v in anns.items() if isinstance(k, str) and isinstance(v, str)} \
        if isinstance(anns, dict) else {}


def backend_key(service_name: str, port: int | str) -> str:
    """The key of `IngressEx.endpoints` for a Service backend: `"<service>:<port number or name>"`."""
    return f"{service_name}:{port}"


@dataclass
class IngressEx:
    """An Ingress plus its resolved hosts, endpoints and Secrets."""

    ingress: dict[str, Any]
    valid_hosts: dict[str, bool]  # host -> True if this Ingress owns it
    endpoints: dict[str, list[str]]  # backend_key -> ["10.0.0.1:8080", ...] (ready only, sorted)
    external_name_svcs: set[str] = field(default_factory=set)
    # secret name (in the Ingress's namespace) -> reference
    secret_refs: dict[str, SecretReference] = field(default_factory=dict)
    valid_minion_paths: dict[str, bool] = field(default_factory=dict)  # mergeable Ingresses (later issue)
    # nginx.org/policies, resolved (None: no annotation, or ignored because custom resources are off) and
    # the endpoints of the auth Services they use ("ns/svc:port" -> ready endpoints).
    policies: tuple[ResolvedPolicy, ...] | None = None
    policy_endpoints: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # ingress-nginx's canary Ingresses of this primary Ingress, with their endpoints (ingress_nginx/canary.py)
    canaries: tuple[IngressEx, ...] = ()
    # ingress-nginx's `default-backend` annotation: (Service, its first port), its endpoints in `endpoints`
    default_backend: tuple[str, int | str] | None = None
    # ingress-nginx's from-to-www-redirect: the other names the certificate of their host is valid for
    www_tls_names: frozenset[str] = frozenset()
    # Services the locations speak HTTPS to besides `nginx.org/ssl-services` (ingress-nginx's ssl-passthrough)
    https_services: frozenset[str] = frozenset()
    # ingress-nginx's shared hosts: the Ingresses whose paths of this Ingress's hosts its servers serve
    # (oldest first), each with `is_member` set and the shared hosts as its `valid_hosts`
    members: tuple[IngressEx, ...] = ()
    is_member: bool = False
    # ingress-nginx's custom-headers and auth-proxy-set-headers: "namespace/name" -> the cached ConfigMap (its
    # data; None when missing), read when the IngressEx is built (ingress_nginx/header_maps.py)
    config_maps: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        return str(self.ingress.get("metadata", {}).get("namespace", ""))

    @property
    def name(self) -> str:
        return str(self.ingress.get("metadata", {}).get("name", ""))

    @property
    def key(self) -> str:
        """client-go's store key, "namespace/name"."""
        return object_key(self.ingress)

    @property
    def key_with_kind(self) -> ResourceKey:
        return ResourceKey(INGRESS_KIND, self.key)


@dataclass
class MergeableIngresses:
    """A master Ingress and its minions (NIC's mergeable Ingress types; rendered in a later issue)."""

    master: IngressEx
    minions: list[IngressEx] = field(default_factory=list)
