"""Two CORS Policies on one VirtualServer, one at `spec.policies` (three literal origins) and one on a route
(a wildcard and a literal origin), applied with kubectl from one multi-document file in the form NIC 5.5's
custom-resources/cors example publishes (comments, `---`): both origin maps load, each route answers
preflights and simple requests with its own policy's headers, the wildcard matches on its route only, and
an origin no policy allows gets no Access-Control-Allow-Origin. The same two policies on a mergeable
Ingress master and one of its minions."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingressctl.kinds.virtualserver.kind import VIRTUALSERVERS
from tests.integration.harness import NS, Env, rule
from tests.integration.policy_helpers import policy_env, wait_policy_state
from tests.integration.policy_servers import Response, call
from tests.integration.vs_helpers import wait_vs_state
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration

MANIFESTS = Path(__file__).parent / "data" / "cors-two-levels.yaml"
HOST = "webapp.example.com"
SPEC_HEADERS = {
    "access-control-allow-methods": "GET, POST, PUT, DELETE, OPTIONS",
    "access-control-allow-headers": "Content-Type, Authorization, X-Requested-With, X-API-Key",
    "access-control-allow-credentials": "true",
    "access-control-expose-headers": "X-Total-Count, X-Page-Size, X-RateLimit-Remaining, X-RateLimit-Reset",
    "access-control-max-age": "3600",
    "vary": "Origin",
}
ROUTE_HEADERS = {
    "access-control-allow-methods": "GET, POST, PUT, OPTIONS",
    "access-control-allow-headers": "Content-Type, Authorization, X-Requested-With",
    "access-control-allow-credentials": "true",
    "access-control-expose-headers": "X-Total-Count, X-Page-Size",
    "access-control-max-age": "86400",
    "vary": "Origin",
}


def _preflight(port: int, path: str, origin: str) -> Response:
    return call(port, HOST, path, method="OPTIONS", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "Content-Type"})


def _assert_cors(r: Response, expected: dict[str, str], origin: str | None, what: str) -> None:
    assert {k: r.headers.get(k) for k in expected} == expected, what
    assert r.headers.get("access-control-allow-origin") == origin, what


def test_cors_policies_on_the_virtual_server_and_on_a_route_from_published_manifests(env: Env) -> None:
    policy_env(env)
    env.service("webapp-svc")
    env.endpoints("webapp-svc", [env.backend("webapp")])
    applied = Kubectl(env.kubeconfig, env.tmp).run("apply", "-n", NS, "-f", str(MANIFESTS))
    assert applied.returncode == 0, applied.stderr
    c = env.controller()
    for name in ("cors-policy", "wildcard-cors-policy"):
        wait_policy_state(env, name, "Valid")
    wait_vs_state(env, "webapp", "Valid", "AddedOrUpdated")
    c.wait_backend(HOST, "/test", "webapp")
    port = c.http_port
    # /test: the spec policy's three literal origins.
    for origin, allowed in (("https://app.example.com", True), ("https://example.com", True),
                            ("https://admin.example.com", True), ("https://shop.example.com", False),
                            ("https://evil.com", False)):
        pre = _preflight(port, "/test/", origin)
        assert (pre.status, pre.backend, pre.body) == (204, "", ""), origin
        _assert_cors(pre, SPEC_HEADERS, origin if allowed else None, f"preflight /test {origin}")
        post = call(port, HOST, "/test/", method="POST", headers={"Origin": origin})
        assert post.backend == "webapp", origin
        _assert_cors(post, SPEC_HEADERS, origin if allowed else None, f"POST /test {origin}")
    # /prod: the route's wildcard policy replaces the spec's; one subdomain level only.
    for origin, allowed in (("https://example.com", False), ("https://app.example.com", True),
                            ("https://test.example.com", True), ("https://shop.example.com", True),
                            ("https://a.b.example.com", False), ("http://shop.example.com", False),
                            ("https://shop.example.com.evil.com", False),
                            ("https://admin.example.org", False)):
        pre = _preflight(port, "/prod/", origin)
        assert (pre.status, pre.backend) == (204, ""), origin
        _assert_cors(pre, ROUTE_HEADERS, origin if allowed else None, f"preflight /prod {origin}")
        get = call(port, HOST, "/prod/", headers={"Origin": origin})
        assert get.backend == "webapp", origin
        _assert_cors(get, ROUTE_HEADERS, origin if allowed else None, f"GET /prod {origin}")


def test_cors_policies_on_a_mergeable_master_and_its_minion(env: Env) -> None:
    """The same two policies on the Ingress side: the master's (three origins) for the server, the minion's
    (wildcard) on its paths; both maps are in the master's file."""
    policy_env(env)
    env.service("webapp-svc")
    env.endpoints("webapp-svc", [env.backend("webapp")])
    applied = Kubectl(env.kubeconfig, env.tmp).run("apply", "-n", NS, "-f", str(MANIFESTS))
    assert applied.returncode == 0, applied.stderr
    env.kube.delete(VIRTUALSERVERS, NS, "webapp")
    host = "ing.example.com"
    env.ingress("master", [{"host": host}], annotations={
        "nginx.org/mergeable-ingress-type": "master", "nginx.org/policies": "cors-policy"})
    for name, path, extra in (("test", "/test", {}),
                              ("prod", "/prod", {"nginx.org/policies": "wildcard-cors-policy"})):
        env.ingress(name, [rule(host, (path, "webapp-svc"))],
                    annotations={"nginx.org/mergeable-ingress-type": "minion", **extra})
    c = env.controller()
    c.wait_backend(host, "/prod", "webapp")
    pre = call(c.http_port, host, "/test", method="OPTIONS", headers={"Origin": "https://admin.example.com"})
    assert pre.status == 204 and pre.headers.get("access-control-allow-origin") == "https://admin.example.com"
    assert pre.headers["access-control-max-age"] == "3600"
    pre = call(c.http_port, host, "/prod", method="OPTIONS", headers={"Origin": "https://shop.example.com"})
    assert pre.status == 204 and pre.headers.get("access-control-allow-origin") == "https://shop.example.com"
    assert pre.headers["access-control-max-age"] == "86400"
    r = call(c.http_port, host, "/prod", headers={"Origin": "https://example.com"})
    assert r.backend == "webapp" and "access-control-allow-origin" not in r.headers
