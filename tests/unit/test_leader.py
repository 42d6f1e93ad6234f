"""LeaderElector against an in-test fake Lease API and a FakeClock: client-go's algorithm, step-down,
release."""

from __future__ import annotations

import copy
import itertools
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from ingressctl.k8s.clock import FakeClock
from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.leader import LeaderElector
from ingressctl.k8s.resource import LEASES, ResourceType
from ingressctl.k8s.resourcelock import LeaderElectionRecord, format_micro_time

NS, NAME = "nginx-ingress", "nginx-ingress-leader-election"
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class FakeLeaseAPI:
    """A dict of Leases with a global resourceVersion; update checks it (409 Conflict on a stale one)."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.lock = threading.Lock()
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self.rv = 0
        self.calls: list[tuple[str, str]] = []        # (verb, holder written or "")
        self.writes: list[tuple[float, dict[str, Any]]] = []  # (fake time, spec) of every successful write
        self.in_flight = 0
        self.fail: Callable[[str], ApiError | None] = lambda verb: None
        self.before_update: Callable[[], None] | None = None
        self.block: threading.Event | None = None     # when set to an unset Event, update() blocks on it

    def _check(self, rt: ResourceType, verb: str) -> None:
        assert rt == LEASES
        err = self.fail(verb)
        if err is not None:
            raise err

    def _next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        self.in_flight += 1
        try:
            self._check(rt, "get")
            with self.lock:
                self.calls.append(("get", ""))
                lease = self.leases.get((namespace or "", name))
                if lease is None:
                    raise ApiError(404, "NotFound", f'leases "{name}" not found')
                return copy.deepcopy(lease)
        finally:
            self.in_flight -= 1

    def create(self, rt: ResourceType, namespace: str | None, body: dict[str, Any]) -> dict[str, Any]:
        self.in_flight += 1
        try:
            self._check(rt, "create")
            with self.lock:
                key = (namespace or "", body["metadata"]["name"])
                self.calls.append(("create", body["spec"].get("holderIdentity", "")))
                if key in self.leases:
                    raise ApiError(409, "AlreadyExists", "already exists")
                obj = copy.deepcopy(body)
                obj["metadata"]["resourceVersion"] = self._next_rv()
                self.leases[key] = obj
                self.writes.append((self.clock.now(), copy.deepcopy(obj["spec"])))
                return copy.deepcopy(obj)
        finally:
            self.in_flight -= 1

    def update(self, rt: ResourceType, namespace: str | None, name: str,
               body: dict[str, Any]) -> dict[str, Any]:
        self.in_flight += 1
        try:
            if self.block is not None:
                self.block.wait(30)
            self._check(rt, "update")
            if self.before_update is not None:
                hook, self.before_update = self.before_update, None
                hook()
            with self.lock:
                key = (namespace or "", name)
                self.calls.append(("update", body["spec"].get("holderIdentity", "")))
                current = self.leases.get(key)
                if current is None:
                    raise ApiError(404, "NotFound", "not found")
                if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                    raise ApiError(409, "Conflict", "the object has been modified")
                obj = copy.deepcopy(body)
                obj["metadata"]["resourceVersion"] = self._next_rv()
                self.leases[key] = obj
                self.writes.append((self.clock.now(), copy.deepcopy(obj["spec"])))
                return copy.deepcopy(obj)
        finally:
            self.in_flight -= 1

    # test helpers
    def put(self, holder: str, *, duration: int = 15, transitions: int = 0,
            renew: str = "2000-01-01T00:00:00.000000Z") -> None:
        """Write a Lease as another replica would."""
        with self.lock:
            key = (NS, NAME)
            obj = self.leases.get(key) or {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                           "metadata": {"name": NAME, "namespace": NS}, "spec": {}}
            obj["spec"].update({"holderIdentity": holder, "leaseDurationSeconds": duration,
                                "leaseTransitions": transitions, "acquireTime": renew, "renewTime": renew})
            obj["metadata"]["resourceVersion"] = self._next_rv()
            self.leases[key] = obj

    def spec(self) -> dict[str, Any]:
        with self.lock:
            return copy.deepcopy(self.leases[(NS, NAME)]["spec"])


class Recorder:
    """Collects callback invocations (with the fake time they happened at)."""

    def __init__(self, clock: FakeClock, *, block_work: bool = False) -> None:
        self.clock = clock
        self.block_work = block_work
        self.lock = threading.Lock()
        self.log: list[tuple[str, float, str]] = []
        self.term_events: list[threading.Event] = []
        self.work_returned: list[float] = []

    def started(self, stop: threading.Event) -> None:
        with self.lock:
            self.log.append(("started", self.clock.now(), ""))
            self.term_events.append(stop)
        if self.block_work:
            stop.wait(30)  # leader work that runs until the term ends
        with self.lock:
            self.work_returned.append(self.clock.now())

    def stopped(self) -> None:
        with self.lock:
            self.log.append(("stopped", self.clock.now(), ""))

    def new_leader(self, identity: str) -> None:
        with self.lock:
            self.log.append(("new_leader", self.clock.now(), identity))

    def count(self, what: str) -> int:
        with self.lock:
            return sum(1 for w, _, _ in self.log if w == what)

    def kinds(self) -> list[str]:
        with self.lock:
            return [w for w, _, _ in self.log if w != "new_leader"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(now=1000.0, wall=datetime(2026, 11, 21, 3, 0, 0, tzinfo=UTC))


@pytest.fixture
def api(clock: FakeClock) -> FakeLeaseAPI:
    return FakeLeaseAPI(clock)


@pytest.fixture
def electors() -> Iterator[list[LeaderElector]]:
    made: list[LeaderElector] = []
    yield made
    for e in made:
        e.stop(timeout=10)


def make(api: FakeLeaseAPI, clock: FakeClock, identity: str = "a", rec: Recorder | None = None,
         made: list[LeaderElector] | None = None, **kw: Any) -> LeaderElector:
    e = LeaderElector(api, namespace=NS, name=NAME, identity=identity, clock=clock, rng=random.Random(7),
                      lease_duration=kw.pop("lease_duration", 15),
                      renew_deadline=kw.pop("renew_deadline", 10), retry_period=kw.pop("retry_period", 2),
                      on_started_leading=rec.started if rec else None,
                      on_stopped_leading=rec.stopped if rec else None,
                      on_new_leader=rec.new_leader if rec else None, **kw)
    if made is not None:
        made.append(e)
    return e


def poll(cond: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Wait on real time for a condition that background threads will make true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.002)
    return cond()


def settle(clock: FakeClock, api: FakeLeaseAPI, electors: list[LeaderElector] | None = None) -> None:
    """Wait until the election threads are parked on the fake clock with no request queued or running."""
    electors = electors or []
    assert poll(lambda: clock.waiters() >= max(1, len(electors)) and api.in_flight == 0
                and not any(e._request_pending() for e in electors)), "elector never parked"


def advance_until(clock: FakeClock, api: FakeLeaseAPI, cond: Callable[[], bool], *, step: float = 0.25,
                  limit: float = 120.0, electors: list[LeaderElector] | None = None) -> float:
    """Step the fake clock in small increments until `cond`; return the fake time it became true."""
    start = clock.now()
    while not cond():
        assert clock.now() - start <= limit, "condition never became true"
        settle(clock, api, electors)
        clock.step(step)
        poll(cond, timeout=0.05)
    return clock.now()


# -- configuration -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("ld", "rd", "rp", "match"), [
    (10, 10, 2, "lease_duration"),
    (10, 12, 2, "lease_duration"),
    (15, 2.4, 2, "renew_deadline"),      # must exceed 1.2 * retry_period
    (15, 10, 0, "retry_period"),
    (15, -1, 2, "renew_deadline"),
    (15.5, 10, 2, "whole number"),
])
def test_config_validation(api: FakeLeaseAPI, clock: FakeClock, ld: float, rd: float, rp: float,
                           match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LeaderElector(api, namespace=NS, name=NAME, identity="a", lease_duration=ld, renew_deadline=rd,
                      retry_period=rp, clock=clock)


def test_config_needs_identity_and_lock(api: FakeLeaseAPI, clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="identity"):
        LeaderElector(api, namespace=NS, name=NAME, identity="", clock=clock)
    with pytest.raises(ValueError, match="namespace"):
        LeaderElector(api, namespace="", name=NAME, identity="a", clock=clock)


def test_jitter_boundary_is_accepted(api: FakeLeaseAPI, clock: FakeClock) -> None:
    LeaderElector(api, namespace=NS, name=NAME, identity="a", lease_duration=2, renew_deadline=1.5,
                  retry_period=0.3, clock=clock)


def test_micro_time_always_has_six_digits() -> None:
    assert format_micro_time(datetime(2026, 11, 21, 3, 0, 0, tzinfo=UTC)) == "2026-11-21T03:00:00.000000Z"
    with pytest.raises(ValueError):
        format_micro_time(datetime(2026, 11, 21))


# -- one attempt (tryAcquireOrRenew) -------------------------------------------------------------------------


def test_acquires_by_creating_a_missing_lease(api: FakeLeaseAPI, clock: FakeClock) -> None:
    a = make(api, clock)
    assert a.try_acquire_or_renew() is True
    spec = api.spec()
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == spec["renewTime"] == "2026-11-21T03:00:00.000000Z"
    assert MICRO_TIME.match(spec["renewTime"])
    assert a.get_leader() == "a"


def test_lost_create_race_is_a_failed_round(api: FakeLeaseAPI, clock: FakeClock) -> None:
    a = make(api, clock)
    api.fail = lambda verb: None
    original_get = api.get

    def get_then_someone_creates(rt: ResourceType, ns: str | None, name: str) -> dict[str, Any]:
        try:
            return original_get(rt, ns, name)
        finally:
            api.put("b")  # b creates it between our GET (404) and our create

    api.get = get_then_someone_creates  # type: ignore[method-assign]
    assert a.try_acquire_or_renew() is False
    assert ("create", "a") in api.calls
    assert api.spec()["holderIdentity"] == "b"


def test_does_not_take_a_valid_lease_held_by_another(api: FakeLeaseAPI, clock: FakeClock) -> None:
    api.put("b", duration=15)
    a = make(api, clock)
    assert a.try_acquire_or_renew() is False
    clock.step(14.9)
    assert a.try_acquire_or_renew() is False
    assert api.spec()["holderIdentity"] == "b"
    assert a.get_leader() == "b"
    assert not [c for c in api.calls if c[0] != "get"], "no write while the lease is valid"


def test_takes_over_an_expired_lease_by_local_observation_time(api: FakeLeaseAPI, clock: FakeClock) -> None:
    # renewTime is 26 years old, but expiry counts from when WE first saw the record.
    api.put("b", duration=15, transitions=4, renew="2000-01-01T00:00:00.000000Z")
    a = make(api, clock)
    assert a.try_acquire_or_renew() is False
    clock.step(15.01)
    assert a.try_acquire_or_renew() is True
    spec = api.spec()
    assert spec["holderIdentity"] == "a"
    assert spec["leaseTransitions"] == 5
    assert spec["acquireTime"] == spec["renewTime"] == format_micro_time(clock.wall())


def test_future_renew_time_does_not_extend_the_lease(api: FakeLeaseAPI, clock: FakeClock) -> None:
    api.put("b", duration=15, renew="2099-01-01T00:00:00.000000Z")
    a = make(api, clock)
    assert a.try_acquire_or_renew() is False
    clock.step(15.01)
    assert a.try_acquire_or_renew() is True


def test_a_changed_record_restarts_the_expiry_clock(api: FakeLeaseAPI, clock: FakeClock) -> None:
    api.put("b", duration=15)
    a = make(api, clock)
    assert a.try_acquire_or_renew() is False
    clock.step(10)
    api.put("b", duration=15, renew="2026-11-21T03:00:10.000000Z")  # b renews
    assert a.try_acquire_or_renew() is False                         # seen at t=10
    clock.step(14.9)
    assert a.try_acquire_or_renew() is False                         # 24.9 s after the first sight
    clock.step(0.2)
    assert a.try_acquire_or_renew() is True


def test_renew_keeps_acquire_time_and_transitions_and_skips_the_get(api: FakeLeaseAPI,
                                                                    clock: FakeClock) -> None:
    a = make(api, clock)
    assert a.try_acquire_or_renew() is True
    first = api.spec()
    api.calls.clear()
    for _ in range(3):
        clock.step(2)
        assert a.try_acquire_or_renew() is True
    spec = api.spec()
    assert spec["acquireTime"] == first["acquireTime"]
    assert spec["renewTime"] == "2026-11-21T03:00:06.000000Z"
    assert spec["leaseTransitions"] == 0
    assert api.calls == [("update", "a")] * 3, "renewals use the fast path (no GET)"


def test_conflict_on_update_loses_the_round(api: FakeLeaseAPI, clock: FakeClock) -> None:
    api.put("b", duration=15)
    a = make(api, clock)
    assert a.try_acquire_or_renew() is False
    clock.step(16)
    api.before_update = lambda: api.put("c", duration=15, transitions=1)  # c wins between our GET and PUT
    assert a.try_acquire_or_renew() is False
    assert api.spec()["holderIdentity"] == "c"
    assert a.try_acquire_or_renew() is False  # c's record is new to us: a full lease duration again
    assert a.get_leader() == "c"


def test_conflict_on_fast_path_renew_falls_back_and_sees_the_new_holder(api: FakeLeaseAPI,
                                                                        clock: FakeClock) -> None:
    a = make(api, clock)
    assert a.try_acquire_or_renew() is True
    api.put("b", duration=15, transitions=1)  # someone overwrote it (our cached RV is stale)
    clock.step(2)
    assert a.try_acquire_or_renew() is False
    assert [v for v, _ in api.calls][-2:] == ["update", "get"]
    assert api.spec()["holderIdentity"] == "b"


def test_api_errors_fail_the_round_without_raising(api: FakeLeaseAPI, clock: FakeClock) -> None:
    a = make(api, clock)
    api.fail = lambda verb: ApiError(500, "InternalError", "boom")
    assert a.try_acquire_or_renew() is False
    api.fail = lambda verb: ApiError(0, "ConnectionRefused", "refused")
    assert a.try_acquire_or_renew() is False


def test_lease_transitions_count_holder_changes_only(api: FakeLeaseAPI, clock: FakeClock) -> None:
    a, b = make(api, clock, "a"), make(api, clock, "b")
    assert a.try_acquire_or_renew()
    for _ in range(5):
        clock.step(2)
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew()
    assert api.spec()["leaseTransitions"] == 0
    clock.step(15.01)  # a stops renewing; b saw a's last renewal 15.01 s ago
    assert b.try_acquire_or_renew()
    assert api.spec()["leaseTransitions"] == 1
    for _ in range(3):
        clock.step(2)
        assert b.try_acquire_or_renew()
    assert api.spec()["leaseTransitions"] == 1
    records = [LeaderElectionRecord(**{"holder_identity": s["holderIdentity"],
                                       "lease_duration_seconds": s["leaseDurationSeconds"],
                                       "leader_transitions": s["leaseTransitions"]}) for _, s in api.writes]
    holders = [r.holder_identity for r in records]
    changes = sum(1 for x, y in itertools.pairwise(holders) if x != y)
    assert records[-1].leader_transitions == changes == 1


def test_malformed_lease_is_not_fatal(api: FakeLeaseAPI, clock: FakeClock) -> None:
    api.put("b")
    api.leases[(NS, NAME)]["spec"]["leaseDurationSeconds"] = "fifteen"
    a = make(api, clock)
    assert a.try_acquire_or_renew() is True  # an unreadable record is treated as free and overwritten
    assert api.spec()["holderIdentity"] == "a"
    assert api.spec()["leaseDurationSeconds"] == 15


# -- the election loop ---------------------------------------------------------------------------------------


def test_becomes_leader_and_calls_back_once(api: FakeLeaseAPI, clock: FakeClock,
                                           electors: list[LeaderElector]) -> None:
    rec = Recorder(clock)
    a = make(api, clock, rec=rec, made=electors)
    a.start()
    assert poll(a.is_leader)
    assert poll(lambda: rec.count("started") == 1 and rec.count("new_leader") == 1)
    for _ in range(10):  # many renewals
        settle(clock, api, [a])
        clock.step(1)
    settle(clock, api, [a])
    assert a.is_leader()
    assert rec.kinds() == ["started"]
    assert [x for w, _, x in rec.log if w == "new_leader"] == ["a"]
    assert api.spec()["leaseTransitions"] == 0


def test_steps_down_before_the_lease_could_be_taken(api: FakeLeaseAPI, clock: FakeClock,
                                                    electors: list[LeaderElector]) -> None:
    rec = Recorder(clock, block_work=True)
    a = make(api, clock, rec=rec, made=electors)
    a.start()
    assert poll(a.is_leader)
    for _ in range(6):
        settle(clock, api, [a])
        clock.step(1)
    api.fail = lambda verb: ApiError(503, "ServiceUnavailable", "down")
    last_write = api.writes[-1][0]
    stepped_down_at = advance_until(clock, api, lambda: rec.count("stopped") == 1, step=0.25, electors=[a])
    assert not a.is_leader()
    assert rec.term_events[0].is_set(), "the leader work was told to stop"
    assert poll(lambda: len(rec.work_returned) == 1)
    # Another replica that saw the last write could take the lease only at last_write + 15.
    assert stepped_down_at <= last_write + 10 + 0.25 + 1e-9
    assert stepped_down_at < last_write + 15
    assert rec.kinds() == ["started", "stopped"]


def test_is_leader_turns_false_at_the_deadline_even_if_a_request_hangs(
        api: FakeLeaseAPI, clock: FakeClock, electors: list[LeaderElector]) -> None:
    rec = Recorder(clock)
    a = make(api, clock, rec=rec, made=electors)
    a.start()
    assert poll(a.is_leader)
    last_write = api.writes[-1][0]
    api.block = threading.Event()  # the next update hangs until released
    try:
        # The renew attempt starts at +2 and never returns; the leader must step down at +10 regardless.
        while clock.now() < last_write + 10:
            assert poll(lambda: clock.waiters() >= 1)
            clock.step(0.5)
        assert poll(lambda: rec.count("stopped") == 1)
        assert not a.is_leader()
        assert api.in_flight == 1, "the renew request is still hanging"
    finally:
        api.block.set()
        api.block = None


def test_loser_campaigns_again_and_callbacks_fire_once_per_transition(
        api: FakeLeaseAPI, clock: FakeClock, electors: list[LeaderElector]) -> None:
    rec = Recorder(clock)
    a = make(api, clock, rec=rec, made=electors)
    a.start()
    assert poll(a.is_leader)
    api.fail = lambda verb: ApiError(500, "InternalError", "down")
    advance_until(clock, api, lambda: rec.count("stopped") == 1, electors=[a])
    api.fail = lambda verb: None
    advance_until(clock, api, lambda: rec.count("started") == 2, electors=[a])
    assert a.is_leader()
    assert api.spec()["holderIdentity"] == "a"
    assert api.spec()["leaseTransitions"] == 0, "nobody else held it: re-acquiring is not a transition"
    for _ in range(8):
        settle(clock, api, [a])
        clock.step(1)
    assert rec.kinds() == ["started", "stopped", "started"]


def test_steps_down_at_once_when_another_holder_appears(api: FakeLeaseAPI, clock: FakeClock,
                                                        electors: list[LeaderElector]) -> None:
    rec = Recorder(clock)
    a = make(api, clock, rec=rec, made=electors)
    a.start()
    assert poll(a.is_leader)
    settle(clock, api, [a])
    api.put("intruder", duration=15, transitions=1)
    t = advance_until(clock, api, lambda: rec.count("stopped") == 1, step=0.5, electors=[a])
    assert t <= api.writes[-1][0] + 2 + 0.5 + 1e-9, "stepped down at the first renew, not at the deadline"
    assert poll(lambda: ("new_leader", "intruder") in [(w, x) for w, _, x in rec.log])
    assert not a.is_leader()
    assert a.get_leader() == "intruder"


def test_release_on_stop_after_leader_work_returns(api: FakeLeaseAPI, clock: FakeClock) -> None:
    rec = Recorder(clock, block_work=True)
    a = make(api, clock, rec=rec)
    a.start()
    assert poll(a.is_leader)
    settle(clock, api, [a])
    clock.step(2)
    settle(clock, api, [a])
    before = api.spec()
    writes_before = len(api.writes)
    a.stop(timeout=10)
    assert not a.is_leader()
    spec = api.spec()
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == before["leaseTransitions"]
    assert MICRO_TIME.match(spec["renewTime"])
    assert len(api.writes) == writes_before + 1
    assert rec.kinds() == ["started", "stopped"]
    assert len(rec.work_returned) == 1, "leader work returned before the release"
    # A released lease is free at once for the next candidate, and that is a transition.
    b = make(api, clock, "b")
    assert b.try_acquire_or_renew() is True
    assert api.spec()["leaseTransitions"] == before["leaseTransitions"] + 1


def test_no_release_when_disabled(api: FakeLeaseAPI, clock: FakeClock) -> None:
    a = make(api, clock, release_on_cancel=False)
    a.start()
    assert poll(a.is_leader)
    a.stop(timeout=10)
    assert api.spec()["holderIdentity"] == "a"


def test_stop_without_ever_leading(api: FakeLeaseAPI, clock: FakeClock) -> None:
    api.put("b", duration=15, transitions=3)
    rec = Recorder(clock)
    a = make(api, clock, rec=rec)
    a.start()
    assert poll(lambda: a.get_leader() == "b")
    a.stop(timeout=10)
    assert rec.kinds() == ["stopped"], "on_stopped_leading runs on exit even if it never led (client-go)"
    assert api.spec()["holderIdentity"] == "b", "never releases a lease it does not hold"
    assert not [c for c in api.calls if c[0] != "get"]


def test_failing_callbacks_do_not_break_the_election(api: FakeLeaseAPI, clock: FakeClock,
                                                    electors: list[LeaderElector]) -> None:
    def boom(*_: Any) -> None:
        raise RuntimeError("callback bug")

    a = LeaderElector(api, namespace=NS, name=NAME, identity="a", clock=clock, on_started_leading=boom,
                      on_stopped_leading=boom, on_new_leader=boom)
    electors.append(a)
    a.start()
    assert poll(a.is_leader)
    for _ in range(5):
        settle(clock, api, [a])
        clock.step(2)
    settle(clock, api, [a])
    assert a.is_leader()
    a.stop(timeout=10)
    assert api.spec()["holderIdentity"] == ""


def test_two_electors_one_leader(api: FakeLeaseAPI, clock: FakeClock, electors: list[LeaderElector]) -> None:
    ra, rb = Recorder(clock), Recorder(clock)
    a = make(api, clock, "a", ra, electors)
    b = make(api, clock, "b", rb, electors)
    a.start()
    assert poll(a.is_leader)
    b.start()
    assert poll(lambda: b.get_leader() == "a")
    for _ in range(20):
        settle(clock, api, [a, b])
        clock.step(1)
        assert not (a.is_leader() and b.is_leader())
    assert a.is_leader() and not b.is_leader()
    a.stop(timeout=10)  # releases: b takes over at its next attempt, without waiting a lease duration
    t_release = clock.now()
    advance_until(clock, api, b.is_leader, step=0.5, electors=[b])
    assert clock.now() - t_release < 15
    assert api.spec()["leaseTransitions"] == 1


def test_slow_path_renew_by_the_holder_is_not_a_transition(api: FakeLeaseAPI, clock: FakeClock) -> None:
    a = make(api, clock)
    assert a.try_acquire_or_renew() is True
    acquired = api.spec()["acquireTime"]
    # A metadata-only change (a label) makes the fast-path PUT conflict; the slow path renews.
    with api.lock:
        api.leases[(NS, NAME)]["metadata"]["labels"] = {"x": "y"}
        api.leases[(NS, NAME)]["metadata"]["resourceVersion"] = api._next_rv()
    clock.step(2)
    api.calls.clear()
    assert a.try_acquire_or_renew() is True
    assert [v for v, _ in api.calls] == ["update", "get", "update"]
    # A restarted process with the same identity renews at once, keeping acquireTime and transitions.
    clock.step(2)
    a2 = make(api, clock, "a")
    assert a2.try_acquire_or_renew() is True
    spec = api.spec()
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == acquired
    assert spec["renewTime"] == "2026-11-21T03:00:04.000000Z"


def test_leader_election_events_are_recorded(api: FakeLeaseAPI, clock: FakeClock) -> None:
    seen: list[tuple[str, str, str, str]] = []

    class Sink:
        def event(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
            seen.append((obj["kind"], event_type, reason, message))

    a = make(api, clock, event_recorder=Sink())
    a.start()
    assert poll(a.is_leader)
    a.stop(timeout=10)
    assert seen == [("Lease", "Normal", "LeaderElection", "a became leader"),
                    ("Lease", "Normal", "LeaderElection", "a stopped leading")]


def test_stop_from_inside_callbacks_does_not_deadlock(api: FakeLeaseAPI, clock: FakeClock) -> None:
    holder: list[LeaderElector] = []
    stopped = threading.Event()

    def on_started(stop: threading.Event) -> None:
        holder[0].stop()  # e.g. the app decides to exit from leader work

    def on_stopped() -> None:
        holder[0].stop()
        stopped.set()

    a = LeaderElector(api, namespace=NS, name=NAME, identity="a", clock=clock, on_started_leading=on_started,
                      on_stopped_leading=on_stopped)
    holder.append(a)
    a.start()
    assert stopped.wait(20)
    assert poll(lambda: api.spec()["holderIdentity"] == "")  # released after the leader work returned
    a.stop(timeout=10)
    assert not a.is_leader()
