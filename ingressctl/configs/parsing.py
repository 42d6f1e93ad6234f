"""Strict parsers for ConfigMap keys and annotations (NIC's `parsing_helpers.go`).

Each parser returns a normalised value or raises `ValueError` with a message fit for an event. A value that
a parser accepts is safe to write into NGINX configuration: none of them accepts whitespace other than single
spaces between known words, quotes, `;`, `{`, `}`, `$` (except in a `hash $variable` key) or control
characters.
"""

from __future__ import annotations

import re

_TIME = re.compile(r"(?:[0-9]{1,9}(?:ms|s|m|h|d|w|M|y)?){1,6}")
_SIZE = re.compile(r"[0-9]{1,12}[kKmMgG]?")
_INT = re.compile(r"-?[0-9]{1,18}")
_STATUS = re.compile(r"[1-5][0-9]{2}")
_HASH_KEY = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*(?:\$[A-Za-z_][A-Za-z0-9_]*)*")
LB_METHODS = frozenset({
    "round_robin", "least_conn", "ip_hash", "random", "random two", "random two least_conn",
})
LOG_LEVELS = ("debug", "info", "notice", "warn", "error", "crit", "alert", "emerg")
SSL_PROTOCOLS = frozenset({"SSLv2", "SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"})


def parse_bool(value: str) -> bool:
    """Go's strconv.ParseBool: 1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f"invalid boolean {value!r}: use true or false")


def parse_int(value: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    text = value.strip()
    if not _INT.fullmatch(text):
        raise ValueError(f"invalid integer {value!r}")
    number = int(text)
    if minimum is not None and number < minimum:
        raise ValueError(f"{number} is less than {minimum}")
    if maximum is not None and number > maximum:
        raise ValueError(f"{number} is greater than {maximum}")
    return number


def parse_time(value: str) -> str:
    """An NGINX time such as `60s`, `1m30s`, `500ms` or `10` (seconds)."""
    text = value.strip()
    if not _TIME.fullmatch(text):
        raise ValueError(f"invalid time {value!r}: use a number with an optional unit "
                         "(ms, s, m, h, d, w, M, y)")
    return text


def parse_size(value: str) -> str:
    """An NGINX size such as `1m`, `512k`, `0` (unlimited where NGINX allows it)."""
    text = value.strip()
    if not _SIZE.fullmatch(text):
        raise ValueError(f"invalid size {value!r}: use a number with an optional unit (k, m, g)")
    return text


def parse_status(value: str) -> str:
    text = value.strip()
    if not _STATUS.fullmatch(text):
        raise ValueError(f"invalid status code {value!r}: use a code between 100 and 599")
    return text


def parse_lb_method(value: str) -> str:
    """NIC's OSS load-balancing methods; `round_robin` becomes "" (NGINX's default)."""
    text = " ".join(value.split())
    if text in LB_METHODS:
        return "" if text == "round_robin" else text
    if text.startswith("hash "):
        parts = text.split(" ")
        consistent = len(parts) == 2 or parts[2] == "consistent"
        if len(parts) in (2, 3) and _HASH_KEY.fullmatch(parts[1]) and consistent:
            return text
    raise ValueError(f"invalid load balancing method {value!r}: use one of {', '.join(sorted(LB_METHODS))}, "
                     "or 'hash $variable [consistent]'")


def parse_server_tokens(value: str) -> str:
    return "on" if parse_bool(value) else "off"


def parse_worker_processes(value: str) -> str:
    text = value.strip()
    if text == "auto":
        return text
    return str(parse_int(text, minimum=1, maximum=4096))


def parse_log_level(value: str) -> str:
    text = value.strip()
    if text not in LOG_LEVELS:
        raise ValueError(f"invalid log level {value!r}: use one of {', '.join(LOG_LEVELS)}")
    return text


def parse_ssl_protocols(value: str) -> str:
    words = value.split()
    if not words or any(w not in SSL_PROTOCOLS for w in words):
        raise ValueError(f"invalid ssl protocols {value!r}: use {', '.join(sorted(SSL_PROTOCOLS))}")
    return " ".join(words)


def parse_lines(value: str) -> tuple[str, ...]:
    """Newline-separated lines with surrounding whitespace removed and empty lines dropped."""
    return tuple(line.strip() for line in value.splitlines() if line.strip())


def parse_comma_list(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())
