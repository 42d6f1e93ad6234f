"""The controller's side of the dynamic-peers NGINX module: find it, and push upstream servers to it.

Guarantees:
- `dynamic_peers_module(binary)` is the absolute path of the module for `load_module` when it is installed
  for this binary (nginx.modules.installed_module), else "".
- `DynamicPeersClient.push(servers)` POSTs one line per upstream ("<name> <ip:port> ...") to the module's API
  on the unix socket NGINX's main config serves it on, and returns only once NGINX applied every line. NGINX
  checks the whole body first and applies nothing when any line is wrong; any failure (no such socket, an
  answer other than 200, a timeout) raises DynamicUpdateError with NGINX's message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import requests
import requests_unixsocket

from ingressctl.nginx.modules import DYNAMIC_PEERS, installed_module
from ingressctl.nginx.stub_status import unix_socket_url

MODULE_FILE = DYNAMIC_PEERS
# The API socket lives in a directory only the controller's user can enter (0700): NGINX's workers serve it
# on the listening socket they inherit, and no other local user can reconfigure upstreams.
SOCKET_DIR = "private"
SOCKET_NAME = "nginx-dynamic-peers.sock"
API_PATH = "/dynamic-peers"
_TIMEOUT = 10.0
_SAFE = re.compile(r"[^\s]+")


class DynamicUpdateError(Exception):
    """NGINX did not apply a dynamic update (nothing of it was applied when NGINX answered)."""


def dynamic_peers_module(binary: str) -> str:
    """The module's path for `load_module`, or "" when it is not installed for this NGINX."""
    return installed_module(binary, MODULE_FILE)


def format_body(servers: Mapping[str, Sequence[str]]) -> str:
    """The API's body: one line per upstream, its name then its addresses."""
    lines = []
    for name, addresses in servers.items():
        for token in (name, *addresses):
            if not _SAFE.fullmatch(token):
                raise DynamicUpdateError(f"invalid upstream name or address {token!r}")
        lines.append(" ".join((name, *addresses)))
    return "\n".join(lines) + "\n"


class DynamicPeersClient:
    """Talks to the module's API over a unix socket (one keep-alive session)."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self._session: requests_unixsocket.Session | None = None

    def _url(self) -> str:
        return unix_socket_url(self.socket_path, API_PATH)

    def _request(self, method: str, body: str | None = None) -> str:
        if self._session is None:
            self._session = requests_unixsocket.Session()
        try:
            resp = self._session.request(method, self._url(), data=body.encode() if body else None,
                                         timeout=_TIMEOUT)
        except requests.RequestException as e:
            self.close()
            raise DynamicUpdateError(f"dynamic update failed: {e}") from None
        if resp.status_code != 200:
            raise DynamicUpdateError(f"dynamic update refused by NGINX: HTTP {resp.status_code}: "
                                     f"{resp.text.strip()[:500]}")
        return str(resp.text)

    def push(self, servers: Mapping[str, Sequence[str]]) -> None:
        """Make each upstream serve exactly its addresses; raises DynamicUpdateError."""
        if servers:
            self._request("POST", format_body(servers))

    def served(self) -> dict[str, tuple[int, tuple[str, ...]]]:
        """Every dynamic upstream NGINX serves: its slot count and the addresses it sends traffic to."""
        out: dict[str, tuple[int, tuple[str, ...]]] = {}
        for line in self._request("GET").splitlines():
            name, slots, *addresses = line.split()
            out[name] = (int(slots), tuple(addresses))
        return out

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
