"""Tiered rate limits end to end through devcluster and a real NGINX, with resources shaped like NIC 5.5's
examples: tiers by request method, tiers by API-key client (`$apikey_client_name`, keyed on
`${apikey_auth_token}`), the same on a VirtualServerRoute attached by `routeSelector` under a
VirtualServer-level apiKey policy, and a context with two default tiers failing closed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import http_get
from tests.integration.harness import NS, Controller, Env
from tests.integration.policy_helpers import (
    apikey_secret,
    apply_policy,
    policy,
    policy_env,
    wait_policy_state,
)
from tests.integration.vs_helpers import (
    apply_vs,
    apply_vsr,
    virtual_server,
    virtual_server_route,
    wait_vs_state,
)

pytestmark = pytest.mark.integration

HOST = "tiers.example.com"
WEB = [{"name": "web", "service": "web", "port": 80}]


def _tier(name: str, variable: str, match: str, *, key: str, burst: int = 0,
          default: bool = False) -> dict[str, Any]:
    """A rateLimit Policy of one tier: one request a minute per key (plus `burst`), rejected with 429."""
    limit: dict[str, Any] = {"rate": "1r/m", "key": key, "zoneSize": "1m", "rejectCode": 429,
                             "condition": {"variables": [{"name": variable, "match": match}]}}
    if burst:
        limit.update(burst=burst, noDelay=True)
    if default:
        limit["condition"]["default"] = True
    return policy(name, rateLimit=limit)


def _codes(c: Controller, n: int, path: str = "/", method: str = "GET", key: str = "",
           source: str = "127.0.0.1") -> list[int]:
    headers = {"X-API-Key": key} if key else None
    return [http_get(c.http_port, HOST, path, method=method, headers=headers, source=source).status
            for _ in range(n)]


def _api_key_tiers(env: Env, clients: dict[str, str], *, key: str, premium_burst: int,
                   names: tuple[str, str] = ("premium", "basic")) -> None:
    """An apiKey policy `api-key` (header X-API-Key) and the tiers `premium` (clients named `*-premium`)
    and `basic` (`*-basic`, the default), keyed on `key` (the tiers' Policy names are `names`)."""
    policy_env(env)
    env.apply(apikey_secret("api-keys", clients))
    apply_policy(env, policy("api-key", apiKey={"suppliedIn": {"header": ["X-API-Key"]},
                                                "clientSecret": "api-keys"}))
    apply_policy(env, _tier(names[0], "$apikey_client_name", "~^.*-premium$", key=key, burst=premium_burst))
    apply_policy(env, _tier(names[1], "$apikey_client_name", "~^.*-basic$", key=key, default=True))


def test_request_method_tiers_give_reads_and_writes_their_own_limits(env: Env) -> None:
    policy_env(env)
    apply_policy(env, _tier("reads", "$request_method", "~^(GET|HEAD)$", key="${binary_remote_addr}",
                            burst=2))
    apply_policy(env, _tier("writes", "$request_method", "~^(PUT|POST|PATCH|DELETE)$",
                            key="${binary_remote_addr}", default=True))
    apply_vs(env, virtual_server("tiers", HOST, upstreams=WEB,
                                 policies=[{"name": "reads"}, {"name": "writes"}],
                                 routes=[{"path": "/", "action": {"pass": "web"}}]))
    c = env.controller()
    c.wait_backend(HOST, "/", "web")
    wait_vs_state(env, "tiers", "Valid", "AddedOrUpdated")
    wait_policy_state(env, "reads", "Valid")
    # The readiness probe above was one GET of 127.0.0.1: two more pass (burst 2), then 429.
    assert _codes(c, 3) == [200, 200, 429]
    # Writes have their own tier (no burst); other methods fall into it too (it is the default).
    assert _codes(c, 2, method="POST") == [200, 429]
    assert _codes(c, 1, method="OPTIONS") == [429]
    # Another client starts afresh in both tiers.
    assert _codes(c, 4, source="127.0.0.2") == [200, 200, 200, 429]
    assert _codes(c, 2, method="DELETE", source="127.0.0.2") == [200, 429]


def test_api_key_client_tiers_limit_each_client_by_its_tier(env: Env) -> None:
    _api_key_tiers(env, {"alpha-premium": "premium-key", "beta-basic": "basic-key", "gamma": "gamma-key"},
                   key="${apikey_auth_token}", premium_burst=3)
    apply_vs(env, virtual_server("tiers", HOST, upstreams=WEB,
                                 policies=[{"name": "api-key"}, {"name": "premium"}, {"name": "basic"}],
                                 routes=[{"path": "/", "action": {"pass": "web"}}]))
    c = env.controller()
    c.wait_status(HOST, "/", 401)
    wait_vs_state(env, "tiers", "Valid", "AddedOrUpdated")
    assert _codes(c, 1, key="wrong") == [403]                       # the apiKey checks still come first
    assert _codes(c, 5, key="premium-key") == [200, 200, 200, 200, 429]
    assert _codes(c, 2, key="basic-key") == [200, 429]
    assert _codes(c, 2, key="gamma-key") == [200, 429]              # no tier matches: the default one
    # The zone key is the supplied API key, not the address: from another address it shares its counter.
    assert _codes(c, 1, key="basic-key", source="127.0.0.2") == [429]


def test_tiers_on_a_route_selected_virtual_server_route_under_a_server_api_key(env: Env) -> None:
    _api_key_tiers(env, {"team-premium": "p-key", "team-basic": "b-key"}, key="${apikey_client_name}",
                   premium_burst=1)
    apply_vs(env, virtual_server("tiers", HOST, upstreams=WEB, policies=[{"name": "api-key"}], routes=[
        {"path": "/api", "routeSelector": {"matchLabels": {"tier": "api"}}},
        {"path": "/", "action": {"pass": "web"}}]))
    vsr = virtual_server_route("api", HOST, NS, upstreams=WEB, subroutes=[
        {"path": "/api", "action": {"pass": "web"}, "policies": [{"name": "premium"}, {"name": "basic"}]}])
    vsr["metadata"]["labels"] = {"tier": "api"}
    apply_vsr(env, vsr)
    c = env.controller()
    c.wait_status(HOST, "/api", 401)
    wait_vs_state(env, "tiers", "Valid", "AddedOrUpdated")
    assert _codes(c, 3, "/api", key="p-key") == [200, 200, 429]
    assert _codes(c, 2, "/api", key="b-key") == [200, 429]
    assert _codes(c, 3, "/", key="b-key") == [200, 200, 200]        # the VirtualServer's own route: no tier


def test_two_default_tiers_fail_the_context_closed(env: Env) -> None:
    policy_env(env)
    apply_policy(env, _tier("one", "$request_method", "GET", key="${binary_remote_addr}", default=True))
    apply_policy(env, _tier("two", "$request_method", "POST", key="${binary_remote_addr}", default=True))
    apply_vs(env, virtual_server("tiers", HOST, upstreams=WEB, routes=[
        {"path": "/both", "action": {"pass": "web"}, "policies": [{"name": "one"}, {"name": "two"}]},
        {"path": "/", "action": {"pass": "web"}}]))
    c = env.controller()
    c.wait_backend(HOST, "/", "web")
    c.wait_status(HOST, "/both", 500)
    st = wait_vs_state(env, "tiers", "Warning", "AddedOrUpdatedWithWarning")
    assert f"Tiered rate-limit Policies on {NS}/tiers contain conflicting default values" in st["message"]


def test_names_at_kubernetes_limits_load(env: Env) -> None:
    # Long VirtualServer and Policy names make long map variables; NGINX must still load them.
    vs, premium, basic = "v" * 150, "p" * 200, "b" * 200     # (config file names stop at 200 bytes)
    _api_key_tiers(env, {"x-premium": "p-key", "x-basic": "b-key"}, key="${apikey_client_name}",
                   premium_burst=1, names=(premium, basic))
    apply_vs(env, virtual_server(vs, HOST, upstreams=WEB,
                                 policies=[{"name": "api-key"}, {"name": premium}, {"name": basic}],
                                 routes=[{"path": "/", "action": {"pass": "web"}}]))
    c = env.controller()
    c.wait_status(HOST, "/", 401)
    wait_vs_state(env, vs, "Valid", "AddedOrUpdated")
    assert _codes(c, 3, key="p-key") == [200, 200, 429]
    assert _codes(c, 2, key="b-key") == [200, 429]
