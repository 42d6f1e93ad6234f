"""NIC's event and status wording for VirtualServers and VirtualServerRoutes (the Configuration's problems and
the reporter's events)."""

from __future__ import annotations

from typing import Any

from ingressctl.controller.configuration import Configuration
from ingressctl.controller.reporter import custom_resource_added_event
from ingressctl.keys import ResourceKey
from ingressctl.kinds.virtualserver.model import VirtualServerModel, VirtualServerRouteModel
from ingressctl.kinds.virtualserver.template_model import VS_KIND

T0 = "2024-01-01T00:00:00Z"


def _vs(name: str, host: str, created: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "demo", "uid": name, "creationTimestamp": created},
            "spec": {"host": host, "upstreams": [{"name": "tea", "service": "tea", "port": 80}],
                     "routes": [{"path": "/", "action": {"pass": "tea"}}], **spec}}


def _configuration() -> Configuration:
    c = Configuration(ingress_class="nginx")
    c.register_kind(VirtualServerModel("nginx"))
    c.register_kind(VirtualServerRouteModel("nginx"))
    c.set_startup_complete()
    return c


def test_added_or_updated_texts_are_nics() -> None:
    ok = custom_resource_added_event("demo/cafe", [], [], "")
    assert ok == ("Normal", "AddedOrUpdated", "Configuration for demo/cafe was added or updated ")
    assert custom_resource_added_event("demo/cafe", ["w1", "w2"], [], "") == (
        "Warning", "AddedOrUpdatedWithWarning",
        "Configuration for demo/cafe was added or updated with warning(s): w1; w2")
    assert custom_resource_added_event("demo/cafe", [], ["tls"], "")[2] == (
        "Configuration for demo/cafe was added or updated ; with warning(s): tls")
    assert custom_resource_added_event("demo/cafe", ["w"], ["tls"], "")[2] == (
        "Configuration for demo/cafe was added or updated with warning(s): w; with warning(s): tls")
    assert custom_resource_added_event("demo/cafe", [], [], "boom") == (
        "Warning", "AddedOrUpdatedWithError",
        "Configuration for demo/cafe was added or updated ; but was not applied: boom")


def test_an_invalid_virtualserver_problem_names_its_kind() -> None:
    c = _configuration()
    bad = _vs("cafe", "cafe.example.com", T0, routes=[{"path": "x", "action": {"pass": "tea"}}])
    _, problems = c.add_or_update(VS_KIND, bad)
    assert [p.message for p in problems] == [
        'VirtualServer demo/cafe was rejected with error: spec.routes[0].path: Invalid value: "x": must '
        "start with /, ~, ^~ or ="]
    vsr = {"metadata": {"name": "r", "namespace": "demo"},
           "spec": {"host": "", "upstreams": [], "subroutes": []}}
    _, problems = c.add_or_update("virtualserverroute", vsr)
    assert problems[0].message == ("VirtualServerRoute demo/r was rejected with error: spec.host: Required "
                                   "value")


def test_a_virtualserver_that_lost_its_host_gets_nics_problem_and_rejection_text() -> None:
    c = _configuration()
    c.add_or_update(VS_KIND, _vs("old", "cafe.example.com", T0))
    _, problems = c.add_or_update(VS_KIND, _vs("new", "cafe.example.com", "2024-01-02T00:00:00Z"))
    assert problems[0].message == ("Host is taken by another resource: host cafe.example.com by "
                                   "VirtualServer demo/old")
    model = VirtualServerModel("nginx")
    assert model.rejected_message("demo/new", "with warning(s): host x is taken") == (
        "VirtualServer demo/new was rejected with warning(s): host x is taken")
    assert ResourceKey(VS_KIND, "demo/old") == c.host_owner("cafe.example.com")
