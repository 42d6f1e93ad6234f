"""ingress-nginx's external authentication annotations through the real controller (`--ingress-nginx-compat`),
devcluster, kubectl and a real NGINX, with a real auth service on the loopback address: allowed and denied
requests, the sign-in redirect with the original URL, the auth answer's headers reaching the backend, the
method, headers and cookies of the subrequest, and the values that refuse the Ingress."""

from __future__ import annotations

import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ingressctl.demo.backend import Backend
from tests.helpers import make_cert, tls_secret, wait_until
from tests.integration.harness import NS, Env
from tests.integration.ingress_nginx_helpers import DATA, compat_controller, request
from tests.integration.policy_servers import call
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration


class AuthService:
    """An auth service: `X-Token: good` -> 200 with `X-User`, `X-Email` and a cookie; `X-Token: forbidden` ->
    403; anything else -> 401 with a cookie. Records (method, path, headers) of every request. It can be a
    Service's endpoint (`host`, `port`, `name`)."""

    host = "127.0.0.1"
    name = "auth-service"

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append((self.command, self.path, headers))
                token = self.headers.get("X-Token", "")
                status, extra = 401, {"Set-Cookie": "auth=denied"}
                if token == "good":
                    status, extra = 200, {"X-User": "alice", "X-Email": "alice@example.com",
                                          "Set-Cookie": "auth=ok"}
                elif token == "forbidden":
                    status, extra = 403, {}
                self.send_response(status)
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_HEAD = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Echo(Backend):
    """The application: 404 for `/missing`, else 200 with the identity headers it received."""

    def start(self) -> Echo:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                with outer._lock:
                    outer.hits += 1
                body = (f"user={self.headers.get('X-User', '-')} email={self.headers.get('X-Email', '-')} "
                        f"{self.command} {self.path}\n").encode()
                self.send_response(404 if self.path.startswith("/missing") else 200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer((self.host, self._port), Handler)
        server.daemon_threads = True
        self._serve(server, f"backend-{self.name}")
        return self


@pytest.fixture
def auth() -> Any:
    a = AuthService()
    yield a
    a.stop()


@pytest.fixture
def echo(env: Env) -> Echo:
    e = Echo("echo").start()
    env.backends.append(e)
    return e


def apply_auth_manifest(env: Env, kubectl: Kubectl, tmp_path: Path, auth: AuthService) -> None:
    env.delete("ingressclasses", "nginx", None)
    env.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                "metadata": {"name": "ingressctl"}, "spec": {"controller": "nginx.org/ingress-controller"}})
    manifest = tmp_path / "auth.yaml"
    manifest.write_text((DATA / "auth.yaml").read_text().replace("AUTH", auth.address))
    done = kubectl.run("apply", "-f", str(manifest))
    assert done.returncode == 0, done.stderr


def echo_service(env: Env, echo: Echo) -> None:
    env.service("echo")
    env.endpoints("echo", [echo])


def test_auth_url_allows_denies_and_redirects_to_sign_in(env: Env, kubectl: Kubectl, tmp_path: Path,
                                                        auth: AuthService, echo: Echo) -> None:
    echo_service(env, echo)
    apply_auth_manifest(env, kubectl, tmp_path, auth)
    c = compat_controller(env)
    port = c.http_port
    good = {"X-Token": "good"}
    wait_until(lambda: request(port, "app.example.com", headers=good).status == 200, "app served")

    # Allowed: the auth answer's X-User and X-Email reach the backend (a client's own X-User is replaced),
    # its cookie reaches the client.
    auth.requests.clear()
    r = request(port, "app.example.com", "/page?q=1", headers={**good, "X-User": "mallory"})
    assert r.status == 200 and r.body == "user=alice email=alice@example.com GET /page?q=1\n"
    assert r.headers["set-cookie"] == "auth=ok"
    ((method, path, headers),) = auth.requests
    assert (method, path) == ("GET", "/oauth2/auth?host=app.example.com")   # $host of the auth-url
    assert headers["host"] == "127.0.0.1"
    assert headers["x-original-url"] == "http://app.example.com/page?q=1"
    assert headers["x-original-method"] == "GET"
    assert headers["x-sent-from"] == "nginx-ingress-controller"
    assert headers["x-auth-request-redirect"] == "/page?q=1"
    assert headers["x-real-ip"] == "127.0.0.1" and headers["x-token"] == "good"
    assert "content-length" not in headers or headers["content-length"] == "0"

    # Denied: 401 -> 302 to the sign-in page with rd= the original URL, its path and query escaped as
    # ingress-nginx's $escaped_request_uri (so a query of several arguments comes back whole); the backend
    # is not reached.
    hits = echo.hits
    r = request(port, "app.example.com", "/private/doc")
    assert r.status == 302
    assert r.headers["location"] == "https://login.example.com/oauth2/start?rd=http://app.example.com%2Fprivate%2Fdoc"
    r = request(port, "app.example.com", "/private/a%20b?x=1&y=%C3%A9;z~")
    assert r.headers["location"] == ("https://login.example.com/oauth2/start?rd=http://app.example.com"
                                     "%2Fprivate%2Fa%2520b%3Fx%3D1%26y%3D%25C3%25A9%3Bz~")
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(r.headers["location"]).query)
    assert query == {"rd": ["http://app.example.com/private/a%20b?x=1&y=%C3%A9;z~"]}
    r = request(port, "app.example.com", "/", method="POST", body=b"x" * 100)
    assert r.status == 302 and echo.hits == hits

    # auth-url alone: the auth service's 401 and 403 reach the client.
    assert request(port, "plain.example.com", headers=good).status == 200
    assert request(port, "plain.example.com").status == 401
    assert request(port, "plain.example.com", headers={"X-Token": "forbidden"}).status == 403
    assert echo.hits == hits + 1

    # auth-method, auth-request-redirect; auth-always-set-cookie puts the cookie on a 404 too (without it,
    # NGINX adds it to 2xx/3xx answers only); the sign-in URL keeps its query and uses return_to.
    auth.requests.clear()
    r = request(port, "posted.example.com", "/missing", headers=good)
    assert r.status == 404 and r.headers["set-cookie"] == "auth=ok"
    ((method, path, headers),) = auth.requests
    assert "set-cookie" not in request(port, "app.example.com", "/missing", headers=good).headers
    assert (method, path) == ("POST", "/verify")
    assert headers["x-auth-request-redirect"] == "https://posted.example.com/landing"
    assert headers["x-original-uri"] == "/missing" and headers["x-scheme"] == "http"
    assert headers["x-original-method"] == "GET"
    r = request(port, "posted.example.com", "/x")
    assert (r.status, r.headers["location"]) == (
        302, "https://login.example.com/start?client=web&return_to=http://posted.example.com%2Fx")
    assert r.headers["set-cookie"] == "auth=denied"

    # Refused, never served unauthenticated: a variable in the host, an auth-snippet without snippets.
    env.wait_event("varhost", "Rejected", "NGINX variables in the host need a resolver")  # auth.$host
    env.wait_event("snippet", "Rejected",
                   "auth-snippet: Forbidden: not supported by ingressctl: snippets are not enabled")
    for host in ("varhost.example.com", "snippet.example.com"):
        assert request(port, host, headers=good).status == 404
    assert not Path(c.manager.conf_dir, "conf.d", f"{NS}-varhost.conf").exists()

    # The auth service down: the subrequest fails, the request answers 500 (never passes).
    hits = echo.hits
    auth.stop()
    assert request(port, "app.example.com", headers=good).status == 500
    assert echo.hits == hits


def test_oauth2_proxy_through_this_nginx_as_ingress_nginx_documents_it(
        env: Env, kubectl: Kubectl, tmp_path: Path, auth: AuthService, echo: Echo) -> None:
    """`auth-url: https://$host/oauth2/auth`: the subrequest comes back to this NGINX over TLS with the
    request's host (SNI and Host) and reaches the oauth2-proxy Ingress of that host."""
    echo_service(env, echo)
    env.service("oauth2-proxy")
    env.endpoints("oauth2-proxy", [auth])  # type: ignore[list-item]
    cert = make_cert("sso.example.com")
    env.create(tls_secret("sso-tls", NS, cert.cert_pem, cert.key_pem))
    apply_auth_manifest(env, kubectl, tmp_path, auth)
    c = compat_controller(env)
    port = c.https_port
    good = {"X-Token": "good"}
    wait_until(lambda: call(port, "sso.example.com", "/", headers=good, tls=True).status == 200, "sso served")
    auth.requests.clear()
    echo.hits = 0
    r = call(port, "sso.example.com", "/reports?year=2026", headers=good, tls=True)
    assert r.status == 200 and r.body == "user=alice email=- GET /reports?year=2026\n"
    ((method, path, headers),) = auth.requests
    assert (method, path, headers["host"]) == ("GET", "/oauth2/auth", "sso.example.com")
    assert headers["x-original-url"] == "https://sso.example.com/reports?year=2026"
    r = call(port, "sso.example.com", "/reports", tls=True)
    assert (r.status, r.headers["location"]) == (302, "https://sso.example.com/oauth2/start?rd=%2Freports")
    # An auth URL leading back to a location it protects: the loop is cut at once, the request fails closed.
    wait_until(lambda: request(c.http_port, "loop.example.com", "/x").status != 404, "loop served")
    auth.requests.clear()
    assert request(c.http_port, "loop.example.com", "/x", headers=good).status == 500
    assert auth.requests == [] and echo.hits == 1


def test_auth_snippet_with_snippets_enabled(env: Env, kubectl: Kubectl, tmp_path: Path,
                                            auth: AuthService, echo: Echo) -> None:
    echo_service(env, echo)
    apply_auth_manifest(env, kubectl, tmp_path, auth)
    c = compat_controller(env, enable_snippets=True)
    port = c.http_port
    wait_until(lambda: request(port, "snippet.example.com", headers={"X-Token": "good"}).status == 200,
               "snippet served")
    assert auth.requests[-1][2]["x-extra"] == "1"
    assert request(port, "snippet.example.com").status == 401


def test_satisfy_combines_address_rules_with_auth(env: Env, kubectl: Kubectl, tmp_path: Path,
                                                  auth: AuthService, echo: Echo) -> None:
    echo_service(env, echo)
    apply_auth_manifest(env, kubectl, tmp_path, auth)
    c = compat_controller(env)
    port = c.http_port
    good, office, outside = {"X-Token": "good"}, "127.0.0.2", "127.0.0.1"
    for host in ("office-any.example.com", "office-all.example.com"):
        wait_until(lambda h=host: request(port, h, headers=good, source=office).status == 200,
                   f"{host} served")
    # any: the office's address is enough; elsewhere the auth service decides.
    assert request(port, "office-any.example.com", source=office).status == 200
    assert request(port, "office-any.example.com", source=outside, headers=good).status == 200
    assert request(port, "office-any.example.com", source=outside).status == 401
    # all: both are needed.
    assert request(port, "office-all.example.com", source=office).status == 401
    assert request(port, "office-all.example.com", source=outside, headers=good).status == 403
