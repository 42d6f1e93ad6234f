"""Composition root: builds the controller's parts from `Settings`, starts them in order, stops them in
reverse.

Start order (NIC's main.go; docs/architecture.md, "Start-up"):
1. Kubernetes client from the kubeconfig (or in-cluster config).
2. The IngressClass named by `--ingress-class` must exist with `spec.controller:
   nginx.org/ingress-controller`; otherwise start-up fails with a clear message (NIC exits fatally too).
3. The NGINX ConfigMap (`--nginx-configmaps`) and the special TLS Secrets (`--default-server-tls-secret`,
   `--wildcard-tls-secret`) are read and validated; a missing or invalid one is fatal.
4. The Manager writes the main config and starts NGINX, waiting until config version 0 is served.
5. With `--enable-prometheus-metrics`: the metrics server (and, with `--enable-latency-metrics`, the syslog
   listener that NGINX's latency access log writes to), started right after NGINX.
6. Configurator, event recorder, status updater, leader elector (Lease in POD_NAMESPACE), controller, and the
   readiness server. Leader election starts before the informer caches sync, as in NIC. With
   `--enable-admission-webhook`, the webhook server (`ingressctl.webhook.server`) starts before the readiness
   server, reading the controller's Configuration only; its certificate comes from the files or the Secret.
7. The controller starts its informers, waits for their caches and runs its sync thread.

Metrics wiring (`ingressctl.metrics.ControllerMetrics`, only when enabled): the Manager's reload hook; the
task queue's workqueue metrics (`taskQueue`); after every task, `ingress_resources_total` from the
Configurator's counts and, at the first readiness, the time to ready; the status updater reports the
status flush's progress and failed status writes. With latency metrics, `conf.d/_latency-metrics.conf` adds
NIC's `response_time` access log (JSON over syslog to `<run_dir>/nginx-syslog.sock`) to the http context,
and `latency.LatencyLabels` keeps the labels in step with what is rendered. The kinds served besides the
Ingress come from `kinds.custom_resource_kinds`; what the installed NGINX allows from `nginx_features`.

Leader election uses its own API client: no retries and a read timeout of half the renew deadline, so a slow
API server cannot use up the leader's renew attempts.

Shutdown (`stop()`, on SIGTERM/SIGINT): readiness off, stop taking work (the task in progress finishes), stop
informers, release the lease (another replica takes over at its next retry instead of waiting for the lease
to expire: only the leader writes status, and this replica no longer does), quit NGINX gracefully (open
requests finish), stop the metrics server, flush events, stop the readiness server and the admission
webhook. `run()` returns 0.

If NGINX dies on its own, the failure is logged and NGINX is restarted once; if that fails, readiness and
liveness turn off (the kubelet restarts the Pod) and the controller stops changing the config.
Every start-up failure raises `StartupError` with a message for users, followed by a hint naming the flag to
change when the failure is a path or port one (`ingressctl.startup_hints`); `run()` logs it and returns 1,
or 2 when NGINX's workers cannot reach the conf or run dir (`ingressctl.nginx.worker_access`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import signal
import ssl
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from ingressctl.app.kinds import KindSetupError, custom_resource_kinds, transportservers_served
from ingressctl.app.latency import LatencyLabels, observed_configurator, observed_templates
from ingressctl.app.nginx_features import (
    certificates_per_handshake,
    nginx_capabilities,
    with_certificate_cache,
    with_dynamic_upstreams,
    with_escape_uri,
    with_routes,
    with_upstream_front,
)
from ingressctl.controller.ingress_class import NGINX_CONTROLLER as NGINX_CONTROLLER
from ingressctl.controller.ingress_class import IngressClasses
from ingressctl.controller.ingress_nginx_configmaps import config_map_kind_factory
from ingressctl.k8s.readahead import ReadAhead
from ingressctl.k8s.resource import SECRETS
from ingressctl.keys import INGRESS_KIND
from ingressctl.logging import get_logger
from ingressctl.settings import Settings

if TYPE_CHECKING:
    from ingressctl.metrics import ControllerMetrics

log = get_logger(__name__)

LATENCY_CONFIG_NAME = "_latency-metrics"
"""conf.d/<name>.conf with the latency access log; Ingress files are `<namespace>-<name>`, which never start
with "_"."""


class StartupError(Exception):
    """The controller cannot start; the message says why and what to do. `exit_status`: what `run()` returns
    (2 for a configuration that cannot work, as for an invalid flag)."""

    def __init__(self, message: str, *, exit_status: int = 1) -> None:
        super().__init__(message)
        self.exit_status = exit_status


class App:
    """The running controller: every part, started in order and stopped in reverse."""

    def __init__(self, settings: Settings, *, client: Any = None, health_host: str = "",
                 started_at: float | None = None) -> None:
        """`health_host` is the address the readiness and metrics servers bind ("" = all); `started_at`
        (time.monotonic()) is when the process started, for the time-to-ready metric (default: `start()`)."""
        self.settings = settings
        self._health_host = health_host
        self.client: Any = client
        self._own_client = client is None
        self._started_at = started_at
        self.metrics: ControllerMetrics | None = None
        self.latency_labels: LatencyLabels | None = None
        self._ready_reported = False
        self._serve_transportservers = False  # custom resources on and the cluster serves TransportServers
        self._policy_store: Any = None        # the Policy store with custom resources on (kinds/policy)
        self.leader_client: Any = None
        self.manager: Any = None
        self.configurator: Any = None
        self.controller: Any = None
        self.recorder: Any = None
        self.leader: Any = None
        self.health: Any = None
        self.webhook: Any = None
        self.status: Any = None
        self._reads = ReadAhead("startup-read")
        self.ingress_classes = IngressClasses(settings.controller.ingress_class,
                                              ingress_nginx_compat=settings.controller.ingress_nginx_compat)
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._nginx_failed = False
        self._restart_lock = threading.Lock()
        self.nginx_restarts = 0

    # ------------------------------------------------------------------------------------------ start

    def start(self) -> None:
        """Build and start everything; raises StartupError (after cleaning up) on a fatal problem."""
        if self._started_at is None:
            self._started_at = time.monotonic()
        from ingressctl.startup_hints import with_hint

        try:
            self._start()
        except StartupError as e:
            self.stop()
            raise StartupError(with_hint(str(e), self.settings), exit_status=e.exit_status) from e.__cause__
        except Exception as e:
            self.stop()
            raise StartupError(with_hint(f"start-up failed: {e}", self.settings)) from e

    def _start(self) -> None:
        from ingressctl.k8s.client import KubeClient, KubeConfigError

        s = self.settings
        if self.client is None:
            try:
                self.client = KubeClient.from_kubeconfig(s.kube.kubeconfig)
            except KubeConfigError as e:
                raise StartupError(f"cannot load the Kubernetes configuration: {e}") from e
        self._read_ahead()
        # The rest of the controller's modules load while those reads travel.
        from ingressctl.configs.configmaps import StaticConfigParams, parse_config_map
        from ingressctl.configs.configurator import Configurator
        from ingressctl.configs.templates import TemplateError, TemplateExecutor
        from ingressctl.controller.auth_map_secrets import requeue_secret
        from ingressctl.controller.configuration import Configuration
        from ingressctl.controller.controller import ControllerOptions, LoadBalancerController
        from ingressctl.controller.secrets import LocalSecretStore
        from ingressctl.controller.status import StatusUpdater
        from ingressctl.controller.task import Task
        from ingressctl.health import HealthServer
        from ingressctl.k8s.events import EventRecorder
        from ingressctl.k8s.workqueue import RateLimitingQueue
        from ingressctl.nginx.manager import Manager, NginxStartError
        from ingressctl.nginx.worker_access import WorkerAccessError, ensure_worker_access

        self._validate_ingress_class()
        config_data = self._read_config_map()

        binary = s.nginx.binary
        if s.nginx.debug:
            from ingressctl.nginx.debug import DebugBinaryError, debug_binary

            try:
                binary = debug_binary(binary)
            except DebugBinaryError as e:
                raise StartupError(str(e)) from e
            log.info("nginx with debug logging", binary=binary)
        try:
            self.manager = Manager(binary=binary, conf_dir=s.nginx.conf_dir, run_dir=s.nginx.run_dir,
                                   reload_timeout_ms=s.nginx.reload_timeout_ms,
                                   connectable_sockets=s.controller.enable_tls_passthrough)
        except ValueError as e:
            raise StartupError(f"invalid NGINX paths: {e}") from e
        capabilities = nginx_capabilities(self.settings, binary)
        if s.serving.enable_prometheus_metrics:
            self._create_metrics(capabilities.has("stub_status"))
        static = dataclasses.replace(StaticConfigParams.from_settings(s), capabilities=capabilities)
        if s.controller.enable_custom_resources:
            self._serve_transportservers = transportservers_served(s, self.client, self._reads)
        if self._serve_transportservers:
            from ingressctl.kinds.transportserver.wiring import StreamSetupError, with_stream

            try:
                static = with_stream(static, binary,
                                     tls_passthrough=s.controller.enable_tls_passthrough)
            except StreamSetupError as e:
                if s.controller.global_configuration or s.controller.enable_tls_passthrough:
                    raise StartupError(str(e)) from e
                log.error("TransportServers are not served", error=str(e))
                self._serve_transportservers = False
        # ConfigMap values are checked against what this NGINX can load (and whether it has a stream block).
        parse: Callable[[Any], tuple[Any, list[tuple[str, str]]]] = functools.partial(
            parse_config_map, capabilities=static.capabilities, stream=static.stream)
        if s.controller.ingress_nginx_compat:  # ingress-nginx's ConfigMap keys too
            from ingressctl.kinds.ingress.ingress_nginx.configmap import with_ingress_nginx_keys

            parse = with_ingress_nginx_keys(parse, snippets_enabled=s.controller.enable_snippets)
        params, errors = parse(config_data)
        for key, err in errors:
            log.warning("invalid ConfigMap value ignored", key=key, error=err)
        static = with_dynamic_upstreams(self.settings, static, binary, self.manager.dynamic_peers_socket)
        static = with_routes(self.settings, static, binary)
        static = with_certificate_cache(self.settings, static, binary)
        static = with_upstream_front(static, binary)
        if s.controller.ingress_nginx_compat:  # ingress-nginx's $escaped_request_uri
            static = with_escape_uri(static, binary)
        # The special TLS Secrets: validated now, written by the Configurator before it renders nginx.conf.
        refs = (("default", s.controller.default_server_tls_secret),
                ("wildcard", s.controller.wildcard_tls_secret))
        special = {f: pem for f, ref in refs if (pem := self._special_secret(ref)) is not None}
        default_pem, wildcard_pem = (self.manager.secret_path(f) if f in special else ""
                                     for f in ("default", "wildcard"))
        static = dataclasses.replace(static, default_server_tls_path=default_pem,
                                     wildcard_tls_path=wildcard_pem)
        latency = self.metrics.latency if self.metrics is not None else None
        if latency is not None:
            self.latency_labels = LatencyLabels(latency, self._endpoint_slices)
        try:
            templates: TemplateExecutor = (
                TemplateExecutor(s.nginx.main_template_path, s.nginx.ingress_template_path)
                if self.latency_labels is None else
                observed_templates(s.nginx.main_template_path, s.nginx.ingress_template_path,
                                    self.latency_labels.rendered))
        except TemplateError as e:
            raise StartupError(f"invalid template: {e}") from e
        # The Configurator writes nginx.conf (and removes leftovers in conf.d): NGINX starts with version 0
        # and no Ingress; the first reload comes after the informers have synced and the queue has drained.
        if self.latency_labels is None:
            self.configurator = Configurator(
                self.manager, static, params, templates, is_wildcard_enabled=bool(wildcard_pem),
                special_secrets=special,
                certificates_per_handshake=certificates_per_handshake(self.settings, static))
        else:
            self.configurator = observed_configurator(
                self.manager, static, params, templates, bool(wildcard_pem), self.latency_labels.deleted,
                special, certificates_per_handshake(self.settings, static))
            self._write_latency_config()
        try:
            self.manager.start(on_exit=self._on_nginx_exit)
        except NginxStartError as e:
            raise StartupError(f"NGINX did not start: {e}") from e
        try:
            ensure_worker_access(self.manager.paths, self.manager.master_pid or 0, cache_dir=static.cache_dir,
                                 tls_passthrough=s.controller.enable_tls_passthrough,
                                 latency_metrics=s.serving.enable_latency_metrics)
        except WorkerAccessError as e:
            raise StartupError(str(e), exit_status=2) from e
        if self.metrics is not None:
            try:
                self.metrics.start()
            except OSError as e:
                raise StartupError(f"cannot serve metrics on port {s.serving.prometheus_metrics_listen_port} "
                                   f"(--prometheus-metrics-listen-port): {e}") from e
        self.recorder = EventRecorder(self.client, component="nginx-ingress-controller", host=s.kube.pod_name)
        self.recorder.start()

        is_leader = None
        if s.leader_election.enabled:
            from ingressctl.k8s.leader import LeaderElector

            le = s.leader_election
            self.leader_client = self._leader_election_client()
            self.leader = LeaderElector(
                self.leader_client, namespace=s.kube.pod_namespace, name=le.lock_name,
                identity=s.kube.pod_name,
                lease_duration=le.lease_duration_s, renew_deadline=le.renew_deadline_s,
                retry_period=le.retry_period_s, on_started_leading=self._on_started_leading,
                on_stopped_leading=lambda: log.info("stopped leading"),
                on_new_leader=lambda who: log.info("new leader", leader=who),
            )
            is_leader = self.leader.is_leader

        def get_cached(key: str) -> dict[str, Any] | None:
            return self.controller.get_object(INGRESS_KIND, key) if self.controller is not None else None

        self.status = StatusUpdater(self.client, get_cached=get_cached,
                                    report_ingress_status=s.controller.report_ingress_status,
                                    is_leader=is_leader,
                                    metrics=self.metrics.startup if self.metrics is not None else None)
        if config_data and "external-status-address" in config_data:
            self.status.save_status_from_external_status(str(config_data["external-status-address"] or ""))
        configuration = Configuration(ingress_class=self.ingress_classes,
                                      legacy_startup=s.controller.legacy_startup,
                                      snippets_enabled=s.controller.enable_snippets,
                                      allow_empty_host=s.controller.allow_empty_ingress_host)
        options = ControllerOptions(
            ingress_class=s.controller.ingress_class, watch_namespaces=s.kube.watch_namespaces,
            watch_secret_namespaces=s.kube.watch_secret_namespaces,
            nginx_configmaps=s.controller.nginx_configmaps, pod_namespace=s.kube.pod_namespace,
            external_service=s.controller.external_service,
            report_ingress_status=s.controller.report_ingress_status,
            leader_election=s.leader_election.enabled, legacy_startup=s.controller.legacy_startup,
            startup_render_processes=s.controller.startup_render_processes,
            default_server_tls_secret=s.controller.default_server_tls_secret,
            wildcard_tls_secret=s.controller.wildcard_tls_secret,
        )
        queue: RateLimitingQueue[Task] | None = None
        if self.metrics is not None:
            queue = RateLimitingQueue(name="taskQueue", metrics_provider=self.metrics.workqueue)
        try:
            kinds, self._policy_store = custom_resource_kinds(
                s, self.client, self._reads, serve_transportservers=self._serve_transportservers,
                is_leader=is_leader, stream_server_name=static.capabilities.has("stream_server_name"))
        except KindSetupError as e:
            raise StartupError(str(e)) from e
        if s.controller.ingress_nginx_compat:  # the ConfigMaps of custom-headers and auth-proxy-set-headers
            kinds = [*kinds, config_map_kind_factory()]
        compat = s.controller.ingress_nginx_compat  # auth-map: Secrets read on demand (auth_map_secrets.py)
        read = functools.partial(self.client.get, SECRETS) if compat else None
        secrets = LocalSecretStore(self.configurator, ingress_nginx_compat=compat, read_secret=read)
        self.controller = LoadBalancerController(
            self.client, configuration=configuration, configurator=self.configurator, secret_store=secrets,
            status_updater=self.status,
            recorder=self.recorder, options=options, is_leader=is_leader, queue=queue,
            kinds=kinds, parse_config_map=parse,
        )
        from ingressctl.kinds.policy.wiring import wire_policy_users

        wire_policy_users(self.controller, self._policy_store)
        secrets.retry_auth_maps(requeue_secret(self.controller.queue))
        if self.metrics is not None:
            for kind in self.controller.kinds:
                if kind.metric_types:  # a GlobalConfiguration is not counted
                    self.metrics.controller.add_kind(kind.name, kind.metric_types)
            self.controller.on_synced = self._on_synced
        self._start_admission_webhook(configuration)
        if s.serving.ready_status:
            self.health = HealthServer(is_ready=self.is_ready, is_alive=self.is_alive, host=self._health_host,
                                       port=s.serving.ready_status_port)
            try:
                self.health.start()
            except OSError as e:
                raise StartupError(f"cannot serve readiness on port {s.serving.ready_status_port} "
                                   f"(--ready-status-port): {e}") from e
        if self.leader is not None:
            self.leader.start()
        if not self.controller.start():
            if self._stopping.is_set():
                return
            raise StartupError("the informer caches did not sync")

    def _start_admission_webhook(self, configuration: Any) -> None:
        """Serve `/validate` when enabled: the Configuration's validation, read-only, for Ingresses and the
        registry's custom kinds (VirtualServer, VirtualServerRoute when custom resources are served)."""
        w = self.settings.admission_webhook
        if not w.enabled:
            return
        from ingressctl.webhook.admission import registry_lookup
        from ingressctl.webhook.server import AdmissionWebhookServer

        cert, key = w.tls_cert_file, w.tls_key_file
        if w.tls_secret:
            pem = self._special_secret(w.tls_secret) or b""
            cert = key = self.configurator.create_secret("admission-webhook", pem)
        try:
            self.webhook = AdmissionWebhookServer(config=configuration, cert_file=str(cert),
                                                  key_file=str(key), host=self._health_host, port=w.port,
                                                  lookup=registry_lookup(self.controller.kinds))
        except (OSError, ssl.SSLError) as e:
            raise StartupError(f"cannot load the admission webhook certificate {cert} and key {key}: "
                               f"{e}") from e
        try:
            self.webhook.start()
        except OSError as e:
            raise StartupError(f"cannot serve the admission webhook on port {w.port} "
                               f"(--admission-webhook-port): {e}") from e

    # ------------------------------------------------------------------------------------------ metrics

    def _create_metrics(self, stub_status: bool) -> None:
        from ingressctl.metrics import ControllerMetrics

        s = self.settings
        manager = self.manager
        if s.serving.enable_latency_metrics and "," in s.nginx.run_dir:
            raise StartupError(f"--enable-latency-metrics needs an --nginx-run-dir without ',' "
                               f"(NGINX's syslog parameters are comma-separated): {s.nginx.run_dir!r}")
        try:
            self.metrics = ControllerMetrics(
                s.controller.ingress_class, run_dir=s.nginx.run_dir, host=self._health_host,
                port=s.serving.prometheus_metrics_listen_port,
                enable_latency=s.serving.enable_latency_metrics,
                master_pid=lambda: manager.master_pid, stub_status=stub_status)
        except ValueError as e:
            raise StartupError(f"cannot set up metrics: {e}") from e
        manager.on_reload = self.metrics.manager.on_reload
        manager.on_dynamic_update = self.metrics.manager.on_dynamic_update
        denials = getattr(self.client, "permission_denials", None)
        if denials is not None:
            self.metrics.watch_api_permissions(denials.counts)
        if s.controller.ingress_nginx_compat:
            self.metrics.watch_ingress_nginx_annotations(self._served_ingresses,
                                                         snippets_enabled=s.controller.enable_snippets)

    def _served_ingresses(self) -> list[dict[str, Any]]:
        """The cached Ingresses of the classes this controller serves (metrics thread; thread-safe reads)."""
        controller = self.controller
        if controller is None:
            return []
        return [i for i in controller.informers.list(INGRESS_KIND) if self.ingress_classes.is_ours(i)]

    def _write_latency_config(self) -> None:
        """NIC's main-template lines for latency metrics, as a conf.d file in the http context."""
        from ingressctl.metrics import LATENCY_LOG_FORMAT, latency_access_log, syslog_socket_path

        text = ("# Generated by ingressctl (--enable-latency-metrics); do not edit.\n"
                f"{LATENCY_LOG_FORMAT}\n"
                f"{latency_access_log(syslog_socket_path(self.settings.nginx.run_dir))}\n")
        self.configurator.write_static_config(LATENCY_CONFIG_NAME, text)

    def _endpoint_slices(self, namespace: str, service: str) -> list[dict[str, Any]]:
        controller = self.controller
        return list(controller.endpoint_slices(namespace, service)) if controller is not None else []

    def _on_synced(self) -> None:
        """After every task (sync thread): Ingress counts, and the time to ready once."""
        metrics, configurator, controller = self.metrics, self.configurator, self.controller
        if metrics is None or configurator is None or controller is None:
            return
        counts = configurator.resource_counts()
        for kind in controller.kinds:
            if kind.metric_types:
                metrics.controller.set_resources(kind.name, counts.get(kind.name, {}))
        if not self._ready_reported and controller.is_ready():
            self._ready_reported = True
            started = self._started_at if self._started_at is not None else time.monotonic()
            metrics.startup.mark_ready(max(0.0, time.monotonic() - started))
            if not self.is_ready():
                metrics.startup.set_ready(False)

    def _leader_election_client(self) -> Any:
        """A client of its own for the elector: no retries, a short read timeout (see the module doc)."""
        if not self._own_client:
            return self.client
        from ingressctl.k8s.client import KubeClient, KubeConfigError

        le = self.settings.leader_election
        timeout = max(1.0, le.renew_deadline_s / 2)
        try:
            return KubeClient.from_kubeconfig(self.settings.kube.kubeconfig, max_retries=0,
                                              read_timeout=timeout, connect_timeout=timeout)
        except KubeConfigError as e:
            raise StartupError(f"cannot load the Kubernetes configuration: {e}") from e

    def _read_ahead(self) -> None:
        """Start the start-up's independent reads together: the IngressClass, the NGINX ConfigMap, the special
        TLS Secrets and (custom resources on) the VirtualServer and TransportServer probes. Each step below
        takes its read's result or error where it used to make the call, so the order of the checks and
        their messages stay the same, while the round trips overlap."""
        from ingressctl.k8s.resource import CONFIGMAPS, INGRESSCLASSES

        s, client, reads = self.settings, self.client, self._reads
        name = s.controller.ingress_class
        reads.start(("get", INGRESSCLASSES.plural, name), lambda: client.get(INGRESSCLASSES, None, name))
        if s.controller.ingress_nginx_compat:
            reads.start(("list", INGRESSCLASSES.plural), lambda: client.list(INGRESSCLASSES, None))
        c = s.controller
        objects = ((CONFIGMAPS, c.nginx_configmaps), (SECRETS, c.default_server_tls_secret),
                   (SECRETS, c.wildcard_tls_secret))
        for rt, ref in objects:
            key = ("get", rt.plural, ref)
            if ref and key not in reads.pending():
                ns, obj = ref.split("/", 1)
                reads.start(key, functools.partial(client.get, rt, ns, obj))
        if s.controller.enable_custom_resources:
            from ingressctl.kinds.transportserver.kind import TRANSPORTSERVERS
            from ingressctl.kinds.virtualserver.kind import VIRTUALSERVERS

            namespace = s.kube.watch_namespaces[0] if s.kube.watch_namespaces else None
            for rt in (TRANSPORTSERVERS, VIRTUALSERVERS):
                reads.start(("probe", rt.plural), functools.partial(client.list, rt, namespace, limit=1))

    def _validate_ingress_class(self) -> None:
        """NIC's mustValidateIngressClass, and the ingress-nginx classes with --ingress-nginx-compat
        (`app/ingress_classes.py`)."""
        from ingressctl.app.ingress_classes import IngressClassError, check_ingress_classes
        from ingressctl.k8s.resource import INGRESSCLASSES

        name = self.settings.controller.ingress_class
        try:
            check_ingress_classes(
                self.ingress_classes,
                lambda: self._reads.take(("get", INGRESSCLASSES.plural, name),
                                         lambda: self.client.get(INGRESSCLASSES, None, name)),
                lambda: self._reads.take(("list", INGRESSCLASSES.plural),
                                         lambda: self.client.list(INGRESSCLASSES, None)))
        except IngressClassError as e:
            raise StartupError(str(e)) from e

    def _read_config_map(self) -> dict[str, str] | None:
        from ingressctl.k8s.errors import ApiError
        from ingressctl.k8s.resource import CONFIGMAPS

        ref = self.settings.controller.nginx_configmaps
        if not ref:
            return None
        ns, name = ref.split("/", 1)
        try:
            cm = self._reads.take(("get", CONFIGMAPS.plural, ref),
                                  lambda: self.client.get(CONFIGMAPS, ns, name))
        except ApiError as e:
            raise StartupError(f"cannot read the NGINX ConfigMap {ref} (--nginx-configmaps): {e}") from e
        data = cm.get("data") or {}
        return {str(k): str(v) for k, v in data.items()}

    def _special_secret(self, ref: str | None) -> bytes | None:
        """Fetch and validate a special TLS Secret (default server, wildcard); returns its PEM content."""
        if not ref:
            return None
        from ingressctl.controller.secrets import tls_file_content, validate_tls_secret
        from ingressctl.k8s.errors import ApiError
        from ingressctl.secret_types import SecretValidationError

        ns, name = ref.split("/", 1)
        try:
            secret = self._reads.take(("get", SECRETS.plural, ref),
                                      lambda: self.client.get(SECRETS, ns, name))
        except ApiError as e:
            raise StartupError(f"cannot read the TLS Secret {ref}: {e}") from e
        try:
            validate_tls_secret(secret)
        except SecretValidationError as e:
            raise StartupError(f"the TLS Secret {ref} is invalid: {e}") from e
        return tls_file_content(secret)

    # ------------------------------------------------------------------------------------------ health

    def is_ready(self) -> bool:
        return (not self._stopping.is_set() and not self._nginx_failed and self.controller is not None
                and self.controller.is_ready())

    def is_alive(self) -> bool:
        return not self._nginx_failed and (self.controller is None or self.controller.is_alive())

    def _on_started_leading(self, stop: threading.Event) -> None:
        log.info("started leading")
        if self.controller is not None:
            self.controller.on_started_leading(stop)

    def _on_nginx_exit(self, returncode: int) -> None:
        """NGINX exited without being asked: restart it once (off the waiter thread)."""
        if self._stopping.is_set():
            return
        log.error("nginx exited unexpectedly", returncode=returncode)
        threading.Thread(target=self._restart_nginx, name="nginx-restart", daemon=True).start()

    def _restart_nginx(self) -> None:
        with self._restart_lock:
            if self._stopping.is_set() or self.manager.is_running():
                return
            try:
                self.manager.restart()
            except Exception as e:
                self._nginx_failed = True
                if self.metrics is not None:
                    self.metrics.startup.set_ready(False)
                log.error("nginx could not be restarted; readiness is off", error=str(e))
                return
            self.nginx_restarts += 1
            log.info("nginx restarted", restarts=self.nginx_restarts)

    # ------------------------------------------------------------------------------------------ stop

    def stop(self) -> None:
        """Shut down in order; safe to call more than once and after a failed start."""
        if self._stopped.is_set():
            return
        self._stopping.set()
        log.info("shutting down")
        if self.metrics is not None:
            self.metrics.startup.set_ready(False)
        steps: list[tuple[str, Any]] = [
            ("controller", lambda: self.controller.stop() if self.controller is not None else None),
            ("leader election", lambda: self.leader.stop() if self.leader is not None else None),
            ("nginx", lambda: self.manager.quit() if self.manager is not None and self.manager.is_running()
             else None),
            ("metrics", lambda: self.metrics.stop() if self.metrics is not None else None),
            ("events", lambda: self.recorder.stop() if self.recorder is not None else None),
            ("readiness server", lambda: self.health.stop() if self.health is not None else None),
            ("admission webhook", lambda: self.webhook.stop() if self.webhook is not None else None),
            ("leader election client", lambda: self.leader_client.close()
             if self.leader_client is not None and self.leader_client is not self.client else None),
        ]
        for what, step in steps:
            try:
                step()
            except Exception as e:
                log.error("error during shutdown", step=what, error=str(e))
        self._stopped.set()
        log.info("stopped")

    def request_stop(self) -> None:
        """Ask `wait()` to return (from a signal handler or another thread)."""
        self._stopping.set()
        if self.controller is not None:
            self.controller.request_stop()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a stop is requested."""
        return self._stopping.wait(timeout)


def process_started_at() -> float:
    """When this process started, on the time.monotonic() scale (from /proc; now if unavailable)."""
    now = time.monotonic()
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return now
    return now - age if 0 <= age < uptime else now


def run(settings: Settings) -> int:
    """Run the controller until SIGTERM or SIGINT; returns the process exit status."""
    app = App(settings, started_at=process_started_at())

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("signal received", signal=signal.Signals(signum).name)
        app.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        app.start()
    except StartupError as e:
        log.error("cannot start", error=str(e))
        return e.exit_status
    log.info("ingressctl running", ingress_class=settings.controller.ingress_class)
    while not app.wait(1.0):
        pass
    app.stop()
    return 0


# --------------------------------------------------------------------------------------------- latency labels


