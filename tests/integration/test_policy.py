"""Policies end to end through devcluster and a real NGINX: accessControl (clients 127.0.0.1 and
127.0.0.2), rateLimit bursts answered with the reject code, basicAuth, apiKey in a header and in the query,
jwt (NGINX Plus: 500 and Warning), Policy status and events, a missing or invalid policy giving 500 on its
route only with a Warning, and changes re-rendering exactly the resources that use the Policy or its
Secret."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingressctl.keys import ResourceKey
from tests.helpers import http_get, wait_until
from tests.integration.harness import NS, Controller, Env, rule
from tests.integration.policy_helpers import (
    apikey_secret,
    apply_policy,
    basic,
    delete_policy,
    htpasswd_secret,
    policy,
    policy_env,
    policy_status,
    spy_renders,
    wait_policy_state,
)
from tests.integration.vs_helpers import apply_vs, virtual_server, vs_status, wait_vs_state

pytestmark = pytest.mark.integration

HOST = "cafe.example.com"
WEB = [{"name": "web", "service": "web", "port": 80}]


def _route(path: str, *names: str) -> dict[str, Any]:
    route: dict[str, Any] = {"path": path, "action": {"pass": "web"}}
    if names:
        route["policies"] = [{"name": n} for n in names]
    return route


def _status(c: Controller, path: str, source: str = "127.0.0.1", host: str = HOST,
            headers: dict[str, str] | None = None) -> int:
    return http_get(c.http_port, host, path, source=source, headers=headers).status


def test_access_control_allows_and_denies_clients(env: Env) -> None:
    policy_env(env)
    apply_policy(env, policy("allow-one", accessControl={"allow": ["127.0.0.1"]}))
    apply_policy(env, policy("deny-two", accessControl={"deny": ["127.0.0.2/32"]}))
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, routes=[
        _route("/allow", "allow-one"), _route("/deny", "deny-two"), _route("/open")]))
    c = env.controller()
    c.wait_backend(HOST, "/open", "web")
    assert [_status(c, p, "127.0.0.1") for p in ("/allow", "/deny", "/open")] == [200, 200, 200]
    assert [_status(c, p, "127.0.0.2") for p in ("/allow", "/deny", "/open")] == [403, 403, 200]
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")
    st = wait_policy_state(env, "allow-one", "Valid")
    assert (st["reason"], st["message"]) == ("AddedOrUpdated", f"Policy {NS}/allow-one was added or updated")
    assert "externalEndpoints" not in st
    env.wait_event("allow-one", "AddedOrUpdated", "was added or updated", kind="Policy")


def test_rate_limit_rejects_bursts_with_the_reject_code(env: Env) -> None:
    policy_env(env)
    # One request a minute per client with a burst of 1 and nodelay: the third quick request is rejected.
    apply_policy(env, policy("slow", rateLimit={"rate": "1r/m", "key": "${binary_remote_addr}",
                                                "zoneSize": "1m", "burst": 1, "noDelay": True,
                                                "rejectCode": 429}))
    apply_policy(env, policy("dry", rateLimit={"rate": "1r/m", "key": "${binary_remote_addr}${uri}",
                                       "zoneSize": "1m", "dryRun": True, "logLevel": "info"}))
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, routes=[
        _route("/limited", "slow"), _route("/dry", "dry"), _route("/open")]))
    c = env.controller()
    c.wait_backend(HOST, "/open", "web")
    assert [_status(c, "/limited") for _ in range(3)] == [200, 200, 429]
    assert _status(c, "/limited", "127.0.0.2") == 200          # the key is the client address
    assert [_status(c, "/dry") for _ in range(4)] == [200] * 4   # dry run: counted, never rejected
    assert [_status(c, "/open") for _ in range(5)] == [200] * 5
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")


def test_basic_auth_and_secret_types(env: Env) -> None:
    policy_env(env)
    env.apply(htpasswd_secret("users", {"alice": "wonder"}))
    apply_policy(env, policy("auth", basicAuth={"secret": "users", "realm": "Cafe staff"}))
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, routes=[_route("/staff", "auth"),
                                                                    _route("/open")]))
    c = env.controller()
    c.wait_backend(HOST, "/open", "web")
    r = http_get(c.http_port, HOST, "/staff")
    assert (r.status, r.headers.get("www-authenticate")) == (401, 'Basic realm="Cafe staff"')
    assert _status(c, "/staff", headers=basic("alice", "wrong")) == 401
    assert http_get(c.http_port, HOST, "/staff", headers=basic("alice", "wonder")).backend == "web"
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")
    # A new password in the Secret applies without touching the VirtualServer.
    env.apply(htpasswd_secret("users", {"alice": "changed"}))
    wait_until(lambda: _status(c, "/staff", headers=basic("alice", "changed")) == 200, "new password")
    assert _status(c, "/staff", headers=basic("alice", "wonder")) == 401
    # A Secret of the wrong type: the route fails closed with NIC's message; the other route still works.
    env.delete("secrets", "users")
    env.apply(htpasswd_secret("users", {"alice": "changed"}, secret_type="Opaque"))
    c.wait_status(HOST, "/staff", 500)
    assert _status(c, "/open") == 200
    st = wait_vs_state(env, "cafe", "Warning", "AddedOrUpdatedWithWarning", "Basic Auth secret")
    assert f"Basic Auth secret {NS}/users is invalid: secret doesn't exist or of an unsupported type" \
        in st["message"]


def test_api_key_in_header_and_query(env: Env) -> None:
    policy_env(env)
    env.apply(apikey_secret("keys", {"client-a": "S3cret-Key", "client-b": 'odd "key" $x;{}'}))
    apply_policy(env, policy("api", apiKey={"suppliedIn": {"header": ["X-API-Key"], "query": ["apikey"]},
                                    "clientSecret": "keys"}))
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, routes=[_route("/api", "api"),
                                                                    _route("/open")]))
    c = env.controller()
    c.wait_backend(HOST, "/open", "web")
    assert _status(c, "/api") == 401                                          # no key
    assert _status(c, "/api", headers={"X-API-Key": "wrong"}) == 403          # unknown key
    assert _status(c, "/api", headers={"X-API-Key": "s3cret-key"}) == 403     # keys are case-sensitive
    assert _status(c, "/api", headers={"X-API-Key": "S3cret-Key"}) == 200
    assert _status(c, "/api", headers={"X-API-Key": 'odd "key" $x;{}'}) == 200
    assert _status(c, "/api?apikey=S3cret-Key") == 200
    assert _status(c, "/api?apikey=S3cret-Key-not") == 403
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")
    # The keys never appear in the VirtualServer's file.
    conf = (Path(c.settings.nginx.conf_dir) / "conf.d" / f"vs_{NS}_cafe.conf").read_text()
    assert "S3cret" not in conf and "apikey_auth_" in conf


def test_jwt_requires_nginx_plus_and_fails_closed(env: Env) -> None:
    policy_env(env)
    apply_policy(env, policy("jwt", jwt={"realm": "api", "secret": "jwk"}))
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, routes=[_route("/jwt", "jwt"),
                                                                    _route("/open")]))
    c = env.controller()
    c.wait_backend(HOST, "/open", "web")
    assert _status(c, "/jwt") == 500
    wait_policy_state(env, "jwt", "Valid")
    st = wait_vs_state(env, "cafe", "Warning", "AddedOrUpdatedWithWarning")
    assert f"JWT policy {NS}/jwt requires NGINX Plus" in st["message"]


def test_missing_then_created_then_invalid_policy(env: Env) -> None:
    policy_env(env)
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, routes=[_route("/secure", "later"),
                                                                    _route("/open")]))
    c = env.controller()
    c.wait_backend(HOST, "/open", "web")
    assert _status(c, "/secure") == 500                  # only that route
    st = wait_vs_state(env, "cafe", "Warning", "AddedOrUpdatedWithWarning")
    # NIC's wording: the configurator's warnings follow "; with warning(s): ".
    assert st["message"] == (f"Configuration for {NS}/cafe was added or updated ; with warning(s): "
                             f"Policy {NS}/later is missing or invalid")
    apply_policy(env, policy("later", accessControl={"allow": ["127.0.0.2"]}))
    c.wait_status(HOST, "/secure", 403)
    assert _status(c, "/secure", "127.0.0.2") == 200
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")
    # Invalid (the CRD lets it through; the controller rejects it): Invalid status, the route answers 500.
    apply_policy(env, policy("later", accessControl={"allow": ["not-an-ip"]}))
    st = wait_policy_state(env, "later", "Invalid")
    assert (st["reason"], st["message"]) == ("Rejected", f"Policy {NS}/later is invalid and was rejected: "
                                             'spec.accessControl.allow[0]: Invalid value: "not-an-ip": must '
                                             "be a CIDR or IP")
    env.wait_event("later", "Rejected", "is invalid and was rejected", kind="Policy")
    c.wait_status(HOST, "/secure", 500)
    assert _status(c, "/open") == 200
    wait_vs_state(env, "cafe", "Warning", "AddedOrUpdatedWithWarning", f"Policy {NS}/later is missing")
    # Deleted: the route keeps failing closed; the Policy gets no event.
    apply_policy(env, policy("later", accessControl={"allow": ["127.0.0.1"]}))
    c.wait_status(HOST, "/secure", 200)
    delete_policy(env, "later")
    c.wait_status(HOST, "/secure", 500)


def test_changes_re_render_exactly_the_users(env: Env) -> None:
    policy_env(env)
    env.apply(htpasswd_secret("users", {"alice": "wonder"}))
    apply_policy(env, policy("auth", basicAuth={"secret": "users"}))
    apply_policy(env, policy("local", accessControl={"allow": ["127.0.0.1"]}))
    apply_vs(env, virtual_server("uses-auth", "a.example.com", upstreams=WEB, routes=[_route("/", "auth")]))
    apply_vs(env, virtual_server("uses-local", "b.example.com", upstreams=WEB, routes=[_route("/", "local")]))
    apply_vs(env, virtual_server("plain", "c.example.com", upstreams=WEB, routes=[_route("/")]))
    c = env.controller()
    c.wait_backend("c.example.com", "/", "web")
    c.wait_idle()
    rendered = spy_renders(c)
    apply_policy(env, policy("local", accessControl={"allow": ["127.0.0.2"]}))
    wait_until(lambda: _status(c, "/", host="b.example.com") == 403, "policy change applied")
    c.wait_idle()
    assert rendered == [ResourceKey("virtualserver", f"{NS}/uses-local")]
    rendered.clear()
    env.apply(htpasswd_secret("users", {"alice": "other"}))
    wait_until(lambda: _status(c, "/", host="a.example.com", headers=basic("alice", "other")) == 200,
               "secret change applied")
    c.wait_idle()
    assert rendered == [ResourceKey("virtualserver", f"{NS}/uses-auth")]
    # A status write only when something changed: re-applying the same spec writes nothing.
    before = policy_status(env, "local")
    writes = c.lbc.kinds["policy"].status.writes
    apply_policy(env, policy("local", accessControl={"allow": ["127.0.0.2"]}))
    c.wait_idle()
    assert c.lbc.kinds["policy"].status.writes == writes and policy_status(env, "local") == before
    assert vs_status(env, "plain")["state"] == "Valid"


def _controller_slice(env: Env, ready: int) -> None:
    env.apply({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": "ingressctl-x", "namespace": "default",
                            "labels": {"kubernetes.io/service-name": "ingressctl"}},
               "addressType": "IPv4", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
               "endpoints": [*({"addresses": [f"10.0.0.{i + 1}"], "conditions": {"ready": True}}
                               for i in range(ready)),
                             {"addresses": ["10.0.1.1"], "conditions": {"ready": False}}]})


def test_rate_limit_scale_follows_the_controller_replicas(env: Env) -> None:
    policy_env(env)
    _controller_slice(env, 2)
    apply_policy(env, policy("scaled", rateLimit={"rate": "10r/s", "key": "${binary_remote_addr}",
                                                  "zoneSize": "1m", "scale": True}))
    apply_policy(env, policy("fixed", rateLimit={"rate": "10r/s", "key": "${uri}", "zoneSize": "1m"}))
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, routes=[_route("/s", "scaled"),
                                                                    _route("/f", "fixed")]))
    apply_vs(env, virtual_server("other", "other.example.com", upstreams=WEB, routes=[_route("/", "fixed")]))
    env.ingress("limited", [rule("ing.example.com", ("/", "web"))],
                annotations={"nginx.org/limit-req-rate": "10r/s", "nginx.org/limit-req-scale": "true"})
    c = env.controller(external_service="ingressctl")
    c.wait_backend(HOST, "/s", "web")
    conf = Path(c.settings.nginx.conf_dir) / "conf.d" / f"vs_{NS}_cafe.conf"
    assert f"zone=pol_rl_{NS}_scaled_{NS}_cafe:1m rate=5r/s;" in conf.read_text()   # 2 ready replicas
    assert f"zone=pol_rl_{NS}_fixed_{NS}_cafe:1m rate=10r/s;" in conf.read_text()
    c.wait_idle()
    rendered = spy_renders(c)
    ingress_conf = Path(c.settings.nginx.conf_dir) / "conf.d" / f"{NS}-limited.conf"
    assert "rate=5r/s" in ingress_conf.read_text()
    _controller_slice(env, 4)
    wait_until(lambda: "rate=2r/s;" in conf.read_text(), "the rate scaled to 4 replicas")
    wait_until(lambda: "rate=2r/s" in ingress_conf.read_text(), "the Ingress's rate scaled too")
    c.wait_idle()
    assert rendered == [ResourceKey("virtualserver", f"{NS}/cafe")]    # not the VirtualServer without scale
