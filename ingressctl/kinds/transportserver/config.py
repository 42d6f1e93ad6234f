"""TransportServer rendering (NIC's `nginx.transportserver.tmpl`): one stream config file per TransportServer.

Guarantees:
- `TransportServerEx` is everything a TransportServer's file depends on: the object (already validated), the
  GlobalConfiguration listener it binds, and the endpoints of each upstream ("ip:port"). Rendering is pure.
- The file is `stream-conf.d/ts_<ns>_<name>.conf` (NIC's name). Upstreams are `ts_<ns>_<name>_<upstream>`,
  each with its own `zone <name> 512k`, servers sorted by address with `max_fails`, `fail_timeout`,
  `max_conns` (and `backup` for the upstream's backup servers); an upstream without endpoints points at a
  unix socket nobody listens on, so connections fail at once. The load-balancing method defaults to
  `random two least_conn`; `round_robin` renders nothing.
- The server listens on the listener's port (on its ipv4 address, and on its ipv6 address or `[::]` unless
  IPv6 is disabled), with `udp` for UDP listeners; `proxy_timeout` (sessionParameters.timeout, default 10m),
  `proxy_connect_timeout` (60s), the next-upstream directives only when `nextUpstream` is true, and
  `proxy_requests` / `proxy_responses` for UDP when set. Snippets are copied as they are (validation gates
  them).
- TLS termination (`spec.tls.secret`, TCP listeners): with a usable `kubernetes.io/tls` Secret the listens
  get `ssl` and the server `ssl_certificate` / `ssl_certificate_key`, both the Secret's PEM file of the
  Secret store (as Ingresses). A TransportServer with `spec.tls` whose Secret is empty, missing, invalid or
  of another type gets NIC's warning, and its server is not rendered, so nothing listens on the port (NIC
  would serve the port without TLS instead): `spec.tls` never ends up as plain TCP.
- The template can be replaced (`--transportserver-template-path`): it receives `ts` (a `StreamServerConfig`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import jinja2

from ingressctl.configs.quoting import NginxValueError
from ingressctl.configs.renderers import RenderContext, Rendered
from ingressctl.configs.templates import TemplateError, TemplateRenderError, new_environment
from ingressctl.keys import ResourceKey
from ingressctl.kinds.passthrough import socket_address
from ingressctl.secret_types import SecretReference

PROTOCOL_TCP = "TCP"
PROTOCOL_UDP = "UDP"
PROTOCOL_HTTP = "HTTP"
PROTOCOL_TLS_PASSTHROUGH = "TLS_PASSTHROUGH"
TLS_PASSTHROUGH_LISTENER = "tls-passthrough"
TRANSPORTSERVER_KIND = "transportserver"
TRANSPORTSERVER_TYPES = ("passthrough", "tcp", "udp")
STREAM_DIR = "stream-conf.d"
DEFAULT_LB_METHOD = "random two least_conn"
TRANSPORTSERVER_TEMPLATE = "transportserver.conf.j2"
SECRET_TYPE_TLS = "kubernetes.io/tls"


@dataclass(frozen=True)
class Listener:
    """A GlobalConfiguration listener."""

    name: str
    port: int
    protocol: str
    ssl: bool = False
    ipv4: str = ""
    ipv6: str = ""


@dataclass
class TransportServerEx:
    """A TransportServer with what its file depends on."""

    ts: dict[str, Any]
    listener: Listener
    endpoints: dict[str, list[str]] = field(default_factory=dict)  # upstream name -> ["ip:port", ...]
    backup_endpoints: dict[str, list[str]] = field(default_factory=dict)  # upstream name -> backup servers
    tls_secret: SecretReference | None = None  # the Secret of a non-empty spec.tls.secret


@dataclass(frozen=True)
class StreamSSL:
    """TLS termination of a stream server (NIC's StreamSSL): `enabled` with a certificate, or `unusable`
    (spec.tls without a usable Secret: no server at all) with `warning` saying why."""

    enabled: bool = False
    certificate: str = ""
    certificate_key: str = ""
    unusable: bool = False
    warning: str = ""


@dataclass
class StreamUpstreamServer:
    address: str
    max_fails: int
    fail_timeout: str
    max_conns: int
    backup: bool = False


@dataclass
class StreamUpstream:
    name: str
    lb_method: str
    servers: list[StreamUpstreamServer]


@dataclass
class StreamServerConfig:
    """The template's model."""

    namespace: str
    name: str
    listen: list[str]
    udp: bool
    upstreams: list[StreamUpstream]
    proxy_pass: str
    proxy_timeout: str
    proxy_connect_timeout: str
    next_upstream: bool
    next_upstream_timeout: str
    next_upstream_tries: int
    udp_requests: int | None
    udp_responses: int | None
    server_snippets: list[str]
    stream_snippets: list[str]
    no_endpoints_socket: str
    real_ip_from_unix: bool = False  # a passthrough server: the client address comes with the PROXY protocol
    ssl: StreamSSL = field(default_factory=StreamSSL)
    server_name: str = ""  # a TCP listener's host, selected by SNI (NGINX 1.25.5)


def file_name(namespace: str, name: str) -> str:
    """NIC's file name, qualified by the stream directory."""
    return f"{STREAM_DIR}/ts_{namespace}_{name}"


def passthrough_socket_name(namespace: str, name: str) -> str:
    """The file name (in the run dir) of the unix socket a passthrough TransportServer's server listens on
    (NIC's name)."""
    return f"passthrough-{namespace}_{name}.sock"


def passthrough_socket(run_dir: str, namespace: str, name: str) -> str:
    return socket_address(run_dir, passthrough_socket_name(namespace, name))


def upstream_name(namespace: str, name: str, upstream: str) -> str:
    return f"ts_{namespace}_{name}_{upstream}"


def ts_type(ts: dict[str, Any]) -> str:
    """`passthrough`, `tcp` or `udp` (the metric's label)."""
    protocol = str(((ts.get("spec") or {}).get("listener") or {}).get("protocol") or "")
    return {"TLS_PASSTHROUGH": "passthrough", PROTOCOL_UDP: "udp"}.get(protocol, "tcp")


def _snippet_lines(value: Any) -> list[str]:
    return [line for line in str(value or "").splitlines() if line.strip()]


_UNUSABLE = "The listener accepts no connections until the Secret is valid."


def stream_ssl(ex: TransportServerEx) -> StreamSSL:
    """The server's TLS termination from `spec.tls` and its Secret (NIC's generateSSLConfig, NIC's warnings;
    see the module docstring for what an unusable Secret does)."""
    tls = (ex.ts.get("spec") or {}).get("tls")
    if not isinstance(tls, dict):
        return StreamSSL()
    secret = tls.get("secret")
    if not secret or not isinstance(secret, str):
        return StreamSSL(unusable=True, warning="TLS secret is empty. The listener accepts no connections "
                                                "until spec.tls.secret names a valid Secret.")
    ref = ex.tls_secret
    if ref is None:
        ref = SecretReference(key=secret, error="secret doesn't exist or of an unsupported type")
    if ref.secret_type and ref.secret_type != SECRET_TYPE_TLS:
        problem = f"is of a wrong type '{ref.secret_type}', must be '{SECRET_TYPE_TLS}'"
        return StreamSSL(unusable=True, warning=f"TLS secret {secret} {problem}. {_UNUSABLE}")
    if ref.error or not ref.path:
        problem = f"is invalid: {ref.error or 'it has no file'}"
        return StreamSSL(unusable=True, warning=f"TLS secret {secret} {problem}. {_UNUSABLE}")
    return StreamSSL(enabled=True, certificate=ref.path, certificate_key=ref.path)


def build_stream_config(ex: TransportServerEx, *, run_dir: str,
                        disable_ipv6: bool = False) -> StreamServerConfig:
    """The template's model of one TransportServer (see the module docstring)."""
    meta = ex.ts.get("metadata") or {}
    ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    spec = ex.ts.get("spec") or {}
    udp = ex.listener.protocol == PROTOCOL_UDP
    passthrough = ex.listener.protocol == PROTOCOL_TLS_PASSTHROUGH
    ssl = stream_ssl(ex) if not passthrough else StreamSSL()
    suffix = (" ssl" if ssl.enabled else "") + (" udp" if udp else "")
    port = ex.listener.port
    if passthrough:
        listen = [f"{passthrough_socket(run_dir, ns, name)} proxy_protocol"]
    else:
        listen = [f"{ex.listener.ipv4}:{port}{suffix}" if ex.listener.ipv4 else f"{port}{suffix}"]
        if not disable_ipv6:
            listen.append(f"[{ex.listener.ipv6 or '::'}]:{port}{suffix}")
    upstreams = []
    for u in sorted(spec.get("upstreams") or [], key=lambda u: str(u.get("name"))):
        uname = str(u["name"])
        servers = [StreamUpstreamServer(a, int(u.get("maxFails", 1)), str(u.get("failTimeout") or "10s"),
                                        int(u.get("maxConns", 0)))
                   for a in sorted(ex.endpoints.get(uname, []))]
        servers += [StreamUpstreamServer(a, int(u.get("maxFails", 1)), str(u.get("failTimeout") or "10s"),
                                         int(u.get("maxConns", 0)), backup=True)
                    for a in sorted(ex.backup_endpoints.get(uname, []))]
        method = str(u.get("loadBalancingMethod") or DEFAULT_LB_METHOD)
        upstreams.append(StreamUpstream(upstream_name(ns, name, uname),
                                        "" if method == "round_robin" else method, servers))
    up = spec.get("upstreamParameters") or {}
    session = spec.get("sessionParameters") or {}
    return StreamServerConfig(
        namespace=ns, name=name, listen=listen, udp=udp, upstreams=upstreams,
        proxy_pass=upstream_name(ns, name, str((spec.get("action") or {}).get("pass") or "")),
        proxy_timeout=str(session.get("timeout") or "10m"),
        proxy_connect_timeout=str(up.get("connectTimeout") or "60s"),
        next_upstream=bool(up.get("nextUpstream")),
        next_upstream_timeout=str(up.get("nextUpstreamTimeout") or "0s"),
        next_upstream_tries=int(up.get("nextUpstreamTries") or 0),
        udp_requests=up.get("udpRequests") if udp else None,
        udp_responses=up.get("udpResponses") if udp else None,
        server_snippets=_snippet_lines(spec.get("serverSnippets")),
        stream_snippets=_snippet_lines(spec.get("streamSnippets")),
        no_endpoints_socket=f"unix:{run_dir}/non-existing-unix-socket.sock",
        real_ip_from_unix=passthrough,
        ssl=ssl,
        server_name=str(spec.get("host") or "") if not (udp or passthrough) else "",
    )


class TransportServerTemplate:
    """The TransportServer template: the built-in one, or a custom file (`--transportserver-template-path`).
    The constructor raises `TemplateError` if it cannot be read or compiled; `render` raises
    `TemplateRenderError` for a model it cannot render (an unsafe value)."""

    def __init__(self, path: str | None = None) -> None:
        env = new_environment()
        try:
            if path is None:
                self._template = env.get_template(TRANSPORTSERVER_TEMPLATE)
            else:
                with open(path, encoding="utf-8") as f:
                    self._template = env.from_string(f.read())
        except OSError as e:
            raise TemplateError(f"cannot read template {path}: {e}") from e
        except jinja2.TemplateError as e:
            raise TemplateError(f"template {path or TRANSPORTSERVER_TEMPLATE}: {e}") from e

    def render(self, cfg: StreamServerConfig) -> str:
        try:
            return self._template.render(ts=cfg)
        except (jinja2.TemplateError, NginxValueError) as e:
            raise TemplateRenderError(f"TransportServer template: {e}") from e


def count_types(resources: Iterable[object]) -> dict[str, int]:
    """`passthrough`, `tcp` and `udp` TransportServers, for the resources-total metric."""
    out = dict.fromkeys(TRANSPORTSERVER_TYPES, 0)
    for r in resources:
        if isinstance(r, TransportServerEx):
            out[ts_type(r.ts)] += 1
    return out


class TransportServerRenderer:
    """The Configurator's renderer of TransportServers (`TransportServerEx` -> stream-conf.d file)."""

    kind = TRANSPORTSERVER_KIND

    def __init__(self, template: TransportServerTemplate | None = None) -> None:
        self._template = template or TransportServerTemplate()

    def file_name(self, key: ResourceKey) -> str:
        return file_name(key.namespace, key.name)

    def render(self, resource: object, ctx: RenderContext) -> Rendered:
        if not isinstance(resource, TransportServerEx):
            raise TypeError(f"not a TransportServer: {type(resource).__name__}")
        cfg = build_stream_config(resource, run_dir=ctx.static.run_dir, disable_ipv6=ctx.static.disable_ipv6)
        return Rendered(self._template.render(cfg), [cfg.ssl.warning] if cfg.ssl.warning else [])

    def counts(self, resources: Iterable[object]) -> dict[str, int]:
        return count_types(resources)

    def catch_all(self, resource: object) -> str:
        """Stream servers are never the HTTP catch-all."""
        return ""

