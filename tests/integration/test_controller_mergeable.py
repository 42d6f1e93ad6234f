"""Mergeable Ingresses through the real controller and a real NGINX: a master and its minions (in several
namespaces) route each path to its own backend; path conflicts between minions, orphaned minions, denied
annotations and warnings reach the right Ingress's events (each minion's own, not the master's)."""

from __future__ import annotations

import http.client
from typing import Any

import pytest

from ingressctl.configs.configurator import CERTIFICATE_MAP_FILE, SPARES_FILE
from tests.helpers import Response, wait_until
from tests.integration.harness import NS, Controller, Env, rule

pytestmark = pytest.mark.integration


def resource_configs(c: Controller) -> list[str]:
    """The conf.d files of resources (not the certificate map of certificates loaded at handshakes, nor the
    routes' spare upstreams)."""
    return [n for n in c.manager.list_configs() if n not in (CERTIFICATE_MAP_FILE, SPARES_FILE)]

HOST = "shop.example.com"
TEAM_B = "team-b"
MASTER = {"nginx.org/mergeable-ingress-type": "master"}
MINION = {"nginx.org/mergeable-ingress-type": "minion"}


def backend(env: Env, name: str, namespace: str = NS) -> None:
    env.service(name, namespace=namespace)
    env.endpoints(name, [env.backend(name)], namespace=namespace)


def master(env: Env, name: str = "shop", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return env.ingress(name, [{"host": HOST}], annotations={**MASTER, **(annotations or {})})


def minion(env: Env, name: str, *paths: tuple[str, str], namespace: str = NS,
           annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return env.ingress(name, [rule(HOST, *paths)], namespace=namespace,
                       annotations={**MINION, **(annotations or {})})


def event_count(env: Env, name: str, reason: str, contains: str = "", namespace: str = NS) -> int:
    return sum(int(e.get("count") or 1) for e in env.events(name, reason, namespace)
               if contains in (e.get("message") or ""))


def messages(env: Env, name: str, namespace: str = NS) -> list[str]:
    return [str(e.get("message") or "") for e in env.events(name, None, namespace)]


@pytest.fixture
def shop(env: Env) -> Controller:
    """A master with three minions in two namespaces, each path on its own backend."""
    env.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TEAM_B}})
    for name in ("tea", "coffee"):
        backend(env, name)
    backend(env, "pay", TEAM_B)
    master(env)
    minion(env, "tea", ("/tea", "tea"))
    minion(env, "coffee", ("/coffee", "coffee"))
    minion(env, "pay", ("/pay", "pay"), namespace=TEAM_B)
    c = env.controller()
    for path, name in (("/tea", "tea"), ("/coffee", "coffee"), ("/pay", "pay")):
        c.wait_backend(HOST, path, name)
    return c


def test_master_with_three_minions_in_two_namespaces(env: Env, shop: Controller) -> None:
    c = shop
    assert c.get(HOST, "/tea/green").backend == "tea"
    assert c.get(HOST, "/pay/card").backend == "pay"
    assert c.get(HOST, "/").status == 404          # the master has no paths of its own
    assert c.get(HOST, "/teapot").status == 404    # Prefix is element-wise
    # One config file for the master; none for the minions.
    assert resource_configs(c) == [f"{NS}-shop"]
    env.wait_event("shop", "AddedOrUpdated", f"Configuration for {NS}/shop was added or updated")
    for name, ns in (("tea", NS), ("coffee", NS), ("pay", TEAM_B)):
        env.wait_event(name, "AddedOrUpdated", f"Configuration for {ns}/{name} was added or updated", ns)
    assert c.reloads == 1
    # A minion changing its path is picked up without touching the master.
    minion(env, "coffee", ("/espresso", "coffee"))
    c.wait_backend(HOST, "/espresso", "coffee")
    c.wait_status(HOST, "/coffee", 404)
    assert c.get(HOST, "/tea").backend == "tea"


def test_second_minion_claiming_a_taken_path_loses_it_with_a_warning_on_itself(env: Env,
                                                                               shop: Controller) -> None:
    c = shop
    backend(env, "tea2")
    first = env.get("ingresses", "tea")
    second = minion(env, "tea2", ("/tea", "tea2"), ("/matcha", "tea2"))
    # The rule: the older creationTimestamp (seconds) wins, then the greater UID.
    (t1, u1), (t2, u2) = ((m["metadata"]["creationTimestamp"], m["metadata"]["uid"]) for m in (first, second))
    first_wins = t1 < t2 or (t1 == t2 and u1 > u2)
    winner, loser = ("tea", "tea2") if first_wins else ("tea2", "tea")
    env.wait_event(loser, "AddedOrUpdatedWithWarning", "path /tea is taken by another resource")
    c.wait_backend(HOST, "/matcha", "tea2")
    assert c.get(HOST, "/tea").backend == winner
    # The warning is the loser's alone: neither the master nor the winner carries it.
    c.wait_idle()
    for name in ("shop", winner, "coffee"):
        assert not any("taken" in m for m in messages(env, name)), (name, messages(env, name))
    assert not any("taken" in m for m in messages(env, "pay", TEAM_B))
    # The loser leaves: its path conflict is gone and the other minions keep serving.
    env.delete("ingresses", loser)
    c.wait_backend(HOST, "/tea", winner)
    assert c.get(HOST, "/coffee").backend == "coffee"


def test_deleting_the_master_orphans_the_minions_and_recreating_it_restores_them(env: Env,
                                                                                  shop: Controller) -> None:
    c = shop
    added_before = event_count(env, "tea", "AddedOrUpdated")
    env.delete("ingresses", "shop")
    for name, ns in (("tea", NS), ("coffee", NS), ("pay", TEAM_B)):
        e = env.wait_event(name, "NoIngressMasterFound", "Ingress master is invalid or doesn't exist", ns)
        assert e["type"] == "Warning"
    for path in ("/tea", "/coffee", "/pay"):
        c.wait_status(HOST, path, 404)
    assert resource_configs(c) == []
    # A regular Ingress for the host does not adopt them: they stay orphans.
    backend(env, "front")
    env.ingress("front", [rule(HOST, ("/", "front"))])
    c.wait_backend(HOST, "/tea", "front")
    env.delete("ingresses", "front")
    c.wait_status(HOST, "/tea", 404)

    master(env)
    for path, name in (("/tea", "tea"), ("/coffee", "coffee"), ("/pay", "pay")):
        c.wait_backend(HOST, path, name)
    wait_until(lambda: event_count(env, "tea", "AddedOrUpdated") > added_before,
               "a new AddedOrUpdated event on the minion tea")
    assert c.lbc.stats.sync_errors == 0


def test_denied_annotations_warn_on_the_ingress_that_carries_them(env: Env, shop: Controller) -> None:
    c = shop
    # A minion may not set server-level annotations: ignored, with a warning on that minion.
    minion(env, "coffee", ("/coffee", "coffee"), annotations={"nginx.org/redirect-to-https": "true"})
    env.wait_event("coffee", "AddedOrUpdatedWithWarning",
                   "a minion Ingress cannot have the annotation(s) nginx.org/redirect-to-https; ignored")
    r = wait_until(lambda: (x := _get(c, "/coffee", {"X-Forwarded-Proto": "http"})).status == 200 and x,
                   "/coffee served, not redirected")
    assert r.backend == "coffee"
    # A master may not set upstream annotations: ignored, with a warning on the master only.
    master(env, annotations={"nginx.org/use-cluster-ip": "true"})
    env.wait_event("shop", "AddedOrUpdatedWithWarning",
                   "a master Ingress cannot have the annotation(s) nginx.org/use-cluster-ip; ignored")
    c.wait_idle()
    assert c.get(HOST, "/tea").backend == "tea"
    assert not any("use-cluster-ip" in m for m in messages(env, "tea"))
    assert not any("minion" in m for m in messages(env, "shop")), messages(env, "shop")


def test_minions_inherit_the_masters_settings_and_a_minion_with_a_bad_value_is_rejected(
        env: Env, shop: Controller) -> None:
    c = shop
    # limit-req-* is inherited by every minion: the second quick request to each path is rejected.
    master(env, annotations={"nginx.org/limit-req-rate": "1r/m", "nginx.org/limit-req-reject-code": "429"})
    wait_until(lambda: _get(c, "/tea", {}).status == 429, "/tea rate limited")
    wait_until(lambda: _get(c, "/pay", {}).status == 429, "/pay rate limited")
    # An invalid value on a minion rejects that minion only.
    minion(env, "coffee", ("/coffee", "coffee"), annotations={"nginx.org/limit-req-burst": "lots"})
    env.wait_event("coffee", "Rejected",
                   'annotations.nginx.org/limit-req-burst: Invalid value: "lots": must be an integer')
    c.wait_status(HOST, "/coffee", 404)
    assert c.lbc.stats.sync_errors == 0 and c.lbc.is_alive()


def _get(c: Controller, path: str, headers: dict[str, str]) -> Response:
    conn = http.client.HTTPConnection("127.0.0.1", c.http_port, timeout=10)
    try:
        conn.request("GET", path, headers={"Host": HOST, "Connection": "close", **headers})
        r = conn.getresponse()
        body = r.read().decode(errors="replace")
        return Response(r.status, body, {k.lower(): v for k, v in r.getheaders()})
    finally:
        conn.close()
