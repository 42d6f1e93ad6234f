"""Ingress status: the load-balancer address written to `status.loadBalancer.ingress`, and the start-up flush.

Guarantees:
- The address comes from the ConfigMap key `external-status-address` if it was ever set non-empty (an empty
  value falls back to the external Service; removing the key keeps the last value, as NIC does), else from
  `--external-service` (ExternalName -> spec.externalName; otherwise each status.loadBalancer.ingress ip or
  hostname, then spec.externalIPs). Each address becomes `{"ip": ...}` if it parses as an IP, else
  `{"hostname": ...}`. With no source configured nothing is ever written (NIC's statusInitialized).
  Custom resources get the same addresses as `externalEndpoints`, each with `ports` ("[80,443]": the
  `--external-service` ports whose targetPort is 80/443 or http/https) when that Service exists.
- A write reads the Ingress from the informer cache first and is skipped when the status already holds the
  desired list (absent and empty are the same): unchanged status is never rewritten. A failed write (e.g. 409
  Conflict on a stale cache) is retried exactly once after a fresh GET; a deleted Ingress is not an error.
- `report_status_enabled()` = `--report-ingress-status` and (leader election off, or this replica leads).
  Clearing the status of problem Ingresses needs only leadership (NIC's reportCustomResourceStatusEnabled).
- Thread-safe: the sync thread, the start-up flush workers and the leader callback share one StatusUpdater.
- `StartupStatusFlush` writes the deferred start-up statuses with a pool of workers (10) in the background.
  The workers take keys one at a time: the flush's memory does not grow with the number of Ingresses.
  With leader election it first polls `is_leader()` for up to `leader_wait` seconds (60): a follower exits
  without writing, and the became-leader callback later writes every status. The flush never runs twice and,
  while it is pending or running, a became-leader callback leaves the writes to it (one set of writers).
  Its keys may be given as a function, read once leadership is known, so Ingresses configured while the
  replica waited for the lease are written too. A write never modifies the cached (informer) object.
- `StatusWriters` writes resources of every kind, keyed by `ResourceKey`: each key goes to its kind's
  `KindStatusWriter` (the Ingress's is `StatusUpdater`); gating and metrics are the StatusUpdater's. The
  start-up flush and the became-leader writes go through it.
- Optional `StatusMetrics` (the Prometheus start-up collector): the flush reports its start, each item's
  outcome and its end; every other failed write counts as a status write error. A failing metrics call is
  logged and never disturbs a write.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from ingressctl.keys import ResourceKey, object_key, split_key
from ingressctl.logging import get_logger

log = get_logger(__name__)

Address = dict[str, str]
GetCached = Callable[[str], "dict[str, Any] | None"]
K = TypeVar("K")
Keys = Sequence[K] | Callable[[], Sequence[K]]


class StatusMetrics(Protocol):
    """Progress and error counters (`ingressctl.metrics.StartupMetricsCollector` implements it)."""

    def status_flush_started(self, pending: int) -> None: ...

    def status_flush_item(self, outcome: str) -> None: ...

    def status_flush_finished(self, seconds: float) -> None: ...

    def inc_status_write_errors(self, n: int = 1) -> None: ...


FLUSH_WRITTEN, FLUSH_UNCHANGED, FLUSH_FAILED = "written", "unchanged", "failed"


def _report(fn: Callable[..., None] | None, *args: Any) -> None:
    """Call a metrics hook; its failure is logged, never raised."""
    if fn is None:
        return
    try:
        fn(*args)
    except Exception as e:
        log.warning("status metrics hook failed", error=str(e))


def safe_status_write(write: Callable[[str], bool], key: str, on_item: Callable[[str], None] | None,
                      what: str) -> bool:
    """A kind's `safe_update`: `write(key)` that never raises (a failure is logged as an error updating the
    status of `what`); `on_item` gets the start-up flush's outcome (written, unchanged or failed)."""
    try:
        wrote = write(key)
    except Exception as e:
        log.warning(f"error updating {what} status", resource=key, error=str(e))
        _report(on_item, FLUSH_FAILED)
        return False
    _report(on_item, FLUSH_WRITTEN if wrote else FLUSH_UNCHANGED)
    return True


class StatusClient(Protocol):
    """The slice of KubeClient the status writer needs."""

    def get(self, rt: Any, namespace: str | None, name: str) -> dict[str, Any]: ...

    def update_status(self, rt: Any, namespace: str | None, name: str,
                      body: dict[str, Any]) -> dict[str, Any]: ...


def run_pool(keys: Sequence[K], workers: int, one: Callable[[K], bool]) -> int:
    """Call `one(key)` for every key with up to `workers` threads; returns how many returned False. An
    exception stops the pool (the remaining keys are skipped) and is re-raised."""
    if not keys:
        return 0
    if workers <= 1:
        return sum(0 if one(k) else 1 for k in keys)
    # A fixed set of threads taking keys one at a time: nothing is allocated per key up front (an
    # executor's map() makes a Future, with its lock and condition, for each of 10,000 keys at once).
    todo = iter(keys)
    lock = threading.Lock()
    failed = 0
    errors: list[BaseException] = []

    def work() -> None:
        nonlocal failed
        n = 0
        try:
            while True:
                with lock:
                    key = next(todo, None)
                    if key is None or errors:
                        break
                if not one(key):
                    n += 1
        except BaseException as e:  # re-raised by the caller, as an executor's map() would
            with lock:
                errors.append(e)
        with lock:
            failed += n

    threads = [threading.Thread(target=work, name=f"status-{i}", daemon=True)
               for i in range(min(workers, len(keys)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return failed


def to_addresses(values: Iterable[str]) -> list[Address]:
    """NIC's saveStatus: an entry that parses as an IP becomes {"ip": v}, anything else {"hostname": v}.
    Empty strings are dropped."""
    out: list[Address] = []
    for v in values:
        v = v.strip()
        if not v:
            continue
        try:
            ipaddress.ip_address(v)
        except ValueError:
            out.append({"hostname": v})
        else:
            out.append({"ip": v})
    return out


def external_service_addresses(svc: dict[str, Any]) -> list[str]:
    """NIC's getExternalServiceAddress: ExternalName -> [externalName]; else LB ingress ip/hostname, then
    spec.externalIPs."""
    spec = svc.get("spec") or {}
    if spec.get("type") == "ExternalName":
        name = spec.get("externalName")
        return [str(name)] if name else []
    out: list[str] = []
    for entry in ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []:
        value = entry.get("ip") or entry.get("hostname")
        if value:
            out.append(str(value))
    out.extend(str(ip) for ip in spec.get("externalIPs") or [] if ip)
    return out


REQUIRED_PORTS: Final = (80, 443)
REQUIRED_PORT_NAMES: Final = ("http", "https")


def external_service_ports(svc: dict[str, Any]) -> str:
    """NIC's ports of the external endpoints: the Service ports whose targetPort is 80 or 443 (or named http
    or https), as "[80,443]"; an unset targetPort is the port itself, as the API server defaults it."""
    ports: list[str] = []
    for p in (svc.get("spec") or {}).get("ports") or []:
        if not isinstance(p, dict):
            continue
        target = p.get("targetPort", p.get("port"))
        if (isinstance(target, int) and target in REQUIRED_PORTS) or (
                isinstance(target, str) and target in REQUIRED_PORT_NAMES):
            ports.append(str(p.get("port")))
    return f"[{','.join(ports)}]"


def current_addresses(ing: dict[str, Any]) -> list[Address]:
    """The Ingress's status.loadBalancer.ingress entries, reduced to ip/hostname (ports are not ours)."""
    entries = ((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    out: list[Address] = []
    for e in entries:
        a: Address = {}
        if e.get("ip"):
            a["ip"] = str(e["ip"])
        if e.get("hostname"):
            a["hostname"] = str(e["hostname"])
        out.append(a)
    return out


def _with_addresses(ing: dict[str, Any], desired: list[Address]) -> dict[str, Any]:
    """A copy of `ing` with status.loadBalancer.ingress set; shallow, but the cached object (shared with the
    informer store) is never modified."""
    status = dict(ing.get("status") or {})
    status["loadBalancer"] = {**(status.get("loadBalancer") or {}), "ingress": [dict(a) for a in desired]}
    return {**ing, "status": status}


class StatusUpdater:
    """Computes the load-balancer address and writes it to Ingress status (NIC's statusUpdater)."""

    def __init__(self, client: StatusClient, *, get_cached: GetCached, report_ingress_status: bool,
                 is_leader: Callable[[], bool] | None = None, ingress_rt: Any = None,
                 metrics: StatusMetrics | None = None) -> None:
        """`get_cached(key)` reads an Ingress from the informer cache; `is_leader` is None when leader
        election is disabled (every replica writes)."""
        self.metrics = metrics
        self._client = client
        self._get_cached = get_cached
        self._report = report_ingress_status
        self._is_leader = is_leader
        if ingress_rt is None:
            from ingressctl.k8s.resource import INGRESSES

            ingress_rt = INGRESSES
        self._rt = ingress_rt
        self._lock = threading.Lock()
        self._initialized = False
        self._external_status: str | None = None   # last value of the ConfigMap key, if ever present
        self._service_addresses: list[str] = []
        self._service_ports = ""                   # external_service_ports of the --external-service Service
        self._status: list[Address] = []
        self.writes = 0          # successful API writes (for tests and metrics)
        self.failures = 0

    # -- address sources -------------------------------------------------------------------------------------

    def save_status_from_external_status(self, value: str) -> None:
        """The ConfigMap key `external-status-address` (a single value, not comma-split)."""
        with self._lock:
            self._external_status = value.strip()
            self._recompute()

    def save_status_from_external_service(self, svc: dict[str, Any] | None) -> None:
        """The `--external-service` Service changed (None: it was deleted)."""
        with self._lock:
            self._service_addresses = external_service_addresses(svc) if svc is not None else []
            self._service_ports = external_service_ports(svc) if svc is not None else ""
            self._recompute()

    def _recompute(self) -> None:
        if self._external_status:
            self._status = to_addresses([self._external_status])
        else:
            self._status = to_addresses(self._service_addresses)
        self._initialized = True

    @property
    def status_initialized(self) -> bool:
        with self._lock:
            return self._initialized

    def addresses(self) -> list[Address]:
        with self._lock:
            return [dict(a) for a in self._status]

    def external_endpoints(self) -> list[Address]:
        """The addresses as custom resources report them (`status.externalEndpoints`): each with the
        `--external-service` Service's ports ("[80,443]") when that Service exists."""
        with self._lock:
            ports = self._service_ports
            return [{**a, "ports": ports} if ports else dict(a) for a in self._status]

    # -- gating ----------------------------------------------------------------------------------------------

    @property
    def report_ingress_status(self) -> bool:
        """The `--report-ingress-status` flag."""
        return self._report

    def is_leader(self) -> bool:
        return self._is_leader is None or self._is_leader()

    def report_status_enabled(self) -> bool:
        return self._report and self.is_leader()

    def report_problem_status_enabled(self) -> bool:
        return self.is_leader()

    # -- writes ----------------------------------------------------------------------------------------------

    def update_ingress_status(self, ing: dict[str, Any] | str) -> bool:
        """Write the current address to one Ingress (object or key) if reporting is enabled and it differs.
        Returns True if the API was written."""
        try:
            return self._update(ing)
        except Exception:
            self._count_error()
            raise

    def _count_error(self) -> None:
        _report(self.metrics.inc_status_write_errors if self.metrics is not None else None)

    def _update(self, ing: dict[str, Any] | str) -> bool:
        if not self.report_status_enabled():
            return False
        with self._lock:
            if not self._initialized:
                return False
            desired = [dict(a) for a in self._status]
        return self._write(ing if isinstance(ing, str) else object_key(ing), desired)

    def update_status(self, key: str) -> bool:
        """`KindStatusWriter.update_status`: the Ingress's load-balancer address."""
        return self.update_ingress_status(key)

    def clear_status(self, key: str) -> bool:
        """`KindStatusWriter.clear_status`."""
        return self.clear_ingress_status(key)

    def clear_ingress_status(self, ing: dict[str, Any] | str) -> bool:
        """Empty the address list of a rejected Ingress (only the leader, or everyone without election)."""
        if not self.report_problem_status_enabled():
            return False
        try:
            return self._write(ing if isinstance(ing, str) else object_key(ing), [])
        except Exception:
            self._count_error()
            raise

    def bulk_update(self, keys: Sequence[str], *, workers: int = 1,
                    on_item: Callable[[str], None] | None = None,
                    should_stop: Callable[[], bool] | None = None) -> int:
        """Update every Ingress in `keys`; returns how many writes failed. `on_item(outcome)` gets each
        key's outcome (`written`, `unchanged`, `failed`); without it a failure counts as a write error.
        Once `should_stop()` is true the remaining keys are skipped (shutdown, lost leadership)."""
        def one(key: str) -> bool:
            if should_stop is not None and should_stop():
                return True
            return self.safe_update(key, on_item)

        return run_pool(keys, workers, one)

    def safe_update(self, key: str, on_item: Callable[[str], None] | None = None) -> bool:
        try:
            wrote = self._update(key)
        except Exception as e:
            log.warning("error updating ingress status", ingress=key, error=str(e))
            if on_item is not None:
                _report(on_item, FLUSH_FAILED)
            else:
                self._count_error()
            return False
        _report(on_item, FLUSH_WRITTEN if wrote else FLUSH_UNCHANGED)
        return True

    def _write(self, key: str, desired: list[Address]) -> bool:
        cached = self._get_cached(key)
        if cached is None:
            return False
        if current_addresses(cached) == desired:
            return False
        ns, name = split_key(key)
        body = _with_addresses(cached, desired)
        try:
            self._client.update_status(self._rt, ns, name, body)
        except Exception as first:
            # One retry with a fresh read (NIC's retryStatusUpdate).
            log.debug("status update failed, retrying with a fresh read", ingress=key, error=str(first))
            try:
                fresh = self._client.get(self._rt, ns, name)
            except Exception as e:
                if getattr(e, "is_not_found", False):
                    return False
                self.failures += 1
                raise
            if current_addresses(fresh) == desired:
                return False
            try:
                self._client.update_status(self._rt, ns, name, _with_addresses(fresh, desired))
            except Exception:
                self.failures += 1
                raise
        with self._lock:
            self.writes += 1
        log.debug("ingress status updated", ingress=key, addresses=desired)
        return True


class KindStatusWriter(Protocol):
    """One kind's status writer, keyed by "namespace/name" (the Ingress's is `StatusUpdater`)."""

    @property
    def writes(self) -> int: ...

    def update_status(self, key: str) -> bool: ...

    def clear_status(self, key: str) -> bool: ...

    def safe_update(self, key: str, on_item: Callable[[str], None] | None = None) -> bool: ...


class StatusWriters:
    """Status writes for resources of every kind, keyed by `ResourceKey`: each goes to its kind's writer.
    Gating (`--report-ingress-status`, leadership) and metrics are the base updater's."""

    def __init__(self, base: StatusUpdater, writers: dict[str, KindStatusWriter]) -> None:
        self.base = base
        self._writers = writers

    @property
    def metrics(self) -> StatusMetrics | None:
        return self.base.metrics

    @property
    def report_ingress_status(self) -> bool:
        """Whether the start-up flush has statuses to write: Ingress status is reported, or another kind is
        served (custom-resource status does not depend on `--report-ingress-status`); a kind without status
        (`stateless` writer) does not count."""
        return self.base.report_ingress_status or any(
            w is not self.base and not getattr(w, "stateless", False) for w in self._writers.values())

    def is_leader(self) -> bool:
        return self.base.is_leader()

    def report_status_enabled(self) -> bool:
        return self.base.report_status_enabled()

    @property
    def writes(self) -> int:
        return sum(w.writes for w in {id(w): w for w in self._writers.values()}.values())

    def report_status_enabled_for(self, key: ResourceKey) -> bool:
        """Whether `key`'s status is reported now: the Ingress's by `report_status_enabled()`; other kinds'
        writers gate themselves (custom-resource status needs only leadership)."""
        writer = self._writers.get(key.kind)
        return self.base.report_status_enabled() if writer is None or writer is self.base else True

    def update(self, key: ResourceKey) -> bool:
        return self._writers[key.kind].update_status(key.ns_name)

    def clear(self, key: ResourceKey) -> bool:
        return self._writers[key.kind].clear_status(key.ns_name)

    def bulk_update(self, keys: Sequence[ResourceKey], *, workers: int = 1,
                    on_item: Callable[[str], None] | None = None,
                    should_stop: Callable[[], bool] | None = None) -> int:
        """`StatusUpdater.bulk_update` over resources of every kind."""
        def one(key: ResourceKey) -> bool:
            if should_stop is not None and should_stop():
                return True
            return self._writers[key.kind].safe_update(key.ns_name, on_item)

        return run_pool(keys, workers, one)


class FlushTarget(Protocol):
    """What the start-up flush writes through (`StatusWriters`, or a `StatusUpdater` for Ingresses alone)."""

    @property
    def metrics(self) -> StatusMetrics | None: ...

    @property
    def report_ingress_status(self) -> bool: ...

    def is_leader(self) -> bool: ...

    @property
    def writes(self) -> int: ...

    def bulk_update(self, keys: Any, *, workers: int = 1, on_item: Callable[[str], None] | None = None,
                    should_stop: Callable[[], bool] | None = None) -> int: ...


@dataclass
class FlushResult:
    state: str            # "written", "skipped-follower", "skipped-disabled", "stopped"
    attempted: int = 0
    failed: int = 0
    seconds: float = 0.0
    written: int = 0      # API writes made by the flush (unchanged statuses are skipped)


class StartupStatusFlush:
    """The deferred start-up status flush (NIC 5.5): after readiness, write every deferred status with a pool
    of workers, once this replica is known to lead."""

    PENDING, RUNNING, DONE, SKIPPED = "pending", "running", "done", "skipped"

    def __init__(self, updater: FlushTarget, *, leader_election: bool, workers: int = 10,
                 leader_wait: float = 60.0, poll_interval: float = 0.1,
                 clock: Callable[[], float] = time.monotonic,
                 wait: Callable[[float], bool] | None = None) -> None:
        """`wait(seconds)` sleeps and returns True when the flush should stop (shutdown)."""
        self._updater = updater
        self._leader_election = leader_election
        self._workers = workers
        self._leader_wait = leader_wait
        self._poll = poll_interval
        self._clock = clock
        self._stop = threading.Event()
        self._wait = wait if wait is not None else self._stop.wait
        self._lock = threading.Lock()
        self.state = self.PENDING
        self.result: FlushResult | None = None
        self._thread: threading.Thread | None = None

    def start(self, keys: Keys[Any]) -> None:
        """Run the flush in a background thread. `keys` may be a function: it is called again once this
        replica is known to lead, so Ingresses configured while it waited are written too."""
        self._thread = threading.Thread(target=self.run, args=(keys,), name="status-flush", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def owns_writes(self) -> bool:
        """True while the flush is pending or running: a became-leader callback leaves the writes to it."""
        with self._lock:
            return self.state in (self.PENDING, self.RUNNING)

    def run(self, keys: Keys[Any]) -> FlushResult:
        start = self._clock()
        if not self._updater.report_ingress_status:
            with self._lock:
                self.state = self.DONE
            self.result = FlushResult("skipped-disabled")
            return self.result
        metrics = self._updater.metrics
        pending = list(keys() if callable(keys) else keys)
        _report(metrics.status_flush_started if metrics is not None else None, len(pending))
        result = self._run(keys if callable(keys) else pending, start)
        _report(metrics.status_flush_finished if metrics is not None else None, max(0.0, result.seconds))
        return result

    def _run(self, keys: Keys[Any], start: float) -> FlushResult:
        metrics = self._updater.metrics
        if self._leader_election:
            deadline = start + self._leader_wait
            while True:
                with self._lock:
                    if self._updater.is_leader():
                        self.state = self.RUNNING
                        break
                    if self._clock() >= deadline:
                        self.state = self.SKIPPED
                        break
                if self._wait(self._poll):
                    with self._lock:
                        self.state = self.SKIPPED
                    self.result = FlushResult("stopped", seconds=self._clock() - start)
                    return self.result
            if self.state == self.SKIPPED:
                log.info("not the leader: start-up status flush skipped; the leader writes status",
                         waited=round(self._clock() - start, 3))
                self.result = FlushResult("skipped-follower", seconds=self._clock() - start)
                return self.result
        else:
            with self._lock:
                self.state = self.RUNNING
        todo = list(keys() if callable(keys) else keys)
        writes_before = self._updater.writes
        on_item = metrics.status_flush_item if metrics is not None else None
        try:
            failed = self._updater.bulk_update(todo, workers=self._workers, on_item=on_item,
                                               should_stop=self._stop.is_set)
        except Exception as e:  # per-key failures are counted; anything else must not leave it RUNNING
            log.exception("start-up status flush failed", error=str(e))
            failed = len(todo)
        with self._lock:
            self.state = self.DONE
        state = "stopped" if self._stop.is_set() else "written"
        self.result = FlushResult(state, attempted=len(todo), failed=failed, seconds=self._clock() - start,
                                  written=self._updater.writes - writes_before)
        log.info("start-up status flush finished", ingresses=len(todo), written=self.result.written,
                 failed=failed, seconds=round(self.result.seconds, 3))
        return self.result
