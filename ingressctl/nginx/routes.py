"""The controller's side of the routes NGINX module: its API, which replaces hosts of the module's table.

Guarantees:
- `RoutesClient.push(body)` POSTs the API's lines (`host ...`, `route ...`, `delete ...`; configs.routes
  encodes their fields) to the module on the unix socket nginx.conf serves it on, and returns only once NGINX
  applied all of them. NGINX checks the whole body first and applies nothing when any line is wrong; any
  failure (no socket, an answer other than 200, a timeout) raises RoutesUpdateError with NGINX's message.
- `RoutesClient.listed()` is the table NGINX serves, in the same line format (tests, troubleshooting).
"""

from __future__ import annotations

from ingressctl.nginx.dynamic_peers import SOCKET_DIR, DynamicUpdateError
from ingressctl.nginx.module_api import ModuleApiClient

SOCKET_NAME = "nginx-routes.sock"
"""In the dynamic-peers module's private directory (0700): only the controller may change routes."""
API_PATH = "/routes"

__all__ = ["API_PATH", "SOCKET_DIR", "SOCKET_NAME", "RoutesClient", "RoutesUpdateError"]


class RoutesUpdateError(DynamicUpdateError):
    """NGINX did not apply a routes update (nothing of it when NGINX answered)."""


class RoutesClient(ModuleApiClient):
    """Talks to the routes module's API over a unix socket (one keep-alive session)."""

    api_path = API_PATH
    what = "routes update"
    error = RoutesUpdateError

    def push(self, body: str) -> None:
        """Apply the API's lines; raises RoutesUpdateError."""
        if body.strip():
            self.request("POST", body)

    def listed(self) -> str:
        return self.request("GET")
