"""The value syntaxes of ingress-nginx's CORS annotations (`annotations/cors`), as its validators and its
parser accept them.

Guarantees:
- Each parser first applies ingress-nginx's validator (spaces removed, then its regex; `\\r` and `\\n`
  refused), so a value it refuses raises `ValueError` here too; then its parser's own rule: an origin that is
  not `<scheme>://[*.]host[:port]`, `*` or `null` is skipped (`Origins.skipped`), a method or header list
  its parser does not take falls back to ingress-nginx's default (None).
- The regular expressions are ingress-nginx's (RE2, linear) rewritten with atomic groups and possessive
  quantifiers (each item matched greedily, never split again), so that Python's backtracking engine is linear
  on them too.
- Everything returned is made of letters, digits, `-`, `_`, `.`, `:`, `/`, `*`, `,` and spaces only: safe
  for the template's quoting filters and for response headers.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ingressctl.kinds.ingress.ingress_nginx import values as v

DEFAULT_METHODS = "GET, PUT, POST, DELETE, PATCH, OPTIONS"
DEFAULT_HEADERS = ("DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,"
                   "Range,Authorization")
DEFAULT_MAX_AGE = 1728000
WILDCARD = "*"

# corsOriginRegexValidator (the whole value, spaces removed) and corsOriginRegex (each origin).
_ORIGINS = re.compile(r"(((?>(([a-z]++://)?(\*\.)?[A-Za-z0-9\-.]*+(:\d++)?,?)|null)+)|\*)?")
_ORIGIN = re.compile(r"([a-z]+://(\*\.)?[A-Za-z0-9\-.]*(:\d+)?|\*|null)?")
_METHODS = re.compile(r"(?>[A-Za-z]++,?[\t\n\f\r ]?)+")            # corsMethodsRegex
_HEADERS = re.compile(r"[A-Za-z0-9\-_, ]*")                      # parser.HeadersVariable
_EXPOSE = re.compile(r"(?>([A-Za-z0-9\-_]++|\*),?[\t\n\f\r ]?)+")  # corsExposeHeadersRegex


class Origins(NamedTuple):
    allowed: tuple[str, ...]    # ("*",) or the origins, in order
    skipped: tuple[str, ...]    # what ingress-nginx's parser skips (with an error log there)


def _validated(value: str, regex: re.Pattern[str], what: str) -> None:
    if "\r" in value or "\n" in value:
        raise ValueError("must not contain line breaks")
    if not regex.fullmatch(value.replace(" ", "")):
        raise ValueError(f"must be {what}")


def origins(value: str) -> Origins:
    """`cors-allow-origin`: `*`, or comma-separated origins (`https://a.com`, `https://*.a.com:8443`,
    `null`); `*` anywhere makes it `*` alone (ingress-nginx stops there)."""
    _validated(value, _ORIGINS, "'*' or a comma-separated list of origins such as https://example.com, "
                                "https://*.example.com:8443 or null")
    allowed: list[str] = []
    skipped: list[str] = []
    for item in value.split(","):
        origin = item.strip()
        if not origin:
            continue
        if origin == WILDCARD:
            return Origins((WILDCARD,), tuple(skipped))
        if _ORIGIN.fullmatch(origin):
            allowed.append(origin)
        else:
            skipped.append(origin)
    return Origins(tuple(allowed), tuple(skipped))


def methods(value: str) -> str | None:
    """`cors-allow-methods`: letters separated by `,` and single spaces; None: ingress-nginx's default."""
    _validated(value, _METHODS, "a comma-separated list of methods (letters only)")
    return value if _METHODS.fullmatch(value) and "\t" not in value and "\f" not in value else None


def headers(value: str) -> str:
    """`cors-allow-headers`: letters, digits, `-`, `_`, `,` and spaces."""
    _validated(value, _HEADERS, "a comma-separated list of header names (letters, digits, '-' and '_')")
    return value


def expose_headers(value: str) -> str | None:
    """`cors-expose-headers`: header names or `*`; None: ingress-nginx's parser drops the value."""
    _validated(value, _EXPOSE, "a comma-separated list of header names (letters, digits, '-', '_') or '*'")
    return value if _EXPOSE.fullmatch(value) and "\t" not in value and "\f" not in value else None


def max_age(value: str) -> int:
    """`cors-max-age`: an integer (Go's `strconv.Atoi`) of seconds."""
    return v.integer(value, -(10**18), 10**18)
