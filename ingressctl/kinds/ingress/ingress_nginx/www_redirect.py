"""ingress-nginx's `from-to-www-redirect`: a server for the other name of each host (`www.<host>`, or the host
without `www.`) that redirects to the host.

Guarantees:
- `www_redirect_names(obj)`: the other names of the Ingress's hosts when the annotation is Go-true (wildcard
  hosts and names that are not valid hosts have none). The Ingress claims them weakly (the Configuration's
  `weak_hosts`): a name another resource serves as a host stays that resource's (ingress-nginx skips the
  redirect too), and the redirect server exists only while the Ingress owns the name.
- The redirect server listens on the host's plain-text ports and answers every request with
  `return <http-redirect-code> $scheme://<host>:$server_port<request URI without one trailing slash>` (308
  by default, as ingress-nginx's `ngx_srv_redirect.lua`); HTTPS requests to the other name are not redirected.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ingressctl.configs.config import PREFIX, Location, Server, ValueMap, derive
from ingressctl.kinds.ingress.locations import HOST
from ingressctl.validation import parse_go_bool

FROM_TO_WWW = "nginx.ingress.kubernetes.io/from-to-www-redirect"


def other_name(host: str) -> str:
    """`www.<host>` for a host, the host without `www.` for a `www.` one ("" when there is none)."""
    if not host or host.startswith("*."):
        return ""
    name = host.removeprefix("www.") if host.startswith("www.") else "www." + host
    return name if HOST.fullmatch(name) and len(name) <= 253 else ""


def www_redirect_names(obj: Mapping[str, Any]) -> tuple[str, ...]:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(FROM_TO_WWW)
    if not isinstance(value, str) or parse_go_bool(value) is not True:
        return ()
    hosts = [str((r or {}).get("host") or "") for r in (obj.get("spec") or {}).get("rules") or []
             if isinstance(r, dict)]
    return tuple(dict.fromkeys(n for h in hosts if (n := other_name(h)) and n not in hosts))


def add_redirects(servers: list[Server], valid_hosts: Mapping[str, bool], code: int,
                  warnings: list[str]) -> tuple[list[Server], tuple[ValueMap, ...]]:
    """The servers with a redirect server for the other name of each host the Ingress owns it for."""
    out = list(servers)
    maps: list[ValueMap] = []
    for server in servers:
        name = other_name(server.name)
        if not name or name not in valid_hosts:
            continue
        if not valid_hosts[name]:
            warnings.append(f"annotation {FROM_TO_WWW}: host {name} is served by another resource; no "
                            f"redirect from it to {server.name}")
            continue
        made = redirect_server(server, name, code)
        if made is not None:
            out.append(made[0])
            maps.append(made[1])
    return out, tuple(maps)


def redirect_server(server: Server, name: str, code: int) -> tuple[Server, ValueMap] | None:
    """The redirect server for `name` to `server`'s host, with the map that drops the trailing slash; None
    when the host's server has no location to take the proxy settings of."""
    if not server.locations:
        return None
    digest = hashlib.sha1(f"{name}/{server.name}".encode()).hexdigest()[:16]
    uri = f"$inn_www_{digest}"
    strip = ValueMap(source="$request_uri", variable=uri, entries=(("^(.*)/$", "$1"),),
                     default="$request_uri")
    base: Location = server.locations[0]
    loc = derive(base, path="/", modifier=PREFIX, exact_regex=False, catch_all=False, upstream_var="",
                 return_redirect=(code, f"$scheme://{server.name}:$server_port{uri}"))
    redirect = Server(name=name, locations=(loc,), ports=server.ports, server_tokens=server.server_tokens,
                      disable_ipv6=server.disable_ipv6, proxy_protocol=server.proxy_protocol)
    return redirect, strip
