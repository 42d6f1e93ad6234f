"""Helpers of the ingress-nginx compatibility tests: the manifests users publish (tests/integration/data/
ingress-nginx/*.yaml, applied with the real kubectl), a controller serving them with `--ingress-nginx-compat`
next to a primary class of its own, and backends whose answers depend on the path (slow, big headers, 502s,
redirects, 404s, over TLS)."""

from __future__ import annotations

import http.client
import ssl
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ingressctl.demo.backend import Backend
from tests.helpers import Cert, Response
from tests.integration.harness import Controller, Env
from tests.webhooks import Kubectl

DATA = Path(__file__).parent / "data" / "ingress-nginx"
N = "nginx.ingress.kubernetes.io/"


def apply_manifest(env: Env, kubectl: Kubectl, name: str) -> None:
    """ingress-nginx's `nginx` IngressClass replaces the harness's (its controller is immutable), ingressctl
    gets a class of its own, then `kubectl apply -f` the manifest as it is."""
    env.delete("ingressclasses", "nginx", None)
    env.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
    "metadata": {"name": "ingressctl"},
                "spec": {"controller": "nginx.org/ingress-controller"}})
    done = kubectl.run("apply", "-f", str(DATA / name))
    assert done.returncode == 0, done.stderr


def compat_controller(env: Env, **kw: Any) -> Controller:
    return env.controller(ingress_class="ingressctl", ingress_nginx_compat=True, **kw)


def request(port: int, host: str, path: str = "/", *, method: str = "GET", body: bytes = b"",
            headers: dict[str, str] | None = None, source: str | None = None,
            timeout: float = 30) -> Response:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                      source_address=(source, 0) if source else None)
    try:
        conn.request(method, path, body=body or None,
                     headers={"Host": host, "Connection": "close", **(headers or {})})
        r = conn.getresponse()
        text = r.read().decode(errors="replace")
        return Response(r.status, text, {k.lower(): v for k, v in r.getheaders()})
    finally:
        conn.close()


class Special(Backend):
    """A backend (`X-Backend: <name>`) that answers by path: `/slow` after 2 s, `/big-header` with a 12 KiB
    header, `/redirect` 302 to `http://internal.example.com/next`, `/missing` 404; with `fail`, every request
    502; with `down` (settable while running), every connection closed unanswered (a failed endpoint, also
    on NGINX's kept-alive connections); with `cert`, over TLS. Else 200 `<name> <METHOD> <host><path>`."""

    def __init__(self, name: str, *, fail: bool = False, cert: Cert | None = None) -> None:
        super().__init__(name)
        self.fail = fail
        self.down = False
        self.cert = cert

    def start(self) -> Special:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                if outer.down:
                    self.close_connection = True
                    return
                with outer._lock:
                    outer.hits += 1
                status, extra = 200, {}
                if outer.fail:
                    status = 502
                elif self.path.startswith("/slow"):
                    time.sleep(2)
                elif self.path.startswith("/big-header"):
                    extra["X-Big"] = "b" * 12000
                elif self.path.startswith("/redirect"):
                    status, extra = 302, {"Location": "http://internal.example.com/next"}
                elif self.path.startswith("/missing"):
                    status = 404
                body = f"{outer.name} {self.command} {self.headers.get('Host', '')}{self.path}\n".encode()
                self.send_response(status)
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("X-Backend", outer.name)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer((self.host, self._port), Handler)
        server.daemon_threads = True
        if self.cert is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            with tempfile.NamedTemporaryFile("wb", suffix=".pem") as f:
                f.write(self.cert.cert_pem + self.cert.key_pem)
                f.flush()
                ctx.load_cert_chain(f.name)
            server.socket = ctx.wrap_socket(server.socket, server_side=True)
        self._serve(server, f"backend-{self.name}")
        return self


def special(env: Env, name: str, **kw: Any) -> Special:
    b = Special(name, **kw).start()
    env.backends.append(b)
    return b


def concurrently(n: int, fn: Any) -> list[Any]:
    """`fn()` in `n` threads at once; their results."""
    results: list[Any] = [None] * n
    barrier = threading.Barrier(n)

    def run(i: int) -> None:
        barrier.wait()
        results[i] = fn()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results
