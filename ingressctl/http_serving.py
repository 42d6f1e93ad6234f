"""Background HTTP servers (readiness, metrics, demo backends, and the test suites' servers).

`serve_in_background` runs a server's `serve_forever` in a daemon thread with a poll interval of
`POLL_INTERVAL` (50 ms), so that `shutdown()` returns within that time instead of after `serve_forever`'s
default half second: a stopping controller, and every test that stops a server, waits no longer than it must.
"""

from __future__ import annotations

import socketserver
import threading

POLL_INTERVAL = 0.05


def serve_in_background(server: socketserver.BaseServer, name: str) -> threading.Thread:
    """Start `server.serve_forever` in a daemon thread named `name`; returns the started thread."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_INTERVAL}, name=name,
                              daemon=True)
    thread.start()
    return thread
