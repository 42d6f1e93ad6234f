"""Tests for DelayingQueue and RateLimitingQueue on a fake clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingressctl.k8s.clock import FakeClock
from ingressctl.k8s.ratelimit import ItemExponentialFailureRateLimiter
from ingressctl.k8s.workqueue import MAX_WAIT, DelayingQueue, RateLimitingQueue, WorkQueue

JOIN = 10.0


def eventually(pred: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.001)


def drain(q: WorkQueue[str]) -> list[str]:
    """Get (and mark done) everything queued right now, in order."""
    out: list[str] = []
    while True:
        item, _ = q.get(timeout=0)
        if item is None:
            return out
        q.done(item)
        out.append(item)


def parked(clock: FakeClock) -> None:
    """Wait until the waiting loop is parked on the clock."""
    eventually(lambda: clock.waiters() >= 1)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def dq(clock: FakeClock) -> Iterator[DelayingQueue[str]]:
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    yield q
    q.shut_down()
    assert q.join(JOIN)


def test_items_appear_only_when_due_in_deadline_order(dq: DelayingQueue[str], clock: FakeClock) -> None:
    dq.add_after("a", 5)
    dq.add_after("b", 2)
    dq.add_after("c", 10)
    dq.add_after("d", 2)
    assert len(dq) == 0 and dq.waiting() == 4
    clock.step(1.999)
    clock.step(0.001)
    eventually(lambda: len(dq) == 2)
    # Everything due at the same wake-up is added in one pass, so "a" (due at 5) would be here by now.
    assert drain(dq) == ["b", "d"]
    assert dq.waiting() == 2
    clock.step(3)
    eventually(lambda: len(dq) == 1)
    assert drain(dq) == ["a"]
    clock.step(100)
    eventually(lambda: len(dq) == 1)
    assert drain(dq) == ["c"]
    assert dq.waiting() == 0


def test_same_wakeup_releases_in_deadline_order(dq: DelayingQueue[str], clock: FakeClock) -> None:
    dq.add_after("x", 3)
    dq.add_after("y", 1)
    dq.add_after("z", 2)
    clock.step(3)
    eventually(lambda: len(dq) == 3)
    assert drain(dq) == ["y", "z", "x"]


def test_earlier_deadline_wins(dq: DelayingQueue[str], clock: FakeClock) -> None:
    dq.add_after("a", 10)
    dq.add_after("a", 2)  # moves it earlier
    dq.add_after("b", 2)
    dq.add_after("b", 10)  # does not move it later
    dq.add_after("sentinel", 10)
    assert dq.waiting() == 3
    clock.step(2)
    eventually(lambda: len(dq) == 2)
    assert drain(dq) == ["a", "b"]
    clock.step(8)
    eventually(lambda: len(dq) >= 1)
    # The superseded deadlines at 10 do not hand "a" or "b" out a second time.
    assert drain(dq) == ["sentinel"]
    assert dq.waiting() == 0


def test_duplicates_collapse(dq: DelayingQueue[str], clock: FakeClock) -> None:
    for _ in range(5):
        dq.add_after("a", 3)
    assert dq.waiting() == 1
    dq.add("b")
    dq.add_after("b", 1)  # already queued: when due it is de-duplicated by the queue
    clock.step(3)
    eventually(lambda: dq.waiting() == 0 and len(dq) == 2)
    assert drain(dq) == ["b", "a"]


def test_non_positive_delay_adds_at_once(dq: DelayingQueue[str]) -> None:
    dq.add_after("a", 0)
    dq.add_after("b", -1)
    assert len(dq) == 2 and dq.waiting() == 0


def test_far_deadline_survives_heartbeat_wakeups(dq: DelayingQueue[str], clock: FakeClock) -> None:
    dq.add_after("far", 1000)
    parked(clock)
    clock.step(MAX_WAIT)  # the loop wakes on its heartbeat, finds nothing due and parks again
    parked(clock)
    assert len(dq) == 0
    clock.step(1000 - MAX_WAIT)
    eventually(lambda: len(dq) == 1)


def test_shutdown_stops_loop_and_drops_waiting_items(clock: FakeClock) -> None:
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 5)
    q.add("b")
    parked(clock)
    q.shut_down()
    assert q.join(JOIN), "waiting loop thread did not end"
    assert q.waiting() == 0
    q.add_after("c", 1)  # ignored
    q.add_after("d", 0)  # ignored
    assert q.waiting() == 0
    clock.step(10)
    assert q.get() == ("b", False)
    q.done("b")
    assert q.get() == (None, True)


def test_shut_down_with_drain_stops_loop(clock: FakeClock) -> None:
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 5)
    assert q.shut_down_with_drain()
    assert q.join(JOIN)
    assert q.waiting() == 0


def test_add_after_from_many_threads(dq: DelayingQueue[str], clock: FakeClock) -> None:
    n_threads, per_thread = 7, 50

    def producer(t: int) -> None:
        for i in range(per_thread):
            dq.add_after(f"k{i}", 1 + (i + t) % 7)

    threads = [threading.Thread(target=producer, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN)
    assert dq.waiting() == per_thread
    clock.step(1)  # with 7 threads, every key had some thread give it delay 1
    eventually(lambda: len(dq) == per_thread)
    assert sorted(drain(dq)) == sorted(f"k{i}" for i in range(per_thread))
    assert dq.waiting() == 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(min_value=-1, max_value=6)), max_size=25))
def test_each_item_appears_at_its_earliest_deadline(requests: list[tuple[str, int]]) -> None:
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    try:
        # A delay <= 0 adds at once and leaves any waiting entry of the same item alone.
        earliest: dict[str, int] = {}
        for item, delay in requests:
            q.add_after(item, delay)
            if delay > 0:
                earliest[item] = min(earliest.get(item, delay), delay)
        assert sorted(drain(q)) == sorted({k for k, d in requests if d <= 0})
        for t in range(1, 7):
            clock.step(1)
            due = sorted(k for k, d in earliest.items() if d == t)
            later = sum(1 for d in earliest.values() if d > t)

            def arrived(due: list[str] = due, later: int = later) -> bool:
                return len(q) == len(due) and q.waiting() == later

            eventually(arrived)
            assert sorted(drain(q)) == due
    finally:
        q.shut_down()
        assert q.join(JOIN)


# -- rate-limiting queue -----------------------------------------------------------------------------------

def test_add_rate_limited_uses_the_limiter_and_forget_resets(clock: FakeClock) -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 60.0), clock=clock)
    try:
        q.add_rate_limited("a")  # delay 1
        assert q.num_requeues("a") == 1 and len(q) == 0
        clock.step(1)
        eventually(lambda: len(q) == 1)
        assert drain(q) == ["a"]
        q.add_rate_limited("a")  # delay 2
        q.add_after("sentinel", 1)
        assert q.num_requeues("a") == 2
        clock.step(1)
        eventually(lambda: len(q) >= 1)
        assert drain(q) == ["sentinel"]
        clock.step(1)
        eventually(lambda: len(q) == 1)
        assert drain(q) == ["a"]
        q.forget("a")
        assert q.num_requeues("a") == 0
        q.add_rate_limited("a")  # back to delay 1
        clock.step(1)
        eventually(lambda: len(q) == 1)
        assert drain(q) == ["a"]
    finally:
        q.shut_down()
        assert q.join(JOIN)


def test_forget_does_not_remove_from_queue(clock: FakeClock) -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue(clock=clock)
    try:
        q.add("a")
        q.forget("a")
        assert len(q) == 1
    finally:
        q.shut_down()


def test_default_limiter_on_the_queue_clock(clock: FakeClock) -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue(clock=clock)
    try:
        for i in range(101):
            q.add_rate_limited(f"k{i}")
        assert q.waiting() == 101 and q.num_requeues("k0") == 1
        clock.step(0.005)
        eventually(lambda: len(q) == 100)  # per-item 5 ms; the 101st waits for the 10 qps bucket
        clock.step(0.095)
        eventually(lambda: len(q) == 101)
    finally:
        q.shut_down()
        assert q.join(JOIN)


class _CountingLimiter:
    def __init__(self) -> None:
        self.asked: list[Hashable] = []

    def when(self, item: Hashable) -> float:
        self.asked.append(item)
        return 0.0

    def forget(self, item: Hashable) -> None:
        return None

    def num_requeues(self, item: Hashable) -> int:
        return self.asked.count(item)


def test_rate_limiter_is_charged_on_each_call(clock: FakeClock) -> None:
    limiter = _CountingLimiter()
    q: RateLimitingQueue[str] = RateLimitingQueue(limiter, clock=clock)
    try:
        q.add_rate_limited("a")
        q.add_rate_limited("a")
        assert limiter.asked == ["a", "a"]
        assert q.num_requeues("a") == 2
        assert len(q) == 1  # delay 0 adds at once, de-duplicated
    finally:
        q.shut_down()
