"""Lease-based leader election (coordination.k8s.io/v1), after client-go's `tools/leaderelection`; the
Lease record and its wire format are resourcelock.py.

Guarantees:
- The algorithm is client-go's `tryAcquireOrRenew`: a fast-path renew from the cached Lease, else GET;
  create the Lease when it does not exist (AlreadyExists = lost the race); take it only when it is free or
  expired; every write is a PUT carrying the resourceVersion that was read, so a 409 means "someone else
  wrote, lost this round".
- Expiry is judged by LOCAL monotonic time: a Lease held by another replica is valid until
  `leaseDurationSeconds` after this replica last saw its record change. `renewTime`/`acquireTime` (written
  as MicroTime, RFC 3339 with exactly six fractional digits) are informational only, so wall-clock offsets
  between replicas do not matter.
- `leaseTransitions` grows by one only when the holder changes; renewals and the release keep it.
- A leader steps down no later than `renew_deadline` after the start of its last successful renew attempt,
  which is before any other replica may take the Lease (`lease_duration > renew_deadline`), even when a
  request hangs: requests run on a worker thread and the deadline is enforced by the election thread. It
  also steps down at once when it sees another holder. `is_leader()` checks the deadline itself, so it is
  never late.
- Unlike NIC (whose process never campaigns again), a replica that loses the lease campaigns again.
- Callbacks: `on_started_leading(stop)` runs in a new thread per term; `stop` (a `threading.Event`) is set
  when the term ends and long-running leader work must return then. `on_stopped_leading()` runs once at the
  end of every term, and once at `stop()` if this elector never led (client-go calls it on every exit).
  `on_new_leader(identity)` runs on a notifier thread, in order, whenever the observed holder changes
  (including to "" and to us). A failing callback is logged and harms nothing else.
- `stop()` ends the term, waits (bounded) for the leader work to return and only then, with
  `release_on_cancel`, releases the Lease as client-go does: holder "" and `leaseDurationSeconds` 1,
  transitions unchanged, and only if this replica is the observed holder.
"""

from __future__ import annotations

import queue
import random
import threading
from collections.abc import Callable
from typing import Any

from ingressctl.k8s.clock import Clock, RealClock
from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.resource import LEASES
from ingressctl.k8s.resourcelock import (
    EventSink,
    LeaderElectionRecord,
    LeaseClient,
    format_micro_time,
    with_record,
)
from ingressctl.logging import get_logger

__all__ = ["JITTER_FACTOR", "LeaderElector", "StartedLeading"]

log = get_logger(__name__)

JITTER_FACTOR = 1.2
"""client-go's JitterFactor: acquire attempts are `retry_period * [1, 1 + JITTER_FACTOR)` apart."""

StartedLeading = Callable[[threading.Event], None]


class LeaderElector:
    """Campaigns for a Lease on its own threads; see the module docstring for the guarantees."""

    def __init__(self, client: LeaseClient, *, namespace: str, name: str, identity: str,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0, retry_period: float = 2.0,
                 on_started_leading: StartedLeading | None = None,
                 on_stopped_leading: Callable[[], None] | None = None,
                 on_new_leader: Callable[[str], None] | None = None,
                 release_on_cancel: bool = True, clock: Clock | None = None,
                 rng: random.Random | None = None, event_recorder: EventSink | None = None) -> None:
        if not identity:
            raise ValueError("leader election identity must not be empty")
        if not namespace or not name:
            raise ValueError("leader election needs the Lease's namespace and name")
        for label, value in (("lease_duration", lease_duration), ("renew_deadline", renew_deadline),
                             ("retry_period", retry_period)):
            if not value > 0:
                raise ValueError(f"{label} must be greater than zero, got {value}")
        if not lease_duration > renew_deadline:
            raise ValueError(f"lease_duration ({lease_duration}) must be greater than renew_deadline "
                             f"({renew_deadline})")
        if not renew_deadline > JITTER_FACTOR * retry_period:
            raise ValueError(f"renew_deadline ({renew_deadline}) must be greater than retry_period "
                             f"({retry_period}) * {JITTER_FACTOR}")
        if lease_duration != int(lease_duration):
            # The Lease stores whole seconds; a truncated duration could expire before our renew deadline.
            raise ValueError(f"lease_duration must be a whole number of seconds, got {lease_duration}")
        self._client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = float(lease_duration)
        self.renew_deadline = float(renew_deadline)
        self.retry_period = float(retry_period)
        self.release_on_cancel = release_on_cancel
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._recorder = event_recorder
        self._clock: Clock = clock if clock is not None else RealClock()
        self._rng = rng if rng is not None else random.Random()
        self._log = log.bind(lease=f"{namespace}/{name}", identity=identity)

        self._cond = threading.Condition()
        # Observed state (guarded by _cond).
        self._lease: dict[str, Any] | None = None
        self._observed: LeaderElectionRecord | None = None
        self._observed_raw = ""
        self._observed_time = 0.0
        self._reported_leader = ""  # as client-go: a first observation of "no holder" is not reported
        self._leading = False
        self._leader_until = 0.0
        self._ever_led = False
        self._started = False
        self._stopping = False
        self._term_stop: threading.Event | None = None
        self._work_thread: threading.Thread | None = None
        # Job hand-off between the election thread and the request worker (guarded by _cond).
        self._job: Callable[[], bool] | None = None
        self._job_seq = 0
        self._done_seq = 0
        self._job_result = False
        self._worker_exit = False

        self._notify: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._worker: threading.Thread | None = None
        self._notifier: threading.Thread | None = None

    # -- public ----------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start campaigning on background threads (daemon threads; call `stop()` to end)."""
        with self._cond:
            if self._started or self._stopping:
                raise RuntimeError("LeaderElector.start() called twice or after stop()")
            self._started = True
        tag = f"{self.name}/{self.identity}"
        self._worker = threading.Thread(target=self._worker_loop, name=f"leader-requests-{tag}", daemon=True)
        self._notifier = threading.Thread(target=self._notifier_loop, name=f"leader-notify-{tag}",
                                          daemon=True)
        self._thread = threading.Thread(target=self._run, name=f"leader-election-{tag}", daemon=True)
        self._worker.start()
        self._notifier.start()
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop campaigning: end the term, wait for leader work, release the Lease if held and configured.

        Blocks at most about `timeout` seconds (default: 2 * renew_deadline + retry_period). Called from a
        callback, it only signals: the election thread finishes the shutdown on its own.
        """
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        thread = self._thread
        current = threading.current_thread()
        if current is thread or current is self._work_thread or current is self._notifier:
            return
        if thread is not None:
            thread.join(timeout if timeout is not None else 2 * self.renew_deadline + self.retry_period)
            if thread.is_alive():
                self._log.warning("leader election did not stop in time")

    def is_leader(self) -> bool:
        """True while this replica leads and its renew deadline has not passed. Cheap and thread-safe."""
        with self._cond:
            return self._leading and self._clock.now() < self._leader_until

    def get_leader(self) -> str:
        """The holder identity last observed ("" when free or unknown)."""
        with self._cond:
            return self._observed.holder_identity if self._observed is not None else ""

    def observed_record(self) -> LeaderElectionRecord | None:
        """The Lease record last observed (a copy; for diagnostics and tests)."""
        with self._cond:
            return self._observed

    # -- one attempt (client-go's tryAcquireOrRenew) ---------------------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        """One attempt to acquire or renew; True if we hold the Lease afterwards. Never raises."""
        t0 = self._clock.now()
        now_text = format_micro_time(self._clock.wall())
        ld_seconds = int(self.lease_duration)

        # 1. Fast path: we hold a lease we believe valid; renew from the cached object without a GET.
        with self._cond:
            cached, observed, observed_time = self._lease, self._observed, self._observed_time
        if (cached is not None and observed is not None and observed.holder_identity == self.identity
                and observed_time + observed.lease_duration_seconds > t0):
            record = LeaderElectionRecord(self.identity, ld_seconds, observed.acquire_time, now_text,
                                          observed.leader_transitions)
            try:
                written = self._client.update(LEASES, self.namespace, self.name, with_record(cached, record))
            except Exception as e:
                self._log.debug("fast-path renew failed; falling back to get", error=str(e))
            else:
                return self._observe_written(written, t0)

        # 2. GET, or create when missing.
        try:
            lease = self._client.get(LEASES, self.namespace, self.name)
        except ApiError as e:
            if not e.is_not_found:
                self._log.warning("error retrieving lease", error=str(e))
                return False
            return self._create(t0, now_text, ld_seconds)
        except Exception as e:
            self._log.warning("error retrieving lease", error=str(e))
            return False

        # 3. Record what we saw; a changed record restarts the local expiry clock.
        try:
            record = LeaderElectionRecord.from_lease(lease)
        except ValueError as e:
            self._log.warning("invalid lease; will overwrite it once it expires", error=str(e))
            record = LeaderElectionRecord()
        with self._cond:
            self._lease = lease
            raw = record.raw()
            if raw != self._observed_raw:
                self._observed, self._observed_raw = record, raw
                self._observed_time = self._clock.now()
            observed_time = self._observed_time
            self._report_leader_locked()

        # 4. Someone else holds a lease that has not expired by our local observation.
        holder = record.holder_identity
        if holder and holder != self.identity and observed_time + record.lease_duration_seconds > t0:
            self._log.debug("lease is held by another replica and has not expired", holder=holder)
            return False

        # 5. Take or renew it with an optimistic-concurrency PUT.
        if holder == self.identity:
            new = LeaderElectionRecord(self.identity, ld_seconds, record.acquire_time, now_text,
                                       record.leader_transitions)
        else:
            new = LeaderElectionRecord(self.identity, ld_seconds, now_text, now_text,
                                       record.leader_transitions + 1)
        try:
            written = self._client.update(LEASES, self.namespace, self.name, with_record(lease, new))
        except ApiError as e:
            if e.is_conflict:
                self._log.debug("lease was written concurrently; lost this round")
            else:
                self._log.warning("failed to update lease", error=str(e))
            return False
        except Exception as e:
            self._log.warning("failed to update lease", error=str(e))
            return False
        return self._observe_written(written, t0)

    def _create(self, t0: float, now_text: str, ld_seconds: int) -> bool:
        record = LeaderElectionRecord(self.identity, ld_seconds, now_text, now_text, 0)
        body: dict[str, Any] = {
            "apiVersion": LEASES.api_version, "kind": LEASES.kind,
            "metadata": {"name": self.name, "namespace": self.namespace}, "spec": {},
        }
        record.apply_to(body["spec"])
        try:
            created = self._client.create(LEASES, self.namespace, body)
        except ApiError as e:
            if e.is_already_exists:
                self._log.debug("lost the race to create the lease")
            else:
                self._log.warning("error creating lease", error=str(e))
            return False
        except Exception as e:
            self._log.warning("error creating lease", error=str(e))
            return False
        return self._observe_written(created, t0)

    def _observe_written(self, lease: dict[str, Any], t0: float) -> bool:
        """Cache a Lease we wrote as holder; our leadership is good until t0 + renew_deadline."""
        try:
            record = LeaderElectionRecord.from_lease(lease)
        except ValueError as e:
            self._log.warning("server returned an invalid lease", error=str(e))
            return False
        with self._cond:
            self._lease = lease
            self._observed, self._observed_raw = record, record.raw()
            self._observed_time = self._clock.now()
            ours = record.holder_identity == self.identity
            if ours:
                self._leader_until = t0 + self.renew_deadline
            self._report_leader_locked()
        return ours

    def _report_leader_locked(self) -> None:
        holder = self._observed.holder_identity if self._observed is not None else ""
        if holder != self._reported_leader:
            self._reported_leader = holder
            if self._on_new_leader is not None:
                self._notify.put(holder)

    # -- release ---------------------------------------------------------------------------------------------

    def _release(self) -> bool:
        """Give the Lease up (holder "", duration 1 s) if we are its observed holder; retry 409s a while."""
        deadline = self._clock.now() + self.renew_deadline
        while True:
            with self._cond:
                lease, observed = self._lease, self._observed
            if lease is None or observed is None or observed.holder_identity != self.identity:
                return True
            now_text = format_micro_time(self._clock.wall())
            record = LeaderElectionRecord("", 1, now_text, now_text, observed.leader_transitions)
            try:
                written = self._client.update(LEASES, self.namespace, self.name, with_record(lease, record))
            except ApiError as e:
                if e.is_conflict and self._clock.now() < deadline:
                    try:
                        fresh = self._client.get(LEASES, self.namespace, self.name)
                        fresh_record = LeaderElectionRecord.from_lease(fresh)
                    except Exception as ge:
                        self._log.warning("failed to release lease", error=str(ge))
                        return False
                    with self._cond:
                        self._lease = fresh
                        if fresh_record.raw() != self._observed_raw:
                            self._observed, self._observed_raw = fresh_record, fresh_record.raw()
                            self._observed_time = self._clock.now()
                        self._report_leader_locked()
                    continue
                self._log.warning("failed to release lease", error=str(e))
                return False
            except Exception as e:
                self._log.warning("failed to release lease", error=str(e))
                return False
            self._observe_written(written, self._clock.now())
            self._log.info("released lease")
            return True

    # -- threads ---------------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._is_stopping():
                try:
                    if not self._acquire():
                        break
                    self._begin_term()
                    self._renew()
                finally:
                    if self._is_leading_flag():
                        self._end_term()
        except Exception:
            self._log.exception("leader election loop failed")
        finally:
            self._shutdown()

    def _shutdown(self) -> None:
        try:
            if not self._ever_led:
                self._call_stopped()  # client-go calls OnStoppedLeading on every exit, even if it never led
            if self.release_on_cancel:
                work = self._work_thread
                if work is not None and work.is_alive():
                    work.join(self.renew_deadline)
                if work is not None and work.is_alive():
                    self._log.warning("leader work did not stop; not releasing the lease (it will expire)")
                else:
                    self._run_job(self._release, self._clock.now() + self.renew_deadline, when_stopping=True)
        except Exception:
            self._log.exception("leader election shutdown failed")
        finally:
            with self._cond:
                self._worker_exit = True
                self._cond.notify_all()
            self._notify.put(None)

    def _acquire(self) -> bool:
        """Try every retry_period (jittered) until we hold the Lease; False when stopping."""
        self._log.info("attempting to acquire leader lease")
        waiting_logged = False
        while not self._is_stopping():
            work = self._work_thread
            if work is not None and work.is_alive():
                # The previous term's leader work is still running; leading again would run it twice.
                if not waiting_logged:
                    self._log.warning("waiting for the previous term's leader work to return")
                    waiting_logged = True
            else:
                ok = self._run_job(self.try_acquire_or_renew, None)
                if ok:
                    with self._cond:
                        if self._clock.now() < self._leader_until and not self._stopping:
                            return True
            self._wait(self.retry_period * (1.0 + self._rng.random() * JITTER_FACTOR))
        return False

    def _renew(self) -> None:
        """Renew every retry_period; return when the deadline passes, another holder appears, or on stop."""
        next_at = self._clock.now() + self.retry_period
        while True:
            with self._cond:
                while not self._stopping:
                    now = self._clock.now()
                    wake = min(next_at, self._leader_until)
                    if now >= wake:
                        break
                    self._clock.wait(self._cond, wake - now)
                if self._stopping:
                    return
                if self._clock.now() >= self._leader_until:
                    self._log.warning("failed to renew lease within the renew deadline; stepping down")
                    return
                until = self._leader_until
            ok = self._run_job(self.try_acquire_or_renew, until)
            if ok is False:
                holder = self.get_leader()
                if holder and holder != self.identity:
                    self._log.warning("another replica holds the lease; stepping down", holder=holder)
                    return
            next_at = self._clock.now() + self.retry_period

    def _begin_term(self) -> None:
        stop = threading.Event()
        with self._cond:
            self._leading = True
            self._ever_led = True
            self._term_stop = stop
        self._log.info("became leader")
        self._record_event("became leader")
        if self._on_started is not None:
            self._work_thread = threading.Thread(target=self._call_started, args=(self._on_started, stop),
                                                 name=f"leader-work-{self.identity}", daemon=True)
            self._work_thread.start()

    def _end_term(self) -> None:
        with self._cond:
            self._leading = False
            stop = self._term_stop
            self._term_stop = None
        if stop is not None:
            stop.set()
        self._log.info("stopped leading")
        self._record_event("stopped leading")
        self._call_stopped()

    def _call_started(self, fn: StartedLeading, stop: threading.Event) -> None:
        try:
            fn(stop)
        except Exception:
            self._log.exception("on_started_leading failed")

    def _call_stopped(self) -> None:
        if self._on_stopped is None:
            return
        try:
            self._on_stopped()
        except Exception:
            self._log.exception("on_stopped_leading failed")

    def _record_event(self, what: str) -> None:
        if self._recorder is None:
            return
        with self._cond:
            lease = self._lease
        if lease is not None:
            try:
                self._recorder.event(lease, "Normal", "LeaderElection", f"{self.identity} {what}")
            except Exception:
                self._log.exception("recording leader election event failed")

    def _notifier_loop(self) -> None:
        callback = self._on_new_leader
        while True:
            holder = self._notify.get()
            if holder is None:
                return
            if callback is None:
                continue
            try:
                callback(holder)
            except Exception:
                self._log.exception("on_new_leader failed", holder=holder)

    def _worker_loop(self) -> None:
        while True:
            with self._cond:
                while self._job is None and not self._worker_exit:
                    self._cond.wait()
                job = self._job
                if job is None:
                    return
                seq = self._job_seq
                self._job = None
            try:
                result = job()
            except Exception:
                self._log.exception("leader election request failed")
                result = False
            with self._cond:
                self._done_seq = seq
                self._job_result = result
                self._cond.notify_all()

    def _run_job(self, job: Callable[[], bool], until: float | None, *,
                 when_stopping: bool = False) -> bool | None:
        """Run `job` on the worker; its result, or None if `until` passed (or we are stopping) first."""
        with self._cond:
            self._job_seq += 1
            seq = self._job_seq
            self._job = job
            self._cond.notify_all()
            while self._done_seq < seq:
                if self._stopping and not when_stopping:
                    return None
                if until is None:
                    self._clock.wait(self._cond, None)
                    continue
                remaining = until - self._clock.now()
                if remaining <= 0:
                    self._log.warning("lease request did not finish in time")
                    return None
                self._clock.wait(self._cond, remaining)
            return self._job_result

    def _wait(self, seconds: float) -> None:
        with self._cond:
            deadline = self._clock.now() + seconds
            while not self._stopping and (remaining := deadline - self._clock.now()) > 0:
                self._clock.wait(self._cond, remaining)

    def _request_pending(self) -> bool:
        """True while a request job is queued or running (tests use it to know the elector is idle)."""
        with self._cond:
            return self._job is not None or self._done_seq < self._job_seq

    def _is_stopping(self) -> bool:
        with self._cond:
            return self._stopping

    def _is_leading_flag(self) -> bool:
        with self._cond:
            return self._leading

