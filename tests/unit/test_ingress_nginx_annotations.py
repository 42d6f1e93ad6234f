"""The ingress-nginx family (`--ingress-nginx-compat`): every key ingress-nginx's users write is a row with a
status and reason; each translated annotation takes ingress-nginx's value syntax and validation and renders
what ingress-nginx rendered; nginx.org wins over it; nothing is silent; NIC-native Ingresses are unchanged."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.kinds.ingress.annotation_table import Handling, Status
from ingressctl.kinds.ingress.annotations_ingress_nginx import INGRESS_NGINX, PREFIX
from ingressctl.kinds.ingress.config import AnnotationError, generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.kinds.ingress.ingress_nginx.docs import blocks
from ingressctl.kinds.ingress.ingress_nginx.translate import effective_status, translate
from ingressctl.kinds.ingress.ingress_nginx.validation import ingress_nginx_errors
from ingressctl.kinds.ingress.validation import validate_ingress

N = PREFIX
STATIC = StaticConfigParams(run_dir="/run/ic", conf_dir="/etc/ic", ingress_nginx_compat=True)
OFF = dataclasses.replace(STATIC, ingress_nginx_compat=False)
TEMPLATES = TemplateExecutor()

# Every key of the reference's ranked table (1a), its "seen in one repo" list and table 1b.
REFERENCE_KEYS = (
    "backend-protocol", "proxy-body-size", "ssl-redirect", "rewrite-target", "configuration-snippet",
    "whitelist-source-range", "proxy-read-timeout", "proxy-send-timeout", "proxy-buffer-size", "use-regex",
    "force-ssl-redirect", "ssl-passthrough", "server-snippet", "auth-signin", "auth-url",
    "auth-response-headers", "proxy-buffering", "proxy-ssl-verify", "secure-backends",
    "proxy-connect-timeout", "auth-method", "auth-snippet", "auth-secret", "affinity", "enable-cors",
    "custom-http-errors", "canary", "canary-weight", "auth-tls-secret", "client-body-buffer-size",
    "auth-type", "proxy-buffers-number", "proxy-request-buffering", "session-cookie-expires",
    "session-cookie-max-age", "session-cookie-name", "upstream-hash-by", "upstream-vhost",
    "enable-rewrite-log", "from-to-www-redirect", "app-root", "auth-realm", "auth-secret-type",
    "auth-tls-pass-certificate-to-upstream", "auth-tls-verify-client", "canary-by-header",
    "canary-by-header-value", "canary-weight-total", "cors-allow-headers", "cors-allow-origin",
    "grpc-backend", "permanent-redirect", "proxy-http-version", "proxy-redirect-from", "proxy-redirect-to",
    "proxy-ssl-secret", "service-upstream", "limit-rps", "limit-rpm", "limit-connections",
    "limit-burst-multiplier", "limit-whitelist", "limit-allowlist", "limit-rate", "limit-rate-after",
    "cors-allow-methods", "cors-allow-credentials", "cors-expose-headers", "cors-max-age",
    "denylist-source-range", "allowlist-source-range", "session-cookie-path", "session-cookie-domain",
    "session-cookie-samesite", "session-cookie-secure", "affinity-mode", "temporal-redirect",
    "temporal-redirect-code", "permanent-redirect-code", "default-backend", "server-alias",
    "x-forwarded-prefix", "proxy-next-upstream", "proxy-next-upstream-timeout", "proxy-next-upstream-tries",
    "custom-headers", "load-balance", "auth-tls-verify-depth", "auth-tls-error-page", "auth-tls-match-cn",
    "auth-proxy-set-headers", "auth-cache-key", "auth-cache-duration", "auth-keepalive",
    "auth-keepalive-requests", "auth-keepalive-timeout", "auth-keepalive-share-vars",
    "auth-always-set-cookie", "auth-request-redirect", "enable-global-auth", "proxy-cookie-path",
    "proxy-cookie-domain", "proxy-max-temp-file-size", "proxy-busy-buffers-size", "preserve-trailing-slash",
    "use-port-in-redirects", "satisfy", "enable-access-log", "ssl-ciphers", "ssl-prefer-server-ciphers",
    "mirror-target", "mirror-host", "mirror-request-body", "enable-modsecurity", "enable-owasp-core-rules",
    "modsecurity-snippet", "modsecurity-transaction-id", "stream-snippet", "fastcgi-index",
    "fastcgi-params-configmap", "enable-opentelemetry", "opentelemetry-trust-incoming-span",
    "opentelemetry-operation-name", "http2-push-preload",
)

# Rows that say what they will be and are not implemented yet (none left: auth-proxy-set-headers and
# custom-headers read their ConfigMaps now).
PENDING: set[str] = set()


def ingress(annotations: dict[str, str], *, name: str = "app", tls: bool = False,
            default_backend: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"ingressClassName": "nginx", "rules": [{"host": "app.example.com",
    "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
        {"path": "/api", "pathType": "Prefix",
         "backend": {"service": {"name": "api", "port": {"number": 80}}}}]}}]}
    if tls:
        spec["tls"] = [{"hosts": ["app.example.com"], "secretName": "app-tls"}]
    if default_backend:
        spec["defaultBackend"] = {"service": {"name": "errors", "port": {"number": 80}}}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "shop", "annotations": annotations}, "spec": spec}


def render(annotations: dict[str, str], static: StaticConfigParams = STATIC,
config: ConfigParams | None = None,
           **kw: Any) -> tuple[str, list[str]]:
    from ingressctl.secret_types import SecretReference

    ing = ingress(annotations, **kw)
    ex = IngressEx(ing, {"app.example.com": True}, {
        backend_key("web", 80): ["10.0.0.1:8080"], backend_key("api", 80): ["10.0.0.2:8080"],
        backend_key("errors", 80): ["10.0.0.3:8080"]},
        secret_refs={"app-tls": SecretReference("shop/app-tls", secret_type="kubernetes.io/tls",
                                                 path="/etc/ic/secrets/tls")})
    cfg, warnings = generate_nginx_config(ex, static, config or ConfigParams())
    return TEMPLATES.execute_ingress_template(cfg), warnings


# ---------------------------------------------------------------------------------------------- the table

def test_every_key_users_write_is_a_row_with_a_status_and_docs() -> None:
    rows = {k.removeprefix(PREFIX) for k in INGRESS_NGINX.by_key}
    assert sorted(set(REFERENCE_KEYS) - rows) == []
    for row in INGRESS_NGINX.rows:
        assert row.key.startswith(PREFIX) and row.syntax and row.effect, row.key
        if effective_status(row) is not Status.SERVED and row.status is not Status.TRANSLATED:
            assert row.reason, row.key  # anything not honoured as written says why
    assert len(blocks(INGRESS_NGINX)) == len(INGRESS_NGINX.sections)


def test_rows_not_implemented_yet_say_what_they_will_be_and_fail_closed_where_it_matters() -> None:
    pending = {r.key.removeprefix(PREFIX): r for r in INGRESS_NGINX.rows
               if r.handling is Handling.NONE and r.status not in (Status.IGNORED, Status.REFUSED)}
    assert set(pending) == PENDING
    for name in ("auth-proxy-set-headers", "custom-headers"):  # served now, from their ConfigMaps
        row = INGRESS_NGINX.by_key[PREFIX + name]
        assert row.handling is Handling.FAMILY and effective_status(row) is Status.TRANSLATED, name
    for row in pending.values():
        assert effective_status(row) is (Status.REFUSED if row.fail_closed else Status.IGNORED), row.key
    assert all(r.reason.startswith("Not yet implemented") for r in pending.values())


def test_every_key_gets_a_status_and_unknown_keys_are_named() -> None:
    tr = translate({N + "enable-opentelemetry": "true", N + "no-such-thing": "x", "example.com/other": "y"})
    assert [(e.key, e.status) for e in tr.report] == [(N + "enable-opentelemetry", Status.IGNORED),
                                                      (N + "no-such-thing", Status.IGNORED)]
    assert tr.problems == ()
    (warning,) = tr.warnings
    assert N + "no-such-thing ignored (not an ingress-nginx annotation ingressctl knows)" in warning
    assert N + "enable-opentelemetry ignored" in warning


# ------------------------------------------------------------------------------------------- translations

@pytest.mark.parametrize(("annotations", "lines"), [
    ({N + "proxy-body-size": "8M"}, ["client_max_body_size 8m;"]),
    ({N + "proxy-body-size": "1024b"}, ["client_max_body_size 1024;"]),
    ({N + "proxy-body-size": "0"}, ["client_max_body_size 0;"]),
    ({N + "proxy-connect-timeout": "5", N + "proxy-read-timeout": "120", N + "proxy-send-timeout": "30"},
     ["proxy_connect_timeout 5s;", "proxy_read_timeout 120s;", "proxy_send_timeout 30s;"]),
    ({N + "proxy-buffer-size": "16k"}, ["proxy_buffer_size 16k;", "proxy_buffers 4 16k;"]),
    ({N + "proxy-buffer-size": "1M", N + "proxy-buffers-number": "6"},
     ["proxy_buffer_size 1m;", "proxy_buffers 6 1m;"]),
    ({N + "proxy-buffers-number": "8"}, ["proxy_buffer_size 4k;", "proxy_buffers 8 4k;"]),
    ({N + "proxy-buffering": "off"}, ["proxy_buffering off;"]),
    ({N + "proxy-request-buffering": "off"}, ["proxy_request_buffering off;"]),
    ({N + "proxy-max-temp-file-size": "0"}, ["proxy_max_temp_file_size 0;"]),
    ({N + "proxy-buffer-size": "8k", N + "proxy-busy-buffers-size": "16k"}, ["proxy_busy_buffers_size 16k;"]),
    ({N + "client-body-buffer-size": "64k"}, ["client_body_buffer_size 64k;"]),
    ({N + "proxy-next-upstream": "error timeout http_502", N + "proxy-next-upstream-timeout": "10",
      N + "proxy-next-upstream-tries": "3"},
     ["proxy_next_upstream error timeout http_502;", "proxy_next_upstream_timeout 10s;",
      "proxy_next_upstream_tries 3;"]),
    ({N + "proxy-redirect-from": "http://internal/", N + "proxy-redirect-to": "https://$host/"},
     ['proxy_redirect "http://internal/" "https://$host/";']),
    ({N + "proxy-redirect-from": "off"}, ['proxy_redirect "off";']),
    ({N + "upstream-vhost": "backend.internal"}, ['proxy_set_header Host "backend.internal";']),
    ({N + "upstream-hash-by": "$request_uri"}, ["hash $request_uri consistent;"]),
    ({N + "backend-protocol": "HTTPS"}, ["proxy_pass https://shop-app-app.example.com-web-80;",
                                         "proxy_pass https://shop-app-app.example.com-api-80;"]),
    ({N + "app-root": "/app"}, ['return 302 "$scheme://$http_host/app";']),
    ({N + "permanent-redirect": "https://new.example.com$request_uri"},
     ['return 301 "https://new.example.com$request_uri";']),
    ({N + "permanent-redirect": "https://new.example.com", N + "permanent-redirect-code": "308"},
     ['return 308 "https://new.example.com";']),
    ({N + "permanent-redirect": "https://new.example.com", N + "permanent-redirect-code": "200"},
     ['return 301 "https://new.example.com";']),
    ({N + "temporal-redirect": "https://t.example.com", N + "permanent-redirect": "https://p.example.com"},
     ['return 302 "https://t.example.com";']),
    ({N + "temporal-redirect": "https://t.example.com", N + "temporal-redirect-code": "307"},
     ['return 307 "https://t.example.com";']),
    ({N + "whitelist-source-range": "10.0.0.0/8, 192.168.1.1"},
     ["allow 10.0.0.0/8;", "allow 192.168.1.1;", "deny all;"]),
    ({N + "denylist-source-range": "10.1.2.3/32", N + "allowlist-source-range": "10.0.0.0/8"},
     ["deny 10.1.2.3/32;", "allow 10.0.0.0/8;", "deny all;"]),
    ({N + "limit-rps": "5"}, ['limit_req_zone "${binary_remote_addr}" zone=shop/app:5m rate=5r/s;',
                              "limit_req zone=shop/app burst=25 nodelay;", "limit_req_status 503;"]),
    ({N + "limit-rpm": "60", N + "limit-burst-multiplier": "2"},
     ["rate=60r/m;", "limit_req zone=shop/app burst=120 nodelay;"]),
    ({N + "limit-connections": "3"}, ['limit_conn_zone "$binary_remote_addr" zone=shop/app/conn:5m;',
                                      "limit_conn shop/app/conn 3;", "limit_conn_status 503;"]),
    ({N + "limit-rps": "5", N + "limit-whitelist": "127.0.0.1"},
     ["geo $ingressctl_limit_exempt_", "    127.0.0.1 1;", '    0 "${binary_remote_addr}";', '    1 "";',
      'limit_req_zone "$ingressctl_limit_key_']),
    ({N + "service-upstream": "true"}, []),   # the builder's endpoint (kind.py), nothing in the template
    ({N + "ssl-ciphers": "HIGH:!aNULL", N + "ssl-prefer-server-ciphers": "true"}, []),  # TLS servers only
    ({N + "custom-http-errors": "404,503"}, []),  # without spec.defaultBackend: nothing (and a warning)
])
def test_each_annotation_renders_what_ingress_nginx_rendered(annotations: dict[str, str],
                                                             lines: list[str]) -> None:
    text, _ = render(annotations)
    for line in lines:
        assert line in text, (line, text)
    plain, _ = render({})
    assert text != plain or not lines
    off, _ = render(annotations, OFF)
    assert off == plain  # without the flag the family is not read


def test_buffer_sizes_in_g_are_written_in_m() -> None:
    tr = translate({N + "proxy-buffer-size": "1g", N + "proxy-max-temp-file-size": "2G"})
    assert tr.overrides["proxy_buffer_size"] == "1024m" and tr.overrides["proxy_buffers"] == "4 1024m"
    assert tr.overrides["proxy_max_temp_file_size"] == "2048m"
    assert translate({N + "proxy-body-size": "2g"}).overrides["client_max_body_size"] == "2g"


def test_tls_redirects_answer_308_as_ingress_nginx() -> None:
    text, _ = render({N + "ssl-redirect": "true"}, tls=True)
    assert "return 308 https://$host:443$request_uri;" in text
    text, _ = render({N + "proxy-body-size": "1m"}, tls=True)  # any ingress-nginx annotation: its default
    assert "return 308 https://$host:443$request_uri;" in text
    text, _ = render({}, tls=True)
    assert "return 301 https://$host:443$request_uri;" in text  # a NIC-native Ingress keeps NIC's 301
    text, _ = render({N + "ssl-redirect": "false"}, tls=True)
    assert "if ($scheme = http)" not in text
    text, _ = render({N + "ssl-redirect": "true"}, tls=True,
                     config=dataclasses.replace(ConfigParams(), http_redirect_code=302))
    assert "return 302 https://" in text  # the ConfigMap's own code wins over ingress-nginx's default
    text, w = render({N + "ssl-redirect": "true", "nginx.org/http-redirect-code": "307"}, tls=True)
    assert "return 307 https://" in text and not any("wins" in x for x in w)


def test_force_ssl_redirect_redirects_hosts_without_a_certificate() -> None:
    text, _ = render({N + "force-ssl-redirect": "true"})
    assert "if ($scheme = http) {\n        return 308 https://$host:443$request_uri;" in text
    text, _ = render({N + "force-ssl-redirect": "false"})
    assert "if ($scheme = http)" not in text


def test_custom_http_errors_go_to_the_default_backend() -> None:
    text, _ = render({N + "custom-http-errors": "404,503"}, default_backend=True)
    assert "error_page 404 503 @custom_default_backend;" in text
    _, warnings = render({N + "custom-http-errors": "404"})
    assert any("spec.defaultBackend is not" in w for w in warnings)


def test_grpc_needs_http2_as_nginx_org_grpc_services() -> None:
    text, warnings = render({N + "backend-protocol": "GRPC"})
    assert "grpc_pass" not in text
    assert any("backend-protocol (gRPC) requires HTTP2" in w for w in warnings)
    http2 = dataclasses.replace(ConfigParams(), http2=True)
    text, _ = render({N + "backend-protocol": "GRPCS", N + "proxy-read-timeout": "9"}, config=http2, tls=True)
    assert "grpc_pass grpcs://shop-app-app.example.com-web-80;" in text
    assert "grpc_read_timeout 9s;" in text


def test_snippets_only_with_enable_snippets() -> None:
    snippets = dataclasses.replace(STATIC, enable_snippets=True)
    text, _ = render({N + "configuration-snippet": "add_header X-Snip yes;",
                      N + "server-snippet": "add_header X-Server yes;"}, snippets)
    assert "add_header X-Snip yes;" in text and "add_header X-Server yes;" in text
    with pytest.raises(AnnotationError, match="snippets are not enabled"):
        render({N + "configuration-snippet": "add_header X-Snip yes;"})


# ------------------------------------------------------------------------------------------- validation

@pytest.mark.parametrize(("name", "value", "detail"), [
    ("proxy-body-size", "8 MB", "must be a size"),
    ("proxy-body-size", "1t", "must be a size"),
    ("proxy-read-timeout", "60s", "must be an integer number of seconds"),
    ("proxy-connect-timeout", "-1", "must be an integer number of seconds"),
    ("proxy-buffering", "true", "must be 'on' or 'off'"),
    ("proxy-buffers-number", "0", "must be between 1"),
    ("backend-protocol", "SOAP", "must be one of"),
    ("ssl-redirect", "yes", "must be a boolean"),
    ("whitelist-source-range", "10.0.0.0/8,not-an-ip", "'not-an-ip' is not an IP address or CIDR"),
    ("denylist-source-range", "300.0.0.1", "is not an IP address or CIDR"),
    ("permanent-redirect", "ftp://x", "must be an http:// or https:// URL"),
    ("permanent-redirect", 'https://x/"; deny all; "', "must be an http:// or https:// URL"),
    ("temporal-redirect", "https://x$no_such_var", "unknown NGINX variable"),
    ("upstream-vhost", "a b", "must be a host name"),
    ("upstream-hash-by", "$request_uri consistent; x", "must be NGINX variables"),
    ("upstream-hash-by", "$nope", "unknown NGINX variable"),
    ("limit-rps", "ten", "must be an integer"),
    ("limit-connections", "-1", "must be between 0"),
    ("proxy-next-upstream", "error; timeout", "invalid value"),
    ("custom-http-errors", "404,abc", "must be a comma-separated list of HTTP status codes"),
    ("app-root", "/a b", ""),
    ("ssl-ciphers", "HIGH; deny", ""),
])
def test_values_ingress_nginx_refuses_reject_the_ingress(name: str, value: str, detail: str) -> None:
    errors = [str(e) for e in validate_ingress(ingress({N + name: value}), ingress_nginx_compat=True)]
    assert len(errors) == 1 and errors[0].startswith(f"annotations.{N}{name}: Invalid value: "), errors
    assert detail in errors[0]
    assert validate_ingress(ingress({N + name: value})) == []  # compat off: not read
    with pytest.raises(AnnotationError):
        render({N + name: value})


@pytest.mark.parametrize(("annotations", "detail"), [
    ({N + "backend-protocol": "FCGI"}, "backend-protocol FCGI has no ingressctl form"),
    ({N + "backend-protocol": "auto_http"}, "backend-protocol AUTO_HTTP has no ingressctl form"),
    ({N + "enable-modsecurity": "true"}, "no ModSecurity in ingressctl"),
    ({N + "server-alias": "other.example.com"}, "extra `server_name`s could capture hosts"),
    ({N + "stream-snippet": "server {}"}, "raw `stream` configuration"),
    ({N + "configuration-snippet": "x;"}, "snippets are not enabled"),
])
def test_refused_annotations_reject_the_ingress_naming_them(annotations: dict[str, str], detail: str) -> None:
    errors = [str(e) for e in validate_ingress(ingress(annotations), ingress_nginx_compat=True)]
    key = next(iter(annotations))
    assert errors == [f"annotations.{key}: Forbidden: not supported by ingressctl: " + errors[0].split(
        "not supported by ingressctl: ", 1)[1]]
    assert detail in errors[0]


def test_off_values_of_refused_annotations_are_ignored() -> None:
    assert ingress_nginx_errors({N + "enable-modsecurity": "false"}) == []
    (warning,) = translate({N + "enable-modsecurity": "false"}).warnings
    assert "enable-modsecurity ignored (off" in warning
    assert ingress_nginx_errors({N + "backend-protocol": "http"}) == []


def test_empty_values_are_ignored_as_ingress_nginx_skips_them() -> None:
    tr = translate({N + "proxy-body-size": "", N + "limit-rps": ""})
    assert tr.problems == () and [e.status for e in tr.report] == [Status.IGNORED, Status.IGNORED]
    assert "client_max_body_size" not in tr.overrides


# ------------------------------------------------------------------------------------------- precedence

def test_nginx_org_wins_over_ingress_nginx_with_a_warning_naming_both() -> None:
    text, warnings = render({N + "proxy-body-size": "8m", "nginx.org/client-max-body-size": "2m"})
    assert "client_max_body_size 2m;" in text and "8m" not in text
    assert (f"annotation nginx.org/client-max-body-size wins over {N}proxy-body-size (both set "
            f"client_max_body_size); {N}proxy-body-size is ignored") in warnings
    # A rate of nginx.org/limit-req-rate drops all of limit-rps (its burst, status and zone size too).
    text, warnings = render({N + "limit-rps": "5", "nginx.org/limit-req-rate": "1r/s"})
    assert "rate=1r/s" in text and "burst=25" not in text and "limit_req_status 429;" in text
    assert any(f"wins over {N}limit-rps" in w for w in warnings)
    text, warnings = render({N + "backend-protocol": "HTTPS", "nginx.org/ssl-services": "api"})
    assert "proxy_pass https://shop-app-app.example.com-api-80;" in text
    assert "proxy_pass http://shop-app-app.example.com-web-80;" in text
    assert any(f"nginx.org/ssl-services wins over {N}backend-protocol" in w for w in warnings)


def test_an_ingress_without_ingress_nginx_annotations_is_rendered_as_without_the_flag() -> None:
    for given in ({}, {"nginx.org/proxy-read-timeout": "5s",
    "nginx.org/rewrites": "serviceName=web rewrite=/"},
                  {"example.com/x": "y"}):
        assert render(given) == render(given, OFF)
