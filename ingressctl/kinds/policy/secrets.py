"""The Secrets of policies, resolved for the policy generator.

Guarantees:
- `resolve_policy_secrets(policy, lookup)` returns, for each Secret field the policy's type declares
  (`PolicyType.secret_fields`), the `PolicySecret` (type, file path or error) of the Secret of
  that name in the Policy's namespace; `policy_secret_keys(policy)` lists those Secret keys (for the
  reference tracking that re-renders users when a Secret changes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ingressctl.policies import POLICY_TYPES_BY_KEY, policy_type_of
from ingressctl.policies.base import PolicySecret
from ingressctl.secret_types import SecretReference


def _namespace(policy: Mapping[str, Any]) -> str:
    return str((policy.get("metadata") or {}).get("namespace") or "")


def policy_secret_fields(policy: Mapping[str, Any]) -> dict[str, str]:
    """The policy's Secret fields that are set: field name -> Secret key ("ns/name")."""
    type_key = policy_type_of(policy)
    spec = ((policy.get("spec") or {}).get(type_key)) or {}
    out: dict[str, str] = {}
    policy_type = POLICY_TYPES_BY_KEY.get(type_key)
    for fname in policy_type.secret_fields if policy_type else ():
        name = spec.get(fname) if isinstance(spec, Mapping) else None
        if isinstance(name, str) and name:
            out[fname] = name if "/" in name else f"{_namespace(policy)}/{name}"
    return out


def policy_secret_keys(policy: Mapping[str, Any]) -> list[str]:
    return sorted(set(policy_secret_fields(policy).values()))


def resolve_policy_secrets(policy: Mapping[str, Any],
                           lookup: Callable[[str], SecretReference]) -> dict[str, PolicySecret]:
    """The policy's Secrets as the generator wants them (see the module docstring)."""
    out: dict[str, PolicySecret] = {}
    for fname, key in policy_secret_fields(policy).items():
        ref = lookup(key)
        out[fname] = PolicySecret(key=key, secret_type=ref.secret_type, path=ref.path, error=ref.error)
    return out
