"""Ingress validation: NIC's rules with Kubernetes' field-error format.

Guarantees:
- `validate_ingress` is pure and never raises on malformed input (wrong types, missing fields): every problem
  becomes a `FieldError`, formatted exactly as apimachinery's `field.Error`
  (`spec.rules[0].host: Invalid value: "foo_bar": a lowercase RFC 1123 subdomain ...`).
- Order of checks follows NIC: annotations (sorted by name, the first failing validator of an annotation
  stops it), then the spec, then the master/minion rules of mergeable Ingresses.
- Deliberate differences from NIC: duplicate paths of one host (the same path with the same pathType; Exact
  and Prefix of one path are two paths) are a `Duplicate value` error; path errors
  carry the correct field path `spec.rules[i].http.paths[j].path`; hosts and backends get the API server's
  checks too (an Ingress from a cluster that skips them is still rejected cleanly).
- An Ingress without rules needs a `defaultBackend` (the API server's rule; it is then the class-wide
  catch-all, see the Configuration); NIC requires rules.
- `aggregate_message` joins errors as `field.ErrorList.ToAggregate().Error()` does: duplicates dropped, one
  error as is, several as `[e1, e2]`.
- Annotation checks are table-driven (`ANNOTATION_VALIDATIONS`): add a row to validate a new annotation.
- Deliberate difference from NIC: every annotation value the config generator would refuse is a validation
  error too (`validate_annotation_values`: `limit-req-*`, unknown NGINX variables, zone sizes, ...), so a bad
  value rejects the Ingress up front with an event naming the annotation and value, instead of being logged
  and ignored. Each annotation is reported once: by its NIC validator if that fails, else by the parser.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from ingressctl.kinds.ingress.annotations import annotation_error, check_annotations
from ingressctl.kinds.ingress.refs import BASIC_AUTH_SECRET, service_names

# ---------------------------------------------------------------------------------------------------------
# Annotation names shared with the Configuration.

MERGEABLE_INGRESS_TYPE: Final = "nginx.org/mergeable-ingress-type"
INGRESS_CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"

PATH_TYPES: Final = ("Exact", "ImplementationSpecific", "Prefix")


# ---------------------------------------------------------------------------------------------------------
# Field errors (apimachinery pkg/util/validation/field).


class ErrorType(StrEnum):
    """The `field.ErrorType` strings."""

    NOT_FOUND = "Not found"
    REQUIRED = "Required value"
    DUPLICATE = "Duplicate value"
    INVALID = "Invalid value"
    NOT_SUPPORTED = "Unsupported value"
    FORBIDDEN = "Forbidden"
    TOO_LONG = "Too long"
    TOO_MANY = "Too many"
    INTERNAL = "Internal error"


class _Omit:
    """Marks a FieldError without a value (`omitValue` in apimachinery)."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Final = _Omit()

_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
               '"': '\\"', "\\": "\\\\"}


def go_quote(s: str) -> str:
    """Quote `s` as Go's `%q` / strconv.Quote does."""
    out = ['"']
    for ch in s:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable() and ch != "\x7f":
            out.append(ch)
        else:
            cp = ord(ch)
            if cp < 0x80:
                out.append(f"\\x{cp:02x}")
            elif cp <= 0xFFFF:
                out.append(f"\\u{cp:04x}")
            else:
                out.append(f"\\U{cp:08x}")
    out.append('"')
    return "".join(out)


def _format_value(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, (int, float)):
        return str(value)
    return repr(value)


@dataclass(frozen=True)
class FieldError:
    """One validation error of one field, rendered as `<field>: <type>[: <value>][: <detail>]`."""

    type: ErrorType
    field: str
    bad_value: object = OMIT
    detail: str = ""

    def error_body(self) -> str:
        """The message without the field path (apimachinery `ErrorBody`)."""
        if self.type in (ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL) \
                or self.bad_value is OMIT:
            s = str(self.type)
        else:
            s = f"{self.type}: {_format_value(self.bad_value)}"
        if self.detail:
            s += f": {self.detail}"
        return s

    def __str__(self) -> str:
        return f"{self.field}: {self.error_body()}"


def required(field: str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, field, OMIT, detail)


def invalid(field: str, value: object, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, field, value, detail)


def duplicate(field: str, value: object) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, field, value)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, field, OMIT, detail)


def not_supported(field: str, value: object, valid_values: Sequence[str]) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(v) for v in valid_values) if valid_values else ""
    return FieldError(ErrorType.NOT_SUPPORTED, field, value, detail)


def too_many(field: str, actual: int, maximum: int) -> FieldError:
    return FieldError(ErrorType.TOO_MANY, field, actual, f"must have at most {maximum} items")


def aggregate_message(errors: Iterable[FieldError | str]) -> str:
    """`ErrorList.ToAggregate().Error()`: "" for none, the message for one, `[e1, e2]` for several."""
    msgs: list[str] = []
    seen: set[str] = set()
    for e in errors:
        m = str(e)
        if m not in seen:
            seen.add(m)
            msgs.append(m)
    if not msgs:
        return ""
    if len(msgs) == 1:
        return msgs[0]
    return "[" + ", ".join(msgs) + "]"


# ---------------------------------------------------------------------------------------------------------
# Kubernetes name and value checks (apimachinery pkg/util/validation), returning detail strings.


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's `RegexError` text."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    ex = " or ".join(f"'{e}'" for e in examples)
    return f"{msg} (e.g. {ex}, regex used for validation is '{fmt}')"


def max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                          "characters, '-' or '.', and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_WILDCARD_FMT = "\\*\\." + _DNS1123_SUBDOMAIN_FMT
_WILDCARD_MSG = ("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, "
                 "which must consist of lower case alphanumeric characters, '-' or '.' and end with an "
                 "alphanumeric character")
_WILDCARD_RE = re.compile(_WILDCARD_FMT)
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                      "with an alphabetic character, and end with an alphanumeric character")
_DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL_FMT)
_HTTP_HEADER_FMT = "[-A-Za-z0-9]+"
_HTTP_HEADER_RE = re.compile(_HTTP_HEADER_FMT)


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not re.fullmatch(_DNS1123_LABEL_FMT, value):
        errs.append(regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                                "characters or '-', and must start and end with an alphanumeric character",
                                _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _WILDCARD_RE.fullmatch(value):
        errs.append(regex_error(_WILDCARD_MSG, _WILDCARD_FMT, "*.example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else ["must be between 1 and 65535, inclusive"]


def is_valid_port_name(port: str) -> list[str]:
    """IANA_SVC_NAME rules."""
    errs = []
    if len(port) > 15:
        errs.append(max_len_error(15))
    if not re.fullmatch(r"[-a-z0-9]+", port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_http_header_name(value: str) -> list[str]:
    if _HTTP_HEADER_RE.fullmatch(value):
        return []
    return [regex_error("a valid HTTP header must consist of alphanumeric characters or '-'",
                        _HTTP_HEADER_FMT, "X-Header-Name")]


def _is_ip(value: str) -> bool:
    if ":" not in value and not value.replace(".", "").isdigit():
        return False  # neither IPv6 (has a colon) nor IPv4 (digits and dots): skips a costly exception
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def validate_host(host: str, field: str) -> list[FieldError]:
    """The API server's rule host check: a DNS-1123 subdomain or a `*.` wildcard, not an IP address."""
    if len(host) <= 253 and "*" not in host and _DNS1123_SUBDOMAIN_RE.fullmatch(host) and not _is_ip(host):
        return []   # the common case, decided without building messages
    errs = []
    if _is_ip(host):
        errs.append(invalid(field, host, "must be a DNS name, not an IP address"))
    msgs = is_wildcard_dns1123_subdomain(host) if "*" in host else is_dns1123_subdomain(host)
    errs.extend(invalid(field, host, m) for m in msgs)
    return errs


# ---------------------------------------------------------------------------------------------------------
# Small accessors that tolerate malformed objects.


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


# ---------------------------------------------------------------------------------------------------------
# Annotation validation (table-driven).


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

_GO_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_GO_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def parse_go_bool(value: str) -> bool | None:
    """Go's strconv.ParseBool; None when the value is not a boolean."""
    if value in _GO_TRUE:
        return True
    if value in _GO_FALSE:
        return False
    return None


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


_TIME_RE = re.compile(
    r"\d+|(?=\d)(\d+y)?\s*(\d+M)?\s*(\d+w)?\s*(\d+d)?\s*(\d+h)?\s*(\d+m)?\s*(\d+s)?\s*(\d+ms)?")


def is_nginx_time(value: str) -> bool:
    """An NGINX time: `30`, `30s`, `1m30s`, `500ms`, `1h 30m`, ... (units y M w d h m s ms, in that order)."""
    return bool(value.strip()) and _TIME_RE.fullmatch(value.strip()) is not None


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


# ---------------------------------------------------------------------------------------------------------
# Spec validation.

_PATH_FMT = r"/[^\s;]*"
_PATH_RE = re.compile(_PATH_FMT)
_PATH_MSG = "must start with / and must not include any whitespace character or ';'"
_ESCAPED_STRING_RE = re.compile(r'([^"\\]|\\.)*', re.DOTALL)
_CURLY_WITH_LETTERS_RE = re.compile(r"\{[^}]*[A-Za-z][^}]*\}")
_ILLEGAL_PATH_RE = re.compile(r"/etc/|/root|/var|\\n|\\r")
_INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_PATH_SUFFIXES = ("/..", "/.")
_PATH_SEPARATORS_RE = re.compile(r"[/\\]")
# Letters, digits, '_', '-' and '/': no character any check below refuses or reads specially (no '.', '%',
# quote, backslash, brace or regex syntax), so only '//' and the illegal paths can make such a path invalid.
_PLAIN_PATH_RE = re.compile(r"/[A-Za-z0-9_/-]*")


def _is_plain_path(path: str) -> bool:
    """A path `validate_path` accepts under every pathType, decided without its full set of checks (most
    paths: letters, digits, '-', '_' and single slashes)."""
    return _PLAIN_PATH_RE.fullmatch(path) is not None and "//" not in path \
        and _ILLEGAL_PATH_RE.search(path) is None


def validate_path(path: str, path_type: str, field: str) -> list[FieldError]:
    """A path of pathType Exact, Prefix or ImplementationSpecific (the pathType is already checked)."""
    if path == "":
        if path_type == "ImplementationSpecific":
            return []
        return [required(field, "path is required for Exact and Prefix PathTypes")]
    if _is_plain_path(path):
        return []
    return _path_errors(path, path_type, field)


def _path_errors(path: str, path_type: str, field: str) -> list[FieldError]:
    """Every check of `validate_path` on a non-empty path."""
    if not _PATH_RE.fullmatch(path):
        return [invalid(field, path, regex_error(_PATH_MSG, _PATH_FMT, "/", "/path", "/path/subpath-123"))]
    errs: list[FieldError] = []
    if path.startswith("//"):
        errs.append(invalid(field, path, "must not start with '//' (a protocol-relative URL)"))
    if ".." in _PATH_SEPARATORS_RE.split(path):
        errs.append(invalid(field, path, "must not contain '..' path segments"))
    if path_type in ("Exact", "Prefix"):
        for seq in _INVALID_PATH_SEQUENCES:
            if seq in path:
                errs.append(invalid(field, path, f"must not contain '{seq}'"))
        for suffix in _INVALID_PATH_SUFFIXES:
            if path.endswith(suffix):
                errs.append(invalid(field, path, f"cannot end with '{suffix}'"))
    try:
        re.compile(path)
    except re.error as e:
        errs.append(invalid(field, path, f"must be a valid regular expression: {e}"))
    if not _ESCAPED_STRING_RE.fullmatch(path):
        errs.append(invalid(field, path, "must have all '\"' (double quotes) escaped and must not end with "
                                         "an unescaped '\\' (backslash)"))
    if _CURLY_WITH_LETTERS_RE.search(path):
        errs.append(invalid(field, path, "must not include curly braces containing alphabetical characters"))
    if _ILLEGAL_PATH_RE.search(path):  # anywhere in the path, as NIC 5.5
        errs.append(invalid(field, path, "must not contain invalid paths"))
    return errs


def _is_plain_backend(backend: Any) -> bool:
    """A backend `validate_backend` accepts, decided without building its messages: a Service with a valid
    DNS-1035 name and a port number 1-65535 (no port name)."""
    if not isinstance(backend, dict) or backend.get("resource") is not None:
        return False
    service = backend.get("service")
    if not isinstance(service, dict):
        return False
    name, port = service.get("name"), service.get("port")
    if not isinstance(name, str) or len(name) > 63 or _DNS1035_LABEL_RE.fullmatch(name) is None \
            or not isinstance(port, dict) or port.get("name"):
        return False
    number = port.get("number")
    return isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= 65535


def validate_backend(backend: Any, field: str) -> list[FieldError]:
    """An IngressBackend: a Service with a valid name and one port (number 1-65535 or an IANA_SVC_NAME)."""
    if not isinstance(backend, dict):
        return [invalid(field, "", "resource or service backend is required")]
    has_resource = backend.get("resource") is not None
    service = backend.get("service")
    if has_resource:
        return [forbidden(f"{field}.resource", "resource backends are not supported")]
    if not isinstance(service, dict):
        return [invalid(field, "", "resource or service backend is required")]
    errs: list[FieldError] = []
    name = service.get("name")
    if not isinstance(name, str) or name == "":
        errs.append(required(f"{field}.service.name"))
    else:
        errs.extend(invalid(f"{field}.service.name", name, m) for m in is_dns1035_label(name))
    port = _as_dict(service.get("port"))
    port_name = port.get("name") or ""
    port_number = port.get("number") or 0
    if not isinstance(port_name, str):
        errs.append(invalid(f"{field}.service.port.name", str(port_name), "must be a string"))
        return errs
    if not isinstance(port_number, int) or isinstance(port_number, bool):
        errs.append(invalid(f"{field}.service.port.number", str(port_number), "must be an integer"))
        return errs
    if port_name and port_number:
        errs.append(invalid(field, "", "cannot set both port name & port number"))
    elif port_name:
        errs.extend(invalid(f"{field}.service.port.name", port_name, m)
                    for m in is_valid_port_name(port_name))
    elif port_number:
        errs.extend(invalid(f"{field}.service.port.number", port_number, m)
                    for m in is_valid_port_num(port_number))
    else:
        errs.append(required(field, "port name or number is required"))
    return errs


def path_conflict_key(path: str, path_type: str) -> str:
    """The location a path occupies: "" means "/", and a Prefix path ignores its trailing slashes."""
    if path == "":
        return "/"
    if path_type == "Prefix":
        return path.rstrip("/") or "/"
    return path


def duplicate_path_key(path: str, path_type: str) -> tuple[str, str]:
    """What makes two paths of one rule duplicates: the same path (as `path_conflict_key` sees it) with the
    same pathType. Exact and Prefix of one path are different paths (Exact wins for the exact URI)."""
    return path_type, path_conflict_key(path, path_type)


def validate_ingress_spec(ing: Mapping[str, Any], *, allow_empty_host: bool = False) -> list[FieldError]:
    """NIC's `validateIngressSpec` plus the API server's host, pathType and backend checks. With
    `allow_empty_host` (NIC's -allow-empty-ingress-host) one rule may have no host (`_empty_host_errors`)."""
    spec = _as_dict(ing.get("spec"))
    errs: list[FieldError] = []
    if spec.get("defaultBackend") is not None:
        errs.extend(validate_backend(spec["defaultBackend"], "spec.defaultBackend"))
    rules = _as_list(spec.get("rules"))
    if not rules and spec.get("defaultBackend") is None:
        errs.append(required("spec.rules"))
        return errs
    hosts: set[str] = set()
    valid_hosts: set[str] = set()   # rule hosts validate_host accepted
    for i, raw_rule in enumerate(rules):
        rule = _as_dict(raw_rule)
        host = rule.get("host")
        host_field = f"spec.rules[{i}].host"
        if (host is None or host == "") and allow_empty_host:
            if "" in hosts:
                errs.append(duplicate(host_field, ""))
            else:
                hosts.add("")
                errs.extend(_empty_host_errors(ing, host_field))
        elif not isinstance(host, str) or host == "":
            errs.append(required(host_field))
        elif host in hosts:
            errs.append(duplicate(host_field, host))
        else:
            hosts.add(host)
            host_errs = validate_host(host, host_field)
            if host_errs:
                errs.extend(host_errs)
            else:
                valid_hosts.add(host)
        seen_paths: set[tuple[str, str]] = set()
        for j, raw_path in enumerate(_as_list(_as_dict(rule.get("http")).get("paths"))):
            p = _as_dict(raw_path)
            path = p.get("path", "")
            path_type = p.get("pathType")
            if isinstance(path, str) and path_type in PATH_TYPES and _is_plain_path(path) \
                    and _is_plain_backend(p.get("backend")):
                # Nothing to report for the path or its backend: only the duplicate check is left.
                k = duplicate_path_key(path, path_type)
                if k in seen_paths:
                    errs.append(duplicate(f"spec.rules[{i}].http.paths[{j}].path", path))
                seen_paths.add(k)
                continue
            pfield = f"spec.rules[{i}].http.paths[{j}]"
            if not isinstance(path, str):
                errs.append(invalid(f"{pfield}.path", str(path), "must be a string"))
                path = ""
            if path_type is None or path_type == "":
                errs.append(required(f"{pfield}.pathType", "pathType must be specified"))
            elif path_type not in PATH_TYPES:
                errs.append(not_supported(f"{pfield}.pathType", str(path_type), PATH_TYPES))
            else:
                path_errs = validate_path(path, path_type, f"{pfield}.path")
                errs.extend(path_errs)
                if not path_errs:
                    k = duplicate_path_key(path, path_type)
                    if k in seen_paths:
                        errs.append(duplicate(f"{pfield}.path", path))
                    seen_paths.add(k)
            errs.extend(validate_backend(p.get("backend"), f"{pfield}.backend"))
    for i, raw_tls in enumerate(_as_list(spec.get("tls"))):
        for j, h in enumerate(_as_list(_as_dict(raw_tls).get("hosts"))):
            if isinstance(h, str) and h and h not in valid_hosts:   # a valid rule host is valid here too
                errs.extend(validate_host(h, f"spec.tls[{i}].hosts[{j}]"))
    return errs


def _rules_and_paths(ing: Mapping[str, Any]) -> tuple[list[Any], Any]:
    rules = _as_list(_as_dict(ing.get("spec")).get("rules"))
    http = _as_dict(rules[0]).get("http") if rules else None
    return rules, http


def validate_master_spec(ing: Mapping[str, Any]) -> list[FieldError]:
    """A master: exactly one rule, and no paths."""
    rules, http = _rules_and_paths(ing)
    if len(rules) != 1:
        return [too_many("spec.rules", len(rules), 1)]
    paths = _as_list(_as_dict(http).get("paths"))
    if paths:
        return [too_many("spec.rules[0].http.paths", len(paths), 0)]
    return []


def validate_minion_spec(ing: Mapping[str, Any]) -> list[FieldError]:
    """A minion: no TLS, exactly one rule, at least one path."""
    tls = _as_list(_as_dict(ing.get("spec")).get("tls"))
    if tls:
        return [too_many("spec.tls", len(tls), 0)]
    rules, http = _rules_and_paths(ing)
    if len(rules) != 1:
        return [too_many("spec.rules", len(rules), 1)]
    if not _as_list(_as_dict(http).get("paths")):
        return [required("spec.rules[0].http.paths", "must include at least one path")]
    return []


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


def _empty_host_errors(ing: Mapping[str, Any], field: str) -> list[FieldError]:
    """A rule without a host (it serves the hosts no other server names, as the class-wide catch-all does):
    not with its own listen ports, and no TLS entry with an empty host (its certificate is the default
    server's). A mergeable master may have it, and its minions then have no host either (NIC 5.5: the way to
    share the default server across namespaces)."""
    errs: list[FieldError] = []
    annotations = get_annotations(ing)
    for name in ("nginx.org/listen-ports", "nginx.org/listen-ports-ssl"):
        if name in annotations:
            errs.append(forbidden(f"annotations.{name}", "not allowed with a rule without a host"))
    for i, raw_tls in enumerate(_as_list(_as_dict(ing.get("spec")).get("tls"))):
        if "" in _as_list(_as_dict(raw_tls).get("hosts")):
            errs.append(forbidden(f"spec.tls[{i}].hosts", "an empty host cannot have TLS; the rule without a "
                                                         "host uses the default server's certificate"))
    return errs


def validate_ingress(ing: Mapping[str, Any], *, is_plus: bool = False, snippets_enabled: bool = False,
                     allow_empty_host: bool = False) -> list[FieldError]:
    """Every error of the Ingress, in NIC's order; an empty list means valid."""
    annotations = get_annotations(ing)
    errs: list[FieldError] = []
    if annotations:
        errs = _validate_annotations(ing, annotations, is_plus, snippets_enabled)
        failed = {e.field.removeprefix("annotations.") for e in errs}
        errs.extend(_validate_annotation_values(annotations, snippets_enabled, failed))
        errs.sort(key=lambda e: e.field)  # stable: one annotation's errors keep their order
    errs.extend(validate_ingress_spec(ing, allow_empty_host=allow_empty_host))
    kind = annotations.get(MERGEABLE_INGRESS_TYPE, "")
    if kind == "master":
        errs.extend(validate_master_spec(ing))
    elif kind == "minion":
        errs.extend(validate_minion_spec(ing))
    return errs
