"""IngressEx -> IngressNginxConfig (NIC's `generateNginxCfg`, `generateNginxCfgForMergeableIngresses`): pure
functions.

Guarantees:
- One server per host this Ingress owns (`valid_hosts[host]` True), in rule order; rules repeating a host are
  merged into one server. Upstreams are de-duplicated and sorted by name: `<ns>-<ing>-<host>-<svc>-<port>`
  (the default backend has an empty host: `<ns>-<ing>--<svc>-<port>`).
- An upstream without ready endpoints points at the 502 server (`unix:<run_dir>/nginx-502-server.sock`), so
  its requests get a 502 at once instead of hanging.
- pathType: `Exact` -> `location = /p` (`location ~ "^/p/$"` for a path ending in `/`: no automatic 301 from
  `/p`; anchored regex locations come first in their server); `Prefix` follows Kubernetes' element-wise rule
  (`location = /p` and `location /p/`, a trailing slash ignored; `/` -> `location /`);
  `ImplementationSpecific` -> `location /p`.
  With `nginx.org/path-regex`: `case_sensitive` -> `location ~ "^<path>"`, `case_insensitive` ->
  `location ~* "^<path>"` (an Exact path is also anchored at the end), `exact` -> `location = <path>`.
  When two paths would produce the same location, an Exact path wins over a Prefix one, otherwise the first
  wins and the other is reported. NGINX never sees a duplicate location.
- A host, path, service, port or endpoint that is not a safe, well-formed value is left out with a warning; it
  never reaches the template. (The templates quote everything again.)
- An invalid annotation value raises `AnnotationError` (the Ingress is rejected; its last good config stays).
- The catch-all (an Ingress without rules owning `CATCH_ALL_HOST`): one server, `server_name ~^ ""`, its
  default backend at `/`, HTTPS with the certificate of a `spec.tls` entry without hosts, else the default
  server's, else refused handshakes. With `to_catch_all`, the other servers send their unmatched paths (a
  `location /` when they have none) and, for a wildcard host, the hosts deeper than one label to
  `$ingressctl_catch_all`; without it those get 404 and the default server's answer.
- A wildcard host matches exactly one label (`if ($host !~ ...)` in its server).
- TLS: a host listed in `spec.tls` gets its Secret's PEM, or `ssl_reject_handshake on` with a warning when the
  Secret is missing, invalid or of the wrong type (HTTP keeps working, without the SSL redirect). With
  `static.certificates_per_handshake` a server on the default TLS port without SSL settings of its own
  names no certificate (`certificate_per_handshake`): the default server's context loads the same PEM at
  handshakes.
- Proxy settings: with `proxy_defaults` (what nginx.conf declares at the http level), a location whose
  settings equal them, in a server without snippets, inherits them instead of repeating them.
- Basic auth (`nginx.org/basic-auth-secret`): the htpasswd file of the Secret. A missing, invalid or
  wrong-type Secret gives a warning and still configures the Secret's file path (NIC), so NGINX refuses
  requests (403 when the file is absent) rather than serving them unauthenticated.
- Cost: what an annotation set makes of the ConfigMap and static params, and the location and server settings
  that follow from it, are computed once and shared by every Ingress with the same annotations (the model is
  frozen: a shared object is never changed, a location or server is a copy with its own path, upstream or
  TLS material). The output is the same as building each Ingress on its own.
- Mergeable Ingresses: one server from the master (its server-level settings, TLS and basic auth), holding
  the locations of every minion for the paths it won (`valid_minion_paths`), each with the minion's own
  upstreams (`<minion-ns>-<minion-name>-<host>-<svc>-<port>`), annotations (NIC's inheritance and deny lists),
  basic auth and rate limit; `keepalive` comes from the master only. A minion with an invalid annotation is
  left out with a warning; the others are served.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from ingressctl.configs import parsing
from ingressctl.configs.config import (
    EXACT,
    PREFIX,
    REGEX,
    REGEX_CASE_INSENSITIVE,
    BasicAuth,
    IngressMeta,
    IngressNginxConfig,
    LimitReq,
    LimitReqZone,
    Location,
    ProxyDefaults,
    ProxySetHeader,
    Server,
    Upstream,
    UpstreamServer,
    derive,
    error_server_address,
)
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.directive_values import StickyCookie
from ingressctl.controller.model import CATCH_ALL_HOST
from ingressctl.kinds.ingress.annotations import master_annotations, minion_annotations, parse_annotations
from ingressctl.kinds.ingress.annotations_nginx_org import ADD_HEADER_INHERIT, STICKY_COOKIE_SERVICES
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.kinds.ingress.policies import apply_ingress_policies
from ingressctl.secret_types import SecretReference

TLS_SECRET_TYPE = "kubernetes.io/tls"
HTPASSWD_SECRET_TYPE = "nginx.org/htpasswd"
_SECRET_MISSING = "secret doesn't exist or of an unsupported type"

_HOST = re.compile(r"(\*\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*")
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_PORT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?")
# A path in a prefix or exact location: no whitespace, quotes, backslash, ';', '{', '}', '$', '#' or control
# characters.
_PATH = re.compile(r"/[^\s\"'\\;{}$#\x00-\x1f\x7f]{0,2047}")
# A path used as a regular expression (written double-quoted): no whitespace, ';' or control characters.
_REGEX_PATH = re.compile(r"/[^\s;\x00-\x1f\x7f]{0,2047}")
_ENDPOINT = re.compile(
    r"(\d{1,3}(\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):\d{1,5}")

PATH_TYPE_EXACT = "Exact"
PATH_TYPE_PREFIX = "Prefix"
PATH_TYPE_IMPLEMENTATION_SPECIFIC = "ImplementationSpecific"


class AnnotationError(ValueError):
    """Invalid annotation values: the Ingress is rejected. `errors` holds one message per annotation."""

    def __init__(self, errors: list[str] | tuple[str, ...]) -> None:
        self.errors = tuple(errors)
        super().__init__("; ".join(self.errors))


def upstream_name(namespace: str, ingress_name: str, host: str, service: str, port: int | str) -> str:
    """NIC's upstream name: `<ns>-<ing>-<host>-<svc>-<port>`."""
    return f"{namespace}-{ingress_name}-{host}-{service}-{port}"


def location_keys(path: str, path_type: str, path_regex: str = "") -> list[tuple[str, str]]:
    """The NGINX locations `(modifier, path or regex)` that implement one Ingress path."""
    if path_regex in ("case_sensitive", "case_insensitive"):
        modifier = REGEX if path_regex == "case_sensitive" else REGEX_CASE_INSENSITIVE
        return [(modifier, "^" + path + ("$" if path_type == PATH_TYPE_EXACT else ""))]
    if path_type == PATH_TYPE_EXACT and path_regex != "exact" and len(path) > 1 and path.endswith("/"):
        return [exact_trailing_slash_location(path)]
    if path_regex == "exact" or path_type == PATH_TYPE_EXACT:
        return [(EXACT, path)]
    if path_type == PATH_TYPE_PREFIX:
        trimmed = path.rstrip("/")
        if not trimmed:
            return [(PREFIX, "/")]
        return [(EXACT, trimmed), (PREFIX, trimmed + "/")]
    return [(PREFIX, path)]


def exact_trailing_slash_location(path: str) -> tuple[str, str]:
    """An Exact path ending in `/` as an anchored regex location. `location = /foo/` would make NGINX answer
    `/foo` with a 301 to `/foo/` (its automatic redirect for a proxied location ending in a slash); a regex
    location has no such redirect, so `/foo` goes wherever it would go without this path."""
    return REGEX, "^" + re.escape(path) + "$"


def _exact_first(locations: list[Location]) -> list[Location]:
    """The regex locations of Exact paths before the others (otherwise in order): NGINX takes the first
    matching regex, and an Exact path wins for its URI. `locations` itself when it has none (most)."""
    for loc in locations:
        if loc.exact_regex:
            return sorted(locations, key=lambda loc: not loc.exact_regex)
    return locations


def _has_root(locations: list[Location]) -> bool:
    """A `location /` is among `locations`."""
    return any(loc.path == "/" and loc.modifier == PREFIX for loc in locations)


def _location_settings(p: ConfigParams, buffers_ok: bool, proxy_set_headers: tuple[ProxySetHeader, ...],
                       basic_auth: BasicAuth | None, limit_req: LimitReq | None, add_header_inherit: str,
                       proxy_defaults: ProxyDefaults | None, websocket: bool, ssl: bool, grpc: bool, *,
                       minion: IngressMeta | None = None) -> Location:
    """A location's settings from its Ingress's params and its service's flags (path, upstream, service name
    and rewrite left empty: `_Builder.location` fills them in)."""
    is_minion = minion is not None
    ok = buffers_ok
    keepalive = p.keepalive > 0
    inherits = proxy_defaults is not None and not p.server_snippets and _inherits_values(
        grpc=grpc, websocket=websocket, redirect_to_https=p.redirect_to_https, snippets=p.location_snippets,
        proxy_set_headers=proxy_set_headers, keepalive=keepalive, buffering=p.proxy_buffering,
        connect=p.proxy_connect_timeout, read=p.proxy_read_timeout, send=p.proxy_send_timeout,
        defaults=proxy_defaults)
    return Location(
        path="", modifier="", upstream="", service_name="",
        proxy_connect_timeout=p.proxy_connect_timeout, proxy_read_timeout=p.proxy_read_timeout,
        proxy_send_timeout=p.proxy_send_timeout, client_max_body_size=p.client_max_body_size,
        proxy_buffering=p.proxy_buffering, proxy_buffers=p.proxy_buffers if ok else "",
        proxy_buffer_size=p.proxy_buffer_size if ok else "",
        proxy_max_temp_file_size=p.proxy_max_temp_file_size if ok else "",
        websocket=websocket, ssl=ssl, rewrite="", keepalive=keepalive, redirect_to_https=p.redirect_to_https,
        snippets=p.location_snippets, grpc=grpc, proxy_set_headers=proxy_set_headers,
        basic_auth=basic_auth if is_minion else None, limit_req=limit_req, minion=minion,
        client_body_buffer_size=p.client_body_buffer_size,
        proxy_busy_buffers_size=p.proxy_busy_buffers_size if ok else "",
        proxy_next_upstream=p.proxy_next_upstream, proxy_next_upstream_timeout=p.proxy_next_upstream_timeout,
        proxy_next_upstream_tries=p.proxy_next_upstream_tries, rewrite_pattern="",
        rewrite_target=p.rewrite_target, add_headers=p.add_headers if is_minion else (),
        proxy_redirect=p.proxy_redirect if is_minion else ("", ""),
        add_header_inherit=add_header_inherit if is_minion else "",
        custom_http_errors=p.custom_http_errors if is_minion and not grpc else (),
        inherits_proxy_defaults=inherits,
    )


_F = TypeVar("_F", bound=Callable[..., Any])


def _shared(fn: _F) -> _F:
    """`fn` (a pure function of hashable arguments) cached by value, so that every Ingress with the same
    effective settings shares one result, with a cache by identity in front: most Ingresses pass the very
    same ConfigParams object (the ConfigMap's, when they have no annotations), and hashing one costs ~1 us
    (a fifth of a render's model) while comparing identities costs nothing."""
    by_value = functools.lru_cache(maxsize=1024)(fn)
    by_identity: dict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = {}

    @functools.wraps(fn)
    def cached(*args: Any) -> Any:
        key = tuple(map(id, args))
        hit = by_identity.get(key)
        if hit is not None:  # the same objects: the entry holds them, so no other object has their ids
            return hit[1]
        result = by_value(*args)
        if len(by_identity) >= 256:
            by_identity.clear()
        by_identity[key] = (args, result)
        return result

    return cast(_F, cached)


_shared_location_settings = _shared(_location_settings)


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


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _annotations(ing: dict[str, Any]) -> dict[str, str]:
    return {k: v for k, v in _dict(_dict(ing.get("metadata")).get("annotations")).items()
            if isinstance(k, str) and isinstance(v, str)}


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


# (modifier, path) -> (location, is an Exact path)
_Locations = dict[tuple[str, str], tuple[Location, bool]]


@dataclass
class _ServerParts:
    host: str
    locations: _Locations = field(default_factory=dict)


class _Settings:
    """What an annotation set makes of the ConfigMap and static params: everything a builder needs that does
    not depend on the Ingress's name, hosts, paths or Secrets. Shared by the Ingresses with the same
    annotations (see `_ingress_settings`); never changed after construction."""

    def __init__(self, annotations: dict[str, str], config: ConfigParams, static: StaticConfigParams) -> None:
        anns, ann_warnings = parse_annotations(annotations, config, snippets_enabled=static.enable_snippets)
        self.anns = anns
        self.static = static
        self.params: ConfigParams = anns.params
        self.warnings: list[str] = list(ann_warnings)
        self.grpc_services = anns.grpc_services
        self.buffers_ok = True
        self.sticky: dict[str, StickyCookie] = {}
        self.add_header_inherit = ""
        self.proxy_set_headers: tuple[ProxySetHeader, ...] = ()
        if anns.errors:  # the Ingress is rejected: only the annotations' warnings matter
            return
        if self.grpc_services and not self.params.http2:
            self.warnings.append("annotation nginx.org/grpc-services requires HTTP2 (http2 in the "
                                 "ConfigMap); ignored")
            self.grpc_services = frozenset()
        self.buffers_ok = self._check_buffers()
        self.sticky = self._sticky_cookies()
        self.add_header_inherit = self._add_header_inherit()
        self.proxy_set_headers = tuple(ProxySetHeader(n, v) for n, v in self.params.proxy_set_headers)

    def _check_buffers(self) -> bool:
        """True if NGINX accepts the buffer settings; -enable-directive-autoadjust adjusts them first."""
        p = self.params
        page = os.sysconf("SC_PAGESIZE") if hasattr(os, "sysconf") else 4096
        problem = parsing.buffers_problem(p.proxy_buffers, p.proxy_buffer_size, p.proxy_max_temp_file_size,
                                          page, proxy_busy_buffers_size=p.proxy_busy_buffers_size)
        if problem and self.static.enable_directive_autoadjust:
            buffers, size, busy, temp = parsing.balance_proxy_buffers(
                p.proxy_buffers, p.proxy_buffer_size, p.proxy_busy_buffers_size, p.proxy_max_temp_file_size,
                page)
            self.params = dataclasses.replace(p, proxy_buffers=buffers, proxy_buffer_size=size,
                                              proxy_busy_buffers_size=busy, proxy_max_temp_file_size=temp)
            changed = [f"{name} {old!r} -> {new!r}" for name, old, new in (
                ("proxy-buffers", p.proxy_buffers, buffers),
                ("proxy-busy-buffers-size", p.proxy_busy_buffers_size, busy),
                ("proxy-max-temp-file-size", p.proxy_max_temp_file_size, temp)) if old != new]
            self.warnings.append(f"proxy buffer settings adjusted (-enable-directive-autoadjust; {problem}): "
                                 + ", ".join(changed))
            p = self.params
            problem = parsing.buffers_problem(p.proxy_buffers, p.proxy_buffer_size,
                                              p.proxy_max_temp_file_size, page,
                                              proxy_busy_buffers_size=p.proxy_busy_buffers_size)
        if problem:
            self.warnings.append(f"proxy buffer settings are ignored (NGINX would refuse them): {problem}")
        return not problem

    def _sticky_cookies(self) -> dict[str, StickyCookie]:
        """service -> `sticky cookie` of nginx.org/sticky-cookie-services, when this NGINX has the directive;
        otherwise none, with a warning naming the version it needs."""
        cookies = self.params.sticky_cookies
        if not cookies:
            return {}
        warning = self.static.capabilities.not_applied(f"annotation {STICKY_COOKIE_SERVICES}",
                                                       "sticky_cookie")
        if not warning:
            return {c.service: c for c in cookies}
        self.warnings.append(warning)
        return {}

    def _add_header_inherit(self) -> str:
        """nginx.org/add-header-inherit, when this NGINX has `add_header_inherit`; otherwise "" and a warning
        naming the version it needs."""
        value = self.params.add_header_inherit
        warning = value and self.static.capabilities.not_applied(f"annotation {ADD_HEADER_INHERIT}",
                                                                 "add_header_inherit")
        if warning:
            self.warnings.append(warning)
            return ""
        return value


_SETTINGS: dict[tuple[Any, ...], tuple[ConfigParams, StaticConfigParams, _Settings]] = {}


def _ingress_settings(annotations: dict[str, str], config: ConfigParams,
                      static: StaticConfigParams) -> _Settings:
    """The `_Settings` of an annotation set, computed once per (annotations, ConfigMap params, static params):
    most Ingresses have no annotations or share a few sets, and the params objects are the Configurator's
    own (looked up by identity: the entry holds them, so their ids are not reused while it exists)."""
    key = (tuple(annotations.items()), id(config), id(static))
    hit = _SETTINGS.get(key)
    if hit is not None:
        return hit[2]
    settings = _Settings(annotations, config, static)
    if len(_SETTINGS) >= 1024:  # bounded: Ingresses with annotations of their own each add one
        _SETTINGS.clear()
    _SETTINGS[key] = (config, static, settings)
    return settings


class _Builder:
    """Generates the parts of one Ingress's config (regular, master or minion)."""

    def __init__(self, ing_ex: IngressEx, static: StaticConfigParams, settings: _Settings,
                 warnings: list[str], *, replicas: int = 1, minion_host: str | None = None) -> None:
        self.ing_ex = ing_ex
        self.static = static
        self.anns = settings.anns
        self.params: ConfigParams = settings.params
        self.warnings = warnings
        self.replicas = replicas
        self.minion_host = minion_host  # set when building a minion: the master's host
        self.namespace = ing_ex.namespace
        self.name = ing_ex.name
        self.upstreams: dict[str, Upstream] = {}
        self.limit_req_zones: dict[str, LimitReqZone] = {}
        self.grpc_services = settings.grpc_services
        self._buffers_ok = settings.buffers_ok
        self.sticky = settings.sticky
        self.add_header_inherit = settings.add_header_inherit
        self.basic_auth = self._basic_auth()
        self.limit_req = self._limit_req()
        self.proxy_set_headers = settings.proxy_set_headers
        self.minion_meta = IngressMeta(name=self.name, namespace=self.namespace) if minion_host else None
        # nginx.conf's proxy settings: locations equal to them inherit them (not in a server with snippets)
        self.proxy_defaults: ProxyDefaults | None = None
        self._settings: dict[tuple[bool, bool, bool], Location] = {}  # service flags -> location settings

    def _basic_auth(self) -> BasicAuth | None:
        secret = self.params.basic_auth_secret
        if not secret:
            return None
        ref = self.ing_ex.secret_refs.get(secret)
        secrets_dir = self.static.secrets_dir or os.path.join(self.static.conf_dir, "secrets")
        forced = os.path.join(secrets_dir, f"{self.namespace}-{secret}")
        path = forced
        if ref is None:
            self.warnings.append(f"Basic auth secret {secret} is invalid: {_SECRET_MISSING}")
        elif ref.secret_type and ref.secret_type != HTPASSWD_SECRET_TYPE:
            self.warnings.append(f"Basic auth secret {secret} is of a wrong type '{ref.secret_type}', "
                                 f"must be '{HTPASSWD_SECRET_TYPE}'")
        elif ref.error or not ref.path:
            self.warnings.append(f"Basic auth secret {secret} is invalid: {ref.error or _SECRET_MISSING}")
        else:
            path = ref.path
        return BasicAuth(realm=self.params.basic_auth_realm, user_file=path)

    def _limit_req(self) -> LimitReq | None:
        p = self.params
        if not p.limit_req_rate:
            return None
        zone = f"{self.namespace}/{self.name}"
        rate = parsing.scale_rate(p.limit_req_rate, self.replicas) if p.limit_req_scale else p.limit_req_rate
        self.limit_req_zones[zone] = LimitReqZone(name=zone, key=p.limit_req_key, size=p.limit_req_zone_size,
                                                  rate=rate)
        return LimitReq(zone=zone, burst=p.limit_req_burst, delay=p.limit_req_delay,
                        no_delay=p.limit_req_no_delay, dry_run=p.limit_req_dry_run,
                        log_level=p.limit_req_log_level, reject_code=p.limit_req_reject_code)

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
            zone_size=p.upstream_zone_size, sticky=self.sticky.get(backend.service),
        )
        return name

    def _rewrite_pattern(self, path: str) -> str:
        """The regex of `nginx.org/rewrite-target`'s `rewrite`: the path (literal unless path-regex)."""
        if not self.params.rewrite_target:
            return ""
        regex = self.anns.path_regex
        if regex == "case_sensitive":
            return "^" + path
        if regex == "case_insensitive":
            return "(?i)^" + path
        return "^" + re.escape(path)

    def location(self, modifier: str, path: str, upstream: str, service: str, *,
                 trailing_slash: bool, ingress_path: str = "") -> Location:
        rewrite = self.anns.rewrites.get(service, "")
        if rewrite and trailing_slash:
            rewrite = rewrite.rstrip("/") + "/"
        pattern = self._rewrite_pattern(ingress_path or path) if self.params.rewrite_target else ""
        return derive(self._location_settings(service), path=path, modifier=modifier, upstream=upstream,
                      service_name=service, rewrite=rewrite, rewrite_pattern=pattern)

    def _location_settings(self, service: str) -> Location:
        """The settings every location of `service` in this Ingress shares (a Location without path,
        upstream and rewrite). They depend on the service only through its websocket/ssl/gRPC flags; a
        regular Ingress gets them from `_shared_location_settings`, so Ingresses with the same effective
        settings (all those without annotations, typically) share one object."""
        flags = (service in self.anns.websocket_services, service in self.anns.ssl_services,
                 service in self.grpc_services)
        settings = self._settings.get(flags)
        if settings is None:
            if self.minion_meta is None:  # (an IngressMeta holds a dict: a minion's are not shared)
                settings = _shared_location_settings(
                    self.params, self._buffers_ok, self.proxy_set_headers, self.basic_auth, self.limit_req,
                    self.add_header_inherit, self.proxy_defaults, *flags)
            else:
                settings = _location_settings(
                    self.params, self._buffers_ok, self.proxy_set_headers, self.basic_auth, self.limit_req,
                    self.add_header_inherit, self.proxy_defaults, *flags, minion=self.minion_meta)
            self._settings[flags] = settings
        return settings

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
        ref: SecretReference | None = self.ing_ex.secret_refs.get(secret_name)
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

    def add_path(self, locations: _Locations, host: str, path_entry: Any) -> None:
        """The locations of one rule path (or a warning saying why there are none)."""
        if not isinstance(path_entry, dict):
            return
        raw_path = path_entry.get("path")
        if self.minion_host is not None and not self.ing_ex.valid_minion_paths.get(
                raw_path if isinstance(raw_path, str) else "", False):
            return  # another minion won this path
        path = raw_path or "/"
        path_type = path_entry.get("pathType") or PATH_TYPE_IMPLEMENTATION_SPECIFIC
        regex = self.anns.path_regex in ("case_sensitive", "case_insensitive")
        pattern = _REGEX_PATH if regex else _PATH
        if not isinstance(path, str) or not pattern.fullmatch(path):
            self.warnings.append(f"path {path!r} of host {host} is invalid; ignored")
            return
        if regex:
            try:
                re.compile(path)
            except re.error as e:
                self.warnings.append(f"path {path!r} of host {host} is not a valid regular expression ({e}); "
                                     "ignored")
                return
        if path_type not in (PATH_TYPE_EXACT, PATH_TYPE_PREFIX, PATH_TYPE_IMPLEMENTATION_SPECIFIC):
            self.warnings.append(f"path {path} of host {host} has an unsupported pathType {path_type!r}; "
                                 "ignored")
            return
        backend, problem = _backend(path_entry.get("backend"))
        if backend is None:
            self.warnings.append(f"path {path} of host {host} is ignored: {problem}")
            return
        upstream = self.upstream(host, backend)
        is_exact = path_type == PATH_TYPE_EXACT
        duplicate = False
        for modifier, location_path in location_keys(path, path_type, self.anns.path_regex):
            loc = self.location(modifier, location_path, upstream, backend.service,
                                trailing_slash=path_type == PATH_TYPE_PREFIX and modifier == PREFIX,
                                ingress_path=path)
            if is_exact and modifier in (REGEX, REGEX_CASE_INSENSITIVE):
                loc = derive(loc, exact_regex=True)
            if not _put_location(locations, loc, is_exact):
                duplicate = True
        if duplicate:
            self.warnings.append(f"path {path} ({path_type}) of host {host} duplicates an earlier path; "
                                 "ignored")


def _put_location(locations: _Locations, loc: Location, is_exact: bool) -> bool:
    """Add a location unless one with the same (modifier, path) is there; an Exact path beats a Prefix one
    (Kubernetes). False if it was a duplicate."""
    key = (loc.modifier, loc.path)
    existing = locations.get(key)
    if existing is None or (is_exact and not existing[1]):
        locations[key] = (loc, is_exact)
    elif existing[1] and not is_exact and loc.modifier == EXACT:
        pass  # a Prefix path's exact location is served by an Exact path, as Kubernetes says
    else:
        return False
    return True


@dataclass
class _Parts:
    """What one Ingress contributes: servers with their locations, upstreams, zones, settings."""

    builder: _Builder
    servers: list[_ServerParts]
    default_upstream: str
    default_service: str
    spec: dict[str, Any] = field(default_factory=dict)
    to_catch_all: bool = False  # a catch-all exists: unmatched paths and hosts go to it
    error_backend: str = ""  # a master's spec.defaultBackend upstream (nginx.org/custom-http-errors)


def _build(ing_ex: IngressEx, static: StaticConfigParams, config: ConfigParams, annotations: dict[str, str],
           warnings: list[str], *, replicas: int, minion_host: str | None = None,
           proxy_defaults: ProxyDefaults | None = None) -> _Parts:
    """Parse the annotations (raising AnnotationError on invalid values) and build the locations."""
    settings = _ingress_settings(annotations, config, static)
    warnings.extend(settings.warnings)
    if settings.anns.errors:
        raise AnnotationError(settings.anns.errors)
    b = _Builder(ing_ex, static, settings, warnings, replicas=replicas, minion_host=minion_host)
    b.proxy_defaults = proxy_defaults
    if not _LABEL.fullmatch(b.namespace) or not _NAME.fullmatch(b.name):
        raise ValueError(f"invalid Ingress namespace/name {b.namespace!r}/{b.name!r}")
    spec = _dict(ing_ex.ingress.get("spec"))

    default_upstream = default_service = ""
    if minion_host is None and spec.get("defaultBackend") is not None:
        backend, problem = _backend(spec.get("defaultBackend"))
        if backend is None:
            warnings.append(f"spec.defaultBackend is ignored: {problem}")
        else:
            default_upstream = b.upstream("", backend)
            default_service = backend.service

    servers: dict[str, _ServerParts] = {}
    for rule in _list(spec.get("rules")):
        if not isinstance(rule, dict):
            continue
        host = rule.get("host") or ""
        if minion_host is not None:
            if host != minion_host:
                warnings.append(f"host {host!r} is not the master's host {minion_host}; its rule is ignored")
                continue
        elif not isinstance(host, str) or not ing_ex.valid_hosts.get(host):
            continue
        if host != CATCH_ALL_HOST and not _HOST.fullmatch(host):
            warnings.append(f"host {host!r} is invalid; its rule is ignored")
            continue
        parts = servers.setdefault(host, _ServerParts(host))
        for path_entry in _list(_dict(rule.get("http")).get("paths")):
            b.add_path(parts.locations, host, path_entry)
    if _is_catch_all(ing_ex, spec) and default_upstream and minion_host is None:
        servers.setdefault(CATCH_ALL_HOST, _ServerParts(CATCH_ALL_HOST))  # `_server` adds the backend's `/`
    return _Parts(b, list(servers.values()), default_upstream, default_service, spec)


def _is_catch_all(ing_ex: IngressEx, spec: dict[str, Any]) -> bool:
    """An Ingress that owns the class-wide catch-all: one without rules, or (-allow-empty-ingress-host) one
    with a rule without a host."""
    return ing_ex.valid_hosts.get(CATCH_ALL_HOST, False)


def one_label_host_regex(host: str) -> str:
    """For a wildcard host `*.foo.com`, the regex of the hosts it matches under the Ingress spec: exactly one
    label in place of the `*` (`bar.foo.com`, neither `baz.bar.foo.com` nor `foo.com`); "" for other hosts."""
    if not host.startswith("*."):
        return ""
    return "^[^.]+" + re.escape(host[1:]) + "$"


def _catch_all_tls(b: _Builder, spec: dict[str, Any]) -> tuple[bool, str, bool, bool]:
    """(ssl, pem path, reject handshake, own certificate) of the catch-all server: the Secret of a `spec.tls`
    entry without hosts (the Ingress spec's "all hosts"), else the default server's certificate, else TLS
    handshakes are refused as the default server refuses them."""
    for tls in _list(spec.get("tls")):
        if isinstance(tls, dict) and not _list(tls.get("hosts")):
            secret = tls.get("secretName") or ""
            secret = secret if isinstance(secret, str) else ""
            ssl, pem, reject = b.tls(CATCH_ALL_HOST, {CATCH_ALL_HOST: secret})
            return ssl, pem, reject, not reject
    if b.static.default_server_tls_path:
        return True, b.static.default_server_tls_path, False, False
    return True, "", True, False


def _server(parts: _Parts, host: str, locations: list[Location], tls_hosts: dict[str, str]) -> Server:
    """The Server model for a host, with server-level settings from the Ingress's params."""
    b = parts.builder
    p = b.params
    static = b.static
    locations = _exact_first(locations)
    codes = p.custom_http_errors
    has_root = _has_root(locations)
    if not has_root and parts.default_upstream:
        locations = [*locations, derive(
            b.location(PREFIX, "/", parts.default_upstream, parts.default_service, trailing_slash=False),
            skip_custom_http_errors=bool(codes))]
        has_root = True
    error_backend = parts.error_backend or parts.default_upstream
    if codes and not error_backend:
        b.warnings.append("annotation nginx.org/custom-http-errors is set but spec.defaultBackend is not; it "
                          "has no effect without a default backend to send the intercepted responses to")
    if not (codes or any(loc.custom_http_errors for loc in locations)):
        error_backend = ""
    catch_all = host == CATCH_ALL_HOST
    to_catch_all = parts.to_catch_all and not catch_all
    if to_catch_all:
        locations = [*locations, *_catch_all_locations(b, locations, host)]
        has_root = True  # the catch-all's `location /` when the server had none
    fallback = 0 if has_root else 404
    if catch_all:
        ssl, pem, reject, own_certificate = _catch_all_tls(b, parts.spec)
    else:
        ssl, pem, reject = b.tls(host, tls_hosts)
        own_certificate = ssl and not reject
    ports = p.ports or (static.http_port,)
    ssl_ports = p.ssl_ports or (static.https_port,)
    if ssl and set(ports) & set(ssl_ports):
        shared = ", ".join(map(str, sorted(set(ports) & set(ssl_ports))))
        raise AnnotationError([f"annotation nginx.org/listen-ports: port(s) {shared} are also TLS ports of "
                               f"host {host} (nginx.org/listen-ports-ssl)"])
    grpc_only = bool(locations) and all(loc.grpc for loc in locations)
    # The default server's SSL context serves this host's certificate when nothing else sets the server's
    # context apart: its own ciphers, or TLS ports the default server does not listen on.
    per_handshake = static.certificates_per_handshake and own_certificate and not catch_all and bool(pem) \
        and not p.server_ssl_ciphers and not p.server_ssl_prefer_server_ciphers \
        and (static.tls_passthrough or tuple(ssl_ports) == (static.https_port,))
    settings = _server_settings(p, static, b.basic_auth, b.add_header_inherit, ssl)
    return derive(
        settings, name=host, locations=tuple(locations),
        ssl_certificate=pem, ssl_certificate_key=pem, ssl_reject_handshake=reject,
        certificate_per_handshake=per_handshake, ssl_redirect=own_certificate and p.ssl_redirect,
        fallback_status=fallback, grpc_only=grpc_only and ssl, custom_error_backend=error_backend,
        host_regex=one_label_host_regex(host), catch_all=catch_all,
        health_status_uri=static.health_status_uri if catch_all and static.health_status else "",
        to_catch_all=to_catch_all,
    )


@_shared
def _server_settings(p: ConfigParams, static: StaticConfigParams, basic_auth: BasicAuth | None,
                     add_header_inherit: str, ssl: bool) -> Server:
    """The server-level settings of an Ingress's params (host, locations and TLS material left for `_server`
    to fill in); keyed by value, so that Ingresses with the same effective settings share them."""
    return Server(
        name="", ports=p.ports or (static.http_port,), ssl_ports=p.ssl_ports or (static.https_port,), ssl=ssl,
        redirect_to_https=p.redirect_to_https,
        http2=p.http2, http2_directive=static.capabilities.has("http2_directive"),
        server_tokens=p.server_tokens, disable_ipv6=static.disable_ipv6,
        snippets=p.server_snippets,
        proxy_protocol=p.proxy_protocol, hsts=p.hsts, hsts_max_age=p.hsts_max_age,
        hsts_include_subdomains=p.hsts_include_subdomains, hsts_behind_proxy=p.hsts_behind_proxy,
        proxy_hide_headers=p.proxy_hide_headers, proxy_pass_headers=p.proxy_pass_headers,
        basic_auth=basic_auth, real_ip_header=p.real_ip_header, set_real_ip_from=p.set_real_ip_from,
        real_ip_recursive=p.real_ip_recursive,
        http_redirect_code=p.http_redirect_code, add_headers=p.add_headers, app_root=p.app_root,
        add_header_inherit=add_header_inherit, custom_http_errors=p.custom_http_errors,
        proxy_redirect=p.proxy_redirect if p.proxy_redirect[0] != "default" else ("", ""),
        ssl_ciphers=p.server_ssl_ciphers if ssl else "",
        ssl_prefer_server_ciphers=p.server_ssl_prefer_server_ciphers and ssl,
        unmatched_host_return=p.default_server_return,
        passthrough_socket=static.passthrough_socket() if ssl else "",
    )


def _inherits_values(*, grpc: bool, websocket: bool, redirect_to_https: bool, snippets: tuple[str, ...],
                     proxy_set_headers: tuple[ProxySetHeader, ...], keepalive: bool, buffering: bool,
                     connect: str, read: str, send: str, defaults: ProxyDefaults) -> bool:
    """True if a location's proxy settings are exactly nginx.conf's defaults (so it may leave them out).
    Snippets may set proxy headers themselves, which would hide the inherited ones: never with snippets."""
    return (not grpc and not websocket and not redirect_to_https and not snippets and not proxy_set_headers
            and keepalive == defaults.keepalive and buffering == defaults.buffering
            and connect == defaults.connect_timeout and read == defaults.read_timeout
            and send == defaults.send_timeout)


def _inherits(loc: Location, defaults: ProxyDefaults | None, server_snippets: tuple[str, ...]) -> bool:
    return defaults is not None and not server_snippets and _inherits_values(
        grpc=loc.grpc, websocket=loc.websocket, redirect_to_https=loc.redirect_to_https,
        snippets=loc.snippets, proxy_set_headers=loc.proxy_set_headers, keepalive=loc.keepalive,
        buffering=loc.proxy_buffering, connect=loc.proxy_connect_timeout, read=loc.proxy_read_timeout,
        send=loc.proxy_send_timeout, defaults=defaults)


CATCH_ALL_NAMED_LOCATION = "@ingressctl_catch_all"


def _catch_all_locations(b: _Builder, locations: list[Location], host: str) -> list[Location]:
    """While a catch-all exists, what a server adds to reach it: `location /` when it has none (its unmatched
    paths), and for a wildcard host the named location its other hosts are sent to. Both use the server's own
    proxy settings and `$ingressctl_catch_all`, the upstream nginx.conf names, so no file refers to another
    file's upstream."""
    paths = []
    if not _has_root(locations):
        paths.append("/")
    if one_label_host_regex(host):
        paths.append(CATCH_ALL_NAMED_LOCATION)
    # The catch-all's requests are not this Ingress's paths: its nginx.org/rewrite-target does not apply.
    return [derive(b.location(PREFIX, path, "", "", trailing_slash=False), catch_all=True,
                   rewrite_pattern="", rewrite_target="")
            for path in paths]


def catch_all_upstream(ing_ex: IngressEx) -> str:
    """The upstream of a catch-all Ingress (its defaultBackend's); "" when `ing_ex` is not the catch-all."""
    spec = _dict(ing_ex.ingress.get("spec"))
    if not _is_catch_all(ing_ex, spec):
        return ""
    backend, _ = _backend(spec.get("defaultBackend"))
    if backend is None:
        return ""
    return upstream_name(ing_ex.namespace, ing_ex.name, "", backend.service, backend.port)


def generate_nginx_config(ing_ex: IngressEx, static: StaticConfigParams, config_params: ConfigParams, *,
                          replicas: int = 1, to_catch_all: bool = False,
                          proxy_defaults: ProxyDefaults | None = None,
                          ) -> tuple[IngressNginxConfig, list[str]]:
    """The template model for one regular Ingress, and warnings for what was left out or degraded.

    Raises AnnotationError for invalid annotation values and ValueError for an invalid namespace/name.
    `replicas`: the number of controller replicas, for `nginx.org/limit-req-scale`. `to_catch_all`: a
    catch-all exists (its upstream named in nginx.conf); unmatched paths and wildcard hosts go there.
    `proxy_defaults`: the proxy settings nginx.conf declares (None: it may not, they are all repeated)."""
    annotations = _annotations(ing_ex.ingress)
    warnings: list[str] = []
    parts = _build(ing_ex, static, config_params, annotations, warnings, replicas=replicas,
                   proxy_defaults=proxy_defaults)
    parts.to_catch_all = to_catch_all
    b = parts.builder
    tls_hosts = _tls_hosts(_dict(ing_ex.ingress.get("spec")))
    servers = [_server(parts, sp.host, [loc for loc, _ in sp.locations.values()], tls_hosts)
               for sp in parts.servers]
    used = {loc.upstream for server in servers for loc in server.locations if not loc.catch_all}
    if parts.default_upstream:
        used.add(parts.default_upstream)
    cfg = IngressNginxConfig(
        upstreams=tuple(b.upstreams[n] for n in sorted(used)),
        servers=tuple(servers),
        ingress=IngressMeta(name=b.name, namespace=b.namespace, annotations=annotations),
        keepalive=str(b.params.keepalive) if b.params.keepalive > 0 else "",
        limit_req_zones=tuple(b.limit_req_zones[z] for z in sorted(b.limit_req_zones) if used),
    )
    cfg, policy_warnings, _ = apply_ingress_policies(cfg, ing_ex, static)
    return cfg, warnings + policy_warnings


@dataclass
class MergeableResult:
    """The config of a master and its minions, with warnings for the master and for each minion."""

    config: IngressNginxConfig
    warnings: list[str]
    minion_warnings: dict[str, list[str]]  # minion key -> warnings


def generate_nginx_config_for_mergeable(mergeable: MergeableIngresses, static: StaticConfigParams,
                                        config_params: ConfigParams, *, replicas: int = 1,
                                        to_catch_all: bool = False,
                                        proxy_defaults: ProxyDefaults | None = None) -> MergeableResult:
    """The template model for a master and its minions (NIC's generateNginxCfgForMergeableIngresses).

    Raises AnnotationError for invalid annotation values of the master; a minion with invalid values is left
    out, with the errors in its warnings."""
    master = mergeable.master
    all_master_annotations = _annotations(master.ingress)
    m_annotations, removed = master_annotations(all_master_annotations)
    warnings: list[str] = []
    if removed:
        warnings.append(f"a master Ingress cannot have the annotation(s) {', '.join(removed)}; ignored")
    parts = _build(master, static, config_params, m_annotations, warnings, replicas=replicas,
                   proxy_defaults=proxy_defaults)
    b = parts.builder
    spec = _dict(master.ingress.get("spec"))
    hosts = [sp.host for sp in parts.servers]
    upstreams = dict(b.upstreams) if parts.default_upstream else {}
    zones: dict[str, LimitReqZone] = {}
    minion_warnings: dict[str, list[str]] = {}
    master_keepalive = b.params.keepalive
    servers: list[Server] = []
    if hosts:
        host = hosts[0]
        locations: _Locations = {}
        for minion in mergeable.minions:
            mw = minion_warnings.setdefault(minion.key, [])
            annotations, removed = minion_annotations(_annotations(minion.ingress), m_annotations)
            if removed:
                mw.append(f"a minion Ingress cannot have the annotation(s) {', '.join(removed)}; ignored")
            try:
                mparts = _build(minion, static, config_params, annotations, mw, replicas=replicas,
                                minion_host=host)
            except ValueError as e:  # AnnotationError included
                mw.append(f"the minion is not applied: {e}")
                continue
            if mparts.builder.params.custom_http_errors and not parts.default_upstream:
                mw.append("annotation nginx.org/custom-http-errors is set on a minion but the master has no "
                          "spec.defaultBackend; it has no effect")
            used: set[str] = set()
            for sp in mparts.servers:
                for loc, is_exact in sp.locations.values():
                    # keepalive comes from the master only (one value per file in NIC).
                    loc = derive(loc, keepalive=master_keepalive > 0)
                    inherits = _inherits(loc, proxy_defaults, b.params.server_snippets)
                    if inherits != loc.inherits_proxy_defaults:
                        loc = derive(loc, inherits_proxy_defaults=inherits)
                    if _put_location(locations, loc, is_exact):
                        used.add(loc.upstream)
                    else:
                        where = f"{loc.modifier} {loc.path}".strip()
                        mw.append(f"location {where} duplicates a location of another minion; ignored")
            for name in sorted(used):
                upstreams[name] = derive(mparts.builder.upstreams[name], keepalive=master_keepalive)
            if used and mparts.builder.limit_req is not None:  # the zone of the minion's served locations
                zones.update(mparts.builder.limit_req_zones)
        master_parts = _Parts(b, parts.servers, "", "", to_catch_all=to_catch_all,
                              error_backend=parts.default_upstream)
        servers.append(_server(master_parts, host, [loc for loc, _ in locations.values()],
                               _tls_hosts(spec)))
    cfg = IngressNginxConfig(
        upstreams=tuple(upstreams[n] for n in sorted(upstreams)),
        servers=tuple(servers),
        ingress=IngressMeta(name=b.name, namespace=b.namespace, annotations=all_master_annotations),
        keepalive=str(master_keepalive) if master_keepalive > 0 else "",
        limit_req_zones=tuple(zones[z] for z in sorted(zones)),
    )
    cfg, policy_warnings, by_minion = apply_ingress_policies(cfg, master, static, mergeable.minions)
    warnings += policy_warnings
    for key, ws in by_minion.items():
        minion_warnings.setdefault(key, []).extend(ws)
    return MergeableResult(cfg, warnings, {k: v for k, v in minion_warnings.items() if v})
