"""ingress-nginx's CORS (`enable-cors`, `cors-*`) for one Ingress: the translation of its annotations into a
`CorsConfig`, and its NGINX lines on ingressctl's locations (`add_header ... always` and `map`s, no
`more_set_headers`).

Guarantees (ingress-nginx's template `CORS` and `buildCorsOriginRegex`):
- Nothing without `enable-cors: "true"`; the other `cors-*` keys are then ignored with a warning.
- Defaults: origin `*`, methods `GET, PUT, POST, DELETE, PATCH, OPTIONS`, ingress-nginx's header list,
  credentials `true`, max-age `1728000`, no exposed headers. An origin its parser skips is named in a
  warning; when none is left, no CORS header is sent at all (as ingress-nginx).
- Origin `*`: every response gets `Access-Control-Allow-Origin: *` and the other headers (with the default
  `Allow-Credentials: true`, as ingress-nginx sends them), and every `OPTIONS` request is answered 204 by
  NGINX with them. A list: an `Origin` matching one of them (case-insensitively; `*.` is one DNS label) is
  echoed with the headers and its `OPTIONS` requests answered 204; any other request gets no CORS header
  and goes to the backend (preflights included), as ingress-nginx. Unlike ingress-nginx the match is
  anchored at both ends and a list also sends `Vary: Origin`.
- The backend's own `Access-Control-*` headers are hidden (ingress-nginx's `more_set_headers` replaces
  them); the server's `proxy_hide_header` and `add_header` lines are repeated in the location, which NGINX
  would otherwise drop there.
- Variable names derive from the settings only (`$ingressctl_cors_<digest>`): Ingresses with the same CORS
  share one http-level item, re-rendering gives the same text.
- A CORS Policy of `nginx.org/policies` on the same Ingress (or minion) wins, with a warning.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ingressctl.configs.config import IngressNginxConfig, Server
from ingressctl.configs.quoting import quote, quote_regex, token
from ingressctl.kinds.ingress import annotations_ingress_nginx as t
from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.ingress_nginx import cors_values as cv
from ingressctl.kinds.ingress.ingress_nginx.owners import inherits
from ingressctl.policies import policy_type_of
from ingressctl.policies.base import ResolvedPolicy

ENABLE_CORS = t.key("enable-cors")
ALLOW_ORIGIN = t.key("cors-allow-origin")
ALLOW_METHODS = t.key("cors-allow-methods")
ALLOW_HEADERS = t.key("cors-allow-headers")
ALLOW_CREDENTIALS = t.key("cors-allow-credentials")
EXPOSE_HEADERS = t.key("cors-expose-headers")
MAX_AGE = t.key("cors-max-age")
CORS_KEYS = (ALLOW_ORIGIN, ALLOW_METHODS, ALLOW_HEADERS, ALLOW_CREDENTIALS, EXPOSE_HEADERS, MAX_AGE)
HEADERS = ("Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Access-Control-Allow-Methods",
           "Access-Control-Allow-Headers", "Access-Control-Expose-Headers", "Access-Control-Max-Age")


@dataclass(frozen=True)
class CorsConfig:
    origins: tuple[str, ...]        # ("*",) or the allowed origins (never empty)
    methods: str = cv.DEFAULT_METHODS
    headers: str = cv.DEFAULT_HEADERS
    credentials: bool = True
    expose: str = ""
    max_age: int = cv.DEFAULT_MAX_AGE


Mark = Callable[[str, Status, str], None]
MinionCors = tuple[str, str, str, CorsConfig | None, Sequence[ResolvedPolicy] | None]
"""A minion's (namespace, name, key, CORS, Policies)."""


def combine(parsed: Mapping[str, Any], mark: Mark) -> CorsConfig | None:
    """The CorsConfig of the parsed annotations (None: no CORS), marking what is not honoured as written."""
    if not parsed.get(ENABLE_CORS):
        for k in CORS_KEYS:
            if k in parsed:
                mark(k, Status.IGNORED, f"{ENABLE_CORS} is not true")
        return None
    origins: cv.Origins = parsed.get(ALLOW_ORIGIN, cv.Origins((cv.WILDCARD,), ()))
    if origins.skipped:
        left = "no origin is left: no CORS header is sent" if not origins.allowed else "the others apply"
        mark(ALLOW_ORIGIN, Status.APPROXIMATED,
             f"origin(s) {', '.join(origins.skipped)} skipped, as ingress-nginx skips them (not "
             f"<scheme>://[*.]host[:port], * or null); {left}")
    for k, default in ((ALLOW_METHODS, "its default methods"), (EXPOSE_HEADERS, "no exposed headers")):
        if k in parsed and parsed[k] is None:
            mark(k, Status.APPROXIMATED, f"not in the form ingress-nginx's parser takes: {default}, as there")
    if not origins.allowed:
        return None
    return CorsConfig(origins=origins.allowed, methods=parsed.get(ALLOW_METHODS) or cv.DEFAULT_METHODS,
                      headers=parsed.get(ALLOW_HEADERS, cv.DEFAULT_HEADERS),
                      credentials=parsed.get(ALLOW_CREDENTIALS, True),
                      expose=parsed.get(EXPOSE_HEADERS) or "",
                      max_age=parsed.get(MAX_AGE, cv.DEFAULT_MAX_AGE))


# ------------------------------------------------------------------------------------------------ rendering

def _origin_regex(origins: Sequence[str]) -> str:
    """ingress-nginx's `buildOriginRegex` for each origin (Go's QuoteMeta, the first `*` one label),
    anchored."""
    parts = [re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", o).replace("\\*", "[A-Za-z0-9\\-]+", 1)
             for o in origins]
    return "~*^(" + "|".join(f"({p})" for p in parts) + ")$"


def _values(c: CorsConfig) -> list[tuple[str, str]]:
    values = [("Access-Control-Allow-Credentials", "true")] if c.credentials else []
    values += [("Access-Control-Allow-Methods", c.methods), ("Access-Control-Allow-Headers", c.headers)]
    if c.expose:
        values.append(("Access-Control-Expose-Headers", c.expose))
    return [*values, ("Access-Control-Max-Age", str(c.max_age))]


def _preflight(origin: str, values: list[tuple[str, str]]) -> list[str]:
    return [f"    add_header Access-Control-Allow-Origin {origin};",
            *(f"    add_header {token(n)} {quote(v)};" for n, v in values),
            '    add_header Content-Type "text/plain charset=UTF-8";',
            "    add_header Content-Length 0;",
            "    return 204;", "}"]


def cors_lines(c: CorsConfig) -> tuple[str, list[str]]:
    """(the http-level item, "" for origin `*`; the location's lines)."""
    values = _values(c)
    if c.origins == (cv.WILDCARD,):
        return "", [*(f"add_header {token(n)} {quote(v)} always;" for n, v in [
            ("Access-Control-Allow-Origin", "*"), *values]),
            "if ($request_method = OPTIONS) {", *_preflight(quote("*"), values)]
    digest = hashlib.sha256(repr(c).encode()).hexdigest()[:16]
    var = f"$ingressctl_cors_{digest}"
    http = [f"map $http_origin {var} {{", '    default "";', f"    {quote_regex(_origin_regex(c.origins))} "
            "$http_origin;", "}"]
    lines = ['add_header Vary "Origin" always;', f"add_header Access-Control-Allow-Origin {var} always;"]
    for name, value in values:
        suffix = name.removeprefix("Access-Control-").replace("-", "_").lower()
        http += [f"map {var} {var}_{suffix} {{", '    default "";', f'    "~." {quote(value)};', "}"]
        lines.append(f"add_header {token(name)} {var}_{suffix} always;")
    http += [f'map "$request_method:{var}" {var}_preflight {{', '    default "";', '    "~^OPTIONS:." 1;',
             "}"]
    return "\n".join(http), [*lines, f"if ({var}_preflight) {{", *_preflight(var, values)]


def _server_lines(server: Server) -> list[str]:
    """What NGINX drops in a location with `proxy_hide_header` / `add_header` lines of its own."""
    from ingressctl.kinds.ingress.policies import server_headers

    return [*(f"proxy_hide_header {token(h)};" for h in server.proxy_hide_headers), *server_headers(server)]


def _cors_policy(policies: Sequence[ResolvedPolicy] | None) -> str:
    """The key of a CORS Policy among `policies`, or ""."""
    for ref in policies or ():
        if ref.policy is not None and not ref.error and policy_type_of(ref.policy) == "cors":
            return ref.key
    return ""


def _winner(c: CorsConfig | None, policies: Sequence[ResolvedPolicy] | None, warnings: list[str]) -> \
        CorsConfig | None:
    key = _cors_policy(policies) if c is not None else ""
    if key:
        warnings.append(f"annotation nginx.org/policies (CORS Policy {key}) wins over {ENABLE_CORS}; "
                        f"{ENABLE_CORS} is ignored")
        return None
    return c


def apply_cors(cfg: IngressNginxConfig, own: CorsConfig | None, own_policies: Sequence[ResolvedPolicy] | None,
               minions: Sequence[MinionCors] = (),
               ) -> tuple[IngressNginxConfig, list[str], dict[str, list[str]]]:
    """(the model with the CORS lines in each location, the Ingress's warnings, each minion's by key).
    `minions`: (namespace, name, key, its CORS, its Policies). A location gets its minion's own CORS, else
    the Ingress's or master's (not for a shared host's member); locations proxying to the catch-all are left
    alone."""
    warnings: list[str] = []
    by_minion: dict[str, list[str]] = {}
    own = _winner(own, own_policies, warnings)
    mine: dict[tuple[str, str], CorsConfig] = {}
    for ns, name, key, c, policies in minions:
        ws: list[str] = []
        c = _winner(c, policies, ws)
        if ws:
            by_minion[key] = ws
        if c is not None:
            mine[(ns, name)] = c
    if own is None and not mine:
        return cfg, warnings, by_minion
    http: dict[str, None] = {}
    servers = []
    for server in cfg.servers:
        locations = []
        for loc in server.locations:
            c = (mine.get((loc.minion.namespace, loc.minion.name)) if loc.minion else None) or (
                own if inherits(loc) else None)
            if c is None or loc.catch_all:
                locations.append(loc)
                continue
            item, lines = cors_lines(c)
            if item:
                http[item] = None
            extra = [*(f"proxy_hide_header {h};" for h in HEADERS), *lines]
            if not loc.add_headers:
                extra = [*(line for line in _server_lines(server) if line not in loc.policy_lines), *extra]
            locations.append(dataclasses.replace(loc, policy_lines=(*loc.policy_lines, *extra)))
        servers.append(dataclasses.replace(server, locations=tuple(locations)))
    cfg = dataclasses.replace(cfg, servers=tuple(servers), policy_http=(*cfg.policy_http, *http))
    return cfg, warnings, by_minion
