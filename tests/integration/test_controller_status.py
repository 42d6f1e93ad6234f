"""Ingress status: written after readiness by the leader's start-up flush, only when it changes, from the
ConfigMap's external-status-address or the external Service; problem Ingresses get their status cleared."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import wait_until
from tests.integration.harness import NS, Env, rule

pytestmark = pytest.mark.integration


def lb(env: Env, name: str) -> list[dict[str, Any]]:
    ing = env.get("ingresses", name)
    return list(((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress") or [])


def status_writes(env: Env) -> int:
    return int(env.cluster.stats.count("update", "ingresses/status") +
               env.cluster.stats.count("patch", "ingresses/status"))


def config_map(env: Env, address: str) -> None:
    env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nginx-config", "namespace": NS},
               "data": {"external-status-address": address}})


def test_status_flush_by_leader_and_never_rewritten(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    names = [f"ing-{i}" for i in range(5)]
    for n in names:
        env.ingress(n, [rule(f"{n}.example.com", ("/", "web"))])
    config_map(env, "1.2.3.4")
    settings = env.settings(nginx_configmaps=f"{NS}/nginx-config", report_ingress_status=True, enabled=True)
    assert settings.leader_election.enabled
    c = env.controller(settings)
    for n in names:
        wait_until(lambda n=n: lb(env, n) == [{"ip": "1.2.3.4"}], f"status of {n}")
    flush = c.lbc.startup_flush
    wait_until(lambda: flush.result is not None, "flush finished")
    assert flush.result.state == "written" and flush.result.attempted == 5
    writes = status_writes(env)
    assert writes == 5
    lease = env.get("leases", "nginx-ingress-leader-election", namespace="default")
    assert lease["spec"]["holderIdentity"] == "ingressctl-test"
    c.stop()

    # A restart finds every status already right: nothing is written.
    c2 = env.controller(settings)
    flush2 = c2.lbc.startup_flush
    wait_until(lambda: flush2.result is not None, "second flush finished")
    assert flush2.result.state == "written"
    assert status_writes(env) == writes

    # A new address in the ConfigMap: every Ingress gets it (a hostname this time).
    config_map(env, "lb.example.com")
    for n in names:
        wait_until(lambda n=n: lb(env, n) == [{"hostname": "lb.example.com"}], f"new status of {n}")
    # A new Ingress gets the status at once in the steady state.
    env.ingress("late", [rule("late.example.com", ("/", "web"))])
    wait_until(lambda: lb(env, "late") == [{"hostname": "lb.example.com"}], "status of a new Ingress")


def test_external_service_address_and_cleared_status_for_losers(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.apply({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "nginx-ingress", "namespace": "default"},
               "spec": {"type": "LoadBalancer", "ports": [{"name": "http", "port": 80, "targetPort": 80}],
                        "externalIPs": ["5.6.7.8"]}})
    env.ingress("winner", [rule("shared.example.com", ("/", "web"))])
    c = env.controller(report_ingress_status=True, external_service="nginx-ingress")
    wait_until(lambda: lb(env, "winner") == [{"ip": "5.6.7.8"}], "status from the external Service")

    svc = env.get("services", "nginx-ingress", namespace="default")
    svc["spec"]["externalIPs"] = ["9.9.9.9"]
    env.kube.update(_rt("services"), "default", "nginx-ingress", svc)
    wait_until(lambda: lb(env, "winner") == [{"ip": "9.9.9.9"}], "status follows the external Service")

    # An Ingress that had a status and then loses all its hosts: Rejected, and its status is cleared.
    wait_until(lambda: _older_by_a_second(env, "winner"), "a second passes", deadline=5)
    env.ingress("loser", [rule("loser.example.com", ("/", "web"))])
    wait_until(lambda: lb(env, "loser") == [{"ip": "9.9.9.9"}], "the loser's status while it owns a host")
    env.ingress("loser", [rule("shared.example.com", ("/", "web"))])
    env.wait_event("loser", "Rejected", "All hosts are taken by other resources")
    wait_until(lambda: lb(env, "loser") == [], "loser's status cleared")
    assert c.get("shared.example.com", "/").backend == "web"


def _older_by_a_second(env: Env, name: str) -> bool:
    import datetime

    created = datetime.datetime.fromisoformat(env.get("ingresses", name)["metadata"]["creationTimestamp"])
    return datetime.datetime.now(datetime.UTC) - created >= datetime.timedelta(seconds=1.1)


def _rt(plural: str) -> Any:
    from ingressctl.k8s.resource import by_plural

    return by_plural(plural)


def test_two_replicas_only_the_leader_writes_and_a_new_leader_takes_over(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    names = [f"ing-{i}" for i in range(4)]
    for n in names:
        env.ingress(n, [rule(f"{n}.example.com", ("/", "web"))])
    config_map(env, "1.2.3.4")
    common = {"nginx_configmaps": f"{NS}/nginx-config", "report_ingress_status": True, "enabled": True,
              "lease_duration_s": 4.0, "renew_deadline_s": 3.0, "retry_period_s": 1.0}
    a = env.controller(env.settings(pod_name="replica-a", **common))
    for n in names:
        wait_until(lambda n=n: lb(env, n) == [{"ip": "1.2.3.4"}], f"status of {n}")
    b = env.controller(env.settings(pod_name="replica-b", **common))
    b.wait_backend("ing-0.example.com", "/", "web")          # the follower serves traffic too
    assert a.app.leader.is_leader() and not b.app.leader.is_leader()
    assert b.lbc.startup_flush.owns_writes()                 # still waiting for leadership
    writes = status_writes(env)
    assert writes == len(names)

    a.stop()                                                  # releases the lease
    wait_until(lambda: b.app.leader.is_leader(), "replica-b becomes leader")
    flush = b.lbc.startup_flush
    wait_until(lambda: flush.result is not None, "replica-b's flush ran")
    assert flush.result.state == "written"
    assert status_writes(env) == writes                       # nothing to change: nothing written
    assert b.app.status.writes == 0

    config_map(env, "5.6.7.8")                                # the new leader keeps status up to date
    for n in names:
        wait_until(lambda n=n: lb(env, n) == [{"ip": "5.6.7.8"}], f"new status of {n}")
    assert b.app.status.writes == len(names)
