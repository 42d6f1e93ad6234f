"""The LoadBalancerController: the task queue, ONE sync thread with batching, and the sync methods (NIC's
`internal/k8s/controller.go`).

Guarantees:
- Every configuration kind comes from the `KindRegistry` (Ingress first): its informers, its handler, its
  sync (dispatched by the task's kind, no per-kind branches), its model builder, events and status writer.
  Keys carry the kind everywhere, so resources of different kinds with one namespace/name never mix.
- Informers (`InformerSet`) feed handlers that only filter and enqueue `Task`s. ONE sync thread drains the
  rate-limited queue and owns the Configuration, the Configurator and NGINX. A sync that raises is logged and
  re-queued rate-limited; the thread never dies.
- Start-up (`Startup`): nothing is rendered or reloaded until the informers have synced and the initial queue
  has drained; then one resolution, one reload, problems written synchronously, readiness, and the deferred
  statuses flushed in the background.
- Steady state: each change is resolved at once; files are written only when their bytes change and NGINX
  is reloaded only when a file changed. While two or more tasks wait, reloads are held and done once when
  the queue drains (batching); the batch's events and statuses wait for that reload. A failed reload rejects
  only the offending resources (event `AddedOrUpdatedWithError` with NGINX's error text); the others keep
  serving.
- Every file write and reload goes through the Configurator. The special TLS Secrets
  (`default_server_tls_secret`, `wildcard_tls_secret`) stay in step after start-up: a valid change rewrites
  their file and reloads NGINX once (event `SecretUpdated`), an invalid one is rejected with a Warning event
  and the previous certificate keeps serving, a deleted one keeps its file.
- Deletes are never lost: tombstones are handled, and a deleted EndpointSlice re-renders its Service.
- Kinds outside the Configuration extend the dependency tracking: `secret_users` (resources that use a
  Secret through a Policy) are re-rendered with the Configuration's users of a changed Secret, and
  `replicas.sources` when the controller replica count (ready endpoints of `--external-service`) changes.
- `stats.phases` records the start-up phases and the "controller ready" log line carries them.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from ingressctl.configs.files import ReloadOutcome
from ingressctl.configs.prerender import MIN_ITEMS, RenderAheadStats, startup_processes
from ingressctl.controller.configuration import Configuration, ConfigurationProblem, ResourceChange
from ingressctl.controller.handlers import is_supported_secret
from ingressctl.controller.informers import InformerSet
from ingressctl.controller.kinds import Applied, KindRegistry, ResourceKind
from ingressctl.controller.model import Resource, with_users
from ingressctl.controller.options import ControllerOptions, SyncStats
from ingressctl.controller.render_ahead import drop_prepared, render_ahead
from ingressctl.controller.replicas import ControllerReplicas, ingresses_with_scale
from ingressctl.controller.reporter import (
    EVENT_NORMAL,
    EVENT_WARNING,
    EventSink,
    HeldReports,
    Reporter,
    keys_of,
)
from ingressctl.controller.secrets import SecretFilesAhead, SecretStoreLike, supported_secret_types
from ingressctl.controller.special_secrets import REASON_UPDATED_WITH_ERROR, SpecialSecrets
from ingressctl.controller.startup import Startup
from ingressctl.controller.status import StartupStatusFlush, StatusUpdater, StatusWriters
from ingressctl.controller.task import RELOAD_TASK, Kind, Task
from ingressctl.k8s.codec import gc_paused
from ingressctl.k8s.informer import wait_for_cache_sync
from ingressctl.k8s.resource import CONFIGMAPS
from ingressctl.k8s.workqueue import RateLimitingQueue
from ingressctl.keys import INGRESS_KIND, ResourceKey, object_key, split_key
from ingressctl.kinds.ingress.kind import IngressConfigurator, ingress_kind, referenced_secret_keys
from ingressctl.logging import get_logger

log = get_logger(__name__)

__all__ = ["ControllerOptions", "EventSink", "LoadBalancerController", "SyncStats"]

REASON_UPDATED = "Updated"
REASON_INVALID_VALUE = "InvalidValue"
EXTERNAL_STATUS_ADDRESS_KEY = "external-status-address"

KindFactory = Callable[["LoadBalancerController"], ResourceKind]


class ConfiguratorLike(IngressConfigurator, Protocol):
    """What the controller needs from the Configurator."""

    def add_or_update(self, key: ResourceKey, resource: object) -> list[str]: ...
    def delete(self, key: ResourceKey) -> None: ...
    def update_config(self, config: Any, ing_exes: list[Any]) -> list[str]: ...
    def disable_reloads(self) -> None: ...
    def enable_reloads(self) -> None: ...
    def reload_if_needed(self, reason: str = "other") -> ReloadOutcome: ...
    def request_reload(self) -> None: ...
    def update_special_secret(self, name: str, content: bytes) -> bool: ...
    def set_controller_replicas(self, replicas: int) -> None: ...
    def render_ahead(self, items: Iterable[tuple[ResourceKey, object]], count: int, *,
                     processes: int) -> RenderAheadStats: ...
    def drop_rendered_ahead(self) -> None: ...


class LoadBalancerController:
    """See the module docstring."""

    def __init__(self, client: Any, *, configuration: Configuration, configurator: ConfiguratorLike,
                 secret_store: SecretStoreLike, status_updater: StatusUpdater,
                 recorder: EventSink | None = None, options: ControllerOptions | None = None,
                 parse_config_map: Callable[[Any], tuple[Any, list[tuple[str, str]]]] | None = None,
                 is_leader: Callable[[], bool] | None = None,
                 queue: RateLimitingQueue[Task] | None = None, kinds: Sequence[KindFactory] = ()) -> None:
        """`kinds`: factories of the registry entries served besides Ingress (each gets this controller)."""
        self.options = o = options or ControllerOptions()
        self.configuration = configuration
        self.configurator = configurator
        self.secret_store = secret_store
        self._secret_types = supported_secret_types(configuration.ingress_classes.compat)
        self._files_ahead = secret_store if isinstance(secret_store, SecretFilesAhead) else None
        self.status = status_updater
        if parse_config_map is None:
            from ingressctl.configs.configmaps import parse_config_map as _parse

            parse_config_map = _parse
        self._parse_config_map = parse_config_map
        self._is_leader = is_leader
        # Called on the sync thread after every task and after start-up completes (metrics wiring).
        self.on_synced: Callable[[], None] | None = None
        # More users of a Secret than the Configuration knows (resources using it through a Policy).
        self.secret_users: list[Callable[[str, str], list[Resource]]] = []
        # More users of a Service than the Configuration knows (resources whose externalAuth Policies use it).
        self.service_users: list[Callable[[str, str], list[Resource]]] = []
        # `nginx.org/limit-req-scale` and rateLimit `scale` divide rates by the number of replicas: the ready
        # endpoints of `--external-service` (NIC); without it, the controller counts itself only.
        self.replicas = ControllerReplicas(configurator.set_controller_replicas)
        self.replicas.sources.append(lambda: ingresses_with_scale(self.configuration.get_resources()))

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
        self._held = HeldReports()      # a batch's events and statuses, until its reload
        self._config_map: dict[str, Any] | None = None
        self._started_at = 0.0
        self._sync_started_at = 0.0
        self._sync_cpu_start = 0.0
        self._configmap_key = o.nginx_configmaps
        self._external_service_key = f"{o.pod_namespace}/{o.external_service}" if o.external_service else None

        self.kinds = KindRegistry([ingress_kind(ingress_class=configuration.ingress_classes, caches=self,
                                                secrets=secret_store, configurator=configurator,
                                                status=status_updater, warn=self._warn_ingress)])
        for factory in kinds:
            entry = factory(self)
            self.kinds.register(entry)
            if entry.model is not None:
                configuration.register_kind(entry.model)
        self.status_writers = StatusWriters(status_updater, {k.name: k.status for k in self.kinds})
        self.reporter = Reporter(self.kinds, self.status_writers, recorder, self.cached, self._ready.is_set)
        self.special_secrets = SpecialSecrets(o, configurator, self.reporter, self._ready.is_set,
                                              self._reload)
        self.startup = Startup(options=o, stats=self.stats, configuration=configuration,
                               configurator=configurator, reporter=self.reporter, status=self.status_writers,
                               render_all=self._render_all_at_startup, cached=self.cached,
                               guarded=self._guarded, stopping=self._stopping)
        self.informers = InformerSet(client, self.kinds, self.enqueue,
                                     ingress_class=configuration.ingress_classes,
                                     watch_namespaces=o.watch_namespaces, pod_namespace=o.pod_namespace,
                                     external_service_key=self._external_service_key,
                                     configmap_key=self._configmap_key, resync_period=o.resync_period,
                                     watch_secret_namespaces=o.watch_secret_namespaces,
                                     prevalidate_secret=getattr(secret_store, "prevalidate", None),
                                     special_secret_keys=[k for k in (o.default_server_tls_secret,
                                                                      o.wildcard_tls_secret) if k])
        self._syncers: dict[str, Callable[[str], None]] = {
            Kind.ENDPOINT_SLICE: self.sync_endpoint_slice, Kind.SERVICE: self.sync_service,
            Kind.SECRET: self.sync_secret, Kind.CONFIG_MAP: self.sync_config_map,
            Kind.RELOAD: lambda _key: self.sync_reload(),
        }
        for k in self.kinds:
            self._syncers[k.name] = k.sync or self._resource_syncer(k.name)
        # Until the first drain nothing reloads (NIC builds the Configurator with reloads disabled).
        self.configurator.disable_reloads()


    # ------------------------------------------------------------------------------------------ caches

    def get_object(self, name: str, key: str) -> dict[str, Any] | None:
        """Read an object from the informer caches: `name` is a kind's registry name or a built-in plural."""
        return self.informers.get_object(name, key)

    def cached(self, key: ResourceKey) -> dict[str, Any] | None:
        """A configuration resource as the informer cache holds it."""
        return self.informers.get_object(key.kind, key.ns_name)

    def endpoint_slices(self, namespace: str, service: str) -> list[dict[str, Any]]:
        """The cached EndpointSlices of a Service (thread-safe read of the informer store)."""
        return self.informers.endpoint_slices(namespace, service)

    def _warn_ingress(self, ing: dict[str, Any], reason: str, message: str) -> None:
        self.reporter.event(ing, Kind.INGRESS, EVENT_WARNING, reason, message)

    # ------------------------------------------------------------------------------------------ lifecycle

    def enqueue(self, task: Task) -> None:
        self.queue.add(task)

    def start(self, *, sync_timeout: float | None = None) -> bool:
        """Start the informers, wait for their caches, pre-sync Secrets and start the sync thread.
        Returns False if stopped (or timed out) before the caches synced."""
        self._started_at = time.monotonic()
        for inf in self.informers.all:
            inf.start()
        deadline = None if sync_timeout is None else time.monotonic() + sync_timeout
        while not self._stopping.is_set():
            step = self.options.cache_sync_log_interval
            if deadline is not None:
                step = max(0.0, min(step, deadline - time.monotonic()))
            if wait_for_cache_sync(self.informers.all, timeout=step):
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
        t0 = time.monotonic()
        self._write_secret_files_ahead(self._pre_sync_secrets())
        self._sync_started_at = time.monotonic()
        self.stats.phases["pre_sync"] = self._sync_started_at - t0
        self._thread = threading.Thread(target=self._run, name="sync", daemon=True)
        self._thread.start()
        return True

    def stop(self, timeout: float = 30.0) -> None:
        """Stop taking work (the current task finishes), then stop the informers and background writers."""
        self._stopping.set()
        self.queue.shut_down()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if self._files_ahead is not None and (self._thread is None or not self._thread.is_alive()):
            # Stopped before the start-up render took the Secret files over: reap their writer.
            self._files_ahead.abandon_files_ahead()
        for inf in self.informers.all:
            inf.stop()
        self.startup.stop(timeout)

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
        return all(inf.has_synced() for inf in self.informers.all)

    def is_alive(self) -> bool:
        """The sync thread runs (or has not been started yet)."""
        return self._thread is None or self._thread.is_alive() or self._stopping.is_set()

    @property
    def startup_flush(self) -> StartupStatusFlush | None:
        return self.startup.flush

    def on_started_leading(self, stop: threading.Event | None = None) -> None:
        """Leader-election callback: write every status, unless the start-up flush still owns that job."""
        self.startup.on_started_leading(self._ready.is_set(), stop)

    def status_keys(self) -> list[ResourceKey]:
        return self.reporter.status_keys()

    def _pre_sync_secrets(self) -> int:
        """NIC's preSyncSecrets (without its `break` bug): know every supported Secret before any resource
        syncs, so none sees a spurious "missing secret". Returns how many there are."""
        count = 0
        for secret in self.informers.list("secrets"):
            if is_supported_secret(secret, self._secret_types):
                count += 1
                try:
                    self.secret_store.add_or_update_secret(secret)
                except Exception as e:
                    log.warning("error pre-syncing secret", secret=object_key(secret), error=str(e))
        return count

    def _write_secret_files_ahead(self, secrets: int) -> None:
        """Start-up: the files of the TLS Secrets the Ingresses reference are written by a forked process
        while the sync thread drains the queue (`LocalSecretStore.write_files_ahead`), on a core that would
        otherwise wait; the start-up render takes them over (`_finish_secret_files_ahead`)."""
        store = self._files_ahead
        if store is None or self.options.legacy_startup or secrets < MIN_ITEMS:
            return
        if self._startup_processes() < 2:
            return
        ingresses = self.informers.list(INGRESS_KIND)  # a snapshot: the forked process reads it without locks
        is_ours = self.configuration.has_correct_ingress_class
        store.write_files_ahead(functools.partial(referenced_secret_keys, ingresses, is_ours))

    def _startup_processes(self) -> int:
        """Processes the start-up may use (`--startup-render-processes`; default: one per usable CPU)."""
        return self.options.startup_render_processes or startup_processes()

    def _finish_secret_files_ahead(self) -> None:
        if self._files_ahead is not None:
            self._files_ahead.finish_files_ahead()

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
        syncer = self._syncers.get(task.kind)
        if syncer is None:
            log.warning("unknown task kind", task=str(task))
            return
        syncer(task.key)

    def _after_task(self) -> None:
        if len(self.queue) != 0 or self._stopping.is_set():
            return
        if not self._ready.is_set():
            self.startup.complete(started_at=self._started_at, sync_started_at=self._sync_started_at,
                                  sync_cpu_start=self._sync_cpu_start, mark_ready=self._ready.set)
        elif self._batch:
            self._batch = False
            self.configurator.enable_reloads()
            applied, deleted = self._held.take()
            if self._batch_update_all:   # reports every resource itself
                self._batch_update_all = False
                self.update_all_configs()
                applied = []
            self._report(applied, deleted, "batch")

    def _rendering(self) -> bool:
        """Whether changes are rendered now: after start-up, or during a legacy start-up."""
        return self._ready.is_set() or self.options.legacy_startup

    def is_rendering(self) -> bool:
        return self._rendering()

    def rerender(self, resources: list[Resource], reason: str) -> None:
        """Render configured resources again (a kind outside the Configuration changed), with events and
        status as for any change."""
        self._apply_with_events(resources, reason)

    # ------------------------------------------------------------------------------------------ syncs

    def _resource_syncer(self, kind: str) -> Callable[[str], None]:
        def sync(key: str) -> None:
            self.sync_resource(ResourceKey(kind, key))
        return sync

    def sync_resource(self, key: ResourceKey) -> None:
        """NIC's syncIngress, syncVirtualServer, ...: the latest cached object into the Configuration."""
        obj = self.cached(key)
        if obj is None:
            changes, problems = self.configuration.delete(key)
        else:
            changes, problems = self.configuration.add_or_update(key.kind, obj)
        self._process_changes(changes)
        self._process_problems(problems)

    def sync_endpoint_slice(self, service_key: str) -> None:
        """Re-render the resources using the Service; reload only if the rendered bytes changed."""
        if service_key == self._external_service_key:
            self._update_controller_replicas(service_key)
        if not self._rendering():
            return
        ns, name = split_key(service_key)
        resources = self._service_users(ns, name)
        if not resources:
            return
        applied = self._apply(resources)
        # No events for endpoint changes (NIC), except an error for a resource NGINX refused.
        self.reporter.mark_failed([], self._reload("endpoints"))
        self.reporter.report_errors(applied)

    def _update_controller_replicas(self, service_key: str) -> None:
        """The ready endpoints of the controller's own Service are its replicas (`replicas.py`)."""
        ns, name = split_key(service_key)
        if self.replicas.update(self.endpoint_slices(ns, name)) and self._rendering():
            resources = self.replicas.users()
            if resources:
                self._apply_with_events(resources, "replicas")

    def sync_service(self, key: str) -> None:
        ns, name = split_key(key)
        svc = self.get_object("services", key)
        if key == self._external_service_key:
            self.status.save_status_from_external_service(svc)
            if self._ready.is_set():
                # Ingress status needs --report-ingress-status; custom resources' externalEndpoints only
                # leadership (their writers gate themselves), as NIC.
                self.status_writers.bulk_update([k for k in self.status_keys()
                                                 if self.status_writers.report_status_enabled_for(k)])
        if not self._rendering():
            return
        resources = self._service_users(ns, name)
        if resources:
            self._apply_with_events(resources, "service")

    def _service_users(self, ns: str, name: str) -> list[Resource]:
        """The configured resources using the Service: as a backend, or through a Policy."""
        found = self.configuration.find_resources_for_service(ns, name)
        return with_users(found, self.service_users, ns, name)

    def sync_secret(self, key: str) -> None:
        ns, name = split_key(key)
        secret = self.get_object("secrets", key)
        special = self.special_secrets.files(key)
        if special:
            self.special_secrets.sync(key, secret, special)
        if secret is None or not is_supported_secret(secret, self._secret_types):
            changed = self.secret_store.delete_secret(key)
        else:
            changed = self.secret_store.add_or_update_secret(secret)
        if changed is False or not self._rendering():
            return
        found = self.configuration.find_resources_for_secret(ns, name)
        resources = with_users(found, self.secret_users, ns, name)
        if resources:
            # NGINX reads certificates at reload: a changed file needs one even if no config text changed.
            self.configurator.request_reload()
            self._apply_with_events(resources, "secret")

    def sync_reload(self) -> None:
        """Retry a reload that failed without blaming a resource; raises _RetryLater to back off."""
        self._in_reload_retry = True
        try:
            outcome = self._reload("retry")
        finally:
            self._in_reload_retry = False
        self.reporter.mark_failed([], outcome)
        if outcome is not None and outcome.batch_failed:
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

    # ------------------------------------------------------------------------------------------ processing

    def update_all_configs(self, *, startup: bool = False) -> None:
        """NIC's updateAllConfigs: main config + every resource, ONE reload, events (and status) for all."""
        self._update_all_configs(startup=startup)()

    def _render_all_at_startup(self) -> Callable[[], None]:
        """The start-up's update_all_configs; returns the reporting of the applied resources (their events and
        deferred statuses) for `Startup.complete` to run."""
        try:
            return self._update_all_configs(startup=True)
        finally:
            self._finish_secret_files_ahead()  # done before the reload, unless the render failed before it

    def _update_all_configs(self, *, startup: bool) -> Callable[[], None]:
        """update_all_configs up to its events and statuses, which the returned function reports."""
        cm = self._config_map
        if cm is None and self._configmap_key:
            cm = self.get_object("configmaps", self._configmap_key)
            self._config_map = cm
        params, errors = self._parse_config_map((cm or {}).get("data") if cm else None)
        if cm is not None:
            for k, err in errors:
                self.reporter.event_for(cm, CONFIGMAPS, EVENT_WARNING, REASON_INVALID_VALUE,
                                        f"Invalid value for {k}: {err}")
        # The main config first, then every resource on its own so that warnings stay per resource.
        for w in self.configurator.update_config(params, []):
            log.warning("configuration warning", warning=w)
        resources = self.configuration.get_resources()
        # At start-up everything is built and rendered at once and stays alive: a collection meanwhile would
        # only walk the growing heap (measured: ~0.25 s of the sync thread at 10,000 Ingresses). The cyclic
        # garbage made meanwhile is collected once the pause ends.
        pause = gc_paused() if startup else contextlib.nullcontext()
        with pause:
            applied = self._render_all(resources, startup=startup)
        outcome = self._reload("startup" if startup else "configmap")
        self.reporter.mark_failed(applied, outcome)
        if cm is not None:
            ns_name = object_key(cm)
            if outcome is not None and outcome.reloaded and outcome.error:   # NGINX refused the main config
                self.reporter.event_for(cm, CONFIGMAPS, EVENT_WARNING, REASON_UPDATED_WITH_ERROR,
                                        f"ConfigMap {ns_name} updated, but was not applied: {outcome.error}")
            elif errors:
                self.reporter.event_for(cm, CONFIGMAPS, EVENT_WARNING, REASON_UPDATED_WITH_ERROR,
                                        f"ConfigMap {ns_name} updated with errors. Ignoring invalid values")
            elif not startup:
                self.reporter.event_for(cm, CONFIGMAPS, EVENT_NORMAL, REASON_UPDATED,
                                        f"ConfigMap {ns_name} updated without error")
        return functools.partial(self.reporter.report, applied, defer_status=startup)

    def _render_all(self, resources: Sequence[Resource], *, startup: bool) -> list[Applied]:
        """`_apply` every resource; at start-up, rendered ahead in parallel first (`_render_ahead`)."""
        try:
            if startup:
                try:
                    self._render_ahead(resources)
                except Exception as e:  # costs the parallelism only: `_apply` does what was not done
                    log.exception("rendering ahead failed; rendering on the sync thread", error=str(e))
            return self._apply(resources)
        finally:
            self._drop_ahead()

    def _render_ahead(self, resources: Sequence[Resource]) -> None:
        render_ahead(self.kinds, resources, self.configurator, self._startup_processes(), self.stats)

    def _drop_ahead(self) -> None:
        self._finish_secret_files_ahead()
        self.configurator.drop_rendered_ahead()
        drop_prepared(self.kinds)

    def _process_changes(self, changes: Sequence[ResourceChange]) -> None:
        """NIC's processChanges: deletes (all first), then add/updates; one reload; then events and status."""
        if not changes or not self._rendering():
            return
        deleted: list[ResourceChange] = []
        updates: list[Resource] = []
        for ch in changes:
            if ch.op == "Delete":
                key = ch.resource.key_with_kind
                self.configurator.delete(key)
                self.kinds[key.kind].builder.forget(key)
                self.reporter.forget(ch.resource)
                deleted.append(ch)
            else:
                updates.append(ch.resource)
        self._report(self._apply(updates), deleted, "ingress")

    def _process_problems(self, problems: Sequence[ConfigurationProblem]) -> None:
        """NIC's processProblems (deferred until the initial queue drains)."""
        if not problems:
            return
        if not self.configuration.startup_complete:
            self.startup.defer_problems(problems)
            return
        self.reporter.report_problems(problems)

    def _apply_with_events(self, resources: list[Resource], reason: str) -> None:
        self._report(self._apply(resources), [], reason, defer_status=False)

    def _report(self, applied: list[Applied], deleted: Sequence[ResourceChange], reason: str,
                defer_status: bool | None = None) -> None:
        """Reload, then events and status (deferred during start-up); in a batch, held for its reload."""
        if self._batch:
            self._held.hold(applied, deleted)
            return
        self.reporter.mark_failed(applied, self._reload(reason))
        for ch in deleted:
            self.reporter.report_delete(ch)
        legacy_startup = not self._ready.is_set() and self.options.legacy_startup
        if defer_status is not None:
            self.reporter.report(applied, defer_status=defer_status)
            return
        self.reporter.report(applied, defer_status=not self._ready.is_set() and not legacy_startup)
        if legacy_startup:
            self.status_writers.bulk_update([k for a in applied for k in keys_of(a.resource)], workers=1)

    def _apply(self, resources: Iterable[Resource]) -> list[Applied]:
        """Render each resource with its kind's builder; collect warnings."""
        out: list[Applied] = []
        for res in resources:
            key = res.key_with_kind
            try:
                out.append(self.kinds[key.kind].builder.apply(res))
            except Exception as e:
                log.exception("error rendering a resource", resource=str(key), error=str(e))
                out.append(Applied(res, list(res.warnings), error=str(e)))
        return out

    def _reload(self, reason: str) -> ReloadOutcome | None:
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
            return ReloadOutcome(reloaded=False, error=str(e))
        if reason == "startup":
            self.stats.phases["startup_reload"] = time.monotonic() - t0
            self.stats.phases["startup_reload_cpu"] = time.thread_time() - c0
        if outcome.batch_failed:
            log.error("nginx reload failed; the changes stay pending", reason=reason, error=outcome.error)
            self._schedule_reload_retry()
        elif outcome.error:
            log.error("nginx reloaded, but the main configuration was rejected", error=outcome.error)
        return outcome

    def _schedule_reload_retry(self) -> None:
        if not self._in_reload_retry:
            self.queue.add_rate_limited(RELOAD_TASK)


class _RetryLater(Exception):
    """A sync that must run again later (rate-limited), without counting as a bug."""
