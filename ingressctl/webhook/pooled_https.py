"""An HTTPS server whose requests run on a fixed thread pool, with idle keep-alive connections parked.

Guarantees:
- A worker thread holds a connection only while it serves one request (TLS handshake, read, answer); between
  requests a keep-alive connection waits in a selector (one "parking" thread), so any number of idle client
  connections costs no worker, and a client with more connections than there are workers is not starved.
- The accept loop does no I/O with clients: TLS handshakes run on the pool. Every socket read has a timeout
  (`read_timeout`), so a slow client holds a worker for at most that long per request.
- At most `max_connections` connections are open at once; beyond that a new connection is closed at once.
  A parked connection idle for `idle_timeout` seconds is closed.
- HTTP pipelining is not supported: a request sent before the previous answer arrived is served only when
  more data arrives or the connection is closed (kube-apiserver and Go clients do not pipeline).
- `server_close()` closes every connection (active ones end after their request) and stops the pool.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from ingressctl.logging import get_logger

log = get_logger(__name__)


class _Parking:
    """Keep-alive connections waiting for their next request; readable ones go back to the pool."""

    def __init__(self, on_readable: Callable[[BaseHTTPRequestHandler], None],
                 on_idle: Callable[[BaseHTTPRequestHandler], None], idle_timeout: float, name: str) -> None:
        self._on_readable = on_readable
        self._on_idle = on_idle
        self._idle_timeout = idle_timeout
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._lock = threading.Lock()
        self._incoming: list[BaseHTTPRequestHandler] = []
        self._parked: dict[BaseHTTPRequestHandler, float] = {}
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def park(self, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            if self._stopped:
                self._on_idle(handler)
                return
            self._incoming.append(handler)
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def _run(self) -> None:
        while True:
            events = self._selector.select(timeout=1.0)
            with self._lock:
                if self._stopped:
                    break
                incoming, self._incoming = self._incoming, []
            now = time.monotonic()
            for key, _ in events:
                handler = key.data
                if handler is None:
                    with contextlib.suppress(OSError):
                        self._wake_r.recv(4096)
                    continue
                self._selector.unregister(key.fileobj)
                del self._parked[handler]
                self._on_readable(handler)
            for handler in incoming:
                try:
                    self._selector.register(handler.connection, selectors.EVENT_READ, handler)
                except (ValueError, OSError):   # closed meanwhile
                    self._on_idle(handler)
                    continue
                self._parked[handler] = now
            for handler, since in list(self._parked.items()):
                if now - since > self._idle_timeout:
                    self._selector.unregister(handler.connection)
                    del self._parked[handler]
                    self._on_idle(handler)
        for handler in [*self._parked, *self._incoming]:
            self._on_idle(handler)
        self._parked.clear()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._thread.join(5)


class PooledHTTPSServer(HTTPServer):
    """HTTPServer over TLS: requests on a ThreadPoolExecutor, idle connections parked (module docstring)."""

    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *,
                 ssl_context: Callable[[], ssl.SSLContext], workers: int, read_timeout: float,
                 idle_timeout: float = 60.0, max_connections: int = 1024, name: str = "https") -> None:
        self.ssl_context = ssl_context
        self.read_timeout = read_timeout
        self.max_connections = max_connections
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._open = 0
        self._open_lock = threading.Lock()
        self._parking = _Parking(self._resume, self._close, idle_timeout, f"{name}-parking")
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            full = self._open >= self.max_connections
            if not full:
                self._open += 1
        if full:
            log.warning("too many connections; closing a new one", limit=self.max_connections)
            self.shutdown_request(request)
            return
        try:
            self.pool.submit(self._start, request, client_address)
        except RuntimeError:   # the pool is shut down: the server is stopping
            self._closed_one()
            self.shutdown_request(request)

    def _closed_one(self) -> None:
        with self._open_lock:
            self._open -= 1

    def _start(self, request: socket.socket, client_address: Any) -> None:
        """TLS handshake, then the first request (on a worker)."""
        try:
            # Headers and body leave in separate writes: without this, Nagle + delayed ACKs add 40 ms.
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            tls = self.ssl_context().wrap_socket(request, server_side=True, do_handshake_on_connect=False)
            tls.settimeout(self.read_timeout)
            tls.do_handshake()
        except (OSError, ssl.SSLError, ValueError) as e:
            log.debug("TLS handshake failed", client=str(client_address), error=str(e))
            self.shutdown_request(request)
            self._closed_one()
            return
        handler_class: Any = self.RequestHandlerClass
        handler = handler_class.__new__(handler_class)
        handler.request, handler.client_address, handler.server = tls, client_address, self
        try:
            handler.setup()   # rfile/wfile and the read timeout; handle() and finish() are driven from here
        except OSError:
            self.shutdown_request(tls)
            self._closed_one()
            return
        self._serve_one(handler)

    def _serve_one(self, handler: BaseHTTPRequestHandler) -> None:
        try:
            handler.close_connection = True
            handler.handle_one_request()
        except Exception as e:   # a broken connection must cost that connection only
            log.debug("connection error", client=str(handler.client_address), error=str(e))
            handler.close_connection = True
        if handler.close_connection:
            self._close(handler)
        elif isinstance(handler.connection, ssl.SSLSocket) and handler.connection.pending():
            self._resume(handler)
        else:
            self._parking.park(handler)

    def _resume(self, handler: BaseHTTPRequestHandler) -> None:
        try:
            self.pool.submit(self._serve_one, handler)
        except RuntimeError:
            self._close(handler)

    def _close(self, handler: BaseHTTPRequestHandler) -> None:
        with contextlib.suppress(Exception):
            handler.finish()
        self.shutdown_request(handler.request)
        self._closed_one()

    def server_close(self) -> None:
        super().server_close()
        self._parking.stop()
        self.pool.shutdown(wait=False, cancel_futures=True)
