"""Policy precedence end to end (real NGINX, clients 127.0.0.1 and 127.0.0.2): a route's policy of a type
wins over the spec's, different types stack, a VirtualServerRoute subroute with policies uses only its own,
one without inherits the delegating route's, a spec apiKey is overridden by a route's, and a missing policy
on one subroute fails only that subroute."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import http_get, wait_until
from tests.integration.harness import NS, Controller, Env
from tests.integration.policy_helpers import (
    apikey_secret,
    apply_policy,
    basic,
    htpasswd_secret,
    policy,
    policy_env,
)
from tests.integration.vs_helpers import (
    apply_vs,
    apply_vsr,
    virtual_server,
    virtual_server_route,
    vsr_status,
    wait_vs_state,
)

pytestmark = pytest.mark.integration

HOST = "cafe.example.com"
WEB = [{"name": "web", "service": "web", "port": 80}]


def _refs(*names: str) -> list[dict[str, Any]]:
    return [{"name": n} for n in names]


def _codes(c: Controller, path: str, headers: dict[str, str] | None = None) -> tuple[int, int]:
    """The answers to clients 127.0.0.1 and 127.0.0.2."""
    return (http_get(c.http_port, HOST, path, source="127.0.0.1", headers=headers).status,
            http_get(c.http_port, HOST, path, source="127.0.0.2", headers=headers).status)


def _env(env: Env) -> None:
    policy_env(env)
    apply_policy(env, policy("only-one", accessControl={"allow": ["127.0.0.1"]}))
    apply_policy(env, policy("only-two", accessControl={"allow": ["127.0.0.2"]}))
    apply_policy(env, policy("not-one", accessControl={"deny": ["127.0.0.1"]}))


def test_spec_route_and_subroute_precedence(env: Env) -> None:
    _env(env)
    env.apply(htpasswd_secret("users", {"alice": "wonder"}))
    apply_policy(env, policy("auth", basicAuth={"secret": "users"}))
    apply_vsr(env, virtual_server_route("juice", HOST, NS, upstreams=WEB, subroutes=[
        {"path": "/juice/orange", "action": {"pass": "web"}, "policies": _refs("only-one")},
        {"path": "/juice/apple", "action": {"pass": "web"}},
        {"path": "/juice/lemon", "action": {"pass": "web"}, "policies": _refs("gone")},
    ]))
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, policies=_refs("not-one"), routes=[
        {"path": "/tea", "action": {"pass": "web"}, "policies": _refs("only-one")},
        {"path": "/coffee", "action": {"pass": "web"}},
        {"path": "/staff", "action": {"pass": "web"}, "policies": _refs("auth")},
        {"path": "/juice", "route": "juice", "policies": _refs("only-two")},
    ]))
    c = env.controller()
    c.wait_status(HOST, "/coffee", 403)
    assert _codes(c, "/coffee") == (403, 200)          # the spec's accessControl
    assert _codes(c, "/tea") == (200, 403)             # the route's accessControl wins over the spec's
    # Different types stack: the spec's accessControl and the route's basicAuth both apply.
    assert _codes(c, "/staff", basic("alice", "wonder")) == (403, 200)
    assert _codes(c, "/staff") == (403, 401)
    assert _codes(c, "/juice/orange") == (200, 403)    # a subroute's own policies only
    assert _codes(c, "/juice/apple") == (403, 200)     # none: the delegating route's
    assert _codes(c, "/juice/lemon") == (500, 500)     # a missing policy: that subroute only
    # The warning belongs to the VirtualServerRoute holding the reference (NIC); the VirtualServer is Valid.
    wait_until(lambda: vsr_status(env, "juice", NS).get("state") == "Warning", "the VSR's Warning status")
    st = vsr_status(env, "juice", NS)
    assert (st["reason"], st["message"]) == (
        "AddedOrUpdatedWithWarning",
        f"Configuration for {NS}/juice was added or updated with warning(s): Policy {NS}/gone is missing or "
        "invalid")
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")
    # The spec policy missing: the whole server answers 500.
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, policies=_refs("not-one", "nowhere"), routes=[
        {"path": "/tea", "action": {"pass": "web"}, "policies": _refs("only-one")}]))
    c.wait_status(HOST, "/tea", 500)
    assert _codes(c, "/tea") == (500, 500)


def test_a_route_api_key_overrides_the_spec_one(env: Env) -> None:
    _env(env)
    env.apply(apikey_secret("spec-keys", {"a": "spec-key"}))
    env.apply(apikey_secret("route-keys", {"b": "route-key"}))
    supplied = {"header": ["X-API-Key"]}
    apply_policy(env, policy("spec-key", apiKey={"suppliedIn": supplied, "clientSecret": "spec-keys"}))
    apply_policy(env, policy("route-key", apiKey={"suppliedIn": supplied, "clientSecret": "route-keys"}))
    apply_vs(env, virtual_server("cafe", HOST, upstreams=WEB, policies=_refs("spec-key"), routes=[
        {"path": "/", "action": {"pass": "web"}},
        {"path": "/special", "action": {"pass": "web"}, "policies": _refs("route-key", "only-two")},
    ]))
    c = env.controller()
    c.wait_status(HOST, "/", 401)
    spec_key, route_key = {"X-API-Key": "spec-key"}, {"X-API-Key": "route-key"}
    assert _codes(c, "/", spec_key) == (200, 200)
    assert _codes(c, "/", route_key) == (403, 403)
    assert _codes(c, "/special", route_key) == (403, 200)      # the route's key, and its accessControl
    assert _codes(c, "/special", spec_key) == (403, 403)
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")
