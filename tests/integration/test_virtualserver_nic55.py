"""NIC 5.5's VirtualServer additions end to end (devcluster, the real controller and NGINX, real
backends), with manifests shaped like NIC 5.5's example directories: basic-configuration-vsr,
foreign-namespace-upstreams, path-matching, vsr-multiple-regex-routes (with its duplicate-paths case as
published, through kubectl) and vsr-route-selector-crossnamespace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingressctl.kinds.virtualserver.kind import VIRTUALSERVERROUTES
from tests.helpers import wait_until
from tests.integration.harness import Controller, Env
from tests.integration.vs_helpers import (
    apply_vs,
    apply_vsr,
    install_crds,
    virtual_server,
    virtual_server_route,
    vsr_status,
    wait_vs_state,
)
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration

CAFE = "cafe.example.com"


def _namespaces(env: Env, *names: str) -> None:
    for ns in names:
        env.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})


def _backend(env: Env, name: str, namespace: str) -> None:
    env.service(name, namespace=namespace)
    env.endpoints(name, [env.backend(name)], namespace=namespace)


def _labelled(obj: dict[str, Any], **labels: str) -> dict[str, Any]:
    obj["metadata"]["labels"] = labels
    return obj


def _conf(c: Controller, name: str) -> str:
    return Path(c.settings.nginx.conf_dir, "conf.d", name).read_text()


def _ret(body: str) -> dict[str, Any]:
    return {"return": {"code": 200, "type": "text/plain", "body": body}}


def test_basic_configuration_vsr_by_name_and_by_selector(env: Env) -> None:
    """basic-configuration-vsr: /coffee is delegated by name, /tea by routeSelector."""
    install_crds(env)
    _namespaces(env, "cafe")
    _backend(env, "tea-svc", "cafe")
    _backend(env, "coffee-svc", "cafe")
    apply_vs(env, virtual_server("cafe", CAFE, namespace="cafe", routes=[
        {"path": "/tea", "routeSelector": {"matchLabels": {"app": "tea"}}},
        {"path": "/coffee", "route": "coffee"}]))
    apply_vsr(env, _labelled(virtual_server_route(
        "tea", CAFE, "cafe", upstreams=[{"name": "tea", "service": "tea-svc", "port": 80}],
        subroutes=[{"path": "/tea", "action": {"pass": "tea"}}]), app="tea"))
    apply_vsr(env, virtual_server_route(
        "coffee", CAFE, "cafe", upstreams=[{"name": "coffee", "service": "coffee-svc", "port": 80}],
        subroutes=[{"path": "/coffee", "action": {"pass": "coffee"}}]))
    c = env.controller()
    c.wait_backend(CAFE, "/tea", "tea-svc")
    c.wait_backend(CAFE, "/coffee", "coffee-svc")
    st = wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated", namespace="cafe")
    assert st["message"] == "Configuration for cafe/cafe was added or updated "
    wait_until(lambda: vsr_status(env, "tea", "cafe").get("state") == "Valid", "the selected VSR is Valid")
    env.wait_event("tea", "AddedOrUpdated", "Configuration for cafe/tea was added or updated",
                   namespace="cafe", kind="VirtualServerRoute")


def test_foreign_namespace_upstreams_follow_their_endpoints(env: Env) -> None:
    """foreign-namespace-upstreams: a VirtualServer in `cafe` uses Services of `tea` and `coffee`; their
    endpoint changes re-render it (NIC 5.5.4 misses them)."""
    install_crds(env)
    _namespaces(env, "cafe", "tea", "coffee")
    _backend(env, "tea-svc", "tea")
    _backend(env, "coffee-svc", "coffee")
    apply_vs(env, virtual_server("cafe", CAFE, namespace="cafe", upstreams=[
        {"name": "tea", "service": "tea/tea-svc", "port": 80},
        {"name": "coffee", "service": "coffee/coffee-svc", "port": 80}], routes=[
        {"path": "/tea", "action": {"pass": "tea"}}, {"path": "/coffee", "action": {"pass": "coffee"}}]))
    c = env.controller()
    c.wait_backend(CAFE, "/tea", "tea-svc")
    assert c.get(CAFE, "/coffee").backend == "coffee-svc"
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated", namespace="cafe")
    conf = _conf(c, "vs_cafe_cafe.conf")
    assert 'set $service "tea-svc";' in conf and "upstream vs_cafe_cafe_tea {" in conf
    # An endpoint change in the foreign namespace reaches NGINX at once.
    env.endpoints("tea-svc", [env.backend("tea-svc-2")], namespace="tea")
    c.wait_backend(CAFE, "/tea", "tea-svc-2")
    env.endpoints("tea-svc", [], namespace="tea")
    c.wait_status(CAFE, "/tea", 502)
    assert c.get(CAFE, "/coffee").backend == "coffee-svc"
    # The same Service name in the VirtualServer's own namespace is another Service.
    _backend(env, "tea-svc", "cafe")
    c.wait_idle()
    assert c.get(CAFE, "/tea").status == 502


def test_path_matching_with_every_modifier(env: Env) -> None:
    """path-matching: `=`, `^~`, `~`, `~*` and prefix routes (NGINX's precedence), some delegated to VSRs, all
    answered by return actions; `= /x` and `=/x` are the same path."""
    install_crds(env)
    _namespaces(env, "paths")
    apply_vs(env, virtual_server("paths", CAFE, namespace="paths", upstreams=[], routes=[
        {"path": "= /exact", "action": _ret("exact")},
        {"path": "^~ /static", "action": _ret("longest-prefix")},
        {"path": "~ \\.png$", "action": _ret("regex")},
        {"path": "~* \\.jpg$", "action": _ret("regex-case-insensitive")},
        {"path": "/", "action": _ret("prefix")},
        {"path": "=/vsr-exact", "route": "exact-vsr"},
        {"path": "^~/vsr", "route": "prefix-vsr"},
    ]))
    apply_vsr(env, virtual_server_route("exact-vsr", CAFE, "paths", upstreams=[], subroutes=[
        {"path": "= /vsr-exact", "action": _ret("vsr-exact")}]))
    apply_vsr(env, virtual_server_route("prefix-vsr", CAFE, "paths", upstreams=[], subroutes=[
        {"path": "^~/vsr/a", "action": _ret("vsr-longest-prefix")}]))
    c = env.controller()
    wait_until(lambda: c.get(CAFE, "/vsr/a/x.png").body == "vsr-longest-prefix", "the VSR is served")
    expected = {
        "/exact": "exact", "/exact/more": "prefix", "/static/a.png": "longest-prefix",
        "/img/a.png": "regex", "/img/a.PNG": "prefix", "/img/a.JPG": "regex-case-insensitive",
        "/other": "prefix", "/vsr-exact": "vsr-exact", "/vsr-exact/x.png": "regex",
    }
    assert {p: c.get(CAFE, p).body for p in expected} == expected
    wait_vs_state(env, "paths", "Valid", "AddedOrUpdated", namespace="paths")
    conf = _conf(c, "vs_paths_paths.conf")
    for line in ('location = "/exact" {', 'location ^~ "/static" {', 'location ~ "\\\\.png$" {'):
        assert line in conf, line
    # A second route with the same normalised path is a duplicate: the VirtualServer is rejected.
    apply_vs(env, virtual_server("paths", CAFE, namespace="paths", upstreams=[], routes=[
        {"path": "= /exact", "action": _ret("exact")}, {"path": "=/exact", "action": _ret("again")}]))
    st = wait_vs_state(env, "paths", "Invalid", "Rejected", namespace="paths")
    assert st["message"] == ("VirtualServer paths/paths was rejected with error: spec.routes[1].path: "
                             'Duplicate value: "=/exact"')


def test_vsr_multiple_regex_routes(env: Env) -> None:
    """vsr-multiple-regex-routes: two regex routes share one VSR whose subroutes are exactly their paths; VSRs
    with a missing, an extra or a duplicate subroute are not served."""
    install_crds(env)
    _namespaces(env, "regex")
    _backend(env, "drinks-svc", "regex")
    ups = [{"name": "drinks", "service": "drinks-svc", "port": 80}]
    tea, coffee = "~ ^/tea/[a-z]+$", "~* ^/coffee/[0-9]+$"
    apply_vs(env, virtual_server("cafe", CAFE, namespace="regex", routes=[
        {"path": tea, "route": "drinks"}, {"path": coffee, "route": "drinks"},
        {"path": "~ ^/juice/[a-z]+$", "route": "juice"}, {"path": "~ ^/milk/[a-z]+$", "route": "milk"},
        {"path": "~ ^/water$", "route": "water"}]))
    apply_vsr(env, virtual_server_route("drinks", CAFE, "regex", upstreams=ups, subroutes=[
        {"path": tea, "action": {"pass": "drinks"}},
        {"path": coffee, "action": {"proxy": {"upstream": "drinks", "rewritePath": "/beans"}}}]))
    # juice: a subroute for a path no route references (extra); milk: the referenced path is missing.
    apply_vsr(env, virtual_server_route("juice", CAFE, "regex", upstreams=ups, subroutes=[
        {"path": "~ ^/juice/[a-z]+$", "action": _ret("juice")},
        {"path": "~ ^/juice/x$", "action": _ret("x")}]))
    apply_vsr(env, virtual_server_route("milk", CAFE, "regex", upstreams=ups, subroutes=[
        {"path": "~ ^/milk/[0-9]+$", "action": _ret("milk")}]))
    # water: the same path twice in one VSR is a validation error of the VSR itself.
    apply_vsr(env, virtual_server_route("water", CAFE, "regex", upstreams=ups, subroutes=[
        {"path": "~ ^/water$", "action": _ret("a")}, {"path": "~^/water$", "action": _ret("b")}]))
    c = env.controller()
    c.wait_backend(CAFE, "/tea/green", "drinks-svc")
    assert c.get(CAFE, "/tea/green").body == f"drinks-svc GET {CAFE}/tea/green\n"
    assert c.get(CAFE, "/COFFEE/12").body == f"drinks-svc GET {CAFE}/beans\n"
    assert c.get(CAFE, "/tea/Green").status == 404
    for path in ("/juice/orange", "/milk/oat", "/water"):
        assert c.get(CAFE, path).status == 404, path
    st = wait_vs_state(env, "cafe", "Warning", "AddedOrUpdatedWithWarning", namespace="regex")
    assert "VirtualServerRoute regex/juice is invalid: spec.subroutes[1].path" in st["message"]
    assert "VirtualServerRoute regex/milk is invalid: spec.subroutes: Required value" in st["message"]
    assert "VirtualServerRoute regex/water doesn't exist or invalid" in st["message"]
    wait_until(lambda: vsr_status(env, "water", "regex").get("reason") == "Rejected", "the VSR is rejected")
    assert vsr_status(env, "water", "regex")["message"] == (
        'VirtualServerRoute regex/water was rejected with error: spec.subroutes[1].path: Duplicate value: '
        '"~^/water$"')
    assert vsr_status(env, "drinks", "regex")["state"] == "Valid"


def test_vsr_route_selector_across_namespaces_follows_labels(env: Env) -> None:
    """vsr-route-selector-crossnamespace: VSRs in `tea` and `coffee` attach to the VirtualServer in `cafe` by
    their labels; a label change attaches or detaches one at once."""
    install_crds(env)
    _namespaces(env, "cafe", "tea", "coffee")
    _backend(env, "tea-svc", "tea")
    _backend(env, "coffee-svc", "coffee")
    apply_vs(env, virtual_server("cafe", CAFE, namespace="cafe", routes=[
        {"path": "/tea", "routeSelector": {"matchLabels": {"app": "tea"}}},
        {"path": "/coffee", "routeSelector": {"matchLabels": {"app": "coffee"}}},
        {"path": "/", "action": _ret("home")}]))

    def vsr(name: str, **labels: str) -> dict[str, Any]:
        return _labelled(virtual_server_route(
            name, CAFE, name, upstreams=[{"name": name, "service": f"{name}-svc", "port": 80}],
            subroutes=[{"path": f"/{name}", "action": {"pass": name}}]), **labels)

    apply_vsr(env, vsr("tea", app="tea"))
    apply_vsr(env, vsr("coffee", app="espresso"))
    c = env.controller()
    c.wait_backend(CAFE, "/tea", "tea-svc")
    assert c.get(CAFE, "/coffee").body == "home"            # no VSR matches its selector yet
    env.wait_event("coffee", "Ignored", "VirtualServer cafe/cafe ignores VirtualServerRoute",
                   namespace="coffee", kind="VirtualServerRoute")
    # Relabelled: attached; the other one relabelled away: detached.
    cur = env.kube.get(VIRTUALSERVERROUTES, "coffee", "coffee")
    cur["metadata"]["labels"] = {"app": "coffee"}
    env.kube.update(VIRTUALSERVERROUTES, "coffee", "coffee", cur)
    c.wait_backend(CAFE, "/coffee", "coffee-svc")
    cur = env.kube.get(VIRTUALSERVERROUTES, "tea", "tea")
    cur["metadata"]["labels"] = {"app": "none"}
    env.kube.update(VIRTUALSERVERROUTES, "tea", "tea", cur)
    wait_until(lambda: c.get(CAFE, "/tea").body == "home", "/tea no longer delegated")
    wait_until(lambda: vsr_status(env, "tea", "tea").get("reason") == "Ignored", "the detached VSR's status")
    assert vsr_status(env, "coffee", "coffee")["state"] == "Valid"


def test_upstream_buffer_fields_reach_nginx(env: Env) -> None:
    install_crds(env)
    _namespaces(env, "buf")
    _backend(env, "web", "buf")
    apply_vs(env, virtual_server("buf", CAFE, namespace="buf", upstreams=[
        {"name": "web", "service": "web", "port": 80, "buffers": {"number": 8, "size": "8k"},
         "buffer-size": "8k", "busy-buffers-size": "16k", "client-body-buffer-size": "64k"}],
        routes=[{"path": "/", "action": {"pass": "web"}}]))
    c = env.controller()
    c.wait_backend(CAFE, "/", "web")
    conf = _conf(c, "vs_buf_buf.conf")
    assert "proxy_busy_buffers_size 16k;" in conf and "client_body_buffer_size 64k;" in conf
    wait_vs_state(env, "buf", "Valid", "AddedOrUpdated", namespace="buf")
    # A combination NGINX refuses is left out with a warning, never a failed reload.
    apply_vs(env, virtual_server("buf", CAFE, namespace="buf", upstreams=[
        {"name": "web", "service": "web", "port": 80, "buffer-size": "8k", "busy-buffers-size": "1k"}],
        routes=[{"path": "/", "action": {"pass": "web"}}]))
    st = wait_vs_state(env, "buf", "Warning", "AddedOrUpdatedWithWarning", namespace="buf")
    assert ("the proxy buffers of upstream vs_buf_buf_web are ignored (NGINX would refuse them: "
            in st["message"])
    assert "proxy_busy_buffers_size" not in _conf(c, "vs_buf_buf.conf")
    assert c.get(CAFE, "/").backend == "web"


GATEWAY = "api-gateway.example.com"
# vsr-multiple-regex-routes' virtual-server.yaml and vsr-api-duplicate-paths.yaml (one file, as published
# apart from the `---` that joins them): two regex routes share vsr-api, whose subroutes repeat a path.
DUPLICATE_PATHS = f"""\
apiVersion: k8s.nginx.org/v1
kind: VirtualServer
metadata:
  name: api-gateway
spec:
  host: {GATEWAY}
  routes:
  - path: /health
    action:
      return:
        code: 200
        type: text/plain
        body: "OK\\n"
  - path: "~/api/v1"
    route: vsr-api
  - path: "~/api/v2"
    route: vsr-api
---
apiVersion: k8s.nginx.org/v1
kind: VirtualServerRoute
metadata:
  name: vsr-api
spec:
  host: {GATEWAY}
  subroutes:
  - path: "~/api/v1"
    action:
      return:
        code: 200
        type: text/plain
        body: "API v1\\n"
  # "~ /api/v1" normalises to the same path as "~/api/v1" above.
  - path: "~ /api/v1"
    action:
      return:
        code: 200
        type: text/plain
        body: 'API v1 duplicate\\n'
  - path: "~/api/v2"
    action:
      return:
        code: 200
        type: text/plain
        body: "API v2\\n"
"""


def test_an_invalid_vsr_shared_by_regex_routes_is_reported_once(env: Env, kubectl: Kubectl) -> None:
    """vsr-multiple-regex-routes, case 3: the VSR is Rejected (NIC's Duplicate value), and the VirtualServer's
    warning names it once, not once per regex route that references it; /health keeps serving."""
    install_crds(env)
    path = Path(env.tmp) / "api-gateway.yaml"
    path.write_text(DUPLICATE_PATHS)
    out = kubectl.run("apply", "-n", "default", "-f", str(path))
    assert out.returncode == 0, out.stderr
    c = env.controller()
    wait_until(lambda: c.get(GATEWAY, "/health").body == "OK\n", "/health served")
    st = wait_vs_state(env, "api-gateway", "Warning", "AddedOrUpdatedWithWarning", namespace="default")
    assert st["message"].count("VirtualServerRoute default/vsr-api doesn't exist or invalid") == 1, st
    wait_until(lambda: vsr_status(env, "vsr-api", "default").get("reason") == "Rejected", "VSR rejected")
    assert vsr_status(env, "vsr-api", "default")["message"] == (
        "VirtualServerRoute default/vsr-api was rejected with error: "
        'spec.subroutes[1].path: Duplicate value: "~ /api/v1"')
    event = env.wait_event("api-gateway", "AddedOrUpdatedWithWarning", "vsr-api", namespace="default",
                           kind="VirtualServer")
    assert event["message"].count("doesn't exist or invalid") == 1
    assert c.get(GATEWAY, "/api/v1").status == 404
