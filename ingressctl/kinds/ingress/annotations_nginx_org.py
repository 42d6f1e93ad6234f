"""The `nginx.org/*` annotations (NIC's), with the `nginx.com/*` NGINX Plus ones and the legacy
`ingress.kubernetes.io/ssl-redirect`: one row each in `NGINX_ORG`, the table the parser
(`kinds/ingress/annotations.py`), validation (`annotation_validation.py`) and docs/annotations.md read.

Guarantees:
- Adding an annotation is one row here (key, validators, parser and field, default, master/minion rule, docs)
  and its test; the docs tables are generated from the rows (`annotation_docs.py`).
- The value parsers of this family's own syntaxes (`parse_rewrites`, `parse_service_list`, ...) are here;
  they raise `ValueError` with a detail that does not repeat the value, as `configs.parsing` does.
- Other modules import the key constants here instead of spelling a key again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from ingressctl.configs import directive_values, parsing
from ingressctl.kinds.ingress import annotation_validators as v
from ingressctl.kinds.ingress.annotation_table import (
    Annotation,
    AnnotationTable,
    Handling,
    Minion,
    Section,
)

_SERVICE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_REWRITE_PATH = re.compile(r"/[A-Za-z0-9._~!*+,:@&=%/-]{0,2047}")


def _org(name: str) -> str:
    return f"nginx.org/{name}"


def _com(name: str) -> str:
    return f"nginx.com/{name}"


MERGEABLE_INGRESS_TYPE: Final = _org("mergeable-ingress-type")
PATH_REGEX: Final = _org("path-regex")
PATH_REGEX_VALUES = ("case_sensitive", "case_insensitive", "exact")
REWRITES: Final = _org("rewrites")
HSTS: Final = _org("hsts")
BASIC_AUTH_SECRET: Final = _org("basic-auth-secret")
SSL_REDIRECT: Final = _org("ssl-redirect")
STICKY_COOKIE_SERVICES: Final = _org("sticky-cookie-services")
ADD_HEADER_INHERIT: Final = _org("add-header-inherit")
USE_CLUSTER_IP: Final = _org("use-cluster-ip")
POLICIES: Final = _org("policies")
LISTEN_PORTS: Final = _org("listen-ports")
LISTEN_PORTS_SSL: Final = _org("listen-ports-ssl")
HEALTH_CHECKS: Final = _com("health-checks")
HEALTH_CHECKS_MANDATORY: Final = _com("health-checks-mandatory")


def _int(minimum: int, maximum: int) -> Callable[[str], int]:
    return lambda value: parsing.parse_int(value, minimum=minimum, maximum=maximum)


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


def parse_path_regex(value: str) -> str:
    if value not in PATH_REGEX_VALUES:
        raise ValueError("allowed values: 'case_sensitive', 'case_insensitive' or 'exact'")
    return value


def merge_proxy_set_headers(master: str, minion: str | None) -> str:
    """The master's `proxy-set-headers` entries whose header the minion does not set, then the minion's."""
    if minion is None:
        return master

    def name(entry: str) -> str:
        return entry.split(":", 1)[0].strip().lower()

    minion_entries = [e for e in minion.split(",") if e.strip()]
    own = {name(e) for e in minion_entries}
    kept = [e for e in master.split(",") if e.strip() and name(e) not in own]
    return ",".join(kept + minion_entries)


PROXYING = Section("proxying")
UPSTREAMS = Section("upstreams")
SERVERS = Section("servers")
RATE_LIMITING = Section("rate-limiting", config_map_column=False)
SNIPPETS = Section("snippets", values_column="")
MERGEABLE = Section("mergeable", config_map_column=False, values_column="values")
PLUS = Section("plus", config_map_column=False, values_column="", effect_column="NGINX Plus feature")

_R: Final = v.validate_required
_HSTS_SET: Final = v.validate_related(HSTS, v.check_bool)
INHERITED, DENIED = Minion.INHERITED, Minion.DENIED
SERVICE_LIST = "service list"


def _proxy(name: str, syntax: str, effect: str, validators: tuple[v.AnnotationValidator, ...],
           parse: Callable[[str], object], default: str = "") -> Annotation:
    """A per-location proxy setting: the ConfigMap key of its name, inherited by minions."""
    return Annotation(_org(name), PROXYING, syntax, effect, validators, parse, sets=name.replace("-", "_"),
                      config_map_key=name, default=default, minion=INHERITED)


def _limit_req(name: str, syntax: str, effect: str, parse: Callable[[str], object], default: str = "") \
        -> Annotation:
    """A rate-limit setting (`limit-req-<name>`): annotation only, inherited by minions."""
    key = f"limit-req-{name}"
    return Annotation(_org(key), RATE_LIMITING, syntax, effect, (), parse, sets=key.replace("-", "_"),
                      default=default, minion=INHERITED)


def _plus(name: str, feature: str, *validators: v.AnnotationValidator, master: bool = True) -> Annotation:
    """An NGINX Plus annotation: rejected on NGINX open source, nothing reads it."""
    return Annotation(_com(name), PLUS, "", feature, validators, handling=Handling.NONE, master=master,
                      needs_plus=True)


# Each row: key, section, syntax, effect (docs, Markdown), validators, parser, handling, field, then the rest
# by keyword. Within a section, rows are in the order of the docs.
NGINX_ORG = AnnotationTable("nginx.org", __name__, (
    # ---------------------------------------------------------------------------------------------- proxying
    _proxy("proxy-connect-timeout", "time", "`proxy_connect_timeout`", (_R, v.validate_time),
           parsing.parse_time, "60s"),
    _proxy("proxy-read-timeout", "time", "`proxy_read_timeout`", (_R, v.validate_time), parsing.parse_time,
           "60s"),
    _proxy("proxy-send-timeout", "time", "`proxy_send_timeout`", (_R, v.validate_time), parsing.parse_time,
           "60s"),
    _proxy("client-max-body-size", "offset", "`client_max_body_size`", (_R, v.validate_offset),
           parsing.parse_offset, "1m"),
    _proxy("proxy-buffering", "bool", "`proxy_buffering`", (_R, v.validate_bool), parsing.parse_bool, "true"),
    _proxy("proxy-buffers", "`<number> <size>`, e.g. `8 4k`", "`proxy_buffers`",
           (_R, v.validate_proxy_buffers), parsing.parse_proxy_buffers),
    _proxy("proxy-buffer-size", "size", "`proxy_buffer_size`", (_R, v.validate_size), parsing.parse_size),
    _proxy("proxy-max-temp-file-size", "size", "`proxy_max_temp_file_size`", (_R, v.validate_size),
           parsing.parse_size),
    _proxy("proxy-busy-buffers-size", "size",
           "`proxy_busy_buffers_size`; at least the larger of the buffer size and one buffer, at most all "
           "buffers but one", (_R, v.validate_size), parsing.parse_size),
    Annotation(
        _org("client-body-buffer-size"), PROXYING, "size", "`client_body_buffer_size` in each location",
        (_R, v.validate_size), parsing.parse_size, sets="client_body_buffer_size",
        config_map_key="client-body-buffer-size"),
    Annotation(
        _org("proxy-next-upstream"), PROXYING,
        "space-separated `error`, `timeout`, `invalid_header`, `http_500`, `http_502`, `http_503`, "
        "`http_504`, `http_403`, `http_404`, `http_429`, `non_idempotent`, or `off` alone; no duplicates "
        "(`denied` needs NGINX Plus)",
        "`proxy_next_upstream`", (), directive_values.parse_proxy_next_upstream, sets="proxy_next_upstream"),
    Annotation(
        _org("proxy-next-upstream-timeout"), PROXYING, "time", "`proxy_next_upstream_timeout`",
        (_R, v.validate_time), parsing.parse_time, sets="proxy_next_upstream_timeout"),
    Annotation(
        _org("proxy-next-upstream-tries"), PROXYING, "integer", "`proxy_next_upstream_tries`",
        (_R, v.validate_uint64), directive_values.parse_uint, sets="proxy_next_upstream_tries", default="0",
        default_note="unlimited"),
    Annotation(
        _org("proxy-redirect-from"), PROXYING, "`off`, `default`, a URL prefix, or a regex `~re` / `~*re`",
        "`proxy_redirect` in the server (a minion: its locations); anything but `off`/`default` needs `-to`; "
        "`default` emits nothing at server level",
        (_R,), handling=Handling.PROXY_REDIRECT, sets="proxy_redirect"),
    Annotation(
        _org("proxy-redirect-to"), PROXYING, "the replacement (known NGINX variables and `$1`-`$9` allowed)",
        "the second argument of `proxy_redirect`; needs `-from`",
        (_R,), handling=Handling.PROXY_REDIRECT, sets="proxy_redirect"),
    Annotation(
        _org("proxy-hide-headers"), PROXYING, "comma-separated header names", "`proxy_hide_header` for each",
        (v.validate_header_names,), parsing.parse_header_names, sets="proxy_hide_headers",
        config_map_key="proxy-hide-headers", minion=DENIED),
    Annotation(
        _org("proxy-pass-headers"), PROXYING, "comma-separated header names", "`proxy_pass_header` for each",
        (v.validate_header_names,), parsing.parse_header_names, sets="proxy_pass_headers",
        config_map_key="proxy-pass-headers", minion=DENIED),
    Annotation(
        _org("proxy-set-headers"), PROXYING, "`Name[: value], ...`",
        "`proxy_set_header` for each: a bare name passes the client's header of that name, `Name: value` "
        "sets a constant (no `$`)",
        (v.validate_proxy_set_headers,), parsing.parse_proxy_set_headers, sets="proxy_set_headers",
        minion=Minion.MERGED, merge=merge_proxy_set_headers),
    Annotation(
        REWRITES, PROXYING, "`serviceName=<svc> rewrite=<path>[;...]`",
        "replace the matched path prefix with `<path>` when proxying to `<svc>`",
        (_R, v.validate_rewrites), parse_rewrites, Handling.INGRESS, "rewrites", master=False),
    Annotation(
        _org("websocket-services"), PROXYING, SERVICE_LIST, "WebSocket upgrade headers for those Services",
        (_R, v.validate_service_list), parse_service_list, Handling.INGRESS, "websocket_services",
        master=False),
    Annotation(
        _org("ssl-services"), PROXYING, SERVICE_LIST, "HTTPS to those Services' endpoints",
        (_R, v.validate_service_list), parse_service_list, Handling.INGRESS, "ssl_services", master=False),
    Annotation(
        _org("grpc-services"), PROXYING, SERVICE_LIST,
        "`grpc_pass` to those Services; needs `http2: \"true\"` in the ConfigMap (otherwise ignored with a "
        "warning)",
        (_R, v.validate_service_list), parse_service_list, Handling.INGRESS, "grpc_services", master=False),
    Annotation(
        _org("rewrite-target"), PROXYING,
        "a local path, `$1`-`$9` for the groups of a regex path; no absolute URL, `//`, `..` segment, "
        "control characters, whitespace, quotes or any of ``;{}[]\\|<>,^~`` and backtick",
        "`rewrite ^<path> <target> break;` in every location (with `nginx.org/path-regex`, the path is the "
        "regex; `(?i)` for `case_insensitive`); ignored with a warning when `nginx.org/rewrites` is set",
        (), directive_values.parse_rewrite_target, sets="rewrite_target", ignored_with=REWRITES),
    Annotation(
        PATH_REGEX, PROXYING, "`case_sensitive`, `case_insensitive`, `exact`",
        "treat every path of the Ingress as a regular expression (`~`, `~*`) or an exact match (`=`)",
        (v.validate_path_regex,), parse_path_regex, Handling.INGRESS, "path_regex"),
    # --------------------------------------------------------------------------------------------- upstreams
    Annotation(
        _org("lb-method"), UPSTREAMS,
        "`round_robin`, `least_conn`, `ip_hash`, `random`, `random two`, `random two least_conn`, "
        "`hash <$var> [consistent]`",
        "load-balancing method",
        (_R, v.validate_lb_method), parsing.parse_lb_method, sets="lb_method", config_map_key="lb-method",
        default="random two least_conn", minion=INHERITED),
    Annotation(
        _org("max-fails"), UPSTREAMS, "integer", "`max_fails` of each upstream server",
        (_R, v.validate_uint64), _int(0, 100000), sets="max_fails", config_map_key="max-fails", default="1",
        minion=INHERITED),
    Annotation(
        _org("fail-timeout"), UPSTREAMS, "time", "`fail_timeout` of each upstream server",
        (_R, v.validate_time), parsing.parse_time, sets="fail_timeout", config_map_key="fail-timeout",
        default="10s", minion=INHERITED),
    Annotation(
        _org("max-conns"), UPSTREAMS, "integer", "`max_conns` of each upstream server",
        (_R, v.validate_uint64), _int(0, 1 << 20), sets="max_conns", default="0", default_note="unlimited",
        minion=INHERITED),
    Annotation(
        _org("keepalive"), UPSTREAMS, "integer",
        "idle keep-alive connections to the upstream (and HTTP/1.1 without `Connection: close`)",
        (_R, v.validate_int64), _int(0, 100000), sets="keepalive", config_map_key="keepalive", default="0",
        minion=INHERITED),
    Annotation(
        _org("upstream-zone-size"), UPSTREAMS, "size, at least `32k`, or `0` for none",
        "what the upstream reserves in the shared upstream zone (see below)",
        (_R, v.validate_size), lambda value: parsing.parse_zone_size(value, allow_zero=True),
        sets="upstream_zone_size", config_map_key="upstream-zone-size", default_note="sized from the servers",
        minion=INHERITED),
    Annotation(
        USE_CLUSTER_IP, UPSTREAMS, "bool",
        "proxy to the Service's cluster IP instead of its endpoints (kube-proxy balances; no reloads on "
        "endpoint changes)",
        (v.validate_bool,), parsing.parse_bool, sets="use_cluster_ip", default="false", master=False),
    # ------------------------------------------------------------------------------- servers, TLS, listeners
    Annotation(
        LISTEN_PORTS, SERVERS, "comma-separated ports", "HTTP ports of the Ingress's servers",
        (_R, v.validate_port_list), parsing.parse_port_list, sets="ports",
        default_note="`--default-http-listener-port`", minion=DENIED),
    Annotation(
        LISTEN_PORTS_SSL, SERVERS, "comma-separated ports", "HTTPS ports of the Ingress's TLS servers",
        (_R, v.validate_port_list), parsing.parse_port_list, sets="ssl_ports",
        default_note="`--default-https-listener-port`", minion=DENIED),
    Annotation(
        _org("redirect-to-https"), SERVERS, "bool",
        "redirect to HTTPS when `X-Forwarded-Proto` is `http` (TLS terminated in front of NGINX)",
        (_R, v.validate_bool), parsing.parse_bool, sets="redirect_to_https",
        config_map_key="redirect-to-https", default="false", minion=DENIED),
    Annotation(
        SSL_REDIRECT, SERVERS, "bool", "redirect plain HTTP to HTTPS on TLS hosts",
        (_R, v.validate_bool), parsing.parse_bool, sets="ssl_redirect", config_map_key="ssl-redirect",
        default="true", minion=DENIED),
    Annotation(
        "ingress.kubernetes.io/ssl-redirect", SERVERS, "bool",
        "deprecated name of `nginx.org/ssl-redirect`: still read when the new one is absent, with a Warning "
        "(`AddedOrUpdatedWithWarning`) saying so; ignored (with a warning) when both are set",
        (_R, v.validate_bool), parsing.parse_bool, sets="ssl_redirect", config_map_key="ssl-redirect",
        default="true", minion=DENIED, ignored_with=SSL_REDIRECT, deprecated=True),
    Annotation(
        _org("http-redirect-code"), SERVERS, "`301`, `302`, `307`, `308`",
        "the status of the ssl-redirect and redirect-to-https redirects",
        (), directive_values.parse_http_redirect_code, sets="http_redirect_code",
        config_map_key="http-redirect-code", default="301", minion=DENIED),
    Annotation(
        _org("app-root"), SERVERS, "a path: not `/`, no trailing `/`, no `~`, RFC 1738 characters only",
        "`/` (and only `/`) answers `302` to `$scheme://$http_host<path>`",
        (), directive_values.parse_app_root, sets="app_root", minion=DENIED),
    Annotation(
        _org("add-header"), SERVERS,
        "`Name:Value[:always], ...`; a value has no `$`, control characters or unescaped `\"` (so no `:`)",
        "`add_header` in the server (a minion: its locations); NGINX then drops the http-level headers of "
        "the ConfigMap `add-header` there",
        (), directive_values.parse_add_headers, sets="add_headers"),
    Annotation(
        ADD_HEADER_INHERIT, SERVERS, "`on`, `off`, `merge` (any case)",
        "`add_header_inherit` in the server (a minion: its locations): `merge` keeps the outer levels' "
        "`add_header`s next to this level's own. Needs NGINX 1.29.3 or newer; on an older NGINX the Ingress "
        "is accepted, the directive left out, with an `AddedOrUpdatedWithWarning` Warning naming the version "
        "it needs and the one running",
        (), directive_values.parse_add_header_inherit, sets="add_header_inherit"),
    Annotation(
        _org("custom-http-errors"), SERVERS,
        "comma-separated status codes (300-599, not 499) and `4xx`/`5xx`",
        "responses of the backends with these codes go to the Ingress's `spec.defaultBackend` "
        "(`proxy_intercept_errors on; error_page <codes> @custom_default_backend`), keeping the backend's "
        "status; in the server (a minion: its locations, with the master's `defaultBackend`). The default "
        "backend's own `/` is never intercepted. Without a `defaultBackend` it does nothing, with a Warning. "
        "(NIC's main branch, after 5.5.4.)",
        (), directive_values.parse_custom_http_errors, sets="custom_http_errors"),
    Annotation(
        _org("ssl-ciphers"), SERVERS, "OpenSSL cipher list that selects at least one cipher",
        "`ssl_ciphers` of the Ingress's TLS servers",
        (), parsing.parse_ssl_ciphers, sets="server_ssl_ciphers", minion=DENIED),
    Annotation(
        _org("ssl-prefer-server-ciphers"), SERVERS, "bool",
        "`ssl_prefer_server_ciphers on` on the Ingress's TLS servers",
        (_R, v.validate_bool), parsing.parse_bool, sets="server_ssl_prefer_server_ciphers", default="false",
        minion=DENIED),
    Annotation(
        STICKY_COOKIE_SERVICES, SERVERS,
        "`serviceName=<svc> <cookie> [expires=<t>] [domain=<d>] [httponly] [secure] [path=<p>] "
        "[samesite=<s>][;...]`",
        "`sticky cookie <cookie> <params>` in the upstreams of `<svc>`, when the running NGINX is 1.29.6 or "
        "newer (read with `nginx -V` at start-up); on an older NGINX it is validated and accepted, the "
        "directive is left out and the Ingress gets an `AddedOrUpdatedWithWarning` Warning naming the "
        "version it needs and the one running",
        (_R,), directive_values.parse_sticky_cookie_services, sets="sticky_cookies", master=False),
    Annotation(
        HSTS, SERVERS, "bool", "`Strict-Transport-Security` on TLS hosts",
        (_R, v.validate_bool), parsing.parse_bool, sets="hsts", group=HSTS, config_map_key="hsts",
        default="false", minion=DENIED),
    Annotation(
        _org("hsts-max-age"), SERVERS, "integer seconds", "its `max-age`; needs `nginx.org/hsts`",
        (_HSTS_SET, _R, v.validate_int64), _int(0, 2**63 - 1), sets="hsts_max_age", group=HSTS,
        config_map_key="hsts-max-age", default="2592000", minion=DENIED),
    Annotation(
        _org("hsts-include-subdomains"), SERVERS, "bool", "`includeSubDomains`; needs `nginx.org/hsts`",
        (_HSTS_SET, _R, v.validate_bool), parsing.parse_bool, sets="hsts_include_subdomains", group=HSTS,
        config_map_key="hsts-include-subdomains", default="false", minion=DENIED),
    Annotation(
        _org("hsts-behind-proxy"), SERVERS, "bool",
        "decide by `X-Forwarded-Proto` (TLS terminated in front of NGINX); needs `nginx.org/hsts`",
        (_HSTS_SET, _R, v.validate_bool), parsing.parse_bool, sets="hsts_behind_proxy", group=HSTS,
        config_map_key="hsts-behind-proxy", default="false"),  # NIC's minion deny list omits it
    Annotation(
        _org("server-tokens"), SERVERS, "bool", "NGINX version in the `Server` header and error pages",
        (v.validate_server_tokens,), parsing.parse_server_tokens, sets="server_tokens",
        config_map_key="server-tokens", default="true", minion=DENIED),
    Annotation(
        BASIC_AUTH_SECRET, SERVERS, "Secret name (type `nginx.org/htpasswd`, key `htpasswd`)",
        "HTTP basic authentication with that htpasswd file",
        (_R, v.validate_secret_name), parsing.parse_secret_name, sets="basic_auth_secret"),
    Annotation(
        _org("basic-auth-realm"), SERVERS, "text (no `$`, `\"` escaped)",
        "the realm; needs `nginx.org/basic-auth-secret`",
        (v.validate_related(BASIC_AUTH_SECRET), v.validate_escaped_value), parsing.parse_realm,
        sets="basic_auth_realm", requires=BASIC_AUTH_SECRET),
    Annotation(
        POLICIES, SERVERS, "comma-separated `name` or `namespace/name` of Policies",
        "accessControl, cors, egressMTLS, externalAuth and ingressMTLS Policies on the server (a minion: its "
        "locations); any other type, or a missing or invalid Policy, answers 500 (see "
        "[policies.md](policies.md#policies-on-ingresses-nginxorgpolicies))",
        (_R, v.validate_policy_refs), handling=Handling.POLICIES),
    # ----------------------------------------------------------------------------------------- rate limiting
    _limit_req("rate", "`<n>r/s` or `<n>r/m`", "turns rate limiting on", parsing.parse_rate),
    _limit_req("key", "NGINX variable expression", "what is limited", parsing.parse_limit_req_key,
               "${binary_remote_addr}"),
    _limit_req("zone-size", "size, at least `32k`", "shared memory zone", parsing.parse_zone_size, "10m"),
    _limit_req("burst", "integer", "`burst`", _int(0, 1 << 30), "0"),
    _limit_req("delay", "integer", "`delay`", _int(0, 1 << 30), "0"),
    _limit_req("no-delay", "bool", "`nodelay`", parsing.parse_bool, "false"),
    _limit_req("dry-run", "bool", "count but do not reject", parsing.parse_bool, "false"),
    _limit_req("log-level", "`info`, `notice`, `warn`, `error`", "log level of rejections",
               parsing.parse_limit_req_log_level, "error"),
    _limit_req("reject-code", "400 to 599", "status of rejected requests", _int(400, 599), "429"),
    _limit_req("scale", "bool",
               "divide the rate by the number of controller replicas (ingressctl currently counts one "
               "replica)",
               parsing.parse_bool, "false"),
    # ---------------------------------------------------------------------------------------------- snippets
    Annotation(
        _org("server-snippets"), SNIPPETS, "", "lines added to each `server` of the Ingress",
        (), parsing.parse_lines, sets="server_snippets", config_map_key="server-snippets", minion=DENIED,
        needs_snippets=True),
    Annotation(
        _org("location-snippets"), SNIPPETS, "", "lines added to each `location` of the Ingress",
        (), parsing.parse_lines, sets="location_snippets", config_map_key="location-snippets",
        minion=INHERITED, needs_snippets=True),
    # ------------------------------------------------------------------------------------ mergeable Ingresses
    Annotation(
        MERGEABLE_INGRESS_TYPE, MERGEABLE, "`master`, `minion`",
        "one host split across Ingresses: the master holds the host (and TLS), each minion adds paths to it",
        (_R, v.validate_mergeable_type), handling=Handling.MERGEABLE),
    # --------------------------------------------------------------------------------- NGINX Plus (nginx.com)
    _plus("health-checks", "active health checks", _R, v.validate_bool, master=False),
    _plus("health-checks-mandatory", "mandatory health checks",
          v.validate_related(HEALTH_CHECKS, v.check_true), _R, v.validate_bool, master=False),
    _plus("health-checks-mandatory-queue", "queue for mandatory health checks",
          v.validate_related(HEALTH_CHECKS_MANDATORY, v.check_true), _R, v.validate_uint64, master=False),
    _plus("slow-start", "slow start of recovered servers", _R, v.validate_time),
    _plus("sticky-cookie-services", "session persistence by cookie", _R, master=False),
    _plus("jwt-key", "JWT validation key", _R, v.validate_secret_name),
    _plus("jwt-realm", "JWT realm", _R, v.validate_escaped_value),
    _plus("jwt-token", "where the JWT is read from"),
    _plus("jwt-login-url", "redirect when the JWT is missing"),
    _plus("policies", "Policies on an Ingress that may include App Protect WAF (use `nginx.org/policies` "
          "otherwise)"),  # NIC 5.5: the Plus twin of nginx.org/policies (WAF Policies)
    # -------------------------------------------------- NGINX App Protect WAF and DoS (appprotect*.f5.com)
    *(Annotation(f"appprotect.f5.com/{name}", PLUS, "",
                 f"NGINX App Protect WAF: {feature}; ingressctl has no App Protect, so the Ingress is "
                 "rejected (`annotation requires AppProtect`, as NIC without it)",
                 (v.validate_app_protect_only, v.validate_plus_only), handling=Handling.NONE,
                 needs_plus=True)
      for name, feature in (("app-protect-enable", "turns WAF on"),
                            ("app-protect-policy", "the APPolicy"),
                            ("app-protect-security-log-enable", "turns security logging on"),
                            ("app-protect-security-log", "the APLogConf"),
                            ("app-protect-security-log-destination", "where security logs go"))),
    Annotation(
        "appprotectdos.f5.com/app-protect-dos-resource", PLUS, "",
        "NGINX App Protect DoS (NGINX Plus), which ingressctl does not have: the Ingress is rejected "
        "(`annotation requires AppProtectDos`, as NIC without it)",
        (v.validate_app_protect_dos_only, v.validate_plus_only), handling=Handling.NONE, minion=DENIED,
        needs_plus=True),
))
