"""ingress-nginx's annotations that are one plain directive in each location of the Ingress, as its template
writes them: `limit-rate`, `limit-rate-after`, `use-port-in-redirects`, `relative-redirects`,
`proxy-cookie-path`, `proxy-cookie-domain`, `enable-access-log`, `enable-rewrite-log`, `x-forwarded-prefix`
(in the locations that rewrite only; `grpc_set_header` in gRPC ones) and `satisfy` (parsed in `satisfy.py`).

Guarantees:
- The parsers accept what ingress-nginx's validators accept (`ValidateInt`, Go booleans, `URLIsValidRegex`,
  its cookie-domain regex, `RegexPathWithCapture`) and nothing NGINX could read as syntax: no whitespace but
  the one separating the two words of a cookie rewrite, no quotes, `;`, braces or backslashes; every `$` of
  `x-forwarded-prefix` a capture group (`$1`...) or a variable NGINX knows, as in `rewrite-target`.
- `lines_of(extras)` is the directives for one Ingress, in a fixed order; `apply_location_lines` appends them
  to the `policy_lines` of every location the Ingress owns (a minion's own, or a master's for the minions
  without their own), after the auth lines, so re-rendering gives the same text. `satisfy` falls back on its
  own: a minion without it gets the master's, also when it sets other annotations of this module.
- A value equal to ingress-nginx's default writes nothing (`limit-rate: "0"`, `enable-access-log: "true"`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ingressctl.configs.config import IngressNginxConfig
from ingressctl.configs.quoting import quote, quote_vars
from ingressctl.kinds.ingress.ingress_nginx import satisfy, values
from ingressctl.kinds.ingress.ingress_nginx.owners import owned

EXTRA = "location_lines"
PREFIX = "nginx.ingress.kubernetes.io/"
LIMIT_RATE = PREFIX + "limit-rate"
LIMIT_RATE_AFTER = PREFIX + "limit-rate-after"
USE_PORT_IN_REDIRECTS = PREFIX + "use-port-in-redirects"
RELATIVE_REDIRECTS = PREFIX + "relative-redirects"
PROXY_COOKIE_PATH = PREFIX + "proxy-cookie-path"
PROXY_COOKIE_DOMAIN = PREFIX + "proxy-cookie-domain"
ENABLE_ACCESS_LOG = PREFIX + "enable-access-log"
ENABLE_REWRITE_LOG = PREFIX + "enable-rewrite-log"
X_FORWARDED_PREFIX = PREFIX + "x-forwarded-prefix"

_URL_CHARS = r"-._~A-Za-z0-9/:,?&="   # ingress-nginx's URLIsValidRegex
_DOMAIN_CHARS = r"-._~A-Za-z0-9/:"    # ... and its cookieDomainChars
_COOKIE_PATH = re.compile(rf"off|[{_URL_CHARS}]{{1,1024}} [{_URL_CHARS}]{{1,1024}}")
_COOKIE_DOMAIN = re.compile(rf"off|[{_DOMAIN_CHARS}]{{1,512}}\s+[{_DOMAIN_CHARS}]{{1,512}}")


def cookie_path(value: str) -> str:
    """`proxy-cookie-path`: `off` or `<from> <to>` (NGINX's `proxy_cookie_path`)."""
    value = " ".join(value.split())
    if not _COOKIE_PATH.fullmatch(value):
        raise ValueError("must be 'off' or two paths separated by a space, of letters, digits and -._~/:,?&=")
    return value


def cookie_domain(value: str) -> str:
    """`proxy-cookie-domain`: `off` or `<from> <to>` (ingress-nginx's cookie-domain regex)."""
    if not _COOKIE_DOMAIN.fullmatch(value):
        raise ValueError("must be 'off' or two domains separated by a space, of letters, digits and -._~/:")
    return " ".join(value.split())


def forwarded_prefix(value: str) -> str:
    """`x-forwarded-prefix`: a path that may use `$1`... of the rewrite and NGINX variables (ingress-nginx's
    RegexPathWithCapture, checked as `rewrite-target`: a `$` NGINX cannot read would fail its reload)."""
    return values.rewrite_target(value)


@dataclass(frozen=True)
class LocationLines:
    lines: tuple[str, ...] = ()          # in every location of the Ingress
    rewrite_lines: tuple[str, ...] = ()  # in those that rewrite the URI (`rewrite-target`)
    satisfy: str = ""                    # "any", "all", or "" (a minion's: the master's)


def combine(parsed: dict[str, Any], raw: dict[str, str], out: Any) -> None:
    """The translator's combiner: `out.extras[EXTRA]` = the `LocationLines` of the parsed values."""
    lines: list[str] = []
    if parsed.get(LIMIT_RATE_AFTER):
        lines.append(f"limit_rate_after {parsed[LIMIT_RATE_AFTER]}k;")
    if parsed.get(LIMIT_RATE):
        lines.append(f"limit_rate {parsed[LIMIT_RATE]}k;")
    if USE_PORT_IN_REDIRECTS in parsed:
        lines.append(f"port_in_redirect {'on' if parsed[USE_PORT_IN_REDIRECTS] else 'off'};")
    if parsed.get(RELATIVE_REDIRECTS):
        lines.append("absolute_redirect off;")
    for key, directive in ((PROXY_COOKIE_DOMAIN, "proxy_cookie_domain"), (PROXY_COOKIE_PATH,
                                                                          "proxy_cookie_path")):
        if key in parsed:
            lines.append(f"{directive} {' '.join(quote(w) for w in parsed[key].split(' '))};")
    if parsed.get(ENABLE_ACCESS_LOG) is False:
        lines.append("access_log off;")
    if parsed.get(ENABLE_REWRITE_LOG):
        lines.append("rewrite_log on;")
    rewrite_lines: tuple[str, ...] = ()
    if X_FORWARDED_PREFIX in parsed:
        rewrite_lines = (f"proxy_set_header X-Forwarded-Prefix {quote_vars(parsed[X_FORWARDED_PREFIX])};",)
    if lines or rewrite_lines:
        out.extras[EXTRA] = LocationLines(tuple(lines), rewrite_lines)


def lines_of(extras: Mapping[str, Any]) -> LocationLines | None:
    """The `LocationLines` of one Ingress's extras, with its `satisfy`; None when there are none."""
    own: LocationLines | None = extras.get(EXTRA)
    value = extras.get(satisfy.EXTRA)
    if value in satisfy.OPTIONS:
        own = dataclasses.replace(own or LocationLines(), satisfy=value)
    return own


def apply_location_lines(cfg: IngressNginxConfig, values: Mapping[tuple[str, str], LocationLines]
                         ) -> IngressNginxConfig:
    """`values`: (namespace, name) of the Ingress (regular or master, and minions) -> its lines."""
    if not values:
        return cfg
    master = cfg.ingress
    fallback = values.get((master.namespace, master.name))
    servers = []
    for server in cfg.servers:
        locations = []
        for loc in server.locations:
            hit = owned(values, loc, master)
            if hit is not None:
                own = hit[1]
                value = own.satisfy or (fallback.satisfy if fallback is not None else "")
                rewrite = own.rewrite_lines if loc.rewrite_pattern else ()
                if loc.grpc:  # grpc_pass reads grpc_set_header, not proxy_set_header
                    rewrite = tuple("grpc_set_header " + line.removeprefix("proxy_set_header ")
                                    for line in rewrite)
                lines = (*own.lines, *((f"satisfy {value};",) if value else ()), *rewrite)
                if lines:
                    loc = dataclasses.replace(loc, policy_lines=(*loc.policy_lines, *lines))
            locations.append(loc)
        servers.append(dataclasses.replace(server, locations=tuple(locations)))
    return dataclasses.replace(cfg, servers=tuple(servers))
