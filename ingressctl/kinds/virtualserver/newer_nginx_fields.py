"""Validation of the VirtualServer/VirtualServerRoute fields whose directives need a newer NGINX than 1.22:
upstream `sessionCookie` (open source since NIC 5.4) and `add-header-inherit` (NIC 5.5).

Guarantees:
- `validate_session_cookie(field, upstream)` checks an enabled `sessionCookie` as NIC does (`name` required
  and a valid cookie name; `expires` a time or `max`; `domain`, `path` and `samesite` (strict, lax, none, any
  case) of the forms `sticky cookie` accepts), so what is rendered is always one well-formed statement.
- `validate_add_header_inherit(field, value)` accepts `on`, `off` or `merge` (any case, as NIC parses it).
- Whether this NGINX can load them is not a validation matter: the renderer leaves them out with a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.configs.directive_values import ADD_HEADER_INHERIT_VALUES, is_cookie_name, is_sticky_param
from ingressctl.kinds.virtualserver.newer_nginx import session_cookie
from ingressctl.validation import FieldError, invalid, not_supported, required

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
