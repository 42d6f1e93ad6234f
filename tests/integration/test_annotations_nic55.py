"""The NIC 5.2-5.5 Ingress annotations and ConfigMap keys through devcluster, the real controller and a real
NGINX with real backends: what the client and the backend see (rewritten paths, redirects and their codes,
added headers, rewritten Location headers), the Warning events (the deprecated ssl-redirect key,
sticky-cookie-services that NGINX 1.22 cannot load), rejected values, and the buffer and next-upstream
settings in the rendered config where their effect is not observable from outside."""

from __future__ import annotations

import os
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest

from ingressctl.http_serving import serve_in_background
from tests.helpers import make_cert, wait_until
from tests.integration.harness import NS, Controller, Env, rule, still_healthy
from tests.integration.test_controller_annotations import get_with_headers

pytestmark = pytest.mark.integration


class _Redirector(BaseHTTPRequestHandler):
    """A backend that answers every request with a 302 to http://old.example.com<path>."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", f"http://old.example.com{self.path}")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def redirector() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirector)
    server.daemon_threads = True
    serve_in_background(server, "redirector")
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def conf_of(c: Controller, name: str) -> str:
    with open(os.path.join(c.manager.paths.conf_d, f"{NS}-{name}.conf")) as f:
        return f.read()


def test_rewrite_target_reaches_the_backend_rewritten(env: Env, running: Controller) -> None:
    c = running
    env.ingress("rw", [rule("rw.example.com", ("/coffee", "web"))],
                annotations={"nginx.org/rewrite-target": "/beverages/coffee"})
    r = c.wait_backend("rw.example.com", "/coffee/latte?size=l", "web")
    assert r.body == "web GET rw.example.com/beverages/coffee?size=l\n"
    env.ingress("rx", [rule("rx.example.com", ("/api/v1/(.*)", "web"), path_type="ImplementationSpecific")],
                annotations={"nginx.org/rewrite-target": "/v2/$1", "nginx.org/path-regex": "case_sensitive"})
    r = c.wait_backend("rx.example.com", "/api/v1/users/7", "web")
    assert r.body == "web GET rx.example.com/v2/users/7\n"
    # Both rewrite annotations: nginx.org/rewrites wins, with a warning on the Ingress.
    env.ingress("both", [rule("both.example.com", ("/tea", "web"))],
                annotations={"nginx.org/rewrite-target": "/x",
                             "nginx.org/rewrites": "serviceName=web rewrite=/t"})
    env.wait_event("both", "AddedOrUpdatedWithWarning",
                   "annotation nginx.org/rewrite-target is ignored: nginx.org/rewrites is set")
    assert c.wait_backend("both.example.com", "/tea/a", "web").body == "web GET both.example.com/t/a\n"
    still_healthy(c)


def test_app_root_ssl_redirect_and_http_redirect_code(env: Env, running: Controller) -> None:
    c = running
    env.ingress("root", [rule("root.example.com", ("/", "web"))],
                annotations={"nginx.org/app-root": "/coffee"})
    r = wait_until(lambda: (x := c.get("root.example.com", "/")).status == 302 and x, "app-root redirect")
    assert r.headers["location"] == "http://root.example.com/coffee"
    c.wait_idle()  # (an old worker, still accepting right after the reload, knows no such host)
    assert c.get("root.example.com", "/tea").backend == "web"  # only "/" redirects
    cert = make_cert("secure.example.com")
    env.create(cert.secret("secure-tls", NS))
    tls = [{"hosts": ["secure.example.com"], "secretName": "secure-tls"}]
    env.ingress("secure", [rule("secure.example.com", ("/", "web"))], tls=tls,
                annotations={"nginx.org/http-redirect-code": "308"})
    r = wait_until(lambda: (x := c.get("secure.example.com", "/pay?x=1")).status == 308 and x, "308 redirect")
    assert r.headers["location"] == f"https://secure.example.com:{c.https_port}/pay?x=1"
    # nginx.org/ssl-redirect: "false" serves plain HTTP; the old key still works, with a deprecation Warning.
    env.ingress("secure", [rule("secure.example.com", ("/", "web"))], tls=tls,
                annotations={"nginx.org/ssl-redirect": "false"})
    c.wait_backend("secure.example.com", "/pay", "web")
    env.ingress("secure", [rule("secure.example.com", ("/", "web"))], tls=tls,
                annotations={"ingress.kubernetes.io/ssl-redirect": "true"})
    e = env.wait_event("secure", "AddedOrUpdatedWithWarning",
                       "annotation ingress.kubernetes.io/ssl-redirect is deprecated: use "
                       "nginx.org/ssl-redirect")
    assert e["type"] == "Warning"
    c.wait_status("secure.example.com", "/pay", 301)
    still_healthy(c)


def test_add_header_from_annotation_and_config_map(env: Env) -> None:
    env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nginx-config", "namespace": NS},
               "data": {"add-header": "X-Cluster: yes:always", "http-redirect-code": "307"}})
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    c = env.controller(env.settings(nginx_configmaps=f"{NS}/nginx-config"))
    env.ingress("plain", [rule("plain.example.com", ("/", "web"))])
    env.ingress("hdr", [rule("hdr.example.com", ("/", "web"))],
                annotations={"nginx.org/add-header": 'X-Frame-Options: DENY, X-Note: say \\"hi\\":always'})
    r = wait_until(lambda: (x := c.get("hdr.example.com", "/")).headers.get("x-frame-options") == "DENY"
                   and x, "added header")
    assert r.headers["x-note"] == 'say "hi"' and r.backend == "web"
    # ConfigMap add-header is at the http level: a server without its own add_header inherits it; one with
    # its own does not (NGINX's add_header inheritance, as in NIC).
    r = wait_until(lambda: (x := c.get("plain.example.com", "/")).backend == "web" and x, "plain served")
    assert r.headers["x-cluster"] == "yes"
    assert "x-cluster" not in c.get("hdr.example.com", "/").headers
    # ConfigMap http-redirect-code is the default of the redirects.
    env.ingress("plain", [rule("plain.example.com", ("/", "web"))],
                annotations={"nginx.org/redirect-to-https": "true"})
    r = wait_until(lambda: (x := get_with_headers(c.http_port, "plain.example.com", "/a",
                                                  {"X-Forwarded-Proto": "http"})).status == 307 and x,
                   "307 from the ConfigMap")
    assert r.headers["location"] == "https://plain.example.com/a"


def test_proxy_redirect_rewrites_the_backends_location(env: Env, running: Controller,
                                                       redirector: int) -> None:
    c = running
    env.service("redir", port=redirector, target_port=redirector)
    env.endpoints("redir", [_at(redirector)])
    env.ingress("pr", [rule("pr.example.com", ("/", "redir", redirector))],
                annotations={"nginx.org/proxy-redirect-from": "http://old.example.com/",
                             "nginx.org/proxy-redirect-to": "https://new.example.com/shop/"})
    r = wait_until(lambda: (x := c.get("pr.example.com", "/a/b")).status == 302 and x, "backend redirect")
    assert r.headers["location"] == "https://new.example.com/shop/a/b"
    env.ingress("pr", [rule("pr.example.com", ("/", "redir", redirector))],
                annotations={"nginx.org/proxy-redirect-from": "~^http://old\\.example\\.com/(.*)$",
                             "nginx.org/proxy-redirect-to": "/moved/$1"})
    # NGINX makes the relative target absolute (absolute_redirect), with the Host and the listening port.
    wait_until(lambda: c.get("pr.example.com", "/c").headers.get("location")
               == f"http://pr.example.com:{c.http_port}/moved/c", "regex redirect")
    env.ingress("pr", [rule("pr.example.com", ("/", "redir", redirector))],
                annotations={"nginx.org/proxy-redirect-from": "off"})
    wait_until(lambda: c.get("pr.example.com", "/d").headers.get("location") == "http://old.example.com/d",
               "proxy_redirect off")
    env.ingress("pr", [rule("pr.example.com", ("/", "redir", redirector))],
                annotations={"nginx.org/proxy-redirect-to": "/x"})
    env.wait_event("pr", "Rejected", "annotations.nginx.org/proxy-redirect-to")
    still_healthy(c)


def _at(port: int) -> Any:
    """What env.endpoints needs of a backend, for one at 127.0.0.1:<port>."""
    return SimpleNamespace(host="127.0.0.1", name="redirector", port=port)


def test_buffers_body_buffer_and_next_upstream_are_rendered_and_loaded(env: Env, running: Controller) -> None:
    c = running
    env.ingress("buf", [rule("buf.example.com", ("/", "web"))], annotations={
        "nginx.org/client-body-buffer-size": "32k", "nginx.org/proxy-busy-buffers-size": "16k",
        "nginx.org/proxy-buffers": "8 8k", "nginx.org/proxy-next-upstream": "error timeout http_503",
        "nginx.org/proxy-next-upstream-timeout": "5s", "nginx.org/proxy-next-upstream-tries": "2"})
    r = c.wait_backend("buf.example.com", "/", "web")
    body = get_with_headers(c.http_port, "buf.example.com", "/up", {})
    assert r.status == 200 and body.status == 200
    conf = conf_of(c, "buf")
    for line in ("client_body_buffer_size 32k;", "proxy_busy_buffers_size 16k;", "proxy_buffers 8 8k;",
                 "proxy_next_upstream error timeout http_503;", "proxy_next_upstream_timeout 5s;",
                 "proxy_next_upstream_tries 2;"):
        assert line in conf, line
    # A busy size NGINX would refuse: the buffer settings are left out with a warning, NGINX keeps loading.
    env.ingress("buf", [rule("buf.example.com", ("/", "web"))],
                annotations={"nginx.org/proxy-busy-buffers-size": "1m"})
    env.wait_event("buf", "AddedOrUpdatedWithWarning", "proxy-busy-buffers-size must be less than")
    assert "proxy_busy_buffers_size" not in conf_of(c, "buf")
    c.wait_backend("buf.example.com", "/", "web")
    still_healthy(c)


def test_sticky_cookie_services_is_accepted_without_the_directive(env: Env, running: Controller) -> None:
    c = running
    env.ingress("sticky", [rule("sticky.example.com", ("/", "web"))],
                annotations={"nginx.org/sticky-cookie-services": "serviceName=web srv_id expires=1h path=/"})
    version = c.manager.version()
    e = env.wait_event("sticky", "AddedOrUpdatedWithWarning",
                       f"needs NGINX 1.29.6 or newer, and this NGINX is {version}")
    assert e["type"] == "Warning"
    r = c.wait_backend("sticky.example.com", "/", "web")
    assert "set-cookie" not in r.headers and "sticky cookie" not in conf_of(c, "sticky")
    still_healthy(c)


@pytest.mark.parametrize(("annotations", "named"), [
    ({"nginx.org/app-root": "/"}, 'annotations.nginx.org/app-root: Invalid value: "/": path cannot be \'/\''),
    ({"nginx.org/rewrite-target": "https://evil.example.com/"},
     'annotations.nginx.org/rewrite-target: Invalid value: "https://evil.example.com/"'),
    ({"nginx.org/http-redirect-code": "303"},
     'annotations.nginx.org/http-redirect-code: Invalid value: "303": must be one of 301, 302, 307, 308'),
    ({"nginx.org/add-header": "X-A: $host"}, "annotations.nginx.org/add-header: Invalid value"),
    ({"nginx.org/proxy-next-upstream": "error error"}, "duplicate value 'error'"),
    ({"nginx.org/limit-req-rate": "1r/s", "nginx.org/limit-req-key": "$remote_addr:$uri"},
     "must be NGINX variables only"),
])
def test_invalid_new_values_are_rejected(env: Env, running: Controller, annotations: dict[str, str],
                                         named: str) -> None:
    c = running
    env.ingress("bad", [rule("bad.example.com", ("/", "web"))], annotations=annotations)
    assert env.wait_event("bad", "Rejected", named)["type"] == "Warning"
    assert c.get("bad.example.com", "/").status == 404
    still_healthy(c)
