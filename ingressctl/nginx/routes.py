"""The controller's side of the routes NGINX module: its API, which replaces hosts of the module's table.

Guarantees:
- `RoutesClient.push(body)` POSTs the API's lines (`host ...`, `route ...`, `delete ...`; configs.routes
  encodes their fields) to the module on the unix socket nginx.conf serves it on, and returns only once NGINX
  applied all of them. NGINX checks the whole body first and applies nothing when any line is wrong; any
  failure (no socket, an answer other than 200, a timeout) raises RoutesUpdateError with NGINX's message.
- `RoutesClient.listed()` is the table NGINX serves, in the same line format (tests, troubleshooting).
"""

from __future__ import annotations

import requests
import requests_unixsocket

from ingressctl.nginx.dynamic_peers import SOCKET_DIR, DynamicUpdateError
from ingressctl.nginx.stub_status import unix_socket_url

SOCKET_NAME = "nginx-routes.sock"
"""In the dynamic-peers module's private directory (0700): only the controller may change routes."""
API_PATH = "/routes"
_TIMEOUT = 10.0

__all__ = ["API_PATH", "SOCKET_DIR", "SOCKET_NAME", "RoutesClient", "RoutesUpdateError"]


class RoutesUpdateError(DynamicUpdateError):
    """NGINX did not apply a routes update (nothing of it when NGINX answered)."""


class RoutesClient:
    """Talks to the routes module's API over a unix socket (one keep-alive session)."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self._session: requests_unixsocket.Session | None = None

    def _request(self, method: str, body: str | None = None) -> str:
        if self._session is None:
            self._session = requests_unixsocket.Session()
        try:
            resp = self._session.request(method, unix_socket_url(self.socket_path, API_PATH),
                                         data=body.encode() if body else None, timeout=_TIMEOUT)
        except requests.RequestException as e:
            self.close()
            raise RoutesUpdateError(f"routes update failed: {e}") from None
        if resp.status_code != 200:
            raise RoutesUpdateError(f"routes update refused by NGINX: HTTP {resp.status_code}: "
                                    f"{resp.text.strip()[:500]}")
        return str(resp.text)

    def push(self, body: str) -> None:
        """Apply the API's lines; raises RoutesUpdateError."""
        if body.strip():
            self._request("POST", body)

    def listed(self) -> str:
        return self._request("GET")

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
