"""AdmissionReview handling (ingressctl.webhook.admission): the controller's validation as the verdict,
host-ownership warnings from the Configuration, dispatch by (group, kind), malformed reviews refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ingressctl.controller.configuration import Configuration
from ingressctl.controller.ingress_class import IngressClasses
from ingressctl.controller.kinds import Verdict
from ingressctl.webhook import admission
from ingressctl.webhook.admission import MalformedReview, register_validator, review
from tests.webhooks import ingress
from tests.webhooks import review as make_review

OLD = "2024-01-01T00:00:00Z"
NEW = "2025-01-01T00:00:00Z"


def _ing(name: str, host: str, *, created: str = NEW, uid: str = "", **kw: Any) -> dict[str, Any]:
    obj = ingress(name, host, **kw)
    obj["metadata"].update(creationTimestamp=created, uid=uid or f"uid-{name}")
    return obj


def _config(*ings: dict[str, Any], snippets: bool = False) -> Configuration:
    c = Configuration(ingress_class="nginx", snippets_enabled=snippets)
    for ing in ings:
        c.add_or_update_ingress(ing)
    c.set_startup_complete()
    return c


def _answer(obj: Any, config: Configuration, **kw: Any) -> dict[str, Any]:
    body = make_review(obj, **kw)
    out = review(body, config)
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    response: dict[str, Any] = out["response"]
    assert response["uid"] == body["request"]["uid"]
    return response


def test_a_valid_ingress_is_allowed_without_warnings() -> None:
    r = _answer(_ing("web", "a.example.com"), _config())
    assert r == {"uid": r["uid"], "allowed": True}


def test_an_invalid_ingress_is_denied_with_the_controllers_own_message() -> None:
    bad = _ing("web", "a.example.com", annotations={"nginx.org/server-snippets": "return 200;",
                                                      "nginx.org/proxy-connect-timeout": "soon"})
    config = _config()
    r = _answer(bad, config)
    assert r["allowed"] is False and r["status"]["code"] == 400
    # The Configuration rejects the same object with the same text: one code path.
    _, problems = config.add_or_update_ingress(bad)
    assert r["status"]["message"] == f"demo/web was rejected: {problems[0].message}"
    assert "annotations.nginx.org/server-snippets: Forbidden" in r["status"]["message"]
    assert 'annotations.nginx.org/proxy-connect-timeout: Invalid value: "soon"' in r["status"]["message"]
    assert _answer(bad, config, operation="UPDATE", old=bad)["allowed"] is False


def test_snippets_are_allowed_when_the_controller_allows_them() -> None:
    ing = _ing("web", "a.example.com", annotations={"nginx.org/server-snippets": "return 200;"})
    assert _answer(ing, _config(snippets=True))["allowed"] is True


def test_an_ingress_of_another_class_is_allowed_untouched() -> None:
    ing = _ing("web", "Bad_Host", cls="other", annotations={"nginx.org/server-snippets": "x"})
    r = _answer(ing, _config())
    assert r["allowed"] is True and "warnings" not in r


def test_a_host_owned_by_an_older_ingress_is_a_warning() -> None:
    config = _config(_ing("first", "a.example.com", created=OLD))
    r = _answer(_ing("second", "a.example.com"), config)
    assert r["allowed"] is True
    assert r["warnings"] == ["host a.example.com is taken by another resource (Ingress demo/first)"]
    # The owner itself, or a candidate that would win the host, gets no warning.
    assert "warnings" not in _answer(_ing("first", "a.example.com", created=OLD), config)
    older = _ing("oldest", "a.example.com", created="2023-01-01T00:00:00Z")
    assert "warnings" not in _answer(older, config)
    # Same second: the greater UID wins.
    tie = _config(_ing("first", "a.example.com", created=OLD, uid="m"))
    assert "warnings" in _answer(_ing("low", "a.example.com", created=OLD, uid="a"), tie)
    assert "warnings" not in _answer(_ing("high", "a.example.com", created=OLD, uid="z"), tie)


def test_ingress_nginx_ingresses_sharing_a_host_get_no_warning() -> None:
    """With --ingress-nginx-compat, Ingresses of an ingress-nginx class share a host (one server); an Ingress
    of the controller's own class still gets the warning against them, and they against it."""
    classes = IngressClasses("ours", ingress_nginx_compat=True, compat_names=["nginx"])
    config = Configuration(ingress_class=classes)
    config.add_or_update_ingress(_ing("first", "a.example.com", created=OLD))
    config.add_or_update_ingress(_ing("mine", "b.example.com", created=OLD, cls="ours"))
    config.set_startup_complete()
    assert "warnings" not in _answer(_ing("second", "a.example.com"), config)
    assert _answer(_ing("second", "a.example.com", cls="ours"), config)["warnings"] == [
        "host a.example.com is taken by another resource (Ingress demo/first)"]
    assert _answer(_ing("late", "b.example.com"), config)["warnings"] == [
        "host b.example.com is taken by another resource (Ingress demo/mine)"]


def test_the_catch_all_is_warned_by_the_configurations_own_claims_and_rule() -> None:
    def catch_all(name: str, uid: str) -> dict[str, Any]:
        obj = _ing(name, "unused", created=OLD, uid=uid)
        obj["spec"] = {"ingressClassName": "nginx",
                       "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}
        return obj

    config = _config(catch_all("b-default", "m"))
    taken = ["the catch-all (an Ingress without rules, with a defaultBackend) is taken by another resource "
             "(Ingress demo/b-default)"]
    assert _answer(catch_all("c-default", "a"), config)["warnings"] == taken
    # The catch-all goes to the smaller name on a tie, whatever the UIDs (not the greater UID as for hosts).
    assert _answer(catch_all("c-default", "z"), config)["warnings"] == taken
    assert "warnings" not in _answer(catch_all("a-default", "a"), config)


def test_a_minion_without_a_master_is_a_warning() -> None:
    master = _ing("master", "m.example.com", created=OLD,
                  annotations={"nginx.org/mergeable-ingress-type": "master"})
    del master["spec"]["rules"][0]["http"]
    minion = _ing("minion", "m.example.com", annotations={"nginx.org/mergeable-ingress-type": "minion"})
    orphan = _ing("orphan", "x.example.com", annotations={"nginx.org/mergeable-ingress-type": "minion"})
    config = _config(master)
    assert "warnings" not in _answer(minion, config)
    (w,) = _answer(orphan, config)["warnings"]
    assert "host x.example.com has no Ingress master" in w


def test_delete_connect_and_unknown_kinds_are_allowed() -> None:
    config = _config()
    bad = _ing("web", "Bad_Host")
    assert _answer(None, config, operation="DELETE", old=bad)["allowed"] is True
    assert _answer(bad, config, group="apps", kind="Deployment")["allowed"] is True
    assert _answer(bad, config, group="k8s.nginx.org", kind="VirtualServer")["allowed"] is True


@pytest.fixture
def virtual_server_validator() -> Iterator[list[Any]]:
    seen: list[Any] = []

    def validate(obj: Any, old: Any, config: Any) -> Verdict:
        seen.append((obj, old))
        return Verdict(message="" if obj.get("spec", {}).get("host") else "spec.host: Required value",
                       warnings=["checked"])

    register_validator("k8s.nginx.org", "VirtualServer", validate)
    yield seen
    del admission.VALIDATORS[("k8s.nginx.org", "VirtualServer")]


def test_validators_are_dispatched_by_group_and_kind(virtual_server_validator: list[Any]) -> None:
    vs = {"apiVersion": "k8s.nginx.org/v1", "kind": "VirtualServer", "metadata": {"name": "v"}, "spec": {}}
    r = _answer(vs, _config(), group="k8s.nginx.org", kind="VirtualServer")
    assert r["allowed"] is False and r["status"]["message"] == "spec.host: Required value"
    assert r["warnings"] == ["checked"]
    good = {**vs, "spec": {"host": "a.example.com"}}
    assert _answer(good, _config(), group="k8s.nginx.org", kind="VirtualServer", operation="UPDATE",
                   old=vs)["allowed"] is True
    assert virtual_server_validator[-1] == (good, vs)


def _envelope(**request: Any) -> dict[str, Any]:
    base = make_review(_ing("web", "a.example.com"))
    base["request"].update(request)
    return base


@pytest.mark.parametrize("body", [
    None, [], "AdmissionReview", 7,
    {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}},
    {"apiVersion": "admission.k8s.io/v1", "kind": "Ingress"},
    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": []},
    _envelope(uid=""), _envelope(uid=5), _envelope(kind="Ingress"), _envelope(kind={"group": "x"}),
    _envelope(operation="PATCH"), _envelope(operation=None), _envelope(object=[1]), _envelope(object=None),
    _envelope(operation="UPDATE"), _envelope(object={"metadata": "x"}),
])
def test_malformed_reviews_are_refused(body: Any) -> None:
    with pytest.raises(MalformedReview):
        review(body, _config())


def test_registry_kinds_are_validated_by_their_configuration_part() -> None:
    from ingressctl.controller.kinds import ResourceKind
    from ingressctl.kinds.virtualserver.kind import VIRTUALSERVERS
    from ingressctl.kinds.virtualserver.model import VirtualServerModel
    from ingressctl.webhook.admission import registry_lookup

    entry = ResourceKind(name="virtualserver", rt=VIRTUALSERVERS, handler=lambda enqueue: None,  # type: ignore
                         builder=None, status=None, model=VirtualServerModel("nginx"))  # type: ignore[arg-type]
    lookup = registry_lookup([entry])
    config = _config()
    spec: dict[str, Any] = {"host": "v.example.com",
                            "upstreams": [{"name": "web", "service": "web", "port": 80}],
                            "routes": [{"path": "tea", "action": {"pass": "web"}}]}
    bad = {"apiVersion": "k8s.nginx.org/v1", "kind": "VirtualServer",
           "metadata": {"name": "v", "namespace": "demo"}, "spec": spec}
    r = review(make_review(bad, group="k8s.nginx.org", kind="VirtualServer"), config, lookup)["response"]
    assert r["allowed"] is False
    assert r["status"]["message"] == ("VirtualServer demo/v was rejected: spec.routes[0].path: Invalid "
                                      'value: "tea": must start with /, ~, ^~ or =')
    # Another class: not ours, allowed untouched; the Ingress still goes to the built-in validator.
    other = {**bad, "spec": {**spec, "ingressClassName": "other"}}
    assert review(make_review(other, group="k8s.nginx.org", kind="VirtualServer"), config,
                  lookup)["response"]["allowed"] is True
    denied = review(make_review(_ing("web", "Bad_Host")), config, lookup)["response"]
    assert denied["allowed"] is False
    # The module's table is untouched: without the registry, VirtualServers are not validated.
    assert admission.validator_for("k8s.nginx.org", "VirtualServer") is None
