"""Routes through the controller and a real NGINX: plain Ingress hosts served from the routes module's table
answer exactly as their server blocks did; a path, a backend, a host added or removed reaches NGINX without
a reload (new route answers, the old one is gone); a push NGINX cannot take falls back to a reload; what was
pushed survives a reload and a new controller; an Ingress that stops being routable gets its server block
back."""

from __future__ import annotations

import http.client
import os

import pytest

from ingressctl.nginx.modules import ROUTES, installed_module
from ingressctl.nginx.routes import SOCKET_DIR, SOCKET_NAME, RoutesClient
from tests.helpers import Cert, make_cert, wait_until
from tests.integration.harness import NS, Controller, Env, rule

pytestmark = pytest.mark.integration


def module() -> str:
    path = installed_module("nginx", ROUTES)
    assert path, "the routes module must be installed (scripts/install-system-deps.sh)"
    return path


def setup(env: Env) -> Cert:
    for name in ("web", "api", "other"):
        env.service(name)
        env.endpoints(name, [env.backend(name)])
    cert = make_cert("tls.example.com")
    env.create(cert.secret("tls", NS))
    env.ingress("plain", [rule("plain.example.com", ("/", "web"), ("/api", "api"))])
    env.ingress("exact", [rule("exact.example.com", ("/only", "api"))], )
    env.ingress("tls", [rule("tls.example.com", ("/", "web"), ("/api", "api"))],
                tls=[{"hosts": ["tls.example.com"], "secretName": "tls"}])
    return cert


PROBES = [("plain.example.com", p) for p in ("/", "/api", "/api/", "/api/x", "/apix", "/x/api")] + [
    ("exact.example.com", "/only"), ("exact.example.com", "/"), ("exact.example.com", "/only/x"),
    ("tls.example.com", "/api/v"), ("nobody.example.com", "/")]


def answers(c: Controller) -> dict[tuple[str, str], tuple[int, str, str]]:
    out = {}
    for host, path in PROBES:
        r = c.get(host, path)
        location = r.headers.get("location", "").replace(f":{c.https_port}/", ":<https>/")
        out[(host, path)] = (r.status, r.backend, location)
    return out


def post(c: Controller, host: str, path: str, size: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", c.http_port, timeout=10)
    try:
        conn.request("POST", path, body=b"x" * size, headers={"Host": host, "Connection": "close"})
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


def routed_file(c: Controller, name: str) -> str:
    text = c.manager.read_config(f"{NS}-{name}")
    assert text is not None
    return str(text)


def test_routed_hosts_answer_as_their_server_blocks_do(env: Env) -> None:
    module()
    cert = setup(env)
    results = {}
    for routes in (False, True):
        c = env.controller(dynamic_routes=routes, load_certificates_per_handshake=True)
        c.wait_backend("plain.example.com", "/api", "api")
        results[routes] = answers(c)
        assert c.https("tls.example.com", "/api").backend == "api"
        assert c.https("tls.example.com").peer_cert_der == cert.der
        with pytest.raises(OSError):
            c.https("plain.example.com")  # no TLS for a plain HTTP host
        assert post(c, "plain.example.com", "/", 2 * 1024 * 1024) == 413
        assert post(c, "plain.example.com", "/", 1000) == 200
        text = routed_file(c, "plain")
        assert ("ingressctl_route_host plain.example.com" in text) == routes
        assert ("\nserver {" in text) != routes
        c.stop()
    assert results[True] == results[False]
    assert results[True][("plain.example.com", "/apix")][1] == "web"
    assert results[True][("plain.example.com", "/api/x")][1] == "api"
    assert results[True][("exact.example.com", "/")][0] == 404
    assert results[True][("tls.example.com", "/api/v")][:1] == (301,)
    assert results[True][("tls.example.com", "/api/v")][2] == "https://tls.example.com:<https>/api/v"


def test_changes_reach_nginx_without_a_reload(env: Env) -> None:
    setup(env)
    c = env.controller(load_certificates_per_handshake=True)
    c.wait_backend("plain.example.com", "/api", "api")
    c.wait_idle()
    reloads = c.reloads
    # A path.
    env.ingress("plain", [rule("plain.example.com", ("/", "web"), ("/api", "api"), ("/new", "other"))])
    c.wait_backend("plain.example.com", "/new", "other")
    # A backend: a Service this Ingress never used (its upstream borrows a spare) - and the old one is gone.
    env.ingress("plain", [rule("plain.example.com", ("/", "other"), ("/api", "api"))])
    c.wait_backend("plain.example.com", "/", "other")
    assert c.get("plain.example.com", "/new").backend == "other"  # now through `/`
    assert c.get("plain.example.com", "/api").backend == "api"
    # A host added, with a Service of its own, and one removed.
    env.service("fresh")
    env.endpoints("fresh", [env.backend("fresh")])
    env.ingress("fresh", [rule("fresh.example.com", ("/", "fresh"))])
    c.wait_backend("fresh.example.com", "/", "fresh")
    env.delete("ingresses", "exact")
    c.wait_status("exact.example.com", "/only", 404)
    # An annotation the table holds (the TLS host's redirect).
    env.ingress("tls", [rule("tls.example.com", ("/", "web"))],
                tls=[{"hosts": ["tls.example.com"], "secretName": "tls"}],
                annotations={"nginx.org/ssl-redirect": "false"})
    c.wait_backend("tls.example.com", "/", "web")
    c.wait_idle()
    assert c.reloads == reloads, "every change above is pushed, none reloads NGINX"
    # The spare's endpoints follow its Service.
    moved = env.backend("fresh-2")
    env.endpoints("fresh", [moved])
    c.wait_backend("fresh.example.com", "/", "fresh-2")
    c.wait_idle()
    assert c.reloads == reloads


def test_a_push_nginx_cannot_take_falls_back_to_a_reload(env: Env) -> None:
    setup(env)
    c = env.controller()
    c.wait_backend("plain.example.com", "/", "web")
    c.wait_idle()
    reloads = c.reloads
    socket = os.path.join(c.manager.run_dir, SOCKET_DIR, SOCKET_NAME)
    os.unlink(socket)  # the API is gone: every push fails
    env.ingress("plain", [rule("plain.example.com", ("/", "api"))])
    c.wait_backend("plain.example.com", "/", "api")
    c.wait_idle()
    assert c.reloads == reloads + 1
    assert c.get("plain.example.com", "/api").backend == "api"


def test_what_was_pushed_survives_a_reload_and_a_new_controller(env: Env) -> None:
    setup(env)
    c = env.controller()
    c.wait_backend("plain.example.com", "/", "web")
    c.wait_idle()
    env.service("fresh")
    env.endpoints("fresh", [env.backend("fresh")])
    env.ingress("fresh", [rule("fresh.example.com", ("/", "fresh"))])
    env.ingress("plain", [rule("plain.example.com", ("/", "other"))])
    c.wait_backend("fresh.example.com", "/", "fresh")
    c.wait_backend("plain.example.com", "/", "other")
    c.wait_idle()
    before = answers(c)
    listed = RoutesClient(os.path.join(c.manager.run_dir, SOCKET_DIR, SOCKET_NAME)).listed()
    assert "ingressctl-route-spare-" in listed  # the new upstream is served by a spare until a reload
    c.manager.reload()
    assert answers(c) == before
    listed = RoutesClient(os.path.join(c.manager.run_dir, SOCKET_DIR, SOCKET_NAME)).listed()
    assert "ingressctl-route-spare-" not in listed and "demo-fresh-fresh.example.com-fresh-80" in listed
    c.stop()
    d = env.controller()
    d.wait_backend("fresh.example.com", "/", "fresh")
    assert answers(d) == before


def test_an_ingress_that_stops_being_routable_gets_its_server_block_back(env: Env) -> None:
    setup(env)
    c = env.controller()
    c.wait_backend("plain.example.com", "/", "web")
    c.wait_idle()
    reloads = c.reloads
    env.ingress("plain", [rule("plain.example.com", ("/", "web"), ("/api", "api"))],
                annotations={"nginx.org/proxy-read-timeout": "5s"})
    wait_until(lambda: "\nserver {" in routed_file(c, "plain"), "a server block")
    c.wait_idle()
    assert c.reloads == reloads + 1 and "proxy_read_timeout 5s;" in routed_file(c, "plain")
    assert c.get("plain.example.com", "/api/x").backend == "api"
    env.ingress("plain", [rule("plain.example.com", ("/", "web"), ("/api", "api"))],
                annotations={"nginx.org/proxy-read-timeout": "60s"})  # the default again
    wait_until(lambda: "ingressctl_route_host plain.example.com" in routed_file(c, "plain"), "a route")
    c.wait_idle()
    assert c.reloads == reloads + 2
    assert c.get("plain.example.com", "/api/x").backend == "api"
