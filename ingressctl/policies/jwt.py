"""The `jwt` Policy type (NGINX Plus): accepted and validated, never rendered; a context that uses it fails
closed (500) with the warning "JWT policy ... requires NGINX Plus".

Validation: the required fields and the shape of every string (`realm`, `secret` or `jwksURI` with
`keyCache`, a `token` that is one `$http_*`, `$arg_*` or `$cookie_*` variable).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingressctl.policies.base import PolicyType, PolicyValidationConfig, plus_only
from ingressctl.policies.fields import http_url, validate_realm, validate_secret_name
from ingressctl.validation import FieldError, as_str, control, invalid, required

TOKEN_VARIABLE = re.compile(r"\$(http_|arg_|cookie_)[_A-Za-z0-9]+")


def validate_jwt(field: str, spec: Mapping[str, Any], config: PolicyValidationConfig) -> list[FieldError]:
    errs = validate_realm(f"{field}.realm", spec.get("realm"))
    if not as_str(spec.get("realm")):
        errs.append(required(f"{field}.realm"))
    secret, jwks = spec.get("secret"), spec.get("jwksURI")
    if (secret is None) == (jwks is None):
        errs.append(invalid(field, "", "must specify exactly one of: `secret`, `jwksURI`"))
    elif secret is not None:
        errs.extend(validate_secret_name(f"{field}.secret", secret))
    else:
        errs.extend(http_url(f"{field}.jwksURI", jwks))
        if not as_str(spec.get("keyCache")):
            errs.append(required(f"{field}.keyCache", "keyCache is required with jwksURI"))
    for name in ("keyCache", "sniName"):
        errs.extend(control(f"{field}.{name}", as_str(spec.get(name))))
    token = as_str(spec.get("token"))
    if token and not TOKEN_VARIABLE.fullmatch(token):
        errs.append(invalid(f"{field}.token", token, "must be one variable: $http_*, $arg_* or $cookie_*"))
    return errs


TYPE = PolicyType(
    key="jwt",
    label="JWT",
    validate=validate_jwt,
    render=plus_only("JWT"),
    plus_only=True,
    fields_doc="NIC's fields",
    nginx_doc="NGINX Plus only: accepted, never served (see below)",
)
