"""The LoadBalancerController: informers, the task queue, ONE sync thread, and the sync methods (NIC's
`internal/k8s/controller.go`).

Guarantees:
- Informers (Ingress, Service, EndpointSlice indexed by Service, supported Secrets, the NGINX ConfigMap, our
  IngressClass; one set per `--watch-namespace` entry, or one for all namespaces) feed handlers that only
  filter and enqueue `Task`s. ONE sync thread drains the rate-limited queue and owns the Configuration, the
  Configurator and NGINX. A sync that raises is logged and re-queued rate-limited; the thread never dies.
- Start-up (docs/architecture.md): nothing is rendered or reloaded until the informers have synced and the
  initial queue has drained; then ONE host resolution, everything rendered, ONE reload, problem
  statuses/events written synchronously, readiness turned on (also with zero Ingresses), and the deferred
  statuses flushed in the background by 10 workers gated on leader election. `legacy_startup` keeps the
  pre-5.5 path (per-item resolution and serial status writes before readiness) as a benchmark baseline.
- Steady state: each change is resolved at once; files are written only when their bytes change and NGINX
  is reloaded only when a file changed. While two or more tasks wait, reloads are held and done once when
  the queue drains (batching). A failed reload rejects only the offending Ingresses (event
  `AddedOrUpdatedWithError` with NGINX's error text); the others keep serving.
- Events follow NIC's reasons and messages; status follows NIC's status updater through
  `StatusUpdater`: written only when it changes, only with `--report-ingress-status`, only by the leader.
- Deletes are never lost: tombstones are handled, and a deleted EndpointSlice re-renders its Service.
- The special TLS Secrets (`default_server_tls_secret`, `wildcard_tls_secret`) stay in step after start-up:
  a valid change rewrites their file and reloads NGINX once (event `SecretUpdated`), an invalid one is
  rejected with a Warning event and the previous certificate keeps serving, a deleted one keeps its file.
- `stats.phases` records the start-up phases (cache sync, drain, host resolution, render and reload, the
  NGINX reload alone, the sync thread's CPU time) and the "controller ready" log line carries them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ingressctl.configs.configurator import ReloadOutcome
from ingressctl.configs.ingress_ex import IngressEx, MergeableIngresses, SecretReference, backend_key
from ingressctl.controller.configuration import (
    ConfigurationProblem,
    IngressConfiguration,
    ResourceChange,
)
from ingressctl.controller.endpoint_warnings import REASON_NO_ENDPOINTS, EndpointWarnings, no_endpoints_reason
from ingressctl.controller.endpoints import (
    BackendError,
    cluster_ip_endpoint,
    resolve_backend_endpoints,
)
from ingressctl.controller.handlers import (
    ConfigMapHandler,
    EndpointSliceHandler,
    IngressClassHandler,
    IngressHandler,
    SecretHandler,
    ServiceHandler,
    is_supported_secret,
)
from ingressctl.controller.secrets import SecretValidationError, tls_file_content, validate_tls_secret
from ingressctl.controller.status import StartupStatusFlush, StatusUpdater
from ingressctl.controller.task import RELOAD_TASK, Kind, Task
from ingressctl.controller.transforms import transform_for
from ingressctl.controller.validation import BASIC_AUTH_SECRET, backend_service, parse_go_bool
from ingressctl.k8s.informer import SharedInformer, wait_for_cache_sync
from ingressctl.k8s.resource import (
    CONFIGMAPS,
    ENDPOINTSLICES,
    INGRESSCLASSES,
    INGRESSES,
    SECRETS,
    SERVICES,
    ResourceType,
)
from ingressctl.k8s.store import BY_SERVICE_INDEX, endpoint_slices_by_service
from ingressctl.k8s.workqueue import RateLimitingQueue
from ingressctl.logging import get_logger

log = get_logger(__name__)

EVENT_NORMAL = "Normal"
EVENT_WARNING = "Warning"
REASON_ADDED_OR_UPDATED = "AddedOrUpdated"
REASON_ADDED_OR_UPDATED_WITH_WARNING = "AddedOrUpdatedWithWarning"
REASON_ADDED_OR_UPDATED_WITH_ERROR = "AddedOrUpdatedWithError"
REASON_REJECTED = "Rejected"
REASON_REJECTED_WITH_ERROR = "RejectedWithError"
REASON_UPDATED = "Updated"
REASON_UPDATED_WITH_ERROR = "UpdatedWithError"
REASON_INVALID_VALUE = "InvalidValue"
REASON_SECRET_UPDATED = "SecretUpdated"
SPECIAL_DEFAULT, SPECIAL_WILDCARD = "default", "wildcard"    # file names under the secrets dir (NIC's)
USE_CLUSTER_IP_ANNOTATION = "nginx.org/use-cluster-ip"
EXTERNAL_STATUS_ADDRESS_KEY = "external-status-address"
INGRESS_API_VERSION = "networking.k8s.io/v1"

_REF_KINDS = {INGRESSES: ("Ingress", INGRESS_API_VERSION), CONFIGMAPS: ("ConfigMap", "v1")}


class EventSink(Protocol):
    def event(self, obj: dict[str, Any], event_type: str, reason: str, message: str, *,
              kind: str | None = None, api_version: str | None = None) -> None: ...


@dataclass(frozen=True)
class ControllerOptions:
    """What the controller needs from the settings."""

    ingress_class: str = "nginx"
    watch_namespaces: tuple[str, ...] = ()          # empty: all namespaces
    watch_secret_namespaces: tuple[str, ...] | None = None  # None: watch_namespaces; empty: all
    nginx_configmaps: str | None = None             # "namespace/name"
    pod_namespace: str = "default"
    external_service: str | None = None             # a Service name in pod_namespace
    report_ingress_status: bool = False
    leader_election: bool = False
    legacy_startup: bool = False
    resync_period: float = 0.0
    status_workers: int = 10
    leader_wait: float = 60.0
    cache_sync_log_interval: float = 10.0
    default_server_tls_secret: str | None = None    # "namespace/name": kept in step with the Secret
    wildcard_tls_secret: str | None = None          # "namespace/name": kept in step with the Secret


@dataclass
class SyncStats:
    """Counters for tests, metrics and benchmarks."""

    syncs: int = 0
    sync_errors: int = 0
    batches: int = 0
    startup_seconds: float = 0.0        # informers started -> ready
    ready_at: float = 0.0               # monotonic time readiness turned on
    phases: dict[str, float] = field(default_factory=dict)


class _ConfiguratorLike(Protocol):
    def add_or_update_ingress(self, ing_ex: IngressEx) -> list[str]: ...
    def delete_ingress(self, key: str) -> Any: ...
    def update_config(self, config: Any, ing_exes: list[IngressEx]) -> list[str]: ...
    def update_endpoints(self, ing_exes: list[IngressEx]) -> Any: ...
    def disable_reloads(self) -> None: ...
    def enable_reloads(self) -> None: ...
    def reload_if_needed(self, reason: str = "other") -> ReloadOutcome: ...


class _SecretStoreLike(Protocol):
    def add_or_update_secret(self, secret: dict[str, Any]) -> Any: ...
    def delete_secret(self, key: str) -> Any: ...
    def get_secret_reference(self, key: str) -> SecretReference: ...


@dataclass
class _Applied:
    """The outcome of rendering one resource, for events and status."""

    cfg: IngressConfiguration
    warnings: list[str]
    error: str = ""
    child_warnings: dict[str, list[str]] = field(default_factory=dict)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _split(key: str) -> tuple[str, str]:
    ns, _, name = key.partition("/")
    return ns, name


class LoadBalancerController:
    """See the module docstring."""

    def __init__(self, client: Any, *, configuration: Any, configurator: _ConfiguratorLike,
                 secret_store: _SecretStoreLike, status_updater: StatusUpdater,
                 recorder: EventSink | None = None, options: ControllerOptions | None = None,
                 parse_config_map: Callable[[Any], tuple[Any, list[tuple[str, str]]]] | None = None,
                 is_leader: Callable[[], bool] | None = None,
                 queue: RateLimitingQueue[Task] | None = None, manager: Any = None) -> None:
        """`manager` (the NGINX Manager) is used only to reload when a referenced Secret's file changed
        while every rendered config stayed byte-identical (certificates are read at reload)."""
        self.options = options or ControllerOptions()
        self._client = client
        self.configuration = configuration
        self.configurator = configurator
        self.secret_store = secret_store
        self.status = status_updater
        self._recorder = recorder
        if parse_config_map is None:
            from ingressctl.configs.configmaps import parse_config_map as _parse

            parse_config_map = _parse
        self._parse_config_map = parse_config_map
        self._is_leader = is_leader
        self._manager = manager
        # Called on the sync thread after every task and after start-up completes (metrics wiring).
        self.on_synced: Callable[[], None] | None = None
        self._force_reload = False      # a referenced Secret file changed: reload even if no config did
        self._in_reload_retry = False
        self._busy = False              # the sync thread is between get() and the end of _after_task()
        self.queue: RateLimitingQueue[Task] = (
            queue if queue is not None else RateLimitingQueue(name="taskQueue"))
        self.stats = SyncStats()

        self._ready = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._batch = False
        self._batch_update_all = False
        self._config_map: dict[str, Any] | None = None
        self._startup_problems: dict[str, ConfigurationProblem] = {}
        self._endpoint_warnings = EndpointWarnings()
        self._startup_status_keys: list[str] = []
        self._status_lock = threading.Lock()
        self._status_keys: set[str] = set()     # Ingress keys with a configured resource (masters + minions)
        self._flush: StartupStatusFlush | None = None
        self._leader_writer: threading.Thread | None = None
        self._started_at = 0.0
        self._sync_started_at = 0.0
        self._sync_cpu_start = 0.0

        o = self.options
        self._configmap_key = o.nginx_configmaps
        self._external_service_key = f"{o.pod_namespace}/{o.external_service}" if o.external_service else None
        self._informers: dict[tuple[str, str], SharedInformer] = {}   # (plural, namespace or "") -> informer
        self._all_informers: list[SharedInformer] = []
        self._build_informers()
        # Until the first drain nothing reloads (NIC builds the Configurator with reloads disabled).
        self.configurator.disable_reloads()
        # `nginx.org/limit-req-scale` divides rates by the number of replicas. The controller does not watch
        # its own Deployment yet, so it counts itself only.
        set_replicas = getattr(self.configurator, "set_controller_replicas", None)
        if set_replicas is not None:
            set_replicas(1)

    # ------------------------------------------------------------------------------------------ informers

    def _namespaces(self) -> list[str]:
        return list(self.options.watch_namespaces) or [""]

    def _new_informer(self, rt: ResourceType, namespace: str, **kw: Any) -> SharedInformer:
        inf = SharedInformer(self._client, rt, namespace or None, resync_period=self.options.resync_period,
                             transform=transform_for(rt), **kw)
        self._all_informers.append(inf)
        return inf

    def _build_informers(self) -> None:
        enqueue = self.enqueue
        o = self.options
        ingress_h = IngressHandler(enqueue, o.ingress_class)
        service_h = ServiceHandler(enqueue, self._external_service_key)
        slice_h = EndpointSliceHandler(enqueue)
        secret_h = SecretHandler(enqueue)
        secret_namespaces = (self._namespaces() if o.watch_secret_namespaces is None
                             else list(o.watch_secret_namespaces) or [""])
        for rt, handler, kw, namespaces in (
            (INGRESSES, ingress_h, {}, self._namespaces()),
            (SERVICES, service_h, {}, self._namespaces()),
            (ENDPOINTSLICES, slice_h, {"indexers": {BY_SERVICE_INDEX: endpoint_slices_by_service}},
             self._namespaces()),
            (SECRETS, secret_h, {}, secret_namespaces),   # --watch-secret-namespace
        ):
            for ns in namespaces:
                inf = self._new_informer(rt, ns, **kw)
                inf.add_event_handler(handler)
                self._informers[(rt.plural, ns)] = inf
        if self._external_service_key and o.watch_namespaces and o.pod_namespace not in o.watch_namespaces:
            # The external Service lives in the controller's namespace; watch just it (NIC would not see it).
            ns, name = _split(self._external_service_key)
            inf = self._new_informer(SERVICES, ns, field_selector=f"metadata.name={name}")
            inf.add_event_handler(service_h)
            self._informers[("services", ns)] = inf
        if self._configmap_key:
            ns, name = _split(self._configmap_key)
            inf = self._new_informer(CONFIGMAPS, ns, field_selector=f"metadata.name={name}")
            inf.add_event_handler(ConfigMapHandler(enqueue, self._configmap_key))
            self._informers[("configmaps", ns)] = inf
        inf = self._new_informer(INGRESSCLASSES, "", field_selector=f"metadata.name={o.ingress_class}")
        inf.add_event_handler(IngressClassHandler(o.ingress_class))
        self._informers[("ingressclasses", "")] = inf

    def _informer(self, plural: str, namespace: str) -> SharedInformer | None:
        return self._informers.get((plural, "")) or self._informers.get((plural, namespace))

    def get_object(self, plural: str, key: str) -> dict[str, Any] | None:
        """Read an object from the informer caches ("namespace/name")."""
        ns, _ = _split(key)
        inf = self._informer(plural, ns)
        return inf.store.get_by_key(key) if inf is not None else None

    def endpoint_slices(self, namespace: str, service: str) -> list[dict[str, Any]]:
        """The cached EndpointSlices of a Service (thread-safe read of the informer store)."""
        return self._slices_for(namespace, service)

    def _slices_for(self, namespace: str, service: str) -> list[dict[str, Any]]:
        inf = self._informer("endpointslices", namespace)
        if inf is None:
            return []
        return inf.store.by_index(BY_SERVICE_INDEX, f"{namespace}/{service}")

    # ------------------------------------------------------------------------------------------ lifecycle

    def enqueue(self, task: Task) -> None:
        self.queue.add(task)

    def start(self, *, sync_timeout: float | None = None) -> bool:
        """Start the informers, wait for their caches, pre-sync Secrets and start the sync thread.
        Returns False if stopped (or timed out) before the caches synced."""
        self._started_at = time.monotonic()
        for inf in self._all_informers:
            inf.start()
        deadline = None if sync_timeout is None else time.monotonic() + sync_timeout
        while not self._stopping.is_set():
            step = self.options.cache_sync_log_interval
            if deadline is not None:
                step = max(0.0, min(step, deadline - time.monotonic()))
            if wait_for_cache_sync(self._all_informers, timeout=step):
                break
            if deadline is not None and time.monotonic() >= deadline:
                log.error("informer caches did not sync in time", timeout=sync_timeout)
                return False
            log.info("waiting for informer caches to sync")
        else:
            return False
        self.stats.phases["cache_sync"] = time.monotonic() - self._started_at
        log.info("informer caches synced", seconds=round(self.stats.phases["cache_sync"], 3),
                 queued=len(self.queue))
        self._pre_sync_secrets()
        self._sync_started_at = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="sync", daemon=True)
        self._thread.start()
        return True

    def stop(self, timeout: float = 30.0) -> None:
        """Stop taking work (the current task finishes), then stop the informers and background writers."""
        self._stopping.set()
        self.queue.shut_down()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        for inf in self._all_informers:
            inf.stop()
        if self._flush is not None:
            self._flush.stop()
            self._flush.join(timeout)
        if self._leader_writer is not None:
            self._leader_writer.join(timeout)

    def request_stop(self) -> None:
        """Make a `start()` that is still waiting for the caches return (signal-safe)."""
        self._stopping.set()

    def is_ready(self) -> bool:
        return self._ready.is_set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def is_idle(self) -> bool:
        """Nothing queued, nothing being processed, no batch open (for tests and benchmarks)."""
        return not self._busy and len(self.queue) == 0 and not self._batch and self._ready.is_set()

    def informers_synced(self) -> bool:
        return all(inf.has_synced() for inf in self._all_informers)

    def is_alive(self) -> bool:
        """The sync thread runs (or has not been started yet)."""
        return self._thread is None or self._thread.is_alive() or self._stopping.is_set()

    @property
    def startup_flush(self) -> StartupStatusFlush | None:
        return self._flush

    def _pre_sync_secrets(self) -> None:
        """NIC's preSyncSecrets (without its `break` bug): know every supported Secret before any Ingress
        syncs, so no Ingress sees a spurious "missing secret"."""
        for (plural, _ns), inf in list(self._informers.items()):
            if plural != "secrets":
                continue
            for secret in inf.store.list():
                if is_supported_secret(secret):
                    try:
                        self.secret_store.add_or_update_secret(secret)
                    except Exception as e:
                        log.warning("error pre-syncing secret", secret=_key(secret), error=str(e))

    # ------------------------------------------------------------------------------------------ sync loop

    def _run(self) -> None:
        self._sync_cpu_start = time.thread_time()
        self._guarded(self._after_task)   # an empty initial queue still completes start-up
        self._notify_synced()
        while True:
            task, shutdown = self.queue.get()
            if shutdown or task is None:
                return
            self._busy = True
            try:
                self._sync(task)
            except _RetryLater as e:
                log.warning("will retry", task=str(task), error=str(e),
                            requeues=self.queue.num_requeues(task))
                self.queue.add_rate_limited(task)
            except Exception as e:
                self.stats.sync_errors += 1
                log.exception("sync failed; requeued", task=str(task), error=str(e),
                              requeues=self.queue.num_requeues(task))
                self.queue.add_rate_limited(task)
            else:
                self.queue.forget(task)
            finally:
                self.queue.done(task)
            self._guarded(self._after_task)
            self._notify_synced()
            self._busy = False

    def _notify_synced(self) -> None:
        hook = self.on_synced
        if hook is not None:
            self._guarded(hook)

    def _guarded(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as e:
            log.exception("controller step failed", step=fn.__name__, error=str(e))

    def _sync(self, task: Task) -> None:
        """NIC's sync(task): batching decisions, then dispatch by kind."""
        self.stats.syncs += 1
        if self._ready.is_set() and len(self.queue) > 1 and not self._batch:
            self.configurator.disable_reloads()
            self._batch = True
            self.stats.batches += 1
        kind = task.kind
        if kind is Kind.INGRESS:
            self.sync_ingress(task.key)
        elif kind is Kind.ENDPOINT_SLICE:
            self.sync_endpoint_slice(task.key)
        elif kind is Kind.SERVICE:
            self.sync_service(task.key)
        elif kind is Kind.SECRET:
            self.sync_secret(task.key)
        elif kind is Kind.CONFIG_MAP:
            self.sync_config_map(task.key)
        elif kind is Kind.RELOAD:
            self.sync_reload()
        else:  # pragma: no cover - Kind is closed
            log.warning("unknown task kind", task=str(task))

    def _after_task(self) -> None:
        if len(self.queue) != 0 or self._stopping.is_set():
            return
        if not self._ready.is_set():
            self._complete_startup()
        elif self._batch:
            self._batch = False
            self.configurator.enable_reloads()
            if self._batch_update_all:
                self._batch_update_all = False
                self.update_all_configs()
            else:
                self._reload("batch")

    # ------------------------------------------------------------------------------------------ start-up

    def _complete_startup(self) -> None:
        """The first drain: ONE host resolution, render everything, ONE reload, problems, readiness, flush.
        A failure in one step is logged and does not keep the controller from becoming ready (as NIC)."""
        t0 = time.monotonic()
        if self._sync_started_at:
            self.stats.phases["drain"] = t0 - self._sync_started_at
        self.configuration.set_startup_complete()
        self.stats.phases["resolve_hosts"] = time.monotonic() - t0
        self.configurator.enable_reloads()
        t1 = time.monotonic()
        self._guarded(lambda: self.update_all_configs(startup=True))
        self.stats.phases["render_and_reload"] = time.monotonic() - t1
        # Problems (host conflicts, orphaned minions, invalid Ingresses) are written synchronously.
        t2 = time.monotonic()
        self._guarded(lambda: self._process_problems(self._current_startup_problems()))
        self._startup_problems.clear()
        self.stats.phases["problems"] = time.monotonic() - t2
        keys = list(self._startup_status_keys)
        self._startup_status_keys = []
        if self.options.legacy_startup:
            # Pre-5.5: every status written serially before readiness.
            t3 = time.monotonic()
            self.status.bulk_update(keys, workers=1)
            self.stats.phases["status"] = time.monotonic() - t3
        flush = None
        if not self.options.legacy_startup:
            o = self.options
            flush = StartupStatusFlush(self.status, leader_election=o.leader_election,
                                       workers=o.status_workers, leader_wait=o.leader_wait)
            self._flush = flush
        # CPU time of the sync thread from its start to readiness: drain, resolution, render (not NGINX).
        self.stats.phases["sync_thread_cpu"] = time.thread_time() - self._sync_cpu_start
        self._ready.set()
        self.stats.ready_at = time.monotonic()
        self.stats.startup_seconds = self.stats.ready_at - self._started_at
        log.info("controller ready", ingresses=len(self.configuration.get_resources()),
                 seconds=round(self.stats.startup_seconds, 3),
                 phases={k: round(v, 3) for k, v in self.stats.phases.items()})
        if flush is not None:
            # The deferred statuses, plus Ingresses configured after readiness while this replica waited for
            # the lease (steady-state writes are skipped by a follower, and the flush owns the writes then).
            at_ready = set(self.status_keys())

            def flush_keys() -> list[str]:
                return keys + [k for k in self.status_keys() if k not in at_ready]

            flush.start(flush_keys)

    def _current_startup_problems(self) -> list[ConfigurationProblem]:
        """Problems as they stand at the end of the drain: every host problem now, plus validation errors of
        Ingresses that are still invalid (a later update during the drain may have fixed one)."""
        out = list(self.configuration.host_problems().values())
        seen = {_key(p.obj) for p in out}
        for p in self._startup_problems.values():
            key = _key(p.obj)
            if key in seen or not p.is_error:
                continue
            if self.configuration.get_ingress(key) is None and self.get_object("ingresses", key) is not None:
                out.append(p)
        return out

    def on_started_leading(self, stop: threading.Event | None = None) -> None:
        """Leader-election callback: write every status, unless the start-up flush still owns that job."""
        if not self.options.report_ingress_status:
            return
        flush = self._flush
        if not self._ready.is_set() or (flush is not None and flush.owns_writes()):
            log.info("became leader; the start-up status flush writes the statuses")
            return
        keys = self.status_keys()
        log.info("became leader; writing ingress statuses", ingresses=len(keys))

        def stopped() -> bool:
            return self._stopping.is_set() or (stop is not None and stop.is_set())

        def write() -> None:
            failed = self.status.bulk_update(keys, workers=self.options.status_workers, should_stop=stopped)
            if failed:
                log.warning("some ingress statuses were not written", failed=failed)

        self._leader_writer = threading.Thread(target=write, name="leader-status", daemon=True)
        self._leader_writer.start()

    def status_keys(self) -> list[str]:
        with self._status_lock:
            return sorted(self._status_keys)

    # ------------------------------------------------------------------------------------------ syncs

    def sync_ingress(self, key: str) -> None:
        ing = self.get_object("ingresses", key)
        if ing is None:
            changes, problems = self.configuration.delete_ingress(key)
        else:
            changes, problems = self.configuration.add_or_update_ingress(ing)
        self._process_changes(changes)
        self._process_problems(problems)

    def sync_endpoint_slice(self, service_key: str) -> None:
        """Re-render the Ingresses using the Service; reload only if the rendered bytes changed."""
        if not self._rendering():
            return
        ns, name = _split(service_key)
        resources = self.configuration.find_resources_for_service(ns, name)
        if not resources:
            return
        exes = [self._create_ingress_ex(r)[0] for r in resources if not r.is_master]
        if exes:
            self.configurator.update_endpoints(exes)
        masters = [r for r in resources if r.is_master]
        applied = self._apply(masters) if masters else []
        # No events for endpoint changes (NIC), except an error for a resource NGINX refused.
        self._mark_failed([], self._reload("endpoints"))
        for a in applied:
            if a.error:
                self._event(a.cfg.ingress, *self._added_event(a.cfg.key, a.warnings, a.error))

    def sync_service(self, key: str) -> None:
        ns, name = _split(key)
        svc = self.get_object("services", key)
        if key == self._external_service_key:
            self.status.save_status_from_external_service(svc)
            if self._ready.is_set() and self.status.report_status_enabled():
                self.status.bulk_update(self.status_keys())
        if not self._rendering():
            return
        resources = self.configuration.find_resources_for_service(ns, name)
        if resources:
            self._apply_with_events(resources, "service")

    def sync_secret(self, key: str) -> None:
        ns, name = _split(key)
        secret = self.get_object("secrets", key)
        special = self._special_secret_files(key)
        if special:
            self._sync_special_secret(key, secret, special)
        if secret is None or not is_supported_secret(secret):
            changed = self.secret_store.delete_secret(key)
        else:
            changed = self.secret_store.add_or_update_secret(secret)
        if changed is False or not self._rendering():
            return
        resources = self.configuration.find_resources_for_secret(ns, name)
        if resources:
            # NGINX reads certificates at reload: a changed file needs one even if no config text changed.
            self._force_reload = True
            self._apply_with_events(resources, "secret")

    def _special_secret_files(self, key: str) -> list[str]:
        """The files (`default`, `wildcard`) written from the Secret `key`, if it is a special one."""
        o = self.options
        return [f for f, ref in ((SPECIAL_DEFAULT, o.default_server_tls_secret),
                                 (SPECIAL_WILDCARD, o.wildcard_tls_secret)) if ref == key]

    def _sync_special_secret(self, key: str, secret: dict[str, Any] | None, files: list[str]) -> None:
        """NIC's handleSpecialSecretUpdate for --default-server-tls-secret / --wildcard-tls-secret: a valid
        change rewrites the file and reloads NGINX (now, at the end of a batch, or with the start-up reload);
        an invalid one is rejected and the previous version keeps serving; a deleted one keeps its file."""
        if secret is None:
            log.warning("a special TLS Secret was deleted: this pod keeps the previous version; new pods "
                        "will not start until it exists again", secret=key)
            return
        try:
            validate_tls_secret(secret)
            content = tls_file_content(secret)
        except SecretValidationError as e:
            self._event(secret, EVENT_WARNING, REASON_REJECTED,
                        f"the special Secret {key} was rejected, using the previous version: {e}", SECRETS)
            return
        if self._manager is None:
            return
        changed = False
        for f in files:
            try:
                with open(self._manager.secret_path(f), "rb") as fh:
                    current: bytes | None = fh.read()
            except OSError:
                current = None
            if current == content:
                continue
            try:
                self._manager.create_secret(f, content, 0o600)
            except OSError as e:
                log.error("writing a special TLS Secret failed", secret=key, error=str(e))
                self._event(secret, EVENT_WARNING, REASON_UPDATED_WITH_ERROR,
                            f"the special Secret {key} was updated, but not applied: {e}", SECRETS)
                return
            changed = True
        if not changed:
            return
        self._force_reload = True       # NGINX reads certificates at reload
        self._event(secret, EVENT_NORMAL, REASON_SECRET_UPDATED, f"the special Secret {key} was updated",
                    SECRETS)
        if self._ready.is_set():
            self._mark_failed([], self._reload("secret"))

    def sync_reload(self) -> None:
        """Retry a reload that failed without blaming a resource; raises _RetryLater to back off."""
        self._in_reload_retry = True
        try:
            outcome = self._reload("retry")
        finally:
            self._in_reload_retry = False
        self._mark_failed([], outcome)
        if isinstance(outcome, _FailedReload):
            raise _RetryLater(f"nginx reload failed: {outcome.error}")

    def sync_config_map(self, key: str) -> None:
        cm = self.get_object("configmaps", key)
        self._config_map = cm
        if cm is not None:
            data = cm.get("data") or {}
            if EXTERNAL_STATUS_ADDRESS_KEY in data:
                self.status.save_status_from_external_status(str(data[EXTERNAL_STATUS_ADDRESS_KEY] or ""))
        if not self._ready.is_set():
            return
        if self._batch:
            self._batch_update_all = True
            return
        self.update_all_configs()

    def _rendering(self) -> bool:
        """Whether changes are rendered now: after start-up, or during a legacy start-up."""
        return self._ready.is_set() or self.options.legacy_startup

    # ------------------------------------------------------------------------------------------ processing

    def update_all_configs(self, *, startup: bool = False) -> None:
        """NIC's updateAllConfigs: main config + every resource, ONE reload, events (and status) for all."""
        cm = self._config_map
        if cm is None and self._configmap_key:
            cm = self.get_object("configmaps", self._configmap_key)
            self._config_map = cm
        params, errors = self._parse_config_map((cm or {}).get("data") if cm else None)
        if cm is not None:
            for k, err in errors:
                self._event(cm, EVENT_WARNING, REASON_INVALID_VALUE, f"Invalid value for {k}: {err}",
                            CONFIGMAPS)
        # The main config first, then every resource on its own so that warnings stay per resource.
        for w in self.configurator.update_config(params, []):
            log.warning("configuration warning", warning=w)
        applied = self._apply(self.configuration.get_resources())
        outcome = self._reload("startup" if startup else "configmap")
        self._mark_failed(applied, outcome)
        if cm is not None:
            ns_name = f"{_meta(cm).get('namespace')}/{_meta(cm).get('name')}"
            if errors:
                self._event(cm, EVENT_WARNING, REASON_UPDATED_WITH_ERROR,
                            f"ConfigMap {ns_name} updated with errors. Ignoring invalid values", CONFIGMAPS)
            elif not startup:
                self._event(cm, EVENT_NORMAL, REASON_UPDATED, f"ConfigMap {ns_name} updated without error",
                            CONFIGMAPS)
        self._report(applied, defer_status=startup)

    def _process_changes(self, changes: Sequence[ResourceChange]) -> None:
        """NIC's processChanges: deletes (all first), then add/updates; one reload; then events and status."""
        if not changes:
            return
        if not self._rendering():
            return
        deleted: list[ResourceChange] = []
        updates: list[IngressConfiguration] = []
        for ch in changes:
            if ch.op == "Delete":
                self.configurator.delete_ingress(ch.resource.key)
                self._forget_status_keys(ch.resource)
                self._endpoint_warnings.forget(ch.resource.key)
                deleted.append(ch)
            else:
                updates.append(ch.resource)
        applied = self._apply(updates)
        outcome = self._reload("ingress")
        self._mark_failed(applied, outcome)
        for ch in deleted:
            self._report_delete(ch)
        self._report(applied, defer_status=not self._ready.is_set() and not self.options.legacy_startup)
        if not self._ready.is_set() and self.options.legacy_startup:
            keys = [k for a in applied for k in self._keys_of(a.cfg)]
            self.status.bulk_update(keys, workers=1)

    def _apply_with_events(self, resources: list[IngressConfiguration], reason: str) -> None:
        applied = self._apply(resources)
        outcome = self._reload(reason)
        self._mark_failed(applied, outcome)
        self._report(applied, defer_status=False)

    def _apply(self, resources: Iterable[IngressConfiguration]) -> list[_Applied]:
        """Render each resource (regular or mergeable); collect warnings."""
        out: list[_Applied] = []
        for cfg in resources:
            try:
                if cfg.is_master:
                    out.append(self._apply_mergeable(cfg))
                    continue
                ex, ex_warnings = self._create_ingress_ex(cfg)
                warnings = self.configurator.add_or_update_ingress(ex)
                out.append(_Applied(cfg, list(cfg.warnings) + ex_warnings + list(warnings or [])))
            except Exception as e:
                log.exception("error rendering ingress", ingress=cfg.key, error=str(e))
                out.append(_Applied(cfg, list(cfg.warnings), error=str(e)))
        return out

    def _apply_mergeable(self, cfg: IngressConfiguration) -> _Applied:
        add = getattr(self.configurator, "add_or_update_mergeable_ingress", None)
        master_ex, warnings = self._create_ingress_ex(cfg)
        minion_exes: list[IngressEx] = []
        child: dict[str, list[str]] = {k: list(v) for k, v in cfg.child_warnings.items()}
        for m in cfg.minions:
            mcfg = IngressConfiguration(ingress=m.ingress, key=m.key, valid_hosts=cfg.valid_hosts,
                                        is_minion=True, valid_minion_paths=m.valid_paths)
            mex, mw = self._create_ingress_ex(mcfg, valid_minion_paths=m.valid_paths)
            minion_exes.append(mex)
            child.setdefault(m.key, []).extend(mw)
        if add is None:
            raise RuntimeError("mergeable Ingresses are not supported by this configurator")
        result = list(add(MergeableIngresses(master=master_ex, minions=minion_exes)) or [])
        # Each minion's warnings go to its own events (NIC's ChildWarnings), not to the master's.
        per_minion = getattr(self.configurator, "minion_warnings", None)
        if per_minion is not None:
            prefixed: set[str] = set()
            for minion_key, ws in per_minion(cfg.key).items():
                child.setdefault(minion_key, []).extend(ws)
                prefixed.update(f"minion {minion_key}: {w}" for w in ws)
            result = [w for w in result if w not in prefixed]
        return _Applied(cfg, list(cfg.warnings) + warnings + result, child_warnings=child)

    def _reload(self, reason: str) -> ReloadOutcome | _FailedReload | None:
        """Reload if any file changed (no-op while reloads are held). Returns the ReloadOutcome or None.
        A failure not tied to a resource (timeout, NGINX down) schedules a rate-limited RELOAD retry."""
        if self._batch or (not self._ready.is_set() and reason != "startup"):
            return None
        t0, c0 = time.monotonic(), time.thread_time()
        try:
            outcome = self.configurator.reload_if_needed(reason)
        except Exception as e:
            log.error("nginx reload failed", reason=reason, error=str(e))
            self._schedule_reload_retry()
            return _FailedReload(str(e))
        if reason == "startup":
            self.stats.phases["startup_reload"] = time.monotonic() - t0
            self.stats.phases["startup_reload_cpu"] = time.thread_time() - c0
        error = str(getattr(outcome, "error", "") or "")
        if error and not getattr(outcome, "reloaded", False):
            log.error("nginx reload failed; the changes stay pending", reason=reason, error=error)
            self._schedule_reload_retry()
            return _FailedReload(error, failed=dict(getattr(outcome, "failed", {}) or {}))
        if error:
            log.error("nginx reloaded, but the main configuration was rejected", error=error)
        if self._force_reload and not getattr(outcome, "reloaded", False) and self._manager is not None:
            try:
                self._manager.reload()
            except Exception as e:
                log.error("nginx reload for a changed secret failed", error=str(e))
                self._schedule_reload_retry()
                return _FailedReload(str(e))
            outcome.reloaded = True
        self._force_reload = False
        return outcome

    def _schedule_reload_retry(self) -> None:
        if not self._in_reload_retry:
            self.queue.add_rate_limited(RELOAD_TASK)

    def _mark_failed(self, applied: list[_Applied], outcome: Any) -> None:
        if outcome is None:
            return
        failed: dict[str, str] = dict(getattr(outcome, "failed", {}) or {})
        if isinstance(outcome, _FailedReload) and not failed:
            for a in applied:
                a.error = outcome.error
            return
        for a in applied:
            for k in self._keys_of(a.cfg):
                if k in failed:
                    a.error = failed[k]
                    break
        known = {k for a in applied for k in self._keys_of(a.cfg)}
        for k, err in failed.items():
            if k in known:
                continue
            # An Ingress rendered earlier in a batch: report it now.
            ing = self.get_object("ingresses", k)
            if ing is not None:
                self._event(ing, EVENT_WARNING, REASON_ADDED_OR_UPDATED_WITH_ERROR,
                            f"Configuration for {k} was added or updated; but was not applied: {err}")

    # ------------------------------------------------------------------------------------------ IngressEx

    def _create_ingress_ex(self, cfg: IngressConfiguration, *,
                           valid_minion_paths: dict[str, bool] | None = None) -> tuple[IngressEx, list[str]]:
        """NIC's createIngressEx: Services and endpoints of every backend, secret references. Returns the
        IngressEx and warnings about backends (missing Service or port, ExternalName)."""
        ing = cfg.ingress
        ns = str(_meta(ing).get("namespace") or "")
        spec = ing.get("spec") or {}
        annotations = _meta(ing).get("annotations") or {}
        # Go's strconv.ParseBool, as validation checks it (an invalid value never gets this far).
        use_cluster_ip = parse_go_bool(str(annotations.get(USE_CLUSTER_IP_ANNOTATION, ""))) is True
        warnings: list[str] = []
        endpoints: dict[str, list[str]] = {}
        external: set[str] = set()

        backends: list[Any] = []
        if spec.get("defaultBackend"):
            backends.append(spec["defaultBackend"])
        for rule in spec.get("rules") or []:
            rule = rule or {}
            host = str(rule.get("host") or "")
            if cfg.valid_hosts and not cfg.valid_hosts.get(host, False) and not cfg.is_minion:
                continue
            for p in ((rule.get("http") or {}).get("paths") or []):
                p = p or {}
                path = str(p.get("path", ""))
                if valid_minion_paths is not None and not valid_minion_paths.get(path, False):
                    continue
                backends.append(p.get("backend"))
        seen: set[str] = set()
        no_endpoints: dict[str, str] = {}   # Service -> why it has no endpoints
        for backend in backends:
            b = backend_service(backend)
            if b is None:
                continue
            svc_name, port = b
            bkey = backend_key(svc_name, port)
            if bkey in seen:
                continue
            seen.add(bkey)
            svc = self.get_object("services", f"{ns}/{svc_name}")
            try:
                if use_cluster_ip and svc is not None:
                    eps = cluster_ip_endpoint(svc, port)
                else:
                    slices = self._slices_for(ns, svc_name)
                    eps = resolve_backend_endpoints(ns, svc_name, port, svc, slices)
                    if not eps:
                        no_endpoints.setdefault(svc_name, no_endpoints_reason(ns, svc_name, port, slices))
            except BackendError as e:
                warnings.append(str(e))
                eps = []
            endpoints[bkey] = eps
        for message in self._endpoint_warnings.observe(cfg.key, no_endpoints):
            self._event(ing, EVENT_WARNING, REASON_NO_ENDPOINTS, message)

        secret_refs: dict[str, SecretReference] = {}
        for tls in spec.get("tls") or []:
            name = str((tls or {}).get("secretName") or "")
            if name and name not in secret_refs:
                secret_refs[name] = self.secret_store.get_secret_reference(f"{ns}/{name}")
        auth = annotations.get(BASIC_AUTH_SECRET)
        if auth and auth not in secret_refs:
            secret_refs[str(auth)] = self.secret_store.get_secret_reference(f"{ns}/{auth}")

        ex = IngressEx(ingress=ing, valid_hosts=dict(cfg.valid_hosts), endpoints=endpoints,
                       external_name_svcs=external, secret_refs=secret_refs,
                       valid_minion_paths=dict(valid_minion_paths or {}))
        return ex, warnings

    # -------------------------------------------------------------------------------------- events, status

    def _keys_of(self, cfg: IngressConfiguration) -> list[str]:
        return [cfg.key, *(m.key for m in cfg.minions)]

    def _forget_status_keys(self, cfg: IngressConfiguration) -> None:
        with self._status_lock:
            for k in self._keys_of(cfg):
                self._status_keys.discard(k)

    def _report(self, applied: list[_Applied], *, defer_status: bool) -> None:
        """Events for each applied resource (NIC 2.5), then status (now, or deferred to the start-up
        flush)."""
        for a in applied:
            with self._status_lock:
                self._status_keys.update(self._keys_of(a.cfg))
            self._event(a.cfg.ingress, *self._added_event(a.cfg.key, a.warnings, a.error))
            for m in a.cfg.minions:
                self._event(m.ingress, *self._added_event(m.key, a.child_warnings.get(m.key, []), a.error))
            if a.error:
                continue
            if defer_status:
                self._startup_status_keys.extend(self._keys_of(a.cfg))
            elif self._ready.is_set():
                for k in self._keys_of(a.cfg):
                    self._safe_status(self.status.update_ingress_status, k)

    @staticmethod
    def _added_event(key: str, warnings: list[str], error: str) -> tuple[str, str, str]:
        msg = f"Configuration for {key} was added or updated"
        if warnings:
            msg += " with warning(s): " + "; ".join(warnings)
        if error:
            return EVENT_WARNING, REASON_ADDED_OR_UPDATED_WITH_ERROR, f"{msg}; but was not applied: {error}"
        if warnings:
            return EVENT_WARNING, REASON_ADDED_OR_UPDATED_WITH_WARNING, msg
        return EVENT_NORMAL, REASON_ADDED_OR_UPDATED, msg

    def _report_delete(self, ch: ResourceChange) -> None:
        """NIC's UpdateIngressStatusAndEventsOnDelete: only for an Ingress that still exists."""
        cfg = ch.resource
        ing = self.get_object("ingresses", cfg.key)
        if ing is None:
            return
        if ch.error:
            msg = f"with error: {ch.error}"
        elif cfg.warnings:
            msg = "with warning(s): " + "; ".join(cfg.warnings)
        else:
            return  # a class change: no event, no status change (NIC)
        self._event(ing, EVENT_WARNING, REASON_REJECTED, f"{cfg.key} was rejected: {msg}")
        if self._ready.is_set() and self.status.report_status_enabled():
            self._safe_status(self.status.clear_ingress_status, cfg.key)

    def _process_problems(self, problems: Sequence[ConfigurationProblem]) -> None:
        """NIC's processProblems: a Warning event per problem; clear the Ingress's status."""
        if not problems:
            return
        if not self.configuration.startup_complete:
            # Start-up: reported synchronously once the initial queue has drained.
            for p in problems:
                self._startup_problems[_key(p.obj) + "|" + p.reason] = p
            return
        for p in problems:
            self._event(p.obj, EVENT_WARNING, p.reason, p.message)
            self._safe_status(self.status.clear_ingress_status, _key(p.obj))

    def _safe_status(self, fn: Callable[[str], bool], key: str) -> None:
        try:
            fn(key)
        except Exception as e:
            log.warning("error updating ingress status", ingress=key, error=str(e))

    def _event(self, obj: dict[str, Any], event_type: str, reason: str, message: str,
               rt: ResourceType = INGRESSES) -> None:
        # Normal events are logged at debug: one per Ingress at start-up would cost ~50 us each on the
        # critical path, and the Event object carries them anyway.
        level = log.debug if event_type == EVENT_NORMAL else log.warning
        level("event", object=_key(obj), type=event_type, reason=reason, message=message)
        if self._recorder is None:
            return
        kind, api_version = _REF_KINDS.get(rt, (rt.kind, rt.api_version))
        try:
            self._recorder.event(obj, event_type, reason, message, kind=kind, api_version=api_version)
        except Exception as e:  # the recorder promises not to raise; be safe anyway
            log.warning("error recording event", error=str(e))


class _RetryLater(Exception):
    """A sync that must run again later (rate-limited), without counting as a bug."""


@dataclass
class _FailedReload:
    """A reload that raised instead of returning an outcome: every resource in it failed."""

    error: str
    reloaded: bool = False
    failed: dict[str, str] = field(default_factory=dict)


def _key(obj: dict[str, Any]) -> str:
    m = _meta(obj)
    ns = m.get("namespace") or ""
    return f"{ns}/{m.get('name', '')}" if ns else str(m.get("name", ""))
