"""Validators of the policy types accessControl, rateLimit, basicAuth, apiKey, jwt, oidc and waf (NIC's rules
and messages), registered in `policy_validation.POLICY_TYPE_VALIDATORS` on import.

Guarantees:
- accessControl: exactly one of `allow` / `deny`, every entry an IPv4/IPv6 address or CIDR.
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
- basicAuth: `secret` a DNS-1123 subdomain, `realm` without `$`, unescaped `"` or control characters.
- apiKey: at least one header or query name; header names are HTTP tokens, query names `[_A-Za-z0-9]+`;
  `clientSecret` a DNS-1123 subdomain.
- jwt / oidc / waf (NGINX Plus features, accepted here and never rendered): the required fields and the
  shape of every string (waf: `apPolicy` and `apBundle` are mutually exclusive, as in NIC).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ingressctl.configs.parsing import MIN_ZONE_SIZE
from ingressctl.configs.policy_tiers import MAP_KEYWORDS, TIER_VARIABLES
from ingressctl.controller.policy_validation import (
    PolicyValidationConfig,
    control,
    is_ip_or_cidr,
    one_of,
    positive_int,
    register_policy_type,
    validate_header_names,
    validate_secret_name,
)
from ingressctl.controller.validation import (
    FieldError,
    forbidden,
    invalid,
    is_dns1123_subdomain,
    not_supported,
    required,
    too_many,
)
from ingressctl.controller.vs_validation import validate_variables

RATE = re.compile(r"[1-9]\d*r/[sSmM]")
ZONE_SIZE = re.compile(r"(\d+)([kKmM]?)")
RATE_LIMIT_KEY_VARS = frozenset({"binary_remote_addr", "request_uri", "uri", "args", "request_method",
                                 "apikey_client_name", "apikey_auth_token"})
RATE_LIMIT_KEY_PREFIXES = ("arg_", "http_", "cookie_")
PLUS_KEY_VAR = re.compile(r"\$\{(jwt_(?:claim|header)_[_A-Za-z0-9]+)\}")
LOG_LEVELS = ("info", "notice", "warn", "error")
QUERY_NAME = re.compile(r"[_A-Za-z0-9]+")
REALM = re.compile(r'([^"$\\]|\\[^$])*')
TIER_MATCH = re.compile(r"[^\s\"'\x00-\x1f\x7f]+")
TOKEN_VARIABLE = re.compile(r"\$(http_|arg_|cookie_)[_A-Za-z0-9]+")


def _d(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _l(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _s(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _bool(field: str, value: Any) -> list[FieldError]:
    if value is None or isinstance(value, bool):
        return []
    return [invalid(field, value, "must be a boolean")]


def validate_access_control(field: str, spec: Mapping[str, Any],
                            config: PolicyValidationConfig) -> list[FieldError]:
    allow, deny = spec.get("allow"), spec.get("deny")
    if (allow is None) == (deny is None):
        return [invalid(field, "", "must specify exactly one of: `allow`, `deny`")]
    name = "allow" if allow is not None else "deny"
    entries = _l(allow if allow is not None else deny)
    if not entries:
        return [required(f"{field}.{name}", "must have at least one address or CIDR")]
    return [invalid(f"{field}.{name}[{i}]", e, "must be a CIDR or IP")
            for i, e in enumerate(entries) if not is_ip_or_cidr(_s(e))]


def _zone_size(field: str, value: Any) -> list[FieldError]:
    size = _s(value)
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
    if not _s(rate):
        errs.append(required(f"{field}.rate"))
    elif not RATE.fullmatch(_s(rate)):
        errs.append(invalid(f"{field}.rate", rate, "must consist of numeric characters followed by a valid "
                                                   "rate suffix. 'r/s|r/m' (e.g. '5r/s' or '5r/m')"))
    key = _s(spec.get("key"))
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
        errs.extend(_bool(f"{field}.{flag}", spec.get(flag)))
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
    errs = _bool(f"{field}.default", condition.get("default"))
    if (jwt is None) == (variables is None):
        return [*errs, invalid(field, "", "must specify exactly one of: `jwt`, `variables`")]
    if jwt is not None:
        if not config.is_plus:
            return [*errs, forbidden(f"{field}.jwt", "jwt conditions require NGINX Plus")]
        claim, match = _s(_d(jwt).get("claim")), _s(_d(jwt).get("match"))
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
    cond = _d(entry)
    errs: list[FieldError] = []
    name = cond.get("name")
    if not _s(name):
        errs.append(required(f"{field}.name"))
    elif name not in TIER_VARIABLES:
        errs.append(not_supported(f"{field}.name", name, TIER_VARIABLES))
    raw = cond.get("match")
    if raw is not None and not isinstance(raw, str):
        return [*errs, invalid(f"{field}.match", raw, "must be a string")]
    match = _s(raw)
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


def validate_realm(field: str, value: Any) -> list[FieldError]:
    realm = _s(value)
    if value is not None and not isinstance(value, str):
        return [invalid(field, value, "must be a string")]
    errs = control(field, realm)
    if not REALM.fullmatch(realm):
        errs.append(invalid(field, realm, "a valid realm must have all '\"' escaped and must not contain "
                                          "any '$' or end with an unescaped '\\'"))
    return errs


def validate_basic_auth(field: str, spec: Mapping[str, Any],
                        config: PolicyValidationConfig) -> list[FieldError]:
    return [*validate_secret_name(f"{field}.secret", spec.get("secret")),
            *validate_realm(f"{field}.realm", spec.get("realm"))]


def validate_api_key(field: str, spec: Mapping[str, Any], config: PolicyValidationConfig) -> list[FieldError]:
    errs: list[FieldError] = []
    supplied = _d(spec.get("suppliedIn"))
    headers, query = _l(supplied.get("header")), _l(supplied.get("query"))
    if not headers and not query:
        errs.append(required(f"{field}.suppliedIn", "at least one header or query parameter is required"))
    errs.extend(validate_header_names(f"{field}.suppliedIn.header", headers))
    seen: set[str] = set()
    for i, q in enumerate(query):
        if not QUERY_NAME.fullmatch(_s(q)):
            errs.append(invalid(f"{field}.suppliedIn.query[{i}]", q,
                                "must consist of letters, digits and '_'"))
        elif q in seen:
            errs.append(invalid(f"{field}.suppliedIn.query[{i}]", q, "duplicate query parameter"))
        seen.add(_s(q))
    errs.extend(validate_secret_name(f"{field}.clientSecret", spec.get("clientSecret")))
    return errs


def _url(field: str, value: Any, *, needed: bool = True) -> list[FieldError]:
    url = _s(value)
    if not url:
        return [required(field)] if needed else []
    errs = control(field, url)
    parts = urlsplit(url)
    bad_host = not parts.hostname or (bool(is_dns1123_subdomain(parts.hostname))
                                      and not re.fullmatch(r"[0-9.]+", parts.hostname))
    if parts.scheme not in ("http", "https") or bad_host or any(c in url for c in ' "\'{};$\\'):
        errs.append(invalid(field, url, "must be an http(s) URL with a valid host"))
    return errs


def validate_jwt(field: str, spec: Mapping[str, Any], config: PolicyValidationConfig) -> list[FieldError]:
    errs = validate_realm(f"{field}.realm", spec.get("realm"))
    if not _s(spec.get("realm")):
        errs.append(required(f"{field}.realm"))
    secret, jwks = spec.get("secret"), spec.get("jwksURI")
    if (secret is None) == (jwks is None):
        errs.append(invalid(field, "", "must specify exactly one of: `secret`, `jwksURI`"))
    elif secret is not None:
        errs.extend(validate_secret_name(f"{field}.secret", secret))
    else:
        errs.extend(_url(f"{field}.jwksURI", jwks))
        if not _s(spec.get("keyCache")):
            errs.append(required(f"{field}.keyCache", "keyCache is required with jwksURI"))
    for name in ("keyCache", "sniName"):
        errs.extend(control(f"{field}.{name}", _s(spec.get(name))))
    token = _s(spec.get("token"))
    if token and not TOKEN_VARIABLE.fullmatch(token):
        errs.append(invalid(f"{field}.token", token, "must be one variable: $http_*, $arg_* or $cookie_*"))
    return errs


def validate_waf(field: str, spec: Mapping[str, Any], config: PolicyValidationConfig) -> list[FieldError]:
    errs: list[FieldError] = []
    if _s(spec.get("apPolicy")) and _s(spec.get("apBundle")):
        msg = "apPolicy and apBundle fields in the WAF policy are mutually exclusive"
        errs += [invalid(f"{field}.{name}", spec[name], msg) for name in ("apPolicy", "apBundle")]
    for name in ("apPolicy", "apBundle"):
        errs.extend(control(f"{field}.{name}", _s(spec.get(name))))
    return errs


def validate_oidc(field: str, spec: Mapping[str, Any], config: PolicyValidationConfig) -> list[FieldError]:
    errs: list[FieldError] = []
    client_id = _s(spec.get("clientID"))
    if not client_id:
        errs.append(required(f"{field}.clientID"))
    elif not re.fullmatch(r"[^\s\"'{};$\\]+", client_id):
        errs.append(invalid(f"{field}.clientID", client_id, "must not contain spaces, quotes, '$' or ';{}'"))
    if not spec.get("pkceEnable"):
        errs.extend(validate_secret_name(f"{field}.clientSecret", spec.get("clientSecret")))
    for name in ("authEndpoint", "tokenEndpoint", "jwksURI"):
        errs.extend(_url(f"{field}.{name}", spec.get(name)))
    errs.extend(_url(f"{field}.endSessionEndpoint", spec.get("endSessionEndpoint"), needed=False))
    scope = _s(spec.get("scope"))
    if scope and "openid" not in scope.split("+"):
        errs.append(invalid(f"{field}.scope", scope, "scope must include openid"))
    for name in ("scope", "redirectURI", "postLogoutRedirectURI", "zoneSyncLeeway"):
        value = spec.get(name)
        if isinstance(value, str) and re.search(r"[\s\"'{};$\\]", value):
            errs.append(invalid(f"{field}.{name}", value, "must not contain spaces, quotes, '$' or ';{}'"))
    for i, extra in enumerate(_l(spec.get("authExtraArgs"))):
        if not re.fullmatch(r"[^\s\"'{};$\\&=]+=[^\s\"'{};$\\&]*", _s(extra)):
            errs.append(invalid(f"{field}.authExtraArgs[{i}]", extra, "must be a name=value pair"))
    return errs


register_policy_type("accessControl", validate_access_control)
register_policy_type("rateLimit", validate_rate_limit)
register_policy_type("basicAuth", validate_basic_auth)
register_policy_type("apiKey", validate_api_key)
register_policy_type("jwt", validate_jwt)
register_policy_type("oidc", validate_oidc)
register_policy_type("waf", validate_waf)
