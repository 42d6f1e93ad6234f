"""The policy generator (NIC's `generatePolicies`): the policies of one context (a VirtualServer's spec or
route, a VirtualServerRoute's subroute, an Ingress server or location) as NGINX lines.

Guarantees (see `base` for the contract of types and results):
- `generate_policies(refs, ctx)` groups the context's resolved references by type, checks the Secret of
  every Secret field a type declares (a wrong type or an invalid Secret fails the context), and calls each
  type's renderer in `POLICY_TYPES` order with the policy's position among its siblings.
- Fail closed: a missing policy, an invalid policy, a bad Secret or a renderer's `error` replace the whole
  context's result by an error result (`error` set, no lines): the owner renders `return 500;` for that
  context, and the warnings name the reason ("Policy ns/name is missing or invalid", or the renderer's
  text). Warnings of every policy are kept either way, without repeats.
- `policy_context_params(static, endpoints)` gives the `PolicyContext` fields that come from the static
  configuration (cache and Secrets directories, snippets, the 502 server) and the auth Services' endpoints.
- Never reads the cluster. The controller side resolves references (`kinds.policy.kind.PolicyStore`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ingressctl.configs.config import error_server_address
from ingressctl.policies import POLICY_TYPES, POLICY_TYPES_BY_KEY, policy_type_of
from ingressctl.policies.base import (
    PolicyContext,
    PolicyResult,
    ResolvedPolicy,
    missing_or_invalid,
    secret_error,
)

if TYPE_CHECKING:
    from ingressctl.configs.configmaps import StaticConfigParams

def policy_context_params(static: StaticConfigParams,
                          endpoints: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """The `PolicyContext` fields these types read, from the static configuration and the auth Services'
    endpoints."""
    return {"cache_dir": static.cache_dir or os.path.join(static.run_dir, "cache"),
            "secrets_dir": static.secrets_dir or os.path.join(static.conf_dir, "secrets"),
            "enable_snippets": static.enable_snippets,
            "error_server": error_server_address(static.run_dir),
            "endpoints": dict(endpoints)}


def _check_secrets(type_key: str, ref: ResolvedPolicy) -> str:
    policy_type = POLICY_TYPES_BY_KEY[type_key]
    for fname, expected in policy_type.secret_fields.items():
        spec = (ref.policy or {}).get("spec") or {}
        if not (spec.get(type_key) or {}).get(fname):
            continue    # optional field not set (required ones are enforced by validation)
        err = secret_error(policy_type.label, ref.secrets.get(fname), expected)
        if err:
            return err
    return ""


def generate_policies(refs: Sequence[ResolvedPolicy], ctx: PolicyContext) -> PolicyResult:
    """The NGINX lines of one context's policies (see the module docstring)."""
    out = PolicyResult()
    errors: list[str] = []
    by_type: dict[str, list[tuple[ResolvedPolicy, Mapping[str, Any]]]] = {}
    for ref in refs:
        if ref.policy is None or ref.error:
            out.warnings.append(missing_or_invalid(ref.key))
            errors.append(missing_or_invalid(ref.key))
            continue
        type_key = policy_type_of(ref.policy)
        if not type_key:
            msg = missing_or_invalid(ref.key)
            out.warnings.append(msg)
            errors.append(msg)
            continue
        spec = ref.policy.get("spec") or {}
        value = spec.get(type_key)
        by_type.setdefault(type_key, []).append((ref, value if isinstance(value, Mapping) else {}))
    order = [t.key for t in POLICY_TYPES if t.key in by_type]
    for type_key in order:
        entries = by_type[type_key]
        siblings = tuple(spec for _, spec in entries)
        sibling_keys = tuple(_policy_key(ref) for ref, _ in entries)
        for i, (ref, spec) in enumerate(entries):
            err = _check_secrets(type_key, ref)
            if err:
                out.warnings.append(err)
                errors.append(err)
                continue
            meta = (ref.policy or {}).get("metadata") or {}
            pctx = dataclasses.replace(ctx, policy_namespace=str(meta.get("namespace") or ""),
                                       policy_name=str(meta.get("name") or ""), secrets=ref.secrets,
                                       index=i, siblings=siblings, sibling_keys=sibling_keys)
            result = POLICY_TYPES_BY_KEY[type_key].render(spec, pctx)
            out.extend(result)
            if result.error:
                errors.append(result.error)
    if errors:
        return PolicyResult(warnings=list(dict.fromkeys(out.warnings)), error=errors[0], types=order)
    out.warnings = list(dict.fromkeys(out.warnings))
    out.types = order
    return out


def _policy_key(ref: ResolvedPolicy) -> str:
    meta = (ref.policy or {}).get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
