"""ingress-nginx's CORS and TLS annotations through the real controller (`--ingress-nginx-compat`),
devcluster, kubectl and a real NGINX, with the manifests in the form users publish
(tests/integration/data/ingress-nginx/): real preflights and simple requests answered as ingress-nginx
answered them."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ingressctl.demo.backend import Backend
from tests.helpers import wait_until
from tests.integration.harness import Env
from tests.integration.ingress_nginx_helpers import N, apply_manifest, compat_controller, request
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
