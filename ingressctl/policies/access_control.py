"""The `accessControl` Policy type: allow or deny client addresses.

Validation:
- accessControl: exactly one of `allow` / `deny`, every entry an IPv4/IPv6 address or CIDR.
Rendering (every user value goes through `configs.quoting`):
- accessControl: the first accessControl policy of a context renders all of them: `allow ...; deny all;`
  or `deny ...; allow all;`. When allow and deny policies meet in one context the allow list wins, with
  NIC's warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.configs.quoting import token
from ingressctl.policies.base import PolicyContext, PolicyResult, PolicyType, PolicyValidationConfig, at_level
from ingressctl.policies.fields import is_ip_or_cidr
from ingressctl.validation import FieldError, as_list, as_str, invalid, required


def validate_access_control(field: str, spec: Mapping[str, Any],
                            config: PolicyValidationConfig) -> list[FieldError]:
    allow, deny = spec.get("allow"), spec.get("deny")
    if (allow is None) == (deny is None):
        return [invalid(field, "", "must specify exactly one of: `allow`, `deny`")]
    name = "allow" if allow is not None else "deny"
    entries = as_list(allow if allow is not None else deny)
    if not entries:
        return [required(f"{field}.{name}", "must have at least one address or CIDR")]
    return [invalid(f"{field}.{name}[{i}]", e, "must be a CIDR or IP")
            for i, e in enumerate(entries) if not is_ip_or_cidr(as_str(e))]


def render_access_control(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        return PolicyResult()    # the first one renders the context's whole list
    allow = [str(a) for s in ctx.siblings for a in as_list(s.get("allow"))]
    deny = [str(d) for s in ctx.siblings for d in as_list(s.get("deny"))]
    result = PolicyResult()
    if allow and deny:
        result.warnings.append("AccessControl policy (or policies) with deny rules is overridden by policy "
                               "(or policies) with allow rules")
    if allow:
        result.location = [*(f"allow {token(a)};" for a in allow), "deny all;"]
    else:
        result.location = [*(f"deny {token(d)};" for d in deny), "allow all;"]
    return at_level(result, ctx)


TYPE = PolicyType(
    key="accessControl",
    label="AccessControl",
    validate=validate_access_control,
    render=render_access_control,
    fields_doc="exactly one of `allow` or `deny`: IPv4/IPv6 addresses and CIDRs",
    nginx_doc="`allow ...; deny all;` or `deny ...; allow all;` (403)",
)
