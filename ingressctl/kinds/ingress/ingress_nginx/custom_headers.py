"""ingress-nginx's `custom-headers` and the denial of a header ConfigMap (`header_maps.py`) rendered onto an
Ingress's model: OSS NGINX has no `more_set_headers`, so each header is an `add_header ... always` line of
the Ingress's locations.

Guarantees:
- Every location of the Ingress (of a minion: its own; of a master: those of minions without headers of
  their own; not the catch-all's) gets `add_header "<name>" "<value>" always;` for each header, sorted by
  name, so the header is on every answer, errors included, as `more_set_headers` sets it. The backend's own
  header of that name is hidden (`proxy_hide_header`), as `more_set_headers` replaces it.
- A `$` of a value is literal, as ingress-nginx writes it (`escapeLiteralDollar`): it is written as a
  variable whose value is `$` (`geo $ingressctl_dollar_<digest> { default "$"; }`, one per file, named
  after the model's Ingress); every other character passes the quoting filter.
- A location with `add_header` and `proxy_hide_header` lines of its own would lose the server's (HSTS,
  `nginx.org/add-header`, `nginx.org/proxy-hide-headers` and HSTS's hiding of the backend's header): those
  are repeated in it unless they are there already.
- A location a denied header ConfigMap covers (`header_maps.DENIED`, `AUTH_DENIED`: its own Ingress's, or a
  master's it inherits) answers `return 503;` (before any access check, so an auth subrequest never runs
  and nothing is served without its headers).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from typing import Any

from ingressctl.configs.config import IngressMeta, IngressNginxConfig, Location, Server
from ingressctl.configs.quoting import quote, quote_vars, token
from ingressctl.kinds.ingress.ingress_nginx.auth_request import EXTRA as AUTH_EXTRA
from ingressctl.kinds.ingress.ingress_nginx.header_maps import AUTH_DENIED, DENIED, EXTRA, RESOLVED, Headers
from ingressctl.kinds.ingress.ingress_nginx.owners import inherits, owned, owner_of
from ingressctl.kinds.ingress.policies import server_headers

Owner = tuple[str, str]


def dollar_variable(ingress: IngressMeta) -> str:
    digest = hashlib.sha256(f"{ingress.namespace}/{ingress.name}".encode()).hexdigest()[:16]
    return f"ingressctl_dollar_{digest}"


def header_value(value: str, dollar: str) -> str:
    """`value` as one quoted NGINX argument whose every `$` is literal (`${<dollar>}`)."""
    return quote_vars(value.replace("$", "${" + dollar + "}"))


def header_lines(headers: Headers, dollar: str) -> list[str]:
    lines = [f"add_header {quote(name)} {header_value(value, dollar)} always;" for name, value in headers]
    return [*(f"proxy_hide_header {quote(name)};" for name, _ in headers), *lines]


def _denied(extras: Mapping[Owner, Mapping[str, Any]], loc: Location, master: IngressMeta) -> bool:
    """Whether a header ConfigMap that covers the location is unusable: its owner's custom-headers (a minion
    without them: the master's; not for a shared host's member), or those of the auth subrequest that
    protects it (likewise)."""
    own = extras.get(owner_of(loc, master), {})
    top = extras.get((master.namespace, master.name), {}) if inherits(loc) else {}
    for present, denied in ((EXTRA, DENIED), (AUTH_EXTRA, AUTH_DENIED)):
        if denied in (own if present in own else top):
            return True
    return False


def _server_hides(server: Server) -> list[str]:
    """The server's `proxy_hide_header` lines, as the template writes them."""
    lines = [f"proxy_hide_header {token(h)};" for h in server.proxy_hide_headers]
    if server.hsts and (server.ssl or server.hsts_behind_proxy):
        lines.append("proxy_hide_header Strict-Transport-Security;")
    return lines


def _with_headers(loc: Location, server: Server, lines: list[str]) -> Location:
    # NGINX drops the server's proxy_hide_header lines in a location with its own, and its add_header lines
    # in a location with its own: they are repeated (once).
    inherited = _server_hides(server) + ([] if loc.add_headers else server_headers(server))
    lines = [*(line for line in inherited if line not in loc.policy_lines), *lines]
    return dataclasses.replace(loc, policy_lines=(*loc.policy_lines, *lines))


def apply_custom_headers(cfg: IngressNginxConfig, extras: Mapping[Owner, Mapping[str, Any]]
                         ) -> IngressNginxConfig:
    """See the module docstring. `extras`: (namespace, name) -> a builder's extras (resolved)."""
    headers = {o: e[RESOLVED] for o, e in extras.items() if e.get(RESOLVED)}
    if not headers and not any(DENIED in e or AUTH_DENIED in e for e in extras.values()):
        return cfg
    master = cfg.ingress
    dollar = dollar_variable(master)
    uses_dollar = False
    servers = []
    for server in cfg.servers:
        locations = []
        for loc in server.locations:
            if loc.catch_all:
                locations.append(loc)
                continue
            if _denied(extras, loc, master):
                locations.append(dataclasses.replace(loc, policy_lines=(*loc.policy_lines, "return 503;")))
                continue
            hit = owned(headers, loc, master)
            if hit is None:
                locations.append(loc)
                continue
            uses_dollar = uses_dollar or any("$" in value for _, value in hit[1])
            locations.append(_with_headers(loc, server, header_lines(hit[1], dollar)))
        servers.append(dataclasses.replace(server, locations=tuple(locations)))
    http = cfg.policy_http
    if uses_dollar:
        line = f'geo ${dollar} {{ default "$"; }}'
        http = http if line in http else (*http, line)
    return dataclasses.replace(cfg, servers=tuple(servers), policy_http=http)
