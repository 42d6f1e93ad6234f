"""Small HTTP backends for the demo and the tests: each answers every request with its own name.

Guarantees:
- `Backend(name)` serves HTTP/1.1 on 127.0.0.1 (port 0 by default: an ephemeral port, exposed as `.port`) in a
  daemon thread; every GET/HEAD/POST/PUT/DELETE gets `200` with the body `"<name> <METHOD> <host><path>\\n"`
  and the header `X-Backend: <name>`, so `curl` shows which backend a request reached.
- `hits` counts requests; `stop()` closes the socket (new connections are refused).
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ingressctl.http_serving import BackgroundServer


class Backend(BackgroundServer):
    """One named HTTP backend (a stand-in for a Pod)."""

    def __init__(self, name: str, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.name = name
        self.host = host
        self._port = port
        self.hits = 0
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> Backend:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "demo-backend"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                with outer._lock:
                    outer.hits += 1
                host = self.headers.get("Host", "")
                body = f"{outer.name} {self.command} {host}{self.path}\n".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("X-Backend", outer.name)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer((self.host, self._port), Handler)
        server.daemon_threads = True
        self._serve(server, f"backend-{self.name}")
        return self

    def __enter__(self) -> Backend:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
