"""Tests for the basic WorkQueue: client-go semantics, shutdown, a multi-threaded producer/consumer stress."""

from __future__ import annotations

import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from ingressctl.k8s.clock import FakeClock
from ingressctl.k8s.workqueue import WorkQueue

JOIN = 30.0  # generous real-time bound for threads that must end


def eventually(pred: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.001)


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads often, so that interleavings the stress tests look for actually happen."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def test_fifo_and_dedup() -> None:
    q: WorkQueue[str] = WorkQueue()
    for k in ["a", "b", "a", "c", "b", "a"]:
        q.add(k)
    assert len(q) == 3
    got = [q.get(timeout=0) for _ in range(3)]
    assert got == [("a", False), ("b", False), ("c", False)]
    assert len(q) == 0
    assert q.get(timeout=0) == (None, False)


def test_add_while_processing_requeues_once_on_done() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    assert q.get(timeout=0) == ("a", False)
    q.add("a")
    q.add("a")
    # Not handed out again while being processed, and not counted as waiting.
    assert len(q) == 0
    assert q.get(timeout=0) == (None, False)
    q.add("b")
    assert q.get(timeout=0) == ("b", False)
    q.done("b")
    q.done("a")
    assert len(q) == 1
    assert q.get(timeout=0) == ("a", False)
    q.done("a")
    assert len(q) == 0
    assert q.get(timeout=0) == (None, False)


def test_done_without_readd_does_not_requeue() -> None:
    q: WorkQueue[int] = WorkQueue()
    q.add(1)
    item, _ = q.get(timeout=0)
    q.done(1)
    q.done(1)  # a stray extra done is harmless
    q.done(42)  # so is a done for an unknown item
    assert item == 1 and len(q) == 0


def test_shutdown_hands_out_queued_items_then_reports_shutdown() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("b")
    assert q.get(timeout=0) == ("a", False)
    q.add("a")  # re-added while processing, before shutdown
    q.shut_down()
    assert q.shutting_down()
    q.add("c")  # ignored
    assert len(q) == 1
    assert q.get() == ("b", False)
    q.done("b")
    q.done("a")  # still re-queued: it was added before shutdown
    assert q.get() == ("a", False)
    q.done("a")
    assert q.get() == (None, True)
    assert q.get(timeout=5) == (None, True)


def test_shutdown_wakes_blocked_getters() -> None:
    q: WorkQueue[str] = WorkQueue()
    results: list[tuple[str | None, bool]] = []
    threads = [threading.Thread(target=lambda: results.append(q.get())) for _ in range(3)]
    for t in threads:
        t.start()
    q.shut_down()
    for t in threads:
        t.join(JOIN)
        assert not t.is_alive()
    assert results == [(None, True)] * 3


def test_add_wakes_a_blocked_getter() -> None:
    q: WorkQueue[str] = WorkQueue()
    results: list[tuple[str | None, bool]] = []
    t = threading.Thread(target=lambda: results.append(q.get()))
    t.start()
    q.add("x")
    t.join(JOIN)
    assert results == [("x", False)]


def test_get_timeout_on_fake_clock() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    results: list[tuple[str | None, bool]] = []
    t = threading.Thread(target=lambda: results.append(q.get(timeout=5)))
    t.start()
    assert clock.block_until_waiters(1)
    clock.step(4)
    assert clock.waiters() == 1 and results == []
    clock.step(1)
    t.join(JOIN)
    assert results == [(None, False)]
    # An add before the deadline is handed out.
    t = threading.Thread(target=lambda: results.append(q.get(timeout=5)))
    t.start()
    assert clock.block_until_waiters(1)
    q.add("y")
    t.join(JOIN)
    assert results[-1] == ("y", False)


def test_shut_down_with_drain_waits_for_processing_items() -> None:
    q: WorkQueue[str] = WorkQueue()
    for k in "abc":
        q.add(k)
    assert q.get() == ("a", False)
    assert q.get() == ("b", False)
    returned = threading.Event()
    drained: list[bool] = []

    def drainer() -> None:
        drained.append(q.shut_down_with_drain())
        returned.set()

    t = threading.Thread(target=drainer)
    t.start()
    eventually(q.shutting_down)
    q.add("d")  # ignored
    assert not returned.is_set()
    q.done("a")
    assert not returned.wait(0.05)  # "b" is still being processed
    # Queued items are still handed out during the drain, and waited for too.
    assert q.get() == ("c", False)
    q.done("b")
    assert not returned.wait(0.05)
    q.done("c")
    t.join(JOIN)
    assert drained == [True]
    assert q.get() == (None, True)


def test_drain_ends_when_last_processing_item_is_requeued() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    assert q.get() == ("a", False)
    q.add("a")  # dirty again: done() re-queues it and leaves nothing processing
    drained: list[bool] = []
    t = threading.Thread(target=lambda: drained.append(q.shut_down_with_drain()))
    t.start()
    eventually(q.shutting_down)
    q.done("a")
    t.join(JOIN)
    assert drained == [True]
    assert q.get() == ("a", False)  # queued items are still handed out


def test_shut_down_with_drain_timeout_on_fake_clock() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add("a")
    q.get()
    drained: list[bool] = []
    t = threading.Thread(target=lambda: drained.append(q.shut_down_with_drain(timeout=3)))
    t.start()
    assert clock.block_until_waiters(1)
    clock.step(3)
    t.join(JOIN)
    assert drained == [False]
    assert q.shut_down_with_drain(timeout=0) is False
    q.done("a")
    assert q.shut_down_with_drain(timeout=0) is True
    assert q.shut_down_with_drain() is True


def test_unhashable_item_is_rejected_and_harms_nothing() -> None:
    q: WorkQueue[object] = WorkQueue()
    q.add("a")
    with pytest.raises(TypeError):
        q.add(["not", "hashable"])
    assert len(q) == 1
    assert q.get(timeout=0) == ("a", False)


def test_generic_hashable_items() -> None:
    q: WorkQueue[tuple[str, str]] = WorkQueue()
    q.add(("ingress", "default/a"))
    q.add(("service", "default/a"))
    q.add(("ingress", "default/a"))
    assert len(q) == 2


class _Tracker:
    """Counts processing runs and detects two consumers holding the same item at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_progress: set[int] = set()
        self.runs: Counter[int] = Counter()
        self.violations: list[int] = []
        self.needed: dict[int, bool] = {}

    def mark_needed(self, item: int) -> None:
        with self.lock:
            self.needed[item] = True

    def start(self, item: int) -> None:
        with self.lock:
            if item in self.in_progress:
                self.violations.append(item)
            self.in_progress.add(item)
            self.needed[item] = False
            self.runs[item] += 1

    def finish(self, item: int) -> None:
        with self.lock:
            self.in_progress.discard(item)


@pytest.mark.parametrize("drain", [False, True])
@pytest.mark.usefixtures("fast_switching")
def test_many_producers_many_consumers(drain: bool) -> None:
    q: WorkQueue[int] = WorkQueue()
    tracker = _Tracker()
    n_producers, n_consumers, n_items = 5, 5, 300
    errors: list[BaseException] = []

    def producer(seed: int) -> None:
        rnd = random.Random(seed)
        for _ in range(n_items):
            item = rnd.randrange(60)  # overlapping keys: dedup and re-add during processing happen
            tracker.mark_needed(item)
            q.add(item)

    def consumer() -> None:
        try:
            while True:
                item, shutdown = q.get()
                if shutdown:
                    return
                assert item is not None
                tracker.start(item)
                for _ in range(50):  # a little work, so items overlap in time
                    pass
                tracker.finish(item)
                q.done(item)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    consumers = [threading.Thread(target=consumer) for _ in range(n_consumers)]
    producers = [threading.Thread(target=producer, args=(i,)) for i in range(n_producers)]
    for t in consumers + producers:
        t.start()
    for t in producers:
        t.join(JOIN)
    if drain:
        assert q.shut_down_with_drain(timeout=JOIN)
    else:
        q.shut_down()
    for t in consumers:
        t.join(JOIN)
        assert not t.is_alive()
    assert errors == []
    assert tracker.violations == []
    # Every item was processed after its last add.
    assert not any(tracker.needed.values())
    assert set(tracker.runs) == set(tracker.needed)
    assert len(q) == 0


@pytest.mark.usefixtures("fast_switching")
def test_add_while_processing_gives_exactly_one_more_run() -> None:
    """client-go's TestAddWhileProcessing: each consumer re-adds an item on its first run."""
    q: WorkQueue[int] = WorkQueue()
    tracker = _Tracker()
    n_items, n_consumers = 200, 6
    readded: set[int] = set()
    readd_lock = threading.Lock()

    def consumer() -> None:
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            assert item is not None
            tracker.start(item)
            with readd_lock:
                first = item not in readded
                readded.add(item)
            if first:
                q.add(item)
            tracker.finish(item)
            q.done(item)

    consumers = [threading.Thread(target=consumer) for _ in range(n_consumers)]
    for t in consumers:
        t.start()
    for i in range(n_items):
        q.add(i)
    eventually(lambda: sum(tracker.runs.values()) >= 2 * n_items, timeout=JOIN)
    q.shut_down()
    for t in consumers:
        t.join(JOIN)
        assert not t.is_alive()
    assert tracker.violations == []
    assert tracker.runs == Counter({i: 2 for i in range(n_items)})


class _CountingCondition(threading.Condition):
    def __init__(self, lock: threading.Lock, calls: list[str], name: str) -> None:
        super().__init__(lock)
        self._calls, self._name = calls, name

    def notify(self, n: int = 1) -> None:
        self._calls.append(self._name)
        super().notify(n)


def test_adds_and_dones_notify_only_waiting_threads() -> None:
    """A drain of thousands of tasks by one worker pays no notify per item; a blocked getter and a
    `shut_down_with_drain` still wake."""
    q: WorkQueue[str] = WorkQueue()
    calls: list[str] = []
    q._cond = _CountingCondition(q._lock, calls, "getters")       # type: ignore[arg-type]
    q._drained = _CountingCondition(q._lock, calls, "drained")    # type: ignore[arg-type]
    for i in range(100):
        q.add(f"t{i}")
    q.add("t0")
    for _ in range(100):
        item, _shutdown = q.get()
        assert item is not None
        q.add(item)          # re-added while processing: queued again by done()
        q.done(item)
    assert calls == [] and len(q) == 100

    while len(q):
        item, _shutdown = q.get()
        assert item is not None
        q.done(item)
    got: list[tuple[str | None, bool]] = []
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    eventually(lambda: q._getters_waiting == 1)
    q.add("late")
    t.join(JOIN)
    assert got == [("late", False)] and calls == ["getters"]

    drained: list[bool] = []
    d = threading.Thread(target=lambda: drained.append(q.shut_down_with_drain()))
    d.start()
    eventually(lambda: q._drain_waiters == 1)
    q.done("late")
    d.join(JOIN)
    assert drained == [True] and calls[-1] == "drained"
