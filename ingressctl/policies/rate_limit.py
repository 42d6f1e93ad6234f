"""The `rateLimit` Policy type: request rate limits (`limit_req`), with tiers (`rate_limit_tiers`).

Validation:
- rateLimit: `rate` (`^[1-9]\\d*r/[sSmM]$`), `key` (text with `${var}` from NIC's allow-list and the
  `arg_`, `http_`, `cookie_`, `apikey_` prefixes), `zoneSize` (NIC's size rule: a k value >= 32, an m
  value > 0; a bare value is bytes to NGINX, so it must be >= 32768, NGINX's smallest zone: NIC takes
  e.g. `40`, which NGINX then refuses as too small), `burst` / `delay` > 0, `logLevel`, `rejectCode`
  400..599, and the tier `condition`:
  exactly one of `variables` (one entry, `$request_method` or `$apikey_client_name`, a `match` without
  whitespace or quotes, a valid regex after `~`) and `jwt` (NGINX Plus only: forbidden otherwise).
  The `apikey_` variables a key may use are the two an apiKey policy sets: `apikey_client_name` and
  `apikey_auth_token`; `${jwt_claim_*}` and `${jwt_header_*}` are NGINX Plus only (NIC's `Forbidden: is
  only supported in NGINX Plus` otherwise).
Rendering (every user value goes through `configs.quoting`):
- rateLimit: one `limit_req_zone <key> zone=pol_rl_<polNs>_<polName>_<ownerNs>_<ownerName>:<size>
  rate=<rate>;` per (policy, owner) at http level, one `limit_req` per policy of the context; dry run, log
  level and reject code come from the first policy of the context (different values in later ones give a
  warning). With `scale`, the rate is divided by the controller replicas (r/s below 1 becomes r/m).
  Tiered policies (`condition.variables`) get per-context zones and maps (`rate_limit_tiers`);
  a `condition.jwt` is NGINX Plus only (the context fails closed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingressctl.configs import parsing
from ingressctl.configs.parsing import MIN_ZONE_SIZE
from ingressctl.configs.quoting import quote_vars, token
from ingressctl.policies.base import (
    PolicyContext,
    PolicyResult,
    PolicyType,
    PolicyValidationConfig,
    at_level,
    name_part,
    policy_key,
    unescape,
)
from ingressctl.policies.fields import boolean, one_of, positive_int
from ingressctl.policies.rate_limit_tiers import (
    MAP_KEYWORDS,
    TIER_VARIABLES,
    condition_variable,
    tier_error,
    tier_maps,
    tiered_zone,
)
from ingressctl.validation import (
    FieldError,
    as_dict,
    as_str,
    forbidden,
    invalid,
    not_supported,
    required,
    too_many,
    validate_variables,
)

RATE = re.compile(r"[1-9]\d*r/[sSmM]")
ZONE_SIZE = re.compile(r"(\d+)([kKmM]?)")
RATE_LIMIT_KEY_VARS = frozenset({"binary_remote_addr", "request_uri", "uri", "args", "request_method",
                                 "apikey_client_name", "apikey_auth_token"})
RATE_LIMIT_KEY_PREFIXES = ("arg_", "http_", "cookie_")
PLUS_KEY_VAR = re.compile(r"\$\{(jwt_(?:claim|header)_[_A-Za-z0-9]+)\}")
LOG_LEVELS = ("info", "notice", "warn", "error")
TIER_MATCH = re.compile(r"[^\s\"'\x00-\x1f\x7f]+")


def _zone_size(field: str, value: Any) -> list[FieldError]:
    size = as_str(value)
    if not size:
        return [required(field)]
    m = ZONE_SIZE.fullmatch(size)
    if m is None:
        return [invalid(field, value, "must consist of numeric characters followed by a valid size suffix. "
                                      "'k|K|m|M (e.g. '32k' or '1m')")]
    number, unit = int(m.group(1)), m.group(2).lower()
    if not unit and number < MIN_ZONE_SIZE:
        return [invalid(field, value, "a size without a suffix is in bytes: must be at least "
                                      f"{MIN_ZONE_SIZE} (32k), NGINX's smallest zone")]
    if (unit == "m" and number <= 0) or (unit == "k" and number < 32):
        return [invalid(field, value, "must be greater than 31k or 0m")]
    return []


def validate_rate_limit(field: str, spec: Mapping[str, Any],
                        config: PolicyValidationConfig) -> list[FieldError]:
    errs: list[FieldError] = []
    rate = spec.get("rate")
    if not as_str(rate):
        errs.append(required(f"{field}.rate"))
    elif not RATE.fullmatch(as_str(rate)):
        errs.append(invalid(f"{field}.rate", rate, "must consist of numeric characters followed by a valid "
                                                   "rate suffix. 'r/s|r/m' (e.g. '5r/s' or '5r/m')"))
    key = as_str(spec.get("key"))
    if not key:
        errs.append(required(f"{field}.key"))
    else:
        plus_only = frozenset(PLUS_KEY_VAR.findall(key))
        if plus_only and not config.is_plus:
            errs.append(forbidden(f"{field}.key", "is only supported in NGINX Plus"))
        errs.extend(validate_variables(f"{field}.key", key, RATE_LIMIT_KEY_VARS | plus_only,
                                       prefixes=RATE_LIMIT_KEY_PREFIXES))
    errs.extend(_zone_size(f"{field}.zoneSize", spec.get("zoneSize")))
    errs.extend(positive_int(f"{field}.burst", spec.get("burst")))
    errs.extend(positive_int(f"{field}.delay", spec.get("delay")))
    for flag in ("noDelay", "dryRun", "scale"):
        errs.extend(boolean(f"{field}.{flag}", spec.get(flag)))
    errs.extend(one_of(f"{field}.logLevel", spec.get("logLevel"), LOG_LEVELS))
    code = spec.get("rejectCode")
    if code is not None and (isinstance(code, bool) or not isinstance(code, int) or not 400 <= code <= 599):
        errs.append(invalid(f"{field}.rejectCode", code, "must be in the range [400, 599]"))
    errs.extend(validate_rate_limit_condition(f"{field}.condition", spec.get("condition"), config))
    return errs


def validate_rate_limit_condition(field: str, condition: Any,
                                  config: PolicyValidationConfig) -> list[FieldError]:
    """NIC's tier condition: exactly one of `jwt` (NGINX Plus) and `variables` (one entry: a name from
    TIER_VARIABLES and a `match` without whitespace or quotes, a regex when it starts with `~`), and an
    optional boolean `default`."""
    if condition is None:
        return []
    if not isinstance(condition, Mapping):
        return [invalid(field, condition, "must be an object")]
    jwt, variables = condition.get("jwt"), condition.get("variables")
    errs = boolean(f"{field}.default", condition.get("default"))
    if (jwt is None) == (variables is None):
        return [*errs, invalid(field, "", "must specify exactly one of: `jwt`, `variables`")]
    if jwt is not None:
        if not config.is_plus:
            return [*errs, forbidden(f"{field}.jwt", "jwt conditions require NGINX Plus")]
        claim, match = as_str(as_dict(jwt).get("claim")), as_str(as_dict(jwt).get("match"))
        for name, value in (("claim", claim), ("match", match)):
            if not value:
                errs.append(required(f"{field}.jwt.{name}"))
            elif not TIER_MATCH.fullmatch(value):
                errs.append(invalid(f"{field}.jwt.{name}", value, "must not contain whitespace or quotes"))
        return errs
    if not isinstance(variables, list) or not variables:
        return [*errs, required(f"{field}.variables", "one variable condition is required")]
    if len(variables) > 1:
        errs.append(too_many(f"{field}.variables", len(variables), 1))
    for i, entry in enumerate(variables):
        errs.extend(_variable_condition(f"{field}.variables[{i}]", entry))
    return errs


def _variable_condition(field: str, entry: Any) -> list[FieldError]:
    cond = as_dict(entry)
    errs: list[FieldError] = []
    name = cond.get("name")
    if not as_str(name):
        errs.append(required(f"{field}.name"))
    elif name not in TIER_VARIABLES:
        errs.append(not_supported(f"{field}.name", name, TIER_VARIABLES))
    raw = cond.get("match")
    if raw is not None and not isinstance(raw, str):
        return [*errs, invalid(f"{field}.match", raw, "must be a string")]
    match = as_str(raw)
    if not match:
        return [*errs, required(f"{field}.match")]
    if not TIER_MATCH.fullmatch(match):
        errs.append(invalid(f"{field}.match", match, "must not contain whitespace or quotes"))
    elif match in MAP_KEYWORDS or match.startswith("\\"):
        errs.append(invalid(f"{field}.match", match, "must not be an NGINX map keyword or start with '\\'"))
    elif match.startswith("~"):
        regex = match[2:] if match.startswith("~*") else match[1:]
        try:
            re.compile(regex)
        except re.error as e:
            errs.append(invalid(f"{field}.match", match, f"must be a valid regular expression: {e}"))
    return errs


def rate_limit_zone(ctx: PolicyContext) -> str:
    return name_part(f"pol_rl_{ctx.policy_namespace}_{ctx.policy_name}_"
                     f"{ctx.owner_namespace}_{ctx.owner_name}")


def render_rate_limit(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    rate = str(spec.get("rate") or "").lower()
    if spec.get("scale") and ctx.replicas > 1:
        rate = parsing.scale_rate(rate, ctx.replicas)
    result = PolicyResult()
    condition = spec.get("condition")
    if isinstance(condition, Mapping) and condition.get("jwt") is not None:
        msg = f"RateLimit policy {policy_key(ctx)} with a jwt condition requires NGINX Plus"
        return PolicyResult(warnings=[msg], error=msg)
    if condition_variable(spec) is not None:
        err = tier_error(f"{ctx.owner_namespace}/{ctx.owner_name}", ctx.siblings)
        if err:
            return PolicyResult(warnings=[err], error=err)
        zone = tiered_zone(ctx)
        result.http.extend(tier_maps(spec, ctx, unescape(spec.get("key"))))
        key = f"${zone}"
    else:
        zone = rate_limit_zone(ctx)
        key = quote_vars(unescape(spec.get("key")))
    result.http.append(f"limit_req_zone {key} zone={token(zone)}:{token(spec.get('zoneSize'))} "
                       f"rate={token(rate)};")
    line = f"limit_req zone={token(zone)}"
    if spec.get("burst"):
        line += f" burst={int(spec['burst'])}"
    if spec.get("noDelay"):
        line += " nodelay"
    elif spec.get("delay"):
        line += f" delay={int(spec['delay'])}"
    result.location.append(line + ";")
    first = ctx.siblings[0] if ctx.siblings else spec
    settings = {"dryRun": bool(first.get("dryRun")), "logLevel": str(first.get("logLevel") or "error"),
                "rejectCode": int(first.get("rejectCode") or 503)}
    if ctx.index == 0:
        if settings["dryRun"]:
            result.location.append("limit_req_dry_run on;")
        result.location.append(f"limit_req_log_level {token(settings['logLevel'])};")
        result.location.append(f"limit_req_status {settings['rejectCode']};")
    else:
        mine = {"dryRun": bool(spec.get("dryRun")), "logLevel": str(spec.get("logLevel") or "error"),
                "rejectCode": int(spec.get("rejectCode") or 503)}
        for name, value in mine.items():
            if value != settings[name]:
                result.warnings.append(f"RateLimit policy {policy_key(ctx)} with limit request option {name}="
                                       f"{str(value).lower()} is overridden to {name}="
                                       f"{str(settings[name]).lower()} by the first policy reference in "
                                       "this context")
    return at_level(result, ctx)


TYPE = PolicyType(
    key="rateLimit",
    label="RateLimit",
    validate=validate_rate_limit,
    render=render_rate_limit,
    fields_doc=("`rate` (`10r/s`, `30r/m`), `key` (text with `${var}`), `zoneSize` (≥ `32k`, or "
               "`1m`...), `burst`, `delay` or `noDelay`, `dryRun` (`false`), `logLevel` "
               "`info`/`notice`/`warn`/`error` (`error`), `rejectCode` 400-599 (`503`), `scale` "
               "(`false`)"),
    nginx_doc=("`limit_req_zone <key> zone=pol_rl_<polNs>_<pol>_<vsNs>_<vs>:<zoneSize> rate=<rate>` once "
              "per (policy, VirtualServer), and `limit_req`, `limit_req_dry_run`, "
              "`limit_req_log_level`, `limit_req_status` where it applies"),
)
