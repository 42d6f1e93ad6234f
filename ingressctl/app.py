"""Composition root: builds the controller's parts from `Settings`, starts them in order, stops them in
reverse.

Start order (NIC's main.go, nic-behaviour.md 9.2, DESIGN.md section 5):
1. Kubernetes client from the kubeconfig (or in-cluster config).
2. The IngressClass named by `--ingress-class` must exist with `spec.controller:
   nginx.org/ingress-controller`; otherwise start-up fails with a clear message (NIC exits fatally too).
3. The NGINX ConfigMap (`--nginx-configmaps`) and the special TLS Secrets (`--default-server-tls-secret`,
   `--wildcard-tls-secret`) are read and validated; a missing or invalid one is fatal.
4. The Manager writes the main config and starts NGINX, waiting until config version 0 is served.
5. Configurator, event recorder, status updater, leader elector (Lease in POD_NAMESPACE), controller, and the
   readiness server. Leader election starts before the informer caches sync, as in NIC.
6. The controller starts its informers, waits for their caches and runs its sync thread.

Shutdown (`stop()`, on SIGTERM/SIGINT): readiness off, stop taking work (the task in progress finishes), stop
informers, quit NGINX gracefully, release the lease, flush events, stop the servers. `run()` returns 0.

If NGINX dies on its own, the failure is logged and NGINX is restarted once; if that fails, readiness and
liveness turn off (the kubelet restarts the Pod) and the controller stops changing the config.
Every start-up failure raises `StartupError` with a message for users; `run()` logs it and returns 1.
"""

from __future__ import annotations

import dataclasses
import signal
import threading
from types import FrameType
from typing import Any

from ingressctl.logging import get_logger
from ingressctl.settings import Settings

log = get_logger(__name__)

NGINX_CONTROLLER = "nginx.org/ingress-controller"


class StartupError(Exception):
    """The controller cannot start; the message says why and what to do."""


class App:
    """The running controller: every part, started in order and stopped in reverse."""

    def __init__(self, settings: Settings, *, client: Any = None, health_host: str = "") -> None:
        self.settings = settings
        self._health_host = health_host
        self.client: Any = client
        self.manager: Any = None
        self.configurator: Any = None
        self.controller: Any = None
        self.recorder: Any = None
        self.leader: Any = None
        self.health: Any = None
        self.status: Any = None
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._nginx_failed = False
        self._restart_lock = threading.Lock()
        self.nginx_restarts = 0

    # ------------------------------------------------------------------------------------------ start

    def start(self) -> None:
        """Build and start everything; raises StartupError (after cleaning up) on a fatal problem."""
        try:
            self._start()
        except StartupError:
            self.stop()
            raise
        except Exception as e:
            self.stop()
            raise StartupError(f"start-up failed: {e}") from e

    def _start(self) -> None:
        from ingressctl.configs.configmaps import StaticConfigParams, parse_config_map
        from ingressctl.configs.configurator import Configurator
        from ingressctl.configs.templates import TemplateError, TemplateExecutor
        from ingressctl.controller.configuration import Configuration
        from ingressctl.controller.controller import ControllerOptions, LoadBalancerController
        from ingressctl.controller.secrets import LocalSecretStore
        from ingressctl.controller.status import StatusUpdater
        from ingressctl.health import HealthServer
        from ingressctl.k8s.client import KubeClient, KubeConfigError
        from ingressctl.k8s.events import EventRecorder
        from ingressctl.nginx.manager import Manager, NginxStartError

        s = self.settings
        if self.client is None:
            try:
                self.client = KubeClient.from_kubeconfig(s.kube.kubeconfig)
            except KubeConfigError as e:
                raise StartupError(f"cannot load the Kubernetes configuration: {e}") from e
        self._validate_ingress_class()
        config_data = self._read_config_map()
        params, errors = parse_config_map(config_data)
        for key, err in errors:
            log.warning("invalid ConfigMap value ignored", key=key, error=err)

        try:
            self.manager = Manager(binary=s.nginx.binary, conf_dir=s.nginx.conf_dir, run_dir=s.nginx.run_dir,
                                   reload_timeout_ms=s.nginx.reload_timeout_ms)
        except ValueError as e:
            raise StartupError(f"invalid NGINX paths: {e}") from e
        static = StaticConfigParams.from_settings(s)
        default_pem = self._special_secret(s.controller.default_server_tls_secret, "default")
        wildcard_pem = self._special_secret(s.controller.wildcard_tls_secret, "wildcard")
        static = dataclasses.replace(static, default_server_tls_path=default_pem,
                                     wildcard_tls_path=wildcard_pem)
        try:
            templates = TemplateExecutor(s.nginx.main_template_path, s.nginx.ingress_template_path)
        except TemplateError as e:
            raise StartupError(f"invalid template: {e}") from e
        # The Configurator writes nginx.conf (and removes leftovers in conf.d): NGINX starts with version 0
        # and no Ingress; the first reload comes after the informers have synced and the queue has drained.
        self.configurator = Configurator(self.manager, static, params, templates,
                                         is_wildcard_enabled=bool(wildcard_pem))
        try:
            self.manager.start(on_exit=self._on_nginx_exit)
        except NginxStartError as e:
            raise StartupError(f"NGINX did not start: {e}") from e
        self.recorder = EventRecorder(self.client, component="nginx-ingress-controller", host=s.kube.pod_name)
        self.recorder.start()

        is_leader = None
        if s.leader_election.enabled:
            from ingressctl.k8s.leader import LeaderElector

            le = s.leader_election
            self.leader = LeaderElector(
                self.client, namespace=s.kube.pod_namespace, name=le.lock_name, identity=s.kube.pod_name,
                lease_duration=le.lease_duration_s, renew_deadline=le.renew_deadline_s,
                retry_period=le.retry_period_s, on_started_leading=self._on_started_leading,
                on_stopped_leading=lambda: log.info("stopped leading"),
                on_new_leader=lambda who: log.info("new leader", leader=who),
            )
            is_leader = self.leader.is_leader

        def get_cached(key: str) -> dict[str, Any] | None:
            return self.controller.get_object("ingresses", key) if self.controller is not None else None

        self.status = StatusUpdater(self.client, get_cached=get_cached,
                                    report_ingress_status=s.controller.report_ingress_status,
                                    is_leader=is_leader)
        if config_data and "external-status-address" in config_data:
            self.status.save_status_from_external_status(str(config_data["external-status-address"] or ""))
        configuration = Configuration(ingress_class=s.controller.ingress_class,
                                      legacy_startup=s.controller.legacy_startup,
                                      snippets_enabled=s.controller.enable_snippets)
        options = ControllerOptions(
            ingress_class=s.controller.ingress_class, watch_namespaces=s.kube.watch_namespaces,
            nginx_configmaps=s.controller.nginx_configmaps, pod_namespace=s.kube.pod_namespace,
            external_service=s.controller.external_service,
            report_ingress_status=s.controller.report_ingress_status,
            leader_election=s.leader_election.enabled, legacy_startup=s.controller.legacy_startup,
        )
        self.controller = LoadBalancerController(
            self.client, configuration=configuration, configurator=self.configurator,
            secret_store=LocalSecretStore(self.manager), status_updater=self.status, recorder=self.recorder,
            options=options, is_leader=is_leader, manager=self.manager,
        )
        if s.serving.ready_status:
            self.health = HealthServer(is_ready=self.is_ready, is_alive=self.is_alive, host=self._health_host,
                                       port=s.serving.ready_status_port)
            self.health.start()
        if self.leader is not None:
            self.leader.start()
        if not self.controller.start():
            if self._stopping.is_set():
                return
            raise StartupError("the informer caches did not sync")

    def _validate_ingress_class(self) -> None:
        """NIC's mustValidateIngressClass."""
        from ingressctl.k8s.client import ApiError
        from ingressctl.k8s.resource import INGRESSCLASSES

        name = self.settings.controller.ingress_class
        try:
            ic = self.client.get(INGRESSCLASSES, None, name)
        except ApiError as e:
            if e.is_not_found:
                raise StartupError(
                    f"IngressClass {name!r} does not exist: create it with spec.controller "
                    f"{NGINX_CONTROLLER!r}, or pass --ingress-class with the name of one that does") from e
            raise StartupError(f"cannot read IngressClass {name!r}: {e}") from e
        controller = (ic.get("spec") or {}).get("controller")
        if controller != NGINX_CONTROLLER:
            raise StartupError(f"IngressClass {name!r} has spec.controller {controller!r}; "
                               f"this controller serves {NGINX_CONTROLLER!r}")

    def _read_config_map(self) -> dict[str, str] | None:
        from ingressctl.k8s.client import ApiError
        from ingressctl.k8s.resource import CONFIGMAPS

        ref = self.settings.controller.nginx_configmaps
        if not ref:
            return None
        ns, name = ref.split("/", 1)
        try:
            cm = self.client.get(CONFIGMAPS, ns, name)
        except ApiError as e:
            raise StartupError(f"cannot read the NGINX ConfigMap {ref} (--nginx-configmaps): {e}") from e
        data = cm.get("data") or {}
        return {str(k): str(v) for k, v in data.items()}

    def _special_secret(self, ref: str | None, file_name: str) -> str:
        """Fetch, validate and write a special TLS Secret (default server, wildcard); returns the PEM path."""
        if not ref:
            return ""
        from ingressctl.controller.secrets import SecretValidationError, tls_file_content, validate_tls_secret
        from ingressctl.k8s.client import ApiError
        from ingressctl.k8s.resource import SECRETS

        ns, name = ref.split("/", 1)
        try:
            secret = self.client.get(SECRETS, ns, name)
        except ApiError as e:
            raise StartupError(f"cannot read the TLS Secret {ref}: {e}") from e
        try:
            validate_tls_secret(secret)
        except SecretValidationError as e:
            raise StartupError(f"the TLS Secret {ref} is invalid: {e}") from e
        return str(self.manager.create_secret(file_name, tls_file_content(secret), 0o600))

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
        steps: list[tuple[str, Any]] = [
            ("controller", lambda: self.controller.stop() if self.controller is not None else None),
            ("nginx", lambda: self.manager.quit() if self.manager is not None and self.manager.is_running()
             else None),
            ("leader election", lambda: self.leader.stop() if self.leader is not None else None),
            ("events", lambda: self.recorder.stop() if self.recorder is not None else None),
            ("readiness server", lambda: self.health.stop() if self.health is not None else None),
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


def run(settings: Settings) -> int:
    """Run the controller until SIGTERM or SIGINT; returns the process exit status."""
    app = App(settings)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("signal received", signal=signal.Signals(signum).name)
        app.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        app.start()
    except StartupError as e:
        log.error("cannot start", error=str(e))
        return 1
    log.info("ingressctl running", ingress_class=settings.controller.ingress_class)
    while not app.wait(1.0):
        pass
    app.stop()
    return 0
