"""VirtualServers end to end: devcluster with the chart's CRDs, the real controller and NGINX, real backends.

Each test shows one group of features through real HTTP requests, with the VirtualServer's status and events.
"""

from __future__ import annotations

import datetime
import os
from collections import Counter
from typing import Any

import pytest

from ingressctl.kinds.virtualserver.kind import VIRTUALSERVERS
from tests.helpers import http_get, make_cert, tls_secret, wait_until
from tests.integration.harness import NS, Controller, Env, rule
from tests.integration.vs_helpers import apply_vs, install_crds, virtual_server, vs_status, wait_vs_state

pytestmark = pytest.mark.integration

CAFE = "cafe.example.com"


def _backends(env: Env, *names: str) -> None:
    for name in names:
        env.service(name)
        env.endpoints(name, [env.backend(name)])


def _cafe_routes() -> list[dict[str, Any]]:
    return [
        {"path": "/tea", "action": {"pass": "tea"}},
        {"path": "=/exact", "action": {"return": {"code": 201, "type": "text/plain",
                                                  "body": "exact ${request_method} ${request_uri}",
                                                  "headers": [{"name": "X-Return", "value": "yes"}]}}},
        {"path": "~ ^/re/([a-z]+)$", "action": {"proxy": {
            "upstream": "coffee", "rewritePath": "/rewritten/$1",
            "responseHeaders": {"hide": ["X-Backend"],
                                "add": [{"name": "X-Added", "value": "${request_uri}"}]},
        }}},
        {"path": "/coffee", "action": {"proxy": {"upstream": "coffee", "rewritePath": "/beans"}}},
        {"path": "/old", "action": {"redirect": {"url": "https://${host}/new", "code": 307}}},
    ]


def _cafe(routes: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return virtual_server("cafe", CAFE, upstreams=[
        {"name": "tea", "service": "tea", "port": 80},
        {"name": "coffee", "service": "coffee", "port": 80, "keepalive": 8, "read-timeout": "30s"},
    ], routes=routes if routes is not None else _cafe_routes(), **spec)


@pytest.fixture
def cafe(env: Env) -> Controller:
    install_crds(env)
    _backends(env, "tea", "coffee")
    apply_vs(env, _cafe())
    c = env.controller()
    c.wait_backend(CAFE, "/tea", "tea")
    return c


def test_routes_actions_status_and_events(env: Env, cafe: Controller) -> None:
    c = cafe
    # pass: prefix path (NIC's string prefix: /teapot matches /tea too).
    assert c.get(CAFE, "/tea/cup").body == f"tea GET {CAFE}/tea/cup\n"
    assert c.get(CAFE, "/teapot").backend == "tea"
    # return with variables and headers; exact match only.
    r = c.get(CAFE, "/exact")
    assert (r.status, r.body, r.headers.get("x-return")) == (201, "exact GET /exact", "yes")
    assert r.headers["content-type"].startswith("text/plain")
    assert c.get(CAFE, "/exact/more").status == 404
    # proxy with a regex path and rewritePath; response headers hidden and added.
    r = c.get(CAFE, "/re/mocha")
    assert r.body == f"coffee GET {CAFE}/rewritten/mocha\n"
    assert "x-backend" not in r.headers and r.headers.get("x-added") == "/re/mocha"
    assert c.get(CAFE, "/re/Mocha9").status == 404
    # proxy with a prefix rewritePath: the matched prefix is replaced.
    assert c.get(CAFE, "/coffee/latte").body == f"coffee GET {CAFE}/beans/latte\n"
    # redirect with a code and variables.
    r = c.get(CAFE, "/old")
    assert (r.status, r.headers.get("location")) == (307, f"https://{CAFE}/new")
    # Not routed: NGINX's 404.
    assert c.get(CAFE, "/nothing").status == 404

    # NIC's file name; status and event.
    conf_d = os.path.join(c.settings.nginx.conf_dir, "conf.d")
    assert f"vs_{NS}_cafe.conf" in os.listdir(conf_d)
    st = wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")
    assert st["message"] == f"Configuration for {NS}/cafe was added or updated "
    env.wait_event("cafe", "AddedOrUpdated", kind="VirtualServer")

    # No status write when nothing changed: re-rendering after an endpoint change keeps the resourceVersion.
    before = env.kube.get(VIRTUALSERVERS, NS, "cafe")["metadata"]["resourceVersion"]
    env.endpoints("tea", [env.backend("tea-b")])
    c.wait_backend(CAFE, "/tea", "tea-b")
    c.wait_idle()
    assert env.kube.get(VIRTUALSERVERS, NS, "cafe")["metadata"]["resourceVersion"] == before


def test_endpoint_changes_reach_the_upstreams(env: Env, cafe: Controller) -> None:
    c = cafe
    env.endpoints("tea", [env.backend("tea-2")])
    c.wait_backend(CAFE, "/tea", "tea-2")
    # No endpoints: the upstream answers 502 (NIC's OSS behaviour), the other routes keep working.
    env.endpoints("tea", [])
    c.wait_status(CAFE, "/tea", 502)
    assert c.get(CAFE, "/coffee/x").backend == "coffee"
    env.endpoints("tea", [env.backend("tea-3")])
    c.wait_backend(CAFE, "/tea", "tea-3")


def test_an_invalid_virtualserver_is_rejected_and_harms_nothing_else(env: Env, cafe: Controller) -> None:
    c = cafe
    env.ingress("good", [rule("good.example.com", ("/", "tea"))])
    c.wait_backend("good.example.com", "/", "tea")
    bad = _cafe(routes=[{"path": "/tea", "action": {"pass": "missing"}},
                        {"path": "tea", "action": {"return": {"body": "x $host"}}}])
    apply_vs(env, bad)
    st = wait_vs_state(env, "cafe", "Invalid", "Rejected")
    assert st["message"].startswith(f"VirtualServer {NS}/cafe was rejected with error: [")
    assert 'spec.routes[0].action.pass: Unsupported value: "missing"' in st["message"]
    assert 'spec.routes[1].path: Invalid value: "tea": must start with /, ~, ^~ or =' in st["message"]
    assert "variables must be enclosed in curly braces" in st["message"]
    env.wait_event("cafe", "Rejected", "spec.routes[0].action.pass", kind="VirtualServer")
    # Its config is removed; the Ingress keeps serving.
    wait_until(lambda: c.get(CAFE, "/tea").status == 404, "the rejected VirtualServer no longer served")
    assert c.get("good.example.com", "/").backend == "tea"
    # Fixed again: served again.
    apply_vs(env, _cafe())
    c.wait_backend(CAFE, "/tea", "tea")
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")


def _a_second_after(obj: dict[str, Any]) -> None:
    """Creation times have whole seconds: wait until the next object is younger than `obj`."""
    created = datetime.datetime.fromisoformat(obj["metadata"]["creationTimestamp"])
    wait_until(lambda: datetime.datetime.now(datetime.UTC) - created >= datetime.timedelta(seconds=1.1),
               "a second passes", deadline=5)


def test_host_conflicts_with_an_ingress_in_both_arrival_orders(env: Env) -> None:
    install_crds(env)
    _backends(env, "tea", "web")
    # The Ingress first (older): it owns the host; the VirtualServer is rejected with a warning.
    web = env.ingress("web", [rule(CAFE, ("/", "web"))])
    c = env.controller()
    c.wait_backend(CAFE, "/", "web")
    _a_second_after(web)
    apply_vs(env, virtual_server("cafe", CAFE, upstreams=[{"name": "tea", "service": "tea", "port": 80}],
                                 routes=[{"path": "/", "action": {"pass": "tea"}}]))
    st = wait_vs_state(env, "cafe", "Warning", "Rejected")
    assert f"host {CAFE} by Ingress {NS}/web" in st["message"]
    c.wait_idle()
    assert c.get(CAFE, "/").backend == "web"
    # The Ingress goes: the VirtualServer takes the host.
    env.delete("ingresses", "web")
    c.wait_backend(CAFE, "/", "tea")
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")
    # A younger Ingress for the same host loses to the VirtualServer (the other arrival order).
    _a_second_after(env.kube.get(VIRTUALSERVERS, NS, "cafe"))
    env.ingress("late", [rule(CAFE, ("/", "web"))])
    env.wait_event("late", "Rejected", f"host {CAFE} by VirtualServer {NS}/cafe")
    c.wait_idle()
    assert c.get(CAFE, "/").backend == "tea"


def test_tls_with_redirect(env: Env) -> None:
    install_crds(env)
    _backends(env, "tea")
    cert = make_cert(CAFE)
    env.apply(tls_secret("cafe-tls", NS, cert.cert_pem, cert.key_pem))
    apply_vs(env, virtual_server("cafe", CAFE, upstreams=[{"name": "tea", "service": "tea", "port": 80}],
                                 routes=[{"path": "/", "action": {"pass": "tea"}}],
                                 tls={"secret": "cafe-tls", "redirect": {"enable": True, "code": 302}}))
    c = env.controller()
    wait_until(lambda: c.https(CAFE, "/x").backend == "tea", "TLS served")
    r = c.get(CAFE, "/x?a=1")
    assert (r.status, r.headers.get("location")) == (302, f"https://{CAFE}/x?a=1")
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")
    # A missing Secret: the VirtualServer still serves, handshakes are refused, state Warning.
    apply_vs(env, virtual_server("cafe", CAFE, upstreams=[{"name": "tea", "service": "tea", "port": 80}],
                                 routes=[{"path": "/", "action": {"pass": "tea"}}], tls={"secret": "nope"}))
    st = wait_vs_state(env, "cafe", "Warning", "AddedOrUpdatedWithWarning")
    assert "TLS secret nope is invalid" in st["message"]
    assert c.get(CAFE, "/").backend == "tea"


def test_splits_and_matches(env: Env) -> None:
    install_crds(env)
    _backends(env, "v1", "v2", "v3")
    ups = [{"name": n, "service": n, "port": 80} for n in ("v1", "v2", "v3")]
    apply_vs(env, virtual_server("app", "app.example.com", upstreams=ups, routes=[
        {"path": "/split", "splits": [{"weight": 80, "action": {"pass": "v1"}},
                                      {"weight": 20, "action": {"pass": "v2"}}]},
        {"path": "/match", "matches": [
            {"conditions": [{"header": "X-Version", "value": "2"}], "action": {"pass": "v2"}},
            {"conditions": [{"cookie": "flavour", "value": "~^choc"}, {"argument": "beta", "value": "!no"}],
             "action": {"pass": "v3"}},
            {"conditions": [{"variable": "$request_method", "value": "POST"}],
             "action": {"return": {"code": 200, "body": "posted"}}},
        ], "action": {"pass": "v1"}},
    ]))
    c = env.controller()
    c.wait_backend("app.example.com", "/match", "v1")
    counts = Counter(c.get("app.example.com", "/split").backend for _ in range(1000))
    print(f"split 80/20 over 1000 requests: {dict(sorted(counts.items()))}")
    # Within 5 percentage points of each weight (4 standard deviations of a 1000-request sample).
    assert set(counts) == {"v1", "v2"}, counts
    assert abs(counts["v1"] - 800) <= 50 and abs(counts["v2"] - 200) <= 50, counts
    port = c.http_port

    def get(path: str, **headers: str) -> str:
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request(headers.pop("method", "GET"), path, headers={"Host": "app.example.com", **headers})
            r = conn.getresponse()
            body = r.read().decode()
            return r.getheader("X-Backend") or body
        finally:
            conn.close()

    assert get("/match", **{"X-Version": "2"}) == "v2"
    assert get("/match", Cookie="flavour=chocolate") == "v3"
    assert get("/match?beta=no", Cookie="flavour=chocolate") == "v1"       # negated condition fails
    assert get("/match", Cookie="flavour=vanilla") == "v1"
    assert get("/match", method="POST") == "posted"
    # The backend sees the original URI in split and match locations.
    deep = http_get(port, "app.example.com", "/match/deep?q=1")
    assert deep.body == "v1 GET app.example.com/match/deep?q=1\n"
    wait_vs_state(env, "app", "Valid", "AddedOrUpdated")
    assert vs_status(env, "app")["externalEndpoints"] == []


def test_external_endpoints_carry_the_external_service_ports(env: Env) -> None:
    from tests.webhooks import Kubectl

    install_crds(env)
    _backends(env, "tea")
    env.apply({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "nginx-ingress", "namespace": "default"},
               "spec": {"type": "LoadBalancer", "externalIPs": ["5.6.7.8"], "ports": [
                   {"name": "http", "port": 80, "targetPort": 80},
                   {"name": "https", "port": 443, "targetPort": "https"},
                   {"name": "metrics", "port": 9113, "targetPort": 9113}]}})
    apply_vs(env, virtual_server("shop", "shop.example.com", upstreams=[{"name": "tea", "service": "tea",
                                                                         "port": 80}],
                                 routes=[{"path": "/", "action": {"pass": "tea"}}]))
    env.controller(external_service="nginx-ingress")
    expected = [{"ip": "5.6.7.8", "ports": "[80,443]"}]
    wait_until(lambda: vs_status(env, "shop").get("externalEndpoints") == expected, "the ports")
    table = Kubectl(env.kubeconfig, env.tmp).run("get", "vs", "-n", NS, "shop")
    assert table.returncode == 0, table.stderr
    header, row = table.stdout.splitlines()
    assert header.split() == ["NAME", "STATE", "HOST", "IP", "PORTS", "AGE"]
    assert row.split()[:5] == ["shop", "Valid", "shop.example.com", "5.6.7.8", "[80,443]"]


def test_external_endpoints_follow_the_external_service(env: Env) -> None:
    """Without --report-ingress-status too: custom-resource status needs only leadership (NIC)."""
    install_crds(env)
    _backends(env, "tea")

    def external(ip: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "nginx-ingress", "namespace": "default"},
                "spec": {"type": "LoadBalancer", "externalIPs": [ip],
                         "ports": [{"name": "http", "port": 80, "targetPort": 80}]}}

    env.apply(external("5.6.7.8"))
    apply_vs(env, virtual_server("shop", "shop.example.com", upstreams=[{"name": "tea", "service": "tea",
                                                                         "port": 80}],
                                 routes=[{"path": "/", "action": {"pass": "tea"}}]))
    c = env.controller(external_service="nginx-ingress", report_ingress_status=False)
    def endpoints() -> Any:
        return vs_status(env, "shop").get("externalEndpoints")

    wait_until(lambda: endpoints() == [{"ip": "5.6.7.8", "ports": "[80]"}], "the first address")
    env.apply(external("9.9.9.9"))
    wait_until(lambda: endpoints() == [{"ip": "9.9.9.9", "ports": "[80]"}], "the new address")
    assert vs_status(env, "shop")["state"] == "Valid"
    assert c.get("shop.example.com", "/").backend == "tea"
