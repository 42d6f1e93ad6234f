"""Start-up (docs/architecture.md, "Start-up"): the end of the initial drain, the deferred status flush, and
the became-leader status writes.

Guarantees:
- Until the initial queue drains, problems are only collected (`defer_problems`); nothing is rendered,
  reloaded or written.
- `complete()` runs once: ONE host resolution, everything rendered (the renders split over processes, see
  `LoadBalancerController._render_ahead`), ONE reload, the problem resources'
  events and statuses written synchronously (host conflicts, orphaned children, and validation errors of
  resources still invalid at the end of the drain), readiness turned on (also with zero resources), then the
  applied resources' events queued (after readiness: with 10,000 resources queueing them takes ~0.2 s that
  serving does not need to wait for), then the deferred statuses flushed in the background by
  `status_workers` (10) workers gated on leader election. A failure in one step is logged and does not keep
  the controller from becoming ready (as NIC).
- `legacy_startup` keeps the pre-5.5 path: events, then statuses written serially, before readiness; no
  flush.
- The flush is the only writer of deferred start-up statuses; resources configured after readiness while
  this replica waited for the lease are flushed too. A became-leader callback writes every status, unless the
  flush still owns that job.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ingressctl.controller.configuration import ConfigurationProblem
from ingressctl.controller.options import ControllerOptions, SyncStats
from ingressctl.controller.reporter import Reporter
from ingressctl.controller.status import StartupStatusFlush, StatusWriters
from ingressctl.keys import ResourceKey
from ingressctl.logging import get_logger

log = get_logger(__name__)


class StartupConfiguration(Protocol):
    @property
    def startup_complete(self) -> bool: ...

    def set_startup_complete(self) -> Any: ...

    def host_problems(self) -> dict[ResourceKey, ConfigurationProblem]: ...

    def get_object(self, key: ResourceKey) -> dict[str, Any] | None: ...

    def get_resources(self) -> Sequence[Any]: ...


class Reloads(Protocol):
    def enable_reloads(self) -> None: ...


class Startup:
    """See the module docstring."""

    def __init__(self, *, options: ControllerOptions, stats: SyncStats, configuration: StartupConfiguration,
                 configurator: Reloads, reporter: Reporter, status: StatusWriters,
                 render_all: Callable[[], Callable[[], None] | None],
                 cached: Callable[[ResourceKey], dict[str, Any] | None],
                 guarded: Callable[[Callable[[], None]], None], stopping: threading.Event) -> None:
        self._o = options
        self._stats = stats
        self._configuration = configuration
        self._configurator = configurator
        self._reporter = reporter
        self._status = status
        self._render_all = render_all
        self._cached = cached
        self._guarded = guarded
        self._stopping = stopping
        self._problems: dict[tuple[ResourceKey, str], ConfigurationProblem] = {}
        self.flush: StartupStatusFlush | None = None
        self._leader_writer: threading.Thread | None = None

    def defer_problems(self, problems: Sequence[ConfigurationProblem]) -> None:
        """Start-up: problems are reported synchronously once the initial queue has drained."""
        for p in problems:
            self._problems[(p.key, p.reason)] = p

    def _current_problems(self) -> list[ConfigurationProblem]:
        """Problems as they stand at the end of the drain: every host problem now, plus validation errors of
        resources that are still invalid (a later update during the drain may have fixed one)."""
        out = list(self._configuration.host_problems().values())
        seen = {p.key for p in out}
        for p in self._problems.values():
            if p.key in seen or not p.is_error:
                continue
            if self._configuration.get_object(p.key) is None and self._cached(p.key) is not None:
                out.append(p)
        return out

    def complete(self, *, started_at: float, sync_started_at: float, sync_cpu_start: float,
                 mark_ready: Callable[[], None]) -> None:
        """The first drain: see the module docstring."""
        t0 = time.monotonic()
        phases = self._stats.phases
        if sync_started_at:
            phases["drain"] = t0 - sync_started_at
        self._configuration.set_startup_complete()
        phases["resolve_hosts"] = time.monotonic() - t0
        self._configurator.enable_reloads()
        t1 = time.monotonic()
        reports: list[Callable[[], None]] = []   # the applied resources' events and deferred statuses

        def render_all() -> None:
            report = self._render_all()
            if report is not None:
                reports.append(report)

        self._guarded(render_all)
        phases["render_and_reload"] = time.monotonic() - t1
        # Problems (host conflicts, orphaned children, invalid resources) are written synchronously.
        t2 = time.monotonic()
        self._guarded(lambda: self._reporter.report_problems(self._current_problems()))
        self._problems.clear()
        phases["problems"] = time.monotonic() - t2
        flush = None
        if self._o.legacy_startup:
            # Pre-5.5: the events, then every status written serially, before readiness.
            for report in reports:
                self._guarded(report)
            t3 = time.monotonic()
            self._status.bulk_update(self._reporter.take_deferred(), workers=1)
            phases["status"] = time.monotonic() - t3
        else:
            flush = StartupStatusFlush(self._status, leader_election=self._o.leader_election,
                                       workers=self._o.status_workers, leader_wait=self._o.leader_wait)
            self.flush = flush
        # CPU time of the sync thread from its start to readiness: drain, resolution, render (not NGINX).
        phases["sync_thread_cpu"] = time.thread_time() - sync_cpu_start
        mark_ready()
        self._stats.ready_at = time.monotonic()
        self._stats.startup_seconds = self._stats.ready_at - started_at
        log.info("controller ready", resources=len(self._configuration.get_resources()),
                 seconds=round(self._stats.startup_seconds, 3),
                 phases={k: round(v, 3) for k, v in phases.items()})
        if flush is not None:
            for report in reports:
                self._guarded(report)
            keys = self._reporter.take_deferred()
            # The deferred statuses, plus resources configured after readiness while this replica waited for
            # the lease (steady-state writes are skipped by a follower, and the flush owns the writes then).
            at_ready = set(self._reporter.status_keys())

            def flush_keys() -> list[ResourceKey]:
                return keys + [k for k in self._reporter.status_keys() if k not in at_ready]

            flush.start(flush_keys)

    def on_started_leading(self, is_ready: bool, stop: threading.Event | None = None) -> None:
        """Leader-election callback: write every status, unless the start-up flush still owns that job."""
        if not self._o.report_ingress_status:
            return
        flush = self.flush
        if not is_ready or (flush is not None and flush.owns_writes()):
            log.info("became leader; the start-up status flush writes the statuses")
            return
        keys = self._reporter.status_keys()
        log.info("became leader; writing statuses", resources=len(keys))

        def stopped() -> bool:
            return self._stopping.is_set() or (stop is not None and stop.is_set())

        def write() -> None:
            failed = self._status.bulk_update(keys, workers=self._o.status_workers, should_stop=stopped)
            if failed:
                log.warning("some statuses were not written", failed=failed)

        self._leader_writer = threading.Thread(target=write, name="leader-status", daemon=True)
        self._leader_writer.start()

    def stop(self, timeout: float) -> None:
        if self.flush is not None:
            self.flush.stop()
            self.flush.join(timeout)
        if self._leader_writer is not None:
            self._leader_writer.join(timeout)
