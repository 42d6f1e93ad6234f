"""The quoting filters: any string either is rejected or becomes exactly one NGINX argument.

`nginx_tokens` models NGINX's configuration tokenizer (ngx_conf_read_token): whitespace separates words, `;`
`{` `}` end statements or open/close blocks, `#` starts a comment, quotes group, a backslash escapes.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingressctl.configs.quoting import (
    NginxValueError,
    _check,
    _double_quote,
    arg,
    quote,
    quote_regex,
    quote_vars,
    token,
)

_WS = " \t\r\n"


class TokenizeError(Exception):
    pass


def _unescape(raw: str) -> str:
    out = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            if nxt in "\"'\\":
                out.append(nxt)
                i += 2
                continue
            if nxt in "trn":
                out.append({"t": "\t", "r": "\r", "n": "\n"}[nxt])
                i += 2
                continue
        out.append(c)
        i += 1
    return "".join(out)


def nginx_tokens(text: str) -> list[tuple[str, str]]:
    """[('word', value) | ('sym', ';' | '{' | '}')] as NGINX's tokenizer reads `text`."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _WS:
            i += 1
            continue
        if ch == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if ch in ";{}":
            out.append(("sym", ch))
            i += 1
            continue
        if ch in "\"'":
            quote_char, i, buf = ch, i + 1, []
            while True:
                if i >= n:
                    raise TokenizeError("unterminated quoted string")
                c = text[i]
                if c == "\\" and i + 1 < n:
                    buf.append(text[i:i + 2])
                    i += 2
                    continue
                i += 1
                if c == quote_char:
                    break
                buf.append(c)
            if i < n and text[i] not in _WS + ";{)":
                raise TokenizeError(f"unexpected {text[i]!r} after a quoted string")
            out.append(("word", _unescape("".join(buf))))
            continue
        buf, variable = [], False
        while i < n:
            c = text[i]
            if c == "{" and variable:
                buf.append(c)
                i += 1
                continue
            variable = c == "$"
            if c == "\\" and i + 1 < n:
                buf.append(text[i:i + 2])
                i += 2
                continue
            if c in _WS + ";{":
                break
            buf.append(c)
            i += 1
        out.append(("word", _unescape("".join(buf))))
    return out


def test_tokenizer_model_sanity() -> None:
    assert nginx_tokens('a "b c" d;') == [("word", "a"), ("word", "b c"), ("word", "d"), ("sym", ";")]
    assert nginx_tokens("location /x { return 1; }") == [
        ("word", "location"), ("word", "/x"), ("sym", "{"), ("word", "return"), ("word", "1"), ("sym", ";"),
        ("sym", "}")]
    assert nginx_tokens('x "a\\"b";') == [("word", "x"), ("word", 'a"b'), ("sym", ";")]
    assert nginx_tokens("x a;b;") == [("word", "x"), ("word", "a"), ("sym", ";"), ("word", "b"), ("sym", ";")]


@pytest.mark.parametrize("value,expected", [
    ("/reports-runner", "/reports-runner"),
    ("cafe.example.com", "cafe.example.com"),
    ("*.example.com", "*.example.com"),
    ("/a b", '"/a b"'),
    ('/a"b', '"/a\\"b"'),
    ("/a\\b", '"/a\\\\b"'),
    ("/x;return 200", '"/x;return 200"'),
    ("/x}", '"/x}"'),
    ("#x", '"#x"'),
    ("", '""'),
])
def test_arg(value: str, expected: str) -> None:
    assert arg(value) == expected


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\x00b", "x\x7f", "$host", "/x$1"])
def test_arg_and_quote_reject_newlines_control_characters_and_variables(value: str) -> None:
    for f in (arg, quote, token):
        with pytest.raises(NginxValueError):
            f(value)


def test_quote_vars_keeps_variables_but_rejects_newlines() -> None:
    assert quote_vars('$remote_addr "$request"') == '"$remote_addr \\"$request\\""'
    with pytest.raises(NginxValueError):
        quote_vars("$a\n}")


@pytest.mark.parametrize("value", ["60s;", "1m }", "a b", "x{", '"', "'", "a\\", "+1;", ""])
def test_token_rejects_anything_that_is_not_one_plain_word(value: str) -> None:
    with pytest.raises(NginxValueError):
        token(value)


def test_non_strings_are_rejected() -> None:
    with pytest.raises(NginxValueError):
        quote(None)
    with pytest.raises(NginxValueError):
        arg(True)
    assert arg(80) == "80"


def _round_trip(f, value: str) -> None:  # type: ignore[no-untyped-def]
    try:
        out = f(value)
    except NginxValueError:
        return
    tokens = nginx_tokens(f"directive {out};")
    assert tokens == [("word", "directive"), ("word", value), ("sym", ";")], (value, out)


@settings(max_examples=600)
@given(st.text())
def test_any_string_is_one_argument_or_rejected(value: str) -> None:
    for f in (arg, quote, quote_vars, token):
        _round_trip(f, value)


@settings(max_examples=600)
@given(st.text(alphabet=st.sampled_from(list(' \t\n;{}"\'\\#$/ab=~*^'))))
def test_nginx_syntax_characters_never_escape_the_argument(value: str) -> None:
    for f in (arg, quote, quote_vars, quote_regex, token):
        _round_trip(f, value)


def _full(value: str, allow_variables: bool) -> str | None:
    try:
        return _double_quote(_check(value, allow_variables=allow_variables))
    except NginxValueError:
        return None


@settings(max_examples=600)
@given(st.text(alphabet=st.sampled_from(list(' \t\n\x7f;"\'\\$/ab\u00e9'))) | st.text())
def test_the_quick_path_of_quoting_gives_what_the_full_check_gives(value: str) -> None:
    """Each filter returns the common case at once (see quoting): the same text the full check and escape
    give, and what they reject it rejects."""
    for f, allow_variables in ((quote, False), (quote_vars, True), (quote_regex, True)):
        try:
            out: str | None = f(value)
        except NginxValueError:
            out = None
        assert out == _full(value, allow_variables), (f.__name__, value)
