"""ConfigMap parameters (NIC's `ConfigParams` / `ParseConfigMap`) and the static parameters from flags.

Guarantees:
- `ConfigParams()` carries NIC's defaults for every key the templates use.
- `parse_config_map` never raises: a bad value keeps the default for that key and is reported as
  `(key, error)`; an error in any HSTS key keeps the defaults of ALL HSTS keys (as NIC). Unlike NIC, timeouts
  and sizes are validated in the ConfigMap too (they are written into the config). Every value that reaches
  a template has passed a strict parser, except the snippet and template keys, which are NGINX configuration
  (or Jinja2) by definition and, as in NIC, are not gated by `--enable-snippets`: the ConfigMap belongs to the
  cluster operator.
- `generate_main_config` is a pure function of the static and ConfigMap parameters.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ingressctl.configs import directive_values, parsing
from ingressctl.configs.capability_params import CAPABILITY_KEYS, check_otel, drop_unloadable
from ingressctl.configs.config import MainConfig, OtelConfig, ProxyDefaults
from ingressctl.configs.directive_values import AddHeader, StickyCookie
from ingressctl.nginx.capabilities import UNKNOWN_NGINX, Capabilities
from ingressctl.settings import Settings


@dataclass(frozen=True)
class ConfigParams:
    """Parameters from the NGINX ConfigMap; Ingress annotations override the per-Ingress ones."""

    # Per location
    proxy_connect_timeout: str = "60s"
    proxy_read_timeout: str = "60s"
    proxy_send_timeout: str = "60s"
    client_max_body_size: str = "1m"
    proxy_buffering: bool = True
    proxy_buffers: str = ""
    proxy_buffer_size: str = ""
    proxy_max_temp_file_size: str = ""
    location_snippets: tuple[str, ...] = ()
    proxy_set_headers: tuple[tuple[str, str | None], ...] = ()  # annotation only: (name, value or None)
    client_body_buffer_size: str = ""  # ConfigMap: also at http level
    proxy_busy_buffers_size: str = ""
    proxy_next_upstream: str = ""  # annotation only: space-separated conditions
    proxy_next_upstream_timeout: str = ""  # annotation only
    proxy_next_upstream_tries: int = 0  # annotation only; 0 = NGINX's default (unlimited)
    rewrite_target: str = ""  # annotation only
    # ingress-nginx annotations only (kinds/ingress/ingress_nginx): "" = not set
    proxy_request_buffering: str = ""  # "on" / "off"
    upstream_vhost: str = ""  # the Host header sent upstream ("" = $host)
    return_redirect: tuple[int, str] = (0, "")  # every location answers `return <code> "<url>"`
    access_rules: tuple[tuple[str, str], ...] = ()  # ("allow" | "deny", source) in order
    limit_conn: int = 0  # `limit_conn` per client address (0 = none)
    limit_exempt: tuple[str, ...] = ()  # clients not rate- or connection-limited
    ingress_nginx_use_regex: bool = False  # `use-regex`: the host's paths are regexes
    ingress_nginx_www_redirect: bool = False  # `from-to-www-redirect`
    ingress_nginx_default_backend: str = ""  # `default-backend`: a Service of the Ingress's namespace
    ingress_nginx_allowed_response_headers: tuple[str, ...] = ()  # `global-allowed-response-headers`
    ingress_nginx_rewrite: bool = False  # `rewrite_target` is ingress-nginx's (whole URI, `(?i)<path>`)
    ssl_server_name: bool = True  # SNI to HTTPS backends (False: ingress-nginx's proxy-ssl-server-name off)
    # Per server
    server_tokens: str = "on"
    http2: bool = False
    redirect_to_https: bool = False
    ssl_redirect: bool = True
    http_redirect_code: int = 301  # the ssl-redirect and redirect-to-https returns
    force_ssl_redirect: bool = False  # ingress-nginx annotation only: redirect without a certificate too
    add_headers: tuple[AddHeader, ...] = ()  # annotation only: server (a minion's: its locations)
    app_root: str = ""  # annotation only
    proxy_redirect: tuple[str, str] = ("", "")  # annotation only: (from, to); ("off", "") / ("default", "")
    server_ssl_ciphers: str = ""  # annotation only (ssl_ciphers of the SSL server)
    server_ssl_prefer_server_ciphers: bool = False  # annotation only
    sticky_cookies: tuple[StickyCookie, ...] = ()  # annotation only; needs an NGINX with OSS `sticky`
    server_snippets: tuple[str, ...] = ()
    proxy_hide_headers: tuple[str, ...] = ()
    proxy_pass_headers: tuple[str, ...] = ()
    hsts: bool = False
    hsts_max_age: int = 2592000
    hsts_include_subdomains: bool = False
    hsts_behind_proxy: bool = False
    proxy_protocol: bool = False
    real_ip_header: str = ""
    set_real_ip_from: tuple[str, ...] = ()
    real_ip_recursive: bool = False
    ports: tuple[int, ...] = ()  # annotation only; () -> the --default-http-listener-port
    ssl_ports: tuple[int, ...] = ()  # annotation only; () -> the --default-https-listener-port
    basic_auth_secret: str = ""  # annotation only
    basic_auth_realm: str = ""  # annotation only
    # Rate limiting (annotations only; NIC's defaults)
    limit_req_rate: str = ""
    limit_req_key: str = "${binary_remote_addr}"
    limit_req_zone_size: str = "10m"
    limit_req_delay: int = 0
    limit_req_no_delay: bool = False
    limit_req_burst: int = 0
    limit_req_dry_run: bool = False
    limit_req_log_level: str = "error"
    limit_req_reject_code: int = 429
    limit_req_scale: bool = False
    # Per upstream
    lb_method: str = "random two least_conn"
    keepalive: int = 0
    max_fails: int = 1
    max_conns: int = 0
    fail_timeout: str = "10s"
    upstream_zone_size: str = ""  # "" = sized from the servers (NIC: 256k per upstream)
    use_cluster_ip: bool = False  # annotation only; the controller resolves the ClusterIP
    # Default server
    default_server_return: str = "404"
    default_server_access_log_off: bool | None = None  # None: not in the ConfigMap, the flag decides
    # Main and http level
    worker_processes: str = "auto"
    worker_connections: int = 1024
    worker_rlimit_nofile: int = 0
    worker_shutdown_timeout: str = ""
    error_log_level: str = "notice"
    access_log_off: bool = False
    log_format: tuple[str, ...] = ()
    keepalive_timeout: str = "75s"
    keepalive_requests: int = 1000
    server_names_hash_bucket_size: int = 256
    server_names_hash_max_size: int = 1024
    map_hash_bucket_size: int = 256
    map_hash_max_size: int = 2048
    variables_hash_bucket_size: int = 256
    variables_hash_max_size: int = 1024
    ssl_protocols: str = "TLSv1.2 TLSv1.3"
    ssl_ciphers: str = ""
    ssl_prefer_server_ciphers: bool = False
    http_add_headers: tuple[AddHeader, ...] = ()  # ConfigMap add-header: http level
    http_add_header_inherit: str = ""  # ConfigMap add-header-inherit: http level (NGINX 1.29.3+)
    add_header_inherit: str = ""  # annotation only: server (a minion's: its locations)
    custom_http_errors: tuple[int, ...] = ()  # annotation only: intercepted codes -> spec.defaultBackend
    # OpenTelemetry (NGINX's otel module): rendered only with an endpoint and a NGINX that has the module
    otel_exporter_endpoint: str = ""
    otel_exporter_header_name: str = ""
    otel_exporter_header_value: str = ""
    otel_service_name: str = ""
    otel_trace_in_http: bool = False
    ssl_dhparam_file: str = ""  # PEM content; the Configurator writes it to secrets/dhparam.pem
    access_log: str = ""  # "" -> /dev/stdout main; else a syslog destination
    log_format_escaping: str = ""
    worker_cpu_affinity: str = ""
    main_snippets: tuple[str, ...] = ()
    http_snippets: tuple[str, ...] = ()
    stream_snippets: tuple[str, ...] = ()  # in the stream {} block (NIC's TCP/UDP example uses it)
    # Template overrides (None: the built-in or --*-template-path template)
    main_template: str | None = None
    ingress_template: str | None = None


@dataclass(frozen=True)
class StaticConfigParams:
    """Parameters fixed at start-up, from flags. Paths are absolute."""

    http_port: int = 80
    https_port: int = 443
    health_status: bool = False
    health_status_uri: str = "/nginx-health"
    nginx_status: bool = True
    nginx_status_port: int = 8080
    nginx_status_allow_cidrs: tuple[str, ...] = ("127.0.0.1", "::1")
    conf_dir: str = "/etc/nginx"
    run_dir: str = "/var/lib/nginx"
    default_server_tls_path: str = ""  # PEM of the default server's certificate; "" -> reject handshakes
    wildcard_tls_path: str = ""  # PEM for TLS hosts without secretName; "" -> such hosts reject handshakes
    enable_snippets: bool = False
    ingress_nginx_compat: bool = False  # --ingress-nginx-compat: read nginx.ingress.kubernetes.io/*
    disable_ipv6: bool = False
    default_server_access_log_off: bool = False  # the default; the ConfigMap key overrides it
    secrets_dir: str = ""  # "" -> <conf_dir>/secrets
    worker_user: str = ""  # `user` for worker processes; set it when NGINX's master runs as root
    enable_directive_autoadjust: bool = False  # rebalance proxy buffer settings NGINX would refuse
    # The running NGINX's version and modules; the default knows no version (no directive newer than 1.22).
    capabilities: Capabilities = UNKNOWN_NGINX
    stream: bool = False  # render a stream {} block (TransportServers are served)
    stream_module_path: str = ""  # the dynamic stream module to load_module ("" when built in)
    dynamic_peers_module_path: str = ""  # the dynamic-peers module: endpoint changes without reloads
    upstream_front_module_path: str = ""  # the upstream-front module: proxy_pass finds its upstream at once
    include_scoped_module_path: str = ""  # the scoped-include module: each conf.d file's upstreams to itself
    escape_uri_module_path: str = ""  # the escape-URI module: $ingressctl_escaped_request_uri (escaped_uri)
    routes_module_path: str = ""  # the routes module: plain Ingress hosts as data (configs.routes)
    # The certificate-cache module (NGINX < 1.27.4): caches the certificates loaded at handshakes.
    certificate_cache_module_path: str = ""
    tls_passthrough: bool = False  # HTTPS servers terminate TLS on passthrough_socket() behind the SNI split
    # Load TLS certificates at handshakes instead of at reloads (configs.certificate_map).
    certificates_per_handshake: bool = False
    cache_dir: str = ""  # the cache Policies' zones live in <cache_dir>/<zone>; "" -> <run_dir>/cache

    def passthrough_socket(self) -> str:
        """Where HTTPS servers terminate TLS when TLS passthrough owns the HTTPS port."""
        return f"unix:{self.run_dir}/passthrough-https.sock" if self.tls_passthrough else ""

    @classmethod
    def from_settings(cls, settings: Settings) -> StaticConfigParams:
        """From the command line; IPv6 listeners only where the host supports IPv6. The default server and
        wildcard certificate paths stay "" until the controller has written those Secrets."""
        n = settings.nginx
        return cls(
            http_port=n.http_port, https_port=n.https_port, health_status=n.health_status,
            health_status_uri=n.health_status_uri, nginx_status=n.status, nginx_status_port=n.status_port,
            nginx_status_allow_cidrs=n.status_allow_cidrs, conf_dir=n.conf_dir, run_dir=n.run_dir,
            enable_snippets=settings.controller.enable_snippets,
            ingress_nginx_compat=settings.controller.ingress_nginx_compat,
            enable_directive_autoadjust=settings.controller.enable_directive_autoadjust,
            disable_ipv6=n.disable_ipv6 or not ipv6_available(),
            default_server_access_log_off=n.default_server_access_log_off,
            cache_dir=prepare_cache_dir(n.run_dir),
        )


def _otel(static: StaticConfigParams, config: ConfigParams) -> OtelConfig | None:
    """The main config's OpenTelemetry part: only with an endpoint and an NGINX that has the module."""
    if not config.otel_exporter_endpoint or not static.capabilities.has("otel"):
        return None
    return OtelConfig(module_path=static.capabilities.load_module("otel"),
                      endpoint=config.otel_exporter_endpoint, header_name=config.otel_exporter_header_name,
                      header_value=config.otel_exporter_header_value, service_name=config.otel_service_name,
                      trace=config.otel_trace_in_http)


def ipv6_available() -> bool:
    """True if this host can open an IPv6 socket (NGINX's `listen [::]:port` fails otherwise)."""
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM):
            return True
    except OSError:
        return False


def _bool(v: str) -> bool:
    return parsing.parse_bool(v.strip())


MIN_WORKER_CONNECTIONS = 64
"""The least `worker-connections` accepted: NGINX needs one per listening socket before any client."""


def _int(minimum: int, maximum: int = 2**31 - 1) -> Callable[[str], int]:
    return lambda v: parsing.parse_int(v, minimum=minimum, maximum=maximum)


def _text(v: str) -> str:
    return v


# ConfigMap key -> (ConfigParams field, parser). Keys not listed are ignored, as NIC does.
CONFIG_MAP_KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "proxy-connect-timeout": ("proxy_connect_timeout", parsing.parse_time),
    "proxy-read-timeout": ("proxy_read_timeout", parsing.parse_time),
    "proxy-send-timeout": ("proxy_send_timeout", parsing.parse_time),
    "client-max-body-size": ("client_max_body_size", parsing.parse_offset),
    "proxy-buffering": ("proxy_buffering", _bool),
    "proxy-buffers": ("proxy_buffers", parsing.parse_proxy_buffers),
    "proxy-buffer-size": ("proxy_buffer_size", parsing.parse_size),
    "proxy-max-temp-file-size": ("proxy_max_temp_file_size", parsing.parse_size),
    "proxy-busy-buffers-size": ("proxy_busy_buffers_size", parsing.parse_size),
    "client-body-buffer-size": ("client_body_buffer_size", parsing.parse_size),
    "add-header": ("http_add_headers", directive_values.parse_add_headers),
    "http-redirect-code": ("http_redirect_code", directive_values.parse_http_redirect_code),
    "proxy-hide-headers": ("proxy_hide_headers", parsing.parse_header_names),
    "proxy-pass-headers": ("proxy_pass_headers", parsing.parse_header_names),
    "location-snippets": ("location_snippets", parsing.parse_lines),
    "server-tokens": ("server_tokens", parsing.parse_server_tokens),
    "http2": ("http2", _bool),
    "redirect-to-https": ("redirect_to_https", _bool),
    "ssl-redirect": ("ssl_redirect", _bool),
    "hsts": ("hsts", _bool),
    "hsts-max-age": ("hsts_max_age", _int(0, 2**63 - 1)),
    "hsts-include-subdomains": ("hsts_include_subdomains", _bool),
    "hsts-behind-proxy": ("hsts_behind_proxy", _bool),
    "proxy-protocol": ("proxy_protocol", _bool),
    "real-ip-header": ("real_ip_header", parsing.parse_real_ip_header),
    "set-real-ip-from": ("set_real_ip_from", parsing.parse_cidr_list),
    "real-ip-recursive": ("real_ip_recursive", _bool),
    "server-snippets": ("server_snippets", parsing.parse_lines),
    "lb-method": ("lb_method", parsing.parse_lb_method),
    "keepalive": ("keepalive", _int(0, 100000)),
    "max-fails": ("max_fails", _int(0, 100000)),
    "fail-timeout": ("fail_timeout", parsing.parse_time),
    "upstream-zone-size": ("upstream_zone_size", lambda v: parsing.parse_zone_size(v, allow_zero=True)),
    "default-server-return": ("default_server_return", parsing.parse_default_server_return),
    "default-server-access-log-off": ("default_server_access_log_off", _bool),
    "worker-processes": ("worker_processes", parsing.parse_worker_processes),
    # NGINX refuses fewer connections than it has listening sockets (HTTP, HTTPS, IPv6, status, listeners).
    "worker-connections": ("worker_connections", _int(MIN_WORKER_CONNECTIONS, 1 << 20)),
    "worker-rlimit-nofile": ("worker_rlimit_nofile", _int(1, 1 << 24)),
    "worker-shutdown-timeout": ("worker_shutdown_timeout", parsing.parse_time),
    "worker-cpu-affinity": ("worker_cpu_affinity", parsing.parse_worker_cpu_affinity),
    "error-log-level": ("error_log_level", parsing.parse_log_level),
    "access-log": ("access_log", parsing.parse_access_log),
    "access-log-off": ("access_log_off", _bool),
    "log-format": ("log_format", parsing.parse_log_format),
    "log-format-escaping": ("log_format_escaping", parsing.parse_log_format_escaping),
    "keepalive-timeout": ("keepalive_timeout", parsing.parse_time),
    "keepalive-requests": ("keepalive_requests", _int(0)),
    "server-names-hash-bucket-size": ("server_names_hash_bucket_size", _int(1, 1 << 16)),
    "server-names-hash-max-size": ("server_names_hash_max_size", _int(1, 1 << 24)),
    "map-hash-bucket-size": ("map_hash_bucket_size", _int(1, 1 << 16)),
    "map-hash-max-size": ("map_hash_max_size", _int(1, 1 << 24)),
    "variables-hash-bucket-size": ("variables_hash_bucket_size", _int(1, 1 << 16)),
    "variables-hash-max-size": ("variables_hash_max_size", _int(1, 1 << 24)),
    "ssl-protocols": ("ssl_protocols", parsing.parse_ssl_protocols),
    "ssl-ciphers": ("ssl_ciphers", parsing.parse_ssl_ciphers),
    "ssl-prefer-server-ciphers": ("ssl_prefer_server_ciphers", _bool),
    "ssl-dhparam-file": ("ssl_dhparam_file", parsing.parse_dhparam),
    "main-snippets": ("main_snippets", parsing.parse_lines),
    "http-snippets": ("http_snippets", parsing.parse_lines),
    "stream-snippets": ("stream_snippets", parsing.parse_lines),
    "main-template": ("main_template", _text),
    "ingress-template": ("ingress_template", _text),
    **CAPABILITY_KEYS,
}
# NGINX Plus keys: on open-source NGINX NIC reports them as invalid values (an InvalidValue event).
PLUS_ONLY_KEYS = frozenset({
    "resolver-addresses", "resolver-ipv6", "resolver-valid", "resolver-timeout",
    "zone-sync", "zone-sync-port",
    "zone-sync-resolver-addresses", "zone-sync-resolver-ipv6", "zone-sync-resolver-valid",
    # OIDC key-value zones (NIC 5.3/5.4)
    *(f"oidc-{t}-{what}" for t in ("pkce", "id-tokens", "access-tokens", "refresh-tokens", "sids")
      for what in ("timeout", "zone-size")),
})
# An error in any of these keeps the defaults of all of them (NIC).
HSTS_KEYS = ("hsts", "hsts-max-age", "hsts-include-subdomains", "hsts-behind-proxy")


def value_error(value: str, detail: str) -> str:
    """`invalid value "<value>": <detail>` (the value as Go's %q would show it, cut at 200 characters)."""
    shown = value if len(value) <= 200 else value[:200] + "..."
    return f"invalid value {json.dumps(shown, ensure_ascii=False)}: {detail}"


STREAM_OFF = ("ignored: this controller renders no stream {} block (it serves TransportServers only with "
              "-enable-custom-resources and NGINX's stream module)")


def parse_config_map(data: Mapping[str, str] | None, capabilities: Capabilities = UNKNOWN_NGINX, *,
                     stream: bool = False) -> tuple[ConfigParams, list[tuple[str, str]]]:
    """ConfigMap `data` -> (params, [(key, error), ...]). A bad value keeps the default for its key; so does
    a value whose directive the NGINX described by `capabilities` cannot load (the error says what it
    needs), and `stream-snippets` when there is no stream block (`stream` False)."""
    values: dict[str, Any] = {}
    errors: list[tuple[str, str]] = []
    for key, raw in sorted((data or {}).items()):
        spec = CONFIG_MAP_KEYS.get(key)
        if key in PLUS_ONLY_KEYS:
            errors.append((key, "requires NGINX Plus; ignored"))
        if spec is None:
            continue
        field_name, parse = spec
        if not isinstance(raw, str):
            errors.append((key, f"expected a string value, got {type(raw).__name__}"))
            continue
        try:
            values[field_name] = parse(raw)
        except ValueError as e:
            errors.append((key, value_error(raw, str(e))))
    if any(k in HSTS_KEYS for k, _ in errors):
        for k in HSTS_KEYS:
            values.pop(CONFIG_MAP_KEYS[k][0], None)
        errors.append(("hsts", "there are errors in the HSTS keys; all HSTS keys are ignored"))
    check_otel(values, errors)
    drop_unloadable(values, capabilities, errors)
    if not stream and values.pop("stream_snippets", ()):
        errors.append(("stream-snippets", STREAM_OFF))
    return dataclasses.replace(ConfigParams(), **values), errors


CERTIFICATE_CACHE_SIZE = 10000
"""Entries of `ssl_certificate_cache` (per worker; entries unused for `inactive` go first), or of the
certificate-cache module's `ingressctl_certificate_cache` (per worker; the least recently used go first)."""


def proxy_defaults(config: ConfigParams) -> ProxyDefaults:
    """The proxy settings an Ingress location without annotations has, declared once in nginx.conf."""
    return ProxyDefaults(connect_timeout=config.proxy_connect_timeout, read_timeout=config.proxy_read_timeout,
                         send_timeout=config.proxy_send_timeout, buffering=config.proxy_buffering,
                         keepalive=config.keepalive > 0)


def generate_main_config(static: StaticConfigParams, config: ConfigParams, *,
                         dhparam_path: str = "", upstream_zone_size: str = "1m") -> MainConfig:
    """The main template's model (NIC's `GenerateNginxMainConfig`). `dhparam_path`: where the Configurator
    wrote `ssl-dhparam-file`; `upstream_zone_size`: the shared upstream zone's size."""
    return MainConfig(
        run_dir=static.run_dir,
        worker_processes=config.worker_processes,
        worker_connections=config.worker_connections,
        worker_rlimit_nofile=config.worker_rlimit_nofile,
        worker_shutdown_timeout=config.worker_shutdown_timeout,
        worker_user=static.worker_user,
        error_log_level=config.error_log_level,
        access_log_off=config.access_log_off,
        log_format=config.log_format,
        keepalive_timeout=config.keepalive_timeout,
        keepalive_requests=config.keepalive_requests,
        server_names_hash_bucket_size=config.server_names_hash_bucket_size,
        server_names_hash_max_size=config.server_names_hash_max_size,
        map_hash_bucket_size=config.map_hash_bucket_size,
        map_hash_max_size=config.map_hash_max_size,
        variables_hash_bucket_size=config.variables_hash_bucket_size,
        variables_hash_max_size=config.variables_hash_max_size,
        server_tokens=config.server_tokens,
        http2=config.http2,
        http2_directive=static.capabilities.has("http2_directive"),
        ssl_protocols=config.ssl_protocols,
        stream=static.stream,
        stream_module_path=static.stream_module_path,
        dynamic_peers_module_path=static.dynamic_peers_module_path,
        upstream_front_module_path=static.upstream_front_module_path,
        include_scoped_module_path=static.include_scoped_module_path,
        escape_uri_module_path=static.escape_uri_module_path,
        routes_module_path=static.routes_module_path,
        tls_passthrough=static.tls_passthrough,
        default_http_listener_port=static.http_port,
        default_https_listener_port=static.https_port,
        default_server_tls_path=static.default_server_tls_path,
        certificates_per_handshake=static.certificates_per_handshake,
        certificate_cache_size=(CERTIFICATE_CACHE_SIZE if static.certificates_per_handshake
                                and (static.capabilities.has("ssl_certificate_cache")
                                     or static.certificate_cache_module_path) else 0),
        certificate_cache_module_path=(static.certificate_cache_module_path
                                       if static.certificates_per_handshake
                                       and not static.capabilities.has("ssl_certificate_cache") else ""),
        proxy_defaults=proxy_defaults(config),
        default_server_return=config.default_server_return,
        default_server_access_log_off=(static.default_server_access_log_off
                                       if config.default_server_access_log_off is None
                                       else config.default_server_access_log_off),
        disable_ipv6=static.disable_ipv6,
        health_status=static.health_status,
        health_status_uri=static.health_status_uri,
        nginx_status=static.nginx_status and static.capabilities.has("stub_status"),
        stub_status=static.capabilities.has("stub_status"),
        nginx_status_port=static.nginx_status_port,
        nginx_status_allow_cidrs=static.nginx_status_allow_cidrs,
        access_log=config.access_log,
        log_format_escaping=config.log_format_escaping,
        worker_cpu_affinity=config.worker_cpu_affinity,
        ssl_ciphers=config.ssl_ciphers,
        ssl_prefer_server_ciphers=config.ssl_prefer_server_ciphers,
        add_headers=config.http_add_headers,
        add_header_inherit=config.http_add_header_inherit,
        otel=_otel(static, config),
        client_body_buffer_size=config.client_body_buffer_size,
        ssl_dhparam=dhparam_path,
        upstream_zone_size=upstream_zone_size,
        proxy_protocol=config.proxy_protocol,
        main_snippets=config.main_snippets,
        http_snippets=config.http_snippets,
        stream_snippets=config.stream_snippets if static.stream else (),
    )


NIC_CACHE_DIR = "/var/cache/nginx"


def prepare_cache_dir(run_dir: str) -> str:
    """At start-up: NIC's `/var/cache/nginx` when it exists and this process may create zones there, else
    `<run_dir>/cache`, created here (0755: NGINX creates each zone's directory in it, owned by the worker
    user), so an unprivileged controller can still serve cache policies."""
    if os.path.isdir(NIC_CACHE_DIR) and os.access(NIC_CACHE_DIR, os.W_OK | os.X_OK):
        return NIC_CACHE_DIR
    path = os.path.join(run_dir, "cache")
    with contextlib.suppress(OSError):   # NGINX then reports the path on the resources using a cache policy
        os.makedirs(path, mode=0o755, exist_ok=True)
    return path
