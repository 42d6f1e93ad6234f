"""ingress-nginx's `custom-headers` and `auth-proxy-set-headers` through the real controller
(`--ingress-nginx-compat`), devcluster, kubectl and a real NGINX, with a real auth service on the loopback
address: the ConfigMaps' headers on the answers and on the auth subrequest, changes of the ConfigMaps taking
effect without a restart, and unusable ConfigMaps (deleted, another namespace, a header refused, an
injection attempt) denying the Ingress with a Warning event."""

from __future__ import annotations

import http.client
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ingressctl.demo.backend import Backend
from tests.helpers import wait_until
from tests.integration.harness import NS, Env
from tests.integration.ingress_nginx_helpers import DATA
from tests.integration.test_ingress_nginx_auth import AuthService
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration

WARNING = "AddedOrUpdatedWithWarning"


class App(Backend):
    """The application: 404 for `/missing`, else 200; it sends an `X-Frame-Options` of its own, which the
    ConfigMap's replaces."""

    def start(self) -> App:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                with outer._lock:
                    outer.hits += 1
                body = f"app {self.path}\n".encode()
                self.send_response(404 if self.path.startswith("/missing") else 200)
                self.send_header("X-Frame-Options", "ALLOWALL")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer((self.host, self._port), Handler)
        server.daemon_threads = True
        self._serve(server, f"backend-{self.name}")
        return self


def get(port: int, host: str, path: str = "/", headers: dict[str, str] | None = None
        ) -> tuple[int, list[tuple[str, str]]]:
    """(status, every response header as sent: repeated names stay repeated, names lower-cased)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers={"Host": host, "Connection": "close", **(headers or {})})
        r = conn.getresponse()
        r.read()
        return r.status, [(k.lower(), v) for k, v in r.getheaders()]
    finally:
        conn.close()


def values(headers: list[tuple[str, str]], name: str) -> list[str]:
    return [v for k, v in headers if k == name]


def kubectl_apply(kubectl: Kubectl, path: Path, text: str) -> None:
    path.write_text(text)
    done = kubectl.run("apply", "-f", str(path))
    assert done.returncode == 0, done.stderr


@pytest.fixture
def auth() -> Any:
    a = AuthService()
    yield a
    a.stop()


def test_header_config_maps_are_served_followed_and_fail_closed(env: Env, kubectl: Kubectl, tmp_path: Path,
                                                                auth: AuthService) -> None:
    app = App("echo").start()
    env.backends.append(app)
    env.service("echo")
    env.endpoints("echo", [app])
    env.delete("ingressclasses", "nginx", None)
    env.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                "metadata": {"name": "ingressctl"}, "spec": {"controller": "nginx.org/ingress-controller"}})
    kubectl_apply(kubectl, tmp_path / "headers.yaml",
                  (DATA / "custom-headers.yaml").read_text().replace("AUTH", auth.address))
    c = env.controller(ingress_class="ingressctl", ingress_nginx_compat=True,
                       nginx_configmaps=f"{NS}/ingress-nginx-controller")
    port = c.http_port
    wait_until(lambda: get(port, "shop.example.com")[0] == 200, "shop served")
    pid = c.manager.master_pid

    # Every header of the ConfigMap, on every answer (a 404 of the backend too); the backend's own
    # X-Frame-Options is replaced, not repeated; `$` and braces are literal.
    for path, status in (("/", 200), ("/missing", 404)):
        got, headers = get(port, "shop.example.com", path)
        assert got == status
        assert values(headers, "x-frame-options") == ["DENY"]
        assert values(headers, "x-content-type-options") == ["nosniff"]
        assert values(headers, "x-price") == ["$5 {net}"]

    # The auth subrequest carries the headers of auth-proxy-set-headers (a variable is NGINX's value).
    assert get(port, "guarded.example.com")[0] == 401
    auth.requests.clear()
    assert get(port, "guarded.example.com", "/doc", headers={"X-Token": "good"})[0] == 200
    ((_, path, sent),) = auth.requests
    assert path == "/check" and sent["x-tenant"] == "shop" and sent["x-client"] == "127.0.0.1"

    # Another namespace's ConfigMap: refused as ingress-nginx refuses it; the Ingress answers 503.
    env.wait_event("foreign", WARNING, "cross namespace usage of configmaps is not allowed")
    assert get(port, "foreign.example.com")[0] == 503

    # The ConfigMap changed (as a user edits it): the new headers without a restart of NGINX.
    changed = tmp_path / "changed.yaml"
    kubectl_apply(kubectl, changed, """\
# The shop's security headers, tightened: no X-Price any more.
apiVersion: v1
kind: ConfigMap
metadata:
  name: security-headers
  namespace: demo
data:
  X-Frame-Options: "SAMEORIGIN"
  X-Content-Type-Options: "nosniff"
  Strict-Transport-Security: "max-age=31536000; includeSubDomains"
""")
    wait_until(lambda: values(get(port, "shop.example.com")[1], "x-frame-options") == ["SAMEORIGIN"],
               "the changed headers served")
    _, headers = get(port, "shop.example.com")
    assert values(headers, "x-price") == []
    assert values(headers, "strict-transport-security") == ["max-age=31536000; includeSubDomains"]
    assert c.manager.master_pid == pid

    # A header the controller's ConfigMap does not allow: the Ingress is denied (503), with a Warning event.
    kubectl_apply(kubectl, changed, changed.read_text() + '  X-Internal-Build: "1234"\n')
    env.wait_event("shop", WARNING, "header X-Internal-Build is not allowed")
    wait_until(lambda: get(port, "shop.example.com")[0] == 503, "the refused header denies the Ingress")
    assert values(get(port, "shop.example.com")[1], "x-frame-options") == []

    # An injection attempt through the auth headers: refused, the Ingress fails closed (503) and the auth
    # service is never asked, nor the application reached.
    kubectl_apply(kubectl, tmp_path / "auth.yaml", """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: auth-headers
  namespace: demo
data:
  X-Tenant: 'shop"; proxy_pass http://127.0.0.1:1; #'
""")
    env.wait_event("guarded", WARNING, "invalid proxy-set-headers value")
    wait_until(lambda: get(port, "guarded.example.com", headers={"X-Token": "good"})[0] == 503,
               "the guarded Ingress denied")
    auth.requests.clear()
    hits = app.hits
    assert get(port, "guarded.example.com", "/doc", headers={"X-Token": "good"})[0] == 503
    assert auth.requests == [] and app.hits == hits

    # The ConfigMap deleted: a Warning event naming it, and the headers gone (the Ingress answers 503, as
    # ingress-nginx denies it); recreated, it is served again.
    done = kubectl.run("delete", "configmap", "security-headers", "-n", NS)
    assert done.returncode == 0, done.stderr
    env.wait_event("shop", WARNING, f"unable to find configMap '{NS}/security-headers'")
    status, headers = get(port, "shop.example.com")
    assert status == 503 and values(headers, "x-frame-options") == [] and values(headers, "x-price") == []
    kubectl_apply(kubectl, tmp_path / "again.yaml", (DATA / "custom-headers.yaml").read_text().replace(
        "AUTH", auth.address))
    wait_until(lambda: values(get(port, "shop.example.com")[1], "x-frame-options") == ["DENY"],
               "the recreated ConfigMap served")
    wait_until(lambda: get(port, "guarded.example.com", headers={"X-Token": "good"})[0] == 200,
               "the guarded Ingress served again")
    assert c.manager.master_pid == pid
