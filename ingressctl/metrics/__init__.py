"""Prometheus metrics, NIC-compatible: every name NIC's Grafana dashboard uses, all with the label `class`.

`ControllerMetrics` builds every collector on one dedicated registry (no process/platform collectors) and
runs the metrics server and, with latency metrics, the syslog listener:

- `manager` (`ManagerMetricsCollector`): reloads; wire `manager.on_reload` as the NGINX Manager's hook.
- `controller` (`ControllerMetricsCollector`): `ingress_resources_total{type}`.
- `startup` (`StartupMetricsCollector`): readiness, time to ready, start-up status flush progress.
- `workqueue` (`WorkqueueMetricsProvider`): pass as the task queue's `metrics_provider`.
- `processes` and `nginx`: NGINX worker counts and stub_status, read on each scrape.
- `latency` and `syslog` (only with `enable_latency`): upstream latency from NGINX's access log.
- `watch_api_permissions(counts)`: `api_permission_denied_total`, the API requests the cluster refused.
- `watch_ingress_nginx_annotations(ingresses)`: `ingress_nginx_annotations{status,annotation}` (compat).

Layering: this package reads `ingressctl.nginx` (stub_status, /proc) and implements
`ingressctl.k8s.workqueue.MetricsProvider`; it never imports `ingressctl.controller`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from ingressctl.k8s.permissions import Permission
from ingressctl.metrics.api import ApiPermissionCollector
from ingressctl.metrics.common import CONTROLLER_NAMESPACE, NGINX_NAMESPACE, new_registry
from ingressctl.metrics.controller import ControllerMetricsCollector
from ingressctl.metrics.exposition import CONTENT_TYPE, generate_text
from ingressctl.metrics.ingress_nginx import IngressNginxAnnotationsCollector
from ingressctl.metrics.latency import (
    LATENCY_LOG_FORMAT,
    LatencyMetricsCollector,
    UpstreamServerLabels,
    latency_access_log,
)
from ingressctl.metrics.manager import ManagerMetricsCollector
from ingressctl.metrics.nginx import NginxStubStatusCollector, status_socket_path
from ingressctl.metrics.processes import NginxProcessesMetricsCollector
from ingressctl.metrics.server import MetricsServer
from ingressctl.metrics.startup import StartupMetricsCollector
from ingressctl.metrics.syslog import SyslogListener
from ingressctl.metrics.workqueue import WorkqueueMetricsProvider
from ingressctl.nginx.paths import SYSLOG_SOCKET_NAME
from ingressctl.nginx.stub_status import StubStatus

__all__ = [
    "CONTENT_TYPE",
    "CONTROLLER_NAMESPACE",
    "LATENCY_LOG_FORMAT",
    "NGINX_NAMESPACE",
    "SYSLOG_SOCKET_NAME",
    "ApiPermissionCollector",
    "ControllerMetrics",
    "ControllerMetricsCollector",
    "LatencyMetricsCollector",
    "ManagerMetricsCollector",
    "MetricsServer",
    "NginxProcessesMetricsCollector",
    "NginxStubStatusCollector",
    "StartupMetricsCollector",
    "SyslogListener",
    "UpstreamServerLabels",
    "WorkqueueMetricsProvider",
    "generate_text",
    "latency_access_log",
    "new_registry",
    "syslog_socket_path",
]


def syslog_socket_path(run_dir: str) -> str:
    """`<run_dir>/nginx-syslog.sock`, where the latency access log is sent."""
    return os.path.join(run_dir, SYSLOG_SOCKET_NAME)


class ControllerMetrics:
    """Every collector on one registry, the metrics server and (with latency metrics) the syslog listener."""

    def __init__(self, ingress_class: str, *, run_dir: str, host: str = "", port: int = 9113,
                 enable_latency: bool = False, master_pid: Callable[[], int | None] | None = None,
                 proc_root: str = "/proc", stub_status_fetch: Callable[[], StubStatus] | None = None,
                 registry: CollectorRegistry | None = None, stub_status: bool = True) -> None:
        """`master_pid` (e.g. `lambda: manager.master_pid`) limits worker counting to our NGINX;
        `stub_status_fetch` replaces the unix-socket fetch (tests); `stub_status=False` (an NGINX without
        the stub_status module) leaves the stub_status metrics out rather than report NGINX as down."""
        self.ingress_class = ingress_class
        self.registry = registry if registry is not None else new_registry()
        self.manager = ManagerMetricsCollector(self.registry, ingress_class)
        self.controller = ControllerMetricsCollector(self.registry, ingress_class)
        self.startup = StartupMetricsCollector(self.registry, ingress_class)
        self.workqueue = WorkqueueMetricsProvider(self.registry, ingress_class)
        self.processes = NginxProcessesMetricsCollector(ingress_class, proc_root=proc_root,
                                                        master_pid=master_pid)
        self.registry.register(self.processes)
        self.nginx: NginxStubStatusCollector | None = None
        if stub_status:
            self.nginx = NginxStubStatusCollector(ingress_class, status_socket_path(run_dir),
                                                  fetch=stub_status_fetch)
            self.registry.register(self.nginx)
        self.latency: LatencyMetricsCollector | None = None
        self.syslog: SyslogListener | None = None
        if enable_latency:
            self.latency = LatencyMetricsCollector(self.registry, ingress_class)
            self.syslog = SyslogListener(syslog_socket_path(run_dir), self.latency.record_latency)
        self.server = MetricsServer(self.registry, host=host, port=port)

    def watch_ingress_nginx_annotations(self, ingresses: Callable[[], Iterable[Mapping[str, Any]]], *,
                                        snippets_enabled: bool = False) -> None:
        """Export the ingress-nginx annotations of the served Ingresses (`--ingress-nginx-compat`)."""
        self.registry.register(IngressNginxAnnotationsCollector(self.ingress_class, ingresses,
                                                                snippets_enabled=snippets_enabled))

    def watch_api_permissions(self, counts: Callable[[], Mapping[Permission, int]]) -> None:
        """Export the refused API requests (a `KubeClient`'s `permission_denials.counts`)."""
        self.registry.register(ApiPermissionCollector(self.ingress_class, counts))

    def start(self) -> None:
        """Start the syslog listener (if any), then the HTTP server."""
        if self.syslog is not None:
            self.syslog.start()
        try:
            self.server.start()
        except BaseException:
            if self.syslog is not None:
                self.syslog.stop()
            raise

    def stop(self) -> None:
        self.server.stop()
        if self.syslog is not None:
            self.syslog.stop()
