"""ingress-nginx's `ssl-passthrough` annotation (with `--ingress-nginx-compat`): the TLS connections of the
Ingress's hosts on the passthrough port go, unterminated, to the backend of each host's `/` path.

Guarantees:
- `root_backends(ingress, valid_hosts)`: for each host the Ingress owns, the Service backend of its rule's
  `/` path (any pathType), else the Ingress's `spec.defaultBackend` (ingress-nginx's server `/` location), as
  ingress-nginx picks it; a host with neither, a wildcard host (the SNI match is exact, as ingress-nginx's TCP
  proxy) and a rule without host are left out with a warning. Nothing else of the Ingress (paths, other
  annotations) applies to passed-through connections.
- `https_services(...)`: the Services of those backends, which the Ingress's HTTP locations speak HTTPS to
  (ingress-nginx marks the `/` backend's upstream HTTPS whether or not passthrough is enabled: the backend
  terminates TLS itself), for annotation values Go reads as true only.
- `IngressPassthroughs` (the Ingress builder's part, `apply` and `forget` on the sync thread): with TLS
  passthrough enabled (`--enable-tls-passthrough`: the TransportServer wiring hands it the shared table), an
  Ingress whose annotation is true gets `stream-conf.d/ingress-passthrough_<ns>_<name>.conf`: one stream
  upstream per backend (the endpoints the Ingress itself resolved, so EndpointSlice changes follow; no ready
  endpoints: a socket nobody listens on, connections close at once) and one server on a unix socket of the
  run dir (`ingress-pt-<hash>.sock`: short, as socket paths are limited to about 100 bytes), which the SNI
  split's routes of the Ingress's hosts name. Without the table it returns one warning
  naming `--enable-tls-passthrough` and renders nothing. An Ingress that no longer has the annotation, is no
  longer configured, or has no usable host loses its routes and its file.
- Masters, minions and canary Ingresses are not passed through (the builder warns for masters and minions).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ingressctl.configs.quoting import quote
from ingressctl.configs.renderers import RenderContext, Rendered
from ingressctl.keys import ResourceKey
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.kinds.ingress.refs import backend_service
from ingressctl.kinds.passthrough import STREAM_DIR, PassthroughTable, socket_address
from ingressctl.validation import parse_go_bool

SSL_PASSTHROUGH = "nginx.ingress.kubernetes.io/ssl-passthrough"
INGRESS_PASSTHROUGH_KIND = "ingresspassthrough"  # the renderer of an Ingress's passthrough stream servers
LB_METHOD = "random two least_conn"  # as TransportServers' default
NOT_ENABLED = (f"annotation {SSL_PASSTHROUGH} is ignored: TLS passthrough is not enabled "
               "(--enable-tls-passthrough); TLS connections for the Ingress's hosts are terminated by NGINX")
MERGEABLE = f"annotation {SSL_PASSTHROUGH} is ignored on mergeable (master and minion) Ingresses"

Backend = tuple[str, int | str]


def wants_passthrough(ingress: Mapping[str, Any]) -> bool:
    """The annotation's value reads as true (Go's strconv.ParseBool, as ingress-nginx)."""
    value = ((ingress.get("metadata") or {}).get("annotations") or {}).get(SSL_PASSTHROUGH)
    return isinstance(value, str) and parse_go_bool(value) is True


def _root_backend(rule: Mapping[str, Any]) -> Backend | None:
    http = rule.get("http")
    paths = http.get("paths") if isinstance(http, dict) else None
    for p in paths if isinstance(paths, list) else []:
        if isinstance(p, dict) and p.get("path") == "/":
            b = backend_service(p.get("backend"))
            if b is not None and b[0]:
                return b
    return None


def root_backends(ingress: Mapping[str, Any], valid_hosts: Mapping[str, bool]) -> tuple[dict[str, Backend],
                                                                                     list[str]]:
    """See the module docstring: host -> (Service, port), and warnings."""
    spec = ingress.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    default = backend_service(spec.get("defaultBackend"))
    rules = spec.get("rules")
    out: dict[str, Backend] = {}
    warnings: list[str] = []
    for rule in rules if isinstance(rules, list) else []:
        if not isinstance(rule, dict):
            continue
        host = str(rule.get("host") or "")
        if not host:
            warnings.append(f"annotation {SSL_PASSTHROUGH}: a rule without host cannot be passed through "
                            "(the TLS client's SNI selects the backend); ignored for it")
            continue
        if not valid_hosts.get(host, False) or host in out:
            continue
        if host.startswith("*."):
            warnings.append(f"annotation {SSL_PASSTHROUGH}: wildcard host {host} is not passed through "
                            "(the SNI match is exact); ignored for it")
            continue
        backend = _root_backend(rule) or (default if default is not None and default[0] else None)
        if backend is None:
            warnings.append(f"annotation {SSL_PASSTHROUGH}: host {host} has no '/' path and the Ingress no "
                            "defaultBackend; ignored for it (as ingress-nginx)")
            continue
        out[host] = backend
    return out, warnings


def https_services(ingress: Mapping[str, Any], valid_hosts: Mapping[str, bool]) -> frozenset[str]:
    """See the module docstring."""
    if not wants_passthrough(ingress):
        return frozenset()
    return frozenset(svc for svc, _ in root_backends(ingress, valid_hosts)[0].values())


@dataclass(frozen=True)
class PassthroughBackend:
    """One backend's stream upstream and the server (on a unix socket of the run dir) in front of it."""

    service: str
    port: int | str
    upstream: str
    socket: str                  # file name in the run dir
    endpoints: tuple[str, ...]   # "ip:port", sorted


@dataclass(frozen=True)
class IngressPassthrough:
    """What an Ingress's passthrough file depends on."""

    namespace: str
    name: str
    hosts: tuple[tuple[str, str], ...]   # (host, socket file name), sorted
    backends: tuple[PassthroughBackend, ...]


def socket_name(namespace: str, name: str, backend: Backend) -> str:
    """A short, stable socket file name (unix socket paths are limited to about 100 bytes)."""
    digest = hashlib.sha256(f"{namespace}/{name}/{backend[0]}:{backend[1]}".encode()).hexdigest()[:16]
    return f"ingress-pt-{digest}.sock"


def build(ex: IngressEx, hosts: Mapping[str, Backend]) -> IngressPassthrough:
    backends: dict[Backend, PassthroughBackend] = {}
    for backend in sorted(set(hosts.values()), key=str):
        svc, port = backend
        backends[backend] = PassthroughBackend(
            svc, port, f"ingress_passthrough_{ex.namespace}_{ex.name}_{svc}_{port}",
            socket_name(ex.namespace, ex.name, backend),
            tuple(sorted(ex.endpoints.get(backend_key(svc, port), []))))
    return IngressPassthrough(ex.namespace, ex.name,
                              tuple(sorted((h, backends[b].socket) for h, b in hosts.items())),
                              tuple(backends.values()))


class IngressPassthroughRenderer:
    """The Configurator's renderer of `IngressPassthrough` (a stream config file)."""

    kind = INGRESS_PASSTHROUGH_KIND

    def file_name(self, key: ResourceKey) -> str:
        return f"{STREAM_DIR}/ingress-passthrough_{key.ns_name.replace('/', '_')}"

    def render(self, resource: object, ctx: RenderContext) -> Rendered:
        if not isinstance(resource, IngressPassthrough):
            raise TypeError(f"not an Ingress passthrough: {type(resource).__name__}")
        run_dir = ctx.static.run_dir
        lines = [f"# ssl-passthrough of Ingress {resource.namespace}/{resource.name}; generated by "
                 "ingressctl, do not edit."]
        for host, sock in resource.hosts:
            lines.append(f"# {host} -> {sock}")
        for b in resource.backends:
            lines += ["", f"upstream {quote(b.upstream)} {{", f"    {LB_METHOD};"]
            lines += [f"    server {quote(a)};" for a in b.endpoints] or [
                f"    server {quote(socket_address(run_dir, 'non-existing-unix-socket.sock'))};"]
            lines += ["}", "", f"# Service {b.service}, port {b.port}", "server {",
                      f"    listen {quote(socket_address(run_dir, b.socket))} proxy_protocol;",
                      "    set_real_ip_from unix:;", f"    proxy_pass {quote(b.upstream)};", "}"]
        return Rendered("\n".join(lines) + "\n", [])

    def counts(self, resources: Iterable[object]) -> dict[str, int]:
        return {}

    def catch_all(self, resource: object) -> str:
        return ""


class StreamFiles(Protocol):
    def add_or_update(self, key: ResourceKey, resource: object) -> list[str]: ...

    def delete(self, key: ResourceKey) -> None: ...


class IngressPassthroughs:
    """See the module docstring."""

    def __init__(self, table: PassthroughTable | None = None, files: StreamFiles | None = None) -> None:
        self._table = table
        self._files = files
        self._held: set[ResourceKey] = set()

    @property
    def enabled(self) -> bool:
        return self._table is not None and self._files is not None

    def apply(self, ex: IngressEx) -> list[str]:
        """Route the Ingress's hosts (or drop its routes); returns the warnings for its event."""
        if not wants_passthrough(ex.ingress):
            self.forget(ex.key_with_kind)
            return []
        if self._table is None or self._files is None:
            return [NOT_ENABLED]
        hosts, warnings = root_backends(ex.ingress, ex.valid_hosts)
        if not hosts:
            self.forget(ex.key_with_kind)
            return warnings
        key = ResourceKey(INGRESS_PASSTHROUGH_KIND, ex.key)
        resource = build(ex, hosts)
        warnings += self._files.add_or_update(key, resource)
        self._held.add(key)
        self._table.set(ex.key_with_kind, dict(resource.hosts))
        return warnings

    def forget(self, ingress_key: ResourceKey) -> None:
        if self._table is None or self._files is None:
            return
        self._table.forget(ingress_key)
        key = ResourceKey(INGRESS_PASSTHROUGH_KIND, ingress_key.ns_name)
        if key in self._held:
            self._held.discard(key)
            self._files.delete(key)
