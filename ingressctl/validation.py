"""Kind-neutral validation primitives: apimachinery's field errors (`field.Error`, its constructors and
`ToAggregate`'s message) and name rules (DNS-1123/1035 names, ports, header names, rule hosts), in
kube-apiserver's wording.

Guarantees: pure, and nothing here raises on malformed input; messages match apimachinery's to the letter
(`spec.rules[0].host: Invalid value: "foo_bar": a lowercase RFC 1123 subdomain ...`), so users read what
kube-apiserver would print. `aggregate_message` joins errors as `field.ErrorList.ToAggregate().Error()` does:
duplicates dropped, one error as is, several as `[e1, e2]`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final


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
DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL_FMT)
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
    if not DNS1035_LABEL_RE.fullmatch(value):
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
# NIC's string rules for values that reach the NGINX configuration.

CONTROL = re.compile(r"[\x00-\x1f\x7f]")          # could end an NGINX directive
ESCAPED = re.compile(r'([^"\\]|\\.)*')              # every `"` escaped
VAR_PREFIXES = ("arg_", "http_", "cookie_")
_VAR = re.compile(r"\$\{([^}]*)\}")
_ARG_NAME = re.compile(r"[_A-Za-z0-9]+")
# A return body: NIC's escaped string; raw LF, TAB and CR allowed, no `\` before a control character.
_BODY_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_BODY_ESCAPED = re.compile(r'(?:[^"\\]|\\[^\x00-\x1f\x7f])*')


def as_dict(v: Any) -> dict[str, Any]:
    """`v` if it is a mapping of the parsed object, else empty (objects are not schema-checked here)."""
    return v if isinstance(v, dict) else {}


def as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def as_str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def validate_variables(field: str, value: str, allowed: frozenset[str], *,
                       prefixes: tuple[str, ...] = VAR_PREFIXES, body: bool = False) -> list[FieldError]:
    """NIC's `validateStringWithVariables`: `${name}` only, from the allow-list, `"` escaped (`body`: the
    control characters and escapes of a VirtualServer return body, which may hold LF, TAB and CR)."""
    errs = control(field, value, _BODY_CONTROL if body else CONTROL)
    if value.endswith("$"):
        errs.append(invalid(field, value, "must not end with $"))
    if not (_BODY_ESCAPED if body else ESCAPED).fullmatch(value):
        errs.append(invalid(field, value, 'a valid string must have all \'"\' escaped'))
    rest = _VAR.sub("", value)
    if "$" in rest.rstrip("$"):
        errs.append(invalid(field, value, "variables must be enclosed in curly braces, for example ${host}"))
    for name in _VAR.findall(value):
        if name in allowed:
            continue
        prefix = next((p for p in prefixes if name.startswith(p)), None)
        ok = prefix is not None and (
            bool(_ARG_NAME.fullmatch(name[len(prefix):])) if prefix != "http_"
            else bool(re.fullmatch(r"[_A-Za-z0-9]+", name[len(prefix):])))
        if not ok:
            errs.append(invalid(field, value, f"'{name}' is not a supported variable"))
    return errs


def control(field: str, value: str, characters: re.Pattern[str] = CONTROL) -> list[FieldError]:
    """An error when `value` holds a control character (they could end a directive)."""
    if characters.search(value):
        return [invalid(field, value, "must not contain control characters")]
    return []


_GO_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_GO_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def parse_go_bool(value: str) -> bool | None:
    """Go's strconv.ParseBool; None when the value is not a boolean."""
    if value in _GO_TRUE:
        return True
    if value in _GO_FALSE:
        return False
    return None


_TIME_RE = re.compile(
    r"\d+|(?=\d)(\d+y)?\s*(\d+M)?\s*(\d+w)?\s*(\d+d)?\s*(\d+h)?\s*(\d+m)?\s*(\d+s)?\s*(\d+ms)?")


def is_nginx_time(value: str) -> bool:
    """An NGINX time: `30`, `30s`, `1m30s`, `500ms`, `1h 30m`, ... (units y M w d h m s ms, in that order)."""
    return bool(value.strip()) and _TIME_RE.fullmatch(value.strip()) is not None
