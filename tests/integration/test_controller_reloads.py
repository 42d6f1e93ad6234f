"""Reload accounting: one reload at start-up and none before the caches sync, batching of bursts, no reload
for byte-identical renders, and every reload verified by the config version NGINX serves."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import requests_unixsocket

from ingressctl.nginx.paths import CONFIG_VERSION_SOCKET_NAME
from tests.helpers import wait_until
from tests.integration.harness import NS, Controller, Env, rule

pytestmark = pytest.mark.integration


def served_version(c: Controller) -> int:
    sock = f"{c.manager.run_dir}/{CONFIG_VERSION_SOCKET_NAME}".replace("/", "%2F")
    with requests_unixsocket.Session() as s:
        r = s.get(f"http+unix://{sock}/configVersion", timeout=10)
        return int(r.text.strip())


def assert_versions_consistent(c: Controller) -> None:
    """Every reload was verified: NGINX serves the manager's latest version and no reload failed."""
    assert c.manager.reload_errors == 0
    assert served_version(c) == c.manager.config_version == c.manager.reload_count


def populate(env: Env, n: int, prefix: str = "ing") -> list[str]:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    hosts = []
    for i in range(n):
        host = f"{prefix}-{i}.example.com"
        env.ingress(f"{prefix}-{i}", [rule(host, ("/", "web"))])
        hosts.append(host)
    return hosts


@pytest.mark.parametrize("legacy", [False, True], ids=["startup-5.5", "legacy-startup"])
def test_one_reload_at_startup_and_none_before_caches_sync(env: Env, legacy: bool) -> None:
    hosts = populate(env, 20)
    env.cluster.faults.set_latency(700, verb="list")         # slow initial lists: a wide window to watch
    c = env.controller(start=False, legacy_startup=legacy)
    observed: dict[str, Any] = {"polls": 0, "nginx_up_before_sync": False}
    errors: list[str] = []

    def starter() -> None:
        try:
            c.start(wait_ready=False)
        except Exception as e:  # reported by the assertion below
            errors.append(repr(e))

    t = threading.Thread(target=starter)
    t.start()
    while t.is_alive() or not c.app.controller.informers_synced():
        m, lbc = c.app.manager, c.app.controller
        if m is not None:
            if lbc is None or not lbc.informers_synced():
                assert m.reload_count == 0 and m.config_version == 0, "reloaded before the caches synced"
                if m.is_running() and lbc is not None:
                    observed["nginx_up_before_sync"] = True
            observed["polls"] += 1
        if not t.is_alive() and errors:
            break
    t.join()
    assert not errors
    assert observed["nginx_up_before_sync"], "NGINX (version 0) must serve before the informers sync"
    env.cluster.faults.set_latency(0, verb="list")
    assert c.lbc.wait_ready(60)
    for h in hosts:
        assert c.get(h, "/").backend == "web"
    assert c.reloads == 1
    assert_versions_consistent(c)
    # One AddedOrUpdated event per Ingress at start-up; the pre-5.5 path emits one per sync (as NIC did).
    def count() -> int:
        return sum(e.get("count", 1) for e in env.events("ing-0", "AddedOrUpdated"))

    wait_until(lambda: count() >= (2 if legacy else 1), "AddedOrUpdated events")
    if not legacy:
        c.wait_idle()
        assert count() == 1


def test_burst_of_100_changes_is_batched(env: Env) -> None:
    populate(env, 0)
    c = env.controller()
    base = c.reloads
    hosts = [f"burst-{i}.example.com" for i in range(100)]
    for i, h in enumerate(hosts):
        env.ingress(f"burst-{i}", [rule(h, ("/", "web"))])
    c.wait_backend(hosts[-1], "/", "web")
    c.wait_idle()
    for h in hosts:
        assert c.get(h, "/").backend == "web", h
    reloads = c.reloads - base
    print(f"burst of 100 Ingresses: {reloads} reloads, {c.lbc.stats.batches} batches")
    assert 1 <= reloads <= 6, f"{reloads} reloads for a burst of 100 Ingresses"
    assert c.lbc.stats.batches >= 1
    assert_versions_consistent(c)


def test_a_batchs_events_wait_for_its_reload(env: Env) -> None:
    """An AddedOrUpdated event (and the status after it) says the configuration is live: in a batch it is
    sent only after the batch's one reload, so the host answers when its event is sent."""
    populate(env, 0)
    c = env.controller(dynamic_routes=False)  # every new host needs the reload
    served_at_event: dict[str, int] = {}
    event = c.lbc.reporter.event

    def observing(obj: dict[str, Any], kind: str, event_type: str, reason: str, message: str) -> None:
        name = obj["metadata"]["name"]
        if reason == "AddedOrUpdated" and name.startswith("burst-"):
            served_at_event[name] = c.get(f"{name}.example.com", "/").status
        event(obj, kind, event_type, reason, message)

    c.lbc.reporter.event = observing  # type: ignore[method-assign]
    batches = c.lbc.stats.batches
    for i in range(30):
        env.ingress(f"burst-{i}", [rule(f"burst-{i}.example.com", ("/", "web"))])
    wait_until(lambda: len(served_at_event) == 30, "an event for each Ingress of the burst")
    c.wait_idle()
    assert c.lbc.stats.batches > batches, "the burst was not batched"
    assert served_at_event == {f"burst-{i}": 200 for i in range(30)}
    assert_versions_consistent(c)


def test_byte_identical_renders_cause_no_reload(env: Env) -> None:
    populate(env, 3)
    c = env.controller(dynamic_routes=False)  # so that the real change below reloads (routes push it)
    c.wait_backend("ing-0.example.com", "/", "web")
    c.wait_idle()
    before, syncs = c.reloads, c.lbc.stats.syncs
    # An annotation the config ignores; a label; an EndpointSlice update with the same endpoints; a Service
    # port the Ingress does not use.
    ing = env.get("ingresses", "ing-0")
    ing["metadata"].setdefault("annotations", {})["example.com/owner"] = "team-a"
    ing["metadata"].setdefault("labels", {})["tier"] = "frontend"
    env.kube.update(_rt("ingresses"), NS, "ing-0", ing)
    sl = env.kube.list(_rt("endpointslices"), NS)["items"][0]
    sl["metadata"].setdefault("labels", {})["touched"] = "yes"
    env.kube.update(_rt("endpointslices"), NS, sl["metadata"]["name"], sl)
    svc = env.get("services", "web")
    svc["spec"]["ports"].append({"name": "metrics", "port": 9100, "targetPort": 9100})
    env.kube.update(_rt("services"), NS, "web", svc)
    # Wait until the controller has processed all three (the last one is the Service).
    wait_until(lambda: c.lbc.stats.syncs >= syncs + 3, "the three changes processed")
    c.wait_idle()
    assert c.reloads == before
    # A real change still reloads.
    assert c.get("new.example.com", "/").status == 404
    env.ingress("ing-0", [rule("ing-0.example.com", ("/", "web")), rule("new.example.com", ("/", "web"))])
    c.wait_backend("new.example.com", "/", "web")
    c.wait_idle()
    assert c.reloads == before + 1
    assert_versions_consistent(c)


def test_endpoint_churn_reloads_only_when_servers_change(env: Env) -> None:
    # The reload path (without the dynamic-peers module); test_dynamic_upstreams covers endpoint changes
    # without reloads.
    populate(env, 1)
    c = env.controller(dynamic_upstreams=False)
    c.wait_backend("ing-0.example.com", "/", "web")
    c.wait_idle()
    before = c.reloads
    extra = env.backend("web-2")
    env.endpoints("web", [env.backends[0], extra])
    wait_until(lambda: {c.get("ing-0.example.com", "/").backend for _ in range(10)} == {"web", "web-2"},
               "both endpoints serve")
    c.wait_idle()
    assert c.reloads == before + 1
    assert_versions_consistent(c)


def _rt(plural: str) -> Any:
    from ingressctl.k8s.resource import by_plural

    return by_plural(plural)
