"""The model of `virtualserver.conf.j2` (NIC's `version2` types), the renderer's input (`VirtualServerEx`)
and the kinds' registry names: dataclasses that only group values; `config.generate_vs_config` fills them,
the template reads them, nothing here computes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ingressctl.configs.config import PolicyLocation, UpstreamServer
from ingressctl.configs.directive_values import StickyCookie
from ingressctl.keys import ResourceKey
from ingressctl.kinds.transportserver.config import Listener
from ingressctl.policies.base import ResolvedPolicy
from ingressctl.secret_types import SecretReference

VS_KIND = "virtualserver"
VSR_KIND = "virtualserverroute"
VS_TYPES = ("total",)


@dataclass(frozen=True)
class CustomListeners:
    """A VirtualServer's `spec.listener` resolved against the GlobalConfiguration: the server listens only on
    the sides that resolved (NIC)."""

    http: Listener | None = None
    https: Listener | None = None


@dataclass(frozen=True)
class VirtualServerEx:
    """A VirtualServer with what the cluster says about its references."""

    vs: dict[str, Any]
    endpoints: dict[str, list[str]]              # upstream name -> "ip:port" (empty: no endpoints); a VSR's
                                                 # upstreams under `vsr_endpoints_key`
    tls_secret: SecretReference | None = None    # None: no spec.tls.secret
    vsrs: list[dict[str, Any]] = field(default_factory=list)   # the VirtualServerRoutes delegated to
    route_vsrs: dict[int, list[str]] = field(default_factory=dict)   # route index -> its VSRs' "ns/name"
    listeners: CustomListeners | None = None     # None: no `spec.listener` (the default ports)
    policies: Mapping[str, ResolvedPolicy] = field(default_factory=dict)   # "ns/name" -> resolved Policy
    policy_endpoints: Mapping[str, tuple[str, ...]] = field(default_factory=dict)   # externalAuth Services

    @property
    def namespace(self) -> str:
        return str((self.vs.get("metadata") or {}).get("namespace") or "")

    @property
    def name(self) -> str:
        return str((self.vs.get("metadata") or {}).get("name") or "")

    @property
    def key_with_kind(self) -> ResourceKey:
        return ResourceKey(VS_KIND, f"{self.namespace}/{self.name}")


@dataclass(frozen=True)
class VSUpstream:
    name: str
    servers: list[UpstreamServer]
    lb_method: str = ""
    keepalive: int = 0
    sticky: StickyCookie | None = None   # sessionCookie, only on an NGINX with OSS `sticky cookie`
    zone: str = ""                       # the shared upstream zone ("" with ConfigMap upstream-zone-size 0)
    zone_bytes: int = 0                  # what this upstream reserves in it


@dataclass(frozen=True)
class SplitClient:
    variable: str
    distributions: list[tuple[int, str]]     # (weight %, internal location)


@dataclass(frozen=True)
class VSMap:
    source: str
    variable: str
    params: list[tuple[str, str]]            # (key as rendered by the template's quote_regex, value)


@dataclass(frozen=True)
class Header:
    name: str
    value: str
    always: bool = False


@dataclass
class VSLocation:
    """One `location` block (a proxy, redirect or return action, or an entry that rewrites to a variable)."""

    modifier: str            # "", "=", "~", "~*"
    path: str
    internal: bool = False
    rewrite_to: str = ""     # split/match entry: `rewrite ^ <var> last;`
    service: str = ""
    snippets: list[str] = field(default_factory=list)
    return_500: bool = False
    policy_lines: list[str] = field(default_factory=list)                    # complete, safe directives
    error_pages: list[tuple[str, str, str]] = field(default_factory=list)   # (codes, "=code" part, target)
    # Actions.
    redirect: tuple[int, str] | None = None
    return_: tuple[int, str, str] | None = None      # (code, type, body in NGINX's escapes, as NIC has it)
    return_headers: list[Header] = field(default_factory=list)
    # Proxy.
    proxy_pass: str = ""
    grpc: bool = False
    keepalive: bool = False
    rewrites: list[tuple[str, str, str]] = field(default_factory=list)       # (regex, replacement, flag)
    connect_timeout: str = "60s"
    read_timeout: str = "60s"
    send_timeout: str = "60s"
    client_max_body_size: str = "1m"
    buffering: bool = True
    buffers: str = ""
    buffer_size: str = ""
    busy_buffers_size: str = ""          # NIC 5.2+ (HTTP upstreams only)
    client_body_buffer_size: str = ""    # NIC 5.3+
    set_headers: list[Header] = field(default_factory=list)
    pass_request_headers: bool = True
    hide_headers: list[str] = field(default_factory=list)
    pass_headers: list[str] = field(default_factory=list)
    ignore_headers: list[str] = field(default_factory=list)
    add_headers: list[Header] = field(default_factory=list)
    next_upstream: str = "error timeout"
    next_upstream_timeout: str = "0s"
    next_upstream_tries: int = 0
    add_header_inherit: str = ""   # only on an NGINX that has the directive


@dataclass(frozen=True)
class NamedReturn:
    """`location @name { default_type; add_header; return code "body"; }` (error pages; the body in NGINX's
    escapes, as NIC renders it)."""

    name: str
    code: int
    type: str
    body: str
    headers: list[Header]


@dataclass
class VSServer:
    server_name: str
    http_listens: list[str]              # `listen` addresses of plain HTTP
    https_listens: list[str]             # `listen` addresses with `ssl` (used only when `ssl`)
    namespace: str
    name: str
    ssl: bool = False
    ssl_certificate: str = ""            # "" with ssl: reject handshakes
    http2: bool = False
    http2_directive: bool = False        # this NGINX wants `http2 on;` (1.25.1+), not `listen ... http2`
    tls_redirect: tuple[int, str] | None = None     # (code, variable compared with 'http')
    gunzip: bool = False
    add_header_inherit: str = ""         # only on an NGINX that has the directive
    server_tokens: str = "on"
    return_500: bool = False
    policy_lines: list[str] = field(default_factory=list)                    # complete, safe directives
    policy_locations: list[PolicyLocation] = field(default_factory=list)
    catch_all_404: bool = True           # no route for "/": unrouted requests get 404 (not a static file)
    catch_all_lines: list[str] = field(default_factory=list)  # the spec policies' lines for unrouted paths
    grpc_errors: bool = False            # TLS with HTTP/2 and a gRPC location: NGINX errors as gRPC statuses
    snippets: list[str] = field(default_factory=list)
    locations: list[VSLocation] = field(default_factory=list)
    named_returns: list[NamedReturn] = field(default_factory=list)


@dataclass(frozen=True)
class VSConfig:
    """The model of `virtualserver.conf.j2`."""

    upstreams: list[VSUpstream]
    split_clients: list[SplitClient]
    maps: list[VSMap]
    http_snippets: list[str]
    server: VSServer
    policy_http: list[str] = field(default_factory=list)     # http-level policy lines (zones, maps)
    # Warnings that belong to a VirtualServerRoute ("namespace/name"), not to the VirtualServer (its
    # subroutes' policies, as NIC reports them).
    child_warnings: dict[str, list[str]] = field(default_factory=dict)
