"""NGINX-safe quoting for values that reach a config file.

Guarantee: whatever string goes in, each function either raises `NginxValueError` or returns text that
NGINX's configuration tokenizer reads as exactly ONE argument whose value is the input. A host, path or
annotation value can therefore never end a directive, open or close a block, start a comment or add a
directive.

- `quote(v)`: always a double-quoted string; `\\` and `"` escaped; control characters and `$` rejected.
- `quote_vars(v)`: the same, but `$` is allowed, for values meant to use NGINX variables (log formats).
- `quote_regex(v)`: the same as `quote_vars`, for regular expressions of `location ~` (NGINX reads no
  variables there, so `$` is the end-of-line anchor).
- `arg(v)`: a bare word when `v` is made of harmless characters only, else `quote(v)`.
- `token(v)`: a bare word or an error; for names, sizes, times and ports that must never need quoting.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Characters that are plain text in an unquoted NGINX word in every context we emit one in.
_BARE = re.compile(r"[A-Za-z0-9._~!*+,:@&=%/\-\[\]]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class NginxValueError(ValueError):
    """A value cannot be written into NGINX configuration safely."""


def _check(value: object, *, allow_variables: bool) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise NginxValueError(f"expected a string, got {type(value).__name__}")
    text = str(value)
    bad = _CONTROL.search(text)
    if bad:
        raise NginxValueError(f"invalid value {text!r}: control character {bad.group()!r} is not allowed")
    if not allow_variables and "$" in text:
        raise NginxValueError(f"invalid value {text!r}: '$' is not allowed")
    return text


def _double_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@lru_cache(maxsize=65536, typed=True)
def quote(value: object) -> str:
    """`value` as one double-quoted NGINX argument; no variables, no control characters."""
    return _double_quote(_check(value, allow_variables=False))


@lru_cache(maxsize=65536, typed=True)
def quote_vars(value: object) -> str:
    """`value` as one double-quoted NGINX argument in which `$name` variables keep their meaning."""
    return _double_quote(_check(value, allow_variables=True))


@lru_cache(maxsize=65536, typed=True)
def quote_regex(value: object) -> str:
    """A regular expression as one double-quoted NGINX argument (`$` allowed, no control characters)."""
    return _double_quote(_check(value, allow_variables=True))


@lru_cache(maxsize=65536, typed=True)
def arg(value: object) -> str:
    """`value` as one NGINX argument: bare when harmless (readable output), quoted otherwise."""
    if type(value) is str and _BARE.fullmatch(value):  # no control character, no '$': nothing to check
        return value
    text = _check(value, allow_variables=False)
    if _BARE.fullmatch(text):
        return text
    return _double_quote(text)


@lru_cache(maxsize=65536, typed=True)
def token(value: object) -> str:
    """`value` unchanged if it is a harmless bare word, else `NginxValueError`."""
    if type(value) is str and _BARE.fullmatch(value):  # no control character, no '$': nothing to check
        return value
    text = _check(value, allow_variables=False)
    if not _BARE.fullmatch(text):
        raise NginxValueError(f"invalid value {text!r}: only letters, digits and ._~!*+,:@&=%/-[] "
                              "are allowed")
    return text


# The filters are pure, and a config repeats the same values (timeouts, sizes, upstream names) many times:
# results are cached; rejected values are not (they raise every time).
FILTERS = {"quote": quote, "quote_vars": quote_vars, "quote_regex": quote_regex, "arg": arg, "token": token}
