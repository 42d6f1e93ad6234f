"""Routes: Ingress hosts served from the routes module's table instead of server blocks.

With ingressctl's routes NGINX module loaded by nginx.conf, an Ingress server whose every setting the module
reproduces is not rendered as a `server` block but as an `ingressctl_route_host` block in the same conf.d file
(its upstream blocks stay as they are). NGINX loads such a host as data: a reload no longer parses a server
and its locations per host, and a change to it is pushed to the module's API without a reload
(configs.route_updates). The default server (nginx.conf) serves those hosts, in one named location per
distinct `client_max_body_size` (a *shape*), with the http-level proxy settings every routable location
inherits.

Guarantees:
- `routable(server, ctx)` is True only for a server equal, field for field, to the server the module
  reproduces: the default ports, a plain host name (no wildcard, no regex), no settings of its own but its
  certificate (loaded at handshakes), its HTTPS redirect and its server tokens equal to the ConfigMap's; and
  locations that are prefix or exact paths proxying to an upstream with the http-level proxy settings and
  nothing else but their `client_max_body_size` (a prefix path ending in `/` only with the exact path
  without it, so NGINX's redirect of that path is never needed). Anything else keeps its server block. The
  comparison is with `dataclasses.replace`, so a setting added to the model later keeps servers that use it
  out of the table until this module knows it.
- `render_routes(cfg, server)` is the block of one routable server; every field is percent-encoded where
  NGINX's parser or the API's line format would read it otherwise, and the module decodes it.
- Locations keep NGINX's choice: the module matches an exact path, then the longest prefix, on the same URI.
- Spares (`spares_config`, rendered into conf.d/ingressctl-route-spares.conf): upstream blocks of the
  ConfigMap's balancing, parameters and keepalive, with four dynamic slots, that a new upstream borrows
  until the next reload (configs.route_updates). They serve nothing until one is lent: no route names
  them. `spare_count(n)` steps in powers of two, so that the file (and so a reload) changes rarely.
- A host that a wildcard or regular-expression server name of any resource would take (NGINX prefers those
  to the default server) is not routed: `RouteContext.captures` holds those names.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import re
from collections.abc import Callable, Iterable

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
from ingressctl.configs.configmaps import ConfigParams
from ingressctl.keys import ResourceKey

HOST_DIRECTIVE = "ingressctl_route_host"
SHAPE_PREFIX = "ingressctl_route_"
"""Named locations of the default server: `@ingressctl_route_<client_max_body_size>`."""
ROUTED_UPSTREAM = "ingressctl-routed"
"""The upstream of those locations: the module hands each request to its route's upstream."""
CERTIFICATE_VARIABLE = "$ingressctl_route_or_default_certificate"
"""What the certificate map gives the names it does not list: a routed TLS host's own certificate (by
SNI), else the default server's."""

_HOST = re.compile(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?")
_SIZE = re.compile(r"(\d+)([kKmMgG]?)")
_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
_UNSAFE = re.compile(r"[\x00-\x20\x7f-\U0010ffff%;{}\"'#\\]")


def encode(value: str) -> str:
    """`value` with the characters NGINX's parser or the API's lines reserve percent-encoded (UTF-8)."""
    if not _UNSAFE.search(value):
        return value
    return _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), value)


@functools.lru_cache(maxsize=256)
def shape_of(size: str) -> str | None:
    """The named location (without `@`) of locations with this `client_max_body_size`, None if the size is
    not one the module's shapes take."""
    m = _SIZE.fullmatch(size)
    return f"{SHAPE_PREFIX}{m.group(1)}{m.group(2).lower()}" if m else None


def size_bytes(size: str) -> int:
    """`client_max_body_size` in bytes, as NGINX reads it (0: no limit)."""
    m = _SIZE.fullmatch(size)
    if m is None:
        raise ValueError(f"not a size: {size!r}")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


@dataclasses.dataclass(frozen=True)
class RouteContext:
    """What decides whether a server is routable: the listeners and the ConfigMap's server-level values."""

    http_port: int
    https_port: int
    server_tokens: str
    proxy_keepalive: bool  # the http-level `proxy_set_header Connection ""`
    proxy_connect_timeout: str
    proxy_read_timeout: str
    proxy_send_timeout: str
    proxy_buffering: bool
    # Server names of other servers that take hosts without a server block (capturing_names): a host they
    # would take keeps its server block.
    captures: frozenset[str] = frozenset()

    @functools.cached_property
    def expected(self) -> tuple[Callable[[Server], object], tuple[object, ...],
                                Callable[[Location], object], tuple[object, ...]]:
        """`_expected(self)`, once per context (a render context lives as long as its inputs)."""
        return _expected(self)


# Fields a routed server or location may set as it likes (the module serves them as data); every other field
# must hold the value of the plain server or location (`_expected`), checked one by one (building a plain
# dataclass per server to compare cost a sixth of the start-up render at 50,000 Ingresses).
_SERVER_FREE = frozenset({"name", "locations", "ssl", "ssl_certificate", "ssl_certificate_key",
                          "certificate_per_handshake", "ssl_redirect", "http_redirect_code",
                          "fallback_status", "http2", "http2_directive", "disable_ipv6"})
_LOCATION_FREE = frozenset({"path", "modifier", "upstream", "service_name", "client_max_body_size"})


def _expected(ctx: RouteContext) -> tuple[Callable[[Server], object], tuple[object, ...],
                                          Callable[[Location], object], tuple[object, ...]]:
    """Getters of the fields of a server and of a location that are not free, and their values in the plain
    server and location of `ctx` (attrgetter reads them all at once)."""
    server = Server(name="x", ports=(ctx.http_port,), ssl_ports=(ctx.https_port,),
                    server_tokens=ctx.server_tokens)
    location = Location(path="/", modifier=PREFIX, upstream="x", service_name="x",
                        proxy_connect_timeout=ctx.proxy_connect_timeout,
                        proxy_read_timeout=ctx.proxy_read_timeout,
                        proxy_send_timeout=ctx.proxy_send_timeout, proxy_buffering=ctx.proxy_buffering,
                        keepalive=ctx.proxy_keepalive, inherits_proxy_defaults=True)
    server_get = operator.attrgetter(*(f.name for f in dataclasses.fields(Server)
                                       if f.name not in _SERVER_FREE))
    location_get = operator.attrgetter(*(f.name for f in dataclasses.fields(Location)
                                         if f.name not in _LOCATION_FREE))
    return server_get, server_get(server), location_get, location_get(location)


def routable(server: Server, ctx: RouteContext) -> bool:
    """See the module docstring."""
    s = server
    if not _HOST.fullmatch(s.name) or len(s.name) > 253 or not s.locations:
        return False
    if ctx.captures and captured(s.name, ctx.captures):
        return False
    server_get, server_plain, location_get, location_plain = ctx.expected
    if server_get(s) != server_plain:
        return False
    if s.ssl != s.certificate_per_handshake or (s.ssl and not s.ssl_certificate) or (
            s.ssl_redirect and not s.ssl) or (not s.ssl and (s.ssl_certificate or s.ssl_certificate_key)):
        return False
    root = any(loc.path == "/" and loc.modifier == PREFIX for loc in s.locations)
    # `location / { return 404; }` where no path is `/`: what the module answers anyway
    if s.fallback_status != (0 if root else 404) and s.fallback_status:
        return False
    exact = {loc.path for loc in s.locations if loc.modifier == EXACT}
    for loc in s.locations:
        if loc.modifier not in (PREFIX, EXACT) or shape_of(loc.client_max_body_size) is None:
            return False
        if location_get(loc) != location_plain:
            return False
        if loc.modifier == PREFIX and len(loc.path) > 1 and loc.path.endswith("/") and (
                loc.path[:-1] not in exact):
            return False
    return True


def split_routed(cfg: IngressNginxConfig, ctx: RouteContext) -> tuple[IngressNginxConfig, list[Server]]:
    """`cfg` without its routable servers, and those servers."""
    routed = [s for s in cfg.servers if routable(s, ctx)]
    if not routed:
        return cfg, []
    rest = tuple(s for s in cfg.servers if not any(s is r for r in routed))  # by identity: cheap
    return dataclasses.replace(cfg, servers=rest), routed


def render_routes(cfg: IngressNginxConfig, server: Server, ctx: RouteContext) -> str:
    """The `ingressctl_route_host` block of a routable server (see the routes module's format)."""
    redirect = server.http_redirect_code if server.ssl and server.ssl_redirect else 0
    certificate = encode(server.ssl_certificate) if server.ssl else "-"
    head = (f"{HOST_DIRECTIVE} {encode(server.name)} {encode(cfg.ingress.namespace)} "
            f"{encode(cfg.ingress.name)} {certificate} {redirect} {ctx.https_port} {{")
    lines = ["", head]
    for loc in server.locations:
        kind = "exact" if loc.modifier == EXACT else "prefix"
        lines.append(f"    {kind} {encode(loc.path)} {shape_of(loc.client_max_body_size)} "
                     f"{encode(loc.upstream)} {encode(loc.service_name)} "
                     f"{size_bytes(loc.client_max_body_size)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def shapes_of(servers: Iterable[Server]) -> frozenset[str]:
    """The client_max_body_size values (shapes) the locations of routed servers use."""
    return frozenset(loc.client_max_body_size for s in servers for loc in s.locations)


class RouteShapes:
    """Which shapes each resource's routed servers use, so that nginx.conf declares each one in use."""

    def __init__(self) -> None:
        self._of: dict[object, frozenset[str]] = {}
        self._users: dict[str, int] = {}

    def set(self, key: object, shapes: frozenset[str]) -> bool:
        """Record `key`'s shapes (empty: none); True when a shape no resource used before is used now
        (nginx.conf must then declare it). A shape no longer used is dropped at nginx.conf's next render."""
        old = self._of.pop(key, frozenset())
        if shapes:
            self._of[key] = shapes
        if old == shapes:
            return False
        for shape in old - shapes:
            self._users[shape] -= 1
            if not self._users[shape]:
                del self._users[shape]
        added = False
        for shape in shapes - old:
            added = added or shape not in self._users
            self._users[shape] = self._users.get(shape, 0) + 1
        return added

    def all(self) -> frozenset[str]:
        return frozenset(self._users)


SPARES_KEY = ResourceKey("ingressctl", "route-spares")
"""What the spares reserve in the shared upstream zone is accounted under this key."""
SPARE_PREFIX = "ingressctl-route-spare-"
SPARE_PLACEHOLDERS = 3  # so 4 slots (configs.dynamic_upstreams.slots_for)


def spare_count(resources: int) -> int:
    """How many spares for this many resources: at least 64, about one for 32 resources, a power of two."""
    need = max(64, resources // 32)
    return 1 << (need - 1).bit_length()


def spares_config(count: int, config: ConfigParams) -> IngressNginxConfig:
    """The spares as the Ingress template renders upstreams: the ConfigMap's balancing, parameters and
    keepalive, three placeholder servers (so four slots) that serve nothing until a spare is lent."""
    servers = tuple(UpstreamServer(f"127.0.0.1:{i + 1}", config.max_fails, config.fail_timeout,
                                   config.max_conns) for i in range(SPARE_PLACEHOLDERS))
    upstreams = tuple(Upstream(name=f"{SPARE_PREFIX}{i}", servers=servers, lb_method=config.lb_method,
                               keepalive=config.keepalive, zone_size=config.upstream_zone_size)
                      for i in range(count))
    return IngressNginxConfig(upstreams=upstreams, servers=(),
                              ingress=IngressMeta(name="route-spares", namespace="ingressctl"))


_SERVER_NAME = re.compile(r"^[ \t]*server_name[ \t]+([^;]*);", re.M)


def capturing_names(text: str) -> frozenset[str]:
    """The server names of a rendered file that take hosts other than themselves from NGINX's choice of a
    server: wildcards (`*.example.com`, `www.example.*`) and regular expressions (`~...`)."""
    if "server_name" not in text:
        return frozenset()
    names = set()
    for m in _SERVER_NAME.finditer(text):
        for name in m.group(1).split():
            name = name.strip('"')
            if name.startswith(("*", "~", ".")) or name.endswith("*"):
                names.add(name)
    return frozenset(names)


def captured(host: str, names: frozenset[str]) -> bool:
    """Whether a server named in `names` (capturing_names) would take requests for `host`: NGINX chooses
    such a server for a host without a server block of its own (a regular expression is taken to match)."""
    for name in names:
        if name.startswith("~"):
            return True
        if name.startswith("*.") and host.endswith(name[1:]):
            return True
        if name.startswith(".") and (host == name[1:] or host.endswith(name)):
            return True
        if name.endswith(".*") and host.startswith(name[:-1]):
            return True
    return False
