"""The Configuration's shared hosts (`--ingress-nginx-compat`): Ingresses of an ingress-nginx class naming one
host are members of its owner (the oldest) instead of losers; everything else keeps one owner per host."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from ingressctl.controller.configuration import Configuration, ResourceChange
from ingressctl.controller.ingress_class import IngressClasses
from ingressctl.kinds.ingress.model import IngressConfiguration

_generation = itertools.count(1)
INN = "nginx"       # an IngressClass of controller k8s.io/ingress-nginx
OURS = "ingressctl"  # ingressctl's own class


def ing(name: str, *hosts: str, ts: int, cls: str = INN, path: str = "/", svc: str = "svc",
        annotations: dict[str, str] | None = None, ns: str = "demo", uid: str = "") -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": ns, "uid": uid or f"uid-{name}",
                         "generation": next(_generation), "creationTimestamp": f"2026-01-01T00:00:{ts:02d}Z",
                         "annotations": annotations or {}},
            "spec": {"ingressClassName": cls, "rules": [
                {"host": h, "http": {"paths": [{"path": path, "pathType": "Prefix", "backend": {
                    "service": {"name": svc, "port": {"number": 80}}}}]}} for h in hosts]}}


def configuration(*, compat: bool = True, legacy: bool = False) -> Configuration:
    classes = IngressClasses(OURS, ingress_nginx_compat=compat, compat_names=[INN])
    return Configuration(ingress_class=classes, legacy_startup=legacy)


State = dict[str, tuple[dict[str, bool], list[tuple[str, tuple[str, ...]]], list[str]]]


def state(cfg: Configuration) -> State:
    """key -> (valid hosts, members with their hosts, warnings) of every configured Ingress."""
    out: State = {}
    for r in cfg.get_resources():
        assert isinstance(r, IngressConfiguration)
        out[r.key] = (r.valid_hosts, [(m.key, m.hosts) for m in r.members], r.warnings)
    return out


def ops(changes: list[ResourceChange]) -> list[tuple[str, str]]:
    return [(c.op, c.resource.key) for c in changes]


def test_the_oldest_owns_a_shared_host_and_serves_the_others_paths() -> None:
    cfg = configuration()
    cfg.set_startup_complete()
    changes, problems = cfg.add_or_update_ingress(ing("web", "shop.example.com", ts=1))
    assert ops(changes) == [("AddOrUpdate", "demo/web")] and problems == []
    api = ing("api", "shop.example.com", ts=2, path="/api", svc="api")
    changes, problems = cfg.add_or_update_ingress(api)
    assert ops(changes) == [("AddOrUpdate", "demo/web")] and problems == []  # no resource of its own
    assert state(cfg) == {"demo/web": ({"shop.example.com": True}, [("demo/api", ("shop.example.com",))], [])}
    (web,) = cfg.get_resources()
    assert [k.ns_name for k, _ in web.children()] == ["demo/api"]  # its events and status go with the owner's
    # a Service or Secret of the member finds the owner, which renders its paths
    assert [r.key for r in cfg.find_resources_for_service("demo", "api")] == ["demo/web"]
    # the member changes: the owner is rendered again
    changes, _ = cfg.add_or_update_ingress(ing("api", "shop.example.com", ts=2, path="/v2", svc="api"))
    assert ops(changes) == [("AddOrUpdate", "demo/web")]
    # the owner goes: the member owns the host
    changes, problems = cfg.delete_ingress("demo/web")
    assert ops(changes) == [("Delete", "demo/web"), ("AddOrUpdate", "demo/api")] and problems == []
    assert state(cfg) == {"demo/api": ({"shop.example.com": True}, [], [])}


def test_members_are_ordered_oldest_first_and_a_member_keeps_the_hosts_it_owns() -> None:
    cfg = configuration()
    cfg.set_startup_complete()
    cfg.add_or_update_ingress(ing("c", "a.example.com", ts=3))
    cfg.add_or_update_ingress(ing("a", "a.example.com", ts=1))
    cfg.add_or_update_ingress(ing("b", "a.example.com", "b.example.com", ts=2))
    assert state(cfg) == {
        "demo/a": ({"a.example.com": True}, [("demo/b", ("a.example.com",)), ("demo/c", ("a.example.com",))],
                   []),
        # b owns b.example.com and is a member for a.example.com: no "taken" warning for it
        "demo/b": ({"a.example.com": False, "b.example.com": True}, [], []),
    }
    assert cfg.host_problems() == {}


def test_an_ingress_of_another_class_keeps_one_owner_per_host_on_both_sides() -> None:
    cfg = configuration()
    cfg.set_startup_complete()
    cfg.add_or_update_ingress(ing("inn", "a.example.com", ts=1))
    _, problems = cfg.add_or_update_ingress(ing("ours", "a.example.com", ts=2, cls=OURS))
    assert [(p.key.ns_name, p.reason) for p in problems] == [("demo/ours", "Rejected")]
    assert "host a.example.com by Ingress demo/inn" in problems[0].message
    cfg.add_or_update_ingress(ing("own", "b.example.com", ts=3, cls=OURS))
    _, problems = cfg.add_or_update_ingress(ing("late", "b.example.com", ts=4))
    assert [(p.key.ns_name, p.reason) for p in problems] == [("demo/late", "Rejected")]
    assert set(state(cfg)) == {"demo/inn", "demo/own"} and all(not m for _, m, _ in state(cfg).values())


@pytest.mark.parametrize("annotations", [{"nginx.org/mergeable-ingress-type": "minion"},
                                         {"nginx.ingress.kubernetes.io/canary": "true"}])
def test_minions_and_canaries_are_not_members(annotations: dict[str, str]) -> None:
    cfg = configuration()
    cfg.set_startup_complete()
    cfg.add_or_update_ingress(ing("web", "a.example.com", ts=1))
    cfg.add_or_update_ingress(ing("child", "a.example.com", ts=2, annotations=annotations))
    (web,) = cfg.get_resources()
    assert isinstance(web, IngressConfiguration) and web.members == []


def test_without_the_compat_flag_nothing_is_shared() -> None:
    cfg = configuration(compat=False)
    cfg.set_startup_complete()
    cfg.add_or_update_ingress(ing("a", "a.example.com", ts=1, cls=OURS))
    _, problems = cfg.add_or_update_ingress(ing("b", "a.example.com", ts=2, cls=OURS))
    assert [p.key.ns_name for p in problems] == ["demo/b"]


def test_moving_the_owner_to_another_class_turns_its_members_into_losers_and_back() -> None:
    cfg = configuration()
    cfg.set_startup_complete()
    cfg.add_or_update_ingress(ing("a", "a.example.com", ts=1))
    cfg.add_or_update_ingress(ing("b", "a.example.com", ts=2, path="/b"))
    _, problems = cfg.add_or_update_ingress(ing("a", "a.example.com", ts=1, cls=OURS))
    assert [(p.key.ns_name, p.reason) for p in problems] == [("demo/b", "Rejected")]
    assert state(cfg) == {"demo/a": ({"a.example.com": True}, [], [])}
    changes, problems = cfg.add_or_update_ingress(ing("a", "a.example.com", ts=1))
    assert ops(changes) == [("AddOrUpdate", "demo/a")] and problems == []
    assert state(cfg)["demo/a"][1] == [("demo/b", ("a.example.com",))]
    assert cfg.host_problems() == {}


@pytest.mark.parametrize("seed", range(5))
def test_the_state_does_not_depend_on_the_order_or_the_start_up_mode(seed: int) -> None:
    objs = [ing("a", "x.example.com", ts=1), ing("b", "x.example.com", "y.example.com", ts=2),
            ing("c", "y.example.com", ts=3), ing("d", "x.example.com", ts=4, cls=OURS),
            ing("e", "z.example.com", ts=5, uid="uid-z"), ing("f", "z.example.com", ts=5, uid="uid-a")]
    rng = random.Random(seed)
    results = []
    for mode in ("incremental", "startup", "legacy"):
        cfg = configuration(legacy=mode == "legacy")
        if mode == "incremental":
            cfg.set_startup_complete()
        order = objs[:]
        rng.shuffle(order)
        for o in order:
            cfg.add_or_update_ingress(o)
        cfg.set_startup_complete()
        results.append((state(cfg), sorted(k.ns_name for k in cfg.host_problems())))
    assert results[0] == results[1] == results[2]
    configured, problems = results[0]
    assert problems == ["demo/d"]
    assert configured["demo/a"][1] == [("demo/b", ("x.example.com",))]
    assert configured["demo/b"][:2] == ({"x.example.com": False, "y.example.com": True},
                                        [("demo/c", ("y.example.com",))])
    # e and f were created in the same second: as ingress-nginx orders them, the greater namespace/name owns
    # the host (not the greater UID: the same owner on every cluster), the other is its member
    assert configured["demo/f"][1] == [("demo/e", ("z.example.com",))]


def test_a_weak_claim_makes_no_member() -> None:
    """An Ingress whose from-to-www-redirect name is another Ingress's host is not that host's member."""
    cfg = configuration()
    cfg.set_startup_complete()
    cfg.add_or_update_ingress(ing("www", "www.a.example.com", ts=1))
    cfg.add_or_update_ingress(ing("apex", "a.example.com", ts=2,
                                  annotations={"nginx.ingress.kubernetes.io/from-to-www-redirect": "true"}))
    assert state(cfg) == {"demo/apex": ({"a.example.com": True, "www.a.example.com": False}, [], []),
                          "demo/www": ({"www.a.example.com": True}, [], [])}


@pytest.mark.parametrize("uids", [("00000000-0000", "ffffffff-ffff"), ("ffffffff-ffff", "00000000-0000")])
def test_in_one_second_a_resource_that_does_not_share_wins_whatever_the_uids(uids: tuple[str, str]) -> None:
    objs = [ing("inn", "a.example.com", ts=1, uid=uids[0]),
            ing("nic", "a.example.com", ts=1, cls=OURS, uid=uids[1])]
    for order in (objs, objs[::-1]):
        cfg = configuration()
        for o in order:
            cfg.add_or_update_ingress(o)
        cfg.set_startup_complete()
        assert set(state(cfg)) == {"demo/nic"} and [k.ns_name for k in cfg.host_problems()] == ["demo/inn"]
