"""NGINX stub_status: a strict parser and a fetch over the unix socket the main config serves it on.

Guarantees:
- `parse_stub_status` accepts exactly the four lines `ngx_http_stub_status_module` prints (trailing
  spaces and one final newline allowed) and raises ValueError, naming the offending line, on anything else.
  It never raises another exception type, whatever the input.
- `fetch_stub_status` always uses a timeout and raises `StubStatusError` (with the cause) when NGINX cannot be
  reached, answers with a non-200 status, or sends text the parser rejects.

The main config must serve stub_status on `<run_dir>/nginx-status.sock` (see `STATUS_SOCKET_NAME`), e.g.:

    server {
        listen unix:<run_dir>/nginx-status.sock;
        access_log off;
        location /stub_status { stub_status; }
    }
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

import requests
import requests_unixsocket

STATUS_SOCKET_NAME = "nginx-status.sock"
STUB_STATUS_PATH = "/stub_status"

_ACTIVE = re.compile(r"Active connections: ([0-9]{1,19}) *", re.ASCII)
_HEADER = "server accepts handled requests"
_COUNTERS = re.compile(r" ([0-9]{1,19}) ([0-9]{1,19}) ([0-9]{1,19}) *", re.ASCII)
_STATES = re.compile(r"Reading: ([0-9]{1,19}) Writing: ([0-9]{1,19}) Waiting: ([0-9]{1,19}) *", re.ASCII)


@dataclass(frozen=True)
class StubStatus:
    """One stub_status sample; names follow nginx-prometheus-exporter's metrics."""

    connections_active: int
    connections_accepted: int
    connections_handled: int
    http_requests_total: int
    connections_reading: int
    connections_writing: int
    connections_waiting: int

    def format(self) -> str:
        """The text NGINX would print for this sample (used by tests and fakes)."""
        return (
            f"Active connections: {self.connections_active} \n"
            f"{_HEADER}\n"
            f" {self.connections_accepted} {self.connections_handled} {self.http_requests_total} \n"
            f"Reading: {self.connections_reading} Writing: {self.connections_writing} "
            f"Waiting: {self.connections_waiting} \n"
        )


class StubStatusError(Exception):
    """stub_status could not be fetched or parsed."""


def _match(pattern: re.Pattern[str], line: str, what: str, lineno: int) -> tuple[int, ...]:
    m = pattern.fullmatch(line)
    if m is None:
        raise ValueError(f"stub_status line {lineno}: expected {what}, got {line!r}")
    return tuple(int(g) for g in m.groups())


def parse_stub_status(text: str) -> StubStatus:
    """Parse stub_status output strictly; raise ValueError on anything that is not exactly that format."""
    if not isinstance(text, str):
        raise ValueError(f"stub_status: expected text, got {type(text).__name__}")
    body = text[:-1] if text.endswith("\n") else text
    lines = body.split("\n")
    if len(lines) != 4:
        raise ValueError(f"stub_status: expected 4 lines, got {len(lines)}: {text[:200]!r}")
    (active,) = _match(_ACTIVE, lines[0], "'Active connections: N'", 1)
    if lines[1].rstrip(" ") != _HEADER:
        raise ValueError(f"stub_status line 2: expected {_HEADER!r}, got {lines[1]!r}")
    accepted, handled, requests_total = _match(_COUNTERS, lines[2], "' accepts handled requests'", 3)
    reading, writing, waiting = _match(_STATES, lines[3], "'Reading: x Writing: y Waiting: z'", 4)
    return StubStatus(
        connections_active=active,
        connections_accepted=accepted,
        connections_handled=handled,
        http_requests_total=requests_total,
        connections_reading=reading,
        connections_writing=writing,
        connections_waiting=waiting,
    )


def unix_socket_url(socket_path: str, path: str) -> str:
    """`http+unix://` URL for requests-unixsocket: the percent-encoded socket path is the host."""
    return "http+unix://" + quote(socket_path, safe="") + path


def fetch_stub_status(socket_path: str, timeout: float = 1.0, *,
                      session: requests.Session | None = None) -> StubStatus:
    """GET /stub_status over the unix socket and parse it. Raises StubStatusError."""
    own = session is None
    sess: requests.Session = requests_unixsocket.Session() if session is None else session
    try:
        resp = sess.get(unix_socket_url(socket_path, STUB_STATUS_PATH), timeout=timeout,
                        headers={"Connection": "close"})
        if resp.status_code != 200:
            raise StubStatusError(f"stub_status at {socket_path}: HTTP {resp.status_code}")
        return parse_stub_status(resp.text)
    except requests.RequestException as e:
        raise StubStatusError(f"stub_status at {socket_path}: {e}") from e
    except ValueError as e:
        raise StubStatusError(str(e)) from e
    finally:
        if own:
            sess.close()
