"""Tests for ingressctl.k8s.clock: the fake clock wakes exactly the waiters that are due; thread-safe."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from ingressctl.k8s.clock import Clock, FakeClock, RealClock

JOIN = 10.0  # generous real-time bound for threads that must end


def _waiter(clock: Clock, timeout: float | None, cond: threading.Condition | None = None) -> tuple[
        threading.Thread, threading.Condition, list[float]]:
    cond = cond or threading.Condition()
    woke: list[float] = []

    def run() -> None:
        with cond:
            clock.wait(cond, timeout)
        woke.append(clock.now())

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, cond, woke


def test_protocol_is_satisfied() -> None:
    assert isinstance(RealClock(), Clock)
    assert isinstance(FakeClock(), Clock)


def test_fake_clock_step_and_set() -> None:
    start = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)
    clock = FakeClock(100.0, start)
    assert clock.now() == 100.0
    assert clock.wall() == start
    clock.step(2.5)
    assert clock.now() == 102.5
    assert clock.wall() == start + timedelta(seconds=2.5)
    clock.set(now=200.0)
    assert clock.now() == 200.0
    # Wall time may jump anywhere (skew); monotonic time may not go back.
    clock.set(wall=start - timedelta(hours=1))
    assert clock.wall() == start - timedelta(hours=1)
    assert clock.now() == 200.0
    with pytest.raises(ValueError):
        clock.set(now=199.0)
    with pytest.raises(ValueError):
        clock.step(-1)
    with pytest.raises(ValueError):
        clock.set(wall=datetime(2030, 1, 1))  # naive
    assert clock.wall().tzinfo is not None


def test_wait_wakes_only_when_deadline_reached() -> None:
    clock = FakeClock()
    t, _, woke = _waiter(clock, 5.0)
    assert clock.block_until_waiters(1)
    clock.step(4.999)
    # A waiter not yet due stays registered, so it was not woken by the clock.
    assert clock.waiters() == 1
    assert woke == []
    clock.step(0.001)
    t.join(JOIN)
    assert not t.is_alive()
    assert woke == [5.0]
    assert clock.waiters() == 0


def test_set_wakes_due_waiters() -> None:
    clock = FakeClock()
    t, _, woke = _waiter(clock, 3.0)
    assert clock.block_until_waiters(1)
    clock.set(now=10.0)
    t.join(JOIN)
    assert woke == [10.0]


def test_wait_returns_on_notify_before_deadline() -> None:
    clock = FakeClock()
    t, cond, woke = _waiter(clock, 100.0)
    assert clock.block_until_waiters(1)
    with cond:
        cond.notify_all()
    t.join(JOIN)
    assert woke == [0.0]
    assert clock.waiters() == 0


def test_wait_without_deadline_ignores_clock() -> None:
    clock = FakeClock()
    cond = threading.Condition()
    t, _, woke = _waiter(clock, None, cond)
    clock.step(1e9)
    assert clock.waiters() == 0  # not registered: only a notify ends it
    # Notify until the thread has actually entered wait() and left it.
    while t.is_alive():
        with cond:
            cond.notify_all()
        t.join(0.01)
    assert woke == [1e9]


def test_non_positive_timeout_returns_at_once() -> None:
    for clock in (FakeClock(), RealClock()):
        cond = threading.Condition()
        with cond:
            clock.wait(cond, 0)
            clock.wait(cond, -1)


def test_sleep_blocks_until_stepped() -> None:
    clock = FakeClock()
    woke: list[float] = []

    def sleeper() -> None:
        clock.sleep(3.0)
        woke.append(clock.now())

    t = threading.Thread(target=sleeper, daemon=True)
    t.start()
    assert clock.block_until_waiters(1)
    clock.step(1.0)
    clock.step(1.0)
    assert woke == [] and clock.waiters() == 1
    clock.step(1.0)
    t.join(JOIN)
    assert woke == [3.0]


def test_many_waiters_each_woken_at_its_deadline() -> None:
    clock = FakeClock()
    deadlines = [float(d) for d in (1, 2, 2, 3, 5, 8, 8, 13)]
    runs = [_waiter(clock, d) for d in deadlines]
    assert clock.block_until_waiters(len(deadlines))
    for step in range(1, 14):
        clock.step(1.0)
        due = [r for r, d in zip(runs, deadlines, strict=True) if d <= step]
        for t, _, _ in due:
            t.join(JOIN)
            assert not t.is_alive()
        assert clock.waiters() == len(deadlines) - len(due)
    for (_, _, woke), d in zip(runs, deadlines, strict=True):
        assert woke == [d]


def test_real_clock() -> None:
    clock = RealClock()
    a = clock.now()
    assert clock.now() >= a
    assert clock.wall().tzinfo is not None
    assert abs((clock.wall() - datetime.now(UTC)).total_seconds()) < 60
    clock.sleep(0)
    clock.sleep(-1)
    t, cond, woke = _waiter(clock, None)
    while t.is_alive():
        with cond:
            cond.notify_all()
        t.join(0.01)
    assert len(woke) == 1
