"""What the controller takes from the settings, and the counters it keeps (for tests, metrics, benchmarks)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    # Processes rendering the configuration at start-up (configs.prerender); 0: `startup_processes()`.
    startup_render_processes: int = 0
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
    rendered_ahead: int = 0             # start-up renders done by other processes (configs.prerender)
