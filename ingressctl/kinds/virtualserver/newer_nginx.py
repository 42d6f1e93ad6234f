"""VirtualServer/VirtualServerRoute fields whose directives not every NGINX can load: upstream `sessionCookie`
(`sticky cookie`, NGINX 1.29.6+; open source since NIC 5.4), `add-header-inherit` (NGINX 1.29.3+; NIC 5.5)
and `gunzip` (NGINX's gunzip module): their validation and their rendering.

Guarantees:
- `validate_session_cookie(field, upstream)` checks an enabled `sessionCookie` as NIC does (`name` required
  and a valid cookie name; `expires` a time or `max`; `domain`, `path` and `samesite` (strict, lax, none, any
  case) of the forms `sticky cookie` accepts), so what is rendered is always one well-formed statement.
- `validate_add_header_inherit(field, value)` accepts `on`, `off` or `merge` (any case, as NIC parses it).
  Whether this NGINX can load them is not a validation matter: the renderer leaves them out with a warning.
- `session_cookie(upstream)` turns an enabled, validated `sessionCookie` into the `sticky cookie` statement
  NIC renders: `sticky cookie <name> [expires=] [domain=] [httponly] [samesite=<lower>] [secure] [path=]`.
- `NewerDirectives` answers what to render for one VirtualServer on this NGINX: the value when the NGINX
  has the directive, otherwise nothing plus ONE warning per field naming the NGINX version or module it
  needs (the resource is accepted with a Warning; the config never holds a directive NGINX refuses).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.configs.directive_values import (
    ADD_HEADER_INHERIT_VALUES,
    StickyCookie,
    is_cookie_name,
    is_sticky_param,
)
from ingressctl.nginx.capabilities import Capabilities
from ingressctl.validation import FieldError, invalid, not_supported, required


def session_cookie(upstream: Mapping[str, Any]) -> StickyCookie | None:
    """The upstream's `sessionCookie` as a `sticky cookie` statement (None when absent or not enabled)."""
    sc = upstream.get("sessionCookie")
    if not isinstance(sc, Mapping) or not sc.get("enable"):
        return None
    params: list[str] = []
    if sc.get("expires"):
        params.append(f"expires={sc['expires']}")
    if sc.get("domain"):
        params.append(f"domain={sc['domain']}")
    if sc.get("httpOnly"):
        params.append("httponly")
    if sc.get("samesite"):
        params.append(f"samesite={str(sc['samesite']).lower()}")
    if sc.get("secure"):
        params.append("secure")
    if sc.get("path"):
        params.append(f"path={sc['path']}")
    return StickyCookie(str(upstream.get("name") or ""), str(sc.get("name") or ""), tuple(params))


class NewerDirectives:
    """What one VirtualServer's render may use on this NGINX; warnings go to `warnings` (once per field)."""

    def __init__(self, capabilities: Capabilities, warnings: list[str]) -> None:
        self.capabilities = capabilities
        self.warnings = warnings
        self._warned: set[str] = set()

    def _allowed(self, what: str, feature: str) -> bool:
        warning = self.capabilities.not_applied(what, feature)
        if warning and warning not in self._warned:
            self._warned.add(warning)
            self.warnings.append(warning)
        return not warning

    def sticky(self, label: str, upstream: Mapping[str, Any]) -> StickyCookie | None:
        """`label`: how the warning names the upstream (e.g. "upstream tea")."""
        cookie = session_cookie(upstream)
        if cookie is None or not self._allowed(f"{label}: sessionCookie", "sticky_cookie"):
            return None
        return cookie

    def add_header_inherit(self, what: str, holder: Mapping[str, Any]) -> str:
        """`holder`: the spec, route or subroute carrying `add-header-inherit`; its value in lower case.
        `what` names the field in the warning."""
        value = str(holder.get("add-header-inherit") or "").lower()
        if not value or not self._allowed(what, "add_header_inherit"):
            return ""
        return value

    def module(self, what: str, feature: str) -> bool:
        """True when this NGINX has the module behind `what` (e.g. "spec.gunzip", "gunzip")."""
        return self._allowed(what, feature)


_SAMESITE = ("strict", "lax", "none")


def validate_session_cookie(field: str, upstream: Mapping[str, Any]) -> list[FieldError]:
    """Errors of `<field>.sessionCookie` (none when it is absent or not enabled)."""
    cookie = session_cookie(upstream)
    if cookie is None:
        return []
    f = f"{field}.sessionCookie"
    sc: Mapping[str, Any] = upstream["sessionCookie"]
    errs: list[FieldError] = []
    if not cookie.name:
        errs.append(required(f"{f}.name"))
    elif not is_cookie_name(cookie.name):
        errs.append(invalid(f"{f}.name", cookie.name, "must be a valid cookie name (letters, digits and "
                                                       "'_!*+.~-', at most 256 characters)"))
    samesite = sc.get("samesite")
    if samesite not in (None, "") and str(samesite).lower() not in _SAMESITE:
        errs.append(not_supported(f"{f}.samesite", samesite, list(_SAMESITE)))
        return errs
    for param in cookie.params:
        key = param.split("=", 1)[0]
        if "=" in param and not is_sticky_param(param):
            errs.append(invalid(f"{f}.{key}", sc.get(key), _MESSAGES.get(key, "is invalid")))
    return errs


_MESSAGES = {
    "expires": "must be a time (e.g. 1h, 30m) or 'max'",
    "domain": "must be a domain name",
    "path": "must be a path starting with '/' without spaces, quotes, ';', '{' or '}'",
}


def validate_add_header_inherit(field: str, value: Any) -> list[FieldError]:
    if value in (None, ""):
        return []
    if not isinstance(value, str) or value.lower() not in ADD_HEADER_INHERIT_VALUES:
        return [not_supported(field, value, list(ADD_HEADER_INHERIT_VALUES))]
    return []
