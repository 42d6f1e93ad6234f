"""The Policies an Ingress references (`nginx.org/policies`), resolved for its renderer, and the cluster
objects whose changes re-render the resources that use Policies (externalAuth's auth Services, CA
Secrets' revocation lists).

Guarantees:
- `ingress_policy_claims(obj)`: the (namespace, name) of every Policy the annotation names (the Configuration
  indexes them, so a Policy change re-syncs exactly the Ingresses that reference it).
- `IngressPolicyResolver.resolve(ing)`: None without the annotation; None with a warning when custom
  resources are disabled (the annotation is ignored, NIC 5.5); otherwise each reference resolved by the
  Policy store (missing, invalid, of another class: the renderer fails that context closed), the auth
  Services' ready endpoints of externalAuth policies, and one `Rejected` Warning event per reference that
  is missing, invalid, or of a type Ingresses do not support (the renderer's `return 500` says the rest).
- `with_crl(secrets, get_secret)`: `nginx.org/ca` Secrets that carry a `ca.crl` get `crl_path` (their file
  holds the CRL after the certificates). `with_extras(policies, ...)` applies it to resolved Policies and
  adds the ready endpoints of their externalAuth Services (for VirtualServers).
- `policy_service_users(...)`: the configured resources that use a Service through the externalAuth
  Policies they reference (auth Service endpoint changes re-render them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ingressctl.controller.endpoints import BackendError, resolve_backend_endpoints
from ingressctl.controller.model import Resource
from ingressctl.kinds.ingress.policies import (
    INGRESS_POLICY_TYPES,
    POLICIES_ANNOTATION,
    parse_policy_refs,
    unsupported_on_ingress,
)
from ingressctl.policies import policy_type_of
from ingressctl.policies.base import PolicySecret, ResolvedPolicy, missing_or_invalid
from ingressctl.policies.ca_secret import ca_has_crl
from ingressctl.policies.external_auth import auth_service, auth_service_port
from ingressctl.secret_types import SECRET_TYPE_CA

REASON_REJECTED = "Rejected"
CUSTOM_RESOURCES_DISABLED = (f"annotation {POLICIES_ANNOTATION} is ignored: custom resources are disabled "
                             "(--enable-custom-resources=false)")


def _d(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def policy_refs_of(obj: Mapping[str, Any]) -> list[str]:
    meta = _d(obj.get("metadata"))
    value = _d(meta.get("annotations")).get(POLICIES_ANNOTATION)
    if not isinstance(value, str) or not value.strip():
        return []
    return parse_policy_refs(value, str(meta.get("namespace") or ""))


def ingress_policy_claims(obj: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """See the module docstring."""
    out = set()
    for key in policy_refs_of(obj):
        ns, _, name = key.partition("/")
        if ns and name:
            out.add((ns, name))
    return tuple(sorted(out))


def with_crl(secrets: Mapping[str, PolicySecret],
             get_secret: Callable[[str], Mapping[str, Any] | None]) -> dict[str, PolicySecret]:
    """See the module docstring."""
    out = dict(secrets)
    for field, s in secrets.items():
        if s.secret_type == SECRET_TYPE_CA and s.path and not s.error:
            obj = get_secret(s.key)
            if obj is not None and ca_has_crl(obj):
                out[field] = dataclasses.replace(s, crl_path=s.path)
    return out


def external_auth_service(policy: Mapping[str, Any]) -> tuple[str, str, int] | None:
    """(namespace, name, port) of an externalAuth Policy's auth Service; None for other types."""
    spec = _d(_d(policy.get("spec")).get("externalAuth"))
    if not spec:
        return None
    ns, name = auth_service(spec, str(_d(policy.get("metadata")).get("namespace") or ""))
    return ns, name, auth_service_port(spec)


def auth_endpoints(policies: Iterable[ResolvedPolicy], get_object: Callable[[str, str], Any],
                   endpoint_slices: Callable[[str, str], list[dict[str, Any]]]) -> dict[str, tuple[str, ...]]:
    """"ns/svc:port" -> ready endpoints of the auth Service of every valid externalAuth Policy."""
    out: dict[str, tuple[str, ...]] = {}
    for ref in policies:
        target = external_auth_service(ref.policy) if ref.policy is not None and not ref.error else None
        if target is None:
            continue
        ns, name, port = target
        key = f"{ns}/{name}:{port}"
        if key in out:
            continue
        svc = get_object("services", f"{ns}/{name}")
        try:
            eps = resolve_backend_endpoints(ns, name, port, svc, endpoint_slices(ns, name))
        except BackendError:
            eps = []
        out[key] = tuple(sorted(eps))
    return out


def with_extras(policies: Mapping[str, ResolvedPolicy], get_object: Callable[[str, str], Any],
                endpoint_slices: Callable[[str, str], list[dict[str, Any]]]
                ) -> tuple[dict[str, ResolvedPolicy], dict[str, tuple[str, ...]]]:
    """See the module docstring."""
    out = {k: dataclasses.replace(r, secrets=with_crl(r.secrets, lambda s: get_object("secrets", s)))
           if r.secrets else r for k, r in policies.items()}
    return out, auth_endpoints(out.values(), get_object, endpoint_slices)


class IngressPolicyResolver:
    """See the module docstring."""

    def __init__(self, resolve: Callable[[str], ResolvedPolicy] | None,
                 get_object: Callable[[str, str], Any],
                 endpoint_slices: Callable[[str, str], list[dict[str, Any]]]) -> None:
        self._resolve = resolve          # None: custom resources are disabled
        self._get_object = get_object
        self._endpoint_slices = endpoint_slices

    def resolve(self, ing: Mapping[str, Any]) -> tuple[tuple[ResolvedPolicy, ...] | None,
                                                       dict[str, tuple[str, ...]], list[str],
                                                       list[str]]:
        """(the resolved references or None, auth endpoints, warnings, Rejected event messages)."""
        keys = policy_refs_of(ing)
        if not keys:
            return None, {}, [], []
        if self._resolve is None:
            return None, {}, [CUSTOM_RESOURCES_DISABLED], []
        refs = []
        rejected = []
        for key in keys:
            ref = self._resolve(key)
            if ref.policy is None or ref.error:
                rejected.append(missing_or_invalid(key))
            elif (type_key := policy_type_of(ref.policy)) not in INGRESS_POLICY_TYPES:
                rejected.append(unsupported_on_ingress(key, type_key))
            else:
                ref = dataclasses.replace(ref, secrets=with_crl(
                    ref.secrets, lambda k: self._get_object("secrets", k)))
            refs.append(ref)
        endpoints = auth_endpoints(refs, self._get_object, self._endpoint_slices)
        return tuple(refs), endpoints, [], rejected


def policy_service_users(namespace: str, name: str, policies: Iterable[Mapping[str, Any]],
                         is_ours: Callable[[Mapping[str, Any]], bool],
                         find_resources_for_policy: Callable[[str, str], list[Resource]]) -> list[Resource]:
    """See the module docstring."""
    found: dict[Any, Resource] = {}
    for obj in policies:
        target = external_auth_service(obj)
        if target is None or (target[0], target[1]) != (namespace, name) or not is_ours(obj):
            continue
        meta = _d(obj.get("metadata"))
        for res in find_resources_for_policy(str(meta.get("namespace") or ""), str(meta.get("name") or "")):
            found[res.key_with_kind] = res
    return [found[k] for k in sorted(found)]
