"""NGINX directives of the `cors` Policy type (NIC 5.4/5.5's OSS rendering).

Guarantees:
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
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingressctl.configs.quoting import NginxValueError, quote, quote_regex, token

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


def _l(v: Any) -> list[str]:
    return [str(x) for x in v] if isinstance(v, list) else []


def cors_origin(spec: Mapping[str, Any], variable: str) -> tuple[str, list[str]]:
    """(the Allow-Origin value as written, the http-level map lines or [])."""
    origins = _l(spec.get("allowOrigin"))
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
        values = _l(spec.get(key))
        if values:
            out.append(f"add_header Access-Control-Allow-{name} {quote(', '.join(values))} always;")
    if spec.get("allowCredentials") is True:
        out.append('add_header Access-Control-Allow-Credentials "true" always;')
    expose = _l(spec.get("exposeHeaders"))
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
