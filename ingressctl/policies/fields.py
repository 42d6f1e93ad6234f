"""Field checks shared by the policy types' validators, with NIC's field-error messages. Each takes the field
path and the value (None: the field is absent, which is fine unless the caller requires it) and returns
field errors; none raises.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit

from ingressctl.validation import (
    FieldError,
    as_str,
    control,
    duplicate,
    invalid,
    is_dns1123_subdomain,
    is_http_header_name,
    not_supported,
    required,
    too_many,
)

DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
REALM = re.compile(r'([^"$\\]|\\[^$])*')


def validate_secret_name(field: str, value: Any) -> list[FieldError]:
    """A required Secret name in the Policy's namespace: a DNS-1123 subdomain."""
    name = as_str(value)
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
        name = as_str(n)
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


def validate_realm(field: str, value: Any) -> list[FieldError]:
    realm = as_str(value)
    if value is not None and not isinstance(value, str):
        return [invalid(field, value, "must be a string")]
    errs = control(field, realm)
    if not REALM.fullmatch(realm):
        errs.append(invalid(field, realm, "a valid realm must have all '\"' escaped and must not contain "
                                          "any '$' or end with an unescaped '\\'"))
    return errs


def http_url(field: str, value: Any, *, needed: bool = True) -> list[FieldError]:
    url = as_str(value)
    if not url:
        return [required(field)] if needed else []
    errs = control(field, url)
    parts = urlsplit(url)
    bad_host = not parts.hostname or (bool(is_dns1123_subdomain(parts.hostname))
                                      and not re.fullmatch(r"[0-9.]+", parts.hostname))
    if parts.scheme not in ("http", "https") or bad_host or any(c in url for c in ' "\'{};$\\'):
        errs.append(invalid(field, url, "must be an http(s) URL with a valid host"))
    return errs
