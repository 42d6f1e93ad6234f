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
    from ingressctl.controller.vs_kind import VIRTUALSERVERS

    env.kube.delete(VIRTUALSERVERS, NS, "cafe")
    env.wait_event("coffee", "NoVirtualServerFound", namespace=COFFEE, kind="VirtualServerRoute")
    wait_until(lambda: c.get(HOST, "/coffee").status == 404, "nothing served for the host")
