"""Servers and clients for the tests of the policy types ingressMTLS, egressMTLS, cache, cors and
externalAuth: an HTTPS backend that requires a client certificate, an auth service for `auth_request`, and a
TLS client that can present a certificate and send any method and headers."""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ingressctl.http_serving import BackgroundServer
from tests.helpers import Response, scratch_dir
from tests.pki import CA, Issued

GOOD_TOKEN = "Bearer let-me-in"


def _pem_files(issued: Issued, directory: str, name: str) -> tuple[str, str]:
    cert, key = os.path.join(directory, f"{name}.crt"), os.path.join(directory, f"{name}.key")
    issued.write(cert, key)
    return cert, key


class MTLSBackend(BackgroundServer):
    """HTTPS on 127.0.0.1 that completes the handshake only with a client certificate signed by `client_ca`;
    answers `mtls <client CN>`."""

    host = "127.0.0.1"

    def __init__(self, name: str, server_cert: Issued, client_ca: CA) -> None:
        self.name = name
        self._dir = scratch_dir("mtls-")
        cert, key = _pem_files(server_cert, self._dir, "server")
        ca_path = os.path.join(self._dir, "client-ca.crt")
        with open(ca_path, "wb") as f:
            f.write(client_ca.cert_pem)
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.ctx.verify_mode = ssl.CERT_REQUIRED
        self.ctx.load_verify_locations(ca_path)
        self.hits = 0

    def start(self) -> MTLSBackend:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                peer = self.connection.getpeercert() or {}   # type: ignore[attr-defined]
                cn = dict(x[0] for x in peer.get("subject", ())).get("commonName", "?")
                outer.hits += 1
                body = f"mtls {cn}\n".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.socket = self.ctx.wrap_socket(server.socket, server_side=True)
        self._serve(server, "mtls-backend")
        return self


class AuthService(BackgroundServer):
    """The target of `auth_request` (named, on 127.0.0.1, like a demo backend): 200 for
    `Authorization: <GOOD_TOKEN>`, else 401; records what it saw."""

    host = "127.0.0.1"

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[dict[str, str]] = []
        self._lock = threading.Lock()

    def start(self) -> AuthService:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                with outer._lock:
                    outer.seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
                ok = self.headers.get("Authorization") == GOOD_TOKEN
                body = b"ok\n" if ok else b"denied\n"
                self.send_response(200 if ok else 401)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._serve(ThreadingHTTPServer(("127.0.0.1", 0), Handler), "auth-service")
        return self


def call(port: int, host: str, path: str = "/", *, method: str = "GET", headers: dict[str, str] | None = None,
         tls: bool = False, client: Issued | None = None, timeout: float = 10.0) -> Response:
    """One request to NGINX on 127.0.0.1:`port` (TLS with SNI `host`, optionally with a client
    certificate; the server certificate is not verified). A handshake NGINX refuses raises ssl.SSLError."""
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        if client is not None:
            with tempfile.TemporaryDirectory() as d:
                cert, key = _pem_files(client, d, "client")
                ctx.load_cert_chain(cert, key)
        conn: http.client.HTTPConnection = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout,
                                                                       context=ctx)
        # Connected here, so that SNI is `host` (http.client would send the address it connects to).
        raw = socket.create_connection(("127.0.0.1", port), timeout)
        conn.sock = ctx.wrap_socket(raw, server_hostname=host)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, headers={"Host": host, "Connection": "close", **(headers or {})})
        r = conn.getresponse()
        body = r.read().decode(errors="replace")
        return Response(r.status, body, {k.lower(): v for k, v in r.getheaders()})
    finally:
        conn.close()
