"""VirtualServer features beyond routing, end to end: error pages, NGINX Plus fields (accepted with a
Warning), Policy references (500 until Policies are served), snippets gated by --enable-snippets, the
resource-count metric, and the flag that turns custom resources off."""

from __future__ import annotations

import pytest

from tests.helpers import wait_until
from tests.integration.harness import NS, Env
from tests.integration.test_metrics_controller import C, metrics_port, scrape, value
from tests.integration.vs_helpers import apply_vs, install_crds, virtual_server, wait_vs_state

pytestmark = pytest.mark.integration

HOST = "shop.example.com"


def _env(env: Env) -> None:
    install_crds(env)
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.service("down")     # a Service without endpoints: its upstream answers 502


def test_error_pages_plus_fields_policies_and_snippets(env: Env) -> None:
    _env(env)
    ups = [{"name": "web", "service": "web", "port": 80, "healthCheck": {"enable": True},
            "slow-start": "10s"},
           {"name": "down", "service": "down", "port": 80}]
    apply_vs(env, virtual_server("shop", HOST, upstreams=ups, routes=[
        {"path": "/", "action": {"pass": "web"}, "location-snippets": "return 418;"},
        {"path": "/down", "action": {"pass": "down"}, "errorPages": [
            {"codes": [502, 503], "return": {"code": 599, "type": "application/json",
                                             "body": '{\\"upstream\\": \\"${upstream_status}\\"}',
                                             "headers": [{"name": "X-Error", "value": "yes"}]}}]},
        {"path": "/gone", "action": {"pass": "down"}, "errorPages": [
            {"codes": [502], "redirect": {"url": "https://${scheme}.example.com/sorry", "code": 302}}]},
        {"path": "/keep", "action": {"pass": "down"}, "errorPages": [
            {"codes": [502], "return": {"body": "kept"}}]},
        {"path": "/secure", "action": {"pass": "web"}, "policies": [{"name": "allow-office"}]},
    ]))
    c = env.controller()
    c.wait_backend(HOST, "/", "web")               # the location snippet is dropped without --enable-snippets
    r = c.get(HOST, "/down")
    assert (r.status, r.headers.get("x-error"), r.headers["content-type"]) == (599, "yes", "application/json")
    assert r.body == '{"upstream": "502"}'
    r = c.get(HOST, "/gone")
    assert (r.status, r.headers.get("location")) == (302, "https://http.example.com/sorry")
    r = c.get(HOST, "/keep")
    assert (r.status, r.body) == (502, "kept")     # no code: the original status is kept
    assert c.get(HOST, "/secure").status == 500    # a Policy that does not exist
    st = wait_vs_state(env, "shop", "Warning", "AddedOrUpdatedWithWarning")
    assert "spec.upstreams[0].healthCheck requires NGINX Plus" in st["message"]
    assert "spec.upstreams[0].slow-start requires NGINX Plus" in st["message"]
    assert f"Policy {NS}/allow-office is missing or invalid" in st["message"]
    env.wait_event("shop", "AddedOrUpdatedWithWarning", "requires NGINX Plus", kind="VirtualServer")


def test_snippets_with_enable_snippets(env: Env) -> None:
    _env(env)
    apply_vs(env, virtual_server("shop", HOST, upstreams=[{"name": "web", "service": "web", "port": 80}],
                                 routes=[{"path": "/", "action": {"pass": "web"},
                                          "location-snippets": "add_header X-Snippet location;"}],
                                 **{"server-snippets": "add_header X-Server server;"}))
    c = env.controller(enable_snippets=True)
    c.wait_backend(HOST, "/", "web")
    assert c.get(HOST, "/").headers.get("x-snippet") == "location"
    wait_vs_state(env, "shop", "Valid", "AddedOrUpdated")

    # A configuration NGINX refuses: the VirtualServer's status says so (Invalid), as its event does.
    reloads = c.reloads
    apply_vs(env, virtual_server("shop", HOST, upstreams=[{"name": "web", "service": "web", "port": 80}],
                                 routes=[{"path": "/", "action": {"pass": "web"}}],
                                 **{"server-snippets": "no_such_directive on;"}))
    st = wait_vs_state(env, "shop", "Invalid", "AddedOrUpdatedWithError", "no_such_directive")
    assert st["message"].startswith(f"Configuration for {NS}/shop was added or updated ")
    assert "; but was not applied: " in st["message"] and c.reloads > reloads


def test_resource_count_metric_and_custom_resources_off(env: Env) -> None:
    _env(env)
    for i in range(3):
        apply_vs(env, virtual_server(f"vs-{i}", f"vs-{i}.example.com",
                                     upstreams=[{"name": "web", "service": "web", "port": 80}],
                                     routes=[{"path": "/", "action": {"pass": "web"}}]))
    c = env.controller(enable_prometheus_metrics=True, prometheus_metrics_listen_port=0)
    c.wait_backend("vs-2.example.com", "/", "web")
    port = metrics_port(c)
    wait_until(lambda: value(scrape(port), C + "virtualserver_resources_total") == 3, "3 VirtualServers")
    from ingressctl.kinds.virtualserver.kind import VIRTUALSERVERS

    env.kube.delete(VIRTUALSERVERS, NS, "vs-0")
    wait_until(lambda: value(scrape(port), C + "virtualserver_resources_total") == 2, "2 VirtualServers")
    # --enable-custom-resources=false: no VirtualServer informer, nothing served.
    off = env.controller(enable_custom_resources=False)
    assert "virtualserver" not in off.lbc.kinds
    assert off.get("vs-1.example.com", "/").status == 404
