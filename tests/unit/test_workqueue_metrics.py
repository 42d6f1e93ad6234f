"""Tests for the workqueue metrics: a fake provider records every call, time comes from a fake clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from ingressctl.k8s import workqueue
from ingressctl.k8s.clock import FakeClock
from ingressctl.k8s.ratelimit import ItemExponentialFailureRateLimiter
from ingressctl.k8s.workqueue import (
    UNFINISHED_WORK_UPDATE_PERIOD,
    DelayingQueue,
    NoopMetricsProvider,
    RateLimitingQueue,
    WorkQueue,
    set_default_metrics_provider,
)

JOIN = 10.0


def eventually(pred: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.001)


class Metric:
    """Records calls: value for gauges/counters, observations for histograms, sets for settable gauges."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.value = 0.0
        self.observations: list[float] = []
        self.sets: list[float] = []

    def inc(self) -> None:
        with self.lock:
            self.value += 1

    def dec(self) -> None:
        with self.lock:
            self.value -= 1

    def set(self, value: float) -> None:
        with self.lock:
            self.value = value
            self.sets.append(value)

    def observe(self, value: float) -> None:
        with self.lock:
            self.observations.append(value)


class RecordingProvider:
    def __init__(self) -> None:
        self.metrics: dict[tuple[str, str], Metric] = {}

    def _new(self, kind: str, name: str) -> Metric:
        assert (kind, name) not in self.metrics, f"{kind} created twice for {name}"
        self.metrics[(kind, name)] = m = Metric()
        return m

    def new_depth_metric(self, name: str) -> Metric:
        return self._new("depth", name)

    def new_adds_metric(self, name: str) -> Metric:
        return self._new("adds", name)

    def new_latency_metric(self, name: str) -> Metric:
        return self._new("latency", name)

    def new_work_duration_metric(self, name: str) -> Metric:
        return self._new("work_duration", name)

    def new_unfinished_work_seconds_metric(self, name: str) -> Metric:
        return self._new("unfinished", name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> Metric:
        return self._new("longest", name)

    def new_retries_metric(self, name: str) -> Metric:
        return self._new("retries", name)


@pytest.fixture
def provider() -> RecordingProvider:
    return RecordingProvider()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_depth_adds_latency_and_work_duration(provider: RecordingProvider, clock: FakeClock) -> None:
    q: WorkQueue[str] = WorkQueue("ingress", clock=clock, metrics_provider=provider)
    m = {kind: provider.metrics[(kind, "ingress")] for kind in
         ("depth", "adds", "latency", "work_duration", "unfinished", "longest")}
    q.add("a")
    clock.step(1)
    q.add("a")  # already queued: no metric moves, and latency keeps the first add's time
    q.add("b")
    assert (m["depth"].value, m["adds"].value) == (2, 2)
    clock.step(1)
    assert q.get(timeout=0) == ("a", False)
    assert m["depth"].value == 1
    assert m["latency"].observations == [2.0]  # from the first add
    clock.step(3)
    q.done("a")
    assert m["work_duration"].observations == [3.0]
    assert q.get(timeout=0) == ("b", False)
    assert m["latency"].observations == [2.0, 4.0]
    assert m["depth"].value == 0
    # Re-add during processing: counted at the add; the re-queue at done does not touch depth.
    clock.step(1)
    q.add("b")
    assert (m["depth"].value, m["adds"].value) == (1, 3)
    clock.step(1)
    q.done("b")
    assert m["work_duration"].observations == [3.0, 2.0]
    assert m["depth"].value == 1
    clock.step(2)
    assert q.get(timeout=0) == ("b", False)
    assert m["latency"].observations == [2.0, 4.0, 3.0]  # from the add during processing
    assert m["depth"].value == 0
    q.done("b")
    assert m["work_duration"].observations == [3.0, 2.0, 0.0]
    q.shut_down()
    assert q.join(JOIN)


def test_unfinished_and_longest_running_are_updated_periodically(provider: RecordingProvider,
                                                                 clock: FakeClock) -> None:
    q: WorkQueue[str] = WorkQueue("svc", clock=clock, metrics_provider=provider)
    unfinished = provider.metrics[("unfinished", "svc")]
    longest = provider.metrics[("longest", "svc")]
    for k in "abc":
        q.add(k)
    q.get(timeout=0)  # a, at t=0
    assert clock.block_until_waiters(1)  # the updater is parked until t=0.5
    clock.step(UNFINISHED_WORK_UPDATE_PERIOD)
    eventually(lambda: unfinished.sets[-1:] == [0.5])
    assert longest.sets[-1] == 0.5
    q.get(timeout=0)  # b, at t=0.5
    clock.step(2.5)  # t=3: a has run 3 s, b 2.5 s
    eventually(lambda: unfinished.sets[-1:] == [5.5])
    assert longest.sets[-1] == 3.0
    q.done("a")
    q.done("b")
    clock.step(UNFINISHED_WORK_UPDATE_PERIOD)
    eventually(lambda: unfinished.sets[-1:] == [0.0] and longest.sets[-1:] == [0.0])
    # Nothing is set between ticks.
    n = len(unfinished.sets)
    q.get(timeout=0)
    assert len(unfinished.sets) == n
    q.shut_down()
    assert q.join(JOIN), "metrics updater did not stop at shutdown"
    clock.step(10)
    assert len(unfinished.sets) == n  # stopped: no more updates


def test_retries_count_every_add_after(provider: RecordingProvider, clock: FakeClock) -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(1.0, 10.0), "rl", clock=clock, metrics_provider=provider)
    retries = provider.metrics[("retries", "rl")]
    q.add_after("a", 0)
    q.add_after("a", 5)
    q.add_rate_limited("b")
    q.add_rate_limited("b")
    assert retries.value == 4
    q.add("c")  # a plain add is not a retry
    assert retries.value == 4
    q.shut_down()
    q.add_after("d", 1)  # ignored after shutdown
    assert retries.value == 4
    assert q.join(JOIN)


def test_delayed_items_count_in_depth_only_when_added(provider: RecordingProvider, clock: FakeClock) -> None:
    q: DelayingQueue[str] = DelayingQueue("d", clock=clock, metrics_provider=provider)
    depth = provider.metrics[("depth", "d")]
    latency = provider.metrics[("latency", "d")]
    q.add_after("a", 2)
    assert depth.value == 0
    clock.step(2)
    eventually(lambda: depth.value == 1)
    clock.step(1)
    assert q.get(timeout=0) == ("a", False)
    assert latency.observations == [1.0]  # time in queue, not time waiting for the delay
    q.shut_down()
    assert q.join(JOIN)


def test_unnamed_queue_records_nothing(provider: RecordingProvider, clock: FakeClock) -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue(clock=clock, metrics_provider=provider)
    q.add("a")
    q.add_rate_limited("b")
    q.get(timeout=0)
    assert provider.metrics == {}
    q.shut_down()


def test_default_provider_is_used_for_named_queues(provider: RecordingProvider, clock: FakeClock) -> None:
    set_default_metrics_provider(provider)
    try:
        q: WorkQueue[str] = WorkQueue("dflt", clock=clock)
        q.add("a")
        assert provider.metrics[("adds", "dflt")].value == 1
        q.shut_down()
        assert q.join(JOIN)
    finally:
        set_default_metrics_provider(NoopMetricsProvider())
    assert isinstance(workqueue._default_provider, NoopMetricsProvider)


def test_noop_provider_starts_no_updater_thread(clock: FakeClock) -> None:
    q: WorkQueue[str] = WorkQueue("quiet", clock=clock)
    assert q.join(0)  # no background thread runs although the queue is not shut down
    named: WorkQueue[str] = WorkQueue("loud", clock=clock, metrics_provider=RecordingProvider())
    assert not named.join(0)  # ... while a real provider gets the updater
    named.shut_down()
    assert named.join(JOIN)
    q.add("a")
    assert q.get(timeout=0) == ("a", False)
    q.done("a")
    q.shut_down()


class _Exploding(RecordingProvider):
    def new_unfinished_work_seconds_metric(self, name: str) -> Metric:
        m = super().new_unfinished_work_seconds_metric(name)

        def boom(value: float) -> None:
            m.sets.append(value)
            raise RuntimeError("metric backend down")

        m.set = boom  # type: ignore[method-assign]
        return m


def test_failing_metric_does_not_kill_the_updater(clock: FakeClock) -> None:
    provider = _Exploding()
    q: WorkQueue[str] = WorkQueue("x", clock=clock, metrics_provider=provider)
    sets = provider.metrics[("unfinished", "x")].sets
    for i in range(1, 4):
        assert clock.block_until_waiters(1)
        clock.step(UNFINISHED_WORK_UPDATE_PERIOD)
        eventually(lambda i=i: len(sets) >= i)  # type: ignore[misc]
    q.shut_down()
    assert q.join(JOIN)
