"""ingress-nginx's ConfigMap keys with `--ingress-nginx-compat` (kinds/ingress/ingress_nginx/configmap.py):
translated onto ingressctl's keys with ingress-nginx's value syntax, ingressctl's keys winning, and a message
for every key not honoured in full; nothing changes for a ConfigMap without them."""

from __future__ import annotations

from ingressctl.configs.configmaps import ConfigParams, parse_config_map
from ingressctl.kinds.ingress.ingress_nginx.configmap import (
    INGRESS_NGINX_CONFIG_MAP_KEYS,
    translate_config_map,
    with_ingress_nginx_keys,
)

PARSE = with_ingress_nginx_keys(parse_config_map)

# The keys the issue names (item 3), each handled.
NAMED = ("use-forwarded-headers", "proxy-body-size", "ssl-redirect", "hsts", "hsts-max-age",
         "hsts-include-subdomains", "hsts-preload", "log-format-upstream", "proxy-connect-timeout",
         "proxy-read-timeout", "proxy-send-timeout", "proxy-buffer-size", "proxy-buffering", "keep-alive",
         "keep-alive-requests", "worker-processes", "allow-snippet-annotations", "enable-real-ip",
         "forwarded-for-header", "server-tokens", "client-body-buffer-size", "client-header-buffer-size",
         "use-gzip", "gzip-level", "gzip-types")


def test_every_named_key_is_in_the_table_with_a_status() -> None:
    names = {k.name for k in INGRESS_NGINX_CONFIG_MAP_KEYS}
    assert sorted(set(NAMED) - names) == []
    assert len(names) == len(INGRESS_NGINX_CONFIG_MAP_KEYS)
    assert all(k.reason for k in INGRESS_NGINX_CONFIG_MAP_KEYS if k.status != "translated")


def test_keys_are_translated_with_ingress_nginx_syntax() -> None:
    params, errors = PARSE({
        "proxy-body-size": "8M", "proxy-connect-timeout": "5", "proxy-buffering": "off",
        "proxy-buffer-size": "16k", "proxy-buffers-number": "8", "keep-alive": "10",
        "keep-alive-requests": "50",
        "server-tokens": "false", "use-http2": "true", "upstream-keepalive-connections": "32",
        "proxy-request-buffering": "off", "proxy-next-upstream-tries": "3", "max-worker-connections": "2048",
        "hsts": "true", "hsts-max-age": "31536000", "load-balance": "round_robin",
        "hide-headers": "X-Powered-By",
        "log-format-upstream": "$remote_addr - $request $status", "log-format-escape-json": "true"})
    assert errors == []
    assert (params.client_max_body_size, params.proxy_connect_timeout, params.proxy_buffering) == ("8m", "5",
                                                                                                   False)
    assert (params.proxy_buffer_size, params.proxy_buffers) == ("16k", "8 16k")
    assert (params.keepalive_timeout, params.keepalive_requests, params.server_tokens) == ("10s", 50, "off")
    assert (params.http2, params.keepalive, params.worker_connections) == (True, 32, 2048)
    assert (params.proxy_request_buffering, params.proxy_next_upstream_tries) == ("off", 3)
    assert (params.hsts, params.hsts_max_age, params.lb_method) == (True, 31536000, "")
    assert params.proxy_hide_headers == ("X-Powered-By",)
    assert params.log_format == ("$remote_addr - $request $status",) and params.log_format_escaping == "json"


def test_forwarded_headers_take_the_client_address_from_the_header() -> None:
    params, errors = PARSE({"use-forwarded-headers": "true", "proxy-real-ip-cidr": "10.0.0.0/8"})
    assert (params.real_ip_header, params.set_real_ip_from, params.real_ip_recursive) == (
        "X-Forwarded-For", ("10.0.0.0/8",), True)
    assert [k for k, _ in errors] == ["use-forwarded-headers"]  # approximated: named
    params, errors = PARSE({"enable-real-ip": "true", "forwarded-for-header": "X-Real-IP"})
    assert (params.real_ip_header, params.set_real_ip_from) == ("X-Real-IP", ("0.0.0.0/0", "::/0"))
    assert errors == []
    params, errors = PARSE({"use-forwarded-headers": "false", "forwarded-for-header": "X-Real-IP"})
    assert params.real_ip_header == "" and errors == []


def test_ingressctl_keys_win_and_what_is_not_honoured_is_named() -> None:
    params, errors = PARSE({"proxy-body-size": "8m", "client-max-body-size": "2m", "use-gzip": "true",
                            "hsts-preload": "true", "allow-snippet-annotations": "true"})
    assert params.client_max_body_size == "2m"
    assert dict(errors) == {
        "proxy-body-size": "client-max-body-size is set too and wins; proxy-body-size is ignored",
        "use-gzip": "ingress-nginx key ignored: gzip compression is not an ingressctl setting",
        "hsts-preload": "ingress-nginx key approximated: ingressctl's HSTS header always carries `preload`",
        "allow-snippet-annotations": "snippet annotations are off by --enable-snippets; "
                                     "allow-snippet-annotations: true does not change that"}
    assert translate_config_map({"allow-snippet-annotations": "true"}, snippets_enabled=True).messages == []


def test_invalid_values_keep_the_default_and_name_the_key_written() -> None:
    params, errors = PARSE({"log-format-upstream": "$remote_addr $proxy_upstream_name", "keep-alive": "soon",
                            "proxy-next-upstream": "error; evil"})
    assert params.log_format == () and params.keepalive_timeout == ConfigParams().keepalive_timeout
    assert params.proxy_next_upstream == ""
    assert [k for k, _ in errors] == ["keep-alive", "log-format-upstream", "proxy-next-upstream"]
    assert "unknown NGINX variable(s): $proxy_upstream_name" in dict(errors)["log-format-upstream"]


def test_a_configmap_without_ingress_nginx_keys_is_read_as_without_the_flag() -> None:
    for data in (None, {}, {"proxy-read-timeout": "5s", "hsts": "true"}, {"not-a-key": "x"}):
        assert PARSE(data) == parse_config_map(data)
