"""Validation of the `cors` Policy type (NIC 5.5's `validateCORS` and its CEL rule), with NIC's field-error
messages.

Guarantees:
- `validate_cors(field, spec)` returns every error at once; it never reads the cluster.
- `allowOrigin` is required (at least one entry); each entry is `*` (then the only one), an origin
  `http(s)://host[:port]`, or a one-level wildcard origin `http(s)://*.domain` - never a path, query,
  fragment or user part. `allowMethods` come from GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH (HEAD is
  implied by GET, so both together are refused). `allowHeaders` are HTTP header names (or a lone `*`), none
  of the request headers browsers forbid scripts to set. `exposeHeaders` are header names (or a lone `*`),
  never `Set-Cookie`. `allowCredentials` is a boolean and may not be true with the `*` origin. `maxAge` >= 0.
- No entry can carry `;`, `{`, `}`, `$`, quotes, backslashes, backticks, whitespace or control characters,
  so no value can change the configuration it is written into.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingressctl.controller.policy_validation_fields import boolean, enum_list, positive_int_or_zero
from ingressctl.validation import FieldError, duplicate, forbidden, invalid, is_http_header_name, required

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
