"""IngressEx -> IngressNginxConfig (NIC's `generateNginxCfg`, `generateNginxCfgForMergeableIngresses`): pure
functions, on the pieces of `locations` and the shared settings of `settings`.

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
- ingress-nginx's shared hosts: a regular Ingress's servers also serve the paths of its `members` for the
  hosts they share (`server_merge.py`), whose warnings are apart (`generate_regular_config`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from ingressctl.configs import parsing
from ingressctl.configs.config import (
    PREFIX,
    REGEX,
    REGEX_CASE_INSENSITIVE,
    BasicAuth,
    CanarySplit,
    IngressMeta,
    IngressNginxConfig,
    LimitConn,
    LimitConnZone,
    LimitKeyMap,
    LimitReq,
    LimitReqZone,
    Location,
    ProxyDefaults,
    Server,
    Upstream,
    UpstreamServer,
    ValueMap,
    derive,
    error_server_address,
)
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.controller.model import CATCH_ALL_HOST
from ingressctl.controller.secrets import ERROR_SECRET_MISSING
from ingressctl.kinds.ingress.annotations import master_annotations, minion_annotations, with_ssl_services
from ingressctl.kinds.ingress.catch_all import catch_all_locations, catch_all_tls, is_catch_all
from ingressctl.kinds.ingress.catch_all import catch_all_upstream as catch_all_upstream
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.kinds.ingress.ingress_ex import string_annotations as _annotations
from ingressctl.kinds.ingress.ingress_nginx import basic_auth, header_maps, limits, paths
from ingressctl.kinds.ingress.ingress_nginx.authtls import apply_auth_tls
from ingressctl.kinds.ingress.ingress_nginx.canary_locations import CanaryLocations
from ingressctl.kinds.ingress.ingress_nginx.cors import apply_cors
from ingressctl.kinds.ingress.ingress_nginx.render import apply_extras
from ingressctl.kinds.ingress.ingress_nginx.www_redirect import add_redirects
from ingressctl.kinds.ingress.locations import (
    ENDPOINT,
    HOST,
    LABEL,
    NAME,
    PATH,
    PATH_TYPE_EXACT,
    PATH_TYPE_IMPLEMENTATION_SPECIFIC,
    PATH_TYPE_PREFIX,
    REGEX_PATH,
    Locations,
    ServerParts,
    ServiceBackend,
    exact_first,
    has_root_location,
    location_keys,
    one_label_host_regex,
    put_location,
    service_backend,
    tls_secret_names,
    upstream_name,
)
from ingressctl.kinds.ingress.policies import apply_ingress_policies
from ingressctl.kinds.ingress.server_merge import MergeableResult, ServerMerge, isolate_members
from ingressctl.kinds.ingress.settings import (
    IngressSettings,
    ingress_settings,
    location_settings,
    server_settings,
    shared_location_settings,
)
from ingressctl.secret_types import SECRET_TYPE_HTPASSWD, SECRET_TYPE_TLS, SecretReference
from ingressctl.validation import as_dict, as_list

_NONE: dict[str, Any] = {}  # the builder's empty ingress-nginx limit dicts: never written to


class AnnotationError(ValueError):
    """Invalid annotation values: the Ingress is rejected. `errors` holds one message per annotation."""

    def __init__(self, errors: list[str] | tuple[str, ...]) -> None:
        self.errors = tuple(errors)
        super().__init__("; ".join(self.errors))


class _Builder:
    """Generates the parts of one Ingress's config (regular, master or minion)."""

    def __init__(self, ing_ex: IngressEx, static: StaticConfigParams, settings: IngressSettings,
                 warnings: list[str], *, replicas: int = 1, minion_host: str | None = None) -> None:
        self.ing_ex = ing_ex
        self.static = static
        self.anns = with_ssl_services(settings.anns, ing_ex.https_services)  # ssl-passthrough's backends
        self.params: ConfigParams = settings.params
        self.warnings = warnings
        self.replicas = replicas
        self.minion_host = minion_host  # set when building a minion: the master's host
        self.namespace = ing_ex.namespace
        self.name = ing_ex.name
        self.upstreams: dict[str, Upstream] = {}
        self._no_endpoints: frozenset[str] = frozenset()  # upstreams on the 502 server (a copy when added)
        self.inn_default = ""  # ingress-nginx's default-backend upstream (ready endpoints only)
        self.limit_req_zones: dict[str, LimitReqZone] = {}
        self.grpc_services = settings.grpc_services
        self.ssl_all, self.grpc_all = settings.ssl_all, settings.grpc_all
        self.cors, self.auth_tls = settings.cors, settings.auth_tls
        self.limit_conn_zones: dict[str, LimitConnZone] = _NONE  # replaced by a dict of its own when set
        self.limit_key_maps: dict[str, LimitKeyMap] = _NONE
        self._buffers_ok = settings.buffers_ok
        self.sticky = settings.sticky
        self.add_header_inherit = settings.add_header_inherit
        self.ingress_nginx_extras = header_maps.resolve(settings, ing_ex, warnings)  # auth-url, ...
        self.basic_auth = self._basic_auth()
        self.limit_req = self._limit_req()
        self.limit_conn = self._limit_conn() if self.params.limit_conn else None
        self.proxy_set_headers = settings.proxy_set_headers
        self.minion_meta = IngressMeta(name=self.name, namespace=self.namespace, member=ing_ex.is_member) \
            if minion_host else None
        # nginx.conf's proxy settings: locations equal to them inherit them (not in a server with snippets)
        self.proxy_defaults: ProxyDefaults | None = None
        self._settings: dict[tuple[bool, bool, bool], Location] = {}  # service flags -> location settings
        self.inn_regex = False  # ingress-nginx's regex mode of the host (ingress_nginx/paths.py)
        self.inn_rewrite = False  # ingress-nginx's rewrite-target applies
        if ing_ex.default_backend is not None and self.params.ingress_nginx_default_backend and \
                self.ing_ex.endpoints.get(backend_key(*ing_ex.default_backend)):
            self.inn_default = self.upstream("", ServiceBackend(*ing_ex.default_backend))

    def _basic_auth(self) -> BasicAuth | None:
        secret = self.params.basic_auth_secret
        if basic_auth.EXTRA in self.ingress_nginx_extras:  # ingress-nginx's auth-type: basic
            found, self.ingress_nginx_extras = basic_auth.resolve(
                self.ingress_nginx_extras, self.namespace, self.ing_ex.secret_refs, self.warnings,
                nginx_org=bool(secret))
            if not secret:
                return found
        if not secret:
            return None
        ref = self.ing_ex.secret_refs.get(secret)
        secrets_dir = self.static.secrets_dir or os.path.join(self.static.conf_dir, "secrets")
        forced = os.path.join(secrets_dir, f"{self.namespace}-{secret}")
        path = forced
        if ref is None:
            self.warnings.append(f"Basic auth secret {secret} is invalid: {ERROR_SECRET_MISSING}")
        elif ref.secret_type and ref.secret_type != SECRET_TYPE_HTPASSWD:
            self.warnings.append(f"Basic auth secret {secret} is of a wrong type '{ref.secret_type}', "
                                 f"must be '{SECRET_TYPE_HTPASSWD}'")
        elif ref.error or not ref.path:
            reason = ref.error or ERROR_SECRET_MISSING
            self.warnings.append(f"Basic auth secret {secret} is invalid: {reason}")
        else:
            path = ref.path
        return BasicAuth(realm=self.params.basic_auth_realm, user_file=path)

    def _limit_key(self, key: str) -> str:
        """The rate-limit key, or (ingress-nginx's limit allowlist) its map that exempts some clients."""
        if not self.params.limit_exempt:
            return key
        m = limits.key_map(self.namespace, self.name, key, self.params.limit_exempt)
        self.limit_key_maps = {**self.limit_key_maps, m.key_var: m}
        return m.key_var

    def _limit_conn(self) -> LimitConn:
        zone, conn = limits.connection_limit(self.namespace, self.name, self.params.limit_conn,
                                             self._limit_key(limits.CLIENT_KEY))
        self.limit_conn_zones = {zone.name: zone}
        return conn

    def _limit_req(self) -> LimitReq | None:
        p = self.params
        if not p.limit_req_rate:
            return None
        zone = f"{self.namespace}/{self.name}"
        rate = parsing.scale_rate(p.limit_req_rate, self.replicas) if p.limit_req_scale else p.limit_req_rate
        self.limit_req_zones[zone] = LimitReqZone(name=zone, key=self._limit_key(p.limit_req_key),
                                                  size=p.limit_req_zone_size, rate=rate)
        return LimitReq(zone=zone, burst=p.limit_req_burst, delay=p.limit_req_delay,
                        no_delay=p.limit_req_no_delay, dry_run=p.limit_req_dry_run,
                        log_level=p.limit_req_log_level, reject_code=p.limit_req_reject_code)

    def upstream(self, host: str, backend: ServiceBackend) -> str:
        name = upstream_name(self.namespace, self.name, host, backend.service, backend.port)
        if name in self.upstreams:
            return self.inn_default if self.inn_default and name in self._no_endpoints else name
        p = self.params
        servers = []
        for address in sorted(set(self.ing_ex.endpoints.get(backend_key(backend.service, backend.port), []))):
            if not isinstance(address, str) or not ENDPOINT.fullmatch(address):
                self.warnings.append(f"endpoint {address!r} of service {backend.service} is invalid; ignored")
                continue
            servers.append(UpstreamServer(address, p.max_fails, p.fail_timeout, p.max_conns))
        if not servers:
            self._no_endpoints = self._no_endpoints | {name}
            servers = [UpstreamServer(error_server_address(self.static.run_dir), 1, "10s", 0)]
        self.upstreams[name] = Upstream(
            name=name, servers=tuple(servers), lb_method=p.lb_method, keepalive=p.keepalive,
            zone_size=p.upstream_zone_size, sticky=self.sticky.get(backend.service),
        )
        return self.inn_default if self.inn_default and name in self._no_endpoints else name

    def _rewrite_pattern(self, path: str) -> str:
        """The regex of `nginx.org/rewrite-target`'s `rewrite`: the path (literal unless path-regex)."""
        if not self.params.rewrite_target:
            return ""
        if self.inn_rewrite:
            return paths.rewrite_pattern(path)
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
        loc = derive(self._location_settings(service), path=path, modifier=modifier, upstream=upstream,
                     service_name=service, rewrite=rewrite, rewrite_pattern=pattern)
        if self.params.ingress_nginx_rewrite and (  # ingress-nginx: no rewrite of a path equal to the target
                not self.inn_rewrite or (ingress_path or path) == self.params.rewrite_target):
            loc = derive(loc, rewrite_pattern="", rewrite_target="")
        return loc

    def _location_settings(self, service: str) -> Location:
        """The settings every location of `service` in this Ingress shares (a Location without path,
        upstream and rewrite). They depend on the service only through its websocket/ssl/gRPC flags; a
        regular Ingress gets them from `shared_location_settings`, so Ingresses with the same effective
        settings (all those without annotations, typically) share one object."""
        flags = (service in self.anns.websocket_services, self.ssl_all or service in self.anns.ssl_services,
                 self.grpc_all or service in self.grpc_services)
        settings = self._settings.get(flags)
        if settings is None:
            if self.minion_meta is None:  # (an IngressMeta holds a dict: a minion's are not shared)
                settings = shared_location_settings(
                    self.params, self._buffers_ok, self.proxy_set_headers, self.basic_auth, self.limit_req,
                    self.add_header_inherit, self.proxy_defaults, *flags, self.limit_conn)
            else:
                settings = location_settings(
                    self.params, self._buffers_ok, self.proxy_set_headers, self.basic_auth, self.limit_req,
                    self.add_header_inherit, self.proxy_defaults, *flags, self.limit_conn,
                    minion=self.minion_meta)
            self._settings[flags] = settings
        return settings

    def tls(self, host: str, tls_hosts: dict[str, str],
            refs: dict[str, SecretReference] | None = None) -> tuple[bool, str, bool]:
        """(ssl, pem path, reject handshake) for a host; `refs`: the Secrets of the Ingress whose `spec.tls`
        names it (default: this one's)."""
        if host not in tls_hosts:
            return False, "", False
        secret_name = tls_hosts[host]
        if not secret_name:
            if self.static.wildcard_tls_path:
                return True, self.static.wildcard_tls_path, False
            self.warnings.append(f"TLS termination for host '{host}' requires specifying a TLS secret or "
                                 "configuring a global wildcard TLS secret")
            return True, "", True
        ref: SecretReference | None = (self.ing_ex.secret_refs if refs is None else refs).get(secret_name)
        if ref is None:
            self.warnings.append(f"TLS secret {secret_name} is invalid: {ERROR_SECRET_MISSING}")
            return True, "", True
        if ref.secret_type and ref.secret_type != SECRET_TYPE_TLS:
            self.warnings.append(f"TLS secret {secret_name} is of a wrong type '{ref.secret_type}', must be "
                                 f"'{SECRET_TYPE_TLS}'")
            return True, "", True
        if ref.error or not ref.path:
            error = ref.error or ERROR_SECRET_MISSING
            self.warnings.append(f"TLS secret {secret_name} is invalid: {error}")
            return True, "", True
        return True, ref.path, False

    def location_keys(self, path: str, path_type: str) -> list[tuple[str, str]]:
        """The `(modifier, path or regex)` of the locations of one path of this Ingress."""
        if self.inn_regex and not self.anns.path_regex:
            return [paths.location_key(path)]
        return location_keys(path, path_type, self.anns.path_regex)

    def add_path(self, locations: Locations, host: str, path_entry: Any) -> None:
        """The locations of one rule path (or a warning saying why there are none)."""
        if not isinstance(path_entry, dict):
            return
        raw_path = path_entry.get("path")
        if self.minion_host is not None and not self.ing_ex.is_member and not \
                self.ing_ex.valid_minion_paths.get(raw_path if isinstance(raw_path, str) else "", False):
            return  # another minion won this path (a member's duplicates: `ServerMerge.add`)
        path = raw_path or "/"
        path_type = path_entry.get("pathType") or PATH_TYPE_IMPLEMENTATION_SPECIFIC
        inn_regex = self.inn_regex and not self.anns.path_regex  # ingress-nginx's regex mode
        regex = inn_regex or self.anns.path_regex in ("case_sensitive", "case_insensitive")
        pattern = REGEX_PATH if regex else PATH
        if not isinstance(path, str) or not pattern.fullmatch(path):
            self.warnings.append(f"path {path!r} of host {host} is invalid; ignored")
            return
        if regex or self.inn_rewrite:
            problem = paths.regex_problem(path)
            if inn_regex and not problem and isinstance(path_type, str):
                problem = paths.strict_path_problem(path, path_type)
            if problem:
                self.warnings.append(f"path {path!r} of host {host} {problem}; ignored")
                return
        if path_type not in (PATH_TYPE_EXACT, PATH_TYPE_PREFIX, PATH_TYPE_IMPLEMENTATION_SPECIFIC):
            self.warnings.append(f"path {path} of host {host} has an unsupported pathType {path_type!r}; "
                                 "ignored")
            return
        backend, problem = service_backend(path_entry.get("backend"))
        if backend is None:
            self.warnings.append(f"path {path} of host {host} is ignored: {problem}")
            return
        upstream = self.upstream(host, backend)
        is_exact = path_type == PATH_TYPE_EXACT
        duplicate = False
        for modifier, location_path in self.location_keys(path, path_type):
            loc = self.location(modifier, location_path, upstream, backend.service,
                                trailing_slash=path_type == PATH_TYPE_PREFIX and modifier == PREFIX,
                                ingress_path=path)
            if is_exact and modifier in (REGEX, REGEX_CASE_INSENSITIVE) and not inn_regex:
                loc = derive(loc, exact_regex=True)
            if not put_location(locations, loc, is_exact):
                duplicate = True
        if duplicate:
            self.warnings.append(f"path {path} ({path_type}) of host {host} duplicates an earlier path; "
                                 "ignored")


@dataclass
class _Parts:
    """What one Ingress contributes: servers with their locations, upstreams, zones, settings."""

    builder: _Builder
    servers: list[ServerParts]
    default_upstream: str
    default_service: str
    spec: dict[str, Any] = field(default_factory=dict)
    to_catch_all: bool = False  # a catch-all exists: unmatched paths and hosts go to it
    error_backend: str = ""  # a master's spec.defaultBackend upstream (nginx.org/custom-http-errors)
    inn_regex: bool = False  # ingress-nginx's regex mode for the host: its regex locations by length
    tls_refs: dict[str, dict[str, SecretReference]] = field(default_factory=dict)  # host -> member's Secrets


def _build(ing_ex: IngressEx, static: StaticConfigParams, config: ConfigParams, annotations: dict[str, str],
           warnings: list[str], *, replicas: int, minion_host: str | None = None,
           proxy_defaults: ProxyDefaults | None = None, regex_host: bool | None = None) -> _Parts:
    """Parse the annotations (raising AnnotationError on invalid values) and build the locations.
    `regex_host`: ingress-nginx's regex mode of the host (None: this Ingress alone decides)."""
    settings = ingress_settings(annotations, config, static)
    warnings.extend(settings.warnings)
    if settings.anns.errors:
        raise AnnotationError(settings.anns.errors)
    b = _Builder(ing_ex, static, settings, warnings, replicas=replicas, minion_host=minion_host)
    b.proxy_defaults = proxy_defaults
    if b.params.ingress_nginx_use_regex or b.params.ingress_nginx_rewrite or regex_host:  # (compat only)
        b.inn_rewrite, b.inn_regex = paths.modes(b.params, annotations, ing_ex.ingress, warnings, regex_host)
    if not LABEL.fullmatch(b.namespace) or not NAME.fullmatch(b.name):
        raise ValueError(f"invalid Ingress namespace/name {b.namespace!r}/{b.name!r}")
    spec = as_dict(ing_ex.ingress.get("spec"))

    default_upstream = default_service = ""
    if minion_host is None and spec.get("defaultBackend") is not None:
        backend, problem = service_backend(spec.get("defaultBackend"))
        if backend is None:
            warnings.append(f"spec.defaultBackend is ignored: {problem}")
        else:
            default_upstream = b.upstream("", backend)
            default_service = backend.service

    servers: dict[str, ServerParts] = {}
    for rule in as_list(spec.get("rules")):
        if not isinstance(rule, dict):
            continue
        host = rule.get("host") or ""
        if minion_host is not None:
            if host != minion_host:
                if not ing_ex.is_member:  # (a member's other hosts are served elsewhere)
                    warnings.append(f"host {host!r} is not the master's host {minion_host}; its rule is "
                                    "ignored")
                continue
        elif not isinstance(host, str) or not ing_ex.valid_hosts.get(host):
            continue
        if host != CATCH_ALL_HOST and not HOST.fullmatch(host):
            warnings.append(f"host {host!r} is invalid; its rule is ignored")
            continue
        parts = servers.setdefault(host, ServerParts(host))
        for path_entry in as_list(as_dict(rule.get("http")).get("paths")):
            b.add_path(parts.locations, host, path_entry)
    if is_catch_all(ing_ex) and default_upstream and minion_host is None:
        servers.setdefault(CATCH_ALL_HOST, ServerParts(CATCH_ALL_HOST))  # `_server` adds the backend's `/`
    return _Parts(b, list(servers.values()), default_upstream, default_service, spec, inn_regex=b.inn_regex)


def _server(parts: _Parts, host: str, locations: list[Location], tls_hosts: dict[str, str]) -> Server:
    """The Server model for a host, with server-level settings from the Ingress's params."""
    b = parts.builder
    p = b.params
    static = b.static
    locations = paths.ordered(locations) if parts.inn_regex else exact_first(locations)
    codes = p.custom_http_errors
    has_root = has_root_location(locations) or (parts.inn_regex and paths.has_regex_root(locations))
    if not has_root and parts.default_upstream:
        locations = [*locations, derive(
            b.location(PREFIX, "/", parts.default_upstream, parts.default_service, trailing_slash=False),
            skip_custom_http_errors=bool(codes))]
        has_root = True
    error_backend = b.inn_default or parts.error_backend or parts.default_upstream
    if codes and not error_backend:
        b.warnings.append("annotation nginx.org/custom-http-errors is set but spec.defaultBackend is not; it "
                          "has no effect without a default backend to send the intercepted responses to")
    if not (codes or any(loc.custom_http_errors for loc in locations)):
        error_backend = ""
    catch_all = host == CATCH_ALL_HOST
    to_catch_all = parts.to_catch_all and not catch_all
    if to_catch_all:
        locations = [*locations, *catch_all_locations(b, locations, host)]
        has_root = True  # the catch-all's `location /` when the server had none
    fallback = 0 if has_root else 404
    if catch_all:
        ssl, pem, reject, own_certificate = catch_all_tls(b, parts.spec)
    else:
        ssl, pem, reject = b.tls(host, tls_hosts, parts.tls_refs.get(host))
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
    settings = server_settings(p, static, b.basic_auth, b.add_header_inherit, ssl)
    return derive(
        settings, name=host, locations=tuple(locations),
        ssl_certificate=pem, ssl_certificate_key=pem, ssl_reject_handshake=reject,
        certificate_per_handshake=per_handshake, ssl_redirect=own_certificate and p.ssl_redirect,
        fallback_status=fallback, grpc_only=grpc_only and ssl, custom_error_backend=error_backend,
        host_regex=one_label_host_regex(host), catch_all=catch_all,
        health_status_uri=static.health_status_uri if catch_all and static.health_status else "",
        to_catch_all=to_catch_all,
    )


def _sorted_values(d: dict[str, Any]) -> tuple[Any, ...]:
    """The values of `d` by key; () at once for the usual empty dict (ingress-nginx's limits)."""
    return tuple(d[k] for k in sorted(d)) if d else ()


def generate_nginx_config(ing_ex: IngressEx, static: StaticConfigParams, config_params: ConfigParams, *,
                          replicas: int = 1, to_catch_all: bool = False,
                          proxy_defaults: ProxyDefaults | None = None,
                          ) -> tuple[IngressNginxConfig, list[str]]:
    """The template model for one regular Ingress, and warnings for what was left out or degraded (its
    members' prefixed with their key).

    Raises AnnotationError for invalid annotation values and ValueError for an invalid namespace/name.
    `replicas`: the number of controller replicas, for `nginx.org/limit-req-scale`. `to_catch_all`: a
    catch-all exists (its upstream named in nginx.conf); unmatched paths and wildcard hosts go there.
    `proxy_defaults`: the proxy settings nginx.conf declares (None: it may not, they are all repeated)."""
    r = generate_regular_config(ing_ex, static, config_params, replicas=replicas, to_catch_all=to_catch_all,
                                proxy_defaults=proxy_defaults)
    return r.config, r.warnings + [f"Ingress {k}: {w}" for k, ws in r.minion_warnings.items() for w in ws]


def generate_regular_config(ing_ex: IngressEx, static: StaticConfigParams, config_params: ConfigParams, *,
                            replicas: int = 1, to_catch_all: bool = False,
                            proxy_defaults: ProxyDefaults | None = None) -> MergeableResult:
    """`generate_nginx_config`, with the warnings of the members of its shared hosts apart."""
    annotations = _annotations(ing_ex.ingress)
    warnings: list[str] = []
    regex_host = None if not ing_ex.members else static.ingress_nginx_compat and paths.group_wants_regex(
        [(ing_ex.ingress, annotations)] + [(m.ingress, _annotations(m.ingress)) for m in ing_ex.members],
        config_params, static)
    parts = _build(ing_ex, static, config_params, annotations, warnings, replicas=replicas,
                   proxy_defaults=proxy_defaults, regex_host=regex_host)
    parts.to_catch_all = to_catch_all
    b = parts.builder
    tls_hosts = tls_secret_names(as_dict(ing_ex.ingress.get("spec")))
    merge = ServerMerge(b.params.keepalive, proxy_defaults, b.params.server_snippets)
    if ing_ex.members:
        def build(member: IngressEx, anns: dict[str, str], mw: list[str], host: str) -> _Parts:
            return _build(member, static, config_params, anns, mw, replicas=replicas, minion_host=host,
                          proxy_defaults=proxy_defaults, regex_host=bool(regex_host))
        tls_hosts = merge.add_members(parts, ing_ex, tls_hosts, build)
    servers = [_server(parts, sp.host, [loc for loc, _ in sp.locations.values()], tls_hosts)
               for sp in parts.servers]
    upstreams = {**b.upstreams, **merge.upstreams}
    value_maps: tuple[ValueMap, ...] = ()
    if b.params.ingress_nginx_www_redirect:  # ingress-nginx's from-to-www-redirect
        servers, value_maps = add_redirects(servers, ing_ex.valid_hosts, b.params.http_redirect_code,
                                            warnings, ing_ex.www_tls_names)
    canary_splits: tuple[CanarySplit, ...] = ()
    if ing_ex.canaries:
        settings = ingress_settings(annotations, config_params, static)
        canaries = CanaryLocations(b, lambda cex: _Builder(cex, static, settings, [], replicas=replicas))
        servers = [canaries.apply(s) for s in servers]
        upstreams.update(canaries.upstreams)
        value_maps, canary_splits = value_maps + tuple(canaries.maps), tuple(canaries.splits)
    used = {loc.upstream for server in servers for loc in server.locations if not loc.catch_all}
    if parts.default_upstream:
        used.add(parts.default_upstream)
    if b.inn_default:  # ingress-nginx's default-backend as the error backend
        used.update(s.custom_error_backend for s in servers if s.custom_error_backend)
    if ing_ex.canaries:
        used |= canaries.used
    cfg = IngressNginxConfig(
        upstreams=tuple(upstreams[n] for n in sorted(used)),
        servers=tuple(servers),
        ingress=IngressMeta(name=b.name, namespace=b.namespace, annotations=annotations),
        keepalive=str(b.params.keepalive) if b.params.keepalive > 0 else "",
        limit_req_zones=() if not used else _sorted_values({**b.limit_req_zones, **merge.zones}),
        limit_conn_zones=() if not used else _sorted_values({**b.limit_conn_zones, **merge.conn_zones}),
        limit_key_maps=() if not used else _sorted_values({**b.limit_key_maps, **merge.key_maps}),
        value_maps=value_maps, canary_splits=canary_splits,
    )
    cfg, policy_warnings, by_member = apply_ingress_policies(cfg, ing_ex, static, ing_ex.members)
    extras = {(b.namespace, b.name): b.ingress_nginx_extras, **merge.extras}
    if any(extras.values()):
        cfg, extra_warnings = apply_extras(cfg, extras)
        policy_warnings += extra_warnings
    cfg, cors_warnings, cors_by_member = apply_cors(cfg, b.cors, ing_ex.policies, merge.cors)
    cfg = apply_auth_tls(cfg if not ing_ex.members else isolate_members(cfg), b.auth_tls)
    for key, ws in [*by_member.items(), *cors_by_member.items()]:
        merge.warnings_of(key).extend(ws)
    return MergeableResult(cfg, warnings + policy_warnings + cors_warnings,
                           {k: v for k, v in merge.warnings.items() if v})


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
    regex_host = static.ingress_nginx_compat and paths.group_wants_regex(
        [(master.ingress, m_annotations)] + [(m.ingress, minion_annotations(_annotations(m.ingress),
                                                                            m_annotations)[0])
                                             for m in mergeable.minions], config_params, static)
    parts = _build(master, static, config_params, m_annotations, warnings, replicas=replicas,
                   proxy_defaults=proxy_defaults, regex_host=regex_host)
    b = parts.builder
    spec = as_dict(master.ingress.get("spec"))
    hosts = [sp.host for sp in parts.servers]
    merge = ServerMerge(b.params.keepalive, proxy_defaults, b.params.server_snippets)
    if parts.default_upstream:
        merge.upstreams.update(b.upstreams)
    if b.ingress_nginx_extras:
        merge.extras[(b.namespace, b.name)] = b.ingress_nginx_extras  # ingress-nginx's auth-url, satisfy, ...
    servers: list[Server] = []
    if hosts:
        host = hosts[0]
        locations: Locations = {}
        for minion in mergeable.minions:
            mw = merge.warnings_of(minion.key)
            annotations, removed = minion_annotations(_annotations(minion.ingress), m_annotations)
            if removed:
                mw.append(f"a minion Ingress cannot have the annotation(s) {', '.join(removed)}; ignored")
            try:
                mparts = _build(minion, static, config_params, annotations, mw, replicas=replicas,
                                minion_host=host, regex_host=regex_host)
            except ValueError as e:  # AnnotationError included
                mw.append(f"the minion is not applied: {e}")
                continue
            if mparts.builder.params.custom_http_errors and not parts.default_upstream:
                mw.append("annotation nginx.org/custom-http-errors is set on a minion but the master has no "
                          "spec.defaultBackend; it has no effect")
            merge.add(locations, minion, mparts, "location {where} duplicates a location of another minion; "
                                                 "ignored")
        master_parts = _Parts(b, parts.servers, "", "", to_catch_all=to_catch_all,
                              error_backend=parts.default_upstream, inn_regex=regex_host)
        servers.append(_server(master_parts, host, [loc for loc, _ in locations.values()],
                               tls_secret_names(spec)))
    keepalive = b.params.keepalive
    cfg = IngressNginxConfig(
        upstreams=_sorted_values(merge.upstreams),
        servers=tuple(servers),
        ingress=IngressMeta(name=b.name, namespace=b.namespace, annotations=all_master_annotations),
        keepalive=str(keepalive) if keepalive > 0 else "",
        limit_req_zones=_sorted_values(merge.zones),
        limit_conn_zones=_sorted_values(merge.conn_zones),
        limit_key_maps=_sorted_values(merge.key_maps),
    )
    cfg, policy_warnings, by_minion = apply_ingress_policies(cfg, master, static, mergeable.minions)
    cfg, extra_warnings = apply_extras(cfg, merge.extras)
    policy_warnings += extra_warnings
    cfg, cors_warnings, cors_by_minion = apply_cors(cfg, b.cors, master.policies, merge.cors)
    minion_warnings = merge.warnings
    cfg = apply_auth_tls(cfg, b.auth_tls)
    warnings += policy_warnings + cors_warnings
    for key, ws in [*by_minion.items(), *cors_by_minion.items()]:
        minion_warnings.setdefault(key, []).extend(ws)
    return MergeableResult(cfg, warnings, {k: v for k, v in minion_warnings.items() if v})
