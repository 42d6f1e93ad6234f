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

from ingressctl.nginx.module_api import ModuleApiClient
from ingressctl.nginx.modules import DYNAMIC_PEERS, installed_module

MODULE_FILE = DYNAMIC_PEERS
# The API socket lives in a directory only the controller's user can enter (0700): NGINX's workers serve it
# on the listening socket they inherit, and no other local user can reconfigure upstreams.
SOCKET_DIR = "private"
SOCKET_NAME = "nginx-dynamic-peers.sock"
API_PATH = "/dynamic-peers"
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


class DynamicPeersClient(ModuleApiClient):
    """Talks to the module's API over a unix socket (one keep-alive session)."""

    api_path = API_PATH
    what = "dynamic update"
    error = DynamicUpdateError

    def push(self, servers: Mapping[str, Sequence[str]]) -> None:
        """Make each upstream serve exactly its addresses; raises DynamicUpdateError."""
        if servers:
            self.request("POST", format_body(servers))

    def served(self) -> dict[str, tuple[int, tuple[str, ...]]]:
        """Every dynamic upstream NGINX serves: its slot count and the addresses it sends traffic to."""
        out: dict[str, tuple[int, tuple[str, ...]]] = {}
        for line in self.request("GET").splitlines():
            name, slots, *addresses = line.split()
            out[name] = (int(slots), tuple(addresses))
        return out
