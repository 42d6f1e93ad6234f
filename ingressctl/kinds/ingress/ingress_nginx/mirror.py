"""ingress-nginx's request mirroring (`mirror-target`, `mirror-host`, `mirror-request-body`): the values,
their combination into one `Mirror` per Ingress, and its NGINX lines on the Ingress's model.

Guarantees:
- `mirror-target` (High risk, CVE-2025-1098) is an http(s) URL parsed by `auth_request.http_url`, where the
  host ends at the first `/`, `?` or `$` (ingress-nginx cuts the target at its first `$` for the default
  Host): its host is a literal name or IPv4 address (no variables: ingressctl configures no `resolver`), its
  port 1-65535, and what follows the host is empty, starts with `/` or `?`, or starts with `$request_uri`,
  `$uri` or `$document_uri` (whose values start with `/`, so no variable can extend the host when NGINX
  parses the URL at run time); only NGINX variables NGINX knows (ingress-nginx's template variables become
  NGINX's, as in `auth-url`, but for `$escaped_request_uri`, which is the path `$request_uri` here); no
  whitespace, quotes, `;`, braces or `\\`; the request's own host (`auth-url`'s loopback) is refused as any
  variable there.
- `mirror-host` (High risk) is a host name or IPv4 address (RFC 1123 labels), optionally with `:<port>`.
- An invalid `mirror-target` or `mirror-host` rejects the Ingress (ingress-nginx logged it and went on
  without it): nothing of it reaches NGINX. `mirror-request-body` is `on` (the default) or `off`; any other
  value is ignored with a warning and the body is sent, as ingress-nginx. Without `mirror-target` the other
  two are ignored with a warning.
- Every location the Ingress owns (a minion's own; a master's for the minions without a `Mirror` of their
  own) gets `mirror /_mirror-<id>;` and `mirror_request_body on|off;`; its server gets one internal
  `location = /_mirror-<id>` that proxies to the target (its path as written, NGINX variables evaluated in
  the copy's subrequest, where `$request_uri` is the original request's) with `Host` = `mirror-host` or the
  target's host, through an http-level `upstream ing_<ns>_<name>_mirror_<hash>` resolved when NGINX loads
  the configuration. `<id>` and `<hash>` derive from the Ingress and the target only: re-rendering gives the
  same text. With the body off, the copy has no body and no `Content-Length` (NGINX would otherwise pass the
  client's `Content-Length` with no body behind it, and the backend would wait for it).
- NGINX's `mirror` runs the copy as a background subrequest whose answer is discarded: the client's answer
  is the primary backend's, sent as soon as that backend answers, whether the copy's backend is down (the
  subrequest fails at once), slow or answers an error. What NGINX does wait for: with `mirror_request_body
  on` the request body is read in full before either request starts (`proxy-request-buffering: off` has no
  effect on such a location), and the client's connection is released (the next request on a kept-alive
  HTTP/1.x connection read, the access log line written) only when the copy ends, which its location's
  proxy timeouts (the ConfigMap's) bound.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ingressctl.configs.config import IngressNginxConfig, Location, PolicyLocation, Server
from ingressctl.configs.quoting import arg, quote, quote_vars
from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.ingress_nginx.auth_render import digest, upstream_lines
from ingressctl.kinds.ingress.ingress_nginx.auth_request import INGRESS_NGINX_VARIABLES, HttpURL, http_url
from ingressctl.kinds.ingress.ingress_nginx.owners import owned

PREFIX = "nginx.ingress.kubernetes.io/"  # the table's (which imports this module)
EXTRA = "mirror"  # the key of the `Mirror` in `Translation.extras`
TARGET = PREFIX + "mirror-target"
HOST = PREFIX + "mirror-host"
REQUEST_BODY = PREFIX + "mirror-request-body"
SOURCE_PREFIX = "/_mirror-"

# Variables whose value starts with `/`: the only ones that may follow the target's host directly.
_PATH_VARIABLES = re.compile(r"\$(request_uri|uri|document_uri)(?![A-Za-z0-9_])")
# After the host the URI is the copy's path: `$escaped_request_uri` there means `$request_uri` (one escaped
# URI component would be no path).
_VARIABLES = {**INGRESS_NGINX_VARIABLES, "$escaped_request_uri": "$request_uri"}
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"{_LABEL}(\.{_LABEL})*")


@dataclass(frozen=True)
class Mirror:
    """What the mirror annotations of one Ingress ask for."""

    target: HttpURL
    host: str                  # the Host of the copy: mirror-host, else the target's host
    request_body: bool = True  # mirror-request-body


def target(value: str) -> HttpURL:
    """`mirror-target` (see the module docstring)."""
    url = http_url(value, host_ends="/?$", service="mirror backend", loopback=False, variables=_VARIABLES)
    if url.path and url.path[0] not in "/?" and not _PATH_VARIABLES.match(url.path):
        raise ValueError("after the host only '/', '?', $request_uri, $uri or $document_uri may follow "
                         "(another variable would become part of the host)")
    return url


def host(value: str) -> str:
    """`mirror-host`: a host name or IPv4 address, optionally `:<port>`."""
    name, colon, port = value.rpartition(":") if ":" in value else (value, "", "")
    if len(name) > 253 or not _HOST_NAME.fullmatch(name):
        raise ValueError("must be a host name (letters, digits, '-' and '.') with an optional :<port>")
    if colon and (not port.isdigit() or not 1 <= int(port) <= 65535):
        raise ValueError("the port must be between 1 and 65535")
    return value


def combine(parsed: dict[str, Any], raw: dict[str, str], out: Any) -> None:
    """The translator's combiner (`translate._COMBINERS`): `out.extras[EXTRA]` = the `Mirror`."""
    url: HttpURL | None = parsed.get(TARGET)
    if url is None:
        for name in (HOST, REQUEST_BODY):
            if name in parsed:
                out.mark(name, Status.IGNORED, "mirror-target is not set (ingress-nginx ignores it too)")
        return
    body = True
    if REQUEST_BODY in parsed:
        text = parsed[REQUEST_BODY].strip()
        if text not in ("on", "off"):
            out.mark(REQUEST_BODY, Status.IGNORED, "invalid value (ingress-nginx ignores it too, the body is "
                                                   "sent): must be 'on' or 'off'")
        body = text != "off"
    out.extras[EXTRA] = Mirror(target=url, host=parsed.get(HOST, url.host), request_body=body)


# --------------------------------------------------------------------------------------------------- render

def source(namespace: str, name: str) -> str:
    """The internal location of an Ingress's copies (ingress-nginx: `/_mirror-<uid>`)."""
    return SOURCE_PREFIX + digest(namespace, name)


def upstream_name(namespace: str, name: str, m: Mirror) -> str:
    u = m.target
    return f"ing_{namespace}_{name}_mirror_{digest(u.scheme, u.host, str(u.port))}"


def mirror_location(m: Mirror, upstream: str, path: str) -> PolicyLocation:
    """The internal location that sends the copy."""
    u = m.target
    lines = ["internal;",
             "proxy_http_version 1.1;",
             f"proxy_set_header Host {quote(m.host)};"]
    if not m.request_body:
        lines += ["proxy_pass_request_body off;", 'proxy_set_header Content-Length "";']
    if u.scheme == "https":  # SNI: the name the copy is addressed to
        lines += ["proxy_ssl_server_name on;", f"proxy_ssl_name {arg(m.host.rpartition(':')[0] or m.host)};"]
    lines.append(f"proxy_pass {quote_vars(f'{u.scheme}://{upstream}{u.path}')};")
    return PolicyLocation(f"= {arg(path)}", tuple(lines))


def _copy(loc: Location, path: str, m: Mirror) -> Location:
    lines = (f"mirror {arg(path)};", f"mirror_request_body {'on' if m.request_body else 'off'};")
    return dataclasses.replace(loc, policy_lines=(*loc.policy_lines, *lines))


def apply_mirrors(cfg: IngressNginxConfig, mirrors: Mapping[tuple[str, str], Mirror]) -> IngressNginxConfig:
    """The model with the copies. `mirrors`: (namespace, name) of the Ingress (a regular one or a master, and
    minions) -> its `Mirror`; a master's covers the minions without one."""
    if not mirrors:
        return cfg
    http: list[str] = []
    servers: list[Server] = []
    for server in cfg.servers:
        locations: list[Location] = []
        extra: dict[str, PolicyLocation] = {}
        for loc in server.locations:
            hit = owned(mirrors, loc, cfg.ingress)
            if hit is None:
                locations.append(loc)
                continue
            owner, m = hit
            path = source(*owner)
            if path not in extra:
                upstream = upstream_name(*owner, m)
                http.append(upstream_lines(upstream, f"{m.target.host}:{m.target.port}"))
                extra[path] = mirror_location(m, upstream, path)
            locations.append(_copy(loc, path, m))
        servers.append(dataclasses.replace(server, locations=tuple(locations),
                                           policy_locations=(*server.policy_locations, *extra.values())))
    policy_http = (*cfg.policy_http, *(h for h in dict.fromkeys(http) if h not in cfg.policy_http))
    return dataclasses.replace(cfg, servers=tuple(servers), policy_http=policy_http)
