"""Tiered rate limits (NIC's rateLimit `condition.variables`): the http-level maps that let exactly one tier
of a context limit each request.

Guarantees (for validated policies; every user value goes through `configs.quoting`):
- Per context, one tier map `map <variable> $rl_<owner>_variable_<var>_<ctx> { "<match>" <tier>; ...;
  default <default tier or "">; }` from the condition's variable (`$request_method`, `$apikey_client_name`)
  to the tier name of the first policy whose `match` (a string, or a regex when it starts with `~`) fits.
- Per tiered policy and context, a key map `map $rl_..._variable_... $pol_rl_<pol>_<owner>_<ctx> { <tier>
  "Val<key>"; default ""; }` and its own `limit_req_zone` on that variable: outside its tier the key is
  empty, and NGINX does not count empty keys, so only the request's tier limits it.
- `tier_error(siblings)` is NIC's check of the tiered policies of one context: one variable for all of them,
  at most one `default: true`, no two tiers with the same match (plain strings compared regardless of
  case, as NGINX's map does); a context that fails it answers 500.
- `<ctx>` is a digest of the context (level, VirtualServerRoute, route path): contexts never share a map.
  Variable and tier names longer than `base.MAX_NAME` are cut and end in a digest (`base.short_name`):
  NGINX's variable and map hashes must hold them."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from ingressctl.configs.quoting import NginxValueError, quote_regex, quote_vars, token
from ingressctl.policies.base import PolicyContext, short_name

# The variables a tier condition may use (NIC: the request method, and the client of an apiKey policy).
TIER_VARIABLES = ("$request_method", "$apikey_client_name")
# Map source values NGINX would read as its own parameters, not as a string to match.
MAP_KEYWORDS = frozenset({"default", "hostnames", "include", "volatile"})


def condition_variable(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The single `condition.variables` entry of a rateLimit spec, or None when it is not tiered by one."""
    condition = spec.get("condition")
    if not isinstance(condition, Mapping):
        return None
    variables = condition.get("variables")
    if not isinstance(variables, list) or not variables or not isinstance(variables[0], Mapping):
        return None
    return variables[0]


def is_default(spec: Mapping[str, Any]) -> bool:
    condition = spec.get("condition")
    return isinstance(condition, Mapping) and condition.get("default") is True


def context_suffix(ctx: PolicyContext) -> str:
    """A short name part unique to the context within its owner."""
    ident = f"{ctx.level}/{ctx.vsr_namespace}/{ctx.vsr_name}/{ctx.context_id}"
    return hashlib.sha256(ident.encode()).hexdigest()[:10]


def tier_error(owner: str, siblings: Sequence[Mapping[str, Any]]) -> str:
    """NIC's conflicts between the tiered rateLimit policies of one context, or ""."""
    tiered = [v for v in map(condition_variable, siblings) if v is not None]
    if len({str(v.get("name")) for v in tiered}) > 1:
        return f"Tiered rate-limit Policies on {owner} must all use the same condition variable"
    if sum(1 for s in siblings if condition_variable(s) is not None and is_default(s)) > 1:
        return f"Tiered rate-limit Policies on {owner} contain conflicting default values"
    # NGINX compares a map's plain strings case-insensitively (two differing in case conflict).
    matches = [m if m.startswith("~") else m.lower() for m in (str(v.get("match")) for v in tiered)]
    if len(set(matches)) != len(matches):
        return f"Tiered rate-limit Policies on {owner} contain duplicate match values"
    return ""


def _tier_map_variable(ctx: PolicyContext, variable: str) -> str:
    return "$" + short_name(f"rl_{ctx.owner_namespace}_{ctx.owner_name}_variable_{variable.lstrip('$')}_"
                            f"{context_suffix(ctx)}")


def _tier_name(ctx: PolicyContext, namespace: str, name: str) -> str:
    return short_name(f"rl_{ctx.owner_namespace}_{ctx.owner_name}_match_{namespace}_{name}")


def tiered_zone(ctx: PolicyContext) -> str:
    """The zone (and key variable name) of the context's tiered policy `ctx.policy_*`."""
    return short_name(f"pol_rl_{ctx.policy_namespace}_{ctx.policy_name}_{ctx.owner_namespace}_"
                      f"{ctx.owner_name}_{context_suffix(ctx)}")


def tier_maps(spec: Mapping[str, Any], ctx: PolicyContext, key: str) -> list[str]:
    """The http lines of the tiered policy `spec`: the context's tier map (the same line for every tiered
    policy of the context; the owner deduplicates http lines) and the policy's key map. `key` is the
    unescaped zone key of the policy. Raises NginxValueError for a variable outside TIER_VARIABLES."""
    variable = str((condition_variable(spec) or {}).get("name") or "")
    if variable not in TIER_VARIABLES:
        raise NginxValueError(f"invalid tier variable {variable!r}")
    source = _tier_map_variable(ctx, variable)
    entries: list[str] = []
    default = '""'
    for sibling_key, sibling in zip(ctx.sibling_keys, ctx.siblings, strict=True):
        cond = condition_variable(sibling)
        if cond is None:
            continue
        ns, _, name = sibling_key.partition("/")
        tier = _tier_name(ctx, ns, name)
        entries.append(f"{quote_regex(str(cond.get('match')))} {token(tier)};")
        if is_default(sibling):
            default = token(tier)
    mine = _tier_name(ctx, ctx.policy_namespace, ctx.policy_name)
    return [f"map {variable} {source} {{ {' '.join(entries)} "
            f"default {default}; }}",
            f"map {source} ${tiered_zone(ctx)} {{ {token(mine)} {quote_vars('Val' + key)}; default \"\"; }}"]
