"""Start-up metrics of ingressctl's own (NIC has none), under NIC's prefix, all with label `class`:

- `nginx_ingress_controller_ready` (gauge): 1 while `/nginx-ready` answers 200, else 0.
- `nginx_ingress_controller_time_to_ready_seconds` (gauge): from process start-up to the first readiness;
  0 until then. Set once: later readiness flaps do not change it.
- `nginx_ingress_controller_status_flush_pending` (gauge): deferred start-up statuses not yet handled by the
  background flush.
- `nginx_ingress_controller_status_flush_written` (gauge): statuses the flush wrote (unchanged ones are not
  rewritten and not counted).
- `nginx_ingress_controller_status_flush_duration_seconds` (gauge): how long the flush took; 0 until it ends.
- `nginx_ingress_controller_status_write_errors_total` (counter): failed Ingress status writes, in the flush
  or later.

Thread-safe: the flush's workers may report concurrently.
"""

from __future__ import annotations

import math
import threading

from prometheus_client import CollectorRegistry, Counter, Gauge

from ingressctl.metrics.common import CLASS_LABEL, check_ingress_class, controller_metric

FLUSH_WRITTEN = "written"
FLUSH_UNCHANGED = "unchanged"
FLUSH_FAILED = "failed"


def _seconds(value: float, what: str) -> float:
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be a finite, non-negative number of seconds, got {value!r}")
    return value


class StartupMetricsCollector:
    """Readiness, time to ready, and the progress of the start-up status flush."""

    def __init__(self, registry: CollectorRegistry, ingress_class: str) -> None:
        self.ingress_class = check_ingress_class(ingress_class)
        cls = [CLASS_LABEL]
        self._lock = threading.Lock()
        self._ready_seen = False
        self._pending_n = 0
        self._ready = Gauge(controller_metric("ready"), "1 when the controller is ready, else 0", cls,
                            registry=registry).labels(self.ingress_class)
        self._time_to_ready = Gauge(controller_metric("time_to_ready_seconds"),
                                    "Seconds from start-up to the first readiness", cls,
                                    registry=registry).labels(self.ingress_class)
        self._pending = Gauge(controller_metric("status_flush_pending"),
                              "Deferred start-up Ingress statuses the status flush has not handled yet", cls,
                              registry=registry).labels(self.ingress_class)
        self._written = Gauge(controller_metric("status_flush_written"),
                              "Ingress statuses written by the start-up status flush", cls,
                              registry=registry).labels(self.ingress_class)
        self._flush_seconds = Gauge(controller_metric("status_flush_duration_seconds"),
                                    "Duration of the start-up status flush", cls,
                                    registry=registry).labels(self.ingress_class)
        self._errors = Counter(controller_metric("status_write_errors_total"),
                               "Number of failed Ingress status writes", cls,
                               registry=registry).labels(self.ingress_class)
        for g in (self._ready, self._time_to_ready, self._pending, self._written, self._flush_seconds):
            g.set(0)

    def set_ready(self, ready: bool) -> None:
        self._ready.set(1 if ready else 0)

    def mark_ready(self, seconds_since_start: float) -> None:
        """Readiness turned on; the first call also records the time to ready."""
        _seconds(seconds_since_start, "time to ready")
        with self._lock:
            if not self._ready_seen:
                self._ready_seen = True
                self._time_to_ready.set(seconds_since_start)
        self._ready.set(1)

    def status_flush_started(self, pending: int) -> None:
        """The flush begins with `pending` deferred statuses."""
        if isinstance(pending, bool) or not isinstance(pending, int) or pending < 0:
            raise ValueError(f"pending must be a non-negative int, got {pending!r}")
        with self._lock:
            self._pending_n = pending
            self._pending.set(pending)
            self._written.set(0)

    def status_flush_item(self, outcome: str) -> None:
        """One deferred status handled: `written`, `unchanged` (no write needed) or `failed`."""
        if outcome not in (FLUSH_WRITTEN, FLUSH_UNCHANGED, FLUSH_FAILED):
            raise ValueError(f"unknown status flush outcome {outcome!r}")
        with self._lock:
            self._pending_n = max(0, self._pending_n - 1)
            self._pending.set(self._pending_n)
            if outcome == FLUSH_WRITTEN:
                self._written.inc()
            elif outcome == FLUSH_FAILED:
                self._errors.inc()

    def status_flush_finished(self, seconds: float) -> None:
        """The flush ended (written, skipped as a follower, or stopped): nothing is pending any more."""
        _seconds(seconds, "status flush duration")
        with self._lock:
            self._pending_n = 0
            self._pending.set(0)
            self._flush_seconds.set(seconds)

    def inc_status_write_errors(self, n: int = 1) -> None:
        """Failed status writes outside the flush."""
        self._errors.inc(n)
