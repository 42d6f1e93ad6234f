"""The `basicAuth` Policy type: HTTP basic authentication against an `nginx.org/htpasswd` Secret.

Validation:
- basicAuth: `secret` a DNS-1123 subdomain, `realm` without `$`, unescaped `"` or control characters.
Rendering:
- basicAuth: `auth_basic` and `auth_basic_user_file`; only the first of a context applies (warning).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.configs.quoting import arg, quote
from ingressctl.policies.base import (
    PolicyContext,
    PolicyResult,
    PolicyType,
    PolicyValidationConfig,
    at_level,
    policy_key,
    unescape,
)
from ingressctl.policies.fields import validate_realm, validate_secret_name
from ingressctl.secret_types import SECRET_TYPE_HTPASSWD
from ingressctl.validation import FieldError


def validate_basic_auth(field: str, spec: Mapping[str, Any],
                        config: PolicyValidationConfig) -> list[FieldError]:
    return [*validate_secret_name(f"{field}.secret", spec.get("secret")),
            *validate_realm(f"{field}.realm", spec.get("realm"))]


def render_basic_auth(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        return PolicyResult(warnings=[f"Multiple basic auth policies in the same context is not valid. "
                                      f"Basic auth policy {policy_key(ctx)} will be ignored"])
    secret = ctx.secrets.get("secret")
    path = secret.path if secret else ""
    realm = unescape(spec.get("realm")) or "default"
    result = PolicyResult(location=[f"auth_basic {quote(realm)};", f"auth_basic_user_file {arg(path)};"])
    return at_level(result, ctx)


TYPE = PolicyType(
    key="basicAuth",
    label="Basic Auth",
    validate=validate_basic_auth,
    render=render_basic_auth,
    secret_fields={"secret": SECRET_TYPE_HTPASSWD},
    fields_doc=("`secret` (type `nginx.org/htpasswd`, key `htpasswd`, the Policy's namespace), `realm` "
               "(`default`)"),
    nginx_doc="`auth_basic \"<realm>\"; auth_basic_user_file <file>;` (401)",
)
