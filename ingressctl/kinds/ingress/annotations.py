"""Ingress annotations (NIC's `annotations.go`): a table from annotation name to the setting it overrides.

Guarantees:
- `parse_annotations` never raises. Each supported annotation is parsed with a strict parser (see `parsing`);
  a value that fails is NOT applied and is reported in `IngressAnnotations.errors` as
  `annotation nginx.org/<name>: invalid value "<value>": <detail>`. The generator turns errors into a rejected
  Ingress (NIC only logs them; here nothing an Ingress's author typed reaches NGINX unvalidated).
- Snippet annotations apply only with `snippets_enabled`. Without it, validation rejects the whole Ingress
  before it gets here (`controller.validation`, NIC's behaviour); should one arrive anyway (a caller that
  skipped validation), it is left out of the config with a warning, never rendered.
- The HSTS annotations apply together: an error in any of them applies none (as NIC). HSTS settings without
  `nginx.org/hsts`, and a realm without a basic-auth Secret, are ignored with a warning (validation rejects
  them; they remain on a minion whose `nginx.org/hsts` was removed).
- `check_annotations` returns just the errors, for validation before anything is stored.
- Mergeable Ingresses: `MASTER_DENYLIST`, `MINION_DENYLIST` and `MINION_INHERITANCE_LIST` are NIC's lists;
  `master_annotations` / `minion_annotations` apply them and say what was removed.
- Adding an annotation that overrides a `ConfigParams` field is one line in `ANNOTATIONS`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ingressctl.configs import directive_values, parsing
from ingressctl.configs.configmaps import ConfigParams

_DEFAULT_PARAMS = ConfigParams()  # frozen: shared by every check_annotations call
_SERVICE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_REWRITE_PATH = re.compile(r"/[A-Za-z0-9._~!*+,:@&=%/-]{0,2047}")

PATH_REGEX = "nginx.org/path-regex"
PATH_REGEX_VALUES = ("case_sensitive", "case_insensitive", "exact")
REWRITES = "nginx.org/rewrites"
WEBSOCKET_SERVICES = "nginx.org/websocket-services"
SSL_SERVICES = "nginx.org/ssl-services"
GRPC_SERVICES = "nginx.org/grpc-services"
HSTS = "nginx.org/hsts"
HSTS_RELATED = ("nginx.org/hsts-max-age", "nginx.org/hsts-include-subdomains", "nginx.org/hsts-behind-proxy")
BASIC_AUTH_SECRET = "nginx.org/basic-auth-secret"
BASIC_AUTH_REALM = "nginx.org/basic-auth-realm"
PROXY_SET_HEADERS = "nginx.org/proxy-set-headers"
MERGEABLE_INGRESS_TYPE = "nginx.org/mergeable-ingress-type"
SSL_REDIRECT = "nginx.org/ssl-redirect"
LEGACY_SSL_REDIRECT = "ingress.kubernetes.io/ssl-redirect"
REWRITE_TARGET = "nginx.org/rewrite-target"
PROXY_REDIRECT_FROM = "nginx.org/proxy-redirect-from"
PROXY_REDIRECT_TO = "nginx.org/proxy-redirect-to"
STICKY_COOKIE_SERVICES = "nginx.org/sticky-cookie-services"
ADD_HEADER_INHERIT = "nginx.org/add-header-inherit"


@dataclass(frozen=True)
class Annotation:
    """An annotation that overrides one `ConfigParams` field."""

    name: str
    field: str
    parse: Callable[[str], Any]
    needs_snippets: bool = False


def _int(minimum: int, maximum: int) -> Callable[[str], int]:
    return lambda v: parsing.parse_int(v, minimum=minimum, maximum=maximum)


def _org(name: str) -> str:
    return f"nginx.org/{name}"


ANNOTATIONS: tuple[Annotation, ...] = (
    Annotation(_org("proxy-connect-timeout"), "proxy_connect_timeout", parsing.parse_time),
    Annotation(_org("proxy-read-timeout"), "proxy_read_timeout", parsing.parse_time),
    Annotation(_org("proxy-send-timeout"), "proxy_send_timeout", parsing.parse_time),
    Annotation(_org("client-max-body-size"), "client_max_body_size", parsing.parse_offset),
    Annotation(_org("proxy-buffering"), "proxy_buffering", parsing.parse_bool),
    Annotation(_org("proxy-buffers"), "proxy_buffers", parsing.parse_proxy_buffers),
    Annotation(_org("proxy-buffer-size"), "proxy_buffer_size", parsing.parse_size),
    Annotation(_org("proxy-max-temp-file-size"), "proxy_max_temp_file_size", parsing.parse_size),
    Annotation(_org("proxy-hide-headers"), "proxy_hide_headers", parsing.parse_header_names),
    Annotation(_org("proxy-pass-headers"), "proxy_pass_headers", parsing.parse_header_names),
    Annotation(PROXY_SET_HEADERS, "proxy_set_headers", parsing.parse_proxy_set_headers),
    Annotation(_org("server-tokens"), "server_tokens", parsing.parse_server_tokens),
    Annotation(_org("redirect-to-https"), "redirect_to_https", parsing.parse_bool),
    Annotation(LEGACY_SSL_REDIRECT, "ssl_redirect", parsing.parse_bool),
    Annotation(SSL_REDIRECT, "ssl_redirect", parsing.parse_bool),
    Annotation(_org("http-redirect-code"), "http_redirect_code", directive_values.parse_http_redirect_code),
    Annotation(_org("add-header"), "add_headers", directive_values.parse_add_headers),
    Annotation(ADD_HEADER_INHERIT, "add_header_inherit", directive_values.parse_add_header_inherit),
    Annotation(_org("custom-http-errors"), "custom_http_errors", directive_values.parse_custom_http_errors),
    Annotation(_org("app-root"), "app_root", directive_values.parse_app_root),
    Annotation(_org("client-body-buffer-size"), "client_body_buffer_size", parsing.parse_size),
    Annotation(_org("proxy-busy-buffers-size"), "proxy_busy_buffers_size", parsing.parse_size),
    Annotation(_org("proxy-next-upstream"), "proxy_next_upstream",
               directive_values.parse_proxy_next_upstream),
    Annotation(_org("proxy-next-upstream-timeout"), "proxy_next_upstream_timeout", parsing.parse_time),
    Annotation(_org("proxy-next-upstream-tries"), "proxy_next_upstream_tries", directive_values.parse_uint),
    Annotation(REWRITE_TARGET, "rewrite_target", directive_values.parse_rewrite_target),
    Annotation(_org("ssl-ciphers"), "server_ssl_ciphers", parsing.parse_ssl_ciphers),
    Annotation(_org("ssl-prefer-server-ciphers"), "server_ssl_prefer_server_ciphers", parsing.parse_bool),
    Annotation(STICKY_COOKIE_SERVICES, "sticky_cookies", directive_values.parse_sticky_cookie_services),
    Annotation(_org("listen-ports"), "ports", parsing.parse_port_list),
    Annotation(_org("listen-ports-ssl"), "ssl_ports", parsing.parse_port_list),
    Annotation(_org("lb-method"), "lb_method", parsing.parse_lb_method),
    Annotation(_org("keepalive"), "keepalive", _int(0, 100000)),
    Annotation(_org("max-fails"), "max_fails", _int(0, 100000)),
    Annotation(_org("max-conns"), "max_conns", _int(0, 1 << 20)),
    Annotation(_org("fail-timeout"), "fail_timeout", parsing.parse_time),
    Annotation(_org("upstream-zone-size"), "upstream_zone_size",
               lambda v: parsing.parse_zone_size(v, allow_zero=True)),
    Annotation(_org("use-cluster-ip"), "use_cluster_ip", parsing.parse_bool),
    Annotation(BASIC_AUTH_SECRET, "basic_auth_secret", parsing.parse_secret_name),
    Annotation(BASIC_AUTH_REALM, "basic_auth_realm", parsing.parse_realm),
    Annotation(_org("limit-req-rate"), "limit_req_rate", parsing.parse_rate),
    Annotation(_org("limit-req-key"), "limit_req_key", parsing.parse_limit_req_key),
    Annotation(_org("limit-req-zone-size"), "limit_req_zone_size", parsing.parse_zone_size),
    Annotation(_org("limit-req-delay"), "limit_req_delay", _int(0, 1 << 30)),
    Annotation(_org("limit-req-no-delay"), "limit_req_no_delay", parsing.parse_bool),
    Annotation(_org("limit-req-burst"), "limit_req_burst", _int(0, 1 << 30)),
    Annotation(_org("limit-req-dry-run"), "limit_req_dry_run", parsing.parse_bool),
    Annotation(_org("limit-req-log-level"), "limit_req_log_level", parsing.parse_limit_req_log_level),
    Annotation(_org("limit-req-reject-code"), "limit_req_reject_code", _int(400, 599)),
    Annotation(_org("limit-req-scale"), "limit_req_scale", parsing.parse_bool),
    Annotation(_org("server-snippets"), "server_snippets", parsing.parse_lines, needs_snippets=True),
    Annotation(_org("location-snippets"), "location_snippets", parsing.parse_lines, needs_snippets=True),
)
ANNOTATIONS_BY_NAME = {a.name: a for a in ANNOTATIONS}
_HSTS_FIELDS = {HSTS: ("hsts", parsing.parse_bool),
                "nginx.org/hsts-max-age": ("hsts_max_age", _int(0, 2**63 - 1)),
                "nginx.org/hsts-include-subdomains": ("hsts_include_subdomains", parsing.parse_bool),
                "nginx.org/hsts-behind-proxy": ("hsts_behind_proxy", parsing.parse_bool)}

# Mergeable Ingresses (NIC's lists).
MASTER_DENYLIST = frozenset({
    REWRITES, SSL_SERVICES, GRPC_SERVICES, WEBSOCKET_SERVICES, "nginx.com/sticky-cookie-services",
    "nginx.com/health-checks", "nginx.com/health-checks-mandatory", "nginx.com/health-checks-mandatory-queue",
    "nginx.org/use-cluster-ip", STICKY_COOKIE_SERVICES,
})
MINION_DENYLIST = frozenset({
    "nginx.org/proxy-hide-headers", "nginx.org/proxy-pass-headers", "nginx.org/redirect-to-https",
    "ingress.kubernetes.io/ssl-redirect", HSTS, "nginx.org/hsts-max-age", "nginx.org/hsts-include-subdomains",
    "nginx.org/server-tokens", "nginx.org/listen-ports", "nginx.org/listen-ports-ssl",
    "nginx.org/server-snippets", "appprotectdos.f5.com/app-protect-dos-resource",
    SSL_REDIRECT, "nginx.org/http-redirect-code", "nginx.org/ssl-ciphers",
    "nginx.org/ssl-prefer-server-ciphers", "nginx.org/app-root",
})
MINION_INHERITANCE_LIST = frozenset({
    "nginx.org/proxy-connect-timeout", "nginx.org/proxy-read-timeout", "nginx.org/proxy-send-timeout",
    "nginx.org/client-max-body-size", "nginx.org/proxy-buffering", "nginx.org/proxy-buffers",
    "nginx.org/proxy-buffer-size", "nginx.org/proxy-max-temp-file-size", "nginx.org/upstream-zone-size",
    "nginx.org/location-snippets", "nginx.org/lb-method", "nginx.org/keepalive", "nginx.org/max-fails",
    "nginx.org/max-conns", "nginx.org/fail-timeout", "nginx.org/limit-req-rate", "nginx.org/limit-req-key",
    "nginx.org/limit-req-zone-size", "nginx.org/limit-req-delay", "nginx.org/limit-req-no-delay",
    "nginx.org/limit-req-burst", "nginx.org/limit-req-dry-run", "nginx.org/limit-req-log-level",
    "nginx.org/limit-req-reject-code", "nginx.org/limit-req-scale", "nginx.org/proxy-busy-buffers-size",
})


@dataclass(frozen=True)
class IngressAnnotations:
    """The settings that apply to one Ingress: ConfigMap params with its annotations applied."""

    params: ConfigParams
    rewrites: dict[str, str] = field(default_factory=dict)  # service name -> URI
    websocket_services: frozenset[str] = frozenset()
    ssl_services: frozenset[str] = frozenset()
    grpc_services: frozenset[str] = frozenset()
    path_regex: str = ""  # "", case_sensitive, case_insensitive or exact
    errors: tuple[str, ...] = ()  # invalid annotation values: the Ingress must be rejected


def annotation_error(name: str, value: str, detail: str) -> str:
    """`annotation <name>: invalid value "<value>": <detail>` (the value quoted as Go's %q would)."""
    shown = value if len(value) <= 200 else value[:200] + "..."
    return f"annotation {name}: invalid value {json.dumps(shown, ensure_ascii=False)}: {detail}"


def parse_rewrites(value: str) -> dict[str, str]:
    """`serviceName=<svc> rewrite=<path>[;serviceName=... rewrite=...]` -> {svc: path}."""
    result: dict[str, str] = {}
    for item in value.split(";"):
        item = item.strip()
        if not item:
            continue
        parts = item.split()
        if (len(parts) != 2 or not parts[0].startswith("serviceName=")
                or not parts[1].startswith("rewrite=")):
            raise ValueError(f"{item!r} is not a valid rewrite format, e.g. 'serviceName=tea-svc rewrite=/'")
        service, path = parts[0][len("serviceName="):], parts[1][len("rewrite="):]
        if not _SERVICE_NAME.fullmatch(service):
            raise ValueError(f"invalid service name {service!r} in rewrite {item!r}")
        if not _REWRITE_PATH.fullmatch(path):
            raise ValueError(f"invalid rewrite path {path!r}: must start with '/' and contain only "
                             "letters, digits and ._~!*+,:@&=%/-")
        if service in result:
            raise ValueError(f"duplicate rewrite for service {service!r}")
        result[service] = path
    return result


def parse_service_list(value: str) -> frozenset[str]:
    services = parsing.parse_comma_list(value)
    for s in services:
        if not _SERVICE_NAME.fullmatch(s):
            raise ValueError(f"invalid service name {s!r}")
    return frozenset(services)


def _path_regex(value: str) -> str:
    if value not in PATH_REGEX_VALUES:
        raise ValueError("allowed values: 'case_sensitive', 'case_insensitive' or 'exact'")
    return value


_PER_INGRESS: tuple[tuple[str, str, Callable[[str], Any]], ...] = (
    (REWRITES, "rewrites", parse_rewrites),
    (WEBSOCKET_SERVICES, "websocket_services", parse_service_list),
    (SSL_SERVICES, "ssl_services", parse_service_list),
    (GRPC_SERVICES, "grpc_services", parse_service_list),
    (PATH_REGEX, "path_regex", _path_regex),
)


def parse_annotations(annotations: Mapping[str, Any] | None, base: ConfigParams, *,
                      snippets_enabled: bool = False) -> tuple[IngressAnnotations, list[str]]:
    """Apply an Ingress's annotations to the ConfigMap params; returns the result and warnings. Invalid values
    are not applied and are listed in `errors` of the result."""
    annotations = annotations or {}
    warnings: list[str] = []
    errors: list[str] = []
    overrides: dict[str, Any] = {}

    def parse(name: str, fn: Callable[[str], Any]) -> tuple[bool, Any]:
        raw = annotations[name]
        if not isinstance(raw, str):
            errors.append(annotation_error(name, str(raw), "must be a string"))
            return False, None
        try:
            return True, fn(raw)
        except ValueError as e:
            errors.append(annotation_error(name, raw, str(e)))
            return False, None

    for name in sorted(annotations):
        spec = ANNOTATIONS_BY_NAME.get(name)
        if spec is None:
            continue
        if spec.needs_snippets and not snippets_enabled:
            warnings.append(f"annotation {name} is ignored: snippets are not enabled (--enable-snippets)")
            continue
        ok, value = parse(name, spec.parse)
        if ok:
            overrides[spec.field] = value

    _ssl_redirect_and_rewrites(annotations, overrides, warnings)
    if PROXY_REDIRECT_FROM in annotations or PROXY_REDIRECT_TO in annotations:
        name = PROXY_REDIRECT_FROM if PROXY_REDIRECT_FROM in annotations else PROXY_REDIRECT_TO
        ok, value = parse(name, lambda _: directive_values.parse_proxy_redirect(
            annotations.get(PROXY_REDIRECT_FROM), annotations.get(PROXY_REDIRECT_TO)))
        if ok:
            overrides["proxy_redirect"] = value
    if BASIC_AUTH_REALM in annotations and BASIC_AUTH_SECRET not in annotations:
        warnings.append(f"annotation {BASIC_AUTH_REALM} is ignored: {BASIC_AUTH_SECRET} is not set")
        overrides.pop("basic_auth_realm", None)

    # HSTS: all or nothing.
    present = [n for n in (HSTS, *HSTS_RELATED) if n in annotations]
    if present:
        if HSTS not in annotations:
            warnings.extend(f"annotation {n} is ignored: {HSTS} is not set" for n in present)
        else:
            hsts: dict[str, Any] = {}
            n_errors = len(errors)
            for n in present:
                field_name, fn = _HSTS_FIELDS[n]
                ok, value = parse(n, fn)
                if ok:
                    hsts[field_name] = value
            if len(errors) == n_errors:
                overrides.update(hsts)

    extra: dict[str, Any] = {}
    for ann, key, fn in _PER_INGRESS:
        if ann in annotations:
            ok, value = parse(ann, fn)
            if ok:
                extra[key] = value
    params = dataclasses.replace(base, **overrides) if overrides else base
    return IngressAnnotations(params=params, errors=tuple(errors), **extra), warnings


def _ssl_redirect_and_rewrites(annotations: Mapping[str, Any], overrides: dict[str, Any],
                               warnings: list[str]) -> None:
    """`nginx.org/ssl-redirect` wins over the deprecated `ingress.kubernetes.io/ssl-redirect` (read, with a
    warning, when the new one is absent); `nginx.org/rewrites` wins over `nginx.org/rewrite-target`."""
    if LEGACY_SSL_REDIRECT in annotations:
        if SSL_REDIRECT in annotations:
            warnings.append(f"annotation {LEGACY_SSL_REDIRECT} is ignored: {SSL_REDIRECT} is set")
        else:
            warnings.append(f"annotation {LEGACY_SSL_REDIRECT} is deprecated: use {SSL_REDIRECT} instead")
    if REWRITE_TARGET in annotations and REWRITES in annotations:
        warnings.append(f"annotation {REWRITE_TARGET} is ignored: {REWRITES} is set")
        overrides.pop("rewrite_target", None)


def check_annotations(annotations: Mapping[str, Any] | None, *, snippets_enabled: bool = False) -> list[str]:
    """The errors `parse_annotations` would report: one message per invalid annotation value."""
    anns, _ = parse_annotations(annotations, _DEFAULT_PARAMS, snippets_enabled=snippets_enabled)
    return list(anns.errors)


def master_annotations(annotations: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """A master's annotations without those a master may not have; and the removed names (sorted)."""
    removed = sorted(k for k in annotations if k in MASTER_DENYLIST)
    return {k: v for k, v in annotations.items() if k not in MASTER_DENYLIST}, removed


def minion_annotations(annotations: Mapping[str, str],
                       master: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """A minion's effective annotations: the master's inheritable ones it does not set itself, its
    `proxy-set-headers` merged over the master's (the minion wins per header), minus those a minion may not
    have. Returns them and the removed names (sorted)."""
    result = dict(annotations)
    for k, v in master.items():
        if k in MINION_INHERITANCE_LIST and k not in result:
            result[k] = v
    if PROXY_SET_HEADERS in master:
        result[PROXY_SET_HEADERS] = _merge_proxy_set_headers(master[PROXY_SET_HEADERS],
                                                             annotations.get(PROXY_SET_HEADERS))
    removed = sorted(k for k in result if k in MINION_DENYLIST)
    for k in removed:
        del result[k]
    return result, removed


def _merge_proxy_set_headers(master: str, minion: str | None) -> str:
    """The master's `proxy-set-headers` entries whose header the minion does not set, then the minion's."""
    if minion is None:
        return master

    def name(entry: str) -> str:
        return entry.split(":", 1)[0].strip().lower()

    minion_entries = [e for e in minion.split(",") if e.strip()]
    own = {name(e) for e in minion_entries}
    kept = [e for e in master.split(",") if e.strip() and name(e) not in own]
    return ",".join(kept + minion_entries)
