"""The template model (NIC's `version1` package): frozen dataclasses that the Jinja2 templates consume.

The templates see only these types, never Kubernetes objects. Every field is plain data that the generator has
already validated; the templates still pass each value through a quoting filter (see `quoting`).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ingressctl.configs.directive_values import AddHeader, StickyCookie
from ingressctl.configs.parsing import size_bytes

_M = TypeVar("_M")
_FIELD_NAMES: dict[type, frozenset[str]] = {}


def derive(model: _M, **changes: Any) -> _M:
    """`dataclasses.replace(model, **changes)` for the frozen models here, without running `__init__`: the
    copy shares every unchanged value with `model` (they are immutable) and costs a tenth of building a
    `Location` or `Server` field by field. A name that is not a field raises TypeError, as `replace` does."""
    cls = type(model)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    if not names.issuperset(changes):
        raise TypeError(f"{cls.__name__} has no field(s) {', '.join(sorted(changes.keys() - names))}")
    values = model.__dict__.copy()  # a copy of a dict is cheaper than inserting its items one by one
    values.update(changes)
    copy = object.__new__(cls)
    object.__setattr__(copy, "__dict__", values)
    return copy


# Location modifiers (NGINX `location [modifier] path`).
PREFIX = ""
EXACT = "="
REGEX = "~"
REGEX_CASE_INSENSITIVE = "~*"


@dataclass(frozen=True)
class UpstreamServer:
    """One `server` line of an upstream: `host:port` or `unix:/path`."""

    address: str
    max_fails: int = 1
    fail_timeout: str = "10s"
    max_conns: int = 0


UPSTREAM_ZONE = "ingressctl-upstreams"
"""The one shared memory zone every upstream with a zone lives in (declared with its size in nginx.conf).

NGINX looks zones up by a linear scan per `zone` directive, so a zone per upstream makes loading N upstreams
cost O(N^2): 15 s of a 31 s `nginx -t` at 10,000 upstreams. NGINX lets groups share a zone."""
# What one upstream takes in the shared zone, with a margin (NGINX 1.22, measured with
# `random two least_conn`: 1,000 upstreams of one server fit in 1 MiB, of ten servers in 8 MiB).
ZONE_BYTES_PER_UPSTREAM = 2048
ZONE_BYTES_PER_SERVER = 1024
_MIB = 1 << 20


@dataclass(frozen=True)
class Upstream:
    name: str
    servers: tuple[UpstreamServer, ...]
    lb_method: str = ""  # "" = NGINX's round robin
    keepalive: int = 0
    zone_size: str = ""  # "0": no zone; "": sized from the servers; else what it reserves in the shared zone
    sticky: StickyCookie | None = None  # `sticky cookie` (only with an NGINX that has it)

    @property
    def zone(self) -> str:
        """The zone this upstream's `zone` line names ("" for none)."""
        return "" if self.zone_size and not size_bytes(self.zone_size) else UPSTREAM_ZONE

    def zone_bytes(self) -> int:
        """What this upstream reserves in the shared zone: its explicit size or what its servers need,
        whichever is more (0 without a zone)."""
        if not self.zone:
            return 0
        need = ZONE_BYTES_PER_UPSTREAM + ZONE_BYTES_PER_SERVER * len(self.servers)
        return max(need, size_bytes(self.zone_size)) if self.zone_size else need


def shared_zone_size(reserved: int) -> str:
    """The size of the shared upstream zone for `reserved` bytes: at least 1 MiB, rounded up to a quarter of
    its power of two (so that it steps rarely as upstreams come and go, and overshoots by at most a
    quarter)."""
    mib = max(1, -(-reserved // _MIB))
    step = max(1, (1 << (mib.bit_length() - 1)) // 4)
    return f"{-(-mib // step) * step}m"


@dataclass(frozen=True)
class IngressMeta:
    name: str
    namespace: str
    annotations: dict[str, str] = field(default_factory=dict)
    member: bool = False  # an Ingress sharing its host (ingress-nginx): inherits nothing of the owner


@dataclass(frozen=True)
class LimitReqZone:
    """`limit_req_zone <key> zone=<name>:<size> rate=<rate>;` (http level)."""

    name: str
    key: str  # an NGINX variable expression
    size: str
    rate: str


@dataclass(frozen=True)
class LimitKeyMap:
    """ingress-nginx's limit allowlist: `geo` of the client address to 1 for the exempt sources, and `map` of
    that to `key_var`, the rate-limit key (`key`, or "" for an exempt client, which NGINX does not limit)."""

    geo_var: str  # `$name` variables
    key_var: str
    key: str
    exempt: tuple[str, ...]


@dataclass(frozen=True)
class ValueMap:
    """`map <source> <variable> { "~<regex>" <value>; ... default <value>; }` (http level): ingress-nginx's
    canaries (values: upstream names or the variable of the next map) and www redirects."""

    source: str  # `$http_<name>` or `$cookie_<name>`
    variable: str
    entries: tuple[tuple[str, str], ...]  # (case-sensitive regex, value)
    default: str


@dataclass(frozen=True)
class CanarySplit:
    """ingress-nginx's canary weight (http level):
    `split_clients $request_id <variable> { <percent>% <canary>; * <primary>; }`."""

    variable: str
    percent: str
    canary: str
    primary: str


@dataclass(frozen=True)
class LimitConnZone:
    """`limit_conn_zone <key> zone=<name>:<size>;` (http level)."""

    name: str
    key: str
    size: str


@dataclass(frozen=True)
class LimitConn:
    """`limit_conn <zone> <n>; limit_conn_status <code>;` in a location."""

    zone: str
    limit: int
    status: int = 503


@dataclass(frozen=True)
class LimitReq:
    """`limit_req` and its companions in a location."""

    zone: str
    burst: int = 0
    delay: int = 0
    no_delay: bool = False
    dry_run: bool = False
    log_level: str = "error"
    reject_code: int = 429


@dataclass(frozen=True)
class BasicAuth:
    """`auth_basic "<realm>"; auth_basic_user_file <path>;`."""

    realm: str
    user_file: str


@dataclass(frozen=True)
class ProxySetHeader:
    """`proxy_set_header <name> "<value>";`, or the client's header of that name when value is None."""

    name: str
    value: str | None = None

    @property
    def variable(self) -> str:
        """The NGINX variable of the client's header (`$http_x_custom` for X-Custom)."""
        return "$http_" + self.name.lower().replace("-", "_")


@dataclass(frozen=True)
class ProxyDefaults:
    """The proxy settings of an Ingress location without annotations (from the ConfigMap), declared once at
    the http level of nginx.conf. A location whose settings are exactly these (`Location.inherits_proxy_
    defaults`) inherits them instead of repeating them: NGINX then builds the proxy header tables once instead
    of once per location, which is ~10% of a large configuration's load time. `client_max_body_size` is not
    among them: servers other than Ingresses' (the default server, VirtualServers' return locations) keep
    NGINX's own default."""

    connect_timeout: str = "60s"
    read_timeout: str = "60s"
    send_timeout: str = "60s"
    buffering: bool = True
    keepalive: bool = False  # `proxy_set_header Connection ""` (upstream keepalive on)


@dataclass(frozen=True)
class Location:
    path: str  # always starts with "/"
    modifier: str  # PREFIX, EXACT, REGEX, REGEX_CASE_INSENSITIVE
    upstream: str  # upstream name
    service_name: str
    proxy_connect_timeout: str = "60s"
    proxy_read_timeout: str = "60s"
    proxy_send_timeout: str = "60s"
    client_max_body_size: str = "1m"
    proxy_buffering: bool = True
    proxy_buffers: str = ""
    proxy_buffer_size: str = ""
    proxy_max_temp_file_size: str = ""
    websocket: bool = False
    ssl: bool = False  # HTTPS to the backend
    ssl_server_name: bool = True  # with `ssl`: `proxy_ssl_server_name on` (NIC's SNI to HTTPS backends)
    rewrite: str = ""  # URI part appended to proxy_pass ("" = pass the request URI unchanged)
    keepalive: bool = False  # the upstream keeps connections: clear the Connection header
    redirect_to_https: bool = False  # X-Forwarded-Proto is then always https
    snippets: tuple[str, ...] = ()
    grpc: bool = False  # grpc_pass instead of proxy_pass
    proxy_set_headers: tuple[ProxySetHeader, ...] = ()
    basic_auth: BasicAuth | None = None  # a minion's basic auth (a regular Ingress's is on the server)
    limit_req: LimitReq | None = None
    minion: IngressMeta | None = None  # the minion this location comes from (mergeable Ingresses)
    client_body_buffer_size: str = ""
    proxy_busy_buffers_size: str = ""
    proxy_next_upstream: str = ""  # space-separated conditions
    proxy_next_upstream_timeout: str = ""
    proxy_next_upstream_tries: int = 0
    rewrite_pattern: str = ""  # nginx.org/rewrite-target: `rewrite <pattern> <target> break;`
    rewrite_target: str = ""
    add_headers: tuple[AddHeader, ...] = ()  # a minion's nginx.org/add-header
    proxy_redirect: tuple[str, str] = ("", "")  # a minion's (from, to); ("default", "") is emitted here
    add_header_inherit: str = ""  # a minion's nginx.org/add-header-inherit (NGINX 1.29.3+)
    custom_http_errors: tuple[int, ...] = ()  # a minion's nginx.org/custom-http-errors
    skip_custom_http_errors: bool = False  # the default backend's own `/`: never intercepted
    exact_regex: bool = False  # a regex location of an Exact path: listed before the other regex locations
    upstream_var: str = ""  # ingress-nginx's canary: a `$variable` naming the upstream (else `upstream`)
    # Proxies to the class-wide catch-all (`$ingressctl_catch_all`, the upstream nginx.conf names) instead of
    # `upstream`: the `/` of a server without one while a catch-all exists.
    catch_all: bool = False
    # Its proxy settings equal nginx.conf's `ProxyDefaults`: they are inherited, not repeated.
    inherits_proxy_defaults: bool = False
    # nginx.org/policies (see configs.ingress_policies): a minion's policy failed (`return 500;`), and the
    # policy lines of the location (complete directives, values already quoted).
    policy_500: bool = False
    policy_lines: tuple[str, ...] = ()
    # ingress-nginx annotations (kinds/ingress/ingress_nginx): request body buffering ("on"/"off"), the Host
    # sent upstream, `return <code> "<url>"`, allow/deny rules (in order) and the connection limit.
    proxy_request_buffering: str = ""
    upstream_vhost: str = ""
    return_redirect: tuple[int, str] = (0, "")
    access_rules: tuple[tuple[str, str], ...] = ()
    limit_conn: LimitConn | None = None

    @property
    def has_extra_directives(self) -> bool:
        """Any of snippets, basic auth, add_header_inherit, custom error handling, rewrite, client body buffer
        size, add_header, a redirect, access rules or a connection limit is set. The template tests this once
        before testing each of them: most locations have none, and one test is cheaper than ten."""
        return bool(self.snippets or self.basic_auth or self.add_header_inherit
                    or self.skip_custom_http_errors or self.custom_http_errors or self.rewrite_target
                    or self.client_body_buffer_size or self.add_headers or self.return_redirect[0]
                    or self.access_rules or self.limit_conn)

    @property
    def has_extra_proxy_directives(self) -> bool:
        """Any of the proxy buffer, next-upstream, request buffering and backend TLS settings is set (as
        `has_extra_directives`, for the template's block of those directives)."""
        return bool(self.proxy_buffers or self.proxy_buffer_size or self.proxy_busy_buffers_size
                    or self.proxy_max_temp_file_size or self.proxy_next_upstream
                    or self.proxy_next_upstream_timeout or self.proxy_next_upstream_tries or self.ssl
                    or self.proxy_request_buffering)


@dataclass(frozen=True)
class Server:
    name: str  # the host
    locations: tuple[Location, ...] = ()
    ports: tuple[int, ...] = (80,)
    ssl_ports: tuple[int, ...] = (443,)
    ssl: bool = False
    ssl_certificate: str = ""  # PEM path (certificate and key in one file)
    ssl_certificate_key: str = ""
    ssl_reject_handshake: bool = False
    # No SSL context of its own: the default server's loads this host's certificate (ssl_certificate) at each
    # handshake (see configs.certificate_map).
    certificate_per_handshake: bool = False
    ssl_redirect: bool = False  # `if ($scheme = http)` -> 301 to https://$host:<first ssl port>
    force_ssl_redirect: bool = False  # the same without a certificate (ingress-nginx's force-ssl-redirect)
    redirect_to_https: bool = False  # X-Forwarded-Proto http -> 301
    http2: bool = False
    http2_directive: bool = False  # this NGINX wants `http2 on;` (1.25.1+), not `listen ... http2`
    server_tokens: str = "on"
    disable_ipv6: bool = False
    snippets: tuple[str, ...] = ()
    fallback_status: int = 0  # non-zero: no "/" location, answer unmatched paths with this status
    proxy_protocol: bool = False
    hsts: bool = False
    hsts_max_age: int = 2592000
    hsts_include_subdomains: bool = False
    hsts_behind_proxy: bool = False
    proxy_hide_headers: tuple[str, ...] = ()
    proxy_pass_headers: tuple[str, ...] = ()
    basic_auth: BasicAuth | None = None
    real_ip_header: str = ""
    set_real_ip_from: tuple[str, ...] = ()
    real_ip_recursive: bool = False
    grpc_only: bool = False  # every location is gRPC: no plain-text listeners (NIC's GRPCOnly)
    http_redirect_code: int = 301
    add_headers: tuple[AddHeader, ...] = ()
    app_root: str = ""  # `/` redirects (302) here
    add_header_inherit: str = ""  # nginx.org/add-header-inherit (NGINX 1.29.3+)
    custom_http_errors: tuple[int, ...] = ()  # nginx.org/custom-http-errors (standalone or master)
    custom_error_backend: str = ""  # the upstream of `location @custom_default_backend` ("" = none)
    proxy_redirect: tuple[str, str] = ("", "")  # (from, to); "default" emits nothing at server level
    ssl_ciphers: str = ""
    ssl_prefer_server_ciphers: bool = False
    # A wildcard host (`*.foo.com`) matches exactly one label: other hosts NGINX's `server_name *.foo.com`
    # lets in get `unmatched_host_return` (as the default server answers). "" for other servers.
    host_regex: str = ""
    unmatched_host_return: str = "404"
    # The class-wide catch-all: `server_name ~^ ""` (every host no other server names), with the health
    # endpoint of the default server when `health_status_uri` is set.
    catch_all: bool = False
    health_status_uri: str = ""
    # While a catch-all exists: hosts a wildcard server lets in but does not match go to the catch-all too
    # (through `location @ingressctl_catch_all`), as do its unmatched paths (through `location /`).
    to_catch_all: bool = False
    # TLS passthrough on: TLS is terminated on this unix socket behind the stream server's SNI split (with
    # the PROXY protocol, so the client address survives) instead of on the ssl_ports.
    passthrough_socket: str = ""
    # nginx.org/policies (see configs.ingress_policies): a policy of the server failed (`return 500;`), the
    # server-level policy lines and the extra locations (path argument, lines) the policies need.
    policy_500: bool = False
    policy_lines: tuple[str, ...] = ()
    policy_locations: tuple[PolicyLocation, ...] = ()

    # As Location's: the template tests one of these before each group of rarely set server settings.
    @property
    def has_real_ip_directives(self) -> bool:
        """Any of set_real_ip_from, real_ip_header, real_ip_recursive or the passthrough socket is set."""
        return bool(self.set_real_ip_from or self.passthrough_socket or self.real_ip_header
                    or self.real_ip_recursive)

    @property
    def has_header_directives(self) -> bool:
        """Any of the hidden and passed headers, HSTS, add_header(_inherit) or custom errors is set."""
        return bool(self.proxy_hide_headers or self.proxy_pass_headers or self.hsts or self.add_headers
                    or self.add_header_inherit or self.custom_http_errors)

    @property
    def has_extra_directives(self) -> bool:
        """Any of the HTTPS redirect of a proxy's requests, basic auth, app root, proxy_redirect, policies,
        snippets or the health endpoint is set."""
        return bool(self.redirect_to_https or self.basic_auth or self.app_root or self.proxy_redirect[0]
                    or self.policy_lines or self.snippets or self.policy_locations or self.health_status_uri)


@dataclass(frozen=True)
class IngressNginxConfig:
    """Everything `ingress.conf.j2` renders for one Ingress."""

    upstreams: tuple[Upstream, ...]
    servers: tuple[Server, ...]
    ingress: IngressMeta
    keepalive: str = ""  # "" when 0 (NIC keeps it as a string)
    limit_req_zones: tuple[LimitReqZone, ...] = ()
    policy_http: tuple[str, ...] = ()  # http-level lines of nginx.org/policies (maps, upstreams)
    limit_conn_zones: tuple[LimitConnZone, ...] = ()  # ingress-nginx's limit-connections
    limit_key_maps: tuple[LimitKeyMap, ...] = ()  # ingress-nginx's limit-whitelist
    value_maps: tuple[ValueMap, ...] = ()  # ingress-nginx's canaries and www redirects
    canary_splits: tuple[CanarySplit, ...] = ()


@dataclass(frozen=True)
class OtelConfig:
    """`load_module` of NGINX's otel module, `otel_exporter {}`, `otel_service_name`, `otel_trace on`."""

    module_path: str  # "" when built in
    endpoint: str
    header_name: str = ""
    header_value: str = ""
    service_name: str = ""
    trace: bool = False


@dataclass(frozen=True)
class MainConfig:
    """Everything `nginx.conf.j2` renders.

    `run_dir` holds the pid file, temp paths and unix sockets (absolute). The includes of
    config-version.conf and conf.d/*.conf are relative, so NGINX resolves them against the directory of the
    `-c` file; a staging copy of the conf dir therefore tests as it is.
    """

    run_dir: str
    worker_processes: str = "auto"
    worker_connections: int = 1024
    worker_rlimit_nofile: int = 0
    worker_shutdown_timeout: str = ""
    worker_user: str = ""  # `user` directive; only when the master runs as root
    error_log_level: str = "notice"
    access_log_off: bool = False
    log_format: tuple[str, ...] = ()  # "" -> the default `main` format
    keepalive_timeout: str = "75s"
    keepalive_requests: int = 1000
    server_names_hash_bucket_size: int = 256
    server_names_hash_max_size: int = 1024
    map_hash_bucket_size: int = 256
    map_hash_max_size: int = 2048
    variables_hash_bucket_size: int = 256
    variables_hash_max_size: int = 1024
    server_tokens: str = "on"
    http2: bool = False
    http2_directive: bool = False  # this NGINX wants `http2 on;` (1.25.1+), not `listen ... http2`
    ssl_protocols: str = "TLSv1.2 TLSv1.3"
    default_http_listener_port: int = 80
    default_https_listener_port: int = 443
    default_server_tls_path: str = ""  # "" -> ssl_reject_handshake on
    # The default server's SSL context loads the certificate of the server a handshake selects (`$ingressctl_
    # certificate`, see configs.certificate_map); servers with `certificate_per_handshake` have no context.
    certificates_per_handshake: bool = False
    # `ssl_certificate_cache max=<n>` for them (NGINX 1.27.4+), or `ingressctl_certificate_cache max=<n>`
    # with the module below: a handshake parses a certificate only when it is not cached; 0 = no cache.
    certificate_cache_size: int = 0
    # load_module of ingressctl's certificate-cache module (NGINX < 1.27.4); "" -> NGINX's own cache or none
    certificate_cache_module_path: str = ""
    proxy_defaults: ProxyDefaults | None = None  # declared at the http level when set
    default_server_return: str = "404"
    default_server_access_log_off: bool = False
    disable_ipv6: bool = False
    health_status: bool = False
    health_status_uri: str = "/nginx-health"
    nginx_status: bool = False
    stub_status: bool = True  # the internal stub_status server (metrics); False when NGINX lacks the module
    nginx_status_port: int = 8080
    nginx_status_allow_cidrs: tuple[str, ...] = ("127.0.0.1", "::1")
    access_log: str = ""  # "" -> /dev/stdout main; else a syslog destination (ConfigMap access-log)
    log_format_escaping: str = ""  # "" = NGINX's default escaping; json; none
    worker_cpu_affinity: str = ""
    ssl_ciphers: str = ""
    ssl_prefer_server_ciphers: bool = False
    add_headers: tuple[AddHeader, ...] = ()  # ConfigMap add-header (http level)
    add_header_inherit: str = ""  # ConfigMap add-header-inherit (only when this NGINX has the directive)
    otel: OtelConfig | None = None  # ConfigMap otel-* (only when this NGINX has the otel module)
    client_body_buffer_size: str = ""
    ssl_dhparam: str = ""  # path of the DH parameters file
    upstream_zone: str = UPSTREAM_ZONE
    upstream_zone_size: str = "1m"  # the shared upstream zone; the Configurator sizes it from the upstreams
    catch_all_upstream: str = ""  # `$ingressctl_catch_all`: the catch-all's upstream ("" without one)
    proxy_protocol: bool = False  # the default server's listeners accept the PROXY protocol
    main_snippets: tuple[str, ...] = ()
    http_snippets: tuple[str, ...] = ()
    stream_snippets: tuple[str, ...] = ()  # ConfigMap stream-snippets, at the top of the stream {} block
    stream: bool = False  # a stream {} block including stream-conf.d/*.conf (TransportServers)
    stream_module_path: str = ""  # load_module of a dynamic stream module; "" when built in or unused
    dynamic_peers_module_path: str = ""  # load_module of the dynamic-peers module and serve its API ("" off)
    upstream_front_module_path: str = ""  # load_module of the upstream-front module ("" off)
    include_scoped_module_path: str = ""  # load_module of the scoped-include module; conf.d is included by it
    escape_uri_module_path: str = ""  # load_module of the escape-URI module ("" off: a map stands in for it)
    routes_module_path: str = ""  # load_module of the routes module and serve its table and API ("" off)
    route_shapes: tuple[tuple[str, str], ...] = ()  # (named location, client_max_body_size) of routed hosts
    tls_passthrough: bool = False  # the default server terminates TLS on the passthrough socket


@dataclass(frozen=True)
class PolicyLocation:
    """An extra internal location a policy needs (e.g. an auth_request target)."""

    path: str                              # "= /_external_auth/x" style: modifier and path, already safe
    lines: tuple[str, ...]


ERROR_SERVER_SOCKET = "nginx-502-server.sock"


def error_server_address(run_dir: str) -> str:
    """The built-in server that answers 502 (nginx.conf's), where upstreams without endpoints point."""
    return "unix:" + os.path.join(run_dir, ERROR_SERVER_SOCKET)
