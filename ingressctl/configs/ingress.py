"""IngressEx -> IngressNginxConfig (NIC's `generateNginxCfg`), a pure function.

Guarantees:
- One server per host this Ingress owns (`valid_hosts[host]` True), in rule order; rules repeating a host are
  merged into one server. Upstreams are de-duplicated and sorted by name: `<ns>-<ing>-<host>-<svc>-<port>`
  (the default backend has an empty host: `<ns>-<ing>--<svc>-<port>`).
- An upstream without ready endpoints points at the 502 server (`unix:<run_dir>/nginx-502-server.sock`), so
  its requests get a 502 at once instead of hanging.
- pathType: `Exact` -> `location = /p`; `Prefix` follows Kubernetes' element-wise rule (`location = /p` and
  `location /p/`, a trailing slash ignored; `/` -> `location /`); `ImplementationSpecific` -> `location /p`.
  When two paths would produce the same location, an Exact path wins over a Prefix one, otherwise the first
  wins and the other is reported. NGINX never sees a duplicate location.
- A host, path, service, port or endpoint that is not a safe, well-formed value is left out with a warning; it
  never reaches the template. (The templates quote everything again.)
- TLS: a host listed in `spec.tls` gets its Secret's PEM, or `ssl_reject_handshake on` with a warning when the
  Secret is missing, invalid or of the wrong type (HTTP keeps working, without the SSL redirect).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from ingressctl.configs.annotations import IngressAnnotations, parse_annotations
from ingressctl.configs.config import (
    EXACT,
    PREFIX,
    IngressMeta,
    IngressNginxConfig,
    Location,
    Server,
    Upstream,
    UpstreamServer,
)
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.ingress_ex import IngressEx, backend_key

ERROR_SERVER_SOCKET = "nginx-502-server.sock"
TLS_SECRET_TYPE = "kubernetes.io/tls"
_SECRET_MISSING = "secret doesn't exist or of an unsupported type"

_HOST = re.compile(r"(\*\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*")
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_PORT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?")
# A path in a location: no whitespace, quotes, backslash, ';', '{', '}', '$', '#' or control characters.
_PATH = re.compile(r"/[^\s\"'\\;{}$#\x00-\x1f\x7f]{0,2047}")
_ENDPOINT = re.compile(
    r"(\d{1,3}(\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):\d{1,5}")

PATH_TYPE_EXACT = "Exact"
PATH_TYPE_PREFIX = "Prefix"
PATH_TYPE_IMPLEMENTATION_SPECIFIC = "ImplementationSpecific"


def upstream_name(namespace: str, ingress_name: str, host: str, service: str, port: int | str) -> str:
    """NIC's upstream name: `<ns>-<ing>-<host>-<svc>-<port>`."""
    return f"{namespace}-{ingress_name}-{host}-{service}-{port}"


def error_server_address(run_dir: str) -> str:
    return "unix:" + os.path.join(run_dir, ERROR_SERVER_SOCKET)


def location_keys(path: str, path_type: str) -> list[tuple[str, str]]:
    """The NGINX locations `(modifier, path)` that implement one Ingress path."""
    if path_type == PATH_TYPE_EXACT:
        return [(EXACT, path)]
    if path_type == PATH_TYPE_PREFIX:
        trimmed = path.rstrip("/")
        if not trimmed:
            return [(PREFIX, "/")]
        return [(EXACT, trimmed), (PREFIX, trimmed + "/")]
    return [(PREFIX, path)]


@dataclass
class _Backend:
    service: str
    port: int | str


def _backend(backend: Any) -> tuple[_Backend | None, str]:
    """A Service backend from an Ingress backend dict, or (None, problem)."""
    if not isinstance(backend, dict):
        return None, "no backend"
    service = backend.get("service")
    if not isinstance(service, dict):
        if "resource" in backend:
            return None, "resource backends are not supported"
        return None, "no service backend"
    name = service.get("name")
    port = service.get("port")
    if not isinstance(name, str) or not _LABEL.fullmatch(name):
        return None, f"invalid service name {name!r}"
    if not isinstance(port, dict):
        return None, "invalid service port"
    number, port_name = port.get("number"), port.get("name")
    if isinstance(number, int) and not isinstance(number, bool) and 0 < number < 65536:
        return _Backend(name, number), ""
    if isinstance(port_name, str) and port_name and _PORT_NAME.fullmatch(port_name):
        return _Backend(name, port_name), ""
    return None, f"invalid port for service {name!r}"


class _Builder:
    def __init__(self, ing_ex: IngressEx, static: StaticConfigParams, anns: IngressAnnotations,
                 warnings: list[str]) -> None:
        self.ing_ex = ing_ex
        self.static = static
        self.anns = anns
        self.params: ConfigParams = anns.params
        self.warnings = warnings
        self.namespace = ing_ex.namespace
        self.name = ing_ex.name
        self.upstreams: dict[str, Upstream] = {}

    def upstream(self, host: str, backend: _Backend) -> str:
        name = upstream_name(self.namespace, self.name, host, backend.service, backend.port)
        if name in self.upstreams:
            return name
        p = self.params
        servers = []
        for address in sorted(set(self.ing_ex.endpoints.get(backend_key(backend.service, backend.port), []))):
            if not isinstance(address, str) or not _ENDPOINT.fullmatch(address):
                self.warnings.append(f"endpoint {address!r} of service {backend.service} is invalid; ignored")
                continue
            servers.append(UpstreamServer(address, p.max_fails, p.fail_timeout, p.max_conns))
        if not servers:
            servers = [UpstreamServer(error_server_address(self.static.run_dir), 1, "10s", 0)]
        self.upstreams[name] = Upstream(
            name=name, servers=tuple(servers), lb_method=p.lb_method, keepalive=p.keepalive,
            zone_size=p.upstream_zone_size,
        )
        return name

    def location(self, modifier: str, path: str, upstream: str, service: str, *,
                 trailing_slash: bool) -> Location:
        p = self.params
        rewrite = self.anns.rewrites.get(service, "")
        if rewrite and trailing_slash:
            rewrite = rewrite.rstrip("/") + "/"
        return Location(
            path=path, modifier=modifier, upstream=upstream, service_name=service,
            proxy_connect_timeout=p.proxy_connect_timeout, proxy_read_timeout=p.proxy_read_timeout,
            proxy_send_timeout=p.proxy_send_timeout, client_max_body_size=p.client_max_body_size,
            proxy_buffering=p.proxy_buffering, proxy_buffers=p.proxy_buffers,
            proxy_buffer_size=p.proxy_buffer_size, proxy_max_temp_file_size=p.proxy_max_temp_file_size,
            websocket=service in self.anns.websocket_services, ssl=service in self.anns.ssl_services,
            rewrite=rewrite, keepalive=p.keepalive > 0, redirect_to_https=p.redirect_to_https,
            snippets=p.location_snippets,
        )

    def tls(self, host: str, tls_hosts: dict[str, str]) -> tuple[bool, str, bool]:
        """(ssl, pem path, reject handshake) for a host."""
        if host not in tls_hosts:
            return False, "", False
        secret_name = tls_hosts[host]
        if not secret_name:
            if self.static.wildcard_tls_path:
                return True, self.static.wildcard_tls_path, False
            self.warnings.append(f"TLS termination for host '{host}' requires specifying a TLS secret or "
                                 "configuring a global wildcard TLS secret")
            return True, "", True
        ref = self.ing_ex.secret_refs.get(secret_name)
        if ref is None:
            self.warnings.append(f"TLS secret {secret_name} is invalid: {_SECRET_MISSING}")
            return True, "", True
        if ref.secret_type and ref.secret_type != TLS_SECRET_TYPE:
            self.warnings.append(f"TLS secret {secret_name} is of a wrong type '{ref.secret_type}', must be "
                                 f"'{TLS_SECRET_TYPE}'")
            return True, "", True
        if ref.error or not ref.path:
            error = ref.error or _SECRET_MISSING
            self.warnings.append(f"TLS secret {secret_name} is invalid: {error}")
            return True, "", True
        return True, ref.path, False


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _tls_hosts(spec: dict[str, Any]) -> dict[str, str]:
    """host -> secretName from spec.tls (exact host match; with several entries the last wins)."""
    result: dict[str, str] = {}
    for tls in _list(spec.get("tls")):
        if not isinstance(tls, dict):
            continue
        secret = tls.get("secretName") or ""
        for host in _list(tls.get("hosts")):
            if isinstance(host, str):
                result[host] = secret if isinstance(secret, str) else ""
    return result


def generate_nginx_config(ing_ex: IngressEx, static: StaticConfigParams,
                          config_params: ConfigParams) -> tuple[IngressNginxConfig, list[str]]:
    """The template model for one regular Ingress, and warnings for what was left out or degraded."""
    metadata = _dict(ing_ex.ingress.get("metadata"))
    spec = _dict(ing_ex.ingress.get("spec"))
    annotations = {k: v for k, v in _dict(metadata.get("annotations")).items()
                   if isinstance(k, str) and isinstance(v, str)}
    anns, warnings = parse_annotations(annotations, config_params, snippets_enabled=static.enable_snippets)
    b = _Builder(ing_ex, static, anns, warnings)
    if not _LABEL.fullmatch(b.namespace) or not _NAME.fullmatch(b.name):
        raise ValueError(f"invalid Ingress namespace/name {b.namespace!r}/{b.name!r}")
    params = anns.params

    default_upstream = ""
    default_service = ""
    if spec.get("defaultBackend") is not None:
        backend, problem = _backend(spec.get("defaultBackend"))
        if backend is None:
            warnings.append(f"spec.defaultBackend is ignored: {problem}")
        else:
            default_upstream = b.upstream("", backend)
            default_service = backend.service

    # host -> {(modifier, path): (location, is_exact_path_type)}, in rule order
    hosts: dict[str, dict[tuple[str, str], tuple[Location, bool]]] = {}
    for rule in _list(spec.get("rules")):
        if not isinstance(rule, dict):
            continue
        host = rule.get("host") or ""
        if not isinstance(host, str) or not ing_ex.valid_hosts.get(host):
            continue
        if not _HOST.fullmatch(host):
            warnings.append(f"host {host!r} is invalid; its rule is ignored")
            continue
        locations = hosts.setdefault(host, {})
        paths = _list(_dict(rule.get("http")).get("paths"))
        for path_entry in paths:
            if not isinstance(path_entry, dict):
                continue
            path = path_entry.get("path") or "/"
            path_type = path_entry.get("pathType") or PATH_TYPE_IMPLEMENTATION_SPECIFIC
            if not isinstance(path, str) or not _PATH.fullmatch(path):
                warnings.append(f"path {path!r} of host {host} is invalid; ignored")
                continue
            if path_type not in (PATH_TYPE_EXACT, PATH_TYPE_PREFIX, PATH_TYPE_IMPLEMENTATION_SPECIFIC):
                warnings.append(f"path {path} of host {host} has an unsupported pathType {path_type!r}; "
                                "ignored")
                continue
            backend, problem = _backend(path_entry.get("backend"))
            if backend is None:
                warnings.append(f"path {path} of host {host} is ignored: {problem}")
                continue
            upstream = b.upstream(host, backend)
            is_exact = path_type == PATH_TYPE_EXACT
            duplicate = False
            for modifier, location_path in location_keys(path, path_type):
                key = (modifier, location_path)
                loc = b.location(modifier, location_path, upstream, backend.service,
                                 trailing_slash=path_type == PATH_TYPE_PREFIX and modifier == PREFIX)
                existing = locations.get(key)
                if existing is None:
                    locations[key] = (loc, is_exact)
                elif is_exact and not existing[1]:
                    locations[key] = (loc, is_exact)  # Kubernetes: an Exact path beats a Prefix one
                elif existing[1] and not is_exact and modifier == EXACT:
                    pass  # this Prefix path's exact location is served by an Exact path, as Kubernetes says
                else:
                    duplicate = True
            if duplicate:
                warnings.append(f"path {path} ({path_type}) of host {host} duplicates an earlier path; "
                                "ignored")

    tls_hosts = _tls_hosts(spec)
    servers = []
    for host, locations in hosts.items():
        locs = [loc for loc, _ in locations.values()]
        fallback = 0
        if (PREFIX, "/") not in locations:
            if default_upstream:
                locs.append(b.location(PREFIX, "/", default_upstream, default_service, trailing_slash=False))
            else:
                fallback = 404
        ssl, pem, reject = b.tls(host, tls_hosts)
        servers.append(Server(
            name=host, locations=tuple(locs), ports=(static.http_port,), ssl_ports=(static.https_port,),
            ssl=ssl, ssl_certificate=pem, ssl_certificate_key=pem, ssl_reject_handshake=reject,
            ssl_redirect=ssl and not reject and params.ssl_redirect,
            redirect_to_https=params.redirect_to_https,
            http2=params.http2, server_tokens=params.server_tokens, disable_ipv6=static.disable_ipv6,
            snippets=params.server_snippets, fallback_status=fallback,
        ))

    used = {loc.upstream for server in servers for loc in server.locations}
    if default_upstream:
        used.add(default_upstream)
    cfg = IngressNginxConfig(
        upstreams=tuple(b.upstreams[n] for n in sorted(used)),
        servers=tuple(servers),
        ingress=IngressMeta(name=b.name, namespace=b.namespace, annotations=annotations),
        keepalive=str(params.keepalive) if params.keepalive > 0 else "",
    )
    return cfg, warnings
