"""The value syntaxes of ingress-nginx's client-certificate annotations (`annotations/authtls`), as its
validators and its parser accept them.

Guarantees:
- Each parser applies ingress-nginx's validator (spaces removed, then its regex) and raises `ValueError`
  for what it refuses; narrowed where NGINX would refuse the value (a negative depth), where the value would
  name nothing (`auth-tls-secret` must be `namespace/name` with a Secret name, as `k8s.ParseNameNS`), and
  for `auth-tls-match-cn` to what Python's `re` compiles without control characters.
- Everything returned is safe for the template's quoting filters (`arg`, `quote_regex`).
"""

from __future__ import annotations

import re

from ingressctl.kinds.ingress.ingress_nginx import values as v

VERIFY_CLIENT = ("on", "off", "optional", "optional_no_ca")
_BASIC_CHARS = re.compile(r"[/\-._~a-zA-Z0-9:]*")                           # parser.BasicCharsRegex
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL = re.compile(r"([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?")
# redirectRegex, with possessive quantifiers (linear in Python's engine as in RE2).
_ERROR_PAGE = re.compile(r"@[A-Za-z0-9_-]++|((https?://)?[A-Za-z0-9\-.]++(:\d++)?)?(/[A-Za-z0-9\-_.]++)*+/?")


def secret(value: str) -> tuple[str, str]:
    """`auth-tls-secret`: (namespace, name); an empty namespace (`/name`) is the Ingress's."""
    text = value.replace(" ", "")
    if not _BASIC_CHARS.fullmatch(text):
        raise ValueError("must be namespace/name of a Secret")
    ns, sep, name = text.partition("/")
    if not sep or "/" in name:
        raise ValueError("invalid format (namespace/name)")
    if len(name) > 253 or not _SUBDOMAIN.fullmatch(name) or len(ns) > 63 or not _LABEL.fullmatch(ns):
        raise ValueError("must be namespace/name of a Secret (DNS names)")
    return ns, name


def verify_client(value: str) -> str:
    text = value.replace(" ", "")
    if text not in VERIFY_CLIENT:
        raise ValueError(f"must be one of {', '.join(VERIFY_CLIENT)}")
    return text


def verify_depth(value: str) -> int:
    """`auth-tls-verify-depth`: an integer; 0 is ingress-nginx's default, 1 (the caller's)."""
    return v.integer(value, 0, 2**31 - 1)


def error_page(value: str) -> str:
    """`auth-tls-error-page`: a URL, a path or a named location (`@name`)."""
    text = value.replace(" ", "")
    if not _ERROR_PAGE.fullmatch(text):
        raise ValueError("must be a URL (http(s)://host[:port]/path), a path or @name")
    return text


def match_cn(value: str) -> str:
    """`auth-tls-match-cn`: `CN=` and a regular expression, matched against the client's subject DN."""
    if not value.startswith("CN="):
        raise ValueError("is not a valid Common Name annotation: missing prefix 'CN='")
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in value):
        raise ValueError("must not contain control characters")
    try:
        re.compile(value)
    except re.error as e:
        raise ValueError(f"is not a valid regex: {e}") from None
    return value
