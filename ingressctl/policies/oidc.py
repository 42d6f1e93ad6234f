"""The `oidc` Policy type (NGINX Plus): accepted and validated, never rendered; a context that uses it fails
closed (500) with the warning "OIDC policy ... requires NGINX Plus".

Validation: the required fields and the shape of every string (`clientID`, the endpoints as http(s) URLs,
a `scope` with `openid`, `authExtraArgs` as name=value pairs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingressctl.policies.base import PolicyType, PolicyValidationConfig, plus_only
from ingressctl.policies.fields import http_url, validate_secret_name
from ingressctl.validation import FieldError, as_list, as_str, invalid, required


def validate_oidc(field: str, spec: Mapping[str, Any], config: PolicyValidationConfig) -> list[FieldError]:
    errs: list[FieldError] = []
    client_id = as_str(spec.get("clientID"))
    if not client_id:
        errs.append(required(f"{field}.clientID"))
    elif not re.fullmatch(r"[^\s\"'{};$\\]+", client_id):
        errs.append(invalid(f"{field}.clientID", client_id, "must not contain spaces, quotes, '$' or ';{}'"))
    if not spec.get("pkceEnable"):
        errs.extend(validate_secret_name(f"{field}.clientSecret", spec.get("clientSecret")))
    for name in ("authEndpoint", "tokenEndpoint", "jwksURI"):
        errs.extend(http_url(f"{field}.{name}", spec.get(name)))
    errs.extend(http_url(f"{field}.endSessionEndpoint", spec.get("endSessionEndpoint"), needed=False))
    scope = as_str(spec.get("scope"))
    if scope and "openid" not in scope.split("+"):
        errs.append(invalid(f"{field}.scope", scope, "scope must include openid"))
    for name in ("scope", "redirectURI", "postLogoutRedirectURI", "zoneSyncLeeway"):
        value = spec.get(name)
        if isinstance(value, str) and re.search(r"[\s\"'{};$\\]", value):
            errs.append(invalid(f"{field}.{name}", value, "must not contain spaces, quotes, '$' or ';{}'"))
    for i, extra in enumerate(as_list(spec.get("authExtraArgs"))):
        if not re.fullmatch(r"[^\s\"'{};$\\&=]+=[^\s\"'{};$\\&]*", as_str(extra)):
            errs.append(invalid(f"{field}.authExtraArgs[{i}]", extra, "must be a name=value pair"))
    return errs


TYPE = PolicyType(
    key="oidc",
    label="OIDC",
    validate=validate_oidc,
    render=plus_only("OIDC"),
    plus_only=True,
    fields_doc="NIC's fields",
    nginx_doc="NGINX Plus only: accepted, never served (see below)",
)
