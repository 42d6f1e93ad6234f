"""Strict parsers for the annotation and ConfigMap values added in NIC 5.2-5.5: `add-header`, `app-root`,
`http-redirect-code`, `rewrite-target`, `proxy-next-upstream`, `proxy-redirect-from`/`-to` and
`sticky-cookie-services`.

Same contract as `parsing`: each parser returns a normalised value or raises `ValueError` with a detail that
does not repeat the value. A value a parser accepts is safe in NGINX configuration (no whitespace other than
where the directive takes words, no `;`, `{`, `}`, `#`, quotes or control characters; `$` only in a rewrite
target, where it names a capture group) and is one NGINX 1.22 accepts for its directive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingressctl.configs.parsing import parse_header_name, unknown_variables

HTTP_REDIRECT_CODES = (301, 302, 307, 308)
PROXY_NEXT_UPSTREAM_VALUES = ("error", "timeout", "invalid_header", "http_500", "http_502", "http_503",
                              "http_504", "http_403", "http_404", "http_429", "non_idempotent", "off")
PROXY_NEXT_UPSTREAM_PLUS = ("denied",)

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# An add-header value: no `$`, no control characters, every `"` escaped, no trailing lone backslash.
_HEADER_VALUE = re.compile(r'([^"$\\\x00-\x1f\x7f]|\\[^$\x00-\x1f\x7f])*')
# RFC 1738 characters of a URL path (app-root), without `~`.
_APP_ROOT = re.compile(r"/[A-Za-z0-9\-._+!*'(),;:@&=/%]{0,2047}")
_REWRITE_TARGET_FORBIDDEN = set(";{}[]|<>,^~`\\\"' ")
_REDIRECT_FORBIDDEN = set(";{}#`\"'\\")
_STICKY_ITEM = re.compile(r"serviceName=([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\s+(\S+)((?:\s+\S+)*)")
_COOKIE_NAME = re.compile(r"[A-Za-z0-9_!*+.~-]{1,256}")
_STICKY_PARAM = re.compile(r"(expires=(max|[0-9]{1,9}[smhdwMy]?)|domain=\.?[A-Za-z0-9.-]{1,253}"
                           r"|httponly|secure"
                           r"|path=/[A-Za-z0-9._~!*+,:@&=%/-]{0,1023}|samesite=(strict|lax|none))")


@dataclass(frozen=True)
class AddHeader:
    """`add_header <name> "<value>" [always];`."""

    name: str
    value: str
    always: bool = False


def parse_add_headers(value: str) -> tuple[AddHeader, ...]:
    """`Name:Value[:always], ...` (NIC's `nginx.org/add-header` and ConfigMap `add-header`). A value may not
    hold `$`, control characters or an unescaped `"`; a `:` ends it (the third field can only be `always`).
    A header named twice keeps its last value."""
    result: dict[str, AddHeader] = {}
    for entry in value.split(","):
        entry = entry.strip()
        if not entry:
            continue
        parts = [p.strip() for p in entry.split(":")]
        if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "always"):
            raise ValueError(f"header {entry!r} must have the format 'Name:Value' or 'Name:Value:always'")
        name, header_value = parts[0], parts[1]
        parse_header_name(name)
        if not header_value:
            raise ValueError(f"header {name!r} has an empty value")
        if len(header_value) > 1024 or not _HEADER_VALUE.fullmatch(header_value):
            raise ValueError(f"the value of header {name!r} must have all '\"' escaped and must not contain "
                             "any '$', control characters, or end with an unescaped '\\'")
        # NGINX reads the quoted value with `\"` and `\\` unescaped: keep what it would read.
        unescaped = re.sub(r'\\(["\\])', r"\1", header_value)
        result[name.lower()] = AddHeader(name, unescaped, len(parts) == 3)
    if not result:
        raise ValueError("must be a comma-separated list of 'Name:Value[:always]'")
    return tuple(result.values())


CUSTOM_HTTP_ERRORS_MAX = 300


def parse_custom_http_errors(value: str) -> tuple[int, ...]:
    """`nginx.org/custom-http-errors`: comma-separated codes (300-599, not 499, which `error_page` refuses)
    and `4xx`/`5xx` (every code of the class but 499); sorted, without duplicates."""
    if not value.strip():
        raise ValueError("must not be empty")
    codes: set[int] = set()
    for raw in value.split(","):
        token = raw.strip().lower()
        if not token:
            continue
        if token in ("4xx", "5xx"):
            first = int(token[0]) * 100
            codes.update(c for c in range(first, first + 100) if c != 499)
            continue
        if not token.isascii() or not token.isdigit():
            raise ValueError(f"invalid status code {raw.strip()!r}: must be an integer, '4xx' or '5xx'")
        code = int(token)
        if not 300 <= code <= 599:
            raise ValueError(f"invalid status code {code}: must be in the range 300-599")
        if code == 499:
            raise ValueError("invalid status code 499: NGINX refuses it in error_page")
        codes.add(code)
    if not codes:
        raise ValueError("no status codes")
    if len(codes) > CUSTOM_HTTP_ERRORS_MAX:
        raise ValueError(f"too many status codes ({len(codes)}), at most {CUSTOM_HTTP_ERRORS_MAX}")
    return tuple(sorted(codes))


ADD_HEADER_INHERIT_VALUES = ("on", "off", "merge")


def parse_add_header_inherit(value: str) -> str:
    """`on`, `off` or `merge` (any case), as NIC's ParseAddHeaderInherit; returned in lower case."""
    v = value.strip().lower()
    if v not in ADD_HEADER_INHERIT_VALUES:
        raise ValueError("must be one of: " + ", ".join(ADD_HEADER_INHERIT_VALUES))
    return v


def parse_http_redirect_code(value: str) -> int:
    """301, 302, 307 or 308."""
    text = value.strip()
    if text not in {str(c) for c in HTTP_REDIRECT_CODES}:
        raise ValueError("must be one of 301, 302, 307, 308")
    return int(text)


def parse_app_root(value: str) -> str:
    """The path `/` redirects to: starts with `/`, is not `/`, has no trailing `/`, no `~` and only RFC 1738
    URL characters."""
    text = value.strip()
    if not text.startswith("/"):
        raise ValueError("path must start with '/'")
    if text == "/":
        raise ValueError("path cannot be '/'")
    if text.endswith("/"):
        raise ValueError("path cannot end with '/'")
    if "~" in text or not _APP_ROOT.fullmatch(text) or text.startswith("//"):
        raise ValueError("path must contain only RFC 1738 URL characters (no '~', whitespace or quotes) and "
                         "must not start with '//'")
    return text


def parse_rewrite_target(value: str) -> str:
    """The URI a location's requests are rewritten to: a local path (`/`, `/beverages/$1`), never an
    absolute URL, `//`, a `..` segment, control characters or any of `;{}[]|<>,^~`, backtick, quotes,
    backslash or whitespace. `$<digit>` refers to a capture group of a regex path."""
    text = value.strip()
    if not text.startswith("/") or "://" in text:
        raise ValueError("must be a path starting with '/', not an absolute URL")
    if text.startswith("//") or "//" in text:
        raise ValueError("must not contain '//'")
    if ".." in re.split(r"[/\\]", text):
        raise ValueError("must not contain '..' path segments")
    if _CONTROL.search(text) or set(text) & _REWRITE_TARGET_FORBIDDEN:
        raise ValueError("must not contain control characters, whitespace, quotes or any of ;{}[]|<>,^~`\\")
    for m in re.finditer(r"\$(.?)", text):
        if not m.group(1).isdigit():
            raise ValueError("'$' may only refer to a capture group ($1 to $9)")
    if len(text) > 2048:
        raise ValueError("must be at most 2048 characters")
    return text


def parse_proxy_next_upstream(value: str, *, is_plus: bool = False) -> str:
    """Space-separated `proxy_next_upstream` conditions without duplicates; `off` only alone; `denied` is
    NGINX Plus only."""
    words = value.split()
    if not words:
        raise ValueError("must list at least one condition")
    seen: set[str] = set()
    for w in words:
        if w in PROXY_NEXT_UPSTREAM_PLUS and not is_plus:
            raise ValueError(f"{w!r} is only supported with NGINX Plus")
        if w not in PROXY_NEXT_UPSTREAM_VALUES and w not in PROXY_NEXT_UPSTREAM_PLUS:
            raise ValueError(f"invalid value {w!r}; allowed values: {', '.join(PROXY_NEXT_UPSTREAM_VALUES)}")
        if w in seen:
            raise ValueError(f"duplicate value {w!r}")
        seen.add(w)
    if "off" in seen and len(words) > 1:
        raise ValueError("'off' cannot be combined with other values")
    return " ".join(words)


def parse_uint(value: str) -> int:
    text = value.strip()
    if not re.fullmatch(r"[0-9]{1,9}", text):
        raise ValueError("must be a non-negative integer")
    return int(text)


def _redirect_part(text: str, what: str) -> str:
    """No whitespace, quotes, `;{}#` or backtick; a backslash only in a regular expression (`~`)."""
    if not text or len(text) > 2048:
        raise ValueError(f"{what} must not be empty")
    forbidden = _REDIRECT_FORBIDDEN - {"\\"} if text.startswith("~") else _REDIRECT_FORBIDDEN
    if any(c.isspace() for c in text) or _CONTROL.search(text) or set(text) & forbidden:
        raise ValueError(f"{what} must not contain whitespace, quotes, any of ;{{}}#` or (outside a regular "
                         "expression) backslashes")
    return text


def parse_proxy_redirect(from_value: str | None, to_value: str | None) -> tuple[str, str]:
    """(`from`, `to`) of `proxy_redirect`: `off` or `default` alone (as `from`, `to` empty), or both set. A
    `from` starting with `~` or `~*` is a regular expression that must compile (only there may `from` hold
    `$`); `to` may use known NGINX variables and `$1`-`$9`."""
    if from_value is None:
        raise ValueError("nginx.org/proxy-redirect-to requires nginx.org/proxy-redirect-from")
    src = from_value.strip()
    if src in ("off", "default"):
        if to_value is not None and to_value.strip():
            raise ValueError(f"'{src}' cannot be combined with nginx.org/proxy-redirect-to")
        return src, ""
    if to_value is None or not to_value.strip():
        raise ValueError("nginx.org/proxy-redirect-from requires nginx.org/proxy-redirect-to (or is 'off' "
                         "or 'default')")
    src = _redirect_part(src, "nginx.org/proxy-redirect-from")
    dst = _redirect_part(to_value.strip(), "nginx.org/proxy-redirect-to")
    bad = unknown_variables(re.sub(r"\$[0-9]", "", dst))
    if bad:
        raise ValueError(f"nginx.org/proxy-redirect-to uses unknown NGINX variable(s): {', '.join(bad)}")
    if not src.startswith("~") and "$" in src:
        raise ValueError("nginx.org/proxy-redirect-from may use '$' only in a regular expression (~ or ~*)")
    if src.startswith("~"):
        pattern = src[2:] if src.startswith("~*") else src[1:]
        if not pattern:
            raise ValueError("the regular expression of nginx.org/proxy-redirect-from is empty")
        try:
            re.compile(pattern)
        except re.error as e:
            raise ValueError(f"nginx.org/proxy-redirect-from is not a valid regular expression: {e}") \
                from None
    return src, dst


@dataclass(frozen=True)
class StickyCookie:
    """One service's `sticky cookie <name> [params]` (rendered only by an NGINX that has it)."""

    service: str
    name: str
    params: tuple[str, ...] = ()


def is_cookie_name(name: str) -> bool:
    return bool(_COOKIE_NAME.fullmatch(name)) and not name.startswith(("expires=", "path=", "domain="))


def is_sticky_param(param: str) -> bool:
    """One `sticky cookie` parameter: expires=, domain=, httponly, secure, path=, samesite=."""
    return bool(_STICKY_PARAM.fullmatch(param))


def parse_sticky_cookie_services(value: str) -> tuple[StickyCookie, ...]:
    """`serviceName=<svc> <cookie> [expires=<t>] [domain=<d>] [httponly] [secure] [path=<p>]
    [samesite=<s>]; ...`."""
    result: dict[str, StickyCookie] = {}
    for item in value.split(";"):
        item = item.strip()
        if not item:
            continue
        m = _STICKY_ITEM.fullmatch(item)
        if m is None:
            raise ValueError(f"{item!r} is not a valid sticky cookie format, e.g. "
                             "'serviceName=tea-svc srv_id expires=1h path=/tea'")
        service, cookie, rest = m.group(1), m.group(3), m.group(4).split()
        if not is_cookie_name(cookie):
            raise ValueError(f"invalid cookie name {cookie!r}")
        for p in rest:
            if not is_sticky_param(p):
                raise ValueError(f"invalid sticky cookie parameter {p!r}")
        if service in result:
            raise ValueError(f"duplicate service {service!r}")
        result[service] = StickyCookie(service, cookie, tuple(rest))
    if not result:
        raise ValueError("must name at least one service")
    return tuple(result.values())
