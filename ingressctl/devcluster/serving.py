"""What the request handlers see of the devcluster HTTP server: its settings (`ServerConfig`) and its face
(`Serving`, the base of `server.DevHTTPServer`), so that the handler modules need not import the server module
that imports them. Nothing here holds state.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from typing import Any

from ingressctl.devcluster.admission import WebhookAdmission
from ingressctl.devcluster.auth import AccessControl
from ingressctl.devcluster.faults import FaultInjector, RequestStats
from ingressctl.devcluster.registry import Registry
from ingressctl.devcluster.store import Store

MAX_BODY_BYTES = 3 * 1024 * 1024


@dataclass
class ServerConfig:
    bookmark_interval: float = 2.0          # seconds between BOOKMARK events on watches that allow them
    min_request_timeout: float = 1800.0     # watches without timeoutSeconds end after [x, 2x)
    write_timeout: float = 60.0             # a watch client that does not read for this long is dropped
    idle_timeout: float = 300.0             # keep-alive connections idle this long are closed
    max_body_bytes: int = MAX_BODY_BYTES
    token: str = ""                         # bearer token required when set


class Serving(ThreadingHTTPServer):
    """The server as its request handlers use it; `server.DevHTTPServer` is the one implementation."""

    store: Store
    registry: Registry
    access: AccessControl
    config: ServerConfig
    ssl_context: ssl.SSLContext | None
    faults: FaultInjector
    stats: RequestStats
    admission: WebhookAdmission | None
    answer_handlers: Mapping[str, Callable[..., Any]]
    stopping: threading.Event

    def track(self, conn: socket.socket, add: bool) -> None:
        """Remember (`add`) or forget an open connection, for `close_all_connections`."""
        raise NotImplementedError
