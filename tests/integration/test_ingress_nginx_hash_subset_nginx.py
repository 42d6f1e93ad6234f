"""ingress-nginx's `upstream-hash-by-subset` (+ `-subset-size`) through real NGINX: `upstream-hash-by`'s
consistent hashing serves it (a key stays on one endpoint, keys spread over the endpoints), also across an
endpoint change the dynamic-peers module applies without a reload; the Warning event says it is
approximated."""

from __future__ import annotations

import pytest

from tests.helpers import wait_until
from tests.integration.harness import Controller, Env, rule
from tests.integration.test_dynamic_upstreams import conf_d

pytestmark = pytest.mark.integration

N = "nginx.ingress.kubernetes.io/"
HOST = "hash.example.com"


def owners(c: Controller, uris: list[str]) -> dict[str, str]:
    return {u: c.get(HOST, u).backend for u in uris}


def test_a_key_stays_on_one_endpoint(env: Env) -> None:
    backends = [env.backend(f"h{i}") for i in range(3)]
    env.service("hashed")
    env.endpoints("hashed", backends)
    env.ingress("hashed", [rule(HOST, ("/", "hashed"))], annotations={
        N + "upstream-hash-by": "$request_uri", N + "upstream-hash-by-subset": "true",
        N + "upstream-hash-by-subset-size": "2"})
    c = env.controller(ingress_nginx_compat=True)
    assert c.lbc.configurator.files.dynamic is not None, "the dynamic-peers module must be installed"
    for b in backends:
        wait_until(lambda b=b: b.name in {c.get(HOST, f"/k/{i}").backend for i in range(40)},
                   f"{b.name} gets keys")
    env.wait_event("hashed", "AddedOrUpdatedWithWarning",
                   f"{N}upstream-hash-by-subset approximated (ingress-nginx hashed a key to a subset")
    env.wait_event("hashed", "AddedOrUpdatedWithWarning", f"{N}upstream-hash-by-subset-size approximated")
    assert "hash $request_uri consistent;" in conf_d(c)
    c.wait_idle()

    uris = [f"/item/{i}" for i in range(40)]
    before = owners(c, uris)
    for uri in uris[:5]:  # one key, one endpoint, request after request (ingress-nginx: one of a subset)
        assert {c.get(HOST, uri).backend for _ in range(10)} == {before[uri]}
    assert set(before.values()) == {"h0", "h1", "h2"}

    # One endpoint goes: the dynamic-peers module takes it out without a reload; the keys of the others stay.
    reloads = c.reloads
    gone = backends[2]
    env.endpoints("hashed", backends[:2])
    wait_until(lambda: "h2" not in set(owners(c, uris).values()), "h2's keys move")
    c.wait_idle()
    after = owners(c, uris)
    assert set(after.values()) == {"h0", "h1"}
    kept = [u for u in uris if before[u] != gone.name]
    assert [after[u] for u in kept] == [before[u] for u in kept], "keys of the kept endpoints moved"
    assert c.reloads == reloads, "an endpoint change reloaded NGINX"
    assert c.manager.dynamic_update_errors == 0
