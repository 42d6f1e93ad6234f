"""One server serving the paths of several Ingresses: NIC's minions under their master, and the Ingresses of
an ingress-nginx class that share a host with its owner (ingress-nginx served one server per host).

Guarantees:
- `ServerMerge.add` puts the locations one minion (or member) built for the server's host into the server's
  locations, unless a location with the same (modifier, path) is there already: the first one stays (the
  owner's own paths, then the minions in the order they are added), and the later one is a warning of its
  Ingress. Its locations and upstreams take the file's keepalive (the master's or owner's: one value per
  file, as NIC); a location equal to nginx.conf's proxy settings inherits them unless the server has
  snippets.
- What the served locations need comes along, only for an Ingress with at least one served location: its
  upstreams, rate-limit zones, connection-limit zones and key maps, and its ingress-nginx extras (auth-url,
  copies, ...), keyed by its (namespace, name); its CORS and policies are listed for the caller.
- `add_members` adds the members of an owner's shared hosts (oldest first), each for each host it shares:
  with its own annotations only (nothing of the owner's is inherited; those NIC denies a minion, and the
  ingress-nginx ones that set the server (`SERVER_LEVEL`) when their value differs from the owner's, are
  named in a warning and left out). A shared host without TLS of the owner's takes the first member's
  `spec.tls` entry for it, with that member's Secrets (ingress-nginx: the first Ingress with a certificate
  for the host).
- `isolate_members`: a member's location does not take the owner's server-level basic auth (`auth_basic off`
  unless it has its own) nor its interception of error codes (`proxy_intercept_errors off` unless it has
  codes of its own): ingress-nginx applied both per location.
- `warnings` holds each added Ingress's warnings by key (`warnings_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from ingressctl.configs.config import (
    IngressNginxConfig,
    LimitConnZone,
    LimitKeyMap,
    LimitReqZone,
    ProxyDefaults,
    Upstream,
    derive,
)
from ingressctl.kinds.ingress.annotations import minion_annotations
from ingressctl.kinds.ingress.ingress_ex import IngressEx, string_annotations
from ingressctl.kinds.ingress.locations import Locations, ServerParts, put_location, tls_secret_names
from ingressctl.kinds.ingress.settings import inherits_proxy_defaults
from ingressctl.secret_types import SecretReference
from ingressctl.validation import as_dict

Owner = tuple[str, str]
_PREFIX = "nginx.ingress.kubernetes.io/"
SERVER_LEVEL = frozenset(_PREFIX + n for n in (
    "app-root", "server-snippet", "ssl-ciphers", "ssl-prefer-server-ciphers", "ssl-redirect",
    "force-ssl-redirect", "from-to-www-redirect", "auth-tls-secret", "auth-tls-verify-client",
    "auth-tls-verify-depth", "auth-tls-error-page", "auth-tls-pass-certificate-to-upstream",
    "auth-tls-match-cn", "custom-http-errors", "default-backend"))
"""The ingress-nginx annotations that ingressctl applies to a whole server (redirects, TLS, error pages)."""


class MinionBuilder(Protocol):
    """What the merge reads of the builder of one minion's parts."""

    @property
    def upstreams(self) -> dict[str, Upstream]: ...

    @property
    def limit_req(self) -> object | None: ...

    @property
    def limit_req_zones(self) -> dict[str, LimitReqZone]: ...

    @property
    def limit_conn_zones(self) -> dict[str, LimitConnZone]: ...

    @property
    def limit_key_maps(self) -> dict[str, LimitKeyMap]: ...

    @property
    def ingress_nginx_extras(self) -> Mapping[str, Any]: ...

    @property
    def cors(self) -> Any: ...


class MinionParts(Protocol):
    @property
    def builder(self) -> MinionBuilder: ...

    @property
    def servers(self) -> list[ServerParts]: ...


class OwnerParts(Protocol):
    @property
    def servers(self) -> list[ServerParts]: ...

    @property
    def tls_refs(self) -> dict[str, dict[str, SecretReference]]: ...


P = TypeVar("P", bound=MinionParts)


def isolate_members(cfg: IngressNginxConfig) -> IngressNginxConfig:
    """See the module docstring."""
    servers = []
    for server in cfg.servers:
        if server.basic_auth or server.custom_http_errors:
            locations = []
            for loc in server.locations:
                if loc.minion is not None and loc.minion.member:
                    if server.basic_auth and loc.basic_auth is None:
                        loc = derive(loc, policy_lines=(*loc.policy_lines, "auth_basic off;"))
                    if server.custom_http_errors and not loc.custom_http_errors:
                        loc = derive(loc, skip_custom_http_errors=True)
                locations.append(loc)
            server = derive(server, locations=tuple(locations))
        servers.append(server)
    return derive(cfg, servers=tuple(servers))


def server_level(member: Mapping[str, str], owner: Mapping[str, str]) -> list[str]:
    """The member's ingress-nginx annotations that set the server to another value than the owner's."""
    return [k for k in member if k in SERVER_LEVEL and member[k] != owner.get(k)]


@dataclass
class MergeableResult:
    """The config of a master and its minions (or of an Ingress and its members), with warnings for the
    master and for each minion (member) by key."""

    config: IngressNginxConfig
    warnings: list[str]
    minion_warnings: dict[str, list[str]]


@dataclass
class ServerMerge:
    """See the module docstring."""

    keepalive: int
    proxy_defaults: ProxyDefaults | None
    server_snippets: tuple[str, ...]
    upstreams: dict[str, Upstream] = field(default_factory=dict)
    zones: dict[str, LimitReqZone] = field(default_factory=dict)
    conn_zones: dict[str, LimitConnZone] = field(default_factory=dict)
    key_maps: dict[str, LimitKeyMap] = field(default_factory=dict)
    extras: dict[Owner, Mapping[str, Any]] = field(default_factory=dict)
    cors: list[tuple[str, str, str, Any, Any]] = field(default_factory=list)
    warnings: dict[str, list[str]] = field(default_factory=dict)

    def warnings_of(self, key: str) -> list[str]:
        return self.warnings.setdefault(key, [])

    def add(self, locations: Locations, minion: IngressEx, parts: MinionParts, duplicate: str) -> None:
        """Merge `parts` (built for the server's host) into `locations`; `duplicate` is the warning for a
        location already there (`{where}`: its modifier and path)."""
        b = parts.builder
        mw = self.warnings_of(minion.key)
        self.cors.append((minion.namespace, minion.name, minion.key, b.cors, minion.policies))
        used: set[str] = set()
        for sp in parts.servers:
            for loc, is_exact in sp.locations.values():
                loc = derive(loc, keepalive=self.keepalive > 0)
                inherits = inherits_proxy_defaults(loc, self.proxy_defaults, self.server_snippets)
                if inherits != loc.inherits_proxy_defaults:
                    loc = derive(loc, inherits_proxy_defaults=inherits)
                if put_location(locations, loc, is_exact):
                    used.add(loc.upstream)
                else:
                    mw.append(duplicate.format(where=f"{loc.modifier} {loc.path}".strip()))
        if not used:
            return
        for name in sorted(used):
            self.upstreams[name] = derive(b.upstreams[name], keepalive=self.keepalive)
        if b.limit_req is not None:  # the zone of the minion's served locations
            self.zones.update(b.limit_req_zones)
        self.conn_zones.update(b.limit_conn_zones)  # ingress-nginx's connection limits and allowlists
        self.key_maps.update(b.limit_key_maps)
        if b.ingress_nginx_extras:
            self.extras[(minion.namespace, minion.name)] = b.ingress_nginx_extras

    def add_members(self, parts: OwnerParts, owner: IngressEx, tls_hosts: dict[str, str],
                    build: Callable[[IngressEx, dict[str, str], list[str], str], P]) -> dict[str, str]:
        """Add the owner's members into `parts.servers`; returns the TLS Secret names by host (the owner's,
        then its members'). `build(member, annotations, warnings, host)` builds a member's parts of a host
        (raising ValueError for invalid annotations: those paths are left out with a warning)."""
        by_host = {sp.host: sp for sp in parts.servers}
        tls_hosts = dict(tls_hosts)
        owner_annotations = string_annotations(owner.ingress)
        for member in owner.members:
            mw = self.warnings_of(member.key)
            own = string_annotations(member.ingress)
            annotations, removed = minion_annotations(own, {})
            removed += server_level(annotations, owner_annotations)
            for k in removed:
                annotations.pop(k, None)
            if removed:
                mw.append(f"annotation(s) {', '.join(sorted(removed))} set the server of a host shared with "
                          f"Ingress {owner.key}, the oldest of the host, whose settings apply; ignored here")
            member_tls = tls_secret_names(as_dict(member.ingress.get("spec")))
            for host, shared in member.valid_hosts.items():
                sp = by_host.get(host)
                if not shared or sp is None:
                    continue
                if host not in tls_hosts and host in member_tls:
                    tls_hosts[host] = member_tls[host]
                    parts.tls_refs[host] = member.secret_refs
                try:
                    mparts = build(member, annotations, mw, host)
                except ValueError as e:  # AnnotationError included
                    mw.append(f"its paths of host {host} are not served: {e}")
                    continue
                duplicate = (f"location {{where}} of host {host} is served by an older Ingress of the host; "
                             "ignored here")
                self.add(sp.locations, member, mparts, duplicate)
        return tls_hosts
