"""The policy types (`k8s.nginx.org/v1` Policy `spec.<type>`): one module each, all listed here.

Guarantees:
- `POLICY_TYPES` names every type ingressctl knows, in NIC's order (the open-source types, then the NGINX
  Plus ones): the order of NIC's "must specify exactly one of" message and the order in which a context's
  lines are emitted. Nothing registers itself on import: a type exists because it is in this list.
- `policy_type_of(policy)` is the key of the first type set in a Policy's spec ("" for none); a Policy with
  several is invalid (`validation.validate_policy`).
- `POLICY_SECRET_TYPES`: the Secret types the types need stored beyond TLS and htpasswd (each once).

Adding a type: its module (validator, renderer, Secret fields, `TYPE`), its entry below, its template
lines if an owner must place them, and its tests; see docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.policies import (
    access_control,
    api_key,
    basic_auth,
    cache,
    cors,
    egress_mtls,
    external_auth,
    ingress_mtls,
    jwt,
    oidc,
    rate_limit,
    waf,
)
from ingressctl.policies.base import PolicyType
from ingressctl.secret_types import SecretType

POLICY_TYPES: tuple[PolicyType, ...] = (
    access_control.TYPE,
    rate_limit.TYPE,
    ingress_mtls.TYPE,
    egress_mtls.TYPE,
    basic_auth.TYPE,
    api_key.TYPE,
    cache.TYPE,
    cors.TYPE,
    external_auth.TYPE,
    jwt.TYPE,
    oidc.TYPE,
    waf.TYPE,
)
POLICY_TYPES_BY_KEY: Mapping[str, PolicyType] = {t.key: t for t in POLICY_TYPES}
POLICY_SECRET_TYPES: tuple[SecretType, ...] = tuple(
    {s.name: s for t in POLICY_TYPES for s in t.secret_types}.values())


def policy_type_of(policy: Mapping[str, Any]) -> str:
    """See the module docstring."""
    spec = policy.get("spec")
    if not isinstance(spec, Mapping):
        return ""
    return next((t.key for t in POLICY_TYPES if spec.get(t.key) is not None), "")
