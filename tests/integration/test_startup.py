"""Start-up (docs/architecture.md) against a devcluster and a real NGINX: one reload and none before the lists
finish, readiness before any status write, the 10-worker status flush gated on leader election, problem
statuses written synchronously, no rewrite of unchanged status, and one retry after a 409."""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ingressctl.app.root import StartupError
from ingressctl.configs.prerender import MIN_ITEMS
from ingressctl.configs.renderers import IngressRenderer
from ingressctl.controller import secrets as secrets_module
from ingressctl.controller import startup as startup_module
from ingressctl.controller.reporter import Reporter
from ingressctl.controller.status import StartupStatusFlush
from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.leader import LeaderElector
from ingressctl.nginx.manager import Manager
from tests.helpers import make_cert, wait_until
from tests.integration.harness import NS, Controller, Env, rule

pytestmark = pytest.mark.integration

STATUS = "ingresses/status"
ADDRESS = "1.2.3.4"
LEASE = "nginx-ingress-leader-election"


def ingress(name: str, host: str, *, status: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"ingressClassName": "nginx", "rules": [rule(host, ("/", "web"))]}}
    if status is not None:
        body["status"] = {"loadBalancer": {"ingress": [{"ip": status}]}}
    return body


def populate(env: Env, n: int, prefix: str = "ing") -> list[str]:
    """A Service with a real backend and `n` Ingresses (loaded in bulk); returns their names."""
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    names = [f"{prefix}-{i}" for i in range(n)]
    env.cluster.load(ingress(name, f"{name}.example.com") for name in names)
    return names


def config_map(env: Env, address: str = ADDRESS) -> None:
    env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nginx-config", "namespace": NS},
               "data": {"external-status-address": address}})


def addresses(env: Env, name: str) -> list[dict[str, Any]]:
    ing = env.get("ingresses", name)
    return list(((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress") or [])


def stored_addresses(env: Env) -> dict[str, list[Any]]:
    """Every Ingress's status addresses, read from the devcluster's store (no API request)."""
    return {o["metadata"]["name"]: ((o.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
            for o in env.cluster.objects("ingresses", NS)}


def status_updates(env: Env) -> int:
    return int(env.cluster.stats.count("update", STATUS))


def completed_status_updates(env: Env) -> int:
    return status_updates(env) - int(env.cluster.stats.in_flight("update", STATUS))


def status_settings(env: Env, **kw: Any) -> Any:
    return env.settings(nginx_configmaps=f"{NS}/nginx-config", report_ingress_status=True, **kw)


@pytest.fixture
def other_leader(env: Env) -> Iterator[LeaderElector]:
    """Another replica holding the controller's Lease and renewing it (a real LeaderElector)."""
    client = KubeClient.from_kubeconfig(env.kubeconfig)
    elector = LeaderElector(client, namespace="default", name=LEASE, identity="other-replica",
                            lease_duration=3, renew_deadline=2, retry_period=0.5)
    elector.start()
    wait_until(elector.is_leader, "the other replica leads")
    try:
        yield elector
    finally:
        elector.stop()
        client.close()


# ------------------------------------------------------------------------------------------------ reloads


def start_in_background(c: Controller) -> tuple[threading.Thread, list[str]]:
    """Start `c` (not waiting for readiness) on a thread; the list collects what starting raised."""
    errors: list[str] = []

    def starter() -> None:
        try:
            c.start(wait_ready=False)
        except Exception as e:  # reported by the caller
            errors.append(repr(e))

    t = threading.Thread(target=starter)
    t.start()
    return t, errors


def test_one_reload_at_startup_and_none_while_lists_are_in_flight(env: Env) -> None:
    names = populate(env, 30)
    env.cluster.faults.set_latency(500, verb="list")        # the initial lists take a while
    c = env.controller(start=False)
    t, errors = start_in_background(c)
    seen_lists_in_flight = False
    while t.is_alive():
        lists = sum(env.cluster.stats.in_flight("list", r)
                    for r in ("ingresses", "services", "endpointslices", "secrets", "configmaps"))
        manager = c.app.manager
        if lists and manager is not None:
            seen_lists_in_flight = True
            assert manager.reload_count == 0 and manager.config_version == 0, "reloaded before lists ended"
        time.sleep(0.002)
    t.join()
    assert not errors
    assert seen_lists_in_flight, "the devcluster never showed a list in flight"
    assert c.lbc.informers_synced()
    assert c.lbc.wait_ready(60)
    for n in names:
        assert c.get(f"{n}.example.com").backend == "web"
    c.wait_idle()
    assert c.reloads == 1
    assert c.lbc.configuration.startup_complete and c.lbc.is_ready()


def test_secrets_are_validated_as_they_are_listed_not_after_the_caches_synced(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Secret informer's thread validates each listed Secret; the pre-sync and the sync use its result."""
    cert, other = make_cert("a.example.com"), make_cert("b.example.com")
    env.create(cert.secret("good", NS))
    env.create(dict(cert.secret("bad", NS), data=other.secret("x", NS)["data"] | {
        "tls.crt": cert.secret("x", NS)["data"]["tls.crt"]}))   # b's key does not match a's certificate
    calls: list[tuple[str, str]] = []
    real = secrets_module.validate_secret

    def recording(secret: Any) -> None:
        calls.append((secret["metadata"]["name"], threading.current_thread().name))
        real(secret)

    monkeypatch.setattr(secrets_module, "validate_secret", recording)
    c = env.controller()
    assert c.lbc.wait_ready(60)
    assert sorted(name for name, _ in calls) == ["bad", "good"]
    assert all(thread.startswith("reflector-secrets") for _, thread in calls), calls
    store = c.lbc.secret_store
    assert store.get_secret_reference(f"{NS}/good").error == ""
    assert "does not match" in store.get_secret_reference(f"{NS}/bad").error


def test_the_start_up_reads_are_in_flight_together(env: Env) -> None:
    """The IngressClass and the ConfigMap are read at once (one round trip, not two); the checks still come in
    their order and with their messages."""
    config_map(env)
    for resource in ("ingressclasses", "configmaps"):
        env.cluster.faults.set_latency(400, verb="get", resource=resource)
    c = env.controller(status_settings(env), start=False)
    t, errors = start_in_background(c)
    together = False
    while t.is_alive() and not together:
        stats = env.cluster.stats
        together = bool(stats.in_flight("get", "ingressclasses") and stats.in_flight("get", "configmaps"))
        time.sleep(0.002)
    t.join()
    assert not errors
    assert together, "the IngressClass and the ConfigMap were read one after the other"
    assert c.lbc.wait_ready(60)


def test_a_missing_ingress_class_is_still_the_first_start_up_error(env: Env) -> None:
    env.cluster.faults.set_latency(300, verb="get", resource="ingressclasses")   # its answer comes last
    c = env.controller(env.settings(nginx_configmaps=f"{NS}/absent", ingress_class="x"), start=False)
    with pytest.raises(StartupError, match="IngressClass 'x' does not exist"):
        c.start(wait_ready=False)


def test_readiness_does_not_wait_for_the_applied_resources_events(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Serving needs the reload, not the AddedOrUpdated events: they are queued after readiness, and the
    deferred statuses they collect are flushed after them."""
    names = populate(env, 3)
    config_map(env)
    gate = threading.Event()
    real = Reporter.report

    def held(self: Reporter, applied: Any, *, defer_status: bool) -> None:
        if defer_status:
            assert gate.wait(60), "never released"
        real(self, applied, defer_status=defer_status)

    monkeypatch.setattr(Reporter, "report", held)
    c = env.controller(status_settings(env), start=False)
    c.start(wait_ready=False)
    try:
        assert c.lbc.wait_ready(60), "readiness waited for the events"
        for n in names:
            assert c.get(f"{n}.example.com").backend == "web"
        assert env.events(reason="AddedOrUpdated") == []
        assert completed_status_updates(env) == 0
    finally:
        gate.set()
    for n in names:
        env.wait_event(n, "AddedOrUpdated")
        wait_until(lambda n=n: addresses(env, n) == [{"ip": ADDRESS}], f"status of {n}")


def test_an_empty_cluster_becomes_ready_without_a_reload(env: Env) -> None:
    """Nothing to render: NGINX already serves the main config it started with, so readiness needs none."""
    c = env.controller()
    c.wait_idle()
    assert c.lbc.is_ready()
    assert c.reloads == 0


# ------------------------------------------------------------------------------------------------ status


def test_readiness_comes_before_any_status_write_with_a_slow_status_path(env: Env) -> None:
    names = populate(env, 20)
    config_map(env)
    env.cluster.faults.set_latency(500, verb="update", resource=STATUS)
    c = env.controller(status_settings(env), start=False)
    c.start(wait_ready=False)
    assert c.lbc.wait_ready(60)
    # At the moment readiness turned on, no status write had completed and none was stored.
    assert completed_status_updates(env) == 0
    assert all(not a for a in stored_addresses(env).values())
    for n in names:
        wait_until(lambda n=n: addresses(env, n) == [{"ip": ADDRESS}], f"status of {n}")
    flush = c.lbc.startup_flush
    wait_until(lambda: flush.result is not None, "flush finished")
    assert flush.result.state == "written" and flush.result.written == len(names)


def test_legacy_startup_writes_status_before_readiness(env: Env) -> None:
    """The pre-5.5 baseline: the same check as above sees every status written before readiness."""
    names = populate(env, 5)
    config_map(env)
    env.cluster.faults.set_latency(100, verb="update", resource=STATUS)
    c = env.controller(status_settings(env, legacy_startup=True), start=False)
    c.start(wait_ready=False)
    assert c.lbc.wait_ready(60)
    assert completed_status_updates(env) >= len(names)
    assert all(a == [{"ip": ADDRESS}] for a in stored_addresses(env).values())
    assert c.lbc.startup_flush is None


def test_status_flush_uses_ten_concurrent_writers_and_never_rewrites(env: Env) -> None:
    names = populate(env, 200)
    config_map(env)
    env.cluster.faults.set_latency(100, verb="update", resource=STATUS)   # writes overlap
    c = env.controller(status_settings(env, enabled=True))
    flush = c.lbc.startup_flush
    wait_until(lambda: flush.result is not None, "flush finished")
    assert flush.result.state == "written"
    assert flush.result.attempted == flush.result.written == len(names)
    assert status_updates(env) == len(names)                 # one write each: no retries, no rewrites
    assert env.cluster.stats.max_in_flight("update", STATUS) == 10
    assert all(a == [{"ip": ADDRESS}] for a in stored_addresses(env).values())

    # A spec change that leaves the address alone writes no status.
    host = f"{names[0]}.example.com"
    env.apply(ingress(names[0], host) | {"spec": {
        "ingressClassName": "nginx", "rules": [rule(host, ("/", "web"), ("/v2", "web"))]}})
    c.wait_backend(f"{names[0]}.example.com", "/v2", "web")
    c.wait_idle()
    assert status_updates(env) == len(names)

    # A restart finds every status right: the flush writes nothing.
    c.stop()
    c2 = env.controller(status_settings(env, enabled=True))
    flush2 = c2.lbc.startup_flush
    wait_until(lambda: flush2.result is not None, "second flush finished")
    assert flush2.result.state == "written" and flush2.result.written == 0
    assert status_updates(env) == len(names)


def test_a_follower_writes_nothing_and_writes_everything_once_it_leads(
        env: Env, other_leader: LeaderElector) -> None:
    names = populate(env, 6)
    config_map(env)
    c = env.controller(status_settings(env, enabled=True, lease_duration_s=3.0, renew_deadline_s=2.0,
                                       retry_period_s=0.5))
    assert not c.app.leader.is_leader()
    c.wait_backend(f"{names[0]}.example.com", "/", "web")   # a follower serves traffic
    # A change while following: configured and served, but no status written.
    env.apply(ingress("late", "late.example.com"))
    c.wait_backend("late.example.com", "/", "web")
    c.wait_idle()
    assert c.lbc.startup_flush.owns_writes()                # still waiting for the lease
    assert status_updates(env) == 0
    assert not c.app.leader.is_leader()

    other_leader.stop()                                      # the other replica goes away (releases)
    wait_until(c.app.leader.is_leader, "the controller leads")
    flush = c.lbc.startup_flush
    wait_until(lambda: flush.result is not None, "flush finished")
    assert flush.result.state == "written"
    for n in [*names, "late"]:
        assert addresses(env, n) == [{"ip": ADDRESS}], n
    assert status_updates(env) == len(names) + 1


def test_a_follower_whose_flush_gave_up_writes_every_status_when_it_becomes_leader(
        env: Env, other_leader: LeaderElector, monkeypatch: pytest.MonkeyPatch) -> None:
    """The flush waits `leader_wait` (60 s in production; 1 s here) and exits; the became-leader callback
    then writes every status."""
    def short_wait(*args: Any, **kw: Any) -> StartupStatusFlush:
        kw["leader_wait"] = 1.0
        return StartupStatusFlush(*args, **kw)

    monkeypatch.setattr(startup_module, "StartupStatusFlush", short_wait)
    names = populate(env, 5)
    config_map(env)
    c = env.controller(status_settings(env, enabled=True, lease_duration_s=3.0, renew_deadline_s=2.0,
                                       retry_period_s=0.5))
    flush = c.lbc.startup_flush
    wait_until(lambda: flush.result is not None, "the flush gave up")
    assert flush.result.state == "skipped-follower"
    assert status_updates(env) == 0

    other_leader.stop()
    wait_until(c.app.leader.is_leader, "the controller leads")
    for n in names:
        wait_until(lambda n=n: addresses(env, n) == [{"ip": ADDRESS}], f"status of {n}")
    assert status_updates(env) == len(names)


def test_problem_statuses_are_cleared_before_readiness_and_name_the_winner(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.cluster.load([ingress("winner", "shared.example.com")])
    wait_until(lambda: _older_by_a_second(env, "winner"), "a second passes", deadline=5)
    # The loser carries a stale address from an earlier owner of the host.
    env.cluster.load([ingress("loser", "shared.example.com", status="9.9.9.9")])
    config_map(env)
    env.cluster.faults.set_latency(300, verb="update", resource=STATUS)
    c = env.controller(status_settings(env), start=False)
    c.start(wait_ready=False)
    assert c.lbc.wait_ready(60)
    stored = stored_addresses(env)
    assert stored["loser"] == []            # cleared synchronously, before readiness
    assert stored["winner"] == []           # the deferred flush comes after readiness
    env.wait_event("loser", "Rejected",
                   "All hosts are taken by other resources: host shared.example.com by Ingress demo/winner")
    wait_until(lambda: addresses(env, "winner") == [{"ip": ADDRESS}], "winner's status")
    assert addresses(env, "loser") == []
    assert c.get("shared.example.com").backend == "web"


def test_a_conflict_is_retried_once_with_a_fresh_read(env: Env) -> None:
    populate(env, 1)
    config_map(env)
    env.cluster.faults.fail_next(409, verb="update", resource=STATUS)
    gets = env.cluster.stats.count("get", "ingresses")
    c = env.controller(status_settings(env))
    # Read through the devcluster's store: the test's own GETs must not count.
    wait_until(lambda: stored_addresses(env)["ing-0"] == [{"ip": ADDRESS}], "status written after the retry")
    assert status_updates(env) == 2
    assert env.cluster.stats.count("get", "ingresses") == gets + 1
    assert c.app.status.failures == 0

    # Two conflicts in a row: one retry only, then the failure is counted (no loop).
    env.cluster.faults.fail_next(409, count=2, verb="update", resource=STATUS)
    config_map(env, "5.6.7.8")
    wait_until(lambda: c.app.status.failures == 1, "the second conflict is given up")
    c.wait_idle()
    assert status_updates(env) == 4
    assert env.cluster.stats.count("get", "ingresses") == gets + 2
    assert stored_addresses(env)["ing-0"] == [{"ip": ADDRESS}]


def _older_by_a_second(env: Env, name: str) -> bool:
    import datetime

    created = datetime.datetime.fromisoformat(env.get("ingresses", name)["metadata"]["creationTimestamp"])
    return datetime.datetime.now(datetime.UTC) - created >= datetime.timedelta(seconds=1.1)


def test_virtualservers_at_startup_one_reload_problems_before_readiness_statuses_by_the_flush(
        env: Env) -> None:
    """VirtualServers take the 5.5 path with the Ingresses: deferred host resolution (a VirtualServer losing
    its host to an older Ingress), ONE reload, the problem's status written before readiness, the others'
    statuses deferred to the flush."""
    from tests.integration.vs_helpers import install_crds, virtual_server, vs_status

    install_crds(env)
    names = populate(env, 10)
    wait_until(lambda: _older_by_a_second(env, names[0]), "a second passes", deadline=5)
    ups = [{"name": "web", "service": "web", "port": 80}]
    env.cluster.load([virtual_server(f"vs-{i}", f"vs-{i}.example.com", upstreams=ups,
                                     routes=[{"path": "/", "action": {"pass": "web"}}]) for i in range(5)]
                     + [virtual_server("vs-loser", f"{names[0]}.example.com", upstreams=ups,
                                       routes=[{"path": "/", "action": {"pass": "web"}}])])
    env.cluster.faults.set_latency(300, verb="update", resource="virtualservers/status")
    c = env.controller(start=False)
    c.start(wait_ready=False)
    assert c.lbc.wait_ready(60)
    # At readiness: the problem's status is written, the deferred ones are not yet.
    assert vs_status(env, "vs-loser")["state"] == "Warning"
    assert f"host {names[0]}.example.com by Ingress {NS}/{names[0]}" in vs_status(env, "vs-loser")["message"]
    assert vs_status(env, "vs-0") == {}
    for i in range(5):
        assert c.get(f"vs-{i}.example.com").backend == "web"
    assert c.get(f"{names[0]}.example.com").backend == "web"
    flush = c.lbc.startup_flush
    wait_until(lambda: flush.result is not None, "flush finished")
    assert flush.result.state == "written"
    for i in range(5):
        assert vs_status(env, f"vs-{i}")["state"] == "Valid"
    c.wait_idle()
    assert c.reloads == 1


def test_start_up_renders_in_two_processes_each_resource_once(env: Env,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """With `--startup-render-processes 2` and more Ingresses than `render_ahead` needs, a forked process
    renders a share of them while this process builds the rest: this process renders only the rest, none
    twice, with one reload, and every host routes. The files the other process wrote are taken over as
    written (none is read back here), with their dynamic-upstream slots: an endpoint change reaches them
    without a reload."""
    names = populate(env, MIN_ITEMS + 40)
    rendered_here: list[str] = []
    original = IngressRenderer.render
    written_here: list[str] = []
    original_create = Manager.create_config

    def spy(self: IngressRenderer, resource: Any, ctx: Any) -> Any:
        rendered_here.append(resource.key)  # in a forked process this list is that process's copy
        return original(self, resource, ctx)

    def spy_create(self: Manager, name: str, content: str | bytes, **kw: Any) -> bool:
        written_here.append(name)  # written, or compared with the file on disk
        return original_create(self, name, content, **kw)

    monkeypatch.setattr(IngressRenderer, "render", spy)
    monkeypatch.setattr(Manager, "create_config", spy_create)
    c = env.controller(startup_render_processes=2)
    c.wait_idle()
    assert c.reloads == 1
    size = c.lbc.stats.rendered_ahead
    assert size > 0
    assert sorted(rendered_here) == sorted(set(rendered_here)), "a resource was rendered twice"
    assert len(rendered_here) == len(names) - c.lbc.stats.rendered_ahead
    for n in names[:: len(names) // 12]:
        assert c.get(f"{n}.example.com").backend == "web"
    theirs = [n for n in names if f"{NS}/{n}" not in rendered_here]
    assert len(theirs) == size
    with open(c.manager.config_path(f"{NS}-{theirs[0]}")) as f:  # a file the other process rendered
        assert f"ingressctl_route_host {theirs[0]}.example.com " in f.read()  # a plain Ingress: a route
    assert not {f"{NS}-{n}" for n in theirs} & set(written_here), "a file written ahead was not taken over"
    assert {f"{NS}-{n}" for n in names if n not in theirs} & set(written_here), "this process's last share"
    assert c.manager.dynamic_peers_socket, "dynamic upstreams are on in this test"
    env.endpoints("web", [env.backend("web-2")])
    for n in theirs[:: max(1, len(theirs) // 6)]:
        c.wait_backend(f"{n}.example.com", "/", "web-2")
    assert c.reloads == 1, "an endpoint change in a file written by the other process reloaded NGINX"


def test_tls_secret_files_are_written_by_a_forked_process_while_the_queue_drains(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """With enough TLS Secrets, a forked process writes the files of those the Ingresses reference while the
    sync thread drains the queue; the sync thread takes them over (it writes none of them), a Secret no
    Ingress references gets no file, one reload, and every host serves its own certificate."""
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    certs = [make_cert("even.example.com"), make_cert("odd.example.com")]
    n = MIN_ITEMS + 20
    objects: list[dict[str, Any]] = [certs[i % 2].secret(f"tls-{i}", NS) for i in range(n)]
    objects.append(certs[0].secret("unused", NS))
    for i in range(n):
        host = f"h{i}.example.com"
        objects.append(env.ingress(f"ing-{i}", [rule(host, ("/", "web"))], apply=False,
                                   tls=[{"hosts": [host], "secretName": f"tls-{i}"}]))
    env.cluster.load(objects)
    written_here: list[str] = []
    original = Manager.create_secret

    def spy(self: Manager, name: str, content: bytes | str, *args: Any, **kw: Any) -> str:
        written_here.append(name)
        return original(self, name, content, *args, **kw)

    monkeypatch.setattr(Manager, "create_secret", spy)
    c = env.controller(startup_render_processes=2)
    c.wait_idle()
    assert c.reloads == 1
    assert not [name for name in written_here if name.startswith(f"{NS}-tls-")], "written here, not ahead"
    on_disk = set(os.listdir(c.manager.secrets_dir))
    assert {f"{NS}-tls-{i}" for i in range(n)} <= on_disk
    assert f"{NS}-unused" not in on_disk
    for i in (0, 1, n - 1):
        assert c.https(f"h{i}.example.com").peer_cert_der == certs[i % 2].der
    # Taken over with what was written: a changed Secret is rewritten and served after one more reload.
    env.apply(certs[1].secret("tls-0", NS))
    wait_until(lambda: c.https("h0.example.com").peer_cert_der == certs[1].der, "the new certificate")


def test_a_failure_while_rendering_ahead_costs_only_the_parallelism(env: Env,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """If rendering ahead breaks half-way, the sync thread renders everything itself: every host routes,
    one reload, and each Ingress is still built once (what was built ahead is taken, not built again)."""
    from ingressctl.configs.configurator import Configurator
    from ingressctl.kinds.ingress.kind import IngressBuilder

    names = populate(env, MIN_ITEMS + 10)

    def broken(self: Configurator, items: Any, count: int, **kw: Any) -> Any:
        for _, _ in zip(range(count // 2), items, strict=False):  # builds half of them
            pass
        raise RuntimeError("a bug while rendering ahead")

    built: list[str] = []
    original = IngressBuilder.create_ingress_ex

    def spy(self: IngressBuilder, cfg: Any, **kw: Any) -> Any:
        built.append(cfg.key)
        return original(self, cfg, **kw)

    monkeypatch.setattr(Configurator, "render_ahead", broken)
    monkeypatch.setattr(IngressBuilder, "create_ingress_ex", spy)
    c = env.controller(startup_render_processes=2)
    c.wait_idle()
    assert c.reloads == 1 and c.lbc.stats.rendered_ahead == 0
    assert sorted(built) == sorted(f"{NS}/{n}" for n in names), "an Ingress built twice, or not at all"
    for n in names[:: len(names) // 12]:
        assert c.get(f"{n}.example.com").backend == "web"


def test_the_collector_is_paused_while_the_start_up_renders_and_resumes_after(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    populate(env, 5)
    enabled: list[bool] = []
    original = IngressRenderer.render

    def spy(self: IngressRenderer, resource: Any, ctx: Any) -> Any:
        enabled.append(gc.isenabled())
        return original(self, resource, ctx)

    monkeypatch.setattr(IngressRenderer, "render", spy)
    assert gc.isenabled()
    c = env.controller()
    c.wait_idle()
    assert enabled == [False] * 5, "a collection could run in the middle of the start-up render"
    assert gc.isenabled()
    env.ingress("later", [rule("later.example.com", ("/", "web"))])
    wait_until(lambda: len(enabled) == 6, "the later Ingress rendered")
    assert enabled[-1] is True  # only the start-up render pauses it
