"""Fault injection and request statistics for the devcluster, changeable while it serves.

`FaultInjector` holds latency rules, error-rate rules and one-shot failures, each matching a verb and/or a
resource (None matches everything); the most specific matching rule wins. `RequestStats` counts requests per
(verb, resource), tracks the high-water mark of concurrent in-flight requests per (verb, resource) and records
every resource call (verb, resource, namespace, subresource) for RBAC coverage checks (the most recent
200,000). Both are thread-safe.

Resources are plurals, with a subresource as "ingresses/status"; a rule for "ingresses" does not match
"ingresses/status". Verbs are Kubernetes verbs: get, list, watch, create, update, patch, delete,
deletecollection.
"""

from __future__ import annotations

import random
import threading
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from ingressctl.devcluster.store import Store


@dataclass(frozen=True)
class _ErrorRule:
    status: int
    rate: float
    retry_after: int


@dataclass
class _OneShot:
    status: int
    remaining: int
    verb: str | None
    resource: str | None
    retry_after: int


def _specificity(verb: str | None, resource: str | None) -> int:
    return (verb is not None) + 2 * (resource is not None)


class Fault(NamedTuple):
    status: int
    retry_after: int


class FaultInjector:
    """Latency, error rates, one-shot failures, dropped watches and forced compaction."""

    def __init__(self, store: Store, *, seed: int | None = None) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._latency: dict[tuple[str | None, str | None], float] = {}
        self._errors: dict[tuple[str | None, str | None], dict[int, _ErrorRule]] = {}
        self._one_shots: list[_OneShot] = []
        self._rng = random.Random(seed)

    def seed(self, seed: int) -> None:
        """Make error-rate decisions reproducible."""
        with self._lock:
            self._rng.seed(seed)

    def set_latency(self, ms: float, verb: str | None = None, resource: str | None = None) -> None:
        """Delay matching requests by `ms` milliseconds (0 removes the rule)."""
        if ms < 0:
            raise ValueError("latency must be >= 0")
        with self._lock:
            if ms:
                self._latency[(verb, resource)] = ms / 1000.0
            else:
                self._latency.pop((verb, resource), None)

    def set_error_rate(self, status: int, rate: float, verb: str | None = None, resource: str | None = None,
                       retry_after: int = 1) -> None:
        """Fail a fraction `rate` (0..1) of matching requests with `status` (429 carries Retry-After)."""
        if not 0.0 <= rate <= 1.0:
            raise ValueError("rate must be within [0, 1]")
        if not 400 <= status <= 599:
            raise ValueError("status must be an HTTP error code")
        with self._lock:
            rules = self._errors.setdefault((verb, resource), {})
            if rate:
                rules[status] = _ErrorRule(status, rate, retry_after)
            else:
                rules.pop(status, None)

    def fail_next(self, status: int, count: int = 1, verb: str | None = None, resource: str | None = None,
                  retry_after: int = 1) -> None:
        """Fail exactly the next `count` matching requests with `status` (deterministic)."""
        with self._lock:
            self._one_shots.append(_OneShot(status, count, verb, resource, retry_after))

    def drop_watches(self) -> int:
        """Close every open watch stream abruptly (no terminating chunk). Returns how many were open."""
        return self._store.drop_watches()

    def compact(self) -> int:
        """Drop the event history: watches and exact lists from any older resourceVersion now get 410."""
        return self._store.compact()

    def reset(self) -> None:
        """Remove every latency and error rule."""
        with self._lock:
            self._latency.clear()
            self._errors.clear()
            self._one_shots.clear()

    # ------------------------------------------------------------------------------------------- server side
    def latency_for(self, verb: str, resource: str) -> float:
        """Seconds to delay this request (the most specific matching rule)."""
        with self._lock:
            best, best_spec = 0.0, -1
            for (v, r), delay in self._latency.items():
                if (v is None or v == verb) and (r is None or r == resource):
                    spec = _specificity(v, r)
                    if spec > best_spec:
                        best, best_spec = delay, spec
            return best

    def fault_for(self, verb: str, resource: str) -> Fault | None:
        """The injected failure for this request, if any."""
        with self._lock:
            for shot in self._one_shots:
                if shot.verb in (None, verb) and shot.resource in (None, resource):
                    shot.remaining -= 1
                    if shot.remaining <= 0:
                        self._one_shots.remove(shot)
                    return Fault(shot.status, shot.retry_after)
            for (v, r), rules in sorted(self._errors.items(), key=lambda kv: -_specificity(*kv[0])):
                if (v is None or v == verb) and (r is None or r == resource):
                    for rule in rules.values():
                        if self._rng.random() < rule.rate:
                            return Fault(rule.status, rule.retry_after)
            return None


MAX_CALLS = 200_000   # the call log keeps the most recent calls


class Call(NamedTuple):
    """One resource request as the server saw it. `resource` includes the subresource ("ingresses/status")."""

    verb: str
    resource: str
    namespace: str
    subresource: str


class RequestStats:
    """Request counters, in-flight high-water marks and a call log."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()
        self._in_flight: Counter[tuple[str, str]] = Counter()
        self._max: dict[tuple[str, str], int] = {}
        self._calls: deque[Call] = deque(maxlen=MAX_CALLS)
        self._groups: dict[str, str] = {}

    def begin(self, call: Call, group: str = "") -> Callable[[], None]:
        """Record the start of a request; returns the function to call when it ends."""
        key = (call.verb, call.resource)
        with self._lock:
            self._groups[call.resource] = group
            self._counts[key] += 1
            self._calls.append(call)
            self._in_flight[key] += 1
            n = self._in_flight[key]
            if n > self._max.get(key, 0):
                self._max[key] = n

        def end() -> None:
            with self._lock:
                self._in_flight[key] -= 1
        return end

    def count(self, verb: str | None = None, resource: str | None = None) -> int:
        """Requests seen for (verb, resource); None matches any."""
        with self._lock:
            return sum(n for (v, r), n in self._counts.items()
                       if (verb is None or v == verb) and (resource is None or r == resource))

    def max_in_flight(self, verb: str, resource: str) -> int:
        """The most concurrent requests ever in flight for (verb, resource)."""
        with self._lock:
            return self._max.get((verb, resource), 0)

    def in_flight(self, verb: str, resource: str) -> int:
        with self._lock:
            return self._in_flight.get((verb, resource), 0)

    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def group_of(self, resource: str) -> str:
        """The API group of a resource seen in a call ("" for core), for RBAC rules."""
        with self._lock:
            return self._groups.get(resource, "")

    def counts(self) -> dict[tuple[str, str], int]:
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        """Clear counters, high-water marks (to the current in-flight level) and the call log."""
        with self._lock:
            self._counts.clear()
            self._calls.clear()
            self._max = {k: v for k, v in self._in_flight.items() if v > 0}
