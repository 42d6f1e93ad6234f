"""ingress-nginx's external authentication (`auth_request.AuthRequest`) rendered onto an Ingress's model, as
its Policies are (`policy_lines` of the locations, `policy_locations` of the server, `policy_http` lines).

Guarantees:
- Every location of the Ingress (of a minion: its own locations; of a master: those of minions without auth
  of their own) gets `auth_request` to an internal `location = /_external-auth-<hash>` of its server, which
  proxies a body-less copy of the request to `auth-url` with ingress-nginx's headers (`Host` the URL's host,
  `X-Original-URL`, `X-Original-Method`, `X-Sent-From`, `X-Real-IP`, `X-Forwarded-For`,
  `X-Auth-Request-Redirect`; with `auth-method` that method, `X-Original-URI` and `X-Scheme`), the headers
  of `auth-proxy-set-headers` (`proxy_set_header`, after those, as ingress-nginx's template) and the
  `auth-snippet`. The auth host is an http-level `upstream` per Ingress and host (`ing_<ns>_<name>_authreq_
  <hash>`), resolved when NGINX loads it, so variables in the URL's path need no resolver. A loopback URL
  (`$host`) is this NGINX: `127.0.0.1` on the server's own port (its first TLS port for https), with the
  request's host as `Host` and TLS server name, and `X-Ingressctl-Auth-Loopback: 1`: a location protected by
  a loopback auth URL answers such a request 508 (Loop Detected), so an auth URL that leads back to a
  location it protects (its path served by that Ingress itself) fails closed at once instead of recursing.
- The auth answer's `Set-Cookie` is added to 2xx/3xx answers (every answer with `auth-always-set-cookie`);
  `auth-response-headers` are set on the upstream request (`proxy_set_header`, `grpc_set_header` for gRPC);
  with `auth-signin` a 401 answers 302 to the sign-in URL (`error_page 401 = @<named location>`).
- A location whose own `add_header` lines would hide the server's (HSTS, `nginx.org/add-header`) repeats
  them, as the Policies do.
- A location that already has `auth_request` (an externalAuth Policy of `nginx.org/policies`) keeps it: the
  `nginx.org/*` annotation wins, with a warning naming both.
- Every user value passes a quoting filter; names are derived from the Ingress and the location only, so
  re-rendering gives the same text.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping

from ingressctl.configs.config import IngressNginxConfig, Location, PolicyLocation, Server
from ingressctl.configs.quoting import arg, quote, quote_vars, token
from ingressctl.kinds.ingress.ingress_nginx.auth_request import AuthRequest
from ingressctl.kinds.ingress.ingress_nginx.owners import owned
from ingressctl.kinds.ingress.policies import server_headers

AUTH_PREFIX = "/_external-auth-"
LOOPBACK_HEADER = "X-Ingressctl-Auth-Loopback"
LOOPBACK_VARIABLE = LOOPBACK_HEADER.lower().replace("-", "_")
WINS = ("annotation nginx.org/policies (externalAuth) wins over nginx.ingress.kubernetes.io/auth-url on "
        "location {path}; auth-url is ignored there")


def digest(*parts: str) -> str:
    """A short stable name part of `parts` (locations and upstreams named after an Ingress's settings)."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


def _address(auth: AuthRequest, server: Server) -> str:
    """`host:port` of the auth service: the URL's, or for a loopback URL this NGINX's port of `server`."""
    u = auth.url
    if not u.loopback:
        return f"{u.host}:{u.port}"
    ports = server.ssl_ports if u.scheme == "https" else server.ports
    return f"127.0.0.1:{ports[0] if ports else u.port}"


def upstream_name(namespace: str, name: str, auth: AuthRequest, address: str) -> str:
    return f"ing_{namespace}_{name}_authreq_{digest(auth.url.scheme, *address.rsplit(':', 1))}"


def upstream_lines(upstream: str, address: str) -> str:
    """An http-level upstream of one server (`host:port`), resolved when NGINX loads the configuration."""
    return "\n".join([f"upstream {token(upstream)} {{",
                      f"    server {arg(address)};",
                      "}"])


def auth_location(auth: AuthRequest, upstream: str, path: str) -> PolicyLocation:
    """The internal location that asks the auth service."""
    u = auth.url
    lines = ["internal;",
             "proxy_pass_request_body off;",
             'proxy_set_header Content-Length "";',
             'proxy_set_header X-Forwarded-Proto "";']
    if auth.method:
        lines += [f"proxy_method {token(auth.method)};",
                  "proxy_set_header X-Original-URI $request_uri;",
                  "proxy_set_header X-Scheme $scheme;"]
    host = "$host" if u.loopback else quote(u.host)
    lines += [f"proxy_set_header Host {host};",
              "proxy_set_header X-Original-URL $scheme://$http_host$request_uri;",
              "proxy_set_header X-Original-Method $request_method;",
              'proxy_set_header X-Sent-From "nginx-ingress-controller";',
              "proxy_set_header X-Real-IP $remote_addr;",
              "proxy_set_header X-Forwarded-For $remote_addr;",
              "proxy_set_header X-Auth-Request-Redirect "
              f"{quote(auth.request_redirect) if auth.request_redirect else '$request_uri'};",
              "proxy_http_version 1.1;",
              "proxy_pass_request_headers on;"]
    if u.loopback:
        lines.append(f"proxy_set_header {LOOPBACK_HEADER} 1;")
    if u.scheme == "https":
        lines += ["proxy_ssl_server_name on;", f"proxy_ssl_name {'$host' if u.loopback else arg(u.host)};"]
    # auth-proxy-set-headers (validated by `header_maps`: header names, values without quotes or `;`)
    lines += [f"proxy_set_header {token(name)} {quote_vars(value)};" for name, value in auth.proxy_headers]
    lines += list(auth.snippet)
    lines.append(f"proxy_pass {quote_vars(f'{u.scheme}://{upstream}{u.path}')};")
    return PolicyLocation(f"= {arg(path)}", tuple(lines))


def signin_location(auth: AuthRequest, name: str) -> PolicyLocation:
    return PolicyLocation(token(name), ("add_header Set-Cookie $auth_cookie;",
                                        f"return 302 {quote_vars(auth.signin)};"))


def _protect(loc: Location, auth: AuthRequest, path: str, signin: str, inherited: list[str]) -> Location:
    loop = [f"if ($http_{LOOPBACK_VARIABLE}) {{ return 508; }}"] if auth.url.loopback else []
    lines = [*loop, f"auth_request {arg(path)};",
             "auth_request_set $auth_cookie $upstream_http_set_cookie;",
             f"add_header Set-Cookie $auth_cookie{' always' if auth.always_set_cookie else ''};"]
    set_header = "grpc_set_header" if loc.grpc else "proxy_set_header"
    for i, header in enumerate(auth.response_headers):
        variable = "$upstream_http_" + token(header.lower().replace("-", "_"))
        lines += [f"auth_request_set $authHeader{i} {variable};",
                  f"{set_header} {token(header)} $authHeader{i};"]
    if signin:
        lines.append(f"error_page 401 = {token(signin)};")
    if not loc.add_headers:  # NGINX drops the server's add_header lines in a location with its own
        lines = [*inherited, *lines]
    return dataclasses.replace(loc, policy_lines=(*loc.policy_lines, *lines))


def apply_auth_requests(cfg: IngressNginxConfig, auths: Mapping[tuple[str, str], AuthRequest]
                        ) -> tuple[IngressNginxConfig, list[str]]:
    """(the model with the auth subrequests, warnings). `auths`: (namespace, name) of the Ingress (a regular
    one or a master, and minions) -> its `AuthRequest`; a master's covers the minions without one."""
    if not auths:
        return cfg, []
    master = cfg.ingress
    warnings: list[str] = []
    http: list[str] = []
    servers: list[Server] = []
    for server in cfg.servers:
        locations: list[Location] = []
        extra: list[PolicyLocation] = []
        inherited = server_headers(server)
        for loc in server.locations:
            hit = owned(auths, loc, master)
            if hit is None:
                locations.append(loc)
                continue
            owner, auth = hit
            if any(line.startswith("auth_request ") for line in (*loc.policy_lines, *server.policy_lines)):
                warnings.append(WINS.format(path=loc.path))
                locations.append(loc)
                continue
            key = digest(server.name, loc.modifier, loc.path)
            path = AUTH_PREFIX + key
            address = _address(auth, server)
            upstream = upstream_name(*owner, auth, address)
            http.append(upstream_lines(upstream, address))
            extra.append(auth_location(auth, upstream, path))
            signin = ""
            if auth.signin:
                signin = f"@external-auth-signin-{key}"
                extra.append(signin_location(auth, signin))
            locations.append(_protect(loc, auth, path, signin, inherited))
        servers.append(dataclasses.replace(server, locations=tuple(locations),
                                           policy_locations=(*server.policy_locations, *extra)))
    policy_http = (*cfg.policy_http, *(h for h in dict.fromkeys(http) if h not in cfg.policy_http))
    return dataclasses.replace(cfg, servers=tuple(servers), policy_http=policy_http), warnings
