"""Ingress annotation validation: NIC's validators for each annotation, table-driven, and the value checks of
the annotation parsers, as Kubernetes field errors.

Guarantees:
- `ANNOTATION_VALIDATIONS` maps an annotation name to its ordered validators; the first failing one stops
  that annotation. Annotations are checked in sorted name order (NIC's order).
- Deliberate difference from NIC: every annotation value the config generator would refuse is a validation
  error too (`validate_annotation_values`: `limit-req-*`, unknown NGINX variables, zone sizes, ...), so a bad
  value rejects the Ingress up front with an event naming the annotation and value, instead of being logged
  and ignored. Each annotation is reported once: by its NIC validator if that fails, else by the parser
  (`annotation_errors` does both, sorted by field).
- The accessors (`get_annotations`, `mergeable_type`, ...) tolerate malformed objects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ingressctl.kinds.ingress.annotations import annotation_error, check_annotations
from ingressctl.kinds.ingress.refs import BASIC_AUTH_SECRET, service_names
from ingressctl.validation import (
    OMIT,
    ErrorType,
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

MERGEABLE_INGRESS_TYPE: Final = "nginx.org/mergeable-ingress-type"


def _as_dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def get_annotations(ing: Mapping[str, Any]) -> dict[str, str]:
    """The annotations as strings (a copy; {} for none or a malformed field)."""
    ann = _as_dict(_as_dict(ing.get("metadata")).get("annotations"))
    if not ann:
        return {}
    return {str(k): v if isinstance(v, str) else str(v) for k, v in ann.items()}


def get_annotation(ing: Mapping[str, Any], name: str) -> str:
    """One annotation as `get_annotations` gives it ("" when absent), without copying the others."""
    v = _as_dict(_as_dict(ing.get("metadata")).get("annotations")).get(name, "")
    return v if isinstance(v, str) else str(v)


def mergeable_type(ing: Mapping[str, Any]) -> str:
    """The `nginx.org/mergeable-ingress-type` annotation ("master", "minion", or "" / another value)."""
    return get_annotation(ing, MERGEABLE_INGRESS_TYPE)


def is_master(ing: Mapping[str, Any]) -> bool:
    return mergeable_type(ing) == "master"


def is_minion(ing: Mapping[str, Any]) -> bool:
    return mergeable_type(ing) == "minion"


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


def _required(ctx: AnnotationContext) -> list[FieldError]:
    return [required(ctx.field)] if ctx.value == "" else []


def _plus_only(ctx: AnnotationContext) -> list[FieldError]:
    return [] if ctx.is_plus else [forbidden(ctx.field, "annotation requires NGINX Plus")]


def _related(other: str, check: Callable[[str], str | None] | None = None) -> AnnotationValidator:
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


def _check_bool(v: str) -> str | None:
    return None if parse_go_bool(v) is not None else "must be a boolean"


def _check_true(v: str) -> str | None:
    return None if parse_go_bool(v) is True else "must be true"


def _regex_validator(pattern: str, detail: str) -> AnnotationValidator:
    rx = re.compile(pattern)

    def validate(ctx: AnnotationContext) -> list[FieldError]:
        return [] if rx.fullmatch(ctx.value) else ctx.invalid(detail)

    return validate


def _bool(ctx: AnnotationContext) -> list[FieldError]:
    return ctx.invalid("must be a boolean") if parse_go_bool(ctx.value) is None else []


def _time(ctx: AnnotationContext) -> list[FieldError]:
    return [] if is_nginx_time(ctx.value) else ctx.invalid("must be a time")


_offset = _regex_validator(r"\d+[kKmMgG]?", "must be an offset")


_size = _regex_validator(r"\d+[kKmM]?", "must be a size")


_proxy_buffers = _regex_validator(r"\d+ \d+[kKmM]?", "must be a proxy buffer spec")


def _uint64(ctx: AnnotationContext) -> list[FieldError]:
    ok = re.fullmatch(r"\d+", ctx.value) is not None and int(ctx.value) < 2**64
    return [] if ok else ctx.invalid("must be a non-negative integer")


def _int64(ctx: AnnotationContext) -> list[FieldError]:
    ok = re.fullmatch(r"[+-]?\d+", ctx.value) is not None and -(2**63) <= int(ctx.value) < 2**63
    return [] if ok else ctx.invalid("must be an integer")


def _port_list(ctx: AnnotationContext) -> list[FieldError]:
    for part in ctx.value.split(","):
        if not re.fullmatch(r"\d+", part) or not 1 <= int(part) <= 65535:
            return ctx.invalid("must be a comma-separated list of port numbers")
    return []


def _service_list(ctx: AnnotationContext) -> list[FieldError]:
    missing = [s for s in ctx.value.split(",") if s not in ctx.spec_services]
    if missing:
        return ctx.invalid("must be a comma-separated list of services. "
                           "The following services were not found: " + ",".join(missing))
    return []


_REWRITE_PATH_RE = re.compile(r"/[^\s{};$]*")


def _rewrites(ctx: AnnotationContext) -> list[FieldError]:
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


def _lb_method(ctx: AnnotationContext) -> list[FieldError]:
    if is_valid_lb_method(ctx.value, is_plus=ctx.is_plus):
        return []
    return ctx.invalid(f"invalid load balancing method: {go_quote(ctx.value)}")


_ANNOTATION_VALUE_RE = re.compile(r'([^"$\\]|\\[^$])*')


_ANNOTATION_VALUE_MSG = ("a valid annotation value must have all '\"' escaped and must not contain any '$' "
                         "or end with an unescaped '\\'")


def _escaped_value(ctx: AnnotationContext) -> list[FieldError]:
    return [] if _ANNOTATION_VALUE_RE.fullmatch(ctx.value) else ctx.invalid(_ANNOTATION_VALUE_MSG)


def _server_tokens(ctx: AnnotationContext) -> list[FieldError]:
    if not ctx.is_plus and parse_go_bool(ctx.value) is None:
        return ctx.invalid("must be a boolean")
    return _escaped_value(ctx)


def _snippets(ctx: AnnotationContext) -> list[FieldError]:
    if ctx.snippets_enabled:
        return []
    return [forbidden(ctx.field, "snippet specified but snippets feature is not enabled")]


def _header_names(ctx: AnnotationContext) -> list[FieldError]:
    errs: list[FieldError] = []
    for h in ctx.value.split(","):
        errs.extend(invalid(ctx.field, h.strip(), m) for m in is_http_header_name(h.strip()))
    return errs


def _proxy_set_headers(ctx: AnnotationContext) -> list[FieldError]:
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


def _secret_name(ctx: AnnotationContext) -> list[FieldError]:
    return [invalid(ctx.field, ctx.value, m) for m in is_dns1123_subdomain(ctx.value)]


_POLICY_NS_RE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def _policy_refs(ctx: AnnotationContext) -> list[FieldError]:
    """`nginx.org/policies`: a comma-separated list of `name` or `namespace/name` (NIC 5.5)."""
    for item in ctx.value.split(","):
        ref = item.strip()
        ns, _, name = ref.rpartition("/")
        if not name or (("/" in ref) and not _POLICY_NS_RE.fullmatch(ns)) or is_dns1123_subdomain(name):
            return ctx.invalid("must be a comma-separated list of policy references, each a name or "
                               "namespace/name (DNS-1123)")
    return []


def _path_regex(ctx: AnnotationContext) -> list[FieldError]:
    if ctx.value in ("case_sensitive", "case_insensitive", "exact"):
        return []
    return ctx.invalid("allowed values: 'case_sensitive', 'case_insensitive' or 'exact'")


def _mergeable_type(ctx: AnnotationContext) -> list[FieldError]:
    if ctx.value in ("master", "minion"):
        return []
    return ctx.invalid("must be one of: 'master' or 'minion'")


def _org(name: str) -> str:
    return f"nginx.org/{name}"


_R: Final = _required


_P: Final = _plus_only


# annotation name -> ordered validators; the first failing one stops the annotation.
ANNOTATION_VALIDATIONS: dict[str, tuple[AnnotationValidator, ...]] = {
    MERGEABLE_INGRESS_TYPE: (_R, _mergeable_type),
    _org("lb-method"): (_R, _lb_method),
    "nginx.com/health-checks": (_P, _R, _bool),
    "nginx.com/health-checks-mandatory": (_P, _related("nginx.com/health-checks", _check_true), _R, _bool),
    "nginx.com/health-checks-mandatory-queue": (
        _P, _related("nginx.com/health-checks-mandatory", _check_true), _R, _uint64),
    "nginx.com/slow-start": (_P, _R, _time),
    _org("server-tokens"): (_server_tokens,),
    _org("server-snippets"): (_snippets,),
    _org("location-snippets"): (_snippets,),
    _org("proxy-connect-timeout"): (_R, _time),
    _org("proxy-read-timeout"): (_R, _time),
    _org("proxy-send-timeout"): (_R, _time),
    _org("proxy-hide-headers"): (_header_names,),
    _org("proxy-pass-headers"): (_header_names,),
    _org("proxy-set-headers"): (_proxy_set_headers,),
    _org("client-max-body-size"): (_R, _offset),
    _org("redirect-to-https"): (_R, _bool),
    "ingress.kubernetes.io/ssl-redirect": (_R, _bool),
    _org("ssl-redirect"): (_R, _bool),
    _org("ssl-prefer-server-ciphers"): (_R, _bool),
    _org("client-body-buffer-size"): (_R, _size),
    _org("proxy-busy-buffers-size"): (_R, _size),
    _org("proxy-next-upstream-timeout"): (_R, _time),
    _org("proxy-next-upstream-tries"): (_R, _uint64),
    _org("sticky-cookie-services"): (_R,),
    _org("proxy-redirect-from"): (_R,),
    _org("proxy-redirect-to"): (_R,),
    _org("proxy-buffering"): (_R, _bool),
    _org("hsts"): (_R, _bool),
    _org("hsts-max-age"): (_related(_org("hsts"), _check_bool), _R, _int64),
    _org("hsts-include-subdomains"): (_related(_org("hsts"), _check_bool), _R, _bool),
    _org("hsts-behind-proxy"): (_related(_org("hsts"), _check_bool), _R, _bool),
    _org("proxy-buffers"): (_R, _proxy_buffers),
    _org("proxy-buffer-size"): (_R, _size),
    _org("proxy-max-temp-file-size"): (_R, _size),
    _org("upstream-zone-size"): (_R, _size),
    BASIC_AUTH_SECRET: (_R, _secret_name),
    _org("basic-auth-realm"): (_related(BASIC_AUTH_SECRET), _escaped_value),
    "nginx.com/jwt-realm": (_P, _R, _escaped_value),
    "nginx.com/jwt-key": (_P, _R, _secret_name),
    "nginx.com/jwt-token": (_P,),
    "nginx.com/jwt-login-url": (_P,),
    _org("listen-ports"): (_R, _port_list),
    _org("listen-ports-ssl"): (_R, _port_list),
    _org("keepalive"): (_R, _int64),
    _org("max-fails"): (_R, _uint64),
    _org("max-conns"): (_R, _uint64),
    _org("fail-timeout"): (_R, _time),
    _org("websocket-services"): (_R, _service_list),
    _org("ssl-services"): (_R, _service_list),
    _org("grpc-services"): (_R, _service_list),
    _org("rewrites"): (_R, _rewrites),
    "nginx.com/sticky-cookie-services": (_P, _R),
    "nginx.com/policies": (_P,),  # NIC 5.5: the Plus twin of nginx.org/policies (WAF Policies)
    _org("path-regex"): (_path_regex,),
    _org("use-cluster-ip"): (_bool,),
    _org("policies"): (_R, _policy_refs),
}


def validate_annotations(ing: Mapping[str, Any], *, is_plus: bool = False,
                         snippets_enabled: bool = False) -> list[FieldError]:
    """Run `ANNOTATION_VALIDATIONS` over the Ingress's annotations, in sorted name order."""
    return _validate_annotations(ing, get_annotations(ing), is_plus, snippets_enabled)


def _validate_annotations(ing: Mapping[str, Any], annotations: dict[str, str], is_plus: bool,
                          snippets_enabled: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    services: frozenset[str] | None = None   # the spec's Services: read only for an annotation to check
    for name in sorted(annotations):
        validators = ANNOTATION_VALIDATIONS.get(name)
        if not validators:
            continue
        if services is None:
            services = frozenset(service_names(ing))
        ctx = AnnotationContext(name, annotations[name], annotations, is_plus, snippets_enabled, services)
        for validator in validators:
            found = validator(ctx)
            if found:
                errs.extend(found)
                break
    return errs


def annotation_errors(ing: Mapping[str, Any], annotations: dict[str, str], *, is_plus: bool = False,
                      snippets_enabled: bool = False) -> list[FieldError]:
    """Every annotation error of the Ingress (`annotations` are its `get_annotations`), sorted by field; one
    annotation's errors keep their order."""
    if not annotations:
        return []
    errs = _validate_annotations(ing, annotations, is_plus, snippets_enabled)
    failed = {e.field.removeprefix("annotations.") for e in errs}
    errs.extend(_validate_annotation_values(annotations, snippets_enabled, failed))
    errs.sort(key=lambda e: e.field)
    return errs


def validate_annotation_values(ing: Mapping[str, Any], *, snippets_enabled: bool = False,
                               skip: Iterable[str] = ()) -> list[FieldError]:
    """The values the config generator would refuse (`configs.annotations.check_annotations`), as field
    errors `annotations.<name>: Invalid value: "<value>": <detail>`. Covers what NIC's validation lets through
    and only logs later: every `nginx.org/limit-req-*` value, unknown NGINX variables, zone sizes NGINX
    refuses, ... Annotations named in `skip` (already reported by `validate_annotations`) are left out."""
    return _validate_annotation_values(get_annotations(ing), snippets_enabled, skip)


def _validate_annotation_values(all_annotations: dict[str, str], snippets_enabled: bool,
                                skip: Iterable[str]) -> list[FieldError]:
    if not all_annotations:
        return []
    skipped = set(skip)
    annotations = {k: v for k, v in all_annotations.items() if k not in skipped}
    if not annotations:
        return []
    errs: list[FieldError] = []
    for msg in check_annotations(annotations, snippets_enabled=snippets_enabled):
        errs.append(_annotation_value_error(msg, annotations))
    return errs


def _annotation_value_error(msg: str, annotations: Mapping[str, str]) -> FieldError:
    """A `check_annotations` message (`annotation <name>: invalid value "<v>": <detail>`) as a FieldError."""
    for name, value in annotations.items():
        if not msg.startswith(f"annotation {name}: "):
            continue
        prefix = annotation_error(name, value, "")
        detail = msg[len(prefix):] if msg.startswith(prefix) else msg
        return invalid(f"annotations.{name}", value, detail or "invalid value")
    return FieldError(ErrorType.INVALID, "metadata.annotations", OMIT, msg)
