"""The HTTP API of ingressctl's NGINX modules (dynamic peers, routes) on a unix socket: one keep-alive session
per client.

Guarantees:
- `ModuleApiClient.request(method, body)` returns the answer's text when NGINX answers 200; a transport
  failure (no socket, a timeout) closes the session and raises the client's error ("<what> failed: ..."), any
  other status raises it with NGINX's message ("<what> refused by NGINX: HTTP <code>: ...").
- `close()` is idempotent; the next request opens a new session.
"""

from __future__ import annotations

import requests
import requests_unixsocket

from ingressctl.nginx.stub_status import unix_socket_url

_TIMEOUT = 10.0


class ModuleApiClient:
    """Subclasses name the API (`api_path`), what an update is (`what`) and the error they raise (`error`)."""

    api_path = "/"
    what = "module update"
    error: type[Exception] = RuntimeError

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self._session: requests_unixsocket.Session | None = None

    def request(self, method: str, body: str | None = None) -> str:
        if self._session is None:
            self._session = requests_unixsocket.Session()
        try:
            resp = self._session.request(method, unix_socket_url(self.socket_path, self.api_path),
                                         data=body.encode() if body else None, timeout=_TIMEOUT)
        except requests.RequestException as e:
            self.close()
            raise self.error(f"{self.what} failed: {e}") from None
        if resp.status_code != 200:
            raise self.error(f"{self.what} refused by NGINX: HTTP {resp.status_code}: "
                             f"{resp.text.strip()[:500]}")
        return str(resp.text)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
