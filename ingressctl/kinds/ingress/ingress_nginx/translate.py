"""The `nginx.ingress.kubernetes.io/*` annotations of an Ingress (the `INGRESS_NGINX` table), translated onto
ingressctl's settings: `ConfigParams` overrides, each with the annotation it comes from, and what could not be
honoured.

Guarantees:
- `translate` is pure, never raises and is computed once per (annotations, snippets, redirect default): the
  result is shared and never changed.
- Every annotation under the prefix is accounted for in `report`, sorted by key, with the status it got
  (the row's, or for this value: `backend-protocol: FCGI` is refused, `enable-modsecurity: "false"` ignored)
  and the reason; an unknown key is ignored with a reason naming it.
- A refused annotation (its row's status; a row not implemented yet that fails closed; a snippet without
  `--enable-snippets`) and a value ingress-nginx's validator (or NGINX) would refuse are `errors`: the Ingress
  is rejected, nothing of it reaches NGINX. Approximated and ignored ones are `warnings`.
- An empty value is ignored, as ingress-nginx skips empty values.
- ingress-nginx's defaults: for an Ingress with ingress-nginx annotations, the HTTPS redirects answer 308
  (`http-redirect-code`'s default there) unless `redirect_code_is_default` is False (the ConfigMap set its
  own code); rate limits answer 503 with `burst` = limit x 5 and a 5m zone. Other defaults are ingressctl's
  (see docs/ingress-nginx-migration.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ingressctl.configs import directive_values
from ingressctl.kinds.ingress import annotations_ingress_nginx as t
from ingressctl.kinds.ingress.annotation_table import Annotation, Handling, Status
from ingressctl.kinds.ingress.annotations import annotation_error
from ingressctl.kinds.ingress.ingress_nginx import (
    affinity,
    auth_request,
    basic_auth,
    canary,
    hashing,
    header_maps,
    location_lines,
    mirror,
    satisfy,
)
from ingressctl.kinds.ingress.ingress_nginx.authtls import AuthTLSConfig
from ingressctl.kinds.ingress.ingress_nginx.authtls import combine as combine_auth_tls
from ingressctl.kinds.ingress.ingress_nginx.cors import CorsConfig
from ingressctl.kinds.ingress.ingress_nginx.cors import combine as combine_cors
from ingressctl.kinds.ingress.ingress_nginx.proxyssl import SERVER_NAME as PROXY_SSL_SERVER_NAME
from ingressctl.kinds.ingress.ingress_nginx.proxyssl import ProxySSLConfig
from ingressctl.kinds.ingress.ingress_nginx.proxyssl import combine as combine_proxy_ssl

INGRESS_NGINX_REDIRECT_CODE = 308
UNKNOWN_REASON = "not an ingress-nginx annotation ingressctl knows"
NOT_IMPLEMENTED = "not yet implemented by ingressctl"


@dataclass(frozen=True)
class Problem:
    """An annotation that rejects the Ingress: an invalid value, or one that is refused."""

    key: str
    value: str
    detail: str
    refused: bool

    def message(self) -> str:
        """`annotation <key>: ...`, as the parser's errors read."""
        if self.refused:
            return f"annotation {self.key}: not supported by ingressctl: {self.detail}"
        return annotation_error(self.key, self.value, self.detail)


@dataclass(frozen=True)
class Entry:
    """One annotation of the report: its status for this Ingress and why."""

    key: str
    status: Status
    reason: str = ""


@dataclass(frozen=True)
class Translation:
    overrides: Mapping[str, Any]       # ConfigParams field -> value
    origin: Mapping[str, str]          # field -> the annotation that set it ("" for an ingress-nginx default)
    backend_protocol: str = ""         # "", HTTPS, GRPC or GRPCS: for every Service of the Ingress
    problems: tuple[Problem, ...] = ()
    warnings: tuple[str, ...] = ()
    report: tuple[Entry, ...] = ()
    # What the rendering step reads: a concern's name -> its parsed settings, for what is not a ConfigParams
    # field (`auth_request.EXTRA`: the external auth subrequest; `basic_auth.EXTRA`; `satisfy.EXTRA`;
    # `affinity.EXTRA`; `mirror.EXTRA`: the request copies),
    # rendered by `render.py` (basic auth by the builder).
    extras: Mapping[str, Any] = field(default_factory=dict)
    cors: CorsConfig | None = None  # enable-cors
    auth_tls: AuthTLSConfig | None = None  # auth-tls-secret
    proxy_ssl: ProxySSLConfig | None = None  # proxy-ssl-secret

    @property
    def errors(self) -> tuple[str, ...]:
        return tuple(p.message() for p in self.problems)


def has_ingress_nginx(annotations: Mapping[str, Any]) -> bool:
    """Whether any annotation is of the ingress-nginx family (cheap: one prefix test per key)."""
    prefix = t.PREFIX
    return any(k.startswith(prefix) for k in annotations)


@dataclass
class _Out:
    overrides: dict[str, Any] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    backend_protocol: str = ""
    problems: list[Problem] = field(default_factory=list)
    status: dict[str, Entry] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)
    cors: CorsConfig | None = None
    auth_tls: AuthTLSConfig | None = None
    proxy_ssl: ProxySSLConfig | None = None

    def set(self, name: str, value: Any, origin: str) -> None:
        self.overrides[name] = value
        self.origin[name] = origin

    def mark(self, key: str, status: Status, reason: str) -> None:
        self.status[key] = Entry(key, status, reason)

    def refuse(self, key: str, value: str, detail: str) -> None:
        self.problems.append(Problem(key, value, detail, refused=True))
        self.mark(key, Status.REFUSED, detail)


def translate(annotations: Mapping[str, Any], *, snippets_enabled: bool = False,
              redirect_code_is_default: bool = True) -> Translation:
    """See the module docstring."""
    present = tuple(sorted((k, v if isinstance(v, str) else str(v)) for k, v in annotations.items()
                           if k.startswith(t.PREFIX)))
    return _translate(present, snippets_enabled, redirect_code_is_default)


@functools.lru_cache(maxsize=1024)
def _translate(present: tuple[tuple[str, str], ...], snippets_enabled: bool,
               redirect_code_is_default: bool) -> Translation:
    out = _Out()
    raw = dict(present)
    parsed: dict[str, Any] = {}
    by_key = t.INGRESS_NGINX.by_key
    for name, value in present:
        row = by_key.get(name)
        if row is None:
            out.mark(name, Status.IGNORED, UNKNOWN_REASON)
            continue
        if not _implemented(row):
            if row.fail_closed:
                out.refuse(name, value, f"{NOT_IMPLEMENTED} ({row.reason.removeprefix(t.NOT_YET)})")
            else:
                out.mark(name, Status.IGNORED, f"{NOT_IMPLEMENTED} ({row.reason.removeprefix(t.NOT_YET)})")
            continue
        if row.status is Status.REFUSED and row.parse is None:
            out.refuse(name, value, row.reason)
            continue
        if row.needs_snippets and not snippets_enabled:
            out.refuse(name, value, "snippets are not enabled (--enable-snippets)")
            continue
        if value == "":
            out.mark(name, Status.IGNORED, "empty value (ingress-nginx skips it too)")
            continue
        if row.parse is not None:
            try:
                parsed[name] = row.parse(value)
            except ValueError as e:
                out.problems.append(Problem(name, value, str(e), refused=False))
                continue
        out.mark(name, row.status, row.reason)
        if row.handling is Handling.FIELD:
            out.set(row.sets, parsed[name], name)
    for combine in _COMBINERS:
        combine(parsed, raw, out)
    if redirect_code_is_default and present:
        out.set("http_redirect_code", INGRESS_NGINX_REDIRECT_CODE, "")
    report = tuple(out.status[k] for k in sorted(out.status))
    warnings = _warnings(report)
    return Translation(overrides=dict(out.overrides), origin=dict(out.origin),
                       backend_protocol=out.backend_protocol, problems=tuple(out.problems),
                       warnings=warnings, report=report, extras=dict(out.extras), cors=out.cors,
                       auth_tls=out.auth_tls, proxy_ssl=out.proxy_ssl)


def _implemented(row: Annotation) -> bool:
    return row.handling is not Handling.NONE or row.status in (Status.IGNORED, Status.REFUSED)


def effective_status(row: Annotation) -> Status:
    """What the row does today: its status, or for a row not implemented yet, refused or ignored."""
    if _implemented(row):
        return row.status
    return Status.REFUSED if row.fail_closed else Status.IGNORED


def _warnings(report: tuple[Entry, ...]) -> tuple[str, ...]:
    """One warning listing the approximated and ignored annotations (one Warning event per Ingress)."""
    parts = [f"{e.key} {e.status.value} ({e.reason})" for e in report
             if e.status in (Status.APPROXIMATED, Status.IGNORED)]
    if not parts:
        return ()
    return ("ingress-nginx annotations not honoured in full: " + "; ".join(parts),)


# ------------------------------------------------------------------------------------------------ combiners

Combiner = Callable[[dict[str, Any], dict[str, str], _Out], None]


def _backend_protocol(parsed: dict[str, Any], raw: dict[str, str], out: _Out) -> None:
    proto = parsed.get(t.BACKEND_PROTOCOL)
    if proto is None or proto == "HTTP":
        return
    if proto in ("HTTPS", "GRPC", "GRPCS"):
        out.backend_protocol = proto
        return
    out.refuse(t.BACKEND_PROTOCOL, raw[t.BACKEND_PROTOCOL],
               f"backend-protocol {proto} has no ingressctl form")


def _ssl_redirects(parsed: dict[str, Any], raw: dict[str, str], out: _Out) -> None:
    if t.SSL_REDIRECT in parsed:
        out.set("ssl_redirect", parsed[t.SSL_REDIRECT], t.SSL_REDIRECT)
    if t.FORCE_SSL_REDIRECT in parsed:
        out.set("force_ssl_redirect", parsed[t.FORCE_SSL_REDIRECT], t.FORCE_SSL_REDIRECT)


def _buffers(parsed: dict[str, Any], raw: dict[str, str], out: _Out) -> None:
    size, number = parsed.get(t.PROXY_BUFFER_SIZE), parsed.get(t.PROXY_BUFFERS_NUMBER)
    if size is None and number is None:
        return
    origin = t.PROXY_BUFFER_SIZE if size is not None else t.PROXY_BUFFERS_NUMBER
    size = size or "4k"
    out.set("proxy_buffer_size", size, origin)
    out.set("proxy_buffers", f"{number or 4} {size}", origin)


def _proxy_redirect(parsed: dict[str, Any], raw: dict[str, str], out: _Out) -> None:
    frm, to = parsed.get(t.PROXY_REDIRECT_FROM), parsed.get(t.PROXY_REDIRECT_TO)
    if frm is None and to is None:
        return
    if frm in ("off", "default"):
        out.set("proxy_redirect", (frm, ""), t.PROXY_REDIRECT_FROM)
        if to is not None:
            out.mark(t.PROXY_REDIRECT_TO, Status.IGNORED, f"proxy-redirect-from is {frm!r}")
        return
    if frm is None or to is None or to == "off":
        lone = t.PROXY_REDIRECT_FROM if frm is not None else t.PROXY_REDIRECT_TO
        out.mark(lone, Status.IGNORED, "needs both proxy-redirect-from and proxy-redirect-to "
                                       "(ingress-nginx emits nothing either)")
        return
    try:
        value = directive_values.parse_proxy_redirect(frm, to)
    except ValueError as e:
        bad = t.PROXY_REDIRECT_TO if "to" in str(e).split(":")[0] else t.PROXY_REDIRECT_FROM
        out.problems.append(Problem(bad, raw[bad], str(e), refused=False))
        out.status.pop(bad, None)
        return
    out.set("proxy_redirect", value, t.PROXY_REDIRECT_FROM)


def _redirects(parsed: dict[str, Any], raw: dict[str, str], out: _Out) -> None:
    for url_key, code_key, low, high, default in (
            (t.TEMPORAL_REDIRECT, t.TEMPORAL_REDIRECT_CODE, 300, 307, 302),
            (t.PERMANENT_REDIRECT, t.PERMANENT_REDIRECT_CODE, 300, 308, 301)):
        url = parsed.get(url_key)
        if url is None:
            if code_key in parsed:
                out.mark(code_key, Status.IGNORED, f"{url_key} is not set")
            continue
        if "return_redirect" in out.overrides:  # temporal-redirect won
            out.mark(url_key, Status.IGNORED, f"{t.TEMPORAL_REDIRECT} is set and wins (as ingress-nginx)")
            if code_key in parsed:
                out.mark(code_key, Status.IGNORED, f"{t.TEMPORAL_REDIRECT} is set and wins")
            continue
        code = parsed.get(code_key, default)
        out.set("return_redirect", (code if low <= code <= high else default, url), url_key)


def _limits(parsed: dict[str, Any], raw: dict[str, str], out: _Out) -> None:
    rps, rpm, conn = parsed.get(t.LIMIT_RPS, 0), parsed.get(t.LIMIT_RPM, 0), parsed.get(t.LIMIT_CONNECTIONS,
                                                                                        0)
    multiplier = parsed.get(t.LIMIT_BURST_MULTIPLIER, 5)
    if rps or rpm:
        origin = t.LIMIT_RPS if rps else t.LIMIT_RPM
        limit, unit = (rps, "s") if rps else (rpm, "m")
        for name, value in (("limit_req_rate", f"{limit}r/{unit}"), ("limit_req_burst", limit * multiplier),
                            ("limit_req_no_delay", True), ("limit_req_reject_code", 503),
                            ("limit_req_zone_size", "5m")):
            out.set(name, value, origin)
        if rps and rpm:
            out.mark(t.LIMIT_RPM, Status.APPROXIMATED, "limit-rps is set too: only limit-rps applies")
    elif t.LIMIT_BURST_MULTIPLIER in parsed:
        out.mark(t.LIMIT_BURST_MULTIPLIER, Status.IGNORED, "neither limit-rps nor limit-rpm is set")
    if conn:
        out.set("limit_conn", conn, t.LIMIT_CONNECTIONS)
    exempt_key = t.LIMIT_ALLOWLIST if t.LIMIT_ALLOWLIST in parsed else t.LIMIT_WHITELIST
    if exempt_key in parsed:
        if t.LIMIT_ALLOWLIST in parsed and t.LIMIT_WHITELIST in parsed:
            out.mark(t.LIMIT_WHITELIST, Status.IGNORED, f"{t.LIMIT_ALLOWLIST} is set and wins")
        if rps or rpm or conn:
            out.set("limit_exempt", parsed[exempt_key], exempt_key)
        else:
            out.mark(exempt_key, Status.IGNORED, "no limit-rps, limit-rpm or limit-connections is set")


def _access(parsed: dict[str, Any], raw: dict[str, str], out: _Out) -> None:
    allow_key = t.ALLOWLIST_SOURCE_RANGE if t.ALLOWLIST_SOURCE_RANGE in parsed else t.WHITELIST_SOURCE_RANGE
    allow: tuple[str, ...] = parsed.get(allow_key, ())
    deny: tuple[str, ...] = parsed.get(t.DENYLIST_SOURCE_RANGE, ())
    if t.ALLOWLIST_SOURCE_RANGE in parsed and t.WHITELIST_SOURCE_RANGE in parsed:
        out.mark(t.WHITELIST_SOURCE_RANGE, Status.IGNORED, f"{t.ALLOWLIST_SOURCE_RANGE} is set and wins")
    if not allow and not deny:
        return
    rules = [("deny", d) for d in deny] + [("allow", a) for a in allow] + ([("deny", "all")] if allow else [])
    out.set("access_rules", tuple(rules), allow_key if allow else t.DENYLIST_SOURCE_RANGE)


def _value_dependent(parsed: dict[str, Any], raw: dict[str, str], out: _Out) -> None:
    for name in (t.ENABLE_MODSECURITY, t.ENABLE_OWASP_CORE_RULES):
        if name in parsed:
            if parsed[name]:
                out.refuse(name, raw[name], "no ModSecurity in ingressctl; a WAF the author believes on must "
                                            "not be silently off")
            else:
                out.mark(name, Status.IGNORED, "off (no ModSecurity in ingressctl)")
    if parsed.get(t.PROXY_HTTP_VERSION) == 11:
        out.mark(t.PROXY_HTTP_VERSION, Status.SERVED, "ingressctl proxies with HTTP/1.1")


def _rewrite(parsed: dict[str, Any], raw: dict[str, str], out: _Out) -> None:
    if t.REWRITE_TARGET in parsed:  # the target is ingress-nginx's (ingress_nginx/paths.py)
        out.set("ingress_nginx_rewrite", True, t.REWRITE_TARGET)


def _canary(parsed: dict[str, Any], raw: dict[str, str], out: _Out) -> None:
    if parsed.get(canary.CANARY):
        return
    for key in canary.KEYS[1:]:  # ingress-nginx: "configured but not enabled"
        if key in parsed:
            out.problems.append(Problem(key, raw[key], f"configured but not enabled ({canary.CANARY} is not "
                                                       "\"true\")", refused=False))
            out.status.pop(key, None)


def _hash_subsets(parsed: dict[str, Any], raw: dict[str, str], out: _Out) -> None:
    for name, (status, reason) in hashing.subset_statuses(parsed).items():
        out.mark(name, status, reason)


def _cors(parsed: dict[str, Any], raw: dict[str, str], out: _Out) -> None:
    out.cors = combine_cors(parsed, out.mark)
    out.auth_tls = combine_auth_tls(parsed, out.mark)
    out.proxy_ssl = combine_proxy_ssl(parsed, out.mark)
    if out.proxy_ssl is not None and out.proxy_ssl.server_name == "off":  # no SNI, as ingress-nginx writes
        out.set("ssl_server_name", False, PROXY_SSL_SERVER_NAME)


_COMBINERS: tuple[Combiner, ...] = (_backend_protocol, _ssl_redirects, _buffers, _proxy_redirect, _redirects,
                                    _limits, _access, _value_dependent, auth_request.combine,
                                    basic_auth.combine, satisfy.combine, location_lines.combine,
                                    affinity.combine, mirror.combine, header_maps.combine, _hash_subsets,
                                    _cors, _rewrite, _canary)
