"""Readiness and liveness HTTP server (NIC's ready-status server on `--ready-status-port`).

Guarantees:
- `GET /nginx-ready` answers `503 Service Unavailable` until the controller reports ready (first queue drain
  done, NGINX reloaded with everything), then `200` with the body `Ready\\n`; it follows `is_ready()` live, so
  readiness can also be withdrawn (e.g. NGINX died and could not be restarted).
- `GET /healthz` answers `200 ok` while `is_alive()` is true, else 503.
- Runs a ThreadingHTTPServer in a daemon thread; `port=0` binds an ephemeral port, exposed as `.port`.
- Callbacks that raise count as "not ready"/"not alive"; the server never dies from a request.
"""

from __future__ import annotations

from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ingressctl.http_serving import BackgroundServer
from ingressctl.logging import get_logger

log = get_logger(__name__)


def _call(fn: Callable[[], bool]) -> bool:
    try:
        return bool(fn())
    except Exception as e:
        log.warning("health check callback failed", error=str(e))
        return False


class HealthServer(BackgroundServer):
    """Serves /nginx-ready and /healthz."""

    def __init__(self, *, is_ready: Callable[[], bool], is_alive: Callable[[], bool] = lambda: True,
                 host: str = "", port: int = 8081) -> None:
        self._is_ready = is_ready
        self._is_alive = is_alive
        self._host = host
        self._port = port

    def start(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "ingressctl"

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/nginx-ready":
                    ok = _call(outer._is_ready)
                    self._reply(200 if ok else 503, b"Ready\n" if ok else b"Service Unavailable\n")
                elif path == "/healthz":
                    ok = _call(outer._is_alive)
                    self._reply(200 if ok else 503, b"ok\n" if ok else b"unhealthy\n")
                else:
                    self._reply(404, b"Not Found\n")

            def _reply(self, code: int, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer((self._host, self._port), Handler)
        server.daemon_threads = True
        self._serve(server, "health-server")
        log.info("readiness server listening", port=self.port, path="/nginx-ready")

