"""Field checks shared by the validators of ingressMTLS, egressMTLS, cache, cors and externalAuth, with NIC's
field-error messages. Each takes the field path and the value (None: the field is absent, which is fine
unless the caller requires it) and returns field errors; none raises.
"""

from __future__ import annotations

import re
from typing import Any

from ingressctl.validation import (
    FieldError,
    duplicate,
    invalid,
    is_dns1123_subdomain,
    not_supported,
    too_many,
)

DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def optional_secret_name(field: str, name: Any) -> list[FieldError]:
    """NIC's `validateSecretName`: empty is fine, else a DNS-1123 subdomain."""
    return optional_subdomain(field, name)


def optional_subdomain(field: str, value: Any) -> list[FieldError]:
    """Absent or empty, or a DNS-1123 subdomain (Secret names, `sslName`, `sniName`)."""
    if value in (None, ""):
        return []
    if not isinstance(value, str):
        return [invalid(field, value, "must be a string")]
    return [invalid(field, value, m) for m in is_dns1123_subdomain(value)]


def namespaced_name(field: str, value: Any) -> list[FieldError]:
    """Absent or empty, or `name` / `namespace/name` (a DNS-1123 label namespace, a subdomain name)."""
    if value in (None, ""):
        return []
    if not isinstance(value, str):
        return [invalid(field, value, "must be a string")]
    ns, _, name = value.rpartition("/")
    errs = optional_subdomain(field, name or value)
    if "/" in value and not DNS1123_LABEL.fullmatch(ns):
        errs.append(invalid(field, value, "the namespace must be a DNS-1123 label"))
    return errs


def positive_int_or_zero(field: str, value: Any) -> list[FieldError]:
    """NIC's `validatePositiveIntOrZero`."""
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return [invalid(field, value, "must be positive or zero")]
    return []


def boolean(field: str, value: Any) -> list[FieldError]:
    if value is None or isinstance(value, bool):
        return []
    return [invalid(field, value, "must be a boolean")]


def enum_list(field: str, values: Any, allowed: tuple[str, ...], *, maximum: int = 0) -> list[FieldError]:
    """A list whose items come from `allowed`, without repeats (and at most `maximum` items)."""
    if values is None:
        return []
    if not isinstance(values, list):
        return [invalid(field, values, "must be a list")]
    errs: list[FieldError] = []
    if maximum and len(values) > maximum:
        errs.append(too_many(field, len(values), maximum))
    seen: set[str] = set()
    for i, v in enumerate(values):
        if v not in allowed:
            errs.append(not_supported(f"{field}[{i}]", v, allowed))
        elif v in seen:
            errs.append(duplicate(f"{field}[{i}]", v))
        else:
            seen.add(v)
    return errs
