"""stub_status parsing is strict: the exact NGINX format parses, anything else is a ValueError."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingressctl.nginx.stub_status import StubStatus, parse_stub_status, unix_socket_url

# What ngx_http_stub_status_module prints, byte for byte (note the trailing spaces).
REAL = (
    "Active connections: 291 \n"
    "server accepts handled requests\n"
    " 16630948 16630947 31070465 \n"
    "Reading: 6 Writing: 179 Waiting: 106 \n"
)


def test_parses_real_output() -> None:
    assert parse_stub_status(REAL) == StubStatus(
        connections_active=291, connections_accepted=16630948, connections_handled=16630947,
        http_requests_total=31070465, connections_reading=6, connections_writing=179, connections_waiting=106,
    )


def test_accepts_missing_final_newline_and_trailing_spaces() -> None:
    assert parse_stub_status(REAL.rstrip("\n")).connections_active == 291
    no_trailing = "\n".join(line.rstrip(" ") for line in REAL.split("\n"))
    assert parse_stub_status(no_trailing).connections_waiting == 106


@pytest.mark.parametrize("text", [
    "",
    "\n",
    REAL + "\n",                                                   # an extra (empty) line
    REAL + "extra\n",
    REAL.replace("Active connections", "Active connection"),
    REAL.replace("server accepts handled requests", "server accepts handled"),
    REAL.replace(" 16630948 16630947 31070465 ", " 16630948 16630947"),
    REAL.replace(" 16630948 ", " -1 "),
    REAL.replace(" 16630948 ", " 1_000 "),
    REAL.replace(" 16630948 ", " \u0661 "),                     # a non-ASCII digit
    REAL.replace("Reading: 6", "Reading: x"),
    REAL.replace("Waiting: 106", "Waiting: 106 Other: 1"),
    REAL.replace("\n", "\r\n"),
    REAL.replace("291", "99999999999999999999"),                # absurdly long number
    "<html><body>502 Bad Gateway</body></html>",
])
def test_rejects_malformed(text: str) -> None:
    with pytest.raises(ValueError, match="stub_status"):
        parse_stub_status(text)


def test_rejects_non_text() -> None:
    with pytest.raises(ValueError):
        parse_stub_status(b"Active connections: 1")  # type: ignore[arg-type]


counts = st.integers(min_value=0, max_value=2**63 - 1)


@given(counts, counts, counts, counts, counts, counts, counts)
def test_format_round_trips(a: int, b: int, c: int, d: int, e: int, f: int, g: int) -> None:
    s = StubStatus(a, b, c, d, e, f, g)
    assert parse_stub_status(s.format()) == s


@given(st.text())
def test_arbitrary_text_never_raises_anything_but_value_error(text: str) -> None:
    with contextlib.suppress(ValueError):
        parse_stub_status(text)


@given(st.integers(min_value=0, max_value=len(REAL) - 1), st.characters())
def test_single_character_mutations_parse_or_raise_value_error(pos: int, ch: str) -> None:
    mutated = REAL[:pos] + ch + REAL[pos + 1:]
    try:
        result = parse_stub_status(mutated)
    except ValueError:
        return
    # A mutation that still parses is no change, or a digit or space change that keeps the shape.
    assert isinstance(result, StubStatus)
    assert ch == REAL[pos] or (ch.isascii() and (ch.isdigit() or ch == " "))


def test_unix_socket_url_percent_encodes_the_path() -> None:
    assert unix_socket_url("/var/lib/nginx/nginx-status.sock", "/stub_status") == (
        "http+unix://%2Fvar%2Flib%2Fnginx%2Fnginx-status.sock/stub_status")
