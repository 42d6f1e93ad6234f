"""An injectable clock, so every timed behaviour in `ingressctl.k8s` can be tested without sleeping.

The `Clock` protocol (after k8s.io/utils/clock) has four methods:

- `now() -> float`: monotonic seconds. Only differences are meaningful; it never goes backwards.
- `wall() -> datetime`: the wall-clock time, timezone-aware UTC (for timestamps written to the API).
- `sleep(seconds)`: block the calling thread for that long on this clock.
- `wait(cond, timeout)`: the caller HOLDS `cond`'s lock; wait until `cond` is notified or `timeout` seconds
  pass on this clock (`None`: no deadline), then return with the lock held again. Like
  `threading.Condition.wait` it may return early (spurious wake-up), so callers re-check their predicate
  and the time in a loop.

`RealClock` maps these onto `time.monotonic`, `datetime.now(UTC)`, `time.sleep` and `Condition.wait`.

`FakeClock` only moves when a test calls `step()` or `set()`. Moving it wakes every thread whose deadline
(in `wait` or `sleep`) has been reached; it is thread-safe. `waiters()` counts threads blocked with a deadline
and `block_until_waiters(n)` lets a test wait (on real time, with a generous deadline) until background
threads are parked before it moves the clock. A `wait` without a deadline does not register with the fake
clock: only a notify of the condition ends it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "RealClock"]


@runtime_checkable
class Clock(Protocol):
    """Time source for queues, rate limiters and leader election."""

    def now(self) -> float:
        """Monotonic seconds."""
        ...

    def wall(self) -> datetime:
        """Wall-clock time, timezone-aware UTC."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block for `seconds` on this clock."""
        ...

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        """With `cond`'s lock held: wait until notified or `timeout` passes on this clock (may wake early)."""
        ...


class RealClock:
    """The system clock."""

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        if timeout is None:
            cond.wait()
        elif timeout > 0:
            cond.wait(min(timeout, threading.TIMEOUT_MAX))


@dataclass(eq=False)
class _Waiter:
    cond: threading.Condition
    deadline: float


class FakeClock:
    """A clock that moves only when told to. Thread-safe."""

    def __init__(self, now: float = 0.0, wall: datetime | None = None) -> None:
        self._lock = threading.Lock()
        # Notified whenever the set of deadline waiters changes (for block_until_waiters).
        self._changed = threading.Condition(self._lock)
        self._now = float(now)
        self._wall = wall if wall is not None else datetime(2024, 1, 1, tzinfo=UTC)
        if self._wall.tzinfo is None:
            raise ValueError("FakeClock wall time must be timezone-aware")
        self._waiters: list[_Waiter] = []

    # -- Clock ---------------------------------------------------------------------------------------
    def now(self) -> float:
        with self._lock:
            return self._now

    def wall(self) -> datetime:
        with self._lock:
            return self._wall.astimezone(UTC)

    def sleep(self, seconds: float) -> None:
        cond = threading.Condition()
        with cond:
            deadline = self.now() + seconds
            while (remaining := deadline - self.now()) > 0:
                self.wait(cond, remaining)

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        if timeout is None:
            cond.wait()
            return
        if timeout <= 0:
            return
        with self._lock:
            waiter = _Waiter(cond, self._now + timeout)
            self._waiters.append(waiter)
            self._changed.notify_all()
        try:
            # step() needs cond's lock to notify us, which it can only get once we are inside cond.wait():
            # registering while holding cond's lock therefore cannot lose a wake-up.
            cond.wait()
        finally:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                    self._changed.notify_all()

    # -- control -------------------------------------------------------------------------------------
    def step(self, seconds: float) -> None:
        """Advance monotonic and wall time by `seconds` (>= 0) and wake the waiters that are due."""
        if seconds < 0:
            raise ValueError(f"FakeClock cannot step backwards ({seconds})")
        with self._lock:
            self._now += seconds
            self._wall += timedelta(seconds=seconds)
            due = self._take_due()
        self._wake(due)

    def set(self, *, now: float | None = None, wall: datetime | None = None) -> None:
        """Set monotonic time (never backwards) and/or wall time (skew allowed); wake due waiters."""
        if wall is not None and wall.tzinfo is None:
            raise ValueError("FakeClock wall time must be timezone-aware")
        with self._lock:
            if now is not None:
                if now < self._now:
                    raise ValueError(f"monotonic time cannot go backwards ({now} < {self._now})")
                self._now = float(now)
            if wall is not None:
                self._wall = wall
            due = self._take_due()
        self._wake(due)

    def waiters(self) -> int:
        """Number of threads blocked in `wait`/`sleep` with a deadline."""
        with self._lock:
            return len(self._waiters)

    def block_until_waiters(self, n: int, timeout: float = 10.0) -> bool:
        """Block (real time, at most `timeout` s) until at least `n` threads wait with a deadline."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._waiters) >= n, timeout)

    def _take_due(self) -> list[_Waiter]:
        due = [w for w in self._waiters if w.deadline <= self._now]
        if due:
            self._waiters = [w for w in self._waiters if w.deadline > self._now]
            self._changed.notify_all()
        return due

    @staticmethod
    def _wake(due: list[_Waiter]) -> None:
        # Never hold self._lock here: waiters take cond then self._lock, so the reverse order would deadlock.
        for w in due:
            with w.cond:
                w.cond.notify_all()
