"""Status: addresses, compare-before-write, one retry on conflict, leader gating, the start-up flush."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from ingressctl.controller.status import (
    StartupStatusFlush,
    StatusUpdater,
    external_service_addresses,
    to_addresses,
)

RT = "ingresses"


class Conflict(Exception):
    is_conflict = True
    is_not_found = False


class NotFound(Exception):
    is_conflict = False
    is_not_found = True


class FakeClient:
    """An API server for one resource: update_status with optimistic concurrency on resourceVersion."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.updates: list[str] = []
        self.gets = 0
        self.fail_next: list[Exception] = []
        self.lock = threading.Lock()
        self.rv = 100

    def put(self, ing: dict[str, Any]) -> None:
        with self.lock:
            self.rv += 1
            ing["metadata"]["resourceVersion"] = str(self.rv)
            self.objects[f"{ing['metadata']['namespace']}/{ing['metadata']['name']}"] = ing

    def get(self, rt: Any, namespace: str | None, name: str) -> dict[str, Any]:
        with self.lock:
            self.gets += 1
            obj = self.objects.get(f"{namespace}/{name}")
            if obj is None:
                raise NotFound(name)
            return copy.deepcopy(obj)

    def update_status(self, rt: Any, namespace: str | None, name: str,
                      body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            if self.fail_next:
                raise self.fail_next.pop(0)
            key = f"{namespace}/{name}"
            cur = self.objects.get(key)
            if cur is None:
                raise NotFound(name)
            if cur["metadata"]["resourceVersion"] != body["metadata"]["resourceVersion"]:
                raise Conflict(name)
            self.rv += 1
            cur = copy.deepcopy(cur)
            cur["status"] = copy.deepcopy(body.get("status"))
            cur["metadata"]["resourceVersion"] = str(self.rv)
            self.objects[key] = cur
            self.updates.append(key)
            return copy.deepcopy(cur)


def ing(name: str, status: list[dict[str, str]] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"}, "spec": {}}
    if status is not None:
        obj["status"] = {"loadBalancer": {"ingress": status}}
    return obj


def make(client: FakeClient, *, report: bool = True, leader: Any = None,
         cache: dict[str, dict[str, Any]] | None = None) -> StatusUpdater:
    def get_cached(key: str) -> dict[str, Any] | None:
        src = cache if cache is not None else client.objects
        o = src.get(key)
        return copy.deepcopy(o) if o is not None else None

    return StatusUpdater(client, get_cached=get_cached, report_ingress_status=report, is_leader=leader,
                         ingress_rt=RT)


# --- addresses ----------------------------------------------------------------------------------------------

def test_to_addresses_ip_or_hostname() -> None:
    assert to_addresses(["1.2.3.4", "lb.example.com", "", "2001:db8::1"]) == [
        {"ip": "1.2.3.4"}, {"hostname": "lb.example.com"}, {"ip": "2001:db8::1"}]


def test_external_service_addresses() -> None:
    lb = {"spec": {"type": "LoadBalancer", "externalIPs": ["5.6.7.8"]},
          "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "lb.example.com"}]}}}
    assert external_service_addresses(lb) == ["1.2.3.4", "lb.example.com", "5.6.7.8"]
    ext_name = {"spec": {"type": "ExternalName", "externalName": "x.example.com"}}
    assert external_service_addresses(ext_name) == ["x.example.com"]
    assert external_service_addresses({"spec": {}}) == []


def test_external_status_address_takes_precedence_and_empty_falls_back() -> None:
    u = make(FakeClient())
    assert not u.status_initialized
    u.save_status_from_external_service({"spec": {"externalIPs": ["9.9.9.9"]}})
    assert u.addresses() == [{"ip": "9.9.9.9"}]
    u.save_status_from_external_status("lb.example.com")
    assert u.addresses() == [{"hostname": "lb.example.com"}]
    u.save_status_from_external_service({"spec": {"externalIPs": ["8.8.8.8"]}})
    assert u.addresses() == [{"hostname": "lb.example.com"}]      # the ConfigMap value still wins
    u.save_status_from_external_status("")
    assert u.addresses() == [{"ip": "8.8.8.8"}]
    u.save_status_from_external_service(None)                    # Service deleted
    assert u.addresses() == [] and u.status_initialized


# --- writes -------------------------------------------------------------------------------------------------

def test_no_source_means_no_write() -> None:
    c = FakeClient()
    c.put(ing("a"))
    assert make(c).update_ingress_status("ns/a") is False
    assert c.updates == []


def test_write_only_when_changed() -> None:
    c = FakeClient()
    c.put(ing("a"))
    u = make(c)
    u.save_status_from_external_status("1.2.3.4")
    assert u.update_ingress_status("ns/a") is True
    assert c.objects["ns/a"]["status"]["loadBalancer"]["ingress"] == [{"ip": "1.2.3.4"}]
    assert u.update_ingress_status("ns/a") is False         # same status: nothing written
    assert c.updates == ["ns/a"]
    u.save_status_from_external_status("5.6.7.8")
    assert u.update_ingress_status(c.objects["ns/a"]) is True
    assert c.updates == ["ns/a", "ns/a"]


def test_clear_skips_already_empty_status() -> None:
    c = FakeClient()
    c.put(ing("a"))
    c.put(ing("b", [{"ip": "1.2.3.4"}]))
    u = make(c, report=False)
    assert u.clear_ingress_status("ns/a") is False            # absent == empty: never rewritten
    assert u.clear_ingress_status("ns/b") is True   # problems clear even without --report-ingress-status
    assert c.objects["ns/b"]["status"]["loadBalancer"]["ingress"] == []


def test_disabled_reporting_and_follower_do_not_write() -> None:
    c = FakeClient()
    c.put(ing("a", [{"ip": "1.1.1.1"}]))
    off = make(c, report=False)
    off.save_status_from_external_status("1.2.3.4")
    assert off.update_ingress_status("ns/a") is False
    follower = make(c, leader=lambda: False)
    follower.save_status_from_external_status("1.2.3.4")
    assert follower.update_ingress_status("ns/a") is False
    assert follower.clear_ingress_status("ns/a") is False
    assert c.updates == []


def test_conflict_is_retried_once_with_a_fresh_read() -> None:
    c = FakeClient()
    c.put(ing("a"))
    stale = {"ns/a": copy.deepcopy(c.objects["ns/a"])}
    c.put(copy.deepcopy(c.objects["ns/a"]))                  # someone else bumped the resourceVersion
    u = make(c, cache=stale)
    u.save_status_from_external_status("1.2.3.4")
    assert u.update_ingress_status("ns/a") is True
    assert c.gets == 1 and c.updates == ["ns/a"]


def test_second_failure_is_raised_and_counted() -> None:
    c = FakeClient()
    c.put(ing("a"))
    u = make(c)
    u.save_status_from_external_status("1.2.3.4")
    c.fail_next = [Conflict("a"), Conflict("a")]
    with pytest.raises(Conflict):
        u.update_ingress_status("ns/a")
    assert u.failures == 1 and c.gets == 1
    # bulk_update logs and counts instead of raising
    c.fail_next = [Conflict("a"), Conflict("a")]
    assert u.bulk_update(["ns/a"]) == 1


def test_deleted_ingress_is_not_an_error() -> None:
    c = FakeClient()
    u = make(c)
    u.save_status_from_external_status("1.2.3.4")
    assert u.update_ingress_status("ns/gone") is False        # not in the cache
    c.put(ing("a"))
    stale = {"ns/a": copy.deepcopy(c.objects["ns/a"])}
    del c.objects["ns/a"]
    assert make(c, cache=stale).update_ingress_status("ns/a") is False


# --- start-up flush -----------------------------------------------------------------------------------------

class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.now += seconds
        return False


def populated(n: int) -> tuple[FakeClient, list[str]]:
    c = FakeClient()
    for i in range(n):
        c.put(ing(f"i{i}"))
    return c, [f"ns/i{i}" for i in range(n)]


def test_flush_without_leader_election_writes_everything_with_workers() -> None:
    c, keys = populated(50)
    u = make(c)
    u.save_status_from_external_status("1.2.3.4")
    f = StartupStatusFlush(u, leader_election=False, workers=10)
    r = f.run(keys)
    assert (r.state, r.attempted, r.failed) == ("written", 50, 0)
    assert sorted(c.updates) == sorted(keys)
    assert not f.owns_writes()


def test_flush_waits_for_leadership() -> None:
    c, keys = populated(5)
    clock = FakeClock()
    leader = {"v": False}

    def is_leader() -> bool:
        if clock.now >= 12.0:
            leader["v"] = True
        return leader["v"]

    u = make(c, leader=is_leader)
    u.save_status_from_external_status("1.2.3.4")
    f = StartupStatusFlush(u, leader_election=True, clock=clock, wait=clock.wait, poll_interval=1.0)
    assert f.owns_writes()
    r = f.run(keys)
    assert r.state == "written" and len(c.updates) == 5
    assert 12.0 <= clock.now < 14.0


def test_follower_exits_after_60s_without_writing() -> None:
    c, keys = populated(5)
    clock = FakeClock()
    u = make(c, leader=lambda: False)
    u.save_status_from_external_status("1.2.3.4")
    f = StartupStatusFlush(u, leader_election=True, clock=clock, wait=clock.wait, poll_interval=0.5)
    r = f.run(keys)
    assert r.state == "skipped-follower"
    assert 60.0 <= clock.now <= 60.5
    assert c.updates == []
    assert not f.owns_writes()       # the became-leader path now owns the writes


def test_flush_stops_on_shutdown() -> None:
    c, keys = populated(2)
    u = make(c, leader=lambda: False)
    u.save_status_from_external_status("1.2.3.4")
    f = StartupStatusFlush(u, leader_election=True, wait=lambda s: True)
    assert f.run(keys).state == "stopped"
    assert c.updates == []


def test_flush_disabled_without_report_ingress_status() -> None:
    c, keys = populated(2)
    u = make(c, report=False)
    u.save_status_from_external_status("1.2.3.4")
    assert StartupStatusFlush(u, leader_election=False).run(keys).state == "skipped-disabled"
    assert c.updates == []


def test_flush_keys_are_read_once_leadership_is_known() -> None:
    """Ingresses configured while a follower waited for the lease are written by its flush too."""
    c, keys = populated(3)
    clock = FakeClock()
    current = list(keys)

    def is_leader() -> bool:
        if clock.now >= 5.0:
            c.put(ing("late"))
            current.append("ns/late")
            return True
        return False

    u = make(c, leader=is_leader)
    u.save_status_from_external_status("1.2.3.4")
    f = StartupStatusFlush(u, leader_election=True, clock=clock, wait=clock.wait, poll_interval=1.0)
    r = f.run(lambda: list(current))
    assert (r.state, r.attempted, r.written) == ("written", 4, 4)
    assert sorted(c.updates) == sorted([*keys, "ns/late"])


class ConcurrentClient(FakeClient):
    """Counts concurrent update_status calls; the first `barrier_parties` calls wait for each other."""

    def __init__(self, barrier_parties: int) -> None:
        super().__init__()
        self.barrier = threading.Barrier(barrier_parties, timeout=30)
        self.in_flight = 0
        self.max_in_flight = 0
        self.count_lock = threading.Lock()
        self.calls = 0

    def update_status(self, rt: Any, namespace: str | None, name: str,
                      body: dict[str, Any]) -> dict[str, Any]:
        with self.count_lock:
            self.in_flight += 1
            self.calls += 1
            first_wave = self.calls <= self.barrier.parties
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if first_wave:
                self.barrier.wait()   # raises BrokenBarrierError unless `parties` writers run at once
            return super().update_status(rt, namespace, name, body)
        finally:
            with self.count_lock:
                self.in_flight -= 1


def test_flush_runs_exactly_ten_writers_at_once() -> None:
    c = ConcurrentClient(barrier_parties=10)
    for i in range(40):
        c.put(ing(f"i{i}"))
    u = make(c)
    u.save_status_from_external_status("1.2.3.4")
    r = StartupStatusFlush(u, leader_election=False, workers=10).run([f"ns/i{i}" for i in range(40)])
    assert (r.state, r.failed, r.written) == ("written", 0, 40)
    assert c.max_in_flight == 10


def test_write_never_modifies_the_cached_object() -> None:
    c = FakeClient()
    c.put(ing("a", [{"ip": "9.9.9.9"}]))
    cache = {"ns/a": copy.deepcopy(c.objects["ns/a"])}
    before = copy.deepcopy(cache)
    u = StatusUpdater(c, get_cached=cache.get, report_ingress_status=True, ingress_rt=RT)
    u.save_status_from_external_status("1.2.3.4")
    assert u.update_ingress_status("ns/a") is True
    assert cache == before
    assert c.objects["ns/a"]["status"]["loadBalancer"]["ingress"] == [{"ip": "1.2.3.4"}]


def test_flush_stops_writing_on_shutdown() -> None:
    """A shutdown during the writes skips the rest: the process does not wait for thousands of writes."""
    c, keys = populated(20)
    u = make(c)
    u.save_status_from_external_status("1.2.3.4")
    f = StartupStatusFlush(u, leader_election=False, workers=1)
    inner = c.update_status

    def update_then_stop(rt: Any, namespace: str | None, name: str, body: dict[str, Any]) -> dict[str, Any]:
        f.stop()
        return inner(rt, namespace, name, body)

    c.update_status = update_then_stop  # type: ignore[method-assign]
    r = f.run(keys)
    assert (r.state, r.written) == ("stopped", 1)
    assert len(c.updates) == 1
