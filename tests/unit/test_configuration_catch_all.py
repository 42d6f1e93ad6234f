"""The class-wide catch-all in the Configuration: an Ingress without rules and with a defaultBackend claims
it; the oldest wins (then the smaller namespace/name) whatever the arrival order; the others are problems
naming the winner and take over when it goes; Ingresses with rules are untouched by it."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ingressctl.controller.configuration import Configuration
from ingressctl.controller.model import CATCH_ALL_HOST
from tests.unit.test_configuration import ikey, ing, ops


def catch_all(name: str, *, ts: int = 0, ns: str = "default", uid: str | None = None) -> dict[str, Any]:
    obj = ing(name, ts=ts, ns=ns, uid=uid)
    obj["spec"] = {"ingressClassName": "nginx",
                   "defaultBackend": {"service": {"name": f"{name}-svc", "port": {"number": 80}}}}
    return obj


def started() -> Configuration:
    conf = Configuration(ingress_class="nginx")
    conf.set_startup_complete()
    return conf


def test_a_catch_all_is_configured_and_owns_the_catch_all_host() -> None:
    conf = started()
    changes, problems = conf.add_or_update_ingress(catch_all("db"))
    assert ops(changes) == [("AddOrUpdate", "default/db")] and problems == []
    assert changes[0].resource.valid_hosts == {CATCH_ALL_HOST: True}
    assert conf.host_owner(CATCH_ALL_HOST) == ikey("default/db")
    # An Ingress with rules and its own defaultBackend keeps NIC's meaning: it claims only its hosts.
    with_rules = ing("web", "web.example.com")
    with_rules["spec"]["defaultBackend"] = {"service": {"name": "fallback", "port": {"number": 80}}}
    changes, _ = conf.add_or_update_ingress(with_rules)
    assert changes[0].resource.valid_hosts == {"web.example.com": True}
    assert conf.host_owner(CATCH_ALL_HOST) == ikey("default/db")


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_oldest_wins_then_namespace_and_name_in_any_arrival_order(order: tuple[int, ...]) -> None:
    # "b/z" and "a/y" are the same age; the UIDs would pick "b/z" (greater), namespace/name picks "a/y".
    items = [catch_all("z", ns="b", ts=5, uid="uid-9"), catch_all("y", ns="a", ts=5, uid="uid-1"),
             catch_all("x", ns="c", ts=7)]
    conf = started()
    for i in order:
        conf.add_or_update_ingress(items[i])
    assert conf.host_owner(CATCH_ALL_HOST) == ikey("a/y")
    assert [r.key for r in conf.get_resources()] == ["a/y"]
    problems = conf.host_problems()
    assert set(problems) == {ikey("b/z"), ikey("c/x")}
    for p in problems.values():
        assert p.reason == "Rejected" and not p.is_error
        assert p.message == ("All hosts are taken by other resources: the catch-all (an Ingress without "
                             "rules, with a defaultBackend) by Ingress a/y")


def test_the_next_catch_all_takes_over_when_the_winner_goes() -> None:
    conf = started()
    conf.add_or_update_ingress(catch_all("old", ts=1))
    _, problems = conf.add_or_update_ingress(catch_all("new", ts=2))
    assert [p.obj["metadata"]["name"] for p in problems] == ["new"]
    assert "by Ingress default/old" in problems[0].message
    changes, problems = conf.delete_ingress("default/old")
    assert ops(changes) == [("Delete", "default/old"), ("AddOrUpdate", "default/new")]
    assert conf.host_owner(CATCH_ALL_HOST) == ikey("default/new") and conf.host_problems() == {}
    # The winner becomes an Ingress with rules: it gives the catch-all up.
    changes, _ = conf.add_or_update_ingress(ing("new", "new.example.com", ts=2))
    assert conf.host_owner(CATCH_ALL_HOST) is None
    assert changes[0].resource.valid_hosts == {"new.example.com": True}


def test_start_up_resolves_the_catch_all_once() -> None:
    conf = Configuration(ingress_class="nginx")
    for item in (catch_all("b", ts=3), catch_all("a", ts=4)):
        assert conf.add_or_update_ingress(item) == ([], [])
    changes, problems = conf.set_startup_complete()
    assert ops(changes) == [("AddOrUpdate", "default/b")]
    assert [p.obj["metadata"]["name"] for p in problems] == ["a"]


def test_an_ingress_with_neither_rules_nor_default_backend_is_rejected() -> None:
    obj = ing("empty")
    changes, problems = started().add_or_update_ingress(obj)
    assert changes == [] and [p.message for p in problems] == ["spec.rules: Required value"]


@pytest.mark.parametrize("legacy", [False, True])
def test_every_start_up_mode_picks_the_same_catch_all(legacy: bool) -> None:
    conf = Configuration(ingress_class="nginx", legacy_startup=legacy)
    for item in (catch_all("z", ts=3), catch_all("b", ts=4), catch_all("y", ts=3)):
        conf.add_or_update_ingress(item)
    conf.set_startup_complete()
    assert conf.host_owner(CATCH_ALL_HOST) == ikey("default/y")
    assert [r.key for r in conf.get_resources()] == ["default/y"]
