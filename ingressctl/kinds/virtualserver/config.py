"""A VirtualServer's NGINX configuration model (NIC's `internal/configs/virtualserver.go`, OSS template).

Guarantees:
- `generate_vs_config(ex, static, config)` turns a validated VirtualServer with its endpoints and TLS Secret
  (`VirtualServerEx`) into `VSConfig`, the model of `virtualserver.conf.j2`, plus warnings. It never reads
  the cluster.
- Names follow NIC: upstreams `vs_<ns>_<name>_<upstream>`, split and match variables
  `$vs_<ns>_<name>_splits_<i>` / `_matches_<i>` (dashes as underscores), internal locations
  `/internal_location_splits_<i>_split_<j>`, `/internal_location_matches_<i>_match_<j>`, `..._default`.
- Upstream defaults come from the ConfigMap (lb-method, max-fails, fail-timeout, keepalive, proxy timeouts,
  client-max-body-size, buffering); an upstream without endpoints points at the built-in 502 server.
- Policies (`kinds/virtualserver/policies.py`): spec policies render in the server, route and subroute
  policies in each location of the route (its split and match locations too), http-level lines before the
  server. A context whose policies fail (missing, invalid, bad Secret, NGINX Plus only) answers 500 there (the
  whole server for spec policies) with a warning. Snippets are used only with `enable_snippets`.
- Redirect and return actions and error pages are NGINX `return` and `error_page` constructs (a return
  body is written with NGINX's escapes as the user wrote them, as NIC does: `\\n` is a newline); splits are
  `split_clients` on `$request_id`; matches are chained `map`s (all conditions of a match must hold; the
  first matching match wins; otherwise the route's default).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from ingressctl.configs import parsing
from ingressctl.configs.config import Upstream, UpstreamServer, error_server_address
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.kinds.virtualserver.newer_nginx import NewerDirectives
from ingressctl.kinds.virtualserver.policies import VSPolicies
from ingressctl.kinds.virtualserver.template_model import (
    Header,
    NamedReturn,
    SplitClient,
    VirtualServerEx,
    VSConfig,
    VSLocation,
    VSMap,
    VSServer,
    VSUpstream,
)
from ingressctl.policies.generator import policy_context_params

_DEFAULT_HEADERS = (("X-Real-IP", "$remote_addr"), ("X-Forwarded-For", "$proxy_add_x_forwarded_for"),
                    ("X-Forwarded-Host", "$host"), ("X-Forwarded-Port", "$server_port"))
# The codes NGINX's errors map to gRPC statuses in gRPC locations (the template's GRPC_ERROR_PAGES).
GRPC_ERROR_CODES = frozenset({400, 401, 403, 404, 405, 408, 413, 414, 415, 426, 429, 495, 496, 497, 500, 501,
                              502, 503, 504})
_MAP_SPECIAL = ("default", "hostnames", "include", "volatile")


# ------------------------------------------------------------------------------------------------------------


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _lines(text: Any) -> list[str]:
    return [ln for ln in str(text or "").splitlines() if ln.strip()]


def unescape(value: Any) -> str:
    """A user string as NGINX reads NIC's rendering of it: validation requires every `"` to be escaped as
    `\\"`; the template's quoting escapes again, so the escapes are undone first."""
    return re.sub(r'\\(["\\])', r"\1", str(value or ""))


def service_ref(namespace: str, service: str) -> tuple[str, str]:
    """An upstream's `service` as (namespace, name): `name` is in the resource's namespace, `ns/name` in
    `ns`."""
    ns, _, name = service.rpartition("/")
    return (ns or namespace), name


def vsr_endpoints_key(namespace: str, name: str, upstream: str) -> str:
    """The key of a VirtualServerRoute upstream's endpoints in `VirtualServerEx.endpoints`."""
    return f"vsr/{namespace}/{name}/{upstream}"


def map_key(value: str) -> str:
    """A match value as a map key (the template quotes it): NIC's escaping of map's special words."""
    if value in _MAP_SPECIAL:
        return "\\" + value
    return value


def condition_source(cond: Mapping[str, Any]) -> str:
    if cond.get("header"):
        return "$http_" + str(cond["header"]).lower().replace("-", "_")
    if cond.get("cookie"):
        return "$cookie_" + str(cond["cookie"])
    if cond.get("argument"):
        return "$arg_" + str(cond["argument"])
    return str(cond.get("variable") or "")


class _Generator:
    """One VirtualServer's model (see the module docstring); counters run across the whole server."""

    def __init__(self, ex: VirtualServerEx, static: StaticConfigParams, config: ConfigParams,
                 replicas: int = 1) -> None:
        self.ex = ex
        self.static = static
        self.config = config
        self.spec = _d(ex.vs.get("spec"))
        self.ns, self.name = ex.namespace, ex.name
        self.var_prefix = f"vs_{self.ns}_{self.name}".replace("-", "_")
        self.warnings: list[str] = []
        self.child_warnings: dict[str, list[str]] = {}
        self.newer = NewerDirectives(static.capabilities, self.warnings)
        self.upstreams: dict[str, dict[str, Any]] = {}      # upstream block name -> its spec
        self.upstream_labels: dict[str, str] = {}           # upstream block name -> how warnings name it
        self.endpoint_keys: dict[str, str] = {}             # upstream block name -> key in ex.endpoints
        self.vs_scope = self._register(_l(self.spec.get("upstreams")))
        self.split_clients: list[SplitClient] = []
        self.maps: list[VSMap] = []
        self.named_returns: list[NamedReturn] = []
        self.locations: list[VSLocation] = []
        self.splits_count = 0
        self.matches_count = 0
        self.error_page_count = 0
        tls = _d(self.spec.get("tls"))
        redirect = _d(tls.get("redirect"))
        self.forwarded_proto = ("$http_x_forwarded_proto" if redirect.get("enable")
                                and redirect.get("basedOn") == "x-forwarded-proto" else "$scheme")
        tls_secret = ex.tls_secret
        terminates_tls = self.spec.get("tls") is not None and bool(
            (tls_secret is not None and tls_secret.path and not tls_secret.error)
            or (tls_secret is None and static.wildcard_tls_path))
        self.policies = VSPolicies(ex.policies, self.ns, self.name, tls=terminates_tls, replicas=replicas,
                                   capabilities=static.capabilities.features(),
                                   context=policy_context_params(static, ex.policy_endpoints))

    def upstream_name(self, name: str) -> str:
        return f"vs_{self.ns}_{self.name}_{name}"

    def _register(self, upstreams: list[Any], vsr: tuple[str, str] | None = None) -> dict[str, str]:
        """Name the upstreams of the VirtualServer (or of one of its VirtualServerRoutes); returns the scope
        (the resource's upstream names -> upstream block names)."""
        scope: dict[str, str] = {}
        for u in upstreams:
            local = str(_d(u).get("name"))
            if vsr is None:
                name, key = self.upstream_name(local), local
            else:
                name = self.upstream_name(f"vsr_{vsr[0]}_{vsr[1]}_{local}")
                key = vsr_endpoints_key(*vsr, local)
            scope[local] = name
            self.upstream_labels[name] = (f"upstream {local}" if vsr is None
                                          else f"upstream {local} of VirtualServerRoute {vsr[0]}/{vsr[1]}")
            self.upstreams[name] = _d(u)
            self.endpoint_keys[name] = key
        return scope

    # -------------------------------------------------------------------------------------- upstreams

    def build_upstreams(self) -> list[VSUpstream]:
        c = self.config
        out = []
        for name in sorted(self.upstreams):
            u = self.upstreams[name]
            addresses = sorted(self.ex.endpoints.get(self.endpoint_keys[name]) or [])
            max_fails = int(u.get("max-fails", c.max_fails))
            fail_timeout = str(u.get("fail-timeout") or c.fail_timeout)
            max_conns = int(u.get("max-conns", 0))
            if addresses:
                servers = [UpstreamServer(a, max_fails, fail_timeout, max_conns) for a in addresses]
            else:
                servers = [UpstreamServer(error_server_address(self.static.run_dir), max_fails,
                                          fail_timeout, max_conns)]
            lb = str(u.get("lb-method") or c.lb_method)
            if u.get("use-cluster-ip") or lb == "round_robin":
                lb = ""
            keepalive = int(u.get("keepalive", c.keepalive))
            # In the shared zone, as the Ingresses' upstreams: their peers can then change without a reload.
            zoned = Upstream(name, tuple(servers), zone_size=c.upstream_zone_size)
            out.append(VSUpstream(name, servers, lb, keepalive,
                                  sticky=self.newer.sticky(self.upstream_labels[name], u),
                                  zone=zoned.zone, zone_bytes=zoned.zone_bytes()))
        return out

    # -------------------------------------------------------------------------------------- routes

    def _route_path(self, path: str) -> tuple[str, str]:
        """The location's modifier and path (NIC 5.5 normalises `= /x`, `^~ /x`, `~ re` alike)."""
        for modifier in ("^~", "~*", "~", "="):
            if path.startswith(modifier):
                return modifier, path[len(modifier):].lstrip(" \t")
        return "", path

    def _error_pages(self, pages: list[Any]) -> list[tuple[str, str, str]]:
        out: list[tuple[str, str, str]] = []
        for j, page in enumerate(pages):
            pd = _d(page)
            codes = [int(c) for c in _l(pd.get("codes"))]
            if pd.get("redirect") is not None:
                r = _d(pd["redirect"])
                code = int(r.get("code") or 301)
                out.append((" ".join(map(str, codes)), f"={code}", unescape(r.get("url"))))
                continue
            r = _d(pd.get("return"))
            name = f"@error_page_{self.error_page_count}_{j}"
            headers = [Header(str(_d(h).get("name")), unescape(_d(h).get("value")), True)
                       for h in _l(r.get("headers"))]
            code = int(r.get("code") or 0)
            self.named_returns.append(NamedReturn(name, 200, str(r.get("type") or "text/html"),
                                                  str(r.get("body") or ""), headers))
            if code:
                out.append((" ".join(map(str, codes)), f"={code}", name))
            else:   # keep the original status: one line per code
                out.extend((str(c), f"={c}", name) for c in codes)
        self.error_page_count += 1 if pages else 0
        return out

    def _action_location(self, modifier: str, path: str, action: Mapping[str, Any],
                         route: Mapping[str, Any], *, internal: bool, route_modifier: str, route_path: str,
                         return_500: bool, scope: Mapping[str, str],
                         policy_lines: tuple[str, ...] = ()) -> VSLocation:
        loc = VSLocation(modifier=modifier, path=path, internal=internal, return_500=return_500,
                         policy_lines=list(policy_lines))
        loc.add_header_inherit = self.newer.add_header_inherit(
            f"add-header-inherit of route {route.get('path')}", route)
        snippets = route.get("location-snippets")
        if self.static.enable_snippets:
            loc.snippets = _lines(snippets) if snippets else list(self.config.location_snippets)
        loc.error_pages = self._error_pages(_l(route.get("errorPages")))
        if action.get("redirect") is not None:
            r = _d(action["redirect"])
            loc.redirect = (int(r.get("code") or 301), unescape(r.get("url")))
            return loc
        if action.get("return") is not None:
            r = _d(action["return"])
            loc.return_ = (int(r.get("code") or 200), str(r.get("type") or "text/plain"),
                           str(r.get("body") or ""))
            loc.return_headers = [Header(str(_d(h).get("name")), unescape(_d(h).get("value")), True)
                                  for h in _l(r.get("headers"))]
            return loc
        proxy = _d(action.get("proxy"))
        up_name = scope.get(str(action.get("pass") or proxy.get("upstream") or ""), "")
        u = self.upstreams.get(up_name, {})
        c = self.config
        loc.service = service_ref(self.ns, str(u.get("service") or ""))[1]
        loc.grpc = u.get("type") == "grpc"
        keepalive = int(u.get("keepalive", c.keepalive))
        loc.keepalive = keepalive > 0
        loc.connect_timeout = str(u.get("connect-timeout") or c.proxy_connect_timeout)
        loc.read_timeout = str(u.get("read-timeout") or c.proxy_read_timeout)
        loc.send_timeout = str(u.get("send-timeout") or c.proxy_send_timeout)
        loc.client_max_body_size = str(u.get("client-max-body-size") or c.client_max_body_size)
        loc.buffering = bool(u.get("buffering", c.proxy_buffering))
        buffers = _d(u.get("buffers"))
        loc.buffers = f"{buffers['number']} {buffers['size']}" if buffers else c.proxy_buffers
        loc.buffer_size = str(u.get("buffer-size") or c.proxy_buffer_size)
        loc.busy_buffers_size = str(u.get("busy-buffers-size") or "")
        loc.client_body_buffer_size = str(u.get("client-body-buffer-size") or "")
        if not loc.grpc:
            self._check_buffers(loc, up_name)
        loc.next_upstream = str(u.get("next-upstream") or "error timeout")
        loc.next_upstream_timeout = str(u.get("next-upstream-timeout") or "0s")
        loc.next_upstream_tries = int(u.get("next-upstream-tries") or 0)
        tls = bool(_d(u.get("tls")).get("enable"))
        scheme = ("grpcs" if tls else "grpc") if loc.grpc else ("https" if tls else "http")
        upstream = f"{scheme}://{up_name}"
        rewrite_path = str(proxy.get("rewritePath") or "")
        uri = ""
        if internal:
            if rewrite_path:
                loc.rewrites.append(("^", f"${self.var_prefix}_uri_no_args", ""))
                loc.rewrites.append(self._rewrite(route_modifier, route_path, rewrite_path))
            else:
                uri = "$request_uri"
        elif rewrite_path:
            if route_modifier in ("~", "~*"):
                loc.rewrites.append(self._rewrite(route_modifier, route_path, rewrite_path))
            else:
                uri = rewrite_path
        loc.proxy_pass = upstream + uri
        req = _d(proxy.get("requestHeaders"))
        user_set = [Header(str(_d(h).get("name")), unescape(_d(h).get("value"))) for h in _l(req.get("set"))]
        names = {h.name.lower() for h in user_set}
        defaults = [Header(n, v) for n, v in (*_DEFAULT_HEADERS, ("X-Forwarded-Proto", self.forwarded_proto))
                    if n.lower() not in names]
        host = [] if "host" in names else [Header("Host", "$host")]
        loc.set_headers = defaults + host + user_set
        loc.pass_request_headers = req.get("pass", True) is not False
        resp = _d(proxy.get("responseHeaders"))
        loc.hide_headers = [str(h) for h in _l(resp.get("hide"))]
        loc.pass_headers = [str(h) for h in _l(resp.get("pass"))]
        loc.ignore_headers = [str(h) for h in _l(resp.get("ignore"))]
        loc.add_headers = [Header(str(_d(h).get("name")), unescape(_d(h).get("value")),
                                  bool(_d(h).get("always"))) for h in _l(resp.get("add"))]
        return loc

    def _rewrite(self, modifier: str, path: str, rewrite_path: str) -> tuple[str, str, str]:
        if modifier in ("~", "~*"):
            regex = ("(?i)" if modifier == "~*" else "") + "^" + path.lstrip("^")
            return regex, rewrite_path, "break"
        return f"^{_regex_escape(path)}(.*)$", rewrite_path + "$1", "break"

    def add_route(self, route: Mapping[str, Any], scope: Mapping[str, str],
                  vsr: tuple[str, str] | None = None, parent_policies: Any = None) -> None:
        path = str(route.get("path") or "")
        modifier, plain = self._route_path(path)
        if vsr is None:
            pol = self.policies.route(route.get("policies"), path)
            warnings = self.warnings
        else:
            pol = self.policies.subroute(route.get("policies"), vsr, parent_policies, path)
            warnings = self.child_warnings.setdefault(f"{vsr[0]}/{vsr[1]}", [])
        warnings.extend(w for w in pol.warnings if w not in warnings)
        return_500 = bool(pol.error)
        matches = _l(route.get("matches"))
        splits = _l(route.get("splits"))
        kw: dict[str, Any] = {"route_modifier": modifier, "route_path": plain, "return_500": return_500,
                              "scope": scope, "policy_lines": tuple(pol.location)}
        if matches:
            variable = self._matches(route, matches, splits, kw)
            self.locations.append(VSLocation(modifier, plain, rewrite_to=variable))
        elif splits:
            variable = self._splits(route, splits, kw)
            self.locations.append(VSLocation(modifier, plain, rewrite_to=variable))
        elif route.get("action"):
            self.locations.append(self._action_location(modifier, plain, _d(route["action"]), route,
                                                        internal=False, **kw))

    def _route_vsrs(self, i: int, route: Mapping[str, Any], vsrs: Mapping[str, Any]) -> list[str]:
        """The VirtualServerRoutes route `i` delegates to: as the Configuration attached them, or, for a
        `VirtualServerEx` built without that map, the one its `route` names when it is given."""
        if self.ex.route_vsrs:
            return [k for k in self.ex.route_vsrs.get(i, []) if k in vsrs]
        ref = str(route.get("route") or "")
        key = ref if "/" in ref else f"{self.ns}/{ref}"
        return [key] if ref and key in vsrs else []

    def _add_vsr(self, route: Mapping[str, Any], vsr: Mapping[str, Any]) -> None:
        """The subroutes a VirtualServer route delegates to (by `route` or `routeSelector`): all of them under
        a prefix path; under a regex or exact path the one with that path (regex routes may share a
        VirtualServerRoute, each serving its own subroute)."""
        meta, vsr_spec = _d(vsr.get("metadata")), _d(vsr.get("spec"))
        vsr_key = (str(meta.get("namespace")), str(meta.get("name")))
        scope = self._register(_l(vsr_spec.get("upstreams")), vsr_key)
        modifier, plain = self._route_path(str(route.get("path") or ""))
        # NIC: the delegating route's error pages, snippets and policies reach subroutes without theirs.
        inherited = {k: route[k] for k in _INHERITED_ROUTE_FIELDS if route.get(k)}
        for subroute in _l(vsr_spec.get("subroutes")):
            sd = _d(subroute)
            own = self._route_path(str(sd.get("path") or ""))
            if modifier in ("~", "~*", "=") and own != (modifier, plain):
                continue
            self.add_route({**inherited, **sd}, scope, vsr_key, route.get("policies"))

    def _check_buffers(self, loc: VSLocation, upstream: str) -> None:
        """NGINX refuses some combinations of `buffers`, `buffer-size` and `busy-buffers-size`: with
        -enable-directive-autoadjust they are rebalanced (NIC 5.2+), otherwise left out (NGINX's defaults
        apply), each time with a warning per upstream."""
        page = os.sysconf("SC_PAGESIZE") if hasattr(os, "sysconf") else 4096
        problem = parsing.buffers_problem(loc.buffers, loc.buffer_size, "", page,
                                          proxy_busy_buffers_size=loc.busy_buffers_size)
        if not problem:
            return
        if self.static.enable_directive_autoadjust:
            loc.buffers, loc.buffer_size, loc.busy_buffers_size, _ = parsing.balance_proxy_buffers(
                loc.buffers, loc.buffer_size, loc.busy_buffers_size, "", page)
            warning = f"the proxy buffers of upstream {upstream} were adjusted ({problem})"
        else:
            loc.buffers = loc.buffer_size = loc.busy_buffers_size = ""
            warning = (f"the proxy buffers of upstream {upstream} are ignored (NGINX would refuse them: "
                       f"{problem})")
        if warning not in self.warnings:
            self.warnings.append(warning)

    def _grpc_error_page_warnings(self) -> None:
        """NIC: in gRPC locations NGINX's errors become gRPC statuses; error pages for those codes are
        ignored, with a warning."""
        for loc in self.locations:
            if not loc.grpc or not loc.error_pages:
                continue
            used = {int(c) for codes, _, _ in loc.error_pages for c in codes.split()}
            codes = " ".join(str(c) for c in sorted(used & GRPC_ERROR_CODES))
            if codes:
                upstream = loc.proxy_pass.split("://", 1)[-1]
                self.warnings.append(f"The error page configuration for the upstream {upstream} is ignored "
                                     f"for status code(s) [{codes}], which cannot be used for GRPC "
                                     "upstreams.")

    def _listens(self) -> tuple[list[str], list[str]]:
        """The HTTP and HTTPS `listen` addresses: the default ports, or only the resolved custom listeners."""
        static = self.static
        custom = self.ex.listeners

        def addresses(port: int, ipv4: str = "", ipv6: str = "") -> list[str]:
            out = [f"{ipv4}:{port}" if ipv4 else str(port)]
            if not static.disable_ipv6:
                out.append(f"[{ipv6 or '::'}]:{port}")
            return out

        if custom is None:
            return addresses(static.http_port), addresses(static.https_port)
        http = addresses(custom.http.port, custom.http.ipv4, custom.http.ipv6) if custom.http else []
        https = addresses(custom.https.port, custom.https.ipv4, custom.https.ipv6) if custom.https else []
        return http, https

    def _splits(self, route: Mapping[str, Any], splits: list[Any], kw: dict[str, Any]) -> str:
        i = self.splits_count
        self.splits_count += 1
        variable = f"${self.var_prefix}_splits_{i}"
        dist = []
        for j, sp in enumerate(splits):
            sd = _d(sp)
            target = f"/internal_location_splits_{i}_split_{j}"
            self.locations.append(self._action_location("", target, _d(sd.get("action")), route,
                                                        internal=True, **kw))
            if int(sd.get("weight") or 0) > 0:
                dist.append((int(sd["weight"]), target))
        self.split_clients.append(SplitClient(variable, dist))
        return variable

    def _matches(self, route: Mapping[str, Any], matches: list[Any], splits: list[Any],
                 kw: dict[str, Any]) -> str:
        i = self.matches_count
        self.matches_count += 1
        first_vars: list[str] = []
        results: list[tuple[str, str]] = []
        for j, m in enumerate(matches):
            md = _d(m)
            conds = [_d(c) for c in _l(md.get("conditions"))]
            cond_vars = [f"${self.var_prefix}_matches_{i}_match_{j}_cond_{k}" for k in range(len(conds))]
            for k, cond in enumerate(conds):
                ok = cond_vars[k + 1] if k + 1 < len(conds) else "1"
                value = str(cond.get("value") or "")
                negate = value.startswith("!")
                if negate:
                    value = value[1:]
                hit, miss = (("0", ok) if negate else (ok, "0"))
                self.maps.append(VSMap(condition_source(cond), cond_vars[k],
                                       [(map_key(value), hit), ("default", miss)]))
            first_vars.append(cond_vars[0])
            if md.get("splits"):
                target = self._splits(route, _l(md["splits"]), kw)
            else:
                target = f"/internal_location_matches_{i}_match_{j}"
                self.locations.append(self._action_location("", target, _d(md.get("action")), route,
                                                            internal=True, **kw))
            results.append((f"~^{'0' * j}1", target))
        if splits:
            default = self._splits(route, splits, kw)
        else:
            default = f"/internal_location_matches_{i}_default"
            self.locations.append(self._action_location("", default, _d(route.get("action")), route,
                                                        internal=True, **kw))
        variable = f"${self.var_prefix}_matches_{i}"
        self.maps.append(VSMap("".join(first_vars), variable, [*results, ("default", default)]))
        return variable

    # -------------------------------------------------------------------------------------- server

    def build(self) -> VSConfig:
        spec, static, c = self.spec, self.static, self.config
        spec_policies = self.policies.spec(spec.get("policies"))
        self.warnings.extend(w for w in spec_policies.warnings if w not in self.warnings)
        vsrs = {f"{_d(v.get('metadata')).get('namespace')}/{_d(v.get('metadata')).get('name')}": v
                for v in self.ex.vsrs}
        for i, route in enumerate(_l(spec.get("routes"))):
            rd = _d(route)
            if not rd.get("route") and not rd.get("routeSelector"):
                self.add_route(rd, self.vs_scope)
                continue
            # Missing or unfit VirtualServerRoutes are not listed: the VirtualServer's warning says so.
            for vsr_key in self._route_vsrs(i, rd, vsrs):
                self._add_vsr(rd, vsrs[vsr_key])
        http_listens, https_listens = self._listens()
        server = VSServer(server_name=str(spec.get("host") or ""), http_listens=http_listens,
                          https_listens=https_listens, namespace=self.ns,
                          name=self.name, server_tokens=c.server_tokens,
                          return_500=bool(spec_policies.error), policy_lines=spec_policies.server,
                          http2=c.http2, http2_directive=static.capabilities.has("http2_directive"),
                          gunzip=bool(spec.get("gunzip")) and self.newer.module("spec.gunzip", "gunzip"),
                          add_header_inherit=self.newer.add_header_inherit("spec.add-header-inherit",
                                                                            spec))
        tls = spec.get("tls")
        if tls is not None:
            t = _d(tls)
            ref = self.ex.tls_secret
            if ref is not None:
                server.ssl = True
                if ref.path and not ref.error:
                    server.ssl_certificate = ref.path
                else:
                    self.warnings.append(f"TLS secret {t.get('secret')} is invalid: {ref.error or 'missing'}")
            elif static.wildcard_tls_path:
                server.ssl, server.ssl_certificate = True, static.wildcard_tls_path
            redirect = _d(t.get("redirect"))
            if redirect.get("enable"):
                server.tls_redirect = (int(redirect.get("code") or 301), self.forwarded_proto)
        if static.enable_snippets:
            server.snippets = (_lines(spec["server-snippets"]) if spec.get("server-snippets")
                               else list(c.server_snippets))
        server.locations = self.locations
        server.catch_all_404 = not any(loc.modifier == "" and loc.path == "/" for loc in self.locations)
        if server.catch_all_404:
            server.catch_all_lines = self.policies.catch_all().location
        server.named_returns = self.named_returns
        server.policy_locations = self.policies.locations
        for name, u in sorted(self.upstreams.items()):
            if u.get("type") == "grpc" and not (server.ssl and c.http2):
                self.warnings.append(f"gRPC cannot be configured for upstream {name}. gRPC requires enabled "
                                     "HTTP/2 and TLS termination.")
        server.grpc_errors = server.ssl and c.http2 and any(loc.grpc for loc in self.locations)
        if server.grpc_errors:
            self._grpc_error_page_warnings()
        http_snippets = _lines(spec.get("http-snippets")) if static.enable_snippets else []
        return VSConfig(self.build_upstreams(), self.split_clients, self.maps, http_snippets, server,
                        policy_http=self.policies.http,
                        child_warnings={k: v for k, v in self.child_warnings.items() if v})


# What a delegating route hands to its VirtualServerRoute's subroutes without their own (policies go through
# VSPolicies.subroute, NIC's rule).
_INHERITED_ROUTE_FIELDS = ("errorPages", "location-snippets", "add-header-inherit")


def _regex_escape(path: str) -> str:
    return "".join("\\" + ch if ch in ".^$*+?()[]{}|\\" else ch for ch in path)


def generate_vs_config(ex: VirtualServerEx, static: StaticConfigParams,
                       config: ConfigParams, replicas: int = 1) -> tuple[VSConfig, list[str]]:
    """The model of one VirtualServer and its warnings (see the module docstring); `replicas` scales
    rate-limit policies that ask for it."""
    gen = _Generator(ex, static, config, replicas)
    cfg = gen.build()
    return cfg, gen.warnings
