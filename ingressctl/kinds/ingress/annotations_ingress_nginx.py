"""The `nginx.ingress.kubernetes.io/*` annotations of the retired community controller (ingress-nginx): one
row each in `INGRESS_NGINX`, read only with `--ingress-nginx-compat` (`ingress_nginx/translate.py`),
documented in docs/ingress-nginx-migration.md (`kinds/ingress/ingress_nginx/docs.py`).

Guarantees:
- Every key of ingress-nginx's annotation documentation that its users are known to write is a row, with its
  value syntax (ingress-nginx's), what ingressctl makes of it (`status`: served, translated, approximated,
  ignored, refused) and why (`reason`). A key under the prefix that is not a row is ignored with a warning
  naming it.
- A row whose `handling` is NONE and whose status is neither ignored nor refused is not implemented yet: its
  status and reason say what it will be; until then it is refused (`fail_closed`: serving the Ingress without
  it would weaken its security, e.g. authentication) or ignored with a warning.
- FIELD rows set a `ConfigParams` field from the parsed value; FAMILY rows are parsed (their value checked)
  here and combined by the translator (buffers, redirects, rate limits, access lists, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ingressctl.configs import directive_values, parsing
from ingressctl.kinds.ingress.annotation_table import Annotation, AnnotationTable, Handling, Section, Status
from ingressctl.kinds.ingress.ingress_nginx import auth_request as authreq
from ingressctl.kinds.ingress.ingress_nginx import authtls_values as atv
from ingressctl.kinds.ingress.ingress_nginx import basic_auth as basic
from ingressctl.kinds.ingress.ingress_nginx import canary as _canary
from ingressctl.kinds.ingress.ingress_nginx import cors_values as cv
from ingressctl.kinds.ingress.ingress_nginx import header_maps as hm
from ingressctl.kinds.ingress.ingress_nginx import location_lines as ll
from ingressctl.kinds.ingress.ingress_nginx import mirror
from ingressctl.kinds.ingress.ingress_nginx import proxyssl_values as psv
from ingressctl.kinds.ingress.ingress_nginx import values as v

PREFIX: Final = "nginx.ingress.kubernetes.io/"


def key(name: str) -> str:
    return PREFIX + name


PROXYING = Section("proxying", config_map_column=False)
REDIRECTS = Section("redirects", config_map_column=False)
ACCESS = Section("access", config_map_column=False)
RATE_LIMITING = Section("rate-limiting", config_map_column=False)
AUTH = Section("auth", config_map_column=False)
ROUTING = Section("routing", config_map_column=False)
TLS = Section("tls", config_map_column=False)
SNIPPETS = Section("snippets", config_map_column=False)
INERT = Section("inert", config_map_column=False)

SERVED, TRANSLATED, APPROXIMATED = Status.SERVED, Status.TRANSLATED, Status.APPROXIMATED
IGNORED, REFUSED = Status.IGNORED, Status.REFUSED
FAMILY, NONE, FIELD = Handling.FAMILY, Handling.NONE, Handling.FIELD
BOOL = "bool (Go's `true`, `false`, `1`, `0`, ...)"
ON_OFF = "`on`, `off`"
SECONDS = "integer seconds"
SIZE = "size: digits with an optional `b`, `k`, `m`, `g`"
NOT_YET = "Not yet implemented; "


def _int(minimum: int, maximum: int) -> Callable[[str], int]:
    return lambda value: v.integer(value, minimum, maximum)


def _row(name: str, section: Section, status: Status, syntax: str, effect: str, *,
         parse: Callable[[str], Any] | None = None, handling: Handling | None = None, sets: str = "",
         default: str = "", reason: str = "", fail_closed: bool = False,
         needs_snippets: bool = False) -> Annotation:
    """A row: FIELD when it names a field, FAMILY when it has a parser only, NONE otherwise."""
    if handling is None:
        handling = FIELD if sets else FAMILY if parse is not None else NONE
    return Annotation(key(name), section, syntax, effect, parse=parse, handling=handling, sets=sets,
                      default_note=default, status=status, reason=reason, fail_closed=fail_closed,
                      needs_snippets=needs_snippets)


def _pending(name: str, section: Section, status: Status, syntax: str, effect: str, reason: str, *,
             fail_closed: bool) -> Annotation:
    """A row not implemented yet: its final status and effect; refused or ignored until then."""
    return _row(name, section, status, syntax, effect, reason=NOT_YET + reason, fail_closed=fail_closed)


def _ignored(name: str, syntax: str, reason: str, parse: Callable[[str], Any] | None = None, *,
             section: Section = INERT) -> Annotation:
    return _row(name, section, IGNORED, syntax, "nothing", parse=parse, reason=reason)


BACKEND_PROTOCOL: Final = key("backend-protocol")
SSL_REDIRECT: Final = key("ssl-redirect")
FORCE_SSL_REDIRECT: Final = key("force-ssl-redirect")
PROXY_BUFFER_SIZE: Final = key("proxy-buffer-size")
PROXY_BUFFERS_NUMBER: Final = key("proxy-buffers-number")
PROXY_REDIRECT_FROM: Final = key("proxy-redirect-from")
PROXY_REDIRECT_TO: Final = key("proxy-redirect-to")
PERMANENT_REDIRECT: Final = key("permanent-redirect")
PERMANENT_REDIRECT_CODE: Final = key("permanent-redirect-code")
TEMPORAL_REDIRECT: Final = key("temporal-redirect")
TEMPORAL_REDIRECT_CODE: Final = key("temporal-redirect-code")
LIMIT_RPS: Final = key("limit-rps")
LIMIT_RPM: Final = key("limit-rpm")
LIMIT_CONNECTIONS: Final = key("limit-connections")
LIMIT_BURST_MULTIPLIER: Final = key("limit-burst-multiplier")
LIMIT_WHITELIST: Final = key("limit-whitelist")
LIMIT_ALLOWLIST: Final = key("limit-allowlist")
WHITELIST_SOURCE_RANGE: Final = key("whitelist-source-range")
ALLOWLIST_SOURCE_RANGE: Final = key("allowlist-source-range")
DENYLIST_SOURCE_RANGE: Final = key("denylist-source-range")
SERVICE_UPSTREAM: Final = key("service-upstream")
ENABLE_MODSECURITY: Final = key("enable-modsecurity")
ENABLE_OWASP_CORE_RULES: Final = key("enable-owasp-core-rules")
PROXY_HTTP_VERSION: Final = key("proxy-http-version")
REWRITE_TARGET: Final = key("rewrite-target")
USE_REGEX: Final = key("use-regex")
UPSTREAM_HASH_BY: Final = key("upstream-hash-by")
UPSTREAM_HASH_BY_SUBSET: Final = key("upstream-hash-by-subset")
UPSTREAM_HASH_BY_SUBSET_SIZE: Final = key("upstream-hash-by-subset-size")

_REDIRECT_NOTE = ("the status is ingress-nginx's `http-redirect-code` default, 308, for an Ingress with "
                  "ingress-nginx annotations (unless the ConfigMap's `http-redirect-code` or "
                  "`nginx.org/http-redirect-code` says otherwise); the trailing `/` is kept and "
                  "`/.well-known/acme-challenge` is not exempt")

INGRESS_NGINX = AnnotationTable("ingress-nginx", __name__, (
    # ---------------------------------------------------------------------------------------------- proxying
    _row("backend-protocol", PROXYING, TRANSLATED,
         "`HTTP`, `HTTPS`, `GRPC`, `GRPCS`, `AUTO_HTTP`, `AJP`, `FCGI`",
         "`HTTPS`: HTTPS to every Service of the Ingress (as `nginx.org/ssl-services`); `GRPC`/`GRPCS`: "
         "`grpc_pass` (as `nginx.org/grpc-services`, `GRPCS` with TLS), which needs `http2: \"true\"` in the "
         "ConfigMap (otherwise ignored with a warning, as for `nginx.org/grpc-services`)",
         parse=v.backend_protocol, default="`HTTP`",
         reason="`AUTO_HTTP`, `AJP` and `FCGI` have no ingressctl form: refused (the backend would be spoken "
                "to in the wrong protocol)"),
    _row("proxy-body-size", PROXYING, TRANSLATED, SIZE + "; `0` = unlimited", "`client_max_body_size`",
         parse=v.body_size, sets="client_max_body_size", default="ConfigMap `client-max-body-size`",
         reason="the `b` suffix is dropped"),
    _row("proxy-connect-timeout", PROXYING, TRANSLATED, SECONDS, "`proxy_connect_timeout` (gRPC: "
         "`grpc_connect_timeout`)", parse=v.seconds, sets="proxy_connect_timeout",
         default="ConfigMap `proxy-connect-timeout` (60s; ingress-nginx's default is 5)"),
    _row("proxy-read-timeout", PROXYING, TRANSLATED, SECONDS,
         "`proxy_read_timeout` (gRPC: `grpc_read_timeout`)",
         parse=v.seconds, sets="proxy_read_timeout", default="ConfigMap `proxy-read-timeout`"),
    _row("proxy-send-timeout", PROXYING, TRANSLATED, SECONDS,
         "`proxy_send_timeout` (gRPC: `grpc_send_timeout`)",
         parse=v.seconds, sets="proxy_send_timeout", default="ConfigMap `proxy-send-timeout`"),
    _row("proxy-buffer-size", PROXYING, TRANSLATED, SIZE,
         "`proxy_buffer_size <size>` and `proxy_buffers <number> <size>` (number from "
         "`proxy-buffers-number`, "
         "else 4)", parse=v.buffer_size, default="`4k`", reason="a `g` size is written in `m`"),
    _row("proxy-buffers-number", PROXYING, TRANSLATED, "integer",
         "`proxy_buffers <number> <size>` (size from `proxy-buffer-size`, else `4k`)",
         parse=_int(1, 1 << 20), default="`4`"),
    _row("proxy-buffering", PROXYING, TRANSLATED, ON_OFF, "`proxy_buffering`", parse=v.on_off,
         sets="proxy_buffering", default="ConfigMap `proxy-buffering` (on; ingress-nginx's default is off)"),
    _row("proxy-request-buffering", PROXYING, TRANSLATED, ON_OFF, "`proxy_request_buffering`",
         parse=v.on_off_text, sets="proxy_request_buffering", default="NGINX's (on)"),
    _row("proxy-max-temp-file-size", PROXYING, TRANSLATED, SIZE, "`proxy_max_temp_file_size`",
         parse=v.buffer_size, sets="proxy_max_temp_file_size"),
    _row("proxy-busy-buffers-size", PROXYING, TRANSLATED, SIZE, "`proxy_busy_buffers_size`",
         parse=v.buffer_size, sets="proxy_busy_buffers_size"),
    _row("client-body-buffer-size", PROXYING, TRANSLATED, SIZE, "`client_body_buffer_size`",
         parse=v.buffer_size, sets="client_body_buffer_size"),
    _row("proxy-next-upstream", PROXYING, TRANSLATED,
         "space-separated `error`, `timeout`, `invalid_header`, `http_500`, `http_502`, `http_503`, "
         "`http_504`, "
         "`http_403`, `http_404`, `http_429`, `non_idempotent`, or `off`", "`proxy_next_upstream`",
         parse=directive_values.parse_proxy_next_upstream, sets="proxy_next_upstream",
         default="NGINX's (`error timeout`)"),
    _row("proxy-next-upstream-timeout", PROXYING, TRANSLATED, SECONDS, "`proxy_next_upstream_timeout`",
         parse=v.seconds, sets="proxy_next_upstream_timeout", default="`0` = unlimited"),
    _row("proxy-next-upstream-tries", PROXYING, TRANSLATED, "integer", "`proxy_next_upstream_tries`",
         parse=_int(0, 1 << 20), sets="proxy_next_upstream_tries",
         default="`0` = unlimited (ingress-nginx's default is 3)"),
    _row("proxy-redirect-from", PROXYING, TRANSLATED, "`off`, `default`, a URL prefix or a regex",
         "`proxy_redirect <from> <to>` (`off` and `default` alone)", parse=v.text,
         default="NGINX's (`default`; ingress-nginx's is `off`)",
         reason="with another value, `proxy-redirect-to` is needed (otherwise nothing is emitted, as "
                "ingress-nginx)"),
    _row("proxy-redirect-to", PROXYING, TRANSLATED, "the replacement (known NGINX variables allowed)",
         "the second argument of `proxy_redirect`", parse=v.text),
    _row("proxy-http-version", PROXYING, APPROXIMATED, "`1.0`, `1.1`", "`proxy_http_version 1.1` always",
         parse=lambda value: parsing.parse_int(value.strip().replace(".", ""), minimum=10, maximum=11),
         reason="ingressctl proxies with HTTP/1.1 (its upstream keep-alive needs it); `1.0` is not honoured"),
    _row("upstream-vhost", PROXYING, TRANSLATED, "host name[:port], NGINX variables allowed",
         "the `Host` header sent upstream (`proxy_set_header Host`)", parse=v.upstream_vhost,
         sets="upstream_vhost", default="`$host`"),
    _row("upstream-hash-by", PROXYING, TRANSLATED, "NGINX variables and text, e.g. `$request_uri`",
         "load balancing `hash <value> consistent` (NGINX's ketama, as ingress-nginx's Lua chash)",
         parse=v.hash_by, sets="lb_method"),
    _row("load-balance", PROXYING, APPROXIMATED, "`round_robin`, `ewma`", "load-balancing method",
         parse=v.load_balance, sets="lb_method", reason="`ewma` (Lua) is `random two least_conn`"),
    _row("service-upstream", PROXYING, TRANSLATED, BOOL,
         "proxy to the Service's cluster IP (as `nginx.org/use-cluster-ip`)", parse=v.go_bool,
         sets="use_cluster_ip", default="`false`"),
    _row("custom-http-errors", PROXYING, TRANSLATED, "comma-separated status codes",
         "responses with these codes go to the Ingress's `spec.defaultBackend` (as "
         "`nginx.org/custom-http-errors`)", parse=v.status_codes, sets="custom_http_errors",
         reason="without `spec.defaultBackend` nothing is intercepted (ingress-nginx's global default "
                "backend does not exist here), with a warning"),
    _row("default-backend", PROXYING, TRANSLATED, "a Service name (of the Ingress's namespace)",
         "an upstream of the Service's first port: the locations of a backend without endpoints proxy to it, "
         "and `custom-http-errors` go to it (instead of `spec.defaultBackend`)",
         parse=v.service_name, sets="ingress_nginx_default_backend",
         reason="as ingress-nginx, only a Service with ready endpoints counts; a missing Service or one "
                "without ports is named in a Warning event and changes nothing"),
    _row("x-forwarded-prefix", PROXYING, TRANSLATED,
         "path of letters, digits, `-._~/:`, `$1`... and known NGINX variables",
         "`proxy_set_header X-Forwarded-Prefix \"<value>\"` in the locations that `rewrite-target` rewrites "
         "(only there, as ingress-nginx)", parse=ll.forwarded_prefix),
    _row("proxy-cookie-path", PROXYING, TRANSLATED, "`off` or `<from> <to>` (letters, digits, `-._~/:,?&=`)",
         "`proxy_cookie_path <from> <to>` in every location of the Ingress", parse=ll.cookie_path,
         reason="ingress-nginx's validator refuses the space between the two paths (the annotation then "
                "falls back to `off`); ingressctl takes it, as the documented syntax says"),
    _row("proxy-cookie-domain", PROXYING, TRANSLATED, "`off` or `<from> <to>` (letters, digits, `-._~/:`)",
         "`proxy_cookie_domain <from> <to>` in every location of the Ingress", parse=ll.cookie_domain),
    _ignored("connection-proxy-header", "header value",
             "ingressctl sets `Connection` itself (upgrades and upstream "
             "keep-alive)", v.text, section=PROXYING),
    _row("custom-headers", PROXYING, TRANSLATED, "ConfigMap `name` or `<namespace>/<name>`",
         "each key and value of the ConfigMap is a response header of every location of the Ingress "
         "(`add_header \"<key>\" \"<value>\" always`, the backend's own hidden), as `more_set_headers`; "
         "the Ingress is re-rendered when the ConfigMap is created, changed or deleted",
         parse=hm.reference,
         reason="as ingress-nginx, each key must be a header name listed in the ConfigMap key "
                "`global-allowed-response-headers` and each value of its characters (a `$` is literal); a "
                "ConfigMap that is missing, in another namespace (`allow-cross-namespace-resources` is not "
                "honoured: false), larger than 64 KiB or with a header refused makes every location of the "
                "Ingress answer 503, with a Warning event; the server's `add_header` lines are repeated in "
                "the locations (NGINX would drop them there)"),
    _row("limit-rate", PROXYING, TRANSLATED, "integer KB/s", "`limit_rate <N>k` in every location of the "
         "Ingress (per connection; `0`: no limit)", parse=_int(0, 1 << 30), default="`0`"),
    _row("limit-rate-after", PROXYING, TRANSLATED, "integer KB", "`limit_rate_after <N>k` in every location "
         "of the Ingress", parse=_int(0, 1 << 30), default="`0`"),
    _ignored("disable-proxy-intercept-errors", BOOL, "ingressctl intercepts only `custom-http-errors`",
             v.go_bool, section=PROXYING),
    _row("mirror-target", PROXYING, TRANSLATED, "http(s) URL whose host is a name or IPv4 address, then "
         "`/`, `?`, `$request_uri`, `$uri` or `$document_uri`; NGINX variables in its path and query "
         "(usually `https://copies.example.com$request_uri`)",
         "a copy of every request to the Ingress's locations (`mirror`) is sent to the URL by an internal "
         "location (`proxy_pass`, `Host` = `mirror-host` or the URL's host); its answer is discarded and the "
         "client gets the primary backend's as soon as that answers, also when the copy's backend is down or "
         "slow",
         parse=mirror.target,
         reason="a variable in the host is refused (no resolver), and so is any value NGINX could read as "
                "syntax; the host must resolve when NGINX loads the configuration; a slow copy's backend "
                "holds the client's kept-alive connection (its next request) until the copy ends or times "
                "out (the ConfigMap's proxy timeouts); a URL without a path receives `/_mirror-<hash of the "
                "Ingress>`, "
                "not ingress-nginx's `/_mirror-<uid>`"),
    _row("mirror-host", PROXYING, TRANSLATED, "host name or IPv4 address, optionally `:<port>`",
         "the `Host` (and, for `https`, the TLS server name) of the copies", parse=mirror.host,
         default="the host of `mirror-target`",
         reason="an invalid value refuses the Ingress (ingress-nginx used the target's host)"),
    _row("mirror-request-body", PROXYING, TRANSLATED, ON_OFF,
         "`mirror_request_body`: `off` sends the copies without the body (nor its `Content-Length`)",
         parse=v.text, default="`on`",
         reason="any other value is ignored with a warning (the body is sent), as ingress-nginx; with `on` "
                "NGINX reads the whole body before proxying (`proxy-request-buffering: off` has no effect)"),
    # --------------------------------------------------------------------------------------------- redirects
    _row("ssl-redirect", REDIRECTS, TRANSLATED, BOOL,
         "redirect plain HTTP to HTTPS on the Ingress's TLS hosts (as `nginx.org/ssl-redirect`)",
         parse=v.go_bool, default="ConfigMap `ssl-redirect` (true)", reason=_REDIRECT_NOTE),
    _row("force-ssl-redirect", REDIRECTS, TRANSLATED, BOOL,
         "redirect plain HTTP to HTTPS also on hosts without TLS (TLS ended in front of NGINX)",
         parse=v.go_bool, default="`false`",
         reason=_REDIRECT_NOTE + "; the scheme is the connection's (`X-Forwarded-Proto` is not read)"),
    _row("app-root", REDIRECTS, SERVED, "a path", "`/` answers `302` to `$scheme://$http_host<path>`",
         parse=directive_values.parse_app_root, sets="app_root"),
    _row("permanent-redirect", REDIRECTS, SERVED, "an `http(s)://` URL (NGINX variables allowed)",
         "every path of the Ingress answers `return <code> <url>`", parse=v.redirect_url),
    _row("permanent-redirect-code", REDIRECTS, SERVED, "integer; 300-308, else 301",
         "the status of `permanent-redirect`", parse=v.redirect_code, default="`301`"),
    _row("temporal-redirect", REDIRECTS, SERVED, "an `http(s)://` URL (NGINX variables allowed)",
         "every path of the Ingress answers `return <code> <url>`; wins over `permanent-redirect`",
         parse=v.redirect_url),
    _row("temporal-redirect-code", REDIRECTS, SERVED, "integer; 300-307, else 302",
         "the status of `temporal-redirect`", parse=v.redirect_code, default="`302`"),
    _row("from-to-www-redirect", REDIRECTS, TRANSLATED, BOOL,
         "a server for `www.<host>` (or the host without `www.`) answering `<http-redirect-code>` (308) to "
         "`$scheme://<host>:$server_port<URI>` with one final `/` of the URI dropped, as ingress-nginx; over "
         "HTTPS too (with the host's certificate) when the host's certificate is valid for that name",
         parse=v.go_bool, sets="ingress_nginx_www_redirect", default="`false`",
         reason="no redirect when another resource serves that name as a host, and none over HTTPS when the "
                "host's certificate does not name it (each with a Warning event, as ingress-nginx logs "
                "them); `X-Forwarded-Proto`/`-Port` are not read under `use-forwarded-headers`"),
    _ignored("preserve-trailing-slash", BOOL,
             "ingressctl's HTTPS redirects always keep the trailing slash (as `preserve-trailing-slash: "
             "true`)",
             v.go_bool, section=REDIRECTS),
    _row("use-port-in-redirects", REDIRECTS, TRANSLATED, BOOL,
         "`port_in_redirect on` or `off` in every location of the Ingress", parse=v.go_bool,
         reason="without the annotation NGINX's default (`on`) applies, not ingress-nginx's `off`: it only "
                "matters for redirects NGINX makes itself, not for the backends' or the annotations'"),
    _row("relative-redirects", REDIRECTS, TRANSLATED, BOOL, "`absolute_redirect off` in every location of "
         "the Ingress (the redirects NGINX makes itself are relative: no scheme, host or port)",
         parse=v.go_bool, default="`false`"),
    # ------------------------------------------------------------------------------------------------ access
    _row("whitelist-source-range", ACCESS, TRANSLATED, "comma-separated IP addresses and CIDRs",
         "`allow <cidr>; ... deny all;` in every location of the Ingress (403 for others); the old name of "
         "`allowlist-source-range`", parse=v.cidrs,
         reason="an invalid entry refuses the Ingress (ingress-nginx answered 503 on its paths)"),
    _row("allowlist-source-range", ACCESS, TRANSLATED, "comma-separated IP addresses and CIDRs",
         "`allow <cidr>; ... deny all;` in every location of the Ingress (403 for others); wins over "
         "`whitelist-source-range`", parse=v.cidrs,
         reason="an invalid entry refuses the Ingress (ingress-nginx answered 503 on its paths)"),
    _row("denylist-source-range", ACCESS, TRANSLATED, "comma-separated IP addresses and CIDRs",
         "`deny <cidr>;` in every location of the Ingress, before the allow list (403)", parse=v.cidrs,
         reason="an invalid entry refuses the Ingress"),
    _row("satisfy", ACCESS, TRANSLATED, "`all`, `any`",
         "`satisfy` in every location of the Ingress: `any` lets a request in that passes one of the "
         "address rules (`whitelist-source-range`, ...), basic auth or `auth-url`", parse=v.text,
         reason="an invalid value is ignored, as ingress-nginx; it applies to the `nginx.org/*` access "
                "checks of the locations too"),
    _row("server-alias", ACCESS, REFUSED, "comma-separated host names", "nothing",
         reason="extra `server_name`s could capture hosts other resources own; list the hosts in the rules"),
    # ----------------------------------------------------------------------------------------- rate limiting
    _row("limit-rps", RATE_LIMITING, TRANSLATED, "integer requests per second",
         "`limit_req` per client address, `burst` = limit x `limit-burst-multiplier`, `nodelay`, 503, a 5m "
         "zone per Ingress (as `nginx.org/limit-req-*`)", parse=_int(0, 1 << 30),
         reason="with `limit-rpm` also set, only `limit-rps` applies (ingress-nginx applied both)"),
    _row("limit-rpm", RATE_LIMITING, TRANSLATED, "integer requests per minute", "as `limit-rps`, per minute",
         parse=_int(0, 1 << 30)),
    _row("limit-connections", RATE_LIMITING, TRANSLATED, "integer",
         "`limit_conn` per client address, 503, a 5m zone per Ingress", parse=_int(0, 1 << 30)),
    _row("limit-burst-multiplier", RATE_LIMITING, TRANSLATED, "integer", "the `burst` of `limit-rps`/`-rpm`",
         parse=_int(1, 1 << 20), default="`5`"),
    _row("limit-whitelist", RATE_LIMITING, TRANSLATED, "comma-separated IP addresses and CIDRs",
         "clients from these addresses are not limited (a `geo` map to an empty key); the old name of "
         "`limit-allowlist`", parse=v.cidrs),
    _row("limit-allowlist", RATE_LIMITING, TRANSLATED, "comma-separated IP addresses and CIDRs",
         "as `limit-whitelist` (wins over it)", parse=v.cidrs),
    _ignored("global-rate-limit", "integer",
             "ingress-nginx's memcached rate limits (removed) are not implemented",
             v.text, section=RATE_LIMITING),
    _ignored("global-rate-limit-window", "duration", "as `global-rate-limit`", v.text, section=RATE_LIMITING),
    _ignored("global-rate-limit-key", "text", "as `global-rate-limit`", v.text, section=RATE_LIMITING),
    _ignored("global-rate-limit-ignored-cidrs", "CIDRs", "as `global-rate-limit`", v.text,
    section=RATE_LIMITING),
    # -------------------------------------------------------------------------------------------------- auth
    _row("auth-url", AUTH, TRANSLATED, "http(s) URL; NGINX variables in its path and query",
         "`auth_request` in every location of the Ingress to an internal location proxying a body-less copy "
         "of the request to the URL (Host, X-Original-URL, X-Original-Method, X-Auth-Request-Redirect, "
         "X-Sent-From, X-Real-IP, X-Forwarded-For); 2xx lets the request through, 401/403 answer so, any "
         "other answer 500; `Set-Cookie` of the auth answer on 2xx/3xx answers", parse=authreq.auth_url,
         reason="variables in the URL's host are refused (no resolver), but for the request's own host "
                "(`$host`, `$http_host`, `$best_http_host`), which is this NGINX: reached over loopback on "
                "its own port, as it was through the load balancer (a loop back to the location it protects "
                "answers 500); `$escaped_request_uri` is escaped as ingress-nginx's (see `auth-signin`); "
                "keepalive and caching are not "
                "implemented (`auth-keepalive*`, `auth-cache-*` are ignored)"),
    _row("auth-signin", AUTH, TRANSLATED, "URL, NGINX variables allowed",
         "a 401 of `auth-url` answers 302 to this URL with `rd=<original URL>` appended (unless the URL "
         "has it)", parse=v.text,
         reason="the original URL's path and query are percent-escaped as ingress-nginx's "
                "`$escaped_request_uri` (by ingressctl's escape-URI NGINX module, in the container image; "
                "without it they are as the client sent them, and a `&` in the query ends `rd` early); an "
                "invalid value is ignored, as ingress-nginx"),
    _row("auth-signin-redirect-param", AUTH, TRANSLATED, "query parameter name (`rd`)",
         "the parameter of `auth-signin` carrying the original URL", parse=v.text,
         reason="an invalid value is ignored (`rd`), as ingress-nginx"),
    _row("auth-response-headers", AUTH, TRANSLATED, "comma-separated header names",
         "these headers of the auth answer are set on the upstream request (`auth_request_set`)",
         parse=authreq.response_headers),
    _row("auth-method", AUTH, TRANSLATED, "`GET`, `HEAD`, `POST`, `PUT`, `PATCH`, `DELETE`, `CONNECT`, "
         "`OPTIONS`, `TRACE`", "the method of the auth subrequest (with X-Original-URI and X-Scheme)",
         parse=authreq.method),
    _row("auth-snippet", AUTH, SERVED, "NGINX configuration", "lines in the internal auth location",
         parse=parsing.parse_lines, needs_snippets=True,
         reason="only with `--enable-snippets`; refused without"),
    _row("auth-proxy-set-headers", AUTH, TRANSLATED, "ConfigMap `name` or `<namespace>/<name>`",
         "each key and value of the ConfigMap is a header of the auth subrequest of `auth-url` "
         "(`proxy_set_header <key> \"<value>\"` in the internal auth location); the Ingress is re-rendered "
         "when the ConfigMap is created, changed or deleted", parse=hm.reference,
         reason="values are checked more strictly than ingress-nginx does (it checks names only): letters, "
                "digits, spaces, `-._~/:,=+*@!%&?#()[]<>\\|^'` and NGINX variables NGINX knows, no quotes, "
                "`;`, braces or backslashes; a ConfigMap that is missing, in another namespace, larger than "
                "64 KiB or with a header refused makes every location of the Ingress answer 503 (fail "
                "closed, as ingress-nginx denies them), with a Warning event"),
    _row("auth-request-redirect", AUTH, TRANSLATED, "URL", "`X-Auth-Request-Redirect` of the subrequest "
         "(default: the request URI)", parse=authreq.request_redirect),
    _row("auth-always-set-cookie", AUTH, TRANSLATED, BOOL,
         "`Set-Cookie` of the auth answer on every answer (`add_header ... always`), not only 2xx/3xx",
         parse=v.go_bool),
    _ignored("auth-cache-key", "text", "auth response caching is not implemented (only caching is lost)",
    section=AUTH),
    _ignored("auth-cache-duration", "`<code> <time>` list", "as `auth-cache-key`", section=AUTH),
    _ignored("auth-keepalive", "integer", "auth keep-alive connections (Lua) are not implemented",
    section=AUTH),
    _ignored("auth-keepalive-requests", "integer", "as `auth-keepalive`", section=AUTH),
    _ignored("auth-keepalive-timeout", "integer seconds", "as `auth-keepalive`", section=AUTH),
    _ignored("auth-keepalive-share-vars", BOOL, "as `auth-keepalive`", section=AUTH),
    _ignored("enable-global-auth", BOOL, "ingressctl has no global auth URL", section=AUTH),
    _row("auth-type", AUTH, TRANSLATED, "`basic`, `digest`",
         "`basic`: HTTP basic authentication (`auth_basic`, `auth_basic_user_file`, as "
         "`nginx.org/basic-auth-secret`) in every location of the Ingress", parse=basic.auth_type,
         reason="`digest` (and any value but `basic`, which ingress-nginx takes for digest) is refused: "
                "NGINX has no digest authentication (ingress-nginx loads a third-party module); "
                "`nginx.org/basic-auth-secret` wins, with a warning"),
    _row("auth-secret", AUTH, TRANSLATED, "Secret `name` or `namespace/name` (type `Opaque`, key `auth`: "
         "htpasswd lines; with `auth-map` one key per user)", "the htpasswd file of `auth-type: basic`",
         parse=basic.secret,
         reason="as ingress-nginx, a Secret that is missing, not `Opaque`, without `auth` (`auth-file`), in "
                "another namespace (`allow-cross-namespace-resources` is not honoured: false) or an "
                "`auth-type` without `auth-secret` makes every location of the Ingress answer 503, with a "
                "Warning event; `$2y$` (bcrypt), `$apr1$`, `{SHA}` and the system's crypt hashes work"),
    _row("auth-secret-type", AUTH, TRANSLATED, "`auth-file`, `auth-map`", "the Secret's layout",
         parse=basic.secret_type, default="`auth-file`",
         reason="`auth-file`: the key `auth` holds htpasswd lines; `auth-map`: every key is a user, its "
                "value the password hash: the Secret is read in full from the API (a `get`, once per "
                "resourceVersion; the cache keeps only `auth` and `ca.crt`) into an htpasswd file sorted "
                "by user (ingress-nginx's order is random); a key that is not a Secret data key or a value "
                "with a line break refuses the Secret, and a Secret that cannot be read (403, 404, timeout) "
                "makes every location answer 503, with a Warning event"),
    _row("auth-realm", AUTH, TRANSLATED, "letters, digits, spaces and `-._~/:`",
         "the realm of basic authentication (`WWW-Authenticate`)", parse=basic.realm, default="empty"),
    # --------------------------------------------------------------------------------------------------- TLS
    _row("auth-tls-secret", TLS, TRANSLATED, "`<namespace>/<name>` (or `/<name>`) of a Secret with `ca.crt`",
         "client certificates verified against the CA (`ssl_client_certificate`, `ssl_crl` from `ca.crl`) on "
         "the Ingress's TLS servers, as an ingressMTLS Policy", parse=atv.secret,
         reason="the Secret must be of the type `nginx.org/ca` (ingressctl keeps no data of Opaque Secrets) "
                "in the Ingress's namespace; otherwise, or on a host without TLS or a minion, the server "
                "answers 500 with a warning; with `on`, plain HTTP requests of the server answer 400; an "
                "ingressMTLS Policy of `nginx.org/policies` wins"),
    _row("auth-tls-verify-client", TLS, TRANSLATED, "`on`, `off`, `optional`, `optional_no_ca`",
         "`ssl_verify_client`", parse=atv.verify_client, default="`on`"),
    _row("auth-tls-verify-depth", TLS, TRANSLATED, "integer", "`ssl_verify_depth`", parse=atv.verify_depth,
         default="`1` (also for `0`)"),
    _row("auth-tls-pass-certificate-to-upstream", TLS, TRANSLATED, BOOL,
         "header `ssl-client-cert` (the URL-escaped PEM) to the backend; `ssl-client-verify`, "
         "`ssl-client-subject-dn`, `ssl-client-issuer-dn` are always sent", parse=v.go_bool,
         default="`false`"),
    _row("auth-tls-error-page", TLS, TRANSLATED, "URL, path or `@name`",
         "`error_page 495 496 = <page>` (a failed client certificate goes there)", parse=atv.error_page),
    _row("auth-tls-match-cn", TLS, TRANSLATED, "`CN=<regex>`",
         "`if ($ssl_client_s_dn !~ \"CN=<regex>\") { return 403; }` (ingress-nginx's own check)",
         parse=atv.match_cn, reason="the regex must compile in PCRE-like syntax without control characters"),
    _row("ssl-passthrough", TLS, TRANSLATED, BOOL,
         "with `--enable-tls-passthrough`: the TLS connections of the Ingress's hosts on the passthrough "
         "port go by SNI, unterminated, to the backend of each host's `/` path (else `spec.defaultBackend`), "
         "a stream upstream of its ready endpoints; the Ingress's HTTP server is served as usual and speaks "
         "HTTPS to that Service (also without the flag, as ingress-nginx)",
         parse=v.go_bool, default="`false`",
         reason="without `--enable-tls-passthrough` ignored with a warning (NGINX terminates TLS as usual); "
                "the other annotations do not apply to passed-through connections; ingress-nginx sends them "
                "to the Service's cluster IP (here with `service-upstream: \"true\"` only); a host a "
                "passthrough TransportServer claims too goes to the older resource; wildcard hosts, rules "
                "without host, masters and minions are not passed through (a warning says so)"),
    _row("ssl-ciphers", TLS, TRANSLATED, "OpenSSL cipher list", "`ssl_ciphers` of the Ingress's TLS servers",
         parse=parsing.parse_ssl_ciphers, sets="server_ssl_ciphers"),
    _row("ssl-prefer-server-ciphers", TLS, TRANSLATED, BOOL, "`ssl_prefer_server_ciphers on`",
         parse=v.go_bool, sets="server_ssl_prefer_server_ciphers"),
    _row("proxy-ssl-secret", TLS, TRANSLATED, "`<namespace>/<name>` of a `kubernetes.io/tls` Secret",
         "the client certificate (`proxy_ssl_certificate`/`_key` from `tls.crt`/`tls.key`) and, from an "
         "optional `ca.crt`, the trusted CA (`proxy_ssl_trusted_certificate`) towards HTTPS backends, with "
         "the other `proxy-ssl-*` settings, as an egressMTLS Policy", parse=psv.secret,
         reason="the Secret must be of the type `kubernetes.io/tls` in the Ingress's namespace (no `/name` "
                "shorthand, as ingress-nginx); a missing or unusable one, or `proxy-ssl-verify: on` without "
                "`ca.crt`, makes the Ingress answer 500 with a warning (as NIC's egressMTLS); the lines are "
                "written whenever the Secret is usable (ingress-nginx writes the certificate, protocols, "
                "ciphers and verification only when the Secret has `ca.crt`) and for `GRPCS` backends too "
                "(`grpc_ssl_*`); in the Ingress's servers (a minion's: its locations), which for the "
                "Ingress's own locations is what ingress-nginx's server level and `proxy-ssl-location-only` "
                "both give; an egressMTLS Policy of `nginx.org/policies` wins"),
    _row("proxy-ssl-verify", TLS, TRANSLATED, ON_OFF, "`proxy_ssl_verify`", parse=psv.on_off,
         default="`off`"),
    _row("proxy-ssl-verify-depth", TLS, TRANSLATED, "integer", "`proxy_ssl_verify_depth`",
         parse=psv.verify_depth, default="`1` (also for `0`)"),
    _row("proxy-ssl-name", TLS, TRANSLATED, "host name",
         "`proxy_ssl_name`: the name the backend's certificate is verified against and, with "
         "`proxy-ssl-server-name: on`, the SNI sent", parse=psv.ssl_name, default="`$proxy_host` (NGINX's)",
         reason="a host name only (ingress-nginx's validator also lets regex characters and NGINX variables "
                "through)"),
    _row("proxy-ssl-server-name", TLS, TRANSLATED, ON_OFF, "`proxy_ssl_server_name` (SNI to the backend)",
         parse=psv.on_off, default="`off`",
         reason="`off` also leaves out the `proxy_ssl_server_name on` ingressctl (as NIC) writes in HTTPS "
                "locations otherwise, so that no SNI is sent, as with ingress-nginx"),
    _row("proxy-ssl-protocols", TLS, TRANSLATED, "`TLSv1.2`, `TLSv1.3` (blank-separated)",
         "`proxy_ssl_protocols`", parse=psv.protocols, default="`TLSv1.2`"),
    _row("proxy-ssl-ciphers", TLS, TRANSLATED, "OpenSSL cipher list (letters, digits, `+:_-!`)",
         "`proxy_ssl_ciphers`", parse=psv.ciphers, default="`DEFAULT`",
         reason="the list must select at least one cipher of the OpenSSL NGINX uses"),
    _ignored("proxy-ssl-location-only", BOOL,
             "a ConfigMap key of ingress-nginx, not an annotation (ingress-nginx ignores it here too); "
             "ingressctl applies the `proxy-ssl-*` settings to the Ingress's own locations either way",
             section=TLS),
    # ----------------------------------------------------------------------------- routing: paths and canary
    _row("rewrite-target", ROUTING, SERVED,
         "URI: letters, digits, `-._~/:`, `$1`... from the path regex and known NGINX variables",
         "`rewrite \"(?i)<path>\" <target> break;` in each location whose path differs from the target (the "
         "whole URI is replaced); turns the host's regex mode on, as `use-regex`",
         parse=v.rewrite_target, sets="rewrite_target",
         reason="the host's regex mode covers the Ingresses ingressctl serves together for that host (the "
                "ingress-nginx Ingresses naming it, or a master and its minions); "
                "`nginx.org/rewrite-target` and `nginx.org/rewrites` win over it"),
    _row("use-regex", ROUTING, SERVED, BOOL,
         "every path of the host as `location ~* \"^<path>\"` (case-insensitive, anchored at the start only, "
         "whatever its pathType), regex locations by descending path length; a Prefix or Exact path of the "
         "Ingress must then hold no regex characters (ingress-nginx's strict-validate-path-type)",
         parse=v.go_bool, sets="ingress_nginx_use_regex", default="`false`",
         reason="host-wide over the Ingresses ingressctl serves together for that host, as `rewrite-target`; "
                "`nginx.org/path-regex` on the same Ingress wins over it"),
    _row("canary", ROUTING, SERVED, BOOL,
         "the Ingress is a canary of the Ingress serving the same host: each of its paths with the same path "
         "and pathType as a path of that primary (or of another Ingress sharing the host) makes that "
         "location choose between the two upstreams (header, then cookie, then weight); the request keeps "
         "the location's settings "
         "and the canary's other annotations are not applied (a warning names them)",
         parse=_canary.PARSERS[_canary.CANARY], default="`false`",
         reason="a canary without a primary (no Ingress of the class serves its host, or its host belongs to "
                "a mergeable master) is reported in a `Rejected` event and changes nothing; only its first "
                "rule's host is attached; other canary annotations without `canary: \"true\"` reject the "
                "Ingress (ingress-nginx: configured but not enabled)"),
    _row("canary-weight", ROUTING, SERVED, "integer 0..2147483647",
         "that share of the requests (out of the total) goes to the canary: `split_clients` on `$request_id`",
         parse=_canary.PARSERS[_canary.WEIGHT], default="`0`",
         reason="the share is written as a percent with two decimals (exact for totals up to 10000)"),
    _row("canary-weight-total", ROUTING, SERVED, "integer", "the total of `canary-weight`; only a value "
         "above 100 counts, as ingress-nginx", parse=_canary.PARSERS[_canary.WEIGHT_TOTAL], default="`100`"),
    _row("canary-by-header", ROUTING, SERVED, "header name: letters, digits, `-`, `_`",
         "`always` in that header -> canary, `never` -> primary, anything else falls through to the cookie "
         "and the weight (`map $http_<name>`)", parse=_canary.PARSERS[_canary.BY_HEADER],
         reason="ingress-nginx also accepts `.`, `~`, `/` and `:` in the name, which no NGINX variable can "
                "name: refused"),
    _row("canary-by-header-value", ROUTING, SERVED, "letters, digits, `-._~/:`",
         "exactly that header value -> canary (case-sensitive), anything else falls through",
         parse=_canary.PARSERS[_canary.BY_HEADER_VALUE]),
    _row("canary-by-header-pattern", ROUTING, SERVED, "PCRE of letters, digits, `-._~/:^$[](){}*+?\\|&=\\`",
         "a header matching it -> canary (unanchored, as `ngx.re.match`); ignored when "
         "`canary-by-header-value` is set", parse=_canary.PARSERS[_canary.BY_HEADER_PATTERN],
         reason="an empty header counts as absent"),
    _row("canary-by-cookie", ROUTING, SERVED, "cookie name: letters, digits, `_`",
         "`always` in that cookie -> canary, `never` -> primary, anything else falls through to the weight "
         "(`map $cookie_<name>`)", parse=_canary.PARSERS[_canary.BY_COOKIE],
         reason="ingress-nginx also accepts `-`, `.`, `~`, `/` and `:` in the name, which no NGINX variable "
                "can name: refused"),
    _row("affinity", ROUTING, TRANSLATED, "`cookie`",
         "`sticky cookie <session-cookie-name> httponly path=<path> ...` in the upstreams of the Ingress's "
         "locations (its canaries' too), on an NGINX with `sticky` (1.29.6 or newer; else a warning)",
         parse=v.text,
         reason="the cookie's path defaults to the Ingress's one path using the upstream, else `/` "
                "(ingress-nginx: each location's path); cookies set by ingress-nginx are not recognised, so "
                "each client is balanced once more after the switch; `nginx.org/sticky-cookie-services` "
                "wins"),
    _row("affinity-mode", ROUTING, APPROXIMATED, "`balanced`, `persistent`",
         "nothing: NGINX's sticky cookie is persistent", parse=v.text, default="`balanced`",
         reason="`persistent` is served; `balanced` (rebalancing some clients when the Service scales up) "
                "is not"),
    _row("affinity-canary-behavior", ROUTING, APPROXIMATED, "`sticky`, `legacy`",
         "nothing: the canary is chosen per request", parse=v.text, default="`sticky`",
         reason="`legacy` is served; with `sticky` a client once sent to the canary is not kept there"),
    _row("session-cookie-name", ROUTING, TRANSLATED, "cookie name: letters, digits, `-._~`",
         "the sticky cookie's name", parse=v.text, default="`INGRESSCOOKIE`",
         reason="an invalid name falls back to the default, with a warning"),
    _row("session-cookie-expires", ROUTING, TRANSLATED, SECONDS, "`expires=<n>s`", parse=v.text,
         reason="NGINX writes both Expires and Max-Age; `session-cookie-max-age` wins when both are set; "
                "`0` and negative values are ignored with a warning (a session cookie)"),
    _row("session-cookie-max-age", ROUTING, TRANSLATED, SECONDS, "`expires=<n>s`", parse=v.text,
         reason="NGINX writes both Expires and Max-Age from it"),
    _row("session-cookie-path", ROUTING, TRANSLATED, "path: letters, digits, `-._~/:,&=`", "`path=`",
         parse=v.text, default="the Ingress's one path using the upstream, else `/`"),
    _row("session-cookie-domain", ROUTING, TRANSLATED, "domain", "`domain=`", parse=v.text),
    _row("session-cookie-samesite", ROUTING, TRANSLATED, "`None`, `Lax`, `Strict` (any case)", "`samesite=`",
         parse=v.text),
    _row("session-cookie-conditional-samesite-none", ROUTING, APPROXIMATED, BOOL, "nothing", parse=v.text,
         default="`false`", reason="SameSite=None is sent to every browser, also those that mishandle it"),
    _row("session-cookie-secure", ROUTING, TRANSLATED, BOOL, "`secure`", parse=v.text, default="`false`"),
    _row("session-cookie-change-on-failure", ROUTING, APPROXIMATED, BOOL,
         "nothing: NGINX always binds a client whose endpoint failed to the one that answered",
         parse=v.text, default="`false`",
         reason="`true` is served, `false` (keep the failed endpoint) is not"),
    _row("upstream-hash-by-subset", ROUTING, APPROXIMATED, BOOL,
         "plain consistent hashing: `upstream-hash-by`'s `hash <key> consistent`, one endpoint per key",
         parse=v.go_bool, default="`false`",
         reason="ingress-nginx hashed a key to a subset of `upstream-hash-by-subset-size` endpoints and "
                "picked one of them at random per request; here a key always reaches the same endpoint. "
                "`false` is served; ignored without `upstream-hash-by`"),
    _row("upstream-hash-by-subset-size", ROUTING, APPROXIMATED, "integer",
         "nothing: see `upstream-hash-by-subset`", parse=_int(0, 1 << 20), default="`3`, also for `0`",
         reason="no subsets (see `upstream-hash-by-subset`); ignored unless `upstream-hash-by-subset` is "
                "true"),
    _row("enable-cors", ROUTING, SERVED, BOOL,
         "CORS headers on every response of the Ingress and `OPTIONS` preflights answered 204 by NGINX",
         parse=v.go_bool, default="`false`",
         reason="`add_header ... always` instead of `more_set_headers`; a list of origins also sends "
                "`Vary: Origin`; a CORS Policy of `nginx.org/policies` wins"),
    _row("cors-allow-origin", ROUTING, SERVED,
         "`*`, or comma-separated `<scheme>://host[:port]`, `<scheme>://*.domain[:port]`, `null`",
         "`*`: `Access-Control-Allow-Origin: *`; a list: a matching `Origin` is echoed, any other gets no "
         "CORS header (and its preflight goes to the backend)", parse=cv.origins, default="`*`",
         reason="an origin ingress-nginx's parser skips is skipped with a warning; the match is anchored"),
    _row("cors-allow-methods", ROUTING, SERVED, "comma-separated methods (letters)",
         "`Access-Control-Allow-Methods`", parse=cv.methods, default=f"`{cv.DEFAULT_METHODS}`"),
    _row("cors-allow-headers", ROUTING, SERVED, "comma-separated header names (letters, digits, `-`, `_`)",
         "`Access-Control-Allow-Headers`", parse=cv.headers, default=f"`{cv.DEFAULT_HEADERS}`"),
    _row("cors-allow-credentials", ROUTING, SERVED, BOOL, "`Access-Control-Allow-Credentials: true`",
         parse=v.go_bool, default="`true` (also with the origin `*`, as ingress-nginx)"),
    _row("cors-expose-headers", ROUTING, SERVED, "comma-separated header names or `*`",
         "`Access-Control-Expose-Headers`", parse=cv.expose_headers, default="none"),
    _row("cors-max-age", ROUTING, SERVED, SECONDS, "`Access-Control-Max-Age`", parse=cv.max_age,
         default=f"`{cv.DEFAULT_MAX_AGE}`"),
    # ---------------------------------------------------------------------------------------------- snippets
    _row("configuration-snippet", SNIPPETS, SERVED, "NGINX configuration",
         "lines in every location of the Ingress (as "
         "`nginx.org/location-snippets`)", parse=parsing.parse_lines,
         sets="location_snippets", needs_snippets=True,
         reason="only with `--enable-snippets`; refused without (ingress-nginx-only content such as "
                "`more_set_headers` or Lua fails NGINX's test and rejects the Ingress)"),
    _row("server-snippet", SNIPPETS, SERVED, "NGINX configuration",
         "lines in every server of the Ingress (as `nginx.org/server-snippets`)", parse=parsing.parse_lines,
         sets="server_snippets", needs_snippets=True,
         reason="only with `--enable-snippets`; refused without"),
    _row("stream-snippet", SNIPPETS, REFUSED, "NGINX configuration", "nothing",
         reason="raw `stream` configuration has no ingressctl form (use a TransportServer)"),
    _row("modsecurity-snippet", SNIPPETS, REFUSED, "ModSecurity rules", "nothing",
         reason="no ModSecurity in ingressctl; a WAF the author believes on must not be silently off"),
    # ----------------------------------------------------------------------------------- not honoured at all
    _row("enable-modsecurity", INERT, REFUSED, BOOL, "nothing", parse=v.go_bool,
         reason="no ModSecurity in ingressctl: `true` refuses the Ingress (a WAF the author believes on), "
                "`false` is ignored"),
    _row("enable-owasp-core-rules", INERT, REFUSED, BOOL, "nothing", parse=v.go_bool,
         reason="as `enable-modsecurity`"),
    _ignored("modsecurity-transaction-id", "NGINX variable", "no ModSecurity in ingressctl (only with "
             "`enable-modsecurity`, which is refused)"),
    _row("enable-rewrite-log", INERT, TRANSLATED, BOOL, "`rewrite_log on` in every location of the Ingress",
         parse=v.go_bool, default="`false`",
         reason="the rewrite log goes to NGINX's error log at the `notice` level: it shows only with "
                "`error-log-level: notice` (or `info`, `debug`)"),
    _row("enable-access-log", INERT, TRANSLATED, BOOL, "`false`: `access_log off` in every location of the "
         "Ingress", parse=v.go_bool, default="`true`"),
    _ignored("enable-opentelemetry", BOOL,
             "per-Ingress tracing is not implemented (see the ConfigMap's otel keys)",
             v.go_bool),
    _ignored("opentelemetry-trust-incoming-span", BOOL, "as `enable-opentelemetry`", v.go_bool),
    _ignored("opentelemetry-operation-name", "text", "as `enable-opentelemetry`"),
    _ignored("enable-opentracing", BOOL, "OpenTracing (removed from ingress-nginx) is not implemented",
             v.go_bool),
    _ignored("opentracing-trust-incoming-span", BOOL, "as `enable-opentracing`", v.go_bool),
    _ignored("http2-push-preload", BOOL, "HTTP/2 server push was removed from NGINX 1.25.1", v.go_bool),
    _ignored("secure-backends", BOOL, "removed in ingress-nginx 0.21.0: use `backend-protocol: HTTPS`",
             v.go_bool),
    _ignored("grpc-backend", BOOL, "removed in ingress-nginx 0.21.0: use `backend-protocol: GRPC`",
             v.go_bool),
    _ignored("session-cookie-hash", "`sha1`, `md5`, `index`", "removed from ingress-nginx"),
    _ignored("fastcgi-index", "file name", "FastCGI backends are not supported (`backend-protocol: FCGI` is "
             "refused)"),
    _ignored("fastcgi-params-configmap", "`<namespace>/<ConfigMap>`", "as `fastcgi-index`"),
    _ignored("influxdb-measurement", "text", "removed from ingress-nginx"),
    _ignored("influxdb-port", "port", "removed from ingress-nginx"),
    _ignored("influxdb-host", "host", "removed from ingress-nginx"),
    _ignored("influxdb-server-name", "text", "removed from ingress-nginx"),
    _ignored("influxdb-enabled", BOOL, "removed from ingress-nginx"),
))
