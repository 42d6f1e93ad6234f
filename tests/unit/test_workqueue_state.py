"""Hypothesis state machine: WorkQueue against a reference model (FIFO + dirty set + processing set).

Some rules run their operations from several threads at once (behind a barrier). Concurrent adds of new keys
may land in the FIFO in any order, so the model's FIFO is a list of *batches*: sequential operations make
one-key batches, a concurrent batch of adds makes one batch whose internal order is free. Gets must come
from the head batch.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from ingressctl.k8s.clock import FakeClock
from ingressctl.k8s.workqueue import WorkQueue

KEYS = st.sampled_from(["a", "b", "c", "d", "e", "f"])
THREADS = 4


class _Gauge:
    def __init__(self) -> None:
        self.value = 0.0

    def inc(self) -> None:
        self.value += 1

    def dec(self) -> None:
        self.value -= 1

    def set(self, value: float) -> None:
        self.value = value

    def observe(self, value: float) -> None:
        self.value += 1


class _Provider:
    """Keeps depth and adds (the queue calls metrics under its lock, so plain counters are safe)."""

    def __init__(self) -> None:
        self.depth = _Gauge()
        self.adds = _Gauge()
        self.other = _Gauge()

    def new_depth_metric(self, name: str) -> _Gauge:
        return self.depth

    def new_adds_metric(self, name: str) -> _Gauge:
        return self.adds

    def new_latency_metric(self, name: str) -> _Gauge:
        return self.other

    def new_work_duration_metric(self, name: str) -> _Gauge:
        return self.other

    def new_unfinished_work_seconds_metric(self, name: str) -> _Gauge:
        return _Gauge()

    def new_longest_running_processor_seconds_metric(self, name: str) -> _Gauge:
        return _Gauge()

    def new_retries_metric(self, name: str) -> _Gauge:
        return self.other


class WorkQueueMachine(RuleBasedStateMachine):
    handed_out = Bundle("handed_out")

    @initialize()
    def setup(self) -> None:
        self.provider = _Provider()
        self.q: WorkQueue[str] = WorkQueue("state", clock=FakeClock(), metrics_provider=self.provider)
        self.pool = ThreadPoolExecutor(2 * THREADS)  # whole_batches() may need up to 2 * THREADS - 1
        self.batches: list[set[str]] = []
        self.dirty: set[str] = set()
        self.processing: set[str] = set()
        self.shut = False
        self.adds = 0

    def teardown(self) -> None:
        if hasattr(self, "q"):
            self.q.shut_down()
            self.pool.shutdown(wait=True)
            assert self.q.join(10)

    # -- model ---------------------------------------------------------------------------------------
    def model_len(self) -> int:
        return sum(len(b) for b in self.batches)

    def model_add(self, key: str) -> str | None:
        """Apply an add to the sets; return the key if it must be queued now."""
        if self.shut or key in self.dirty:
            return None
        self.dirty.add(key)
        self.adds += 1
        return None if key in self.processing else key

    def model_take(self, items: list[str]) -> None:
        """Check that `items` (handed out together) are the head of the FIFO, and remove them."""
        remaining = set(items)
        assert len(remaining) == len(items), f"a key was handed out twice at once: {items}"
        while remaining:
            head = self.batches[0]
            if len(remaining) >= len(head):
                assert head <= remaining, f"got {items}, head of queue was {head}"
                remaining -= head
                self.batches.pop(0)
            else:
                assert remaining <= head, f"got {items}, head of queue was {head}"
                head -= remaining
                remaining = set()
        for item in items:
            assert item not in self.processing, f"{item} handed out while being processed"
            self.processing.add(item)
            self.dirty.discard(item)

    def run_concurrently(self, calls: list[tuple[object, ...]]) -> list[object]:
        barrier = threading.Barrier(len(calls))

        def call(fn: object, *args: object) -> object:
            barrier.wait(10)
            return fn(*args)  # type: ignore[operator]

        futures = [self.pool.submit(call, *c) for c in calls]
        return [f.result(timeout=10) for f in futures]

    # -- rules ---------------------------------------------------------------------------------------
    @rule(key=KEYS)
    def add(self, key: str) -> None:
        self.q.add(key)
        if (queued := self.model_add(key)) is not None:
            self.batches.append({queued})

    @rule(key=handed_out)
    def add_during_processing(self, key: str) -> None:
        assert key in self.processing
        self.q.add(key)
        assert self.model_add(key) is None  # never queued while processing
        assert self.shut or key in self.dirty

    @rule(keys=st.lists(KEYS, min_size=2, max_size=THREADS))
    def concurrent_adds(self, keys: list[str]) -> None:
        self.run_concurrently([(self.q.add, k) for k in keys])
        batch = set()
        for k in keys:
            if (queued := self.model_add(k)) is not None:
                batch.add(queued)
        if batch:
            self.batches.append(batch)

    def whole_batches(self, n: int) -> int:
        """The smallest count >= n that takes whole batches, so which keys are handed out is deterministic."""
        total = 0
        for batch in self.batches:
            if total >= n:
                break
            total += len(batch)
        return total

    @precondition(lambda self: self.model_len() > 0)
    @rule(target=handed_out)
    def get(self) -> object:
        items: list[str] = []
        for _ in range(self.whole_batches(1)):
            item, shutdown = self.q.get(timeout=0)
            assert not shutdown and item is not None
            items.append(item)
        self.model_take(items)
        # Sorted: a concurrent batch may be queued in any order; keep hypothesis's bundle deterministic.
        return multiple(*sorted(items))

    @precondition(lambda self: self.model_len() >= 2)
    @rule(n=st.integers(min_value=2, max_value=THREADS), target=handed_out)
    def concurrent_gets(self, n: int) -> object:
        results = self.run_concurrently([(self.q.get, 0)] * self.whole_batches(n))
        items: list[str] = []
        for result in results:
            assert isinstance(result, tuple)
            got, shutdown = result
            assert not shutdown and isinstance(got, str)
            items.append(got)
        self.model_take(items)
        return multiple(*sorted(items))

    @precondition(lambda self: self.model_len() == 0)
    @rule()
    def get_when_empty(self) -> None:
        assert self.q.get(timeout=0) == (None, self.shut)

    @rule(key=consumes(handed_out))
    def done(self, key: str) -> None:
        self.q.done(key)
        self.processing.remove(key)
        if key in self.dirty:  # re-added while processing: queued exactly once more
            self.batches.append({key})

    @precondition(lambda self: len(self.processing) >= 2)
    @rule(k1=consumes(handed_out), k2=consumes(handed_out))
    def concurrent_dones(self, k1: str, k2: str) -> None:
        self.run_concurrently([(self.q.done, k1), (self.q.done, k2)])
        requeued = set()
        for k in (k1, k2):
            self.processing.remove(k)
            if k in self.dirty:
                requeued.add(k)
        if requeued:
            self.batches.append(requeued)

    @rule()
    def shut_down(self) -> None:
        self.q.shut_down()
        self.shut = True
        assert self.q.shutting_down()

    # -- invariants ----------------------------------------------------------------------------------
    @invariant()
    def matches_model(self) -> None:
        if not hasattr(self, "q"):
            return
        q = self.q
        with q._lock:
            queued = list(q._queue)
            dirty = set(q._dirty)
            processing = set(q._processing)
        assert len(queued) == len(set(queued)), "duplicate in queue"
        assert set(queued) <= dirty, "every queued key is dirty"
        assert not set(queued) & processing, "no queued key is being processed"
        assert set(queued) == set().union(*self.batches)
        assert dirty == self.dirty
        assert processing == self.processing
        assert len(q) == self.model_len()
        assert self.q.shutting_down() == self.shut
        # depth: +1 per add that dirtied a key, -1 per get; so it equals the number of dirty keys.
        assert self.provider.depth.value == len(self.dirty)
        assert self.provider.adds.value == self.adds


WorkQueueMachine.TestCase.settings = settings(
    max_examples=50,
    stateful_step_count=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestWorkQueueMachine = WorkQueueMachine.TestCase
