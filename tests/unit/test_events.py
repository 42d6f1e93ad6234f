"""EventRecorder against an in-test fake Events API: fields, aggregation, bounded buffer, retries, stop."""

from __future__ import annotations

import copy
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from structlog.testing import capture_logs

from ingressctl.k8s.clock import FakeClock
from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.events import EventRecorder
from ingressctl.k8s.resource import EVENTS, ResourceType

ING = {
    "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
    "metadata": {"name": "cafe", "namespace": "shop", "uid": "u-1", "resourceVersion": "42"},
}


class FakeEventsAPI:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.fail: Callable[[str], ApiError | None] = lambda verb: None
        self.block: threading.Event | None = None

    def _enter(self, rt: ResourceType, verb: str) -> None:
        assert rt == EVENTS
        if self.block is not None:
            self.block.wait(60)
        err = self.fail(verb)
        with self.lock:
            self.calls.append((verb, "error" if err else "ok"))
        if err is not None:
            raise err

    def create(self, rt: ResourceType, namespace: str | None, body: dict[str, Any]) -> dict[str, Any]:
        self._enter(rt, "create")
        with self.lock:
            key = (namespace or "", body["metadata"]["name"])
            assert body["metadata"]["namespace"] == namespace
            if key in self.events:
                raise ApiError(409, "AlreadyExists", "exists")
            self.events[key] = copy.deepcopy(body)
            return copy.deepcopy(body)

    def patch(self, rt: ResourceType, namespace: str | None, name: str, patch: Any, *,
              patch_type: str = "merge") -> dict[str, Any]:
        self._enter(rt, "patch")
        assert patch_type == "merge"
        with self.lock:
            ev = self.events.get((namespace or "", name))
            if ev is None:
                raise ApiError(404, "NotFound", "gone")
            ev.update(patch)
            return copy.deepcopy(ev)

    def all(self) -> list[dict[str, Any]]:
        with self.lock:
            return [copy.deepcopy(e) for e in self.events.values()]


def poll(cond: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.002)
    return cond()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(now=50.0, wall=datetime(2026, 11, 21, 3, 0, 0, 250000, tzinfo=UTC))


@pytest.fixture
def api() -> FakeEventsAPI:
    return FakeEventsAPI()


@pytest.fixture
def recorders() -> Iterator[list[EventRecorder]]:
    made: list[EventRecorder] = []
    yield made
    for r in made:
        r.stop(timeout=2)


def make(api: FakeEventsAPI, clock: FakeClock, made: list[EventRecorder], **kw: Any) -> EventRecorder:
    r = EventRecorder(api, clock=clock, host="node-1", rng=random.Random(3), **kw)
    made.append(r)
    return r


def test_event_fields(api: FakeEventsAPI, clock: FakeClock, recorders: list[EventRecorder]) -> None:
    r = make(api, clock, recorders)
    r.start()
    r.event(ING, "Normal", "AddedOrUpdated", "Configuration for shop/cafe was added or updated ")
    assert poll(lambda: len(api.all()) == 1)
    ev = api.all()[0]
    assert re.fullmatch(r"cafe\.[0-9a-f]{16}", ev["metadata"]["name"])
    nanos = int(ev["metadata"]["name"].split(".")[1], 16)
    assert nanos == int(datetime(2026, 11, 21, 3, 0, 0, tzinfo=UTC).timestamp()) * 10**9 + 250_000_000
    assert ev["metadata"]["namespace"] == "shop"
    assert ev["apiVersion"] == "v1" and ev["kind"] == "Event"
    assert ev["involvedObject"] == {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "cafe",
                                    "namespace": "shop", "uid": "u-1", "resourceVersion": "42"}
    assert ev["type"] == "Normal"
    assert ev["reason"] == "AddedOrUpdated"
    assert ev["message"] == "Configuration for shop/cafe was added or updated "
    assert ev["source"] == {"component": "nginx-ingress-controller", "host": "node-1"}
    assert ev["reportingComponent"] == "nginx-ingress-controller"
    assert ev["reportingInstance"] == "node-1"
    assert ev["firstTimestamp"] == ev["lastTimestamp"] == "2026-11-21T03:00:00Z"
    assert ev["count"] == 1


def test_repeats_aggregate_into_count(api: FakeEventsAPI, clock: FakeClock,
                                      recorders: list[EventRecorder]) -> None:
    r = make(api, clock, recorders)
    # Before start: repeats merge in the buffer.
    for _ in range(3):
        r.event(ING, "Warning", "Rejected", "bad host")
    assert r.pending() == 1
    r.start()
    assert poll(lambda: len(api.all()) == 1)
    assert api.all()[0]["count"] == 3
    # After the write: repeats PATCH the same Event.
    clock.step(61)
    r.event(ING, "Warning", "Rejected", "bad host")
    assert poll(lambda: api.all()[0]["count"] == 4)
    ev = api.all()[0]
    assert ev["firstTimestamp"] == "2026-11-21T03:00:00Z"
    assert ev["lastTimestamp"] == "2026-11-21T03:01:01Z"
    assert [v for v, _ in api.calls] == ["create", "patch"]
    # A different message, type, reason or object is another Event.
    r.event(ING, "Warning", "Rejected", "other problem")
    r.event(ING, "Normal", "Rejected", "bad host")
    r.event(ING, "Warning", "AddedOrUpdatedWithError", "bad host")
    other = copy.deepcopy(ING)
    other["metadata"]["uid"] = "u-2"  # same name, re-created object
    r.event(other, "Warning", "Rejected", "bad host")
    assert poll(lambda: len(api.all()) == 5)
    assert r.stats.created == 5 and r.stats.patched == 1


def test_cluster_scoped_object_and_kind_fallback(api: FakeEventsAPI, clock: FakeClock,
                                                 recorders: list[EventRecorder]) -> None:
    r = make(api, clock, recorders)
    r.start()
    item = {"metadata": {"name": "nginx", "uid": "c-1"}}  # a List item: no kind, no apiVersion
    r.event(item, "Normal", "Seen", "x", kind="IngressClass", api_version="networking.k8s.io/v1")
    assert poll(lambda: len(api.all()) == 1)
    ev = api.all()[0]
    assert ev["metadata"]["namespace"] == "default"
    assert ev["involvedObject"] == {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                                    "name": "nginx", "uid": "c-1"}


@pytest.mark.parametrize(("obj", "etype", "reason"), [
    (ING, "Error", "X"),
    ({"kind": "Ingress", "metadata": {}}, "Normal", "X"),
    ({"metadata": {"name": "a", "namespace": "b"}}, "Normal", "X"),  # no kind
    (ING, "Normal", ""),
    ("not a dict", "Normal", "X"),
])
def test_bad_input_is_logged_and_dropped(api: FakeEventsAPI, clock: FakeClock, recorders: list[EventRecorder],
                                         obj: Any, etype: str, reason: str) -> None:
    r = make(api, clock, recorders)
    r.start()
    with capture_logs() as logs:
        r.event(obj, etype, reason, "m")
    assert r.stats.invalid == 1
    assert r.pending() == 0
    assert any(e["log_level"] == "error" for e in logs)
    r.event(ING, "Normal", "Fine", "still works")
    assert poll(lambda: len(api.all()) == 1)


def test_message_is_truncated_on_a_utf8_boundary(api: FakeEventsAPI, clock: FakeClock,
                                                 recorders: list[EventRecorder]) -> None:
    r = make(api, clock, recorders)
    r.start()
    r.event(ING, "Warning", "Rejected", "x" + "é" * 2000)  # 1 + 4000 bytes
    assert poll(lambda: len(api.all()) == 1)
    msg = api.all()[0]["message"]
    assert len(msg.encode()) <= 1024
    assert len(msg.encode()) >= 1023
    assert msg == ("x" + "é" * 2000).encode()[:1024].decode("utf-8", "ignore")


def test_event_never_blocks_and_the_buffer_stays_bounded(api: FakeEventsAPI, clock: FakeClock,
                                                         recorders: list[EventRecorder]) -> None:
    api.block = threading.Event()  # the API hangs
    r = make(api, clock, recorders, buffer_size=100, drop_log_interval=10)
    r.start()
    r.event(ING, "Normal", "First", "taken by the writer, which then hangs")
    assert poll(lambda: r.pending() == 0)
    done = threading.Event()

    def burst() -> None:
        for i in range(5000):
            r.event(ING, "Warning", "Burst", f"message {i}")
        done.set()

    with capture_logs() as logs:
        threading.Thread(target=burst, daemon=True).start()
        assert done.wait(60), "event() blocked while the API hangs"
    assert r.pending() == 100
    assert r.dropped == 4900
    drop_logs = [e for e in logs if "dropping" in e["event"]]
    assert len(drop_logs) == 1, "dropping is logged at most once per interval"
    assert drop_logs[0]["dropped"] == 1
    clock.step(10)
    with capture_logs() as logs:
        r.event(ING, "Warning", "Burst", "one more")
    assert [e["dropped"] for e in logs if "dropping" in e["event"]] == [4900]
    api.block.set()
    assert poll(lambda: len(api.all()) == 101)


def test_transient_errors_are_retried(api: FakeEventsAPI, clock: FakeClock,
                                      recorders: list[EventRecorder]) -> None:
    failures = iter([ApiError(500, "InternalError", "x"), ApiError(0, "ConnectionRefused", "y"),
                     ApiError(429, "TooManyRequests", "z")])
    api.fail = lambda verb: next(failures, None)
    r = make(api, clock, recorders, retry_interval=10)
    r.start()
    r.event(ING, "Normal", "AddedOrUpdated", "m")
    while not api.all():
        assert poll(lambda: clock.waiters() >= 1 or bool(api.all()))
        clock.step(1)
        assert clock.now() < 1000
    assert [s for _, s in api.calls] == ["error", "error", "error", "ok"]
    assert r.stats.failed == 0 and r.stats.created == 1


def test_gives_up_after_max_tries(api: FakeEventsAPI, clock: FakeClock,
                                  recorders: list[EventRecorder]) -> None:
    api.fail = lambda verb: ApiError(503, "ServiceUnavailable", "down")
    r = make(api, clock, recorders, retry_interval=1, max_tries=4)
    r.start()
    r.event(ING, "Normal", "AddedOrUpdated", "m")
    while r.stats.failed == 0:
        assert poll(lambda: clock.waiters() >= 1 or r.stats.failed == 1)
        clock.step(1)
        assert clock.now() < 1000
    assert len(api.calls) == 4


def test_rejected_event_is_not_retried(api: FakeEventsAPI, clock: FakeClock,
                                       recorders: list[EventRecorder]) -> None:
    api.fail = lambda verb: ApiError(422, "Invalid", "name too long")
    r = make(api, clock, recorders)
    r.start()
    r.event(ING, "Normal", "AddedOrUpdated", "m")
    assert poll(lambda: r.stats.failed == 1)
    assert len(api.calls) == 1
    api.fail = lambda verb: None
    r.event(ING, "Normal", "AddedOrUpdated", "m")  # not cached as written: created on the next try
    assert poll(lambda: len(api.all()) == 1)


def test_patch_of_a_deleted_event_recreates_it(api: FakeEventsAPI, clock: FakeClock,
                                               recorders: list[EventRecorder]) -> None:
    r = make(api, clock, recorders)
    r.start()
    r.event(ING, "Normal", "AddedOrUpdated", "m")
    assert poll(lambda: len(api.all()) == 1)
    name = api.all()[0]["metadata"]["name"]
    with api.lock:
        api.events.clear()  # the Event expired (TTL)
    r.event(ING, "Normal", "AddedOrUpdated", "m")
    assert poll(lambda: len(api.all()) == 1)
    ev = api.all()[0]
    assert ev["metadata"]["name"] == name
    assert ev["count"] == 2
    assert [v for v, _ in api.calls] == ["create", "patch", "create"]


def test_known_event_cache_is_bounded(api: FakeEventsAPI, clock: FakeClock,
                                      recorders: list[EventRecorder]) -> None:
    r = make(api, clock, recorders, cache_size=2)
    r.start()
    for i, m in enumerate(("a", "b", "c")):
        r.event(ING, "Normal", "R", m)
        assert poll(lambda i=i: len(api.all()) == i + 1)  # written in this order: "a" is least recently used
    clock.step(1)
    r.event(ING, "Normal", "R", "c")  # still cached: patched
    assert poll(lambda: r.stats.patched == 1)
    r.event(ING, "Normal", "R", "a")  # evicted: a new Event
    assert poll(lambda: len(api.all()) == 4)


def test_event_names_are_unique_within_one_instant(api: FakeEventsAPI, clock: FakeClock,
                                                   recorders: list[EventRecorder]) -> None:
    r = make(api, clock, recorders)
    for i in range(50):
        r.event(ING, "Normal", "R", f"m{i}")
    r.start()
    assert poll(lambda: len(api.all()) == 50)
    assert r.stats.failed == 0


def test_stop_flushes_then_drops(api: FakeEventsAPI, clock: FakeClock) -> None:
    r = EventRecorder(api, clock=clock)
    for i in range(20):
        r.event(ING, "Normal", "R", f"m{i}")
    r.start()
    r.stop(timeout=30)
    assert len(api.all()) == 20
    r.event(ING, "Normal", "R", "late")
    assert r.dropped == 1
    assert len(api.all()) == 20


def test_stop_with_the_api_down_returns_and_counts(api: FakeEventsAPI, clock: FakeClock) -> None:
    api.fail = lambda verb: ApiError(500, "InternalError", "down")
    r = EventRecorder(api, clock=clock, retry_interval=10)
    for i in range(5):
        r.event(ING, "Normal", "R", f"m{i}")
    r.start()
    assert poll(lambda: clock.waiters() >= 1)  # the writer sleeps before its first retry
    r.stop(timeout=30)  # stop cuts the retry sleep short: one last try for it, one try for each other
    assert r.stats.failed == 5
    assert len(api.calls) == 6


def test_stop_before_start_drops_the_buffer(api: FakeEventsAPI, clock: FakeClock) -> None:
    r = EventRecorder(api, clock=clock)
    r.event(ING, "Normal", "R", "m")
    r.stop()
    assert r.dropped == 1
    assert api.calls == []


def test_invalid_settings(api: FakeEventsAPI) -> None:
    with pytest.raises(ValueError):
        EventRecorder(api, buffer_size=0)
    with pytest.raises(ValueError):
        EventRecorder(api, component="")
