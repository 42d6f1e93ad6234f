"""The metrics HTTP server (NIC's `metrics/listener.go`): `GET /metrics` and a small HTML page at `GET /`.

Guarantees:
- `/metrics` answers with the registry's Prometheus text exposition (`exposition.generate_text`, content type
  `text/plain; version=0.0.4`), gzip-compressed when the client accepts gzip. Every scrape collects afresh
  (stub_status and /proc are read then). If collecting fails the answer is a 500 with the error; the server
  keeps serving.
- `GET /` is a small HTML page linking to /metrics; any other path is 404; HEAD works like GET without a body.
- A ThreadingHTTPServer in a daemon thread, with 10 s socket timeouts per connection (NIC's read/write
  timeouts). `port=0` binds an ephemeral port, readable as `.port` after `start()`. `stop()` is idempotent.
"""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client.registry import Collector

from ingressctl.http_serving import serve_in_background
from ingressctl.logging import get_logger
from ingressctl.metrics.exposition import CONTENT_TYPE, generate_text

log = get_logger(__name__)

REQUEST_TIMEOUT = 10.0
INDEX_HTML = (
    b"<html>\n<head><title>NGINX Ingress Controller</title></head>\n<body>\n"
    b"<h1>NGINX Ingress Controller</h1>\n<p><a href='/metrics'>Metrics</a></p>\n</body>\n</html>\n"
)


class MetricsServer:
    """Serves a registry over HTTP."""

    def __init__(self, registry: Collector, *, host: str = "", port: int = 9113) -> None:
        self.registry = registry
        self._host = host
        self._port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        """The bound port once started (useful with port 0), else the configured one."""
        server = self._server
        return self._port if server is None else int(server.server_address[1])

    @property
    def url(self) -> str:
        host = self._host or "127.0.0.1"
        return f"http://{host}:{self.port}/metrics"

    def start(self) -> None:
        with self._lock:
            if self._server is not None:
                raise RuntimeError("metrics server already started")
            registry = self.registry

            class Handler(BaseHTTPRequestHandler):
                server_version = "ingressctl"
                timeout = REQUEST_TIMEOUT

                def do_GET(self) -> None:
                    self._serve(send_body=True)

                def do_HEAD(self) -> None:
                    self._serve(send_body=False)

                def _serve(self, *, send_body: bool) -> None:
                    path = self.path.split("?", 1)[0]
                    if path == "/metrics":
                        try:
                            body = generate_text(registry)
                        except Exception as e:
                            log.exception("collecting metrics failed", error=str(e))
                            self._reply(500, f"error collecting metrics: {e}\n".encode(),
                                        "text/plain; charset=utf-8", send_body)
                            return
                        self._reply(200, body, CONTENT_TYPE, send_body, compress=True)
                    elif path == "/":
                        self._reply(200, INDEX_HTML, "text/html; charset=utf-8", send_body)
                    else:
                        self._reply(404, b"404 page not found\n", "text/plain; charset=utf-8", send_body)

                def _reply(self, code: int, body: bytes, content_type: str, send_body: bool, *,
                           compress: bool = False) -> None:
                    gzipped = compress and "gzip" in self.headers.get("Accept-Encoding", "")
                    if gzipped:
                        body = gzip.compress(body)
                    self.send_response(code)
                    self.send_header("Content-Type", content_type)
                    if gzipped:
                        self.send_header("Content-Encoding", "gzip")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    if send_body:
                        self.wfile.write(body)

                def log_message(self, format: str, *args: Any) -> None:
                    pass

            server = ThreadingHTTPServer((self._host, self._port), Handler)
            server.daemon_threads = True
            self._server = server
            self._thread = serve_in_background(server, "metrics-server")
        log.info("metrics server listening", port=self.port, path="/metrics")

    def stop(self) -> None:
        with self._lock:
            server, thread = self._server, self._thread
            self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(5)
