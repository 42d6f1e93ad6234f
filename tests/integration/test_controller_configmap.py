"""The NGINX ConfigMap through the real controller: values reach NGINX, a bad value keeps the default with a
Warning `InvalidValue` event on the ConfigMap, and every ConfigMap change costs exactly one reload."""

from __future__ import annotations

import http.client

import pytest

from tests.helpers import wait_until
from tests.integration.harness import NS, Env, rule

pytestmark = pytest.mark.integration

HOST = "cm.example.com"


def post(port: int, size: int) -> int:
    """POST `size` bytes through NGINX; the status NGINX (or the backend) answers."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", "/", body=b"x" * size, headers={"Host": HOST, "Connection": "close"})
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


def config_map(env: Env, data: dict[str, str]) -> None:
    env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nginx-config", "namespace": NS},
               "data": data})


def test_configmap_values_defaults_and_one_reload_per_change(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("cm", [rule(HOST, ("/", "web"))])
    config_map(env, {"client-max-body-size": "1k"})
    c = env.controller(env.settings(nginx_configmaps=f"{NS}/nginx-config"))
    c.wait_backend(HOST, "/", "web")

    # The ConfigMap's value is in force: a 4 KiB body is over the 1k limit.
    assert post(c.http_port, 4096) == 413
    assert post(c.http_port, 512) == 200

    # A bad value: Warning InvalidValue on the ConfigMap naming the key; that key falls back to NIC's default
    # (1m), the valid key next to it still applies, and the change costs one reload.
    c.wait_idle()
    before = c.reloads
    config_map(env, {"client-max-body-size": "lots", "server-tokens": "false"})
    event = env.wait_event("nginx-config", "InvalidValue", "client-max-body-size", kind="ConfigMap")
    assert event["type"] == "Warning" and "lots" in event["message"]
    wait_until(lambda: post(c.http_port, 4096) == 200, "the default body size after the bad value")
    c.wait_idle()
    assert c.reloads == before + 1
    server = server_header(c.http_port)
    assert server == "nginx", f"server-tokens off must hide the version, got Server: {server!r}"

    # Fixing it: one more reload, and the limit is back.
    before = c.reloads
    config_map(env, {"client-max-body-size": "2k", "server-tokens": "false"})
    wait_until(lambda: post(c.http_port, 4096) == 413, "the new body size limit")
    c.wait_idle()
    assert c.reloads == before + 1

    # Re-applying identical data renders identical bytes: no reload at all.
    before = c.reloads
    config_map(env, {"client-max-body-size": "2k", "server-tokens": "false", "unrelated-note": "x"})
    c.wait_idle()
    assert c.reloads == before
    assert post(c.http_port, 4096) == 413


def server_header(port: int) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/", headers={"Host": HOST, "Connection": "close"})
        r = conn.getresponse()
        r.read()
        return r.getheader("Server") or ""
    finally:
        conn.close()
