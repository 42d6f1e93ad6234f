"""Background HTTP servers (readiness, metrics, demo backends, and the test suites' servers).

`serve_in_background` runs a server's `serve_forever` in a daemon thread with a poll interval of
`POLL_INTERVAL` (50 ms), so that `shutdown()` returns within that time instead of after `serve_forever`'s
default half second: a stopping controller, and every test that stops a server, waits no longer than it must.
`BackgroundServer` is the base of the servers that do so: the bound `port` (useful with port 0) and a `stop()`
that shuts the server down, closes its socket and joins its thread; safe to call more than once.
"""

from __future__ import annotations

import socketserver
import threading
from typing import Any

POLL_INTERVAL = 0.05


def serve_in_background(server: socketserver.BaseServer, name: str) -> threading.Thread:
    """Start `server.serve_forever` in a daemon thread named `name`; returns the started thread."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_INTERVAL}, name=name,
                              daemon=True)
    thread.start()
    return thread


class BackgroundServer:
    """A server run by `serve_in_background`: subclasses set `_port` and call `_serve(server, name)`."""

    _port: int = 0
    _server: Any = None
    _thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (useful with port 0)."""
        if self._server is None:
            return self._port
        return int(self._server.server_address[1])

    def _serve(self, server: socketserver.BaseServer, name: str) -> None:
        self._server = server
        self._thread = serve_in_background(server, name)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
