"""ConfigMap keys and Ingress annotations: NIC's defaults, strict parsing, bad values keep the default."""

from __future__ import annotations

import pytest

from ingressctl.configs.configmaps import (
    CONFIG_MAP_KEYS,
    ConfigParams,
    StaticConfigParams,
    generate_main_config,
    parse_config_map,
)
from ingressctl.configs.parsing import parse_lb_method, parse_size, parse_time
from ingressctl.kinds.ingress.annotations import parse_annotations
from ingressctl.kinds.ingress.annotations_nginx_org import NGINX_ORG, parse_rewrites
from ingressctl.settings import NginxSettings, Settings


def test_defaults_are_nics() -> None:
    p = ConfigParams()
    assert (p.proxy_connect_timeout, p.proxy_read_timeout, p.proxy_send_timeout) == ("60s", "60s", "60s")
    assert p.client_max_body_size == "1m" and p.keepalive == 0 and p.worker_processes == "auto"
    assert p.worker_connections == 1024 and p.server_tokens == "on" and p.http2 is False
    assert p.lb_method == "random two least_conn" and p.max_fails == 1 and p.fail_timeout == "10s"
    # Deliberately not NIC's 256k per upstream: upstreams share one zone sized from their servers.
    assert p.upstream_zone_size == "" and p.ssl_redirect is True and p.redirect_to_https is False
    assert p.server_names_hash_bucket_size == 256 and p.keepalive_timeout == "75s"
    assert parse_config_map({}) == (ConfigParams(), [])
    assert parse_config_map(None) == (ConfigParams(), [])


def test_parse_config_map_values() -> None:
    params, errors = parse_config_map({
        "proxy-connect-timeout": "5s", "proxy-read-timeout": "1m30s", "client-max-body-size": "8m",
        "keepalive": "16", "worker-processes": "2", "worker-connections": "2048", "server-tokens": "False",
        "http2": "true", "lb-method": "round_robin", "log-format": "$remote_addr\n  $status  \n",
        "proxy-buffers": "8  4k", "unknown-key": "whatever", "ssl-redirect": "false",
    })
    assert errors == []
    assert params.proxy_connect_timeout == "5s" and params.proxy_read_timeout == "1m30s"
    assert params.client_max_body_size == "8m" and params.keepalive == 16
    assert params.worker_processes == "2" and params.worker_connections == 2048
    assert params.server_tokens == "off" and params.http2 is True and params.lb_method == ""
    assert params.log_format == ("$remote_addr", "$status") and params.proxy_buffers == "8 4k"
    assert params.ssl_redirect is False


@pytest.mark.parametrize("key,value", [
    ("proxy-read-timeout", "60s; evil on"), ("proxy-read-timeout", "forever"),
    ("client-max-body-size", "1 m"),
    ("client-max-body-size", "1m}"), ("keepalive", "-1"), ("keepalive", "lots"), ("worker-processes", "0"),
    ("worker-connections", "1e3"), ("worker-connections", "1"), ("http2", "yes"), ("lb-method", "hash $x;"),
    ("lb-method", "fastest"),
    ("error-log-level", "verbose"), ("default-server-return", "301 nowhere"),
    ("default-server-return", "200 $x"), ("ssl-protocols", "TLSv1.2; x"),
    ("proxy-buffers", "8"),
])
def test_bad_values_keep_the_default_and_are_reported(key: str, value: str) -> None:
    params, errors = parse_config_map({key: value, "keepalive-timeout": "30s"})
    assert len(errors) == 1 and errors[0][0] == key and errors[0][1]
    field = CONFIG_MAP_KEYS[key][0]
    assert getattr(params, field) == getattr(ConfigParams(), field)
    assert params.keepalive_timeout == "30s"  # the good key still applies


def test_non_string_values_are_reported() -> None:
    _, errors = parse_config_map({"keepalive": 5})  # type: ignore[dict-item]
    assert errors and errors[0][0] == "keepalive"


@pytest.mark.parametrize("value", ["60s", "500ms", "1m30s", "10", "1h", "2d"])
def test_times(value: str) -> None:
    assert parse_time(value) == value


@pytest.mark.parametrize("value", ["", "s", "60 s", "60x", "-1s", "60s;", "${x}"])
def test_bad_times(value: str) -> None:
    with pytest.raises(ValueError):
        parse_time(value)


def test_sizes_and_lb_methods() -> None:
    assert parse_size("0") == "0" and parse_size("10M") == "10M"
    for bad in ("1mb", "", "1.5m", "1m;"):
        with pytest.raises(ValueError):
            parse_size(bad)
    assert parse_lb_method("least_conn") == "least_conn"
    assert parse_lb_method("hash $request_uri consistent") == "hash $request_uri consistent"
    assert parse_lb_method("random  two") == "random two"
    for bad in ("hash", "hash $a x", "hash a", "least_time header"):
        with pytest.raises(ValueError):
            parse_lb_method(bad)


def test_annotation_table_and_overrides() -> None:
    assert set(NGINX_ORG.fields) >= {
        "nginx.org/proxy-connect-timeout", "nginx.org/proxy-read-timeout", "nginx.org/client-max-body-size",
        "nginx.org/redirect-to-https"}
    base = ConfigParams(proxy_read_timeout="30s")
    anns, warnings = parse_annotations({"nginx.org/proxy-connect-timeout": "3s",
                                        "nginx.org/client-max-body-size": "2m",
                                        "nginx.org/redirect-to-https": "true",
                                        "nginx.org/proxy-read-timeout": "bad value",
                                        "other/annotation": "x"}, base)
    assert anns.params.proxy_connect_timeout == "3s" and anns.params.client_max_body_size == "2m"
    assert anns.params.redirect_to_https is True and anns.params.proxy_read_timeout == "30s"
    assert warnings == []
    assert anns.errors == ('annotation nginx.org/proxy-read-timeout: invalid value "bad value": must be a '
                           'time: a number with optional units in the order y, M, w, d, h, m, s, ms (e.g. '
                           '60s, 1m30s, 500ms)',)
    same, none = parse_annotations({}, base)
    assert same.params is base and none == [] and same.errors == ()


def test_rewrites_and_service_lists() -> None:
    assert parse_rewrites("serviceName=a rewrite=/x; serviceName=b rewrite=/") == {"a": "/x", "b": "/"}
    for bad in ("serviceName=a", "serviceName=a rewrite=x", "serviceName=a rewrite=/x$1",
                "serviceName=a rewrite=/x;serviceName=a rewrite=/y", "serviceName=A rewrite=/"):
        with pytest.raises(ValueError):
            parse_rewrites(bad)
    anns, warnings = parse_annotations({"nginx.org/websocket-services": "ws, chat",
                                        "nginx.org/ssl-services": "bad name"}, ConfigParams())
    assert anns.websocket_services == {"ws", "chat"} and anns.ssl_services == frozenset()
    assert warnings == [] and len(anns.errors) == 1
    assert anns.errors[0].startswith('annotation nginx.org/ssl-services: invalid value "bad name": ')


def test_static_params_from_settings_and_main_config() -> None:
    settings = Settings(nginx=NginxSettings(http_port=8080, https_port=8443, run_dir="/r", conf_dir="/c",
                                            health_status=True, status=False))
    static = StaticConfigParams.from_settings(settings)
    assert (static.http_port, static.https_port, static.run_dir, static.conf_dir) == (8080, 8443, "/r", "/c")
    main = generate_main_config(static, ConfigParams(worker_processes="3"))
    assert main.default_http_listener_port == 8080 and main.health_status and not main.nginx_status
    assert main.worker_processes == "3" and main.run_dir == "/r"
