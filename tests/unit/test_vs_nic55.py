"""NIC 5.5's VirtualServer additions in validation and in the model: `^~` paths and path normalisation, the
new VirtualServerRoute path rules, `routeSelector`, Services of another namespace and the new upstream buffer
fields."""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.controller.model import make_entry
from ingressctl.keys import ResourceKey
from ingressctl.kinds.virtualserver.model import VirtualServerModel, VirtualServerRouteModel
from ingressctl.kinds.virtualserver.paths import normalize_path, vsr_fit_errors
from ingressctl.kinds.virtualserver.validation import validate_virtual_server, validate_virtual_server_route

HOST = "cafe.example.com"
UP = [{"name": "tea", "service": "tea", "port": 80}]


def vs(routes: list[dict[str, Any]], upstreams: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "cafe", "namespace": "demo", "uid": "u",
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"host": HOST, "upstreams": UP if upstreams is None else upstreams, "routes": routes}}


def vsr(name: str, ns: str, paths: list[str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "labels": labels or {}},
            "spec": {"host": HOST, "upstreams": UP,
                     "subroutes": [{"path": p, "action": {"pass": "tea"}} for p in paths]}}


def errors(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_virtual_server(obj)]


@pytest.mark.parametrize(("path", "normal"), [
    ("= /x", "=/x"), ("=/x", "=/x"), ("^~ /x", "^~/x"), ("~  ^/a", "~^/a"), ("~* a", "~*a"), ("/x", "/x")])
def test_whitespace_after_a_modifier_is_normalised(path: str, normal: str) -> None:
    assert normalize_path(path) == normal
    assert errors(vs([{"path": path, "action": {"pass": "tea"}}])) == []


@pytest.mark.parametrize(("path", "message"), [
    ("//evil", "must not start with '//'"),
    ("/a/../etc", "must not contain '..' path segments"),
    ("^~/a b", "must start with / and must not include any whitespace"),
    ("^~ //x", "must not start with '//'"),
    ("tea", "must start with /, ~, ^~ or ="),
])
def test_new_prefix_path_rules(path: str, message: str) -> None:
    assert any(message in e for e in errors(vs([{"path": path, "action": {"pass": "tea"}}])))


def test_duplicates_are_found_after_normalisation() -> None:
    found = errors(vs([{"path": "=/x", "action": {"pass": "tea"}},
                       {"path": "= /x", "action": {"pass": "tea"}}]))
    assert found == ['spec.routes[1].path: Duplicate value: "= /x"']


def test_upstream_service_in_another_namespace_and_buffer_fields() -> None:
    ups = [{"name": "tea", "service": "tea-ns/tea-svc", "port": 80, "busy-buffers-size": "16k",
            "client-body-buffer-size": "32k"}]
    obj = vs([{"path": "/", "action": {"pass": "tea"}}], ups)
    assert errors(obj) == []
    assert VirtualServerModel("nginx").claims(obj).services == (("tea-ns", "tea-svc"),)
    bad = [{"name": "tea", "service": "Tea_NS/tea", "port": 80, "busy-buffers-size": "lots",
            "client-body-buffer-size": "1x"}]
    found = errors(vs([{"path": "/", "action": {"pass": "tea"}}], bad))
    assert any(e.startswith('spec.upstreams[0].service: Invalid value: "Tea_NS/tea": namespace')
               for e in found)
    assert any(e.startswith('spec.upstreams[0].busy-buffers-size: Invalid value: "lots"') for e in found)
    assert any(e.startswith('spec.upstreams[0].client-body-buffer-size: Invalid value: "1x"') for e in found)


def test_route_selector_rules() -> None:
    ok = vs([{"path": "/tea", "routeSelector": {"matchLabels": {"app": "tea"}}}])
    assert errors(ok) == []
    assert any("matchLabels: Required value" in e
               for e in errors(vs([{"path": "/tea", "routeSelector": {"matchLabels": {}}}])))
    assert any("label value must not be empty" in e
               for e in errors(vs([{"path": "/tea", "routeSelector": {"matchLabels": {"app": ""}}}])))
    both = errors(vs([{"path": "/tea", "route": "tea", "routeSelector": {"matchLabels": {"a": "b"}}}]))
    assert any("exactly one of: `action`, `splits`, `route` or `routeSelector`" in e for e in both)


def test_vsr_path_rules_of_nic_55() -> None:
    regex = vsr("r", "demo", ["~ ^/a", "~* ^/b"])
    assert vsr_fit_errors(["~^/a", "~*^/b"], regex) == []
    assert vsr_fit_errors(["~^/a"], regex) == [
        "spec.subroutes[1].path: Invalid value: '~*^/b': must be the path of a VirtualServer route that "
        "references this VirtualServerRoute"]
    assert vsr_fit_errors(["~^/a", "~^/c"], regex)[0] == (
        "spec.subroutes: Required value: must have a subroute with the path '~^/c'")
    assert vsr_fit_errors("= /x", vsr("e", "demo", ["=/x"])) == []
    assert vsr_fit_errors("^~/tea", vsr("p", "demo", ["^~/tea/green"])) == []
    mixed = vsr("m", "demo", ["/tea", "=/tea/x"])
    assert any("all subroutes must use the same path modifier type" in str(e)
               for e in validate_virtual_server_route(mixed))
    assert any("must all use the same path modifier type" in e for e in errors(
        vs([{"path": "~ ^/a", "route": "r"}, {"path": "/b", "route": "r"}])))


def _build(vs_obj: dict[str, Any], *vsrs: dict[str, Any]) -> Any:
    vm, rm = VirtualServerModel("nginx"), VirtualServerRouteModel("nginx")
    entry = make_entry(ResourceKey("virtualserver", "demo/cafe"), vs_obj, vm.claims(vs_obj))
    children = [make_entry(ResourceKey("virtualserverroute", f"{v['metadata']['namespace']}/"
                                                             f"{v['metadata']['name']}"), v, rm.claims(v))
                for v in vsrs]
    return vm.build(entry, {HOST: True}, [], children)


def test_route_selector_attaches_by_labels_across_namespaces() -> None:
    cfg = _build(vs([{"path": "/tea", "routeSelector": {"matchLabels": {"app": "tea"}}}]),
                 vsr("green", "ns-a", ["/tea/green"], {"app": "tea"}),
                 vsr("black", "ns-b", ["/tea/black"], {"app": "tea", "x": "y"}),
                 vsr("other", "ns-b", ["/tea/other"], {"app": "coffee"}),
                 vsr("unfit", "ns-c", ["/milk"], {"app": "tea"}))
    assert [k.ns_name for k, _ in cfg.vsrs] == ["ns-a/green", "ns-b/black"]
    assert cfg.route_vsrs == {0: ["ns-a/green", "ns-b/black"]}
    assert cfg.warnings == ["VirtualServerRoute ns-c/unfit is invalid: spec.subroutes[0].path: Invalid "
                            "value: '/milk': must start with '/tea'"]


def test_one_vsr_twice_is_kept_once_and_regex_routes_share_one() -> None:
    cfg = _build(vs([{"path": "/tea", "route": "ns-a/green"},
                     {"path": "/tea", "routeSelector": {"matchLabels": {"app": "tea"}}}]),
                 vsr("green", "ns-a", ["/tea/green"], {"app": "tea"}))
    assert cfg.route_vsrs == {0: ["ns-a/green"]}
    assert cfg.warnings == ["VS demo/cafe has duplicate VirtualServerRoutes ns-a/green"]
    shared = _build(vs([{"path": "~ ^/a", "route": "r"}, {"path": "~* ^/b", "route": "r"}]),
                    vsr("r", "demo", ["~ ^/a", "~* ^/b"]))
    assert shared.route_vsrs == {0: ["demo/r"], 1: ["demo/r"]} and shared.warnings == []
    clash = _build(vs([{"path": "/tea", "routeSelector": {"matchLabels": {"app": "tea"}}}]),
                   vsr("a", "ns-a", ["/tea/x"], {"app": "tea"}), vsr("b", "ns-b", ["/tea/x"], {"app": "tea"}))
    assert clash.route_vsrs == {0: ["ns-a/a"]}
    assert clash.warnings == ["path /tea/x has conflicting subroutes on VirtualServerRoute ns-b/b"]


def test_an_unfit_vsr_shared_by_regex_routes_is_reported_once() -> None:
    cfg = _build(vs([{"path": "~ ^/a", "route": "r"}, {"path": "~ ^/b", "route": "r"}]),
                 vsr("r", "demo", ["~ ^/a"]))
    assert cfg.route_vsrs == {}
    assert cfg.warnings == ["VirtualServerRoute demo/r is invalid: spec.subroutes: Required value: must have "
                            "a subroute with the path '~^/b'"]
