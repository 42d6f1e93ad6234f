"""The `cors` Policy type: cross-origin resource sharing headers and preflight answers.

Validation (NIC 5.5's `validateCORS` and its CEL rule):
- `validate_cors(field, spec)` returns every error at once; it never reads the cluster.
- `allowOrigin` is required (at least one entry); each entry is `*` (then the only one), an origin
  `http(s)://host[:port]`, or a one-level wildcard origin `http(s)://*.domain` - never a path, query,
  fragment or user part. `allowMethods` come from GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH (HEAD is
  implied by GET, so both together are refused). `allowHeaders` are HTTP header names (or a lone `*`), none
  of the request headers browsers forbid scripts to set. `exposeHeaders` are header names (or a lone `*`),
  never `Set-Cookie`. `allowCredentials` is a boolean and may not be true with the `*` origin. `maxAge` >= 0.
- No entry can carry `;`, `{`, `}`, `$`, quotes, backslashes, backticks, whitespace or control characters,
  so no value can change the configuration it is written into.
Rendering (NIC 5.4/5.5's OSS rendering):
- `cors_origin_variable(...)`: the map variable of a policy,
  `$cors_origin_<ownerNs>_<owner>_<type>[_<vsrNs>_<vsr>]_<polNs>_<pol>` (other characters as `_`).
- `cors_origin(spec, variable)`: the value of `Access-Control-Allow-Origin` and the http-level map it needs:
  `*` for the wildcard origin; the origin itself for one literal origin (no map); otherwise the variable,
  from `map $http_origin <variable> { default ""; "<origin>" "<origin>"; "~^https://[^.]+\\.dom$"
  $http_origin; }` (an unknown origin gets no header at all: NGINX leaves out an empty header).
- `cors_lines(spec, origin)`: the location's `add_header ... always` lines (`Vary: Origin` unless the origin
  is `*`, `Access-Control-Allow-Origin`, `-Methods`, `-Headers`, `-Credentials`, `-Expose-Headers`,
  `-Max-Age` (86400 by default)) and the preflight: `if ($request_method = 'OPTIONS') { <the same lines>
  add_header Content-Type text/plain; add_header Content-Length 0; return 204; }`.
- Every value passes a quoting filter: no input can add a directive.
- cors: the origin map at http level when needed (one http item, so that the owner's de-duplication of
  http items never merges two maps' lines); the `add_header` and preflight lines always go in the
  locations (NIC copies a spec-level CORS policy onto every route without one: `PolicyResult.inherited`).
  First per context wins (warning).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingressctl.configs.quoting import NginxValueError, quote, quote_regex, token
from ingressctl.policies.base import INGRESS_OWNER, PolicyContext, PolicyResult, PolicyType, ignored, vsr_of
from ingressctl.policies.fields import boolean, enum_list, positive_int_or_zero
from ingressctl.validation import (
    FieldError,
    as_list,
    duplicate,
    forbidden,
    invalid,
    is_http_header_name,
    required,
)

CORS_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH")
_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
_HOST = rf"{_LABEL}(\.{_LABEL})*"
_ORIGIN = re.compile(rf"(?P<scheme>https?)://(?P<wild>\*\.)?(?P<host>{_HOST}|\[[0-9a-f:.]+\])(:(?P<port>[0-9]{{1,5}}))?")
# Request headers that browsers never let a script set (the Fetch standard's forbidden request headers).
FORBIDDEN_REQUEST_HEADERS = frozenset(h.lower() for h in (
    "Accept-Charset", "Accept-Encoding", "Access-Control-Request-Headers", "Access-Control-Request-Method",
    "Connection", "Content-Length", "Cookie", "Cookie2", "Date", "DNT", "Expect", "Host", "Keep-Alive",
    "Origin", "Referer", "Set-Cookie", "TE", "Trailer", "Transfer-Encoding", "Upgrade", "Via"))
_FORBIDDEN_PREFIXES = ("proxy-", "sec-")


def origin_parts(origin: str) -> re.Match[str] | None:
    """The parts of an origin of `allowOrigin` (scheme, `*.` wildcard, host, port), or None."""
    return _ORIGIN.fullmatch(origin)


def _validate_origins(field: str, origins: Any) -> list[FieldError]:
    if not origins:
        return [required(field, "at least one origin is required")]
    if not isinstance(origins, list):
        return [invalid(field, origins, "must be a list")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, o in enumerate(origins):
        f = f"{field}[{i}]"
        if not isinstance(o, str) or not o:
            errs.append(invalid(f, o, "must be a non-empty string"))
            continue
        if o in seen:
            errs.append(duplicate(f, o))
            continue
        seen.add(o)
        if o == "*":
            if len(origins) > 1:
                errs.append(invalid(f, o, "the wildcard origin '*' must be the only origin"))
            continue
        m = origin_parts(o)
        if m is None:
            errs.append(invalid(f, o, "must be '*', an origin such as https://example.com or "
                                      "https://example.com:8443, or a wildcard origin such as "
                                      "https://*.example.com (no path, query, fragment or user information)"))
            continue
        port = m.group("port")
        if port is not None and not 1 <= int(port) <= 65535:
            errs.append(invalid(f, o, "the port must be between 1 and 65535"))
        if m.group("wild") and "." not in m.group("host"):
            errs.append(invalid(f, o, "a wildcard origin needs a domain with at least two labels after '*.'"))
    return errs


def _validate_header_list(field: str, headers: Any, *, forbidden_names: frozenset[str],
                          forbidden_prefixes: tuple[str, ...] = ()) -> list[FieldError]:
    if headers is None:
        return []
    if not isinstance(headers, list):
        return [invalid(field, headers, "must be a list")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, h in enumerate(headers):
        f = f"{field}[{i}]"
        if h == "*":
            if len(headers) > 1:
                errs.append(invalid(f, h, "'*' must be the only entry"))
            continue
        if not isinstance(h, str) or not h:
            errs.append(invalid(f, h, "must be a non-empty string"))
            continue
        msgs = is_http_header_name(h)
        if msgs:
            errs += [invalid(f, h, m) for m in msgs]
            continue
        low = h.lower()
        if low in forbidden_names or low.startswith(forbidden_prefixes):
            errs.append(forbidden(f, f"the header {h} is not allowed here"))
        elif low in seen:
            errs.append(duplicate(f, h))
        seen.add(low)
    return errs


def _validate_methods(field: str, methods: Any) -> list[FieldError]:
    errs = enum_list(field, methods, CORS_METHODS)
    if isinstance(methods, list) and "GET" in methods and "HEAD" in methods:
        errs.append(invalid(field, methods, "HEAD is implied by GET; list only GET"))
    return errs


def validate_cors(field: str, spec: Mapping[str, Any]) -> list[FieldError]:
    """See the module docstring."""
    origins = spec.get("allowOrigin")
    errs = _validate_origins(f"{field}.allowOrigin", origins)
    errs += _validate_methods(f"{field}.allowMethods", spec.get("allowMethods"))
    errs += _validate_header_list(f"{field}.allowHeaders", spec.get("allowHeaders"),
                                  forbidden_names=FORBIDDEN_REQUEST_HEADERS,
                                  forbidden_prefixes=_FORBIDDEN_PREFIXES)
    errs += _validate_header_list(f"{field}.exposeHeaders", spec.get("exposeHeaders"),
                                  forbidden_names=frozenset({"set-cookie", "set-cookie2"}))
    errs += boolean(f"{field}.allowCredentials", spec.get("allowCredentials"))
    if spec.get("allowCredentials") is True and isinstance(origins, list) and "*" in origins:
        errs.append(forbidden(f"{field}.allowCredentials",
                              "allowCredentials cannot be true when allowOrigin is '*'"))
    errs += positive_int_or_zero(f"{field}.maxAge", spec.get("maxAge"))
    return errs


DEFAULT_MAX_AGE = 86400
_VAR_PART = re.compile(r"[^A-Za-z0-9_]")
_WILDCARD_ORIGIN = re.compile(r"(https?)://\*\.(.+)")
_VARIABLE = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]{0,255}")


def _variable(name: str) -> str:
    if not _VARIABLE.fullmatch(name):
        raise NginxValueError(f"expected an NGINX variable, got {name!r}")
    return name


def cors_origin_variable(owner_ns: str, owner: str, owner_type: str, policy_ns: str, policy: str,
                         vsr: tuple[str, str] | None = None) -> str:
    """See the module docstring."""
    parts = [owner_ns, owner, owner_type, *(vsr or ()), policy_ns, policy]
    return "$cors_origin_" + "_".join(_VAR_PART.sub("_", p) for p in parts)


def cors_origin(spec: Mapping[str, Any], variable: str) -> tuple[str, list[str]]:
    """(the Allow-Origin value as written, the http-level map lines or [])."""
    origins = as_list(spec.get("allowOrigin"))
    if origins == ["*"]:
        return quote("*"), []
    if len(origins) == 1 and not _WILDCARD_ORIGIN.fullmatch(origins[0]):
        return quote(origins[0]), []
    lines = [f"map $http_origin {_variable(variable)} {{", '    default "";']
    for o in origins:
        m = _WILDCARD_ORIGIN.fullmatch(o)
        if m:
            regex = f"~^{m.group(1)}://[^.]+\\.{re.escape(m.group(2))}$"
            lines.append(f"    {quote_regex(regex)} $http_origin;")
        else:
            lines.append(f"    {quote(o)} {quote(o)};")
    lines.append("}")
    return _variable(variable), lines


def _headers(spec: Mapping[str, Any], origin: str) -> list[str]:
    out = []
    if origin != quote("*"):
        out.append('add_header Vary "Origin" always;')
    out.append(f"add_header Access-Control-Allow-Origin {origin} always;")
    for key, name in (("allowMethods", "Methods"), ("allowHeaders", "Headers")):
        values = as_list(spec.get(key))
        if values:
            out.append(f"add_header Access-Control-Allow-{name} {quote(', '.join(values))} always;")
    if spec.get("allowCredentials") is True:
        out.append('add_header Access-Control-Allow-Credentials "true" always;')
    expose = as_list(spec.get("exposeHeaders"))
    if expose:
        out.append(f"add_header Access-Control-Expose-Headers {quote(', '.join(expose))} always;")
    max_age = spec.get("maxAge")
    age = max_age if isinstance(max_age, int) and not isinstance(max_age, bool) else DEFAULT_MAX_AGE
    out.append(f"add_header Access-Control-Max-Age {token(str(age))} always;")
    return out


def cors_lines(spec: Mapping[str, Any], origin: str) -> list[str]:
    """See the module docstring."""
    headers = _headers(spec, origin)
    return [*headers,
            "if ($request_method = 'OPTIONS') {",
            *(f"    {h}" for h in headers),
            "    add_header Content-Type text/plain;",
            "    add_header Content-Length 0;",
            "    return 204;",
            "}"]


def render_cors(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        return ignored("CORS", ctx)
    owner_type = "ing" if ctx.owner_kind == INGRESS_OWNER else "vs"
    variable = cors_origin_variable(ctx.owner_namespace, ctx.owner_name, owner_type, ctx.policy_namespace,
                                    ctx.policy_name, vsr_of(ctx))
    origin, map_lines = cors_origin(spec, variable)
    # The map is one http-level item: owners deduplicate http items, and two maps share lines (`}`).
    http = ["\n".join(map_lines)] if map_lines else []
    lines = cors_lines(spec, origin)
    if ctx.is_server_level:
        return PolicyResult(http=http, inherited={"cors": lines})
    return PolicyResult(http=http, location=lines)


TYPE = PolicyType(
    key="cors",
    label="CORS",
    validate=lambda f, s, c: validate_cors(f, s),
    render=render_cors,
    fields_doc=("`allowOrigin` (required), `allowMethods`, `allowHeaders`, `allowCredentials` (`false`), "
               "`exposeHeaders`, `maxAge` (`86400`)"),
    nginx_doc="`add_header ... always` and a preflight answer in each location (see below)",
)
