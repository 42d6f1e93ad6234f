"""VirtualServerRoutes end to end: delegation across namespaces, the path rules, orphans and their status."""

from __future__ import annotations

import pytest

from tests.helpers import wait_until
from tests.integration.harness import NS, Env
from tests.integration.vs_helpers import (
    apply_vs,
    apply_vsr,
    install_crds,
    virtual_server,
    virtual_server_route,
    vsr_status,
    wait_vs_state,
)

pytestmark = pytest.mark.integration

HOST = "cafe.example.com"
TEA, COFFEE = "tea-team", "coffee-team"
TEA_UPS = [{"name": "tea", "service": "tea", "port": 80}]


def _setup(env: Env) -> None:
    install_crds(env)
    for ns in (TEA, COFFEE):
        env.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for name, ns in (("tea", TEA), ("coffee", COFFEE), ("web", NS)):
        env.service(name, namespace=ns)
        env.endpoints(name, [env.backend(name)], namespace=ns)


def _cafe() -> dict[str, object]:
    return virtual_server("cafe", HOST, upstreams=[{"name": "web", "service": "web", "port": 80}], routes=[
        {"path": "/", "action": {"pass": "web"}},
        {"path": "/tea", "route": f"{TEA}/tea"},
        {"path": "=/coffee", "route": f"{COFFEE}/coffee"},
    ])


def test_delegation_across_namespaces_path_rules_and_orphans(env: Env) -> None:
    _setup(env)
    # An orphan at start-up: its host has no VirtualServer yet.
    apply_vsr(env, virtual_server_route("tea", HOST, TEA, upstreams=TEA_UPS, subroutes=[
        {"path": "/tea", "action": {"pass": "tea"}},
        {"path": "/tea/green", "action": {"return": {"body": "green"}}}]))
    c = env.controller()
    env.wait_event("tea", "NoVirtualServerFound", "VirtualServer is invalid or doesn't exist",
                   namespace=TEA, kind="VirtualServerRoute")
    wait_until(lambda: vsr_status(env, "tea", TEA).get("reason") == "NoVirtualServerFound", "orphan status")
    assert vsr_status(env, "tea", TEA)["state"] == "Warning"

    # The VirtualServer arrives: /tea is delegated across namespaces; /coffee's VSR does not exist yet.
    apply_vs(env, _cafe())
    c.wait_backend(HOST, "/tea/cup", "tea")
    assert c.get(HOST, "/tea/green").body == "green"
    assert c.get(HOST, "/coffee").backend == "web"          # not delegated: falls through to "/"
    st = wait_vs_state(env, "cafe", "Warning", "AddedOrUpdatedWithWarning")
    assert f"VirtualServerRoute {COFFEE}/coffee doesn't exist or invalid" in st["message"]
    wait_until(lambda: vsr_status(env, "tea", TEA).get("state") == "Valid", "the VSR's status")
    assert vsr_status(env, "tea", TEA)["referencedBy"] == f"{NS}/cafe"        # NIC names its VirtualServer
    env.wait_event("tea", "AddedOrUpdated", namespace=TEA, kind="VirtualServerRoute")

    # Under an exact path the VSR needs exactly that one path; a wrong one is ignored with a warning.
    apply_vsr(env, virtual_server_route("coffee", HOST, COFFEE,
                                        upstreams=[{"name": "coffee", "service": "coffee", "port": 80}],
                                        subroutes=[{"path": "/coffee", "action": {"pass": "coffee"}}]))
    wait_vs_state(env, "cafe", "Warning", "AddedOrUpdatedWithWarning",
                  f"VirtualServerRoute {COFFEE}/coffee is invalid")
    assert c.get(HOST, "/coffee").backend == "web"
    apply_vsr(env, virtual_server_route("coffee", HOST, COFFEE,
                                        upstreams=[{"name": "coffee", "service": "coffee", "port": 80}],
                                        subroutes=[{"path": "=/coffee", "action": {"pass": "coffee"}}]))
    c.wait_backend(HOST, "/coffee", "coffee")
    wait_vs_state(env, "cafe", "Valid", "AddedOrUpdated")
    assert c.get(HOST, "/coffee/x").backend == "web"

    # Endpoint changes of a VSR's upstream reach NGINX.
    env.endpoints("tea", [env.backend("tea-2")], namespace=TEA)
    c.wait_backend(HOST, "/tea", "tea-2")

    # A subroute outside the delegated prefix makes the VSR unfit; the rest keeps serving.
    apply_vsr(env, virtual_server_route("tea", HOST, TEA, upstreams=TEA_UPS,
                                        subroutes=[{"path": "/milk", "action": {"pass": "tea"}}]))
    wait_vs_state(env, "cafe", "Warning", "AddedOrUpdatedWithWarning", "must start with '/tea'")
    wait_until(lambda: c.get(HOST, "/tea").backend == "web", "/tea no longer delegated")
    assert c.get(HOST, "/coffee").backend == "coffee"

    # The VirtualServer goes: its VSRs are orphans again.
    from ingressctl.kinds.virtualserver.kind import VIRTUALSERVERS

    env.kube.delete(VIRTUALSERVERS, NS, "cafe")
    env.wait_event("coffee", "NoVirtualServerFound", namespace=COFFEE, kind="VirtualServerRoute")
    wait_until(lambda: c.get(HOST, "/coffee").status == 404, "nothing served for the host")


def test_virtualserverroute_resources_total_counts_the_configured_ones(env: Env) -> None:
    from tests.integration.test_metrics_controller import C, metrics_port, scrape, value

    _setup(env)
    metric = C + "virtualserverroute_resources_total"
    c = env.controller(enable_prometheus_metrics=True, prometheus_metrics_listen_port=0)
    port = metrics_port(c)
    assert value(scrape(port), metric) == 0
    # An orphan is not configured: not counted.
    apply_vsr(env, virtual_server_route("tea", HOST, TEA, upstreams=TEA_UPS,
                                        subroutes=[{"path": "/tea", "action": {"pass": "tea"}}]))
    env.wait_event("tea", "NoVirtualServerFound", namespace=TEA, kind="VirtualServerRoute")
    assert value(scrape(port), metric) == 0
    apply_vs(env, _cafe())
    c.wait_backend(HOST, "/tea", "tea")
    wait_until(lambda: value(scrape(port), metric) == 1, "one VirtualServerRoute counted")
    apply_vsr(env, virtual_server_route("coffee", HOST, COFFEE,
                                        upstreams=[{"name": "coffee", "service": "coffee", "port": 80}],
                                        subroutes=[{"path": "=/coffee", "action": {"pass": "coffee"}}]))
    c.wait_backend(HOST, "/coffee", "coffee")
    wait_until(lambda: value(scrape(port), metric) == 2, "two VirtualServerRoutes counted")
    from ingressctl.kinds.virtualserver.kind import VIRTUALSERVERS

    env.kube.delete(VIRTUALSERVERS, NS, "cafe")
    wait_until(lambda: value(scrape(port), metric) == 0, "none configured without their VirtualServer")


def test_a_virtualserverroute_no_route_delegates_to_is_ignored(env: Env) -> None:
    _setup(env)
    c = env.controller()
    apply_vs(env, virtual_server("cafe", HOST, upstreams=[{"name": "web", "service": "web", "port": 80}],
                                 routes=[{"path": "/", "action": {"pass": "web"}}]))
    c.wait_backend(HOST, "/", "web")
    # The VirtualServer owns the host but no route delegates to this VSR: Ignored, Warning, not served.
    apply_vsr(env, virtual_server_route("tea", HOST, TEA, upstreams=TEA_UPS,
                                        subroutes=[{"path": "/tea", "action": {"pass": "tea"}}]))
    event = env.wait_event("tea", "Ignored", f"VirtualServer {NS}/cafe ignores VirtualServerRoute",
                           namespace=TEA, kind="VirtualServerRoute")
    assert event["type"] == "Warning"
    wait_until(lambda: vsr_status(env, "tea", TEA).get("reason") == "Ignored", "the ignored VSR's status")
    assert vsr_status(env, "tea", TEA)["state"] == "Warning"
    assert c.get(HOST, "/tea").backend == "web"

    # A route delegating to it, but under a prefix its subroutes do not fit: still ignored.
    apply_vs(env, virtual_server("cafe", HOST, upstreams=[{"name": "web", "service": "web", "port": 80}],
                                 routes=[{"path": "/", "action": {"pass": "web"}},
                                         {"path": "/coffee", "route": f"{TEA}/tea"}]))
    wait_vs_state(env, "cafe", "Warning", "AddedOrUpdatedWithWarning",
                  f"VirtualServerRoute {TEA}/tea is invalid")
    assert vsr_status(env, "tea", TEA)["reason"] == "Ignored"

    # Delegated properly: configured, Valid.
    apply_vs(env, _cafe())
    c.wait_backend(HOST, "/tea", "tea")
    wait_until(lambda: vsr_status(env, "tea", TEA).get("state") == "Valid", "the VSR's status")

    # The route goes again: Ignored again.
    apply_vs(env, virtual_server("cafe", HOST, upstreams=[{"name": "web", "service": "web", "port": 80}],
                                 routes=[{"path": "/", "action": {"pass": "web"}}]))
    wait_until(lambda: vsr_status(env, "tea", TEA).get("reason") == "Ignored", "ignored again")
    assert vsr_status(env, "tea", TEA)["referencedBy"] == ""
    wait_until(lambda: c.get(HOST, "/tea").backend == "web", "/tea no longer delegated")
