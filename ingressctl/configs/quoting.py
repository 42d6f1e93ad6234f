"""NGINX-safe quoting for values that reach a config file.

Guarantee: whatever string goes in, each function either raises `NginxValueError` or returns text that
NGINX's configuration tokenizer reads as exactly ONE argument whose value is the input (for `quote_escaped`,
the input with NGINX's escapes applied). A host, path or annotation value can therefore never end a
directive, open or close a block, start a comment or add a directive.

- `quote(v)`: always a double-quoted string; `\\` and `"` escaped; control characters and `$` rejected.
- `quote_vars(v)`: the same, but `$` is allowed, for values meant to use NGINX variables (log formats).
- `quote_regex(v)`: the same as `quote_vars`, for regular expressions of `location ~` (NGINX reads no
  variables there, so `$` is the end-of-line anchor).
- `quote_escaped(v)`: for a value written in NGINX's own quoted-string escapes (NIC's VirtualServer return
  bodies, which NIC puts between double quotes as they are): one double-quoted argument that NGINX reads as
  NIC's rendering reads, `\\"` `\\'` `\\\\` as the character, `\\n` `\\t` `\\r` as LF, TAB and CR, any other
  `\\x` as both characters; `$` allowed. A raw LF, TAB or CR is written as its escape (same value, one line).
  An unescaped `"`, a `\\` at the end or before a control character, and any other control character are
  rejected, so nothing in `v` can end the string early.
- `arg(v)`: a bare word when `v` is made of harmless characters only, else `quote(v)`.
- `token(v)`: a bare word or an error; for names, sizes, times and ports that must never need quoting.
"""

from __future__ import annotations

import re

# Characters that are plain text in an unquoted NGINX word in every context we emit one in.
_BARE = re.compile(r"[A-Za-z0-9._~!*+,:@&=%/\-\[\]]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Strings that `quote` (and, with `$`, `quote_vars`) writes between double quotes as they are: nothing to
# escape, nothing to reject.
_PLAIN = re.compile(r"[^\x00-\x1f\x7f$\"\\]*")
_PLAIN_VARS = re.compile(r"[^\x00-\x1f\x7f\"\\]*")
_bare = _BARE.fullmatch
_plain = _PLAIN.fullmatch
_plain_vars = _PLAIN_VARS.fullmatch


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


# Each filter first tries one regular expression that accepts the common case (a string with nothing to
# escape or reject) and returns at once; everything else takes the full path. No cache: a config's values
# are mostly unique to it (upstream names, hosts, addresses), so a cache of them misses and churns, which
# costs more than the check.


def quote(value: object) -> str:
    """`value` as one double-quoted NGINX argument; no variables, no control characters."""
    if type(value) is str and _plain(value):
        return '"' + value + '"'
    return _double_quote(_check(value, allow_variables=False))


def quote_vars(value: object) -> str:
    """`value` as one double-quoted NGINX argument in which `$name` variables keep their meaning."""
    if type(value) is str and _plain_vars(value):
        return '"' + value + '"'
    return _double_quote(_check(value, allow_variables=True))


def quote_regex(value: object) -> str:
    """A regular expression as one double-quoted NGINX argument (`$` allowed, no control characters)."""
    if type(value) is str and _plain_vars(value):
        return '"' + value + '"'
    return _double_quote(_check(value, allow_variables=True))


_ESCAPED_TEXT = re.compile(r'(?:[^"\\\x00-\x1f\x7f]|[\n\t\r]|\\[^\x00-\x1f\x7f])*')
_RAW_WHITESPACE = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def quote_escaped(value: object) -> str:
    """`value`, already in NGINX's quoted-string escapes, as one double-quoted argument (module docstring)."""
    if not isinstance(value, str):
        raise NginxValueError(f"expected a string, got {type(value).__name__}")
    if not _ESCAPED_TEXT.fullmatch(value):
        raise NginxValueError(f"invalid value {value!r}: every '\"' must be escaped as '\\\"', a '\\' must "
                              "be followed by a character that is not a control character, and no control "
                              "character but a newline, tab or carriage return is allowed")
    return '"' + re.sub(r"[\n\t\r]", lambda m: _RAW_WHITESPACE[m.group()], value) + '"'


def arg(value: object) -> str:
    """`value` as one NGINX argument: bare when harmless (readable output), quoted otherwise."""
    if type(value) is str and _bare(value):  # no control character, no '$': nothing to check
        return value
    text = _check(value, allow_variables=False)
    if _bare(text):
        return text
    return _double_quote(text)


def token(value: object) -> str:
    """`value` unchanged if it is a harmless bare word, else `NginxValueError`."""
    if type(value) is str and _bare(value):  # no control character, no '$': nothing to check
        return value
    text = _check(value, allow_variables=False)
    if not _bare(text):
        raise NginxValueError(f"invalid value {text!r}: only letters, digits and ._~!*+,:@&=%/-[] "
                              "are allowed")
    return text


FILTERS = {"quote": quote, "quote_vars": quote_vars, "quote_regex": quote_regex,
           "quote_escaped": quote_escaped, "arg": arg, "token": token}
