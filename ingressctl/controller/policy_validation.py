"""Policy validation (NIC's `ValidatePolicy`), with NIC's field-error messages, and the per-type registry.

Contract (other policy types build on it; changes are additive only):
- `validate_policy(obj, config=PolicyValidationConfig())` returns every error of a `k8s.nginx.org/v1`
  Policy at once as apimachinery field errors. It first checks NIC's "exactly one type" rule
  (`spec: Invalid value: "": must specify exactly one of: ...`, listing the registered types in NIC's
  order, see `POLICY_TYPE_ORDER`), then calls the type's validator.
- `POLICY_TYPE_VALIDATORS` maps a type's spec key (`"accessControl"`, `"cors"`, ...) to its validator
  `(field, type_spec, config) -> list[FieldError]`, where `field` is the path of the type's spec
  (`"spec.rateLimit"`) and `type_spec` its mapping (`{}` when the field is not a mapping). A new type is a
  function registered with `register_policy_type(key, validator)`; only registered keys count as types.
- `PolicyValidationConfig` carries the switches that change the rules (NGINX Plus, snippets, OIDC).
- Every string that reaches the NGINX configuration is checked here (no control characters; type-specific
  grammars); together with the renderers' quoting no field can add an NGINX directive.
- Secrets are not looked at here (a missing or wrong Secret is a render-time problem of the resources that
  use the policy, never a validation error of the Policy), nor are other cross-object checks.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ingressctl.controller.validation import (
    FieldError,
    duplicate,
    invalid,
    is_dns1123_subdomain,
    is_http_header_name,
    not_supported,
    required,
)


@dataclass(frozen=True)
class PolicyValidationConfig:
    """NIC's `PolicyValidationConfig`: the switches some types depend on."""

    is_plus: bool = False
    enable_snippets: bool = False
    enable_oidc: bool = False


PolicyTypeValidator = Callable[[str, Mapping[str, Any], PolicyValidationConfig], list[FieldError]]

# NIC's order of the types in the "exactly one of" message (OSS types, then the NGINX Plus ones).
POLICY_TYPE_ORDER: tuple[str, ...] = ("accessControl", "rateLimit", "ingressMTLS", "egressMTLS", "basicAuth",
                                      "apiKey", "cache", "cors", "externalAuth", "jwt", "oidc", "waf")
POLICY_TYPE_VALIDATORS: dict[str, PolicyTypeValidator] = {}

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def register_policy_type(key: str, validator: PolicyTypeValidator) -> None:
    """Register (or replace) the validator of the policy type whose spec key is `key`."""
    POLICY_TYPE_VALIDATORS[key] = validator


def registered_types() -> list[str]:
    """The registered type keys, in NIC's order (unknown-to-the-order keys last, by registration)."""
    ordered = [k for k in POLICY_TYPE_ORDER if k in POLICY_TYPE_VALIDATORS]
    return ordered + [k for k in POLICY_TYPE_VALIDATORS if k not in POLICY_TYPE_ORDER]


def policy_type(obj: Mapping[str, Any]) -> str:
    """The type key of a policy (the first registered key set in its spec), or "" for none."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return ""
    return next((k for k in registered_types() if spec.get(k) is not None), "")


def validate_policy(obj: Mapping[str, Any],
                    config: PolicyValidationConfig | None = None) -> list[FieldError]:
    """Every validation error of the Policy `obj` (see the module docstring)."""
    config = config or PolicyValidationConfig()
    spec = obj.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    present = [k for k in registered_types() if spec.get(k) is not None]
    if len(present) != 1:
        listed = ", ".join(f"`{k}`" for k in registered_types())
        return [invalid("spec", "", f"must specify exactly one of: {listed}")]
    key = present[0]
    value = spec[key]
    return POLICY_TYPE_VALIDATORS[key](f"spec.{key}", value if isinstance(value, Mapping) else {}, config)


# ------------------------------------------------------------------------------------------------------------
# Helpers shared by the type validators.


def _l(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _s(v: Any) -> str:
    return v if isinstance(v, str) else ""


def control(field: str, value: str) -> list[FieldError]:
    """An error when `value` holds a control character (they could end a directive)."""
    if _CONTROL.search(value):
        return [invalid(field, value, "must not contain control characters")]
    return []


def validate_secret_name(field: str, value: Any) -> list[FieldError]:
    """A required Secret name in the Policy's namespace: a DNS-1123 subdomain."""
    name = _s(value)
    if not name:
        return [required(field)]
    return [invalid(field, name, m) for m in is_dns1123_subdomain(name)]


def positive_int(field: str, value: Any) -> list[FieldError]:
    """An optional integer that must be > 0 when set."""
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return [invalid(field, value, "must be positive")]
    return []


def validate_header_names(field: str, names: list[Any]) -> list[FieldError]:
    """HTTP header names (RFC 7230 tokens), no duplicates (case-insensitive)."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, n in enumerate(names):
        name = _s(n)
        errs.extend(invalid(f"{field}[{i}]", n, m) for m in is_http_header_name(name))
        if name.lower() in seen:
            errs.append(duplicate(f"{field}[{i}]", name))
        seen.add(name.lower())
    return errs


def is_ip_or_cidr(value: str) -> bool:
    """An IPv4/IPv6 address or CIDR (NIC's `validateIPorCIDR`: net.ParseCIDR or net.ParseIP)."""
    try:
        if "/" in value:
            ipaddress.ip_network(value, strict=False)
        else:
            ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def one_of(field: str, value: Any, allowed: tuple[str, ...]) -> list[FieldError]:
    """An optional string that must be one of `allowed` when set."""
    if value in (None, ""):
        return []
    if value not in allowed:
        return [not_supported(field, value, allowed)]
    return []


# The types of this module register themselves in `policy_types.py` (imported below), so the registry is
# complete whenever this module is imported.
from ingressctl.controller import policy_types as _policy_types  # noqa: E402,F401  (registration)
from ingressctl.controller import policy_types_ext as _policy_types_ext  # noqa: E402,F401  (registration)
