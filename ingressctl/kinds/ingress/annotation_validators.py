"""NIC's annotation validators (`validateXAnnotation` in NIC's `ingress.go`), as Kubernetes field errors: the
building blocks of an annotation table's `validators`.

Guarantees:
- A validator is a pure function of an `AnnotationContext` (the annotation's name and value, all the
  Ingress's annotations, `is_plus`, `snippets_enabled` and the Services its spec names); it returns the field
  errors of that annotation, `[]` when it passes, and never raises.
- The messages are NIC's (`annotations.<name>: Invalid value: "<value>": must be a time`, ...).
- Shared by every annotation family: a row lists the ones it needs, in NIC's order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ingressctl.validation import (
    FieldError,
    forbidden,
    go_quote,
    invalid,
    is_dns1123_subdomain,
    is_http_header_name,
    is_nginx_time,
    parse_go_bool,
    required,
)


@dataclass(frozen=True)
class AnnotationContext:
    """What an annotation validator sees."""

    name: str
    value: str
    annotations: Mapping[str, str]
    is_plus: bool
    snippets_enabled: bool
    spec_services: frozenset[str]

    @property
    def field(self) -> str:
        return f"annotations.{self.name}"

    def invalid(self, detail: str) -> list[FieldError]:
        return [invalid(self.field, self.value, detail)]


AnnotationValidator = Callable[[AnnotationContext], list[FieldError]]


def validate_required(ctx: AnnotationContext) -> list[FieldError]:
    return [required(ctx.field)] if ctx.value == "" else []


def validate_plus_only(ctx: AnnotationContext) -> list[FieldError]:
    return [] if ctx.is_plus else [forbidden(ctx.field, "annotation requires NGINX Plus")]


def validate_app_protect_only(ctx: AnnotationContext) -> list[FieldError]:
    """NIC's appProtectOnly: ingressctl has no NGINX App Protect, so the annotation is always refused."""
    return [forbidden(ctx.field, "annotation requires AppProtect")]


def validate_app_protect_dos_only(ctx: AnnotationContext) -> list[FieldError]:
    """NIC's appProtectDosOnly (see `validate_app_protect_only`)."""
    return [forbidden(ctx.field, "annotation requires AppProtectDos")]


def validate_related(other: str, check: Callable[[str], str | None] | None = None) -> AnnotationValidator:
    """The annotation needs `other` set (and, with `check`, satisfying it: check returns an error or None)."""

    def validate(ctx: AnnotationContext) -> list[FieldError]:
        if other not in ctx.annotations:
            return [forbidden(ctx.field, f"related annotation {other}: must be set")]
        if check is not None:
            err = check(ctx.annotations[other])
            if err:
                return [forbidden(ctx.field, f"related annotation {other}: {err}")]
        return []

    return validate


def check_bool(v: str) -> str | None:
    return None if parse_go_bool(v) is not None else "must be a boolean"


def check_true(v: str) -> str | None:
    return None if parse_go_bool(v) is True else "must be true"


def regex_validator(pattern: str, detail: str) -> AnnotationValidator:
    rx = re.compile(pattern)

    def validate(ctx: AnnotationContext) -> list[FieldError]:
        return [] if rx.fullmatch(ctx.value) else ctx.invalid(detail)

    return validate


def validate_bool(ctx: AnnotationContext) -> list[FieldError]:
    return ctx.invalid("must be a boolean") if parse_go_bool(ctx.value) is None else []


def validate_time(ctx: AnnotationContext) -> list[FieldError]:
    return [] if is_nginx_time(ctx.value) else ctx.invalid("must be a time")


validate_offset = regex_validator(r"\d+[kKmMgG]?", "must be an offset")


validate_size = regex_validator(r"\d+[kKmM]?", "must be a size")


validate_proxy_buffers = regex_validator(r"\d+ \d+[kKmM]?", "must be a proxy buffer spec")


def validate_uint64(ctx: AnnotationContext) -> list[FieldError]:
    ok = re.fullmatch(r"\d+", ctx.value) is not None and int(ctx.value) < 2**64
    return [] if ok else ctx.invalid("must be a non-negative integer")


def validate_int64(ctx: AnnotationContext) -> list[FieldError]:
    ok = re.fullmatch(r"[+-]?\d+", ctx.value) is not None and -(2**63) <= int(ctx.value) < 2**63
    return [] if ok else ctx.invalid("must be an integer")


def validate_port_list(ctx: AnnotationContext) -> list[FieldError]:
    for part in ctx.value.split(","):
        if not re.fullmatch(r"\d+", part) or not 1 <= int(part) <= 65535:
            return ctx.invalid("must be a comma-separated list of port numbers")
    return []


def validate_service_list(ctx: AnnotationContext) -> list[FieldError]:
    missing = [s for s in ctx.value.split(",") if s not in ctx.spec_services]
    if missing:
        return ctx.invalid("must be a comma-separated list of services. "
                           "The following services were not found: " + ",".join(missing))
    return []


_REWRITE_PATH_RE = re.compile(r"/[^\s{};$]*")


def validate_rewrites(ctx: AnnotationContext) -> list[FieldError]:
    missing: list[str] = []
    for part in ctx.value.split(";"):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"serviceName=(\S+)\s+rewrite=(\S+)", part)
        if m is None:
            return ctx.invalid(f"{part!r} is not a valid rewrite format, "
                               "e.g. 'serviceName=tea-svc rewrite=/'")
        svc, path = m.group(1), m.group(2)
        if not _REWRITE_PATH_RE.fullmatch(path):
            return ctx.invalid(f"path must start with '/' and must not include any whitespace character, "
                               f"'{{', '}}', ';' or '$': {path!r}")
        if svc not in ctx.spec_services:
            missing.append(svc)
    if missing:
        return ctx.invalid("The following services were not found: " + ",".join(missing))
    return []


_HASH_LB_RE = re.compile(r"hash \S+( consistent)?")


_OSS_LB_METHODS = {"round_robin", "least_conn", "ip_hash", "random", "random two", "random two least_conn"}


_PLUS_LB_METHODS = {"least_time header", "least_time last_byte", "least_time header inflight",
                    "least_time last_byte inflight", "random two least_time=header",
                    "random two least_time=last_byte"}


def is_valid_lb_method(value: str, *, is_plus: bool = False) -> bool:
    v = value.strip()
    if v in _OSS_LB_METHODS or _HASH_LB_RE.fullmatch(v):
        return True
    return is_plus and v in _PLUS_LB_METHODS


def validate_lb_method(ctx: AnnotationContext) -> list[FieldError]:
    if is_valid_lb_method(ctx.value, is_plus=ctx.is_plus):
        return []
    return ctx.invalid(f"invalid load balancing method: {go_quote(ctx.value)}")


_ANNOTATION_VALUE_RE = re.compile(r'([^"$\\]|\\[^$])*')


_ANNOTATION_VALUE_MSG = ("a valid annotation value must have all '\"' escaped and must not contain any '$' "
                         "or end with an unescaped '\\'")


def validate_escaped_value(ctx: AnnotationContext) -> list[FieldError]:
    return [] if _ANNOTATION_VALUE_RE.fullmatch(ctx.value) else ctx.invalid(_ANNOTATION_VALUE_MSG)


def validate_server_tokens(ctx: AnnotationContext) -> list[FieldError]:
    if not ctx.is_plus and parse_go_bool(ctx.value) is None:
        return ctx.invalid("must be a boolean")
    return validate_escaped_value(ctx)


def validate_snippets(ctx: AnnotationContext) -> list[FieldError]:
    if ctx.snippets_enabled:
        return []
    return [forbidden(ctx.field, "snippet specified but snippets feature is not enabled")]


def validate_header_names(ctx: AnnotationContext) -> list[FieldError]:
    errs: list[FieldError] = []
    for h in ctx.value.split(","):
        errs.extend(invalid(ctx.field, h.strip(), m) for m in is_http_header_name(h.strip()))
    return errs


def validate_proxy_set_headers(ctx: AnnotationContext) -> list[FieldError]:
    for entry in ctx.value.split(","):
        entry = entry.strip()
        if ":" in entry:
            name, value = entry.split(":", 1)
            name = name.strip()
            if "$" in value:
                return ctx.invalid("invalid character in value: $")
        else:
            name = entry
            if " " in name:
                return ctx.invalid("invalid header syntax - spaces are not allowed in header")
        if not name:
            return ctx.invalid(f"empty header name: {entry!r}")
        msgs = is_http_header_name(name)
        if msgs:
            return [invalid(ctx.field, name, msgs[0])]
    return []


def validate_secret_name(ctx: AnnotationContext) -> list[FieldError]:
    return [invalid(ctx.field, ctx.value, m) for m in is_dns1123_subdomain(ctx.value)]


_POLICY_NS_RE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def validate_policy_refs(ctx: AnnotationContext) -> list[FieldError]:
    """`nginx.org/policies`: a comma-separated list of `name` or `namespace/name` (NIC 5.5)."""
    for item in ctx.value.split(","):
        ref = item.strip()
        ns, _, name = ref.rpartition("/")
        if not name or (("/" in ref) and not _POLICY_NS_RE.fullmatch(ns)) or is_dns1123_subdomain(name):
            return ctx.invalid("must be a comma-separated list of policy references, each a name or "
                               "namespace/name (DNS-1123)")
    return []


def validate_path_regex(ctx: AnnotationContext) -> list[FieldError]:
    if ctx.value in ("case_sensitive", "case_insensitive", "exact"):
        return []
    return ctx.invalid("allowed values: 'case_sensitive', 'case_insensitive' or 'exact'")


def validate_mergeable_type(ctx: AnnotationContext) -> list[FieldError]:
    if ctx.value in ("master", "minion"):
        return []
    return ctx.invalid("must be one of: 'master' or 'minion'")

