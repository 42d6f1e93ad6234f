"""The value syntaxes of ingress-nginx's `proxy-ssl-*` annotations (`annotations/proxyssl`), as its validators
and its parser accept them.

Guarantees:
- Each parser applies ingress-nginx's validator and raises `ValueError` with a message for what it refuses,
  narrowed where ingress-nginx would render something NGINX refuses or that names nothing:
  `proxy-ssl-secret` must be `namespace/name` with both parts (ingress-nginx's `ParseNameNS`; unlike
  `auth-tls-secret` there is no `/name` shorthand: ingress-nginx denies an empty namespace as another one);
  `proxy-ssl-protocols` holds only `TLSv1.2` and `TLSv1.3` words (sorted, without repeats; ingress-nginx's
  regex would pass `TLSv1.2TLSv1.3`); `proxy-ssl-ciphers` must also select at least one cipher of the
  OpenSSL NGINX links (blanks between its items become `:`, the same list to OpenSSL, one NGINX word);
  `proxy-ssl-verify-depth` is not negative; `proxy-ssl-name` is a host name (ingress-nginx's
  `ValidateServerName` admits regex characters and NGINX variables too).
- Everything returned is one NGINX word of letters, digits and `.-_:+!/`: no input reaches NGINX as syntax.
"""

from __future__ import annotations

import re

from ingressctl.configs import parsing
from ingressctl.kinds.ingress.ingress_nginx import authtls_values as atv

ON_OFF = ("on", "off")
PROTOCOLS = ("TLSv1.2", "TLSv1.3")
DEFAULT_PROTOCOLS = "TLSv1.2"
DEFAULT_CIPHERS = "DEFAULT"
DEFAULT_VERIFY_DEPTH = 1
_CIPHERS = re.compile(r"[A-Za-z0-9+:_\-!]+")                      # proxySSLCiphersRegex, not empty
_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def secret(value: str) -> tuple[str, str]:
    """`proxy-ssl-secret`: (namespace, name), both required."""
    ns, name = atv.secret(value)
    if not ns:
        raise ValueError("must be namespace/name of a Secret (the namespace is required: ingress-nginx "
                         "treats an empty one as another namespace)")
    return ns, name


def on_off(value: str) -> str:
    """`proxy-ssl-verify`, `proxy-ssl-server-name`: `on` or `off` (surrounding blanks trimmed)."""
    text = value.strip()
    if text not in ON_OFF:
        raise ValueError("must be on or off")
    return text


def verify_depth(value: str) -> int:
    """`proxy-ssl-verify-depth`: an integer; 0 is ingress-nginx's default, 1 (the caller's)."""
    return atv.verify_depth(value)


def protocols(value: str) -> str:
    """`proxy-ssl-protocols`: blank-separated `TLSv1.2` / `TLSv1.3`, sorted as ingress-nginx sorts them."""
    words = value.split()
    bad = [w for w in words if w not in PROTOCOLS]
    if not words or bad:
        raise ValueError(f"must be a blank-separated list of {', '.join(PROTOCOLS)}"
                         + (f" (not {bad[0]!r})" if bad else ""))
    return " ".join(sorted(set(words)))


def ciphers(value: str) -> str:
    """`proxy-ssl-ciphers`: an OpenSSL cipher list of ingress-nginx's characters (`A-Za-z0-9+:_-!`)."""
    text = ":".join(value.split())
    if not _CIPHERS.fullmatch(text):
        raise ValueError("must be an OpenSSL cipher list of letters, digits and +:_-!")
    return parsing.parse_ssl_ciphers(text)


def ssl_name(value: str) -> str:
    """`proxy-ssl-name`: a host name (labels of letters, digits and inner `-`, at most 253 characters)."""
    text = value.strip().rstrip(".")
    if not text or len(text) > 253 or not all(_LABEL.fullmatch(label) for label in text.split(".")):
        raise ValueError("must be a host name (letters, digits, '-' and '.'; no variables or patterns)")
    return text
