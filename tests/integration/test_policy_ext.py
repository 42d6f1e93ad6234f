"""The policy types ingressMTLS, egressMTLS, cache, cors and externalAuth end to end through devcluster and a
real NGINX, on VirtualServer spec and route and on VirtualServerRoute subroutes: client-certificate TLS with a
good, a missing, a revoked and a foreign certificate; mTLS to an HTTPS backend; cache hits counted at the
backend; CORS preflight and simple requests for exact and wildcard origins; externalAuth allowing and
denying, following its auth Service's endpoints; and each fail-closed 500 with its Warning."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.helpers import make_cert, wait_until
from tests.integration.harness import NS, Env
from tests.integration.policy_helpers import apply_policy, policy, policy_env, wait_policy_state
from tests.integration.policy_servers import GOOD_TOKEN, AuthService, MTLSBackend, call
from tests.integration.test_policy import HOST, WEB
from tests.integration.vs_helpers import (
    apply_vs,
    apply_vsr,
    virtual_server,
    virtual_server_route,
    wait_vs_state,
)
from tests.pki import CA, ca_secret, tls_secret

pytestmark = pytest.mark.integration


def _route(path: str, *names: str, upstream: str = "web") -> dict[str, Any]:
    route: dict[str, Any] = {"path": path, "action": {"pass": upstream}}
    if names:
        route["policies"] = [{"name": n} for n in names]
    return route


def _refs(*names: str) -> list[dict[str, str]]:
    return [{"name": n} for n in names]


def test_ingress_mtls_good_missing_revoked_and_foreign_client_certificates(env: Env) -> None:
    policy_env(env)
    ca, other = CA("client-ca"), CA("someone-else")
    good, revoked, foreign = ca.issue("good"), ca.issue("revoked"), other.issue("good")
    env.apply(make_cert(HOST).secret("cafe-tls", NS))
    env.apply(ca_secret("client-ca", NS, ca, crl=ca.crl_pem(revoked)))
    apply_policy(env, policy("mtls", ingressMTLS={"clientCertSecret": "client-ca", "verifyDepth": 1}))
    apply_policy(env, policy("optional", ingressMTLS={"clientCertSecret": "client-ca",
                                                      "verifyClient": "optional"}))
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, routes=[_route("/")],
                                 tls={"secret": "cafe-tls"}, policies=_refs("mtls")))
    # Not allowed on a route (NIC: 500 there), nor without TLS (500 for the whole server).
    apply_vs(env, virtual_server("route-level", "route.example.com", upstreams=WEB,
                                 routes=[_route("/mtls", "mtls"), _route("/open")]))
    apply_vs(env, virtual_server("no-tls", "notls.example.com", upstreams=WEB, routes=[_route("/")],
                                 policies=_refs("mtls")))
    apply_vs(env, virtual_server("opt", "opt.example.com", upstreams=WEB, routes=[_route("/")],
                                 tls={"secret": "cafe-tls"}, policies=_refs("optional")))
    c = env.controller()
    wait_until(lambda: call(c.https_port, HOST, "/", tls=True, client=good).status == 200, "mTLS served")
    assert call(c.https_port, HOST, "/", tls=True, client=good).backend == "web"
    assert call(c.https_port, HOST, "/", tls=True).status == 400                    # no certificate
    assert call(c.https_port, HOST, "/", tls=True, client=foreign).status == 400    # another CA's
    assert call(c.https_port, HOST, "/", tls=True, client=revoked).status == 400    # in the CRL
    assert call(c.http_port, HOST, "/").status == 400          # plain HTTP cannot bypass the policy
    assert call(c.https_port, "opt.example.com", "/", tls=True).status == 200   # optional: no certificate
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")
    assert call(c.http_port, "route.example.com", "/mtls").status == 500
    assert call(c.http_port, "route.example.com", "/open").status == 200
    st = wait_vs_state(env, "route-level", "Warning", "AddedOrUpdatedWithWarning")
    assert f"IngressMTLS policy {NS}/mtls is not allowed in the route context" in st["message"]
    assert call(c.http_port, "notls.example.com", "/").status == 500
    st = wait_vs_state(env, "no-tls", "Warning", "AddedOrUpdatedWithWarning")
    assert f"TLS must be enabled in VirtualServer for IngressMTLS policy {NS}/mtls" in st["message"]
    wait_policy_state(env, "mtls", "Valid")
    # A new CRL in the Secret revokes the good certificate too, without touching the Policy.
    env.apply(ca_secret("client-ca", NS, ca, crl=ca.crl_pem(revoked, good)))
    wait_until(lambda: call(c.https_port, HOST, "/", tls=True, client=good).status == 400, "CRL updated")
    # A CA Secret of the wrong type fails the server closed with NIC's message.
    env.delete("secrets", "client-ca")
    env.apply({**ca_secret("client-ca", NS, ca), "type": "Opaque"})
    wait_until(lambda: call(c.https_port, HOST, "/", tls=True, client=good).status == 500, "fails closed")
    st = wait_vs_state(env, "cafe", "Warning", "AddedOrUpdatedWithWarning")
    assert f"IngressMTLS secret {NS}/client-ca is invalid" in st["message"]


def test_egress_mtls_to_an_https_backend(env: Env) -> None:
    policy_env(env)
    backend_ca, client_ca = CA("backend-ca"), CA("client-ca")
    backend = MTLSBackend("secure", backend_ca.issue("backend.internal", server=True,
                                                     dns=("backend.internal",)), client_ca).start()
    env.backends.append(backend)    # type: ignore[arg-type]  (stopped with the others)
    env.service("secure", port=443, port_name="https", target_port=443)
    env.endpoints("secure", [backend], port_name="https")   # type: ignore[list-item]
    env.apply(tls_secret("egress-client", NS, client_ca.issue("ingressctl")))
    env.apply(ca_secret("backend-ca", NS, backend_ca))
    apply_policy(env, policy("to-backend", egressMTLS={
        "tlsSecret": "egress-client", "trustedCertSecret": "backend-ca", "verifyServer": True,
        "serverName": True, "sslName": "backend.internal", "protocols": "TLSv1.2 TLSv1.3"}))
    apply_policy(env, policy("wrong-name", egressMTLS={
        "tlsSecret": "egress-client", "trustedCertSecret": "backend-ca", "verifyServer": True,
        "sslName": "other.internal"}))
    secure = [*WEB, {"name": "secure", "service": "secure", "port": 443, "tls": {"enable": True}}]
    apply_vs(env, virtual_server("cafe", HOST, upstreams=secure, routes=[
        _route("/mtls", "to-backend", upstream="secure"), _route("/nocert", upstream="secure"),
        _route("/badname", "wrong-name", upstream="secure"), _route("/open")]))
    c = env.controller()
    c.wait_backend(HOST, "/open", "web")
    r = wait_until(lambda: (r := call(c.http_port, HOST, "/mtls")).status == 200 and r, "egress mTLS")
    assert r.body == "mtls ingressctl\n"                       # the backend saw our client certificate
    assert call(c.http_port, HOST, "/nocert").status == 502    # no client certificate: handshake refused
    assert call(c.http_port, HOST, "/badname").status == 502   # the backend's name is verified
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")


def test_cache_and_cors_on_spec_route_and_subroute(env: Env) -> None:
    policy_env(env)
    c_run = env.settings().nginx.run_dir   # 0700: the controller lets the workers write the cache under it
    web = env.backends[0]
    apply_policy(env, policy("cache", cache={"cacheZoneName": "menu", "cacheZoneSize": "1m", "time": "10m",
                                             "allowedCodes": [200], "levels": "1:2", "inactive": "1h",
                                             "cacheKey": "$scheme$host$request_uri"}))
    apply_policy(env, policy("exact", cors={"allowOrigin": ["https://app.example.com"],
                                            "allowMethods": ["GET", "POST"], "allowHeaders": ["X-Token"],
                                            "allowCredentials": True, "maxAge": 600}))
    apply_policy(env, policy("wild", cors={"allowOrigin": ["https://www.example.com", "https://*.example.org"],
                                           "exposeHeaders": ["X-Backend"]}))
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, policies=_refs("wild"), routes=[
        _route("/cached", "cache"), _route("/fresh"), _route("/exact", "exact"),
        {"path": "/vsr", "route": f"{NS}/sub"}]))
    apply_vsr(env, virtual_server_route("sub", HOST, NS, upstreams=WEB, subroutes=[
        {"path": "/vsr/cached", "action": {"pass": "web"}, "policies": _refs("cache", "exact")}]))
    settings = env.settings(run_dir=c_run)
    c = env.controller(settings)
    c.wait_backend(HOST, "/fresh", "web")
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")
    # Cache: the second request of a cached route never reaches the backend.
    for path in ("/cached/a", "/vsr/cached/b"):
        before = web.hits
        assert [call(c.http_port, HOST, path).backend for _ in range(3)] == ["web"] * 3
        assert web.hits == before + 1, path
    before = web.hits
    for _ in range(3):
        call(c.http_port, HOST, "/fresh")
    assert web.hits == before + 3
    assert os.path.isdir(os.path.join(c_run, "cache", f"{NS}_cafe_vs_menu"))
    assert os.path.isdir(os.path.join(c_run, "cache", f"{NS}_cafe_vs_{NS}_sub_menu"))
    # CORS, exact origin (route and subroute): preflight answered by NGINX, simple requests get the headers.
    for path in ("/exact", "/vsr/cached/c"):
        pre = call(c.http_port, HOST, path, method="OPTIONS", headers={
            "Origin": "https://app.example.com", "Access-Control-Request-Method": "POST"})
        assert pre.status == 204 and pre.backend == "", path
        assert pre.headers["access-control-allow-origin"] == "https://app.example.com"
        assert pre.headers["access-control-allow-methods"] == "GET, POST"
        assert pre.headers["access-control-allow-headers"] == "X-Token"
        assert pre.headers["access-control-allow-credentials"] == "true"
        assert pre.headers["access-control-max-age"] == "600"
        simple = call(c.http_port, HOST, path, headers={"Origin": "https://app.example.com"})
        assert simple.backend == "web" and simple.headers["access-control-allow-origin"] == \
            "https://app.example.com" and simple.headers["vary"] == "Origin"
    # Wildcard origins from the spec policy reach the routes without a CORS policy of their own.
    for origin, allowed in (("https://www.example.com", True), ("https://shop.example.org", True),
                            ("https://a.b.example.org", False), ("https://evil.com", False)):
        r = call(c.http_port, HOST, "/fresh", headers={"Origin": origin})
        assert r.backend == "web"
        assert r.headers.get("access-control-allow-origin") == (origin if allowed else None), origin
        assert r.headers.get("access-control-expose-headers") == "X-Backend"
    pre = call(c.http_port, HOST, "/cached/x", method="OPTIONS", headers={"Origin": "https://x.example.org"})
    assert pre.status == 204 and pre.headers["access-control-allow-origin"] == "https://x.example.org"
    # The exact route's own CORS wins over the spec's.
    r = call(c.http_port, HOST, "/exact", headers={"Origin": "https://www.example.com"})
    assert r.headers["access-control-allow-origin"] == "https://app.example.com"


def _auth(env: Env, name: str) -> AuthService:
    svc = AuthService(name).start()
    env.backends.append(svc)                  # type: ignore[arg-type]  (stopped with the others)
    return svc


def test_external_auth_allows_denies_and_follows_the_auth_service(env: Env) -> None:
    policy_env(env)
    auth = _auth(env, "auth-1")
    env.service("auth", port=8080, target_port=8080)
    env.endpoints("auth", [auth])             # type: ignore[list-item]
    apply_policy(env, policy("ext", externalAuth={"authURI": "/check", "authServiceName": "auth",
                                                  "authServicePorts": [8080]}))
    apply_policy(env, policy("signin", externalAuth={
        "authURI": "/verify", "authServiceName": f"{NS}/auth", "authServicePorts": [8080],
        "authSigninURI": "https://login.example.com/start?rd=$request_uri"}))
    apply_vs(env, virtual_server("spec", "spec.example.com", upstreams=WEB, routes=[_route("/")],
                                 policies=_refs("ext")))
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, routes=[
        _route("/private", "ext"), _route("/login", "signin"), _route("/open"),
        {"path": "/vsr", "route": "sub"}]))
    apply_vsr(env, virtual_server_route("sub", HOST, NS, upstreams=WEB, subroutes=[
        {"path": "/vsr/private", "action": {"pass": "web"}, "policies": _refs("ext")}]))
    c = env.controller()
    c.wait_backend(HOST, "/open", "web")
    token = {"Authorization": GOOD_TOKEN}
    for host, path in (("spec.example.com", "/anything"), (HOST, "/private"), (HOST, "/vsr/private/x")):
        assert call(c.http_port, host, path).status == 401, path
        assert call(c.http_port, host, path, headers={"Authorization": "Bearer nope"}).status == 401
        assert call(c.http_port, host, path, headers=token).backend == "web", path
    seen = auth.seen[-1]
    assert (seen["path"], seen["x-original-uri"], seen["host"]) == ("/check", "/vsr/private/x", HOST)
    assert call(c.http_port, HOST, "/open").status == 200
    r = call(c.http_port, HOST, "/login")
    assert (r.status, r.headers["location"]) == (302, "https://login.example.com/start?rd=/login")
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")
    # The auth Service moves to another endpoint: the users re-render and follow it.
    moved = _auth(env, "auth-2")
    env.endpoints("auth", [moved])            # type: ignore[list-item]
    wait_until(lambda: call(c.http_port, HOST, "/private", headers=token).status == 200 and moved.seen,
               "auth requests reach the new endpoint")
    auth.stop()
    assert call(c.http_port, "spec.example.com", "/", headers=token).status == 200
    # No endpoints at all: fail closed (500), never unauthenticated.
    env.endpoints("auth", [])
    wait_until(lambda: call(c.http_port, HOST, "/private", headers=token).status == 500, "auth down: 500")


def test_invalid_policies_of_the_new_types_are_rejected(env: Env) -> None:
    policy_env(env)
    apply_policy(env, policy("bad-cors", cors={"allowOrigin": ["https://a.com/path"]}))
    apply_policy(env, policy("bad-cache", cache={"cacheZoneName": "c", "cacheZoneSize": "1m",
                                                 "cacheKey": "$host;return 200"}))
    apply_policy(env, policy("snippets", externalAuth={"authURI": "/a", "authServiceName": "auth",
                                                       "authSnippets": "return 200;"}))
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, routes=[
        _route("/cors", "bad-cors"), _route("/cache", "bad-cache"), _route("/open")]))
    c = env.controller()
    c.wait_backend(HOST, "/open", "web")
    st = wait_policy_state(env, "bad-cors", "Invalid")
    assert 'spec.cors.allowOrigin[0]: Invalid value: "https://a.com/path"' in st["message"]
    st = wait_policy_state(env, "bad-cache", "Invalid")
    assert "spec.cache.cacheKey: Invalid value: \"$host;return 200\": must not contain ';'" in st["message"]
    st = wait_policy_state(env, "snippets", "Invalid")
    assert "spec.externalAuth.authSnippets: Forbidden: snippets are not enabled" in st["message"]
    assert call(c.http_port, HOST, "/cors").status == 500
    assert call(c.http_port, HOST, "/cache").status == 500
    wait_vs_state(env, "cafe", "Warning", "AddedOrUpdatedWithWarning", f"Policy {NS}/bad-cors is missing")


def test_a_crl_file_nginx_cannot_read_fails_only_that_virtual_server(env: Env) -> None:
    """`crlFileName` names a file the controller does not manage: when it is absent, NGINX refuses that
    VirtualServer (AddedOrUpdatedWithError event and Invalid status with NGINX's message) and the rest
    keeps serving."""
    policy_env(env)
    ca = CA("client-ca")
    env.apply(make_cert(HOST).secret("cafe-tls", NS))
    env.apply(ca_secret("client-ca", NS, ca))
    apply_vs(env, virtual_server("other", "other.example.com", upstreams=WEB, routes=[_route("/")]))
    c = env.controller()
    c.wait_backend("other.example.com", "/", "web")
    apply_policy(env, policy("mtls", ingressMTLS={"clientCertSecret": "client-ca",
                                                  "crlFileName": "not-there.crl"}))
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, routes=[_route("/")],
                                 tls={"secret": "cafe-tls"}, policies=_refs("mtls")))
    env.wait_event("cafe", "AddedOrUpdatedWithError", "not-there.crl", kind="VirtualServer")
    wait_vs_state(env, "cafe", "Invalid", "AddedOrUpdatedWithError", "not-there.crl")
    assert c.get("other.example.com", "/").backend == "web"
