"""Rate limiters for the rate-limiting workqueue, after client-go's `util/workqueue/default_rate_limiters.go`.

Every limiter implements the `RateLimiter` protocol:

- `when(item) -> float`: seconds to wait before `item` is retried. It MUTATES state: it counts a failure for
  the item and/or consumes a token. Call it once per retry.
- `forget(item)`: drop the item's failure history (call on success). It removes nothing from any queue.
- `num_requeues(item) -> int`: failures counted for the item.

Limiters are thread-safe and compose: `MaxOfRateLimiter` asks every child (so a token is consumed even when
another child's delay is larger) and returns the largest delay. `default_controller_rate_limiter()` is
client-go's DefaultControllerRateLimiter: per-item exponential backoff from 5 ms to 1000 s, combined with an
overall 10 qps / burst 100 token bucket. Time comes from an injectable `Clock` (only the bucket reads it).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from typing import Protocol, runtime_checkable

from ingressctl.k8s.clock import Clock, RealClock

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]


@runtime_checkable
class RateLimiter(Protocol):
    """client-go's TypedRateLimiter."""

    def when(self, item: Hashable) -> float:
        """Seconds to wait before retrying `item`; records the retry."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking `item` (its next failure starts from scratch)."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many failures are recorded for `item`."""
        ...


def _check_non_negative(name: str, value: float) -> float:
    if not isinstance(value, int | float) or math.isnan(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    return float(value)


class ItemExponentialFailureRateLimiter:
    """Per-item delay `base * 2**failures`, capped at `max_delay` (huge failure counts give `max_delay`)."""

    def __init__(self, base: float = 0.005, max_delay: float = 1000.0) -> None:
        self._base = _check_non_negative("base", base)
        self._max = _check_non_negative("max_delay", max_delay)
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        with self._lock:
            exp = self._failures.get(item, 0)
            self._failures[item] = exp + 1
        try:
            backoff = math.ldexp(self._base, exp)
        except OverflowError:
            return self._max
        return min(backoff, self._max)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class ItemFastSlowRateLimiter:
    """`fast_delay` for the first `max_fast_attempts` failures of an item, `slow_delay` after that."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self._fast = _check_non_negative("fast_delay", fast_delay)
        self._slow = _check_non_negative("slow_delay", slow_delay)
        if not isinstance(max_fast_attempts, int) or max_fast_attempts < 0:
            raise ValueError(f"max_fast_attempts must be a non-negative int, got {max_fast_attempts!r}")
        self._max_fast = max_fast_attempts
        self._lock = threading.Lock()
        self._attempts: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        with self._lock:
            n = self._attempts.get(item, 0) + 1
            self._attempts[item] = n
        return self._fast if n <= self._max_fast else self._slow

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._attempts.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._attempts.get(item, 0)


class BucketRateLimiter:
    """An overall token bucket (golang.org/x/time/rate): `qps` tokens per second, at most `burst` saved.

    `when` always reserves a token, booking one in the future if none is left, and returns the wait until
    that token; so a burst of calls gets delays 0 (x burst), 1/qps, 2/qps, ... It is not per item:
    `forget` does nothing and `num_requeues` is 0. `qps=math.inf` never delays.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        if not isinstance(qps, int | float) or math.isnan(qps) or qps <= 0:
            raise ValueError(f"qps must be a positive number, got {qps!r}")
        if not isinstance(burst, int) or burst < 0 or (burst == 0 and not math.isinf(qps)):
            raise ValueError(f"burst must be a positive int (0 only with infinite qps), got {burst!r}")
        self._qps = float(qps)
        self._burst = burst
        self._clock: Clock = clock if clock is not None else RealClock()
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last: float | None = None

    def when(self, item: Hashable) -> float:
        if math.isinf(self._qps):
            return 0.0
        with self._lock:
            now = self._clock.now()
            last = now if self._last is None else min(self._last, now)
            tokens = min(self._tokens + (now - last) * self._qps, float(self._burst)) - 1.0
            self._tokens = tokens
            self._last = now
        return 0.0 if tokens >= 0 else -tokens / self._qps

    def forget(self, item: Hashable) -> None:
        return None

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """Asks every child limiter and returns the longest delay; `num_requeues` is the largest count."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self._limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)


class WithMaxWaitRateLimiter:
    """Caps another limiter's delay at `max_delay`."""

    def __init__(self, limiter: RateLimiter, max_delay: float) -> None:
        self._limiter = limiter
        self._max = _check_non_negative("max_delay", max_delay)

    def when(self, item: Hashable) -> float:
        return min(self._limiter.when(item), self._max)

    def forget(self, item: Hashable) -> None:
        self._limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return self._limiter.num_requeues(item)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> RateLimiter:
    """Max of per-item exponential backoff (5 ms .. 1000 s) and an overall 10 qps / burst 100 bucket."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock=clock),
    )


def default_item_based_rate_limiter() -> RateLimiter:
    """Per-item exponential backoff from 1 ms to 1000 s, no overall limit."""
    return ItemExponentialFailureRateLimiter(0.001, 1000.0)
