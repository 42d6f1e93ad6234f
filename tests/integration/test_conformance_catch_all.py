"""The Ingress spec's default backend through a real NGINX: an Ingress without rules and with a
defaultBackend is the class-wide catch-all (every host no rule matches, HTTP and HTTPS, every method, the
request passed on unchanged), gets its status address, and the oldest of several wins while the others get
a Warning naming it and take over when it goes."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.helpers import make_cert, wait_until
from tests.integration.harness import NS, Controller, Env, rule

pytestmark = pytest.mark.integration


class EchoBackend:
    """An HTTP/1.1 backend that answers every method with JSON of the request it saw (method, path,
    protocol, headers) and the header `X-Backend: <name>`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.host = "127.0.0.1"
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                body = json.dumps({"method": self.command, "path": self.path, "proto": self.request_version,
                                   "headers": {k.lower(): v for k, v in self.headers.items()}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("X-Backend", outer.name)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((self.host, 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, name=f"echo-{name}", daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def echo(env: Env, name: str) -> EchoBackend:
    b = EchoBackend(name)
    env.backends.append(b)  # type: ignore[arg-type]  # stopped with the others at teardown
    env.service(name)
    env.endpoints(name, [b])  # type: ignore[list-item]
    return b


def default_backend(service: str, port: int = 80) -> dict[str, Any]:
    return {"service": {"name": service, "port": {"number": port}}}


def request(c: Controller, method: str, host: str, path: str) -> tuple[http.client.HTTPResponse, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", c.http_port, timeout=10)
    try:
        conn.request(method, path, body=b"x" if method in ("POST", "PUT", "PATCH") else None,
                     headers={"Host": host, "User-Agent": "conformance-check/1.0"})
        r = conn.getresponse()
        return r, r.read()
    finally:
        conn.close()


def status_controller(env: Env, **kw: Any) -> Controller:
    """A controller that writes `10.9.8.7` (the ConfigMap's external-status-address) into status."""
    env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nginx-config", "namespace": NS},
               "data": {"external-status-address": "10.9.8.7"}})
    return env.controller(nginx_configmaps=f"{NS}/nginx-config", report_ingress_status=True, **kw)


def lb_ips(env: Env, name: str) -> list[str]:
    ing = env.get("ingresses", name)
    return [x.get("ip") or x.get("hostname") for x in (ing.get("status") or {}).get("loadBalancer", {})
            .get("ingress") or []]


@pytest.mark.parametrize(("method", "host", "path"), [
    ("GET", "my-host", "/"), ("GET", "my-host", "/sub-path"), ("POST", "some-host", "/"),
    ("PUT", "127.0.0.1", "/resource"), ("DELETE", "some-host", "/resource"),
    ("PATCH", "my-host", "/resource"),
])
def test_catch_all_serves_every_unmatched_host_with_the_request_unchanged(env: Env, method: str, host: str,
                                                                          path: str) -> None:
    echo(env, "echo-service")
    echo(env, "owned")
    env.ingress("default-backend", default_backend=default_backend("echo-service"))
    env.ingress("owned", [rule("owned.example.com", ("/", "owned"))])
    c = status_controller(env)
    c.wait_backend("owned.example.com", "/", "owned")
    r, body = wait_until(lambda: (x := request(c, method, host, path))[0].getheader("X-Backend")
                         == "echo-service" and x, f"{method} {host}{path} -> echo-service")
    assert r.status == 200 and r.version == 11
    for header in ("Content-Length", "Content-Type", "Date", "Server"):
        assert r.getheader(header), header
    seen = json.loads(body)
    assert seen["method"] == method and seen["path"] == path and seen["proto"] == "HTTP/1.1"
    assert seen["headers"]["user-agent"] == "conformance-check/1.0"
    assert seen["headers"]["host"] == host
    # Hosts an Ingress owns keep their own rules.
    assert c.get("owned.example.com", "/anything").backend == "owned"
    wait_until(lambda: lb_ips(env, "default-backend") == ["10.9.8.7"], "status address of the catch-all")


def test_oldest_catch_all_wins_the_others_are_warned_and_take_over(env: Env) -> None:
    echo(env, "first")
    echo(env, "second")
    env.ingress("zz-older", default_backend=default_backend("first"))
    created = env.get("ingresses", "zz-older")["metadata"]["creationTimestamp"]
    # The next one must be younger by at least one second (creationTimestamp has second resolution).
    wait_until(lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) > created, "the next second")
    env.ingress("aa-younger", default_backend=default_backend("second"))
    c = status_controller(env)
    c.wait_backend("anything.example.com", "/", "first")
    e = env.wait_event("aa-younger", "Rejected", "Ingress demo/zz-older")
    assert e["type"] == "Warning" and "catch-all" in e["message"]
    wait_until(lambda: lb_ips(env, "zz-older") == ["10.9.8.7"], "status of the winner")
    assert lb_ips(env, "aa-younger") == []
    # The winner goes: the other one takes over, with its status address.
    env.delete("ingresses", "zz-older")
    c.wait_backend("anything.example.com", "/", "second")
    wait_until(lambda: lb_ips(env, "aa-younger") == ["10.9.8.7"], "status of the new winner")
    # No catch-all left: the default server answers 404 again.
    env.delete("ingresses", "aa-younger")
    c.wait_status("anything.example.com", "/", 404)


def test_catch_all_over_https_with_the_default_server_certificate_or_its_own(env: Env) -> None:
    from tests.helpers import tls_secret

    default_cert = make_cert("default.example.com")
    own_cert = make_cert("catch-all.example.com")
    env.create(tls_secret("default-server-secret", NS, default_cert.cert_pem, default_cert.key_pem))
    env.create(tls_secret("own", NS, own_cert.cert_pem, own_cert.key_pem))
    echo(env, "echo-service")
    env.ingress("default-backend", default_backend=default_backend("echo-service"))
    c = env.controller(default_server_tls_secret=f"{NS}/default-server-secret")
    r = wait_until(lambda: (x := c.https("unknown.example.com", "/x")).backend == "echo-service" and x,
                   "https to the catch-all")
    assert r.status == 200 and r.peer_cert_der == default_cert.der
    assert c.get("unknown.example.com", "/x").backend == "echo-service"  # no redirect: not its certificate
    # A spec.tls entry without hosts gives the catch-all its own certificate (and NIC's SSL redirect).
    env.ingress("default-backend", default_backend=default_backend("echo-service"),
                tls=[{"secretName": "own"}])
    wait_until(lambda: c.https("unknown.example.com", "/x").peer_cert_der == own_cert.der, "own certificate")
    plain = c.wait_status("unknown.example.com", "/x", 301)
    assert plain.headers["location"].startswith("https://unknown.example.com:")


def test_without_a_default_server_certificate_tls_handshakes_are_refused(env: Env) -> None:
    echo(env, "echo-service")
    env.ingress("default-backend", default_backend=default_backend("echo-service"))
    c = env.controller(health_status=True)
    c.wait_backend("unknown.example.com", "/", "echo-service")
    with pytest.raises(OSError):
        c.https("unknown.example.com", "/")
    # The health endpoint of the default server stays, and requests without a Host header reach the catch-all.
    health = c.get("unknown.example.com", "/nginx-health")
    assert health.status == 200 and health.body == "healthy\n"
    with socket.create_connection(("127.0.0.1", c.http_port), timeout=10) as conn:
        conn.sendall(b"GET /no-host HTTP/1.0\r\n\r\n")
        answer = b"".join(iter(lambda: conn.recv(65536), b""))
    assert answer.startswith(b"HTTP/1.1 200") and b"X-Backend: echo-service" in answer


def test_ingress_without_class_gets_the_default_class_other_classes_get_nothing(env: Env) -> None:
    echo(env, "echo-service")
    echo(env, "other")
    env.apply({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
               "metadata": {"name": "nginx",
                            "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
               "spec": {"controller": "nginx.org/ingress-controller"}})
    env.ingress("no-class", default_backend=default_backend("echo-service"), cls=None)
    assert env.get("ingresses", "no-class")["spec"]["ingressClassName"] == "nginx"
    env.ingress("other-class", [rule("other-class.example.com", ("/", "other"))], cls="some-invalid-class")
    c = status_controller(env)
    c.wait_backend("my-host", "/", "echo-service")
    wait_until(lambda: lb_ips(env, "no-class") == ["10.9.8.7"], "status of the defaulted Ingress")
    # The Ingress of another class: no traffic (the catch-all answers its host), no status, no events.
    assert c.get("other-class.example.com", "/").backend == "echo-service"
    c.wait_idle()
    assert lb_ips(env, "other-class") == [] and env.events("other-class") == []


def test_unmatched_paths_and_hosts_of_other_ingresses_go_to_the_catch_all(env: Env) -> None:
    echo(env, "echo-service")
    echo(env, "api")
    echo(env, "wild")
    env.ingress("api", [rule("api.example.com", ("/api", "api"))])
    env.ingress("wild", [rule("*.wild.example.com", ("/", "wild"))])
    c = env.controller()
    c.wait_backend("api.example.com", "/api", "api")
    assert c.get("api.example.com", "/other").status == 404
    assert c.get("deep.x.wild.example.com", "/").status == 404
    reloads = c.reloads
    env.ingress("default-backend", default_backend=default_backend("echo-service"))
    c.wait_backend("api.example.com", "/other", "echo-service")
    r, body = request(c, "PATCH", "deep.x.wild.example.com", "/p?q=1")
    assert r.getheader("X-Backend") == "echo-service"
    seen = json.loads(body)
    assert seen["path"] == "/p?q=1" and seen["headers"]["host"] == "deep.x.wild.example.com"
    # Their own rules still win.
    assert c.get("api.example.com", "/api/x").backend == "api"
    assert c.get("one.wild.example.com", "/x").backend == "wild"
    c.wait_idle()
    assert c.reloads == reloads + 1  # the catch-all and the servers that send to it: one reload
    # The catch-all goes: 404 again.
    env.delete("ingresses", "default-backend")
    c.wait_status("api.example.com", "/other", 404)
    assert c.get("deep.x.wild.example.com", "/").status == 404
    assert c.get("unknown.example.com", "/").status == 404
