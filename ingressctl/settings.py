"""The controller's settings: one frozen tree built once from the command line and the environment.

Nothing in the settings changes after start-up; every component receives the part it needs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class KubeSettings:
    kubeconfig: str | None = None
    watch_namespaces: tuple[str, ...] = ()  # empty: all namespaces
    # Namespaces whose Secrets are watched; None: the same as watch_namespaces (NIC's default).
    watch_secret_namespaces: tuple[str, ...] | None = None
    pod_namespace: str = "default"
    pod_name: str = ""


@dataclass(frozen=True)
class NginxSettings:
    binary: str = "nginx"
    conf_dir: str = "/etc/nginx"
    run_dir: str = "/var/lib/nginx"
    reload_timeout_ms: int = 60000
    http_port: int = 80
    https_port: int = 443
    health_status: bool = False
    health_status_uri: str = "/nginx-health"
    status: bool = True
    status_port: int = 8080
    status_allow_cidrs: tuple[str, ...] = ("127.0.0.1", "::1")
    main_template_path: str | None = None
    ingress_template_path: str | None = None
    transportserver_template_path: str | None = None
    virtualserver_template_path: str | None = None
    debug: bool = False  # run an NGINX built with debug logging (`nginx-debug`, NIC's -nginx-debug)
    disable_ipv6: bool = False  # no IPv6 listeners even where the host supports IPv6
    default_server_access_log_off: bool = False  # the ConfigMap key of the same name overrides it
    dynamic_upstreams: bool = True  # no reloads for endpoint changes (where the dynamic-peers module is)
    dynamic_routes: bool = True  # plain Ingress hosts in the routes module's table (where it is installed)
    # Certificates loaded at handshakes cached by the certificate-cache module (NGINX < 1.27.4, if installed).
    certificate_cache: bool = True


@dataclass(frozen=True)
class ControllerSettings:
    ingress_class: str = "nginx"
    nginx_configmaps: str | None = None  # "namespace/name"
    default_server_tls_secret: str | None = None
    wildcard_tls_secret: str | None = None
    report_ingress_status: bool = False
    external_service: str | None = None
    enable_snippets: bool = False
    # VirtualServer and TransportServer informers (NIC's -enable-custom-resources).
    enable_custom_resources: bool = True
    enable_directive_autoadjust: bool = False  # NIC's -enable-directive-autoadjust (proxy buffer settings)
    allow_empty_ingress_host: bool = False  # a rule without a host claims the class-wide catch-all
    # Also serve ingress-nginx's IngressClasses and read the nginx.ingress.kubernetes.io/* annotations.
    ingress_nginx_compat: bool = False
    # Ingress TLS certificates loaded at handshakes instead of at every reload (configs.certificate_map).
    # None: when NGINX caches them (ssl_certificate_cache, 1.27.4+, or the certificate-cache module).
    load_certificates_per_handshake: bool | None = None
    global_configuration: str | None = None  # "namespace/name" of the GlobalConfiguration (TransportServers)
    # TLS passthrough: a stream server owns this port and splits connections by SNI.
    enable_tls_passthrough: bool = False
    tls_passthrough_port: int = 443
    # Developer setting: the pre-5.5 start-up (per-item host rebuild, serial status before readiness).
    legacy_startup: bool = False
    # Processes rendering the configuration at start-up (configs.prerender); 0: one per usable CPU, up to 4.
    startup_render_processes: int = 0


@dataclass(frozen=True)
class LeaderElectionSettings:
    enabled: bool = True
    lock_name: str = "nginx-ingress-leader-election"
    lease_duration_s: float = 30.0
    renew_deadline_s: float = 15.0
    retry_period_s: float = 5.0


@dataclass(frozen=True)
class ServingSettings:
    ready_status: bool = True
    ready_status_port: int = 8081
    enable_prometheus_metrics: bool = False
    prometheus_metrics_listen_port: int = 9113
    enable_latency_metrics: bool = False


@dataclass(frozen=True)
class AdmissionWebhookSettings:
    """The validating admission webhook (`POST /validate` over HTTPS); TLS from files or a Secret."""

    enabled: bool = False
    port: int = 8443
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    tls_secret: str | None = None  # "namespace/name" of a kubernetes.io/tls Secret


@dataclass(frozen=True)
class LogSettings:
    format: str = "text"  # text | json | glog
    level: str = "info"
    include_year: bool = False  # glog format: the year in each line's header


@dataclass(frozen=True)
class Settings:
    kube: KubeSettings = field(default_factory=KubeSettings)
    nginx: NginxSettings = field(default_factory=NginxSettings)
    controller: ControllerSettings = field(default_factory=ControllerSettings)
    leader_election: LeaderElectionSettings = field(default_factory=LeaderElectionSettings)
    serving: ServingSettings = field(default_factory=ServingSettings)
    admission_webhook: AdmissionWebhookSettings = field(default_factory=AdmissionWebhookSettings)
    log: LogSettings = field(default_factory=LogSettings)


def pod_identity(environ: dict[str, str] | None = None) -> tuple[str, str]:
    """Return (POD_NAMESPACE, POD_NAME), defaulting to ("default", the host name) outside a Pod."""
    env = os.environ if environ is None else environ
    return env.get("POD_NAMESPACE", "default"), env.get("POD_NAME") or os.uname().nodename
