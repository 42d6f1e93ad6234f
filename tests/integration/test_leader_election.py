"""Leader election against a devcluster over HTTP with the real KubeClient and the real clock.

Three electors (lease 2 s, renew deadline 1.5 s, retry 0.3 s) race for one Lease, with injected latency,
500s and 409s. Leadership terms are recorded from the callbacks and must never overlap; every write in the
Lease's watch history must follow the leaseTransitions rule.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from ingressctl.devcluster import DevCluster
from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.leader import LeaderElector
from ingressctl.k8s.resource import LEASES, ResourceType
from tests.helpers import wait_until

pytestmark = pytest.mark.integration

NS, NAME = "default", "ingressctl-leader-test"
LEASE, RENEW, RETRY = 2, 1.5, 0.3


class SwitchableClient:
    """A KubeClient whose requests can be made to fail as if this replica lost its network."""

    def __init__(self, inner: KubeClient) -> None:
        self.inner = inner
        self.broken = False
        self.lock = threading.Lock()
        self.ok_writes: list[tuple[float, str]] = []  # (monotonic time the request was SENT, holder written)

    def _check(self) -> None:
        if self.broken:
            raise ApiError(0, "ConnectionRefused", "injected: replica partitioned")

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        self._check()
        return self.inner.get(rt, namespace, name)

    def create(self, rt: ResourceType, namespace: str | None, body: dict[str, Any]) -> dict[str, Any]:
        self._check()
        sent = time.monotonic()
        out = self.inner.create(rt, namespace, body)
        with self.lock:
            self.ok_writes.append((sent, body["spec"]["holderIdentity"]))
        return out

    def update(self, rt: ResourceType, namespace: str | None, name: str,
               body: dict[str, Any]) -> dict[str, Any]:
        self._check()
        sent = time.monotonic()
        out = self.inner.update(rt, namespace, name, body)
        with self.lock:
            self.ok_writes.append((sent, body["spec"]["holderIdentity"]))
        return out


@dataclass
class Replica:
    identity: str
    client: SwitchableClient
    elector: LeaderElector = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock)
    terms: list[list[float]] = field(default_factory=list)  # [start, stop] (stop missing while leading)
    new_leaders: list[str] = field(default_factory=list)

    def started(self, stop: threading.Event) -> None:
        with self.lock:
            self.terms.append([time.monotonic()])
        stop.wait()  # leader work runs until the term ends

    def stopped(self) -> None:
        now = time.monotonic()
        with self.lock:
            if self.terms and len(self.terms[-1]) == 1:
                self.terms[-1].append(now)

    def new_leader(self, identity: str) -> None:
        with self.lock:
            self.new_leaders.append(identity)

    def closed_terms(self) -> list[tuple[float, float, str]]:
        with self.lock:
            return [(t[0], t[1], self.identity) for t in self.terms if len(t) == 2]

    def term_count(self) -> int:
        with self.lock:
            return len(self.terms)


@pytest.fixture
def cluster() -> Iterator[DevCluster]:
    with DevCluster(seed=7) as dc:
        yield dc


def make_replicas(dc: DevCluster, n: int) -> list[Replica]:
    replicas = []
    for i in range(n):
        # One hung request must not eat the renew deadline (client-go sets max(1 s, RenewDeadline/2)); the
        # elector retries on its own schedule, so the client does not retry.
        client = KubeClient.for_host(dc.url, max_retries=0, read_timeout=1.0, connect_timeout=1.0)
        r = Replica(f"replica-{i}", SwitchableClient(client))
        r.elector = LeaderElector(r.client, namespace=NS, name=NAME, identity=r.identity,
                                  lease_duration=LEASE, renew_deadline=RENEW, retry_period=RETRY,
                                  on_started_leading=r.started, on_stopped_leading=r.stopped,
                                  on_new_leader=r.new_leader)
        replicas.append(r)
    return replicas


def leaders(replicas: list[Replica]) -> list[Replica]:
    return [r for r in replicas if r.elector.is_leader()]


def assert_terms_never_overlap(replicas: list[Replica]) -> list[tuple[float, float, str]]:
    terms = sorted(t for r in replicas for t in r.closed_terms())
    for (_, e1, who1), (s2, _, who2) in itertools.pairwise(terms):
        assert s2 >= e1, f"{who2} started leading at {s2:.3f} before {who1} stopped at {e1:.3f}"
    return terms


def lease_history(dc: DevCluster, from_rv: str) -> list[dict[str, Any]]:
    """Every version of the Lease written since `from_rv`, from a watch over the devcluster's history."""
    client = KubeClient.for_host(dc.url)
    specs = []
    with client.watch(LEASES, NS, resource_version=from_rv, timeout_seconds=1, allow_bookmarks=False) as w:
        for ev in w:
            obj = ev["object"]
            if ev["type"] in ("ADDED", "MODIFIED") and obj["metadata"]["name"] == NAME:
                specs.append(obj["spec"])
    return specs


def assert_transitions_rule(specs: list[dict[str, Any]]) -> int:
    """leaseTransitions grows by one exactly when a (non-empty) holder takes over from a different one."""
    assert specs, "no lease writes seen"
    assert specs[0]["leaseTransitions"] == 0
    changes = 0
    for prev, cur in itertools.pairwise(specs):
        takeover = cur["holderIdentity"] != "" and cur["holderIdentity"] != prev["holderIdentity"]
        changes += takeover
        assert cur["leaseTransitions"] == prev["leaseTransitions"] + (1 if takeover else 0), (prev, cur)
    return changes


def test_one_leader_at_a_time_under_races_and_faults(cluster: DevCluster) -> None:
    dc = cluster
    dc.faults.set_latency(15, resource="leases")
    dc.faults.set_error_rate(500, 0.1, verb="update", resource="leases")
    dc.faults.set_error_rate(409, 0.1, verb="update", resource="leases")
    start_rv = dc.resource_version
    replicas = make_replicas(dc, 3)
    doubles = 0
    samples = 0
    stop_sampling = threading.Event()

    def sample() -> None:
        nonlocal doubles, samples
        while not stop_sampling.is_set():
            if len(leaders(replicas)) > 1:
                doubles += 1
            samples += 1
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    for r in replicas:  # all three race to create the Lease
        r.elector.start()
    sampler.start()
    try:
        for _ in range(3):  # partition the current leader three times to force takeovers
            leader = wait_until(lambda: leaders(replicas), "a leader")[0]
            before = sum(r.term_count() for r in replicas)
            leader.client.broken = True
            wait_until(lambda before=before: sum(r.term_count() for r in replicas) > before
                       and leaders(replicas), "another replica takes over")
            leader.client.broken = False
        wait_until(lambda: dc.stats.count("update", "leases") >= 40, "many renewals")
    finally:
        stop_sampling.set()
        sampler.join()
        dc.faults.reset()  # so that the releases at stop are not failed by injected errors
        for r in replicas:
            r.elector.stop()
    assert samples > 100
    assert doubles == 0, "two replicas reported is_leader() at once"
    terms = assert_terms_never_overlap(replicas)
    assert len(terms) >= 4
    assert all(len(r.terms) == len(r.closed_terms()) for r in replicas), "every term was closed"
    specs = lease_history(dc, start_rv)
    changes = assert_transitions_rule(specs)
    assert changes >= 3
    assert specs[-1]["holderIdentity"] == "", "the last leader released the lease on stop"


def test_takeover_waits_for_the_lease_and_the_old_leader_steps_down_first(cluster: DevCluster) -> None:
    dc = cluster
    replicas = make_replicas(dc, 3)
    for r in replicas:
        r.elector.start()
    try:
        old = wait_until(lambda: leaders(replicas), "a leader")[0]
        # Let it renew a few times, then cut it off from the API (it can neither renew nor release).
        n = len(old.client.ok_writes)
        wait_until(lambda: len(old.client.ok_writes) >= n + 3, "renewals")
        old.client.broken = True
        new = wait_until(lambda: [r for r in leaders(replicas) if r is not old], "a new leader")[0]
        wait_until(lambda: new.term_count() == 1, "the new leader's callback")
        with old.client.lock:  # read now: a request in flight when the switch flipped may have succeeded
            last_sent, holder = old.client.ok_writes[-1]
        assert holder == old.identity
        old_terms = old.closed_terms()
        assert len(old_terms) == 1, "the old leader had not stepped down when the new one started"
        old_stop = old_terms[0][1]
        new_start = new.terms[0][0]
        assert not old.elector.is_leader()
        # The old leader stepped down before anyone could take its lease ...
        assert old_stop <= new_start
        # ... and nobody took it before it expired: LEASE seconds after its last write (which was sent at
        # last_sent or later), counted from when the others observed that write.
        assert new_start >= last_sent + LEASE
        lease = KubeClient.for_host(dc.url).get(LEASES, NS, NAME)
        assert lease["spec"]["holderIdentity"] == new.identity
        assert lease["spec"]["leaseTransitions"] == 1
        assert lease["spec"]["leaseDurationSeconds"] == LEASE
        # The partitioned replica keeps campaigning: once back, it follows the new leader and does not lead.
        old.client.broken = False
        wait_until(lambda: old.elector.get_leader() == new.identity, "old replica sees the new leader")
        assert old.elector.is_leader() is False
        # OnNewLeader runs after the observed record changes (asynchronously, as client-go's goroutine).
        wait_until(lambda: new.identity in old.new_leaders, "old replica's OnNewLeader for the new leader")
        assert old.elector.is_leader() is False
    finally:
        for r in replicas:
            r.elector.stop()
    assert_terms_never_overlap(replicas)


def test_transitions_count_holder_changes_only_and_release_hands_over(cluster: DevCluster) -> None:
    dc = cluster
    start_rv = dc.resource_version
    a, b = make_replicas(dc, 2)
    a.elector.start()
    wait_until(a.elector.is_leader, "a leads")
    wait_until(lambda: len(a.client.ok_writes) >= 8, "a renews several times")
    b.elector.start()
    wait_until(lambda: b.elector.get_leader() == a.identity, "b observes a")
    spec = KubeClient.for_host(dc.url).get(LEASES, NS, NAME)["spec"]
    assert spec["leaseTransitions"] == 0, "renewals are not transitions"
    assert spec["holderIdentity"] == a.identity
    for key in ("acquireTime", "renewTime"):
        assert len(spec[key]) == len("2026-11-21T03:00:00.000000Z") and spec[key].endswith("Z")
        assert spec[key][19] == "." and spec[key][20:26].isdigit()
    a.elector.stop()  # releases: holder "", duration 1 s
    released_at = time.monotonic()
    assert not a.elector.is_leader()
    wait_until(b.elector.is_leader, "b takes the released lease")
    wait_until(lambda: b.term_count() == 1, "b's callback")  # (it runs just after is_leader turns true)
    # A released lease is free at once: b did not have to wait out a's lease duration.
    assert b.terms[0][0] - released_at < LEASE
    b.elector.stop()
    specs = lease_history(dc, start_rv)
    assert assert_transitions_rule(specs) == 1  # created by a (0), a -> "" (0), "" -> b (1), b -> "" (1)
    holders = [s["holderIdentity"] for s in specs]
    assert holders[0] == a.identity and holders[-1] == ""
    assert specs[-1]["leaseTransitions"] == 1
    assert [s["leaseDurationSeconds"] for s in specs if s["holderIdentity"] == ""] == [1, 1]
