"""Tests for ingressctl.k8s.ratelimit against client-go's default_rate_limiters semantics."""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Hashable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingressctl.k8s.clock import FakeClock
from ingressctl.k8s.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)


def test_exponential_sequence_cap_and_forget() -> None:
    rl = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [rl.when("a") for _ in range(21)]
    assert delays[:5] == pytest.approx([0.005, 0.01, 0.02, 0.04, 0.08])
    assert delays[17] == pytest.approx(655.36)  # the 18th failure
    assert delays[18:] == [1000.0, 1000.0, 1000.0]  # capped from the 19th
    assert rl.num_requeues("a") == 21
    # Per item: another key starts at the base.
    assert rl.when("b") == pytest.approx(0.005)
    rl.forget("a")
    assert rl.num_requeues("a") == 0
    assert rl.when("a") == pytest.approx(0.005)
    assert rl.num_requeues("b") == 1
    rl.forget("never-seen")  # no error


def test_exponential_huge_failure_count_does_not_overflow() -> None:
    rl = ItemExponentialFailureRateLimiter(1.0, 30.0)
    for _ in range(5000):
        d = rl.when("x")
    assert d == 30.0
    assert rl.num_requeues("x") == 5000
    zero = ItemExponentialFailureRateLimiter(0.0, 10.0)
    assert [zero.when("x") for _ in range(2000)][-1] == 0.0


@given(
    base=st.floats(min_value=0, max_value=10, allow_nan=False),
    cap=st.floats(min_value=0, max_value=1e6, allow_nan=False),
    n=st.integers(min_value=1, max_value=80),
)
def test_exponential_properties(base: float, cap: float, n: int) -> None:
    rl = ItemExponentialFailureRateLimiter(base, cap)
    delays = [rl.when("k") for _ in range(n)]
    assert all(d <= cap for d in delays)
    assert all(a <= b for a, b in itertools.pairwise(delays))  # grows with failures
    assert delays == [min(base * 2.0**i, cap) for i in range(n)]
    assert rl.num_requeues("k") == n
    rl.forget("k")
    assert rl.num_requeues("k") == 0
    assert rl.when("k") == min(base, cap)


def test_fast_slow() -> None:
    rl = ItemFastSlowRateLimiter(0.1, 5.0, 3)
    assert [rl.when("a") for _ in range(5)] == [0.1, 0.1, 0.1, 5.0, 5.0]
    assert rl.when("b") == 0.1
    assert rl.num_requeues("a") == 5
    rl.forget("a")
    assert rl.num_requeues("a") == 0
    assert rl.when("a") == 0.1


def test_bucket_burst_then_spacing() -> None:
    clock = FakeClock()
    rl = BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert [rl.when(i) for i in range(100)] == [0.0] * 100
    # Tokens are booked in the future: 1/qps apart.
    assert [rl.when(i) for i in range(100, 105)] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])
    # One second later, 10 tokens have accrued; 5 of them were already booked.
    clock.step(1.0)
    assert [rl.when(i) for i in range(7)] == pytest.approx([0.0] * 5 + [0.1, 0.2])
    # It is not per item.
    assert rl.num_requeues(1) == 0
    rl.forget(1)
    # A long idle period refills at most `burst` tokens.
    clock.step(1000.0)
    assert [rl.when(i) for i in range(100)] == [0.0] * 100
    assert rl.when("x") == pytest.approx(0.1)


def test_bucket_infinite_qps_never_waits() -> None:
    rl = BucketRateLimiter(qps=math.inf, burst=0, clock=FakeClock())
    assert all(rl.when(i) == 0.0 for i in range(1000))


@pytest.mark.parametrize("kwargs", [{"qps": 0}, {"qps": -1}, {"qps": math.nan}, {"burst": 0}, {"burst": -3},
                                    {"burst": 1.5}])
def test_bucket_rejects_bad_settings(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        BucketRateLimiter(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("args", [(-1, 1), (1, -1), (math.nan, 1)])
def test_exponential_rejects_bad_settings(args: tuple[float, float]) -> None:
    with pytest.raises(ValueError):
        ItemExponentialFailureRateLimiter(*args)


class _Fixed:
    """A limiter that always answers the same delay and counts calls."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls: dict[Hashable, int] = {}
        self.forgotten: list[Hashable] = []

    def when(self, item: Hashable) -> float:
        self.calls[item] = self.calls.get(item, 0) + 1
        return self.delay

    def forget(self, item: Hashable) -> None:
        self.forgotten.append(item)
        self.calls.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self.calls.get(item, 0)


@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=6))
def test_max_of_returns_largest_and_charges_every_child(delays: list[float]) -> None:
    children = [_Fixed(d) for d in delays]
    rl = MaxOfRateLimiter(*children)
    assert rl.when("a") == max(delays)
    assert all(c.calls == {"a": 1} for c in children)  # every child was asked
    assert rl.num_requeues("a") == 1
    rl.forget("a")
    assert all(c.forgotten == ["a"] for c in children)
    assert rl.num_requeues("a") == 0


def test_max_of_needs_a_child() -> None:
    with pytest.raises(ValueError):
        MaxOfRateLimiter()


def test_default_controller_rate_limiter() -> None:
    clock = FakeClock()
    rl = default_controller_rate_limiter(clock=clock)
    assert isinstance(rl, RateLimiter)
    # 100 distinct first failures: the per-item 5 ms dominates while the bucket has tokens.
    assert [rl.when(f"k{i}") for i in range(100)] == pytest.approx([0.005] * 100)
    # Then the overall bucket dominates (10 qps), even for a first failure.
    assert rl.when("k100") == pytest.approx(0.1)
    # The bucket is charged even when the exponential term dominates.
    clock.step(100.0)
    for _ in range(20):
        rl.when("hot")
    assert rl.num_requeues("hot") == 20
    assert rl.when("hot") == 1000.0  # 0.005 * 2**20 is past the cap
    assert [rl.when(f"x{i}") for i in range(79)] == pytest.approx([0.005] * 79)
    assert rl.when("x79") == pytest.approx(0.1)
    rl.forget("hot")
    assert rl.num_requeues("hot") == 0


def test_default_item_based_and_max_wait() -> None:
    rl = default_item_based_rate_limiter()
    assert rl.when("a") == pytest.approx(0.001)
    capped = WithMaxWaitRateLimiter(ItemExponentialFailureRateLimiter(1.0, 1000.0), 3.0)
    assert [capped.when("a") for _ in range(4)] == [1.0, 2.0, 3.0, 3.0]
    assert capped.num_requeues("a") == 4
    capped.forget("a")
    assert capped.when("a") == 1.0


def test_limiters_are_thread_safe() -> None:
    clock = FakeClock()
    exp = ItemExponentialFailureRateLimiter(0.001, 1.0)
    bucket = BucketRateLimiter(10, 100, clock=clock)
    rl = MaxOfRateLimiter(exp, bucket)
    n_threads, per_thread = 8, 250

    def work() -> None:
        for _ in range(per_thread):
            rl.when("shared")

    threads = [threading.Thread(target=work) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    total = n_threads * per_thread
    assert exp.num_requeues("shared") == total
    # Exactly `total` tokens were taken: the next reservation is (total - burst + 1) / qps out.
    assert bucket.when("next") == pytest.approx((total - 100 + 1) / 10)
