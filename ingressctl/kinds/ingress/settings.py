"""What an annotation set makes of the ConfigMap and static params, computed once and shared.

Guarantees:
- `ingress_settings(annotations, config, static)` is the `IngressSettings` of one annotation set: its parsed
  annotations, its effective params (buffers adjusted or dropped as NGINX would accept them, sticky cookies,
  ingress-nginx's `affinity` among them, and `add_header_inherit` only where this NGINX has them) and their
  warnings; computed once per (annotations, ConfigMap params, static params) and never changed after, so
  every Ingress with the same annotations shares one.
- `shared(fn)` caches a pure function of hashable arguments by value, behind a cache by identity;
  `shared_location_settings` and `server_settings` are the location and server settings that follow from the
  params, shared the same way (the model is frozen: a shared object is never changed, a location or server is
  a copy with its own path, upstream or TLS material).
- With `--ingress-nginx-compat`, an annotation set with `nginx.ingress.kubernetes.io/*` keys is translated
  first (`ingress_nginx/precedence.py`) and the `nginx.org/*` ones applied on top; a set without them costs
  one prefix test per key, once per set.
- `inherits_proxy_defaults(...)`: a location whose proxy settings equal nginx.conf's http-level defaults, in a
  server without snippets, leaves them out.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from ingressctl.configs import parsing
from ingressctl.configs.config import (
    BasicAuth,
    IngressMeta,
    LimitConn,
    LimitReq,
    Location,
    ProxyDefaults,
    ProxySetHeader,
    Server,
)
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.directive_values import StickyCookie
from ingressctl.kinds.ingress.annotations import parse_annotations
from ingressctl.kinds.ingress.annotations_ingress_nginx import BACKEND_PROTOCOL
from ingressctl.kinds.ingress.annotations_nginx_org import ADD_HEADER_INHERIT, STICKY_COOKIE_SERVICES
from ingressctl.kinds.ingress.ingress_nginx import affinity
from ingressctl.kinds.ingress.ingress_nginx.precedence import ingress_nginx_settings
from ingressctl.kinds.ingress.ingress_nginx.translate import has_ingress_nginx


def location_settings(p: ConfigParams, buffers_ok: bool, proxy_set_headers: tuple[ProxySetHeader, ...],
                       basic_auth: BasicAuth | None, limit_req: LimitReq | None, add_header_inherit: str,
                       proxy_defaults: ProxyDefaults | None, websocket: bool, ssl: bool, grpc: bool,
                       limit_conn: LimitConn | None = None, *, minion: IngressMeta | None = None) -> Location:
    """A location's settings from its Ingress's params and its service's flags (path, upstream, service name
    and rewrite left empty: `_Builder.location` fills them in)."""
    is_minion = minion is not None
    ok = buffers_ok
    keepalive = p.keepalive > 0
    inherits = proxy_defaults is not None and not p.server_snippets and inherits_values(
        grpc=grpc, websocket=websocket, redirect_to_https=p.redirect_to_https, snippets=p.location_snippets,
        proxy_set_headers=proxy_set_headers, keepalive=keepalive, buffering=p.proxy_buffering,
        connect=p.proxy_connect_timeout, read=p.proxy_read_timeout, send=p.proxy_send_timeout,
        defaults=proxy_defaults, upstream_vhost=p.upstream_vhost)
    return Location(
        path="", modifier="", upstream="", service_name="",
        proxy_connect_timeout=p.proxy_connect_timeout, proxy_read_timeout=p.proxy_read_timeout,
        proxy_send_timeout=p.proxy_send_timeout, client_max_body_size=p.client_max_body_size,
        proxy_buffering=p.proxy_buffering, proxy_buffers=p.proxy_buffers if ok else "",
        proxy_buffer_size=p.proxy_buffer_size if ok else "",
        proxy_max_temp_file_size=p.proxy_max_temp_file_size if ok else "",
        websocket=websocket, ssl=ssl, ssl_server_name=p.ssl_server_name, rewrite="", keepalive=keepalive,
        redirect_to_https=p.redirect_to_https,
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
        inherits_proxy_defaults=inherits, proxy_request_buffering=p.proxy_request_buffering,
        upstream_vhost=p.upstream_vhost, return_redirect=p.return_redirect, access_rules=p.access_rules,
        limit_conn=limit_conn,
    )


_F = TypeVar("_F", bound=Callable[..., Any])


def shared(fn: _F) -> _F:
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


shared_location_settings = shared(location_settings)


class IngressSettings:
    """What an annotation set makes of the ConfigMap and static params: everything a builder needs that does
    not depend on the Ingress's name, hosts, paths or Secrets. Shared by the Ingresses with the same
    annotations (see `ingress_settings`); never changed after construction."""

    def __init__(self, annotations: dict[str, str], config: ConfigParams, static: StaticConfigParams) -> None:
        compat = None
        if static.ingress_nginx_compat and has_ingress_nginx(annotations):
            compat = ingress_nginx_settings(annotations, config, static.enable_snippets)
            config = compat.base
        anns, ann_warnings = parse_annotations(annotations, config, snippets_enabled=static.enable_snippets)
        self.static = static
        self.warnings: list[str] = list(ann_warnings)
        self.ssl_all = self.grpc_all = False  # ingress-nginx's backend-protocol: every Service of the Ingress
        self.cors = compat.translation.cors if compat is not None else None  # ingress-nginx's enable-cors
        self.auth_tls = compat.translation.auth_tls if compat is not None else None  # its auth-tls-*
        if compat is not None:
            self.warnings += compat.warnings
            if compat.errors:
                anns = dataclasses.replace(anns, errors=anns.errors + compat.errors)
            self.ssl_all, self.grpc_all = compat.ssl_all, compat.grpc_all
        self.anns = anns
        # What the ingress-nginx translation renders itself (e.g. the auth subrequest; see translate.extras).
        self.ingress_nginx_extras: Mapping[str, Any] = compat.translation.extras if compat is not None else {}
        self.params: ConfigParams = anns.params
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
        if self.grpc_all and not self.params.http2:
            self.warnings.append(f"annotation {BACKEND_PROTOCOL} (gRPC) requires HTTP2 (http2 in the "
                                 "ConfigMap); ignored")
            self.grpc_all = self.ssl_all = False
        self.buffers_ok = self._check_buffers()
        self.sticky = self._sticky_cookies()
        self.ingress_nginx_extras, sticky_warnings = affinity.check(
            self.ingress_nginx_extras, self.params.sticky_cookies, static.capabilities)
        self.warnings += sticky_warnings
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


_SETTINGS: dict[tuple[Any, ...], tuple[ConfigParams, StaticConfigParams, IngressSettings]] = {}


def ingress_settings(annotations: dict[str, str], config: ConfigParams,
                     static: StaticConfigParams) -> IngressSettings:
    """The `IngressSettings` of an annotation set, computed once per (annotations, ConfigMap params, static
    params): most Ingresses have no annotations or share a few sets, and the params objects are the
    Configurator's own (looked up by identity: the entry holds them, so their ids are not reused while it
    exists)."""
    key = (tuple(annotations.items()), id(config), id(static))
    hit = _SETTINGS.get(key)
    if hit is not None:
        return hit[2]
    settings = IngressSettings(annotations, config, static)
    if len(_SETTINGS) >= 1024:  # bounded: Ingresses with annotations of their own each add one
        _SETTINGS.clear()
    _SETTINGS[key] = (config, static, settings)
    return settings


@shared
def server_settings(p: ConfigParams, static: StaticConfigParams, basic_auth: BasicAuth | None,
                     add_header_inherit: str, ssl: bool) -> Server:
    """The server-level settings of an Ingress's params (host, locations and TLS material left for `_server`
    to fill in); keyed by value, so that Ingresses with the same effective settings share them."""
    return Server(
        name="", ports=p.ports or (static.http_port,), ssl_ports=p.ssl_ports or (static.https_port,), ssl=ssl,
        redirect_to_https=p.redirect_to_https, force_ssl_redirect=p.force_ssl_redirect,
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


def inherits_values(*, grpc: bool, websocket: bool, redirect_to_https: bool, snippets: tuple[str, ...],
                     proxy_set_headers: tuple[ProxySetHeader, ...], keepalive: bool, buffering: bool,
                     connect: str, read: str, send: str, defaults: ProxyDefaults,
                     upstream_vhost: str = "") -> bool:
    """True if a location's proxy settings are exactly nginx.conf's defaults (so it may leave them out).
    Snippets may set proxy headers themselves, which would hide the inherited ones: never with snippets."""
    return (not grpc and not websocket and not redirect_to_https and not snippets and not proxy_set_headers
            and not upstream_vhost
            and keepalive == defaults.keepalive and buffering == defaults.buffering
            and connect == defaults.connect_timeout and read == defaults.read_timeout
            and send == defaults.send_timeout)


def inherits_proxy_defaults(loc: Location, defaults: ProxyDefaults | None,
                            server_snippets: tuple[str, ...]) -> bool:
    return defaults is not None and not server_snippets and inherits_values(
        grpc=loc.grpc, websocket=loc.websocket, redirect_to_https=loc.redirect_to_https,
        snippets=loc.snippets, proxy_set_headers=loc.proxy_set_headers, keepalive=loc.keepalive,
        buffering=loc.proxy_buffering, connect=loc.proxy_connect_timeout, read=loc.proxy_read_timeout,
        send=loc.proxy_send_timeout, defaults=defaults, upstream_vhost=loc.upstream_vhost)
