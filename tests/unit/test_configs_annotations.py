"""Every nginx.org/* annotation family as rendered text, NIC's validation messages for bad values, the
ConfigMap keys (defaults, errors, HSTS all-or-nothing), and the strict parsers behind them. Real NGINX
behaviour for the same annotations is in tests/integration/test_annotations.py."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from ingressctl.configs import parsing
from ingressctl.configs.config import (
    UPSTREAM_ZONE,
    ZONE_BYTES_PER_SERVER,
    ZONE_BYTES_PER_UPSTREAM,
    shared_zone_size,
)
from ingressctl.configs.configmaps import (
    CONFIG_MAP_KEYS,
    ConfigParams,
    StaticConfigParams,
    generate_main_config,
    parse_config_map,
)
from ingressctl.configs.parsing import size_bytes
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.kinds.ingress.annotation_table import Handling
from ingressctl.kinds.ingress.annotations import (
    MASTER_DENYLIST,
    MINION_DENYLIST,
    MINION_INHERITANCE_LIST,
    check_annotations,
    master_annotations,
    minion_annotations,
    parse_annotations,
)
from ingressctl.kinds.ingress.annotations_nginx_org import NGINX_ORG
from ingressctl.kinds.ingress.config import AnnotationError, generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.kinds.ingress.validation import validate_ingress
from ingressctl.secret_types import SecretReference
from ingressctl.validation import aggregate_message
from tests.unit.test_configs_ingress import block, ingress, path, rule

STATIC = StaticConfigParams(run_dir="/run/ic", conf_dir="/etc/ic", secrets_dir="/etc/ic/secrets")
TEMPLATES = TemplateExecutor()
HOST = "cafe.example.com"


def cafe(annotations: dict[str, str], *, tls: bool = False, paths: list[dict[str, Any]] | None = None,
         refs: dict[str, SecretReference] | None = None) -> IngressEx:
    ing = ingress("cafe", annotations=annotations,
                  rules=[rule(HOST, *(paths or [path("/tea", "tea"), path("/coffee", "coffee")]))],
                  tls=[{"hosts": [HOST], "secretName": "tls"}] if tls else None)
    secret_refs = {"tls": SecretReference("default/tls", "/etc/ic/secrets/default-tls",
                                          secret_type="kubernetes.io/tls")} if tls else {}
    secret_refs.update(refs or {})
    return IngressEx(ing, {HOST: True}, {backend_key("tea", 80): ["10.0.0.1:80", "10.0.0.2:80"],
                                         backend_key("coffee", 80): ["10.0.1.1:80"]}, secret_refs=secret_refs)


def render(ex: IngressEx, config: ConfigParams | None = None, static: StaticConfigParams = STATIC,
           replicas: int = 1) -> tuple[str, list[str]]:
    cfg, warnings = generate_nginx_config(ex, static, config or ConfigParams(), replicas=replicas)
    return TEMPLATES.execute_ingress_template(cfg), warnings


def valid(annotations: dict[str, str], **kw: Any) -> None:
    """The annotations pass the controller's validation (so the render tests see what a user can send)."""
    errors = validate_ingress(cafe(annotations, **kw).ingress, snippets_enabled=True)
    assert errors == [], aggregate_message(errors)


# ------------------------------------------------------------------------------------------- annotations

def test_every_validated_oss_annotation_is_rendered() -> None:
    """Every open-source annotation NIC validates is read by something: the parser, the Ingress's Policies
    (nginx.org/policies) or the model (nginx.org/mergeable-ingress-type)."""
    oss = [r for r in NGINX_ORG.rows if r.checks and not r.needs_plus]
    assert len(oss) > 40
    assert [r.key for r in oss if r.handling is Handling.NONE] == []
    assert {r.key for r in oss if r.handling in (Handling.POLICIES, Handling.MERGEABLE)} == {
        "nginx.org/policies", "nginx.org/mergeable-ingress-type"}


def test_proxy_timeouts_body_size_and_buffers() -> None:
    anns = {"nginx.org/proxy-connect-timeout": "5s", "nginx.org/proxy-read-timeout": "1h 30m",
            "nginx.org/proxy-send-timeout": "10", "nginx.org/client-max-body-size": "2g",
            "nginx.org/proxy-buffering": "False", "nginx.org/proxy-buffers": "16 8k",
            "nginx.org/proxy-buffer-size": "8k", "nginx.org/proxy-max-temp-file-size": "0"}
    valid(anns)
    text, warnings = render(cafe(anns))
    assert warnings == []
    loc = block(text, "location = /tea")
    for line in ("proxy_connect_timeout 5s;", "proxy_read_timeout 1h30m;", "proxy_send_timeout 10;",
                 "client_max_body_size 2g;", "proxy_buffering off;", "proxy_buffers 16 8k;",
                 "proxy_buffer_size 8k;", "proxy_max_temp_file_size 0;"):
        assert f"        {line}\n" in loc, line


def test_buffer_combinations_nginx_would_refuse_are_dropped_with_a_warning() -> None:
    # proxy_busy_buffers_size (2 x 16k) would exceed 7 x 4k: NGINX refuses it, so the buffer settings go.
    text, warnings = render(cafe({"nginx.org/proxy-buffers": "8 4k", "nginx.org/proxy-buffer-size": "16k"}))
    assert len(warnings) == 1 and "NGINX would refuse them" in warnings[0]
    assert "proxy_buffers" not in text and "proxy_buffer_size" not in text
    assert parsing.buffers_problem("8 4k", "", "") == ""
    assert parsing.buffers_problem("2 1k", "", "") != ""
    assert parsing.buffers_problem("8 4k", "", "1k") != ""
    assert parsing.buffers_problem("8 4k", "", "0") == ""


def test_server_level_headers_tokens_and_redirects() -> None:
    anns = {"nginx.org/proxy-hide-headers": "X-Powered-By, Server", "nginx.org/proxy-pass-headers": "X-Accel",
            "nginx.org/server-tokens": "false", "nginx.org/redirect-to-https": "true",
            "ingress.kubernetes.io/ssl-redirect": "false"}
    valid(anns, tls=True)
    text, _ = render(cafe(anns, tls=True))
    server = block(text, "\nserver")
    assert "    proxy_hide_header X-Powered-By;\n    proxy_hide_header Server;\n" in server
    assert "    proxy_pass_header X-Accel;\n" in server and "    server_tokens off;\n" in server
    assert "if ($http_x_forwarded_proto = 'http') {\n        return 301 https://$host$request_uri;" in server
    assert "if ($scheme = http)" not in server  # ssl-redirect false
    assert "proxy_set_header X-Forwarded-Proto https;" in block(server, "location = /tea")


def test_proxy_set_headers() -> None:
    anns = {"nginx.org/proxy-set-headers": 'X-Client-Id, X-Const: a "quoted"; {value}, X-Empty:'}
    valid(anns)
    loc = block(render(cafe(anns))[0], "location = /tea")
    assert "proxy_set_header X-Client-Id $http_x_client_id;" in loc
    assert 'proxy_set_header X-Const "a \\"quoted\\"; {value}";' in loc
    assert 'proxy_set_header X-Empty "";' in loc
    with pytest.raises(AnnotationError, match=r"invalid value.*invalid character in value: \$"):
        render(cafe({"nginx.org/proxy-set-headers": "X-A: $host"}))


@pytest.mark.parametrize("anns,tls,expected", [
    ({"nginx.org/hsts": "true"}, True, 'set $hsts_header_val "max-age=2592000; preload";'),
    ({"nginx.org/hsts": "true", "nginx.org/hsts-max-age": "100", "nginx.org/hsts-include-subdomains": "true"},
     True, 'set $hsts_header_val "max-age=100; includeSubDomains; preload";'),
    ({"nginx.org/hsts": "true", "nginx.org/hsts-behind-proxy": "true"}, False,
     "if ($http_x_forwarded_proto = 'https') {"),
    ({"nginx.org/hsts": "true"}, False, None),  # no TLS and not behind a proxy: no HSTS
    ({"nginx.org/hsts": "false", "nginx.org/hsts-max-age": "5"}, True, None),
])
def test_hsts(anns: dict[str, str], tls: bool, expected: str | None) -> None:
    valid(anns, tls=tls)
    text, _ = render(cafe(anns, tls=tls))
    if expected is None:
        assert "Strict-Transport-Security" not in text
    else:
        assert expected in text
        assert 'add_header Strict-Transport-Security "$hsts_header_val" always;' in text
        assert "proxy_hide_header Strict-Transport-Security;" in text


def test_hsts_errors_apply_none_of_the_hsts_annotations() -> None:
    anns, _ = parse_annotations({"nginx.org/hsts": "true", "nginx.org/hsts-max-age": "ten"}, ConfigParams())
    assert anns.params.hsts is False and len(anns.errors) == 1
    anns, warnings = parse_annotations({"nginx.org/hsts-max-age": "10"}, ConfigParams())
    assert anns.errors == () and anns.params.hsts_max_age == 2592000
    assert warnings == ["annotation nginx.org/hsts-max-age is ignored: nginx.org/hsts is not set"]


def test_listen_ports() -> None:
    anns = {"nginx.org/listen-ports": "8081,8082", "nginx.org/listen-ports-ssl": "8443"}
    valid(anns, tls=True)
    server = block(render(cafe(anns, tls=True))[0], "\nserver")
    assert re.findall(r"listen (\S+?)(?: ssl)?;", server) == [
        "8081", "[::]:8081", "8082", "[::]:8082", "8443", "[::]:8443"]
    assert "return 301 https://$host:8443$request_uri;" in server
    with pytest.raises(AnnotationError, match="are also TLS ports"):
        render(cafe({"nginx.org/listen-ports": "443"}, tls=True))


def test_upstream_annotations() -> None:
    anns = {"nginx.org/lb-method": "hash $request_uri consistent", "nginx.org/keepalive": "16",
            "nginx.org/max-fails": "3", "nginx.org/max-conns": "10", "nginx.org/fail-timeout": "30s",
            "nginx.org/upstream-zone-size": "512k"}
    valid(anns)
    text, _ = render(cafe(anns))
    tea = block(text, "upstream default-cafe-cafe.example.com-tea-80")
    assert "    zone ingressctl-upstreams;\n    hash $request_uri consistent;\n" in tea
    assert "server 10.0.0.1:80 max_fails=3 fail_timeout=30s max_conns=10;" in tea
    assert "keepalive 16;" in tea
    assert 'proxy_set_header Connection "";' in block(text, "location = /tea")
    text, _ = render(cafe({"nginx.org/lb-method": "round_robin", "nginx.org/upstream-zone-size": "0"}))
    tea = block(text, "upstream default-cafe-cafe.example.com-tea-80")
    assert "zone" not in tea and "random" not in tea and "hash" not in tea


def test_use_cluster_ip_renders_the_one_address_the_controller_resolved() -> None:
    anns = {"nginx.org/use-cluster-ip": "true"}
    valid(anns)
    ex = cafe(anns)
    ex.endpoints = {backend_key("tea", 80): ["10.96.0.10:80"], backend_key("coffee", 80): ["10.96.0.11:80"]}
    tea = block(render(ex)[0], "upstream default-cafe-cafe.example.com-tea-80")
    assert re.findall(r"server (\S+) ", tea) == ["10.96.0.10:80"]


def test_per_service_annotations() -> None:
    anns = {"nginx.org/rewrites": "serviceName=tea rewrite=/v2;serviceName=coffee rewrite=/",
            "nginx.org/websocket-services": "coffee", "nginx.org/ssl-services": "tea",
            "nginx.org/grpc-services": "coffee"}
    valid(anns)
    text, warnings = render(cafe(anns))
    assert warnings == ["annotation nginx.org/grpc-services requires HTTP2 (http2 in the ConfigMap); ignored"]
    assert "proxy_pass https://default-cafe-cafe.example.com-tea-80/v2;" in block(text, "location = /tea")
    assert "proxy_pass https://default-cafe-cafe.example.com-tea-80/v2/;" in block(text, "location /tea/")
    coffee = block(text, "location = /coffee")
    assert "proxy_set_header Upgrade $http_upgrade;" in coffee
    assert "proxy_set_header Connection $connection_upgrade;" in coffee
    assert "proxy_pass http://default-cafe-cafe.example.com-coffee-80/;" in coffee
    text, warnings = render(cafe(anns), ConfigParams(http2=True))
    coffee = block(text, "location = /coffee")
    assert warnings == [] and "grpc_pass grpc://default-cafe-cafe.example.com-coffee-80/;" in coffee
    assert "proxy_pass" not in coffee and "grpc_set_header Host $host;" in coffee
    # All paths gRPC and TLS: no plain-text listener (NIC's GRPCOnly).
    grpc_all = {"nginx.org/grpc-services": "tea,coffee"}
    text, _ = render(cafe(grpc_all, tls=True), ConfigParams(http2=True))
    assert "listen 80;" not in text and "listen 443 ssl http2;" in text and "if ($scheme = http)" not in text


def test_basic_auth() -> None:
    anns = {"nginx.org/basic-auth-secret": "users", "nginx.org/basic-auth-realm": 'Cafe \\"staff\\"'}
    valid(anns)
    good = SecretReference("default/users", "/etc/ic/secrets/default-users", secret_type="nginx.org/htpasswd")
    text, warnings = render(cafe(anns, refs={"users": good}))
    server = block(text, "\nserver")
    assert warnings == []
    # The realm goes into a quoted string of WWW-Authenticate as written: its quotes stay escaped there.
    assert ('auth_basic "Cafe \\\\\\"staff\\\\\\"";\n'
            '    auth_basic_user_file /etc/ic/secrets/default-users;') in server
    assert "auth_basic" not in block(server, "location = /tea")  # a regular Ingress: server level
    # Missing, invalid or wrong type: a warning, and the file path is still configured (requests fail closed).
    for ref, message in [
        (None, "Basic auth secret users is invalid: secret doesn't exist or of an unsupported type"),
        (SecretReference("default/users", error="htpasswd secret is invalid: no htpasswd key"),
         "Basic auth secret users is invalid: htpasswd secret is invalid: no htpasswd key"),
        (SecretReference("default/users", "/etc/ic/secrets/default-users", secret_type="kubernetes.io/tls"),
         "Basic auth secret users is of a wrong type 'kubernetes.io/tls', must be 'nginx.org/htpasswd'"),
    ]:
        text, warnings = render(cafe(anns, refs={"users": ref} if ref else {}))
        assert warnings == [message]
        assert "auth_basic_user_file /etc/ic/secrets/default-users;" in text


def test_path_regex() -> None:
    paths = [path("/tea/[A-Z0-9]+$", "tea"), path("/coffee", "coffee", path_type="Exact")]
    for value, modifier in (("case_sensitive", "~"), ("case_insensitive", "~*")):
        anns = {"nginx.org/path-regex": value}
        valid(anns, paths=paths)
        text, _ = render(cafe(anns, paths=paths))
        assert f'location {modifier} "^/tea/[A-Z0-9]+$" {{' in text
        assert f'location {modifier} "^/coffee$" {{' in text  # Exact is anchored at both ends
        assert "location / {\n        try_files \"\" =404;" in text
    text, _ = render(cafe({"nginx.org/path-regex": "exact"}, paths=[path("/tea", "tea")]))
    assert "location = /tea {" in text and "location /tea/" not in text


def test_rate_limiting() -> None:
    anns = {"nginx.org/limit-req-rate": "10r/s", "nginx.org/limit-req-key": "${binary_remote_addr}$uri",
            "nginx.org/limit-req-zone-size": "1m", "nginx.org/limit-req-burst": "5",
            "nginx.org/limit-req-delay": "2", "nginx.org/limit-req-dry-run": "true",
            "nginx.org/limit-req-log-level": "warn", "nginx.org/limit-req-reject-code": "503"}
    text, _ = render(cafe(anns))
    assert text.count("limit_req_zone") == 1
    assert 'limit_req_zone "${binary_remote_addr}$uri" zone=default/cafe:1m rate=10r/s;' in text
    loc = block(text, "location = /tea")
    assert "limit_req zone=default/cafe burst=5 delay=2;\n        limit_req_dry_run on;\n" in loc
    assert "limit_req_log_level warn;" in loc and "limit_req_status 503;" in loc
    text, _ = render(cafe({"nginx.org/limit-req-rate": "30r/m", "nginx.org/limit-req-no-delay": "true",
                           "nginx.org/limit-req-delay": "3"}))
    assert 'limit_req_zone "${binary_remote_addr}" zone=default/cafe:10m rate=30r/m;' in text  # NIC defaults
    loc = block(text, "location = /tea")
    assert "limit_req zone=default/cafe nodelay;" in loc and "limit_req_status 429;" in loc
    assert "limit_req_log_level error;" in loc and "dry_run" not in loc
    # limit-req-scale divides the rate among the controller replicas.
    text, _ = render(cafe({"nginx.org/limit-req-rate": "10r/s", "nginx.org/limit-req-scale": "true"}),
                     replicas=4)
    assert "rate=2r/s;" in text
    assert parsing.scale_rate("1r/s", 2) == "30r/m" and parsing.scale_rate("1r/m", 5) == "1r/m"


@pytest.mark.parametrize("name,value,detail", [
    ("nginx.org/limit-req-rate", "10", "must be a rate such as 10r/s or 30r/m"),
    ("nginx.org/limit-req-rate", "0r/s", "must be a rate such as 10r/s or 30r/m"),
    ("nginx.org/limit-req-key", "$binary_remote_addr zone=x:1m rate=1r/s; evil", "must be NGINX variables"),
    ("nginx.org/limit-req-key", "remote_addr", "must be NGINX variables"),
    ("nginx.org/limit-req-zone-size", "16k", "must be a size of at least 32k"),
    ("nginx.org/limit-req-burst", "-1", "must be between 0 and"),
    ("nginx.org/limit-req-reject-code", "200", "must be between 400 and 599"),
    ("nginx.org/limit-req-log-level", "debug", "must be one of info, notice, warn, error"),
    ("nginx.org/limit-req-dry-run", "yes", "must be a boolean"),
    ("nginx.org/proxy-read-timeout", "5s5s", "must be a time"),
    ("nginx.org/proxy-buffer-size", "1g", "must be a size"),
    ("nginx.org/upstream-zone-size", "1k", "must be a size of at least 32k (or 0 for no zone)"),
    ("nginx.org/lb-method", "hash a;b", "invalid load balancing method"),
    ("nginx.org/basic-auth-realm", "a\nb", "must not contain any '$', control characters"),
    ("nginx.org/basic-auth-realm", 'a"b', "must have all '\"' escaped"),
    ("nginx.org/proxy-set-headers", "X-A: a\nb", "invalid character in value: a control character"),
])
def test_invalid_values_reject_the_ingress_naming_the_annotation_and_value(name: str, value: str,
                                                                        detail: str) -> None:
    anns = {name: value}
    if name == "nginx.org/basic-auth-realm":
        anns["nginx.org/basic-auth-secret"] = "users"
    errors = check_annotations(anns)
    assert len(errors) == 1
    prefix = f"annotation {name}: invalid value {json.dumps(value)}: "
    assert errors[0].startswith(prefix) and detail in errors[0], errors[0]
    with pytest.raises(AnnotationError) as e:
        render(cafe(anns))
    assert str(e.value) == errors[0]


def test_snippets_only_with_enable_snippets() -> None:
    anns = {"nginx.org/server-snippets": "add_header X-S 1;",
            "nginx.org/location-snippets": "add_header X-L 2;"}
    text, warnings = render(cafe(anns))
    assert "add_header" not in text and len(warnings) == 2
    assert all("snippets are not enabled" in w for w in warnings)
    text, warnings = render(cafe(anns), static=StaticConfigParams(run_dir="/run/ic", enable_snippets=True))
    assert warnings == [] and "    add_header X-S 1;\n" in text and "        add_header X-L 2;\n" in text


# --------------------------------------------------------------------------------------- mergeable lists

def test_mergeable_lists_are_nics() -> None:
    assert "nginx.org/rewrites" in MASTER_DENYLIST and "nginx.org/use-cluster-ip" in MASTER_DENYLIST
    assert "nginx.org/hsts-behind-proxy" not in MINION_DENYLIST  # NIC's list omits it
    assert {"nginx.org/server-snippets", "nginx.org/listen-ports",
            "nginx.org/server-tokens"} <= MINION_DENYLIST
    assert "nginx.org/limit-req-scale" in MINION_INHERITANCE_LIST
    assert "nginx.org/path-regex" not in MINION_INHERITANCE_LIST
    assert "nginx.org/basic-auth-secret" not in MINION_INHERITANCE_LIST
    kept, removed = master_annotations({"nginx.org/rewrites": "x", "nginx.org/hsts": "true"})
    assert kept == {"nginx.org/hsts": "true"} and removed == ["nginx.org/rewrites"]
    master = {"nginx.org/proxy-read-timeout": "5s", "nginx.org/hsts": "true",
              "nginx.org/lb-method": "ip_hash", "nginx.org/proxy-set-headers": "X-A: master, X-B: master"}
    minion, removed = minion_annotations({"nginx.org/lb-method": "least_conn",
                                          "nginx.org/server-tokens": "off",
                                          "nginx.org/proxy-set-headers": "X-B: minion"}, master)
    assert removed == ["nginx.org/server-tokens"]
    assert minion == {"nginx.org/lb-method": "least_conn", "nginx.org/proxy-read-timeout": "5s",
                      "nginx.org/proxy-set-headers": "X-A: master,X-B: minion"}


# ---------------------------------------------------------------------------------------------- ConfigMap

def test_config_map_defaults_for_new_keys() -> None:
    p = ConfigParams()
    assert (p.hsts, p.hsts_max_age, p.hsts_include_subdomains, p.hsts_behind_proxy) == (False, 2592000, False,
                                                                                          False)
    assert (p.limit_req_key, p.limit_req_zone_size, p.limit_req_log_level, p.limit_req_reject_code) == (
        "${binary_remote_addr}", "10m", "error", 429)
    assert p.proxy_protocol is False and p.real_ip_header == "" and p.access_log == ""


def test_config_map_new_keys() -> None:
    params, errors = parse_config_map({
        "proxy-hide-headers": "X-A,X-B", "proxy-pass-headers": "X-C", "hsts": "true", "hsts-max-age": "10",
        "hsts-include-subdomains": "true", "hsts-behind-proxy": "true", "proxy-protocol": "true",
        "real-ip-header": "proxy_protocol", "set-real-ip-from": "10.0.0.0/8, 192.168.1.1",
        "real-ip-recursive": "true", "access-log": "syslog:server=localhost:514 main",
        "log-format-escaping": "json", "ssl-ciphers": "HIGH:!aNULL", "ssl-prefer-server-ciphers": "true",
        "worker-cpu-affinity": "auto", "main-snippets": "worker_priority 0;", "http-snippets": "gzip on;",
        "default-server-return": "302 https://example.com/", "upstream-zone-size": "0",
    })
    assert errors == []
    assert params.proxy_hide_headers == ("X-A", "X-B") and params.proxy_pass_headers == ("X-C",)
    assert (params.hsts, params.hsts_max_age, params.hsts_include_subdomains, params.hsts_behind_proxy) == (
        True, 10, True, True)
    assert params.set_real_ip_from == ("10.0.0.0/8", "192.168.1.1") and params.real_ip_recursive
    assert params.access_log == "syslog:server=localhost:514 main" and params.log_format_escaping == "json"
    assert params.default_server_return == "302 https://example.com/" and params.upstream_zone_size == "0"
    text, _ = render(cafe({}), params)
    server = block(text, "\nserver")
    assert "listen 80 proxy_protocol;" in server and "real_ip_header proxy_protocol;" in server
    assert "set_real_ip_from 10.0.0.0/8;" in server and "real_ip_recursive on;" in server
    assert "proxy_hide_header X-A;" in server and "proxy_pass_header X-C;" in server
    assert "if ($http_x_forwarded_proto = 'https')" in server  # HSTS behind a proxy


def test_config_map_hsts_errors_keep_all_hsts_defaults() -> None:
    params, errors = parse_config_map({"hsts": "true", "hsts-max-age": "-"})
    assert params.hsts is False and {k for k, _ in errors} == {"hsts-max-age", "hsts"}


@pytest.mark.parametrize("key,value", [
    ("access-log", "/var/log/nginx/access.log"), ("access-log", "syslog:server=x; evil"),
    ("set-real-ip-from", "10.0.0.0/33"), ("real-ip-header", "X Forwarded"), ("ssl-ciphers", "HIGH; evil"),
    ("worker-cpu-affinity", "2"), ("log-format-escaping", "xml"), ("proxy-hide-headers", "X-A;"),
    ("ssl-dhparam-file", "not a pem"), ("client-max-body-size", "1t"), ("upstream-zone-size", "1k"),
])
def test_config_map_bad_new_values(key: str, value: str) -> None:
    params, errors = parse_config_map({key: value})
    assert [k for k, _ in errors] == [key]
    assert errors[0][1].startswith("invalid value ")
    field = CONFIG_MAP_KEYS[key][0]
    assert getattr(params, field) == getattr(ConfigParams(), field)


def test_main_config_renders_the_new_keys() -> None:
    params, errors = parse_config_map({
        "access-log": "syslog:server=127.0.0.1:514", "log-format-escaping": "json", "ssl-ciphers": "HIGH",
        "ssl-prefer-server-ciphers": "true", "worker-cpu-affinity": "auto",
        "main-snippets": "worker_priority 0;", "http-snippets": "gzip on;",
        "default-server-return": "302 https://example.com/", "proxy-protocol": "1",
    })
    assert errors == []
    main = generate_main_config(STATIC, params, dhparam_path="/etc/ic/dh.pem")
    text = TEMPLATES.execute_main_template(main)
    for line in ("worker_cpu_affinity auto;", "worker_priority 0;", "    gzip on;",
                 "access_log syslog:server=127.0.0.1:514;", "ssl_ciphers HIGH;",
                 "ssl_prefer_server_ciphers on;",
                 "ssl_dhparam /etc/ic/dh.pem;", 'return 302 "https://example.com/";',
                 "listen 80 default_server proxy_protocol;"):
        assert line in text, line
    assert "log_format main escape=json" in text


# ------------------------------------------------------------------------------------------------ parsers

@pytest.mark.parametrize("value,expected", [("60s", "60s"), ("1h 30m", "1h30m"), ("10", "10"),
                                            ("1s500ms", "1s500ms"), (" 5m ", "5m")])
def test_time(value: str, expected: str) -> None:
    assert parsing.parse_time(value) == expected


@pytest.mark.parametrize("value", ["5s5s", "500ms1s", "1m1h", "60 s", "", "s", "1x", "1h;"])
def test_bad_time(value: str) -> None:
    with pytest.raises(ValueError):
        parsing.parse_time(value)


def test_sizes_offsets_and_zones() -> None:
    assert parsing.parse_offset("2g") == "2g" and parsing.parse_size("512k") == "512k"
    for bad in ("2g", "1t", "1 k"):
        with pytest.raises(ValueError):
            parsing.parse_size(bad)
    assert parsing.parse_zone_size("32k") == "32k" and parsing.parse_zone_size("0", allow_zero=True) == "0"
    with pytest.raises(ValueError):
        parsing.parse_zone_size("0")
    assert parsing.parse_default_server_return("404") == "404"
    assert parsing.parse_default_server_return("200 ok") == "200 ok"
    for bad in ("301 ftp://x", "200 $host", "99"):
        with pytest.raises(ValueError):
            parsing.parse_default_server_return(bad)


def test_upstream_zone_reservations() -> None:
    """Upstreams share one zone; each reserves what its servers need, or its explicit size if that is more,
    and `0` keeps it out."""
    cfg, _ = generate_nginx_config(cafe({}), STATIC, ConfigParams())
    tea = next(u for u in cfg.upstreams if u.name.endswith("-tea-80"))
    assert tea.zone == UPSTREAM_ZONE
    assert tea.zone_bytes() == ZONE_BYTES_PER_UPSTREAM + ZONE_BYTES_PER_SERVER * len(tea.servers)
    cfg, _ = generate_nginx_config(cafe({"nginx.org/upstream-zone-size": "512k"}), STATIC, ConfigParams())
    assert {u.zone_bytes() for u in cfg.upstreams} == {512 * 1024}
    cfg, _ = generate_nginx_config(cafe({"nginx.org/upstream-zone-size": "0"}), STATIC, ConfigParams())
    assert {(u.zone, u.zone_bytes()) for u in cfg.upstreams} == {("", 0)}


@pytest.mark.parametrize(("reserved", "size"), [
    (0, "1m"), (1, "1m"), (1 << 20, "1m"), ((1 << 20) + 1, "2m"), (5 << 20, "5m"), ((5 << 20) + 1, "6m"),
    (20 << 20, "20m"), (30 << 20, "32m"), (33 << 20, "40m"), (2500 << 20, "2560m"),
])
def test_shared_zone_size_steps(reserved: int, size: str) -> None:
    assert shared_zone_size(reserved) == size
    assert size_bytes(size) >= reserved and size_bytes(size) <= max(1 << 20, reserved * 1.25 + (1 << 20))
