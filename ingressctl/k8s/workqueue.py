"""client-go's workqueue (`util/workqueue`): a de-duplicating FIFO, a delaying and a rate-limiting queue.

Guarantees of `WorkQueue` (client-go's doc.go):

- Fair: items are handed out in the order they were added.
- Stingy: an item is never handed out to two workers at once, and adding an item that is already waiting
  does nothing (many adds, one processing run). `len(q)` counts waiting items only.
- Re-add during processing: an item added while a worker holds it (between `get` and `done`) is not handed
  out again until `done`; then it is queued exactly once more. Nothing is lost.
- Shutdown: after `shut_down()` adds are ignored, blocked getters wake, and `get` keeps handing out the
  items still queued; it returns `(None, True)` once the queue is empty. Workers must still call `done`.
  `shut_down_with_drain()` additionally waits until every handed-out item is done. `join()` waits for the
  queue's background threads (delaying loop, metrics updater) to end after shutdown.
- `get(timeout)` returns `(None, False)` if nothing arrived within `timeout` seconds of the queue's clock.

The state is a FIFO plus two sets: `dirty` (items that need processing) and `processing` (items handed out
and not yet done). An item leaves `dirty` at `get`, which is what makes a re-add during processing count.

`DelayingQueue.add_after(item, delay)` adds the item after `delay` seconds on the injected `Clock` (a
waiting-loop thread keeps a min-heap of deadlines; an item already waiting keeps the EARLIER deadline;
`delay <= 0` adds at once; waiting items are dropped at shutdown). `RateLimitingQueue` adds
`add_rate_limited` (= `add_after(item, limiter.when(item))`), `forget` and `num_requeues`.

Metrics: a queue with a non-empty `name` reports client-go's seven workqueue metrics through a
`MetricsProvider` (the `metrics_provider` argument, else the process default set with
`set_default_metrics_provider`, else no-op): depth, adds, queue latency (first add to get), work duration
(get to done), unfinished work seconds and longest running processor seconds (refreshed every 0.5 s by a
background thread that stops at shutdown), and retries (every `add_after`). Metric methods are called with
the queue's lock held, so they must be quick and must not call back into the queue.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from ingressctl.k8s.clock import Clock, RealClock
from ingressctl.k8s.ratelimit import RateLimiter, default_controller_rate_limiter
from ingressctl.logging import get_logger

__all__ = [
    "CounterMetric",
    "DelayingQueue",
    "GaugeMetric",
    "HistogramMetric",
    "MetricsProvider",
    "NoopMetricsProvider",
    "RateLimitingQueue",
    "SettableGaugeMetric",
    "WorkQueue",
    "set_default_metrics_provider",
]

log = get_logger(__name__)

T = TypeVar("T", bound=Hashable)

UNFINISHED_WORK_UPDATE_PERIOD = 0.5
"""Seconds between refreshes of the unfinished-work and longest-running gauges (client-go: 500 ms)."""

MAX_WAIT = 10.0
"""The delaying loop wakes at least this often even with nothing due (client-go's heartbeat)."""


# -- metrics ----------------------------------------------------------------------------------------------

class GaugeMetric(Protocol):
    def inc(self) -> None: ...
    def dec(self) -> None: ...


class SettableGaugeMetric(Protocol):
    def set(self, value: float) -> None: ...


class CounterMetric(Protocol):
    def inc(self) -> None: ...


class HistogramMetric(Protocol):
    def observe(self, value: float) -> None: ...


class MetricsProvider(Protocol):
    """Creates the metrics of one named queue (client-go's MetricsProvider). Durations are in seconds."""

    def new_depth_metric(self, name: str) -> GaugeMetric: ...
    def new_adds_metric(self, name: str) -> CounterMetric: ...
    def new_latency_metric(self, name: str) -> HistogramMetric: ...
    def new_work_duration_metric(self, name: str) -> HistogramMetric: ...
    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric: ...
    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric: ...
    def new_retries_metric(self, name: str) -> CounterMetric: ...


class _NoopMetric:
    def inc(self) -> None:
        return None

    def dec(self) -> None:
        return None

    def set(self, value: float) -> None:
        return None

    def observe(self, value: float) -> None:
        return None


_NOOP = _NoopMetric()


class NoopMetricsProvider:
    """Records nothing."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return _NOOP

    def new_adds_metric(self, name: str) -> CounterMetric:
        return _NOOP

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return _NOOP

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return _NOOP

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP

    def new_retries_metric(self, name: str) -> CounterMetric:
        return _NOOP


_default_provider: MetricsProvider = NoopMetricsProvider()


def set_default_metrics_provider(provider: MetricsProvider) -> None:
    """Provider used by named queues created later without an explicit `metrics_provider`."""
    global _default_provider
    _default_provider = provider


class _QueueMetrics(Generic[T]):
    """Bookkeeping behind the metrics; every method is called with the queue's lock held."""

    def __init__(self, name: str, provider: MetricsProvider, clock: Clock) -> None:
        self.clock = clock
        self.depth = provider.new_depth_metric(name)
        self.adds = provider.new_adds_metric(name)
        self.latency = provider.new_latency_metric(name)
        self.work_duration = provider.new_work_duration_metric(name)
        self.unfinished_work = provider.new_unfinished_work_seconds_metric(name)
        self.longest_running = provider.new_longest_running_processor_seconds_metric(name)
        self.add_times: dict[T, float] = {}
        self.processing_start: dict[T, float] = {}

    def add(self, item: T) -> None:
        self.adds.inc()
        self.depth.inc()
        self.add_times.setdefault(item, self.clock.now())   # the first add counts

    def get(self, item: T) -> None:
        self.depth.dec()
        now = self.clock.now()
        self.processing_start[item] = now
        start = self.add_times.pop(item, None)
        if start is not None:
            self.latency.observe(now - start)

    def done(self, item: T) -> None:
        start = self.processing_start.pop(item, None)
        if start is not None:
            self.work_duration.observe(self.clock.now() - start)

    def update_unfinished_work(self) -> None:
        now = self.clock.now()
        total = 0.0
        oldest = 0.0
        for start in self.processing_start.values():
            age = now - start
            total += age
            oldest = max(oldest, age)
        self.unfinished_work.set(total)
        self.longest_running.set(oldest)


# -- the basic queue --------------------------------------------------------------------------------------

class WorkQueue(Generic[T]):
    """client-go's basic queue: FIFO + dirty set + processing set. Thread-safe; items must be hashable."""

    def __init__(self, name: str = "", *, clock: Clock | None = None,
                 metrics_provider: MetricsProvider | None = None) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else RealClock()
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)          # getters
        self._drained = threading.Condition(self._lock)       # shut_down_with_drain
        self._stop_metrics = threading.Condition(self._lock)  # the unfinished-work updater
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._threads: list[threading.Thread] = []
        # Threads inside a wait on `_cond` / `_drained`: add() and done() notify only when someone waits
        # (a notify without waiters still costs a lock probe: ~35,000 times during a start-up drain).
        self._getters_waiting = 0
        self._drain_waiters = 0

        provider = metrics_provider if metrics_provider is not None else _default_provider
        # Metrics only for a named queue with a real provider (as in client-go).
        self._metrics_provider = provider if name and not isinstance(provider, NoopMetricsProvider) else None
        self._metrics: _QueueMetrics[T] | None = None
        if self._metrics_provider is not None:
            self._metrics = _QueueMetrics(name, self._metrics_provider, self._clock)
            self._start_thread(self._update_unfinished_work_loop, "unfinished-work")

    def _start_thread(self, target: Callable[[], None], what: str) -> None:
        def run() -> None:
            try:
                target()
            except BaseException:
                log.exception("workqueue thread crashed", queue=self.name, thread=what)
                raise

        thread = threading.Thread(target=run, name=f"workqueue-{self.name or 'unnamed'}-{what}", daemon=True)
        self._threads.append(thread)
        thread.start()

    # -- queue operations ------------------------------------------------------------------------------
    def add(self, item: T) -> None:
        """Mark `item` as needing processing. No-op if it is already waiting or the queue is shutting down."""
        with self._lock:
            if self._shutting_down:
                return
            dirty = self._dirty
            n = len(dirty)
            dirty.add(item)
            if len(dirty) == n:
                return  # already waiting (one hash of the item instead of a lookup and an insert)
            if self._metrics is not None:
                self._metrics.add(item)
            if item in self._processing:
                return  # queued again by done()
            self._queue.append(item)
            if self._getters_waiting:
                self._cond.notify()

    def __len__(self) -> int:
        """Number of items waiting to be handed out (excludes items being processed or delayed)."""
        with self._lock:
            return len(self._queue)

    def get(self, timeout: float | None = None) -> tuple[T | None, bool]:
        """Block until an item can be processed; return `(item, False)`.

        Returns `(None, True)` when the queue is shutting down and empty, and `(None, False)` if `timeout`
        seconds (on the queue's clock) pass first. The caller must call `done(item)` when finished.
        """
        with self._lock:
            deadline = None if timeout is None else self._clock.now() + timeout
            while not self._queue and not self._shutting_down:
                if deadline is None:
                    self._wait_for_item(None)
                    continue
                remaining = deadline - self._clock.now()
                if remaining <= 0:
                    return None, False
                self._wait_for_item(remaining)
            if not self._queue:
                return None, True
            item = self._queue.popleft()
            self._processing.add(item)
            self._dirty.discard(item)
            if self._metrics is not None:
                self._metrics.get(item)
            return item, False

    def _wait_for_item(self, timeout: float | None) -> None:
        """With the lock held: wait on `_cond`, counted in `_getters_waiting`."""
        self._getters_waiting += 1
        try:
            self._clock.wait(self._cond, timeout)
        finally:
            self._getters_waiting -= 1

    def done(self, item: T) -> None:
        """Mark `item` as processed; if it was added again meanwhile, queue it once more."""
        with self._lock:
            if self._metrics is not None:
                self._metrics.done(item)
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                if self._getters_waiting:
                    self._cond.notify()
            if self._drain_waiters and not self._processing:
                self._drained.notify_all()

    def shut_down(self) -> None:
        """Ignore further adds and wake every getter; queued items are still handed out."""
        with self._lock:
            self._shutting_down = True
            self._cond.notify_all()
            self._stop_metrics.notify_all()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """Shut down, then wait until every handed-out item is done (not for items still queued).

        Returns False if `timeout` seconds (on the queue's clock) passed first. Hangs without a timeout if a
        worker never calls `done`.
        """
        with self._lock:
            self._shutting_down = True
            self._cond.notify_all()
            self._stop_metrics.notify_all()
            deadline = None if timeout is None else self._clock.now() + timeout
            self._drain_waiters += 1
            try:
                while self._processing:
                    if deadline is None:
                        self._clock.wait(self._drained, None)
                        continue
                    remaining = deadline - self._clock.now()
                    if remaining <= 0:
                        return False
                    self._clock.wait(self._drained, remaining)
                return True
            finally:
                self._drain_waiters -= 1

    def shutting_down(self) -> bool:
        with self._lock:
            return self._shutting_down

    def join(self, timeout: float | None = None) -> bool:
        """After shutdown, wait (real time) for the queue's background threads to end; True if they did."""
        for thread in list(self._threads):
            thread.join(timeout)
        return not any(t.is_alive() for t in self._threads)

    # -- metrics updater -------------------------------------------------------------------------------
    def _update_unfinished_work_loop(self) -> None:
        metrics = self._metrics
        assert metrics is not None
        with self._lock:
            next_tick = self._clock.now() + UNFINISHED_WORK_UPDATE_PERIOD
            while not self._shutting_down:
                remaining = next_tick - self._clock.now()
                if remaining > 0:
                    self._clock.wait(self._stop_metrics, remaining)
                    continue
                try:
                    metrics.update_unfinished_work()
                except Exception:
                    log.exception("workqueue metrics update failed", queue=self.name)
                # Like a ticker: skip missed ticks rather than firing them in a burst.
                now = self._clock.now()
                while next_tick <= now:
                    next_tick += UNFINISHED_WORK_UPDATE_PERIOD


# -- delaying queue ---------------------------------------------------------------------------------------

class _WaitEntry(Generic[T]):
    __slots__ = ("item", "ready_at", "seq", "valid")

    def __init__(self, item: T, ready_at: float, seq: int) -> None:
        self.item = item
        self.ready_at = ready_at
        self.seq = seq
        self.valid = True

    def __lt__(self, other: _WaitEntry[T]) -> bool:
        return (self.ready_at, self.seq) < (other.ready_at, other.seq)


class DelayingQueue(WorkQueue[T]):
    """A WorkQueue that can add an item after a delay, measured on the injected clock."""

    def __init__(self, name: str = "", *, clock: Clock | None = None,
                 metrics_provider: MetricsProvider | None = None) -> None:
        super().__init__(name, clock=clock, metrics_provider=metrics_provider)
        self._retries: CounterMetric = (
            self._metrics_provider.new_retries_metric(name) if self._metrics_provider is not None else _NOOP
        )
        self._wait_lock = threading.Lock()
        self._wait_cond = threading.Condition(self._wait_lock)
        self._heap: list[_WaitEntry[T]] = []
        self._waiting: dict[T, _WaitEntry[T]] = {}
        self._seq = itertools.count()
        self._stopped = False
        self._start_thread(self._waiting_loop, "delaying")

    def add_after(self, item: T, delay: float) -> None:
        """Add `item` after `delay` seconds; if it is already waiting, the earlier deadline wins."""
        if self.shutting_down():
            return
        self._retries.inc()
        if delay <= 0:
            self.add(item)
            return
        with self._wait_lock:
            if self._stopped:
                return
            ready_at = self._clock.now() + delay
            current = self._waiting.get(item)
            if current is not None:
                if current.ready_at <= ready_at:
                    return
                current.valid = False  # lazily removed from the heap
            entry = _WaitEntry(item, ready_at, next(self._seq))
            self._waiting[item] = entry
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._wait_cond.notify()

    def waiting(self) -> int:
        """Number of items waiting for their delay to pass."""
        with self._wait_lock:
            return len(self._waiting)

    def shut_down(self) -> None:
        super().shut_down()
        self._stop_waiting_loop()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        self._stop_waiting_loop()
        return super().shut_down_with_drain(timeout)

    def _stop_waiting_loop(self) -> None:
        with self._wait_lock:
            self._stopped = True
            self._heap.clear()
            self._waiting.clear()
            self._wait_cond.notify_all()

    def _pop_ready(self, now: float) -> list[T]:
        ready: list[T] = []
        while self._heap and self._heap[0].ready_at <= now:
            entry = heapq.heappop(self._heap)
            if entry.valid:
                del self._waiting[entry.item]
                ready.append(entry.item)
        while self._heap and not self._heap[0].valid:
            heapq.heappop(self._heap)
        return ready

    def _waiting_loop(self) -> None:
        while True:
            with self._wait_lock:
                if self._stopped:
                    return
                now = self._clock.now()
                ready = self._pop_ready(now)
                if not ready:
                    wait = MAX_WAIT if not self._heap else min(self._heap[0].ready_at - now, MAX_WAIT)
                    self._clock.wait(self._wait_cond, wait)
                    continue
            for item in ready:  # outside the wait lock: add() takes the queue lock
                try:
                    self.add(item)
                except Exception:
                    log.exception("workqueue delayed add failed", queue=self.name, item=repr(item))


# -- rate-limiting queue ----------------------------------------------------------------------------------

class RateLimitingQueue(DelayingQueue[T]):
    """A DelayingQueue whose retries are spaced by a `RateLimiter` (default: the controller limiter)."""

    def __init__(self, rate_limiter: RateLimiter | None = None, name: str = "", *, clock: Clock | None = None,
                 metrics_provider: MetricsProvider | None = None) -> None:
        super().__init__(name, clock=clock, metrics_provider=metrics_provider)
        self.rate_limiter: RateLimiter = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(clock=self._clock)
        )

    def add_rate_limited(self, item: T) -> None:
        """Add `item` when the limiter says so; counts a failure for it."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset the item's failure history (call on success). Does not remove it from the queue."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)
