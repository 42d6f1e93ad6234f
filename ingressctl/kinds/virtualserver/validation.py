"""VirtualServer validation (NIC's `ValidateVirtualServer`, OSS rules), with NIC's field-error messages.

Guarantees:
- `validate_virtual_server(obj)` returns every error of the object at once, as apimachinery field errors
  (`spec.upstreams[1].name: Duplicate value: "tea"`); an object with any error is not configured.
- Every string field that reaches the NGINX configuration is checked here: names and paths against NIC's
  patterns, strings with variables (redirect URLs, return bodies, header values) against NIC's variable
  allow-lists (`${name}` only, no unescaped `"`), and no field may carry a control character (but a return
  body a newline, tab or carriage return, as in NIC; it is rendered as its NGINX escape). Together with the
  template's quoting filters no field can add an NGINX directive.
- `plus_only_warnings(obj)` lists the NGINX Plus fields the object uses; they are accepted and ignored with
  a warning ("... requires NGINX Plus"), so the resource's state is Warning.
- Cross-resource checks (missing Service, Secret or Policy) are never validation errors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ingressctl.configs import parsing
from ingressctl.kinds.virtualserver.newer_nginx import validate_add_header_inherit, validate_session_cookie
from ingressctl.kinds.virtualserver.paths import (
    modifier_category,
    normalize_path,
    validate_path,
    vsr_reference_errors,
)
from ingressctl.validation import (
    _ARG_NAME,
    VAR_PREFIXES,
    FieldError,
    as_dict,
    as_list,
    as_str,
    control,
    duplicate,
    forbidden,
    invalid,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_http_header_name,
    is_wildcard_dns1123_subdomain,
    not_supported,
    required,
    validate_variables,
)
from ingressctl.validation import CONTROL as _CONTROL
from ingressctl.validation import ESCAPED as _ESCAPED

_RETURN_TYPE = re.compile(r'[^"{};\\]*')
_REWRITE = re.compile(r'(?:[^$"\\{};\s]|\$[0-9])*')
# A return body: NIC's escaped string; raw LF, TAB and CR allowed, no `\` before a control character.
_BODY_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_BODY_ESCAPED = re.compile(r'(?:[^"\\]|\\[^\x00-\x1f\x7f])*')

REDIRECT_CODES = (301, 302, 307, 308)
NEXT_UPSTREAM = ("error", "timeout", "invalid_header", "http_500", "http_502", "http_503", "http_504",
                 "http_403", "http_404", "http_429", "non_idempotent", "off")
IGNORE_HEADERS = ("X-Accel-Redirect", "X-Accel-Expires", "X-Accel-Limit-Rate", "X-Accel-Buffering",
                  "X-Accel-Charset", "Expires", "Cache-Control", "Set-Cookie", "Vary")
MATCH_VARIABLES = ("$args", "$http2", "$https", "$remote_addr", "$remote_port", "$query_string",
                   "$request", "$request_body", "$request_uri", "$request_method", "$scheme")
REDIRECT_VARS = frozenset({"scheme", "http_x_forwarded_proto", "request_uri", "host"})
RETURN_VARS = frozenset({
    "request_uri", "request_method", "request_body", "scheme", "args", "host", "request_time",
    "request_length", "nginx_version", "pid", "connection", "remote_addr", "remote_port", "time_iso8601",
    "time_local", "server_addr", "server_port", "server_name", "server_protocol", "connections_active",
    "connections_reading", "connections_writing", "connections_waiting"})
HEADER_VARS = RETURN_VARS | frozenset({
    "ssl_cipher", "ssl_ciphers", "ssl_client_cert", "ssl_client_escaped_cert", "ssl_client_fingerprint",
    "ssl_client_i_dn", "ssl_client_i_dn_legacy", "ssl_client_raw_cert", "ssl_client_s_dn",
    "ssl_client_s_dn_legacy", "ssl_client_serial", "ssl_client_v_end", "ssl_client_v_remain",
    "ssl_client_v_start", "ssl_client_verify", "ssl_curves", "ssl_early_data", "ssl_protocol",
    "ssl_server_name", "ssl_session_id", "ssl_session_reused"})
ERROR_PAGE_REDIRECT_VARS = frozenset({"scheme", "http_x_forwarded_proto"})
ERROR_PAGE_RETURN_VARS = frozenset({"upstream_status"})

# NGINX Plus fields of an upstream, accepted and ignored on open-source NGINX.
# (sessionCookie is open source since NIC 5.4: `sticky cookie`, on an NGINX that has it.)
PLUS_UPSTREAM_FIELDS = ("healthCheck", "slow-start", "queue", "ntlm", "backup", "backupPort")


_d, _l, _s = as_dict, as_list, as_str



def validate_time(field: str, value: Any) -> list[FieldError]:
    if value in (None, ""):
        return []
    try:
        parsing.parse_time(str(value))
    except ValueError as e:
        return [invalid(field, value, str(e))]
    return []


def _non_negative(field: str, value: Any) -> list[FieldError]:
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return [invalid(field, value, "must be non-negative")]
    return []


def _checked(field: str, value: Any, parse: Callable[[str], str]) -> list[FieldError]:
    if value in (None, ""):
        return []
    try:
        parse(str(value))
    except ValueError as e:
        return [invalid(field, value, str(e))]
    return []


def validate_host(field: str, host: Any) -> list[FieldError]:
    if not host:
        return [required(field)]
    if not isinstance(host, str):
        return [invalid(field, host, "must be a string")]
    msgs = is_wildcard_dns1123_subdomain(host) if host.startswith("*.") else is_dns1123_subdomain(host)
    return [invalid(field, host, m) for m in msgs]


_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def _label_key_errors(key: str) -> list[str]:
    """Kubernetes' qualified name (`[prefix/]name`)."""
    prefix, _, name = key.rpartition("/")
    msgs = [] if _LABEL_NAME.fullmatch(name) and len(name) <= 63 else [
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character"]
    if prefix or key.startswith("/"):
        msgs += [f"prefix part {m}" for m in is_dns1123_subdomain(prefix)]
    return msgs


def _validate_labels(field: str, labels: Any, *, allow_empty_values: bool = True) -> list[FieldError]:
    """A label map (upstream `subselector`, `routeSelector.matchLabels`): qualified-name keys, label
    values."""
    if labels in (None, {}):
        return []
    if not isinstance(labels, Mapping):
        return [invalid(field, str(labels), "must be a map of labels")]
    errs: list[FieldError] = []
    for k, v in labels.items():
        errs.extend(invalid(field, k, m) for m in _label_key_errors(str(k)))
        value = v if isinstance(v, str) else ""
        if not isinstance(v, str) or not _LABEL_VALUE.fullmatch(value) or len(value) > 63:
            errs.append(invalid(f"{field}[{k}]", v, "a valid label must be an empty string or consist of "
                                                   "alphanumeric characters, '-', '_' or '.', and must start "
                                                   "and end with an alphanumeric character"))
        elif not value and not allow_empty_values:
            errs.append(required(f"{field}[{k}]", "label value must not be empty"))
    return errs


def _validate_service_name(field: str, service: str) -> list[FieldError]:
    """NIC 5.3+: a Service of the resource's namespace (an RFC 1035 label) or `namespace/name` (the namespace
    an RFC 1123 label)."""
    if "/" not in service:
        return [invalid(field, service, m) for m in is_dns1035_label(service)]
    ns, _, name = service.partition("/")
    errs = [invalid(field, service, f"namespace {m}") for m in is_dns1123_label(ns)]
    errs.extend(invalid(field, service, m) for m in is_dns1035_label(name))
    return errs


def _validate_upstream(field: str, up: Mapping[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    name, svc = up.get("name"), up.get("service")
    if not name:
        errs.append(required(f"{field}.name"))
    else:
        errs.extend(invalid(f"{field}.name", name, m) for m in is_dns1035_label(str(name)))
    if not svc:
        errs.append(required(f"{field}.service"))
    else:
        errs.extend(_validate_service_name(f"{field}.service", str(svc)))
    port = up.get("port")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        errs.append(invalid(f"{field}.port", port, "must be between 1 and 65535, inclusive"))
    lb = up.get("lb-method")
    if lb not in (None, ""):
        errs.extend(_checked(f"{field}.lb-method", lb if isinstance(lb, str) else "?",
                             parsing.parse_lb_method))
    for t in ("fail-timeout", "connect-timeout", "read-timeout", "send-timeout", "next-upstream-timeout"):
        errs.extend(validate_time(f"{field}.{t}", up.get(t)))
    for n in ("max-fails", "max-conns", "keepalive", "next-upstream-tries"):
        errs.extend(_non_negative(f"{field}.{n}", up.get(n)))
    errs.extend(_checked(f"{field}.client-max-body-size", up.get("client-max-body-size"),
                         parsing.parse_offset))
    errs.extend(_checked(f"{field}.buffer-size", up.get("buffer-size"), parsing.parse_size))
    errs.extend(_checked(f"{field}.busy-buffers-size", up.get("busy-buffers-size"), parsing.parse_size))
    errs.extend(_checked(f"{field}.client-body-buffer-size", up.get("client-body-buffer-size"),
                         parsing.parse_size))
    errs.extend(_validate_labels(f"{field}.subselector", up.get("subselector")))
    buffers = up.get("buffers")
    if buffers is not None:
        b = _d(buffers)
        number = b.get("number")
        if isinstance(number, bool) or not isinstance(number, int) or number <= 0:
            errs.append(invalid(f"{field}.buffers.number", number, "must be positive"))
        errs.extend(_checked(f"{field}.buffers.size", b.get("size") or "x", parsing.parse_size))
    nu = up.get("next-upstream")
    if nu not in (None, ""):
        tokens = str(nu).split()
        seen: set[str] = set()
        for tok in tokens:
            if tok not in NEXT_UPSTREAM:
                errs.append(not_supported(f"{field}.next-upstream", tok, NEXT_UPSTREAM))
            elif tok in seen:
                errs.append(duplicate(f"{field}.next-upstream", tok))
            seen.add(tok)
    typ = up.get("type")
    if typ not in (None, "", "http", "grpc"):
        errs.append(not_supported(f"{field}.type", typ, ["http", "grpc"]))
    if up.get("use-cluster-ip") and up.get("subselector"):
        errs.append(forbidden(f"{field}.subselector", "is not allowed with use-cluster-ip"))
    if bool(up.get("backup")) != bool(up.get("backupPort")):
        errs.append(required(f"{field}.backup", "backup and backupPort must be specified together"))
    errs.extend(validate_session_cookie(field, up))
    return errs


def _validate_headers(field: str, headers: Iterable[Any], *,
                      values: frozenset[str] | None) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, h in enumerate(headers):
        hf = f"{field}[{j}]"
        hd = _d(h)
        name = _s(hd.get("name"))
        if not name:
            errs.append(required(f"{hf}.name"))
        else:
            errs.extend(invalid(f"{hf}.name", name, m) for m in is_http_header_name(name))
        if values is not None:
            errs.extend(validate_variables(f"{hf}.value", _s(hd.get("value")), values))
    return errs


def _validate_return(field: str, r: Mapping[str, Any], body_vars: frozenset[str], header_vars: frozenset[str],
                     prefixes: tuple[str, ...]) -> list[FieldError]:
    """The `type`, `body` and `headers` of a return action or an error page's return."""
    errs: list[FieldError] = []
    typ = r.get("type")
    if typ is not None and not (isinstance(typ, str) and _RETURN_TYPE.fullmatch(typ)
                                and not _CONTROL.search(typ)):
        errs.append(invalid(f"{field}.type", typ, 'must not include `"`, `{`, `}` or `;`'))
    body = r.get("body")
    if not isinstance(body, str) or body == "":
        errs.append(required(f"{field}.body"))
    else:
        errs.extend(validate_variables(f"{field}.body", body, body_vars, prefixes=prefixes, body=True))
    errs.extend(_validate_headers(f"{field}.headers", _l(r.get("headers")), values=header_vars))
    return errs


def _validate_action(field: str, action: Mapping[str, Any], upstreams: set[str]) -> list[FieldError]:
    set_fields = [k for k in ("pass", "redirect", "return", "proxy") if action.get(k) not in (None, "")]
    if len(set_fields) != 1:
        return [invalid(field, "", "must specify exactly one of: `pass`, `redirect`, `return` or `proxy`")]
    kind = set_fields[0]
    errs: list[FieldError] = []
    if kind == "pass":
        up = action["pass"]
        if up not in upstreams:
            errs.append(not_supported(f"{field}.pass", up, sorted(upstreams)))
    elif kind == "redirect":
        r = _d(action["redirect"])
        url = _s(r.get("url"))
        if not url:
            errs.append(required(f"{field}.redirect.url"))
        elif "://" not in url:
            errs.append(invalid(f"{field}.redirect.url", url, "must contain the scheme"))
        errs.extend(validate_variables(f"{field}.redirect.url", url, REDIRECT_VARS, prefixes=()))
        code = r.get("code")
        if code is not None and code not in REDIRECT_CODES:
            errs.append(not_supported(f"{field}.redirect.code", code, [str(c) for c in REDIRECT_CODES]))
    elif kind == "return":
        r = _d(action["return"])
        code = r.get("code")
        if code is not None and (isinstance(code, bool) or not isinstance(code, int)
                                 or not (200 <= code <= 299 or 400 <= code <= 599)):
            errs.append(invalid(f"{field}.return.code", code, "must be 2XX, 4XX or 5XX"))
        errs.extend(_validate_return(f"{field}.return", r, RETURN_VARS, HEADER_VARS, VAR_PREFIXES))
    else:
        p = _d(action["proxy"])
        up = p.get("upstream")
        if up not in upstreams:
            errs.append(not_supported(f"{field}.proxy.upstream", up, sorted(upstreams)))
        req = _d(p.get("requestHeaders"))
        errs.extend(_validate_headers(f"{field}.proxy.requestHeaders.set", _l(req.get("set")),
                                      values=HEADER_VARS))
        resp = _d(p.get("responseHeaders"))
        for what in ("hide", "pass"):
            for j, h in enumerate(_l(resp.get(what))):
                errs.extend(invalid(f"{field}.proxy.responseHeaders.{what}[{j}]", h, m)
                            for m in is_http_header_name(_s(h)))
        for j, h in enumerate(_l(resp.get("ignore"))):
            if h not in IGNORE_HEADERS:
                errs.append(not_supported(f"{field}.proxy.responseHeaders.ignore[{j}]", h, IGNORE_HEADERS))
        errs.extend(_validate_headers(f"{field}.proxy.responseHeaders.add", _l(resp.get("add")),
                                      values=HEADER_VARS))
        rw = p.get("rewritePath")
        if rw not in (None, "") and not (isinstance(rw, str) and _REWRITE.fullmatch(rw)):
            errs.append(invalid(f"{field}.proxy.rewritePath", rw,
                                "must not include whitespace, `\"`, `{`, `}`, `;` or `\\`; `$` may only "
                                "be followed by a digit"))
    return errs


def _validate_splits(field: str, splits: list[Any], upstreams: set[str]) -> list[FieldError]:
    if len(splits) < 2:
        return [invalid(field, "", "must include at least 2 splits")]
    errs: list[FieldError] = []
    total = 0
    for j, sp in enumerate(splits):
        sd = _d(sp)
        w = sd.get("weight")
        if isinstance(w, bool) or not isinstance(w, int) or not 0 <= w <= 100:
            errs.append(invalid(f"{field}[{j}].weight", w, "must be in the range [0, 100]"))
        else:
            total += w
        errs.extend(_validate_action(f"{field}[{j}].action", _d(sd.get("action")), upstreams))
    if not errs and total != 100:
        errs.append(invalid(field, "", "the sum of the weights of all splits must be equal to 100"))
    return errs


def _validate_condition(field: str, cond: Mapping[str, Any]) -> list[FieldError]:
    set_fields = [k for k in ("header", "cookie", "argument", "variable") if cond.get(k) not in (None, "")]
    errs: list[FieldError] = []
    if len(set_fields) != 1:
        errs.append(invalid(field, "", "must specify exactly one of: `header`, `cookie`, `argument` or "
                                       "`variable`"))
    else:
        k = set_fields[0]
        v = _s(cond.get(k))
        if k == "header":
            errs.extend(invalid(f"{field}.header", v, m) for m in is_http_header_name(v))
        elif k in ("cookie", "argument"):
            if not _ARG_NAME.fullmatch(v):
                errs.append(invalid(f"{field}.{k}", v, "a valid name must consist of letters, digits or '_'"))
        elif v not in MATCH_VARIABLES:
            errs.append(not_supported(f"{field}.variable", v, MATCH_VARIABLES))
    value = cond.get("value", "")
    if not isinstance(value, str):
        errs.append(invalid(f"{field}.value", value, "must be a string"))
    else:
        errs.extend(control(f"{field}.value", value))
        if not _ESCAPED.fullmatch(value):
            errs.append(invalid(f"{field}.value", value, 'a valid value must have all \'"\' escaped'))
        if value.endswith("\\") and not value.endswith("\\\\"):
            errs.append(invalid(f"{field}.value", value, "must not end with a lone \\"))
        regex = value.lstrip("!")
        if regex.startswith("~"):
            try:
                re.compile(regex[2:] if regex.startswith("~*") else regex[1:])
            except re.error as e:
                errs.append(invalid(f"{field}.value", value, f"must be a valid regular expression: {e}"))
    return errs


def _validate_error_pages(field: str, pages: list[Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for k, page in enumerate(pages):
        pf = f"{field}[{k}]"
        pd = _d(page)
        codes = _l(pd.get("codes"))
        if not codes:
            errs.append(required(f"{pf}.codes"))
        for j, c in enumerate(codes):
            if isinstance(c, bool) or not isinstance(c, int) or not 300 <= c <= 599:
                errs.append(invalid(f"{pf}.codes[{j}]", c, "must be in the range [300, 599]"))
        has_redirect, has_return = pd.get("redirect") is not None, pd.get("return") is not None
        if has_redirect == has_return:
            errs.append(invalid(pf, "", "must specify exactly one of: `redirect` or `return`"))
        elif has_redirect:
            r = _d(pd["redirect"])
            url = _s(r.get("url"))
            if not url:
                errs.append(required(f"{pf}.redirect.url"))
            errs.extend(validate_variables(f"{pf}.redirect.url", url, ERROR_PAGE_REDIRECT_VARS, prefixes=()))
            code = r.get("code")
            if code is not None and code not in REDIRECT_CODES:
                errs.append(not_supported(f"{pf}.redirect.code", code, [str(c) for c in REDIRECT_CODES]))
        else:
            r = _d(pd["return"])
            code = r.get("code")
            if code is not None and code != 0 and (isinstance(code, bool) or not isinstance(code, int)
                                                   or not 200 <= code <= 599):
                errs.append(invalid(f"{pf}.return.code", code, "must be in the range [200, 599]"))
            errs.extend(_validate_return(f"{pf}.return", r, ERROR_PAGE_RETURN_VARS, ERROR_PAGE_RETURN_VARS,
                                         ()))
    return errs


def _validate_policies(field: str, refs: list[Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for j, ref in enumerate(refs):
        rd = _d(ref)
        name, ns = _s(rd.get("name")), _s(rd.get("namespace"))
        if not name:
            errs.append(required(f"{field}[{j}].name"))
        else:
            errs.extend(invalid(f"{field}[{j}].name", name, m) for m in is_dns1123_subdomain(name))
        if ns:
            errs.extend(invalid(f"{field}[{j}].namespace", ns, m) for m in is_dns1035_label(ns))
        if (ns, name) in seen:
            errs.append(duplicate(f"{field}[{j}]", f"{ns}/{name}" if ns else name))
        seen.add((ns, name))
    return errs


def validate_route(field: str, route: Mapping[str, Any], upstreams: set[str], *,
                   allow_route: bool = True) -> list[FieldError]:
    errs = validate_path(f"{field}.path", route.get("path"))
    errs.extend(validate_add_header_inherit(f"{field}.add-header-inherit", route.get("add-header-inherit")))
    action, splits, delegate = route.get("action"), _l(route.get("splits")), route.get("route")
    selector = route.get("routeSelector")
    matches = _l(route.get("matches"))
    chosen = [k for k, v in (("action", action), ("splits", splits), ("route", delegate),
                             ("routeSelector", selector)) if v]
    if delegate and not allow_route:
        errs.append(forbidden(f"{field}.route", "is not allowed in a subroute"))
    if selector and not allow_route:
        errs.append(forbidden(f"{field}.routeSelector", "is not allowed in a subroute"))
    if len(chosen) != 1:
        errs.append(invalid(field, "", "must specify exactly one of: `action`, `splits`, `route` or "
                                       "`routeSelector`"))
    elif matches and chosen[0] in ("route", "routeSelector"):
        errs.append(invalid(field, "", "must specify exactly one of: `action` or `splits` with `matches`"))
    if selector is not None and allow_route:
        errs.extend(_validate_route_selector(f"{field}.routeSelector", selector))
    if action:
        errs.extend(_validate_action(f"{field}.action", _d(action), upstreams))
    if splits:
        errs.extend(_validate_splits(f"{field}.splits", splits, upstreams))
    if isinstance(delegate, str) and delegate:
        parts = delegate.split("/")
        if len(parts) > 2 or any(is_dns1123_subdomain(p) for p in parts):
            errs.append(invalid(f"{field}.route", delegate, "must be a name or namespace/name of a "
                                                            "VirtualServerRoute"))
    for i, m in enumerate(matches):
        mf = f"{field}.matches[{i}]"
        md = _d(m)
        conds = _l(md.get("conditions"))
        if not conds:
            errs.append(required(f"{mf}.conditions"))
        for k, c in enumerate(conds):
            errs.extend(_validate_condition(f"{mf}.conditions[{k}]", _d(c)))
        m_action, m_splits = md.get("action"), _l(md.get("splits"))
        if bool(m_action) == bool(m_splits):
            errs.append(invalid(mf, "", "must specify exactly one of: `action` or `splits`"))
        elif m_action:
            errs.extend(_validate_action(f"{mf}.action", _d(m_action), upstreams))
        else:
            errs.extend(_validate_splits(f"{mf}.splits", m_splits, upstreams))
    errs.extend(_validate_error_pages(f"{field}.errorPages", _l(route.get("errorPages"))))
    errs.extend(_validate_policies(f"{field}.policies", _l(route.get("policies"))))
    errs.extend(control(f"{field}.location-snippets", _s(route.get("location-snippets")).replace("\n", "")
                                                       .replace("\t", "")))
    return errs


def _validate_route_selector(field: str, selector: Any) -> list[FieldError]:
    """NIC 5.4+: `matchLabels` non-empty, label-valid, no empty value (`matchExpressions` is ignored)."""
    labels = _d(selector).get("matchLabels")
    if not isinstance(labels, Mapping) or not labels:
        return [required(f"{field}.matchLabels", "must specify at least one label")]
    return _validate_labels(f"{field}.matchLabels", labels, allow_empty_values=False)


def validate_upstreams(field: str, upstreams: list[Any]) -> tuple[list[FieldError], set[str]]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, up in enumerate(upstreams):
        ud = _d(up)
        errs.extend(_validate_upstream(f"{field}[{i}]", ud))
        name = _s(ud.get("name"))
        if name in names:
            errs.append(duplicate(f"{field}[{i}].name", name))
        names.add(name)
    return errs, names


def validate_virtual_server(obj: Mapping[str, Any]) -> list[FieldError]:
    """Every error of the VirtualServer (see the module docstring)."""
    spec = _d(obj.get("spec"))
    errs = validate_host("spec.host", spec.get("host"))
    errs.extend(validate_add_header_inherit("spec.add-header-inherit", spec.get("add-header-inherit")))
    tls = spec.get("tls")
    if tls is not None:
        t = _d(tls)
        secret = _s(t.get("secret"))
        if secret:
            errs.extend(invalid("spec.tls.secret", secret, m) for m in is_dns1123_subdomain(secret))
        redirect = _d(t.get("redirect"))
        code = redirect.get("code")
        if code is not None and code not in REDIRECT_CODES:
            errs.append(not_supported("spec.tls.redirect.code", code, [str(c) for c in REDIRECT_CODES]))
        based = redirect.get("basedOn")
        if based not in (None, "", "scheme", "x-forwarded-proto"):
            errs.append(not_supported("spec.tls.redirect.basedOn", based, ["scheme", "x-forwarded-proto"]))
        if t.get("cert-manager"):
            errs.append(forbidden("spec.tls.cert-manager", "cert-manager support is not enabled"))
    listener = spec.get("listener")
    if listener is not None:
        for side in ("http", "https"):
            name = _d(listener).get(side)
            if name not in (None, ""):
                errs.extend(invalid(f"spec.listener.{side}", name, m) for m in is_dns1035_label(_s(name)))
    if _d(spec.get("externalDNS")).get("enable"):
        errs.append(forbidden("spec.externalDNS.enable", "external DNS support is not enabled"))
    if spec.get("dos"):
        errs.append(forbidden("spec.dos", "App Protect Dos protection is not enabled"))
    up_errs, upstreams = validate_upstreams("spec.upstreams", _l(spec.get("upstreams")))
    errs.extend(up_errs)
    errs.extend(_validate_policies("spec.policies", _l(spec.get("policies"))))
    paths: set[str] = set()
    for i, route in enumerate(_l(spec.get("routes"))):
        rd = _d(route)
        errs.extend(validate_route(f"spec.routes[{i}]", rd, upstreams))
        p = rd.get("path")
        if isinstance(p, str) and p:
            if normalize_path(p) in paths:
                errs.append(duplicate(f"spec.routes[{i}].path", p))
            paths.add(normalize_path(p))
    meta_ns = _s(_d(obj.get("metadata")).get("namespace"))
    errs.extend(vsr_reference_errors(meta_ns, _l(spec.get("routes"))))
    for f in ("http-snippets", "server-snippets"):
        errs.extend(control(f"spec.{f}", _s(spec.get(f)).replace("\n", "").replace("\t", "")))
    return errs


def plus_only_warnings(spec: Mapping[str, Any], prefix: str = "spec") -> list[str]:
    """The NGINX Plus fields used, each as a warning (accepted and ignored on open-source NGINX)."""
    out: list[str] = []
    for i, up in enumerate(_l(spec.get("upstreams"))):
        ud = _d(up)
        for f in PLUS_UPSTREAM_FIELDS:
            if ud.get(f) not in (None, "", False, 0):
                out.append(f"{prefix}.upstreams[{i}].{f} requires NGINX Plus; it is ignored")
    if spec.get("internalRoute"):
        out.append(f"{prefix}.internalRoute requires NGINX Plus; it is ignored")
    return out


def validate_virtual_server_route(obj: Mapping[str, Any]) -> list[FieldError]:
    """Every error of a VirtualServerRoute on its own (its fit with the VirtualServer is checked there)."""
    spec = _d(obj.get("spec"))
    errs = validate_host("spec.host", spec.get("host"))
    up_errs, upstreams = validate_upstreams("spec.upstreams", _l(spec.get("upstreams")))
    errs.extend(up_errs)
    paths: set[str] = set()
    for i, route in enumerate(_l(spec.get("subroutes"))):
        rd = _d(route)
        errs.extend(validate_route(f"spec.subroutes[{i}]", rd, upstreams, allow_route=False))
        p = rd.get("path")
        if isinstance(p, str) and p:
            if normalize_path(p) in paths:
                errs.append(duplicate(f"spec.subroutes[{i}].path", p))
            paths.add(normalize_path(p))
    if len({modifier_category(p) for p in paths}) > 1:
        errs.append(invalid("spec.subroutes", ", ".join(sorted(paths)),
                            "all subroutes must use the same path modifier type"))
    return errs
