"""Renderers of the policy types accessControl, rateLimit, basicAuth, apiKey, jwt and oidc (see
`configs/policy.py` for the contract), registered on import.

Guarantees (for validated policies; every user value goes through `configs.quoting`):
- accessControl: the first accessControl policy of a context renders all of them: `allow ...; deny all;`
  or `deny ...; allow all;`. When allow and deny policies meet in one context the allow list wins, with
  NIC's warning.
- rateLimit: one `limit_req_zone <key> zone=pol_rl_<polNs>_<polName>_<ownerNs>_<ownerName>:<size>
  rate=<rate>;` per (policy, owner) at http level, one `limit_req` per policy of the context; dry run, log
  level and reject code come from the first policy of the context (different values in later ones give a
  warning). With `scale`, the rate is divided by the controller replicas (r/s below 1 becomes r/m).
  Tiered policies (`condition.variables`) get per-context zones and maps (`configs/policy_tiers.py`);
  a `condition.jwt` is NGINX Plus only (the context fails closed).
- basicAuth: `auth_basic` and `auth_basic_user_file`; only the first of a context applies (warning).
- apiKey, without njs (open-source NGINX 1.22 has no njs module here): an http-level
  `map "<header and query values>" $apikey_auth_<owner>_<policy>` whose entries come from the Secret's
  file (exact, case-sensitive regular expressions of the keys; written by the Secret store, mode 0600,
  so keys never appear in the VirtualServer's file), `"" 401` for no key and `default 403`; the context
  answers 401 / 403 from it before anything else runs, then sets `$apikey_client_name` (the Secret data
  key that matched, from a second map) and `$apikey_auth_token` (the supplied value; NIC's is its
  SHA-256, which needs njs) for rate-limit keys and tiers. Both variables exist everywhere (empty
  outside such contexts: the main configuration defines them). A second apiKey in one context is an
  error (500).
- jwt, oidc, waf: NGINX Plus only: the context fails closed (500) with the warning "... requires NGINX Plus".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingressctl.configs import parsing
from ingressctl.configs.policy import (
    PolicyContext,
    PolicyRenderer,
    PolicyResult,
    name_part,
    register_policy_renderer,
    short_name,
)
from ingressctl.configs.policy_tiers import condition_variable, tier_error, tier_maps, tiered_zone
from ingressctl.configs.quoting import arg, quote, quote_regex, quote_vars, token

SECRET_TYPE_HTPASSWD = "nginx.org/htpasswd"
SECRET_TYPE_APIKEY = "nginx.org/apikey"
APIKEY_MISSING = "401"
APIKEY_UNKNOWN = "403"


def _l(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _key(ctx: PolicyContext) -> str:
    return f"{ctx.policy_namespace}/{ctx.policy_name}"


def unescape(value: Any) -> str:
    """A validated string as NGINX should read it: validation requires `"` escaped as `\\"`, the quoting
    escapes again, so the escapes are undone first."""
    return re.sub(r'\\(["\\])', r"\1", str(value or ""))


def render_access_control(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        return PolicyResult()    # the first one renders the context's whole list
    allow = [str(a) for s in ctx.siblings for a in _l(s.get("allow"))]
    deny = [str(d) for s in ctx.siblings for d in _l(s.get("deny"))]
    result = PolicyResult()
    if allow and deny:
        result.warnings.append("AccessControl policy (or policies) with deny rules is overridden by policy "
                               "(or policies) with allow rules")
    if allow:
        result.location = [*(f"allow {token(a)};" for a in allow), "deny all;"]
    else:
        result.location = [*(f"deny {token(d)};" for d in deny), "allow all;"]
    return _at_level(result, ctx)


def _at_level(result: PolicyResult, ctx: PolicyContext) -> PolicyResult:
    """Move the context lines to the server when the context is the server."""
    if ctx.is_server_level:
        result.server, result.location = result.location, []
    return result


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
        msg = f"RateLimit policy {_key(ctx)} with a jwt condition requires NGINX Plus"
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
                result.warnings.append(f"RateLimit policy {_key(ctx)} with limit request option {name}="
                                       f"{str(value).lower()} is overridden to {name}="
                                       f"{str(settings[name]).lower()} by the first policy reference in "
                                       "this context")
    return _at_level(result, ctx)


def render_basic_auth(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        return PolicyResult(warnings=[f"Multiple basic auth policies in the same context is not valid. "
                                      f"Basic auth policy {_key(ctx)} will be ignored"])
    secret = ctx.secrets.get("secret")
    path = secret.path if secret else ""
    realm = unescape(spec.get("realm")) or "default"
    result = PolicyResult(location=[f"auth_basic {quote(realm)};", f"auth_basic_user_file {arg(path)};"])
    return _at_level(result, ctx)


def apikey_variable(ctx: PolicyContext) -> str:
    return "$" + short_name(f"apikey_auth_{ctx.owner_namespace}_{ctx.owner_name}_{ctx.policy_namespace}_"
                            f"{ctx.policy_name}")


def apikey_source(spec: Mapping[str, Any]) -> str:
    """The value a client supplies: the concatenation of the named headers and query arguments."""
    supplied = spec.get("suppliedIn") or {}
    parts = ["${http_" + str(h).lower().replace("-", "_") + "}" for h in _l(supplied.get("header"))]
    parts += ["${arg_" + str(q) + "}" for q in _l(supplied.get("query"))]
    return "".join(parts)


def render_api_key(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        msg = f"Multiple API key policies in the same context is not valid. API key policy {_key(ctx)} is " \
              "not applied"
        return PolicyResult(warnings=[msg], error=msg)
    secret = ctx.secrets.get("clientSecret")
    variable = apikey_variable(ctx)
    result = PolicyResult()
    include = arg(secret.path if secret else "")
    source = quote_vars(apikey_source(spec))
    result.http.append(f"map {source} {variable} {{ include {include}; "
                       f'"" {APIKEY_MISSING}; default {APIKEY_UNKNOWN}; }}')
    result.http.append(f'map {variable} {variable}_client {{ "~^=(?<client>.*)$" $client; default ""; }}')
    checks = [f"if ({variable} = {APIKEY_MISSING}) {{ return 401; }}",
              f"if ({variable} = {APIKEY_UNKNOWN}) {{ return 403; }}",
              f"set $apikey_client_name {variable}_client;",
              f"set $apikey_auth_token {source};"]
    if ctx.is_server_level:     # an `if` in the server would run before any location could override it
        result.inherited["apiKey"] = checks
    else:
        result.location = checks
    return result


def apikey_map_entries(keys: Mapping[str, str]) -> str:
    """The Secret file of an nginx.org/apikey Secret: one exact, case-sensitive map entry per key
    (client ID -> key), valued `=<client ID>` (never the 401/403 markers)."""
    lines = []
    for client, key in sorted(keys.items()):
        escaped = "".join(ch if ch.isalnum() and ch.isascii() else "\\" + ch for ch in key)
        lines.append(f"{quote_regex('~^' + escaped + '$')} {quote('=' + client)};")
    return "\n".join(lines) + "\n"


def _plus_only(type_label: str) -> PolicyRenderer:
    def render(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
        msg = f"{type_label} policy {_key(ctx)} requires NGINX Plus"
        return PolicyResult(warnings=[msg], error=msg)
    return render


register_policy_renderer("accessControl", render_access_control)
register_policy_renderer("rateLimit", render_rate_limit)
register_policy_renderer("basicAuth", render_basic_auth, {"secret": SECRET_TYPE_HTPASSWD})
register_policy_renderer("apiKey", render_api_key, {"clientSecret": SECRET_TYPE_APIKEY})
register_policy_renderer("jwt", _plus_only("JWT"))
register_policy_renderer("oidc", _plus_only("OIDC"))
register_policy_renderer("waf", _plus_only("WAF"))
