"""ingress-nginx's CORS and TLS annotations through the real controller (`--ingress-nginx-compat`),
devcluster, kubectl and a real NGINX, with the manifests in the form users publish
(tests/integration/data/ingress-nginx/): real preflights and simple requests answered as ingress-nginx
answered them."""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import tempfile
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ingressctl.demo.backend import Backend
from tests.helpers import Response, wait_until
from tests.integration.harness import NS, Env
from tests.integration.ingress_nginx_helpers import N, apply_manifest, compat_controller, request
from tests.pki import CA, Issued, b64, ca_secret, tls_secret
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration


class CorsApp(Backend):
    """A backend answering every method (OPTIONS included) with `<name> <METHOD>` and CORS headers of its own
    (`Access-Control-Allow-Origin: https://backend.invalid`), which ingress-nginx's CORS replaces."""

    def start(self) -> CorsApp:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                body = f"{outer.name} {self.command}\n".encode()
                self.send_response(200)
                self.send_header("Access-Control-Allow-Origin", "https://backend.invalid")
                self.send_header("Access-Control-Max-Age", "1")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_OPTIONS = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer((self.host, self._port), Handler)
        server.daemon_threads = True
        self._serve(server, f"backend-{self.name}")
        return self


def preflight(port: int, host: str, origin: str) -> Any:
    return request(port, host, "/items", method="OPTIONS",
                   headers={"Origin": origin, "Access-Control-Request-Method": "POST"})


def test_cors_preflights_and_simple_requests(env: Env, kubectl: Kubectl) -> None:
    app = CorsApp("cors-app").start()
    env.backends.append(app)
    env.service("cors-app")
    env.endpoints("cors-app", [app])
    apply_manifest(env, kubectl, "cors.yaml")
    c = compat_controller(env)
    port = c.http_port
    for host in ("open", "listed", "disabled"):
        wait_until(lambda h=host: request(port, f"{h}.example.com").status == 200, f"{host} served")

    # enable-cors alone: origin *, ingress-nginx's default methods, headers, credentials and max-age, on
    # every response; a preflight is answered 204 by NGINX (the backend never sees it)
    r = request(port, "open.example.com", headers={"Origin": "https://anyone.example.net"})
    assert (r.status, r.body) == (200, "cors-app GET\n")
    assert r.headers["access-control-allow-origin"] == "*"
    assert r.headers["access-control-allow-credentials"] == "true"
    assert r.headers["access-control-allow-methods"] == "GET, PUT, POST, DELETE, PATCH, OPTIONS"
    assert r.headers["access-control-allow-headers"] == ("DNT,Keep-Alive,User-Agent,X-Requested-With,"
                                                         "If-Modified-Since,Cache-Control,Content-Type,"
                                                         "Range,Authorization")
    assert r.headers["access-control-max-age"] == "1728000"   # the backend's own "1" is replaced
    assert "access-control-expose-headers" not in r.headers
    p = preflight(port, "open.example.com", "https://anyone.example.net")
    assert (p.status, p.body) == (204, "")
    assert p.headers["access-control-allow-origin"] == "*"
    assert p.headers["access-control-max-age"] == "1728000"
    assert p.headers["access-control-allow-methods"] == "GET, PUT, POST, DELETE, PATCH, OPTIONS"

    # a list: an allowed origin (and a wildcard subdomain, case-insensitively) is echoed with the headers
    for origin in ("https://app.example.com", "https://eu.partner.example.org:8443",
                   "https://EU.Partner.example.org:8443"):
        r = request(port, "listed.example.com", headers={"Origin": origin})
        assert (r.status, r.body) == (200, "cors-app GET\n")
        assert r.headers["access-control-allow-origin"] == origin
        assert r.headers["access-control-allow-methods"] == "GET, POST"
        assert r.headers["access-control-allow-headers"] == "X-Custom, Content-Type"
        assert r.headers["access-control-expose-headers"] == "X-Request-Id, X-Total"
        assert r.headers["access-control-max-age"] == "600"
        assert "access-control-allow-credentials" not in r.headers   # cors-allow-credentials: "false"
        assert r.headers["vary"] == "Origin"
        p = preflight(port, "listed.example.com", origin)
        assert (p.status, p.body) == (204, "")
        assert p.headers["access-control-allow-origin"] == origin
        assert p.headers["access-control-allow-methods"] == "GET, POST"
    # a disallowed origin, one label too deep, the wrong port or scheme, or none: no CORS header at all,
    # and its preflight goes to the backend (as ingress-nginx), without the backend's CORS headers
    for origin in ("https://evil.example.com", "https://a.b.partner.example.org:8443",
                   "https://eu.partner.example.org", "http://app.example.com", "https://app.example.com.evil",
                   "xhttps://app.example.com", None):
        r = request(port, "listed.example.com", headers={"Origin": origin} if origin else {})
        assert r.status == 200 and not [h for h in r.headers if h.startswith("access-control-")], (origin, r)
        if origin:
            p = preflight(port, "listed.example.com", origin)
            assert (p.status, p.body) == (200, "cors-app OPTIONS\n"), origin
            assert not [h for h in p.headers if h.startswith("access-control-")], (origin, p)

    # cors-* without enable-cors: nothing, and a warning naming the key
    r = request(port, "disabled.example.com", headers={"Origin": "https://app.example.com"})
    assert r.headers["access-control-allow-origin"] == "https://backend.invalid"   # the backend's own
    assert env.wait_event("disabled", "AddedOrUpdatedWithWarning",
                          f"{N}cors-allow-origin ignored ({N}enable-cors is not true)")


class EchoHeaders(Backend):
    """A backend answering `<header>: <value>` lines of the request's `ssl-client-*` headers."""

    def start(self) -> EchoHeaders:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                lines = [f"{k.lower()}: {v}" for k, v in self.headers.items() if k.lower().startswith("ssl-")]
                body = ("\n".join(sorted(lines)) + f"\n{outer.name}\n").encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer((self.host, self._port), Handler)
        server.daemon_threads = True
        self._serve(server, f"backend-{self.name}")
        return self


def mtls_get(port: int, host: str, ca: CA, client: Issued | None = None) -> Response:
    """GET / over TLS with SNI `host`, verifying the server against `ca`, with `client`'s certificate."""
    ctx = ssl.create_default_context(cadata=ca.cert_pem.decode())
    if client is not None:
        with tempfile.TemporaryDirectory() as d:
            cert, key = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
            client.write(cert, key)
            ctx.load_cert_chain(cert, key)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw, \
            ctx.wrap_socket(raw, server_hostname=host) as tls:
        tls.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        r = http.client.HTTPResponse(tls)  # type: ignore[arg-type]
        r.begin()
        body = r.read().decode(errors="replace")
        return Response(r.status, body, {k.lower(): v for k, v in r.getheaders()})


ERROR_PAGE = "https://errors.example.com/client-cert"


def test_client_certificates(env: Env, kubectl: Kubectl) -> None:
    ca, other_ca = CA("client-ca"), CA("other-ca")
    good, wrong_cn, revoked = ca.issue("good-client"), ca.issue("other-client"), ca.issue("good-client")
    stranger = other_ca.issue("good-client")
    env.create(ca_secret("ca", NS, ca, crl=ca.crl_pem(revoked)))
    env.create(tls_secret("mtls-tls", NS, ca.issue("mtls.example.com", server=True,
                                                    dns=("mtls.example.com", "optional.example.com",
                                                         "opaque.example.com"))))
    env.create({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": "opaque-ca", "namespace": NS}, "data": {"ca.crt": b64(ca.cert_pem)}})
    echo = EchoHeaders("echo").start()
    env.backends.append(echo)
    env.service("echo")
    env.endpoints("echo", [echo])
    apply_manifest(env, kubectl, "auth-tls.yaml")
    c = compat_controller(env)
    https = c.https_port
    r = wait_until(lambda: (x := mtls_get(https, "mtls.example.com", ca, good)).status == 200 and x,
                   "mtls served")

    # a client certificate of the CA with the CN: served, the certificate passed URL-escaped (ssl-client-cert)
    headers = dict(line.split(": ", 1) for line in r.body.splitlines() if ": " in line)
    assert urllib.parse.unquote(headers["ssl-client-cert"]).strip() == good.cert_pem.decode().strip()
    assert headers["ssl-client-verify"] == "SUCCESS"
    assert headers["ssl-client-subject-dn"] == "CN=good-client"
    assert headers["ssl-client-issuer-dn"] == "CN=client-ca"
    # none, another CA's, or one the CRL (ca.crl) revokes: NGINX refuses it, the error page gets it (302)
    for client in (None, stranger, revoked):
        r = mtls_get(https, "mtls.example.com", ca, client)
        assert (r.status, r.headers.get("location")) == (302, ERROR_PAGE), client
    # the CA's certificate with another CN: auth-tls-match-cn answers 403
    r = mtls_get(https, "mtls.example.com", ca, wrong_cn)
    assert (r.status, r.body) == (403, "client certificate unauthorized")
    # plain HTTP cannot bypass it (redirected to HTTPS, as ingress-nginx's ssl-redirect)
    assert request(c.http_port, "mtls.example.com").status == 308

    # optional: without a certificate served too (ssl-client-verify NONE), the certificate not passed
    r = mtls_get(https, "optional.example.com", ca)
    assert r.status == 200 and "ssl-client-verify: NONE" in r.body and "ssl-client-cert" not in r.body
    r = mtls_get(https, "optional.example.com", ca, good)
    assert r.status == 200 and "ssl-client-verify: SUCCESS" in r.body and "ssl-client-cert" not in r.body
    assert mtls_get(https, "optional.example.com", ca, stranger).status == 400   # a bad one is refused

    # a CA Secret ingressctl does not read: fail closed (500), with a warning saying what it needs
    assert mtls_get(https, "opaque.example.com", ca, good).status == 500
    assert env.wait_event("opaque", "AddedOrUpdatedWithWarning", "must exist and be of the type nginx.org/ca")
