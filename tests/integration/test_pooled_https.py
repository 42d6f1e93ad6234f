"""The pooled HTTPS server (ingressctl.webhook.pooled_https): more keep-alive connections than workers are all
served, idle connections are closed after the idle timeout, the connection cap holds, and a stalled TLS
handshake does not block the accept loop."""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from ingressctl.devcluster.tlsutil import ServingCertificate, generate
from ingressctl.http_serving import serve_in_background
from ingressctl.webhook.pooled_https import PooledHTTPSServer
from tests.helpers import wait_until


class Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = self.path.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def cert() -> ServingCertificate:
    return generate("127.0.0.1")


def _server(cert: ServingCertificate, **kw: Any) -> PooledHTTPSServer:
    ctx = cert.ssl_context()
    server = PooledHTTPSServer(("127.0.0.1", 0), Echo, ssl_context=lambda: ctx, name="pooled-test",
                               **{"workers": 2, "read_timeout": 30.0, **kw})
    serve_in_background(server, "pooled-test-accept")
    return server


@pytest.fixture
def server(cert: ServingCertificate) -> Iterator[PooledHTTPSServer]:
    s = _server(cert)
    yield s
    s.shutdown()
    s.server_close()


def _client(server: PooledHTTPSServer, cert: ServingCertificate) -> http.client.HTTPSConnection:
    ctx = ssl.create_default_context(cadata=cert.ca_pem.decode())
    return http.client.HTTPSConnection("127.0.0.1", server.server_address[1], context=ctx, timeout=10)


def _get(conn: http.client.HTTPSConnection, path: str) -> bytes:
    conn.request("GET", path)
    resp = conn.getresponse()
    assert resp.status == 200
    return resp.read()


def test_more_keep_alive_connections_than_workers_are_all_served(server: PooledHTTPSServer,
                                                                 cert: ServingCertificate) -> None:
    conns = [_client(server, cert) for _ in range(6)]   # 3x the workers, all kept open
    try:
        for round_ in range(3):
            for i, c in enumerate(conns):
                assert _get(c, f"/{round_}/{i}") == f"/{round_}/{i}".encode()
    finally:
        for c in conns:
            c.close()


def test_a_stalled_handshake_does_not_block_others(server: PooledHTTPSServer,
                                                   cert: ServingCertificate) -> None:
    stalled = socket.create_connection(server.server_address[:2])   # connects, never starts TLS
    try:
        c = _client(server, cert)
        assert _get(c, "/ok") == b"/ok"
        c.close()
    finally:
        stalled.close()


def test_idle_connections_are_closed(cert: ServingCertificate) -> None:
    s = _server(cert, idle_timeout=0.2)
    try:
        ctx = ssl.create_default_context(cadata=cert.ca_pem.decode())
        raw = socket.create_connection(s.server_address[:2], timeout=10)
        tls = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        tls.sendall(b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
        assert b"200" in tls.recv(4096)

        def closed() -> bool:
            try:
                return tls.recv(1) == b""
            except (ssl.SSLError, OSError):
                return True

        wait_until(closed, "the idle connection closed by the server")
        tls.close()
    finally:
        s.shutdown()
        s.server_close()


def test_the_connection_cap(cert: ServingCertificate) -> None:
    s = _server(cert, max_connections=2)
    try:
        held = [_client(s, cert) for _ in range(2)]
        for c in held:
            assert _get(c, "/held") == b"/held"
        extra = _client(s, cert)
        with pytest.raises((ssl.SSLError, OSError, http.client.HTTPException)):
            _get(extra, "/extra")
        extra.close()
        held[0].close()
        wait_until(lambda: _try(s, cert), "a connection accepted again once one closed")
        held[1].close()
    finally:
        s.shutdown()
        s.server_close()


def _try(s: PooledHTTPSServer, cert: ServingCertificate) -> bool:
    c = _client(s, cert)
    try:
        return _get(c, "/again") == b"/again"
    except (ssl.SSLError, OSError, http.client.HTTPException):
        return False
    finally:
        c.close()
