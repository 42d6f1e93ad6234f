"""Configuration: host ownership, changes, problems, mergeable Ingresses, start-up modes and lookups."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ingressctl.controller.configuration import (
    Configuration,
    ConfigurationProblem,
    ResourceChange,
)
from ingressctl.keys import ResourceKey

_generation = itertools.count(1)


def ing(
    name: str,
    *hosts: str,
    ts: int = 0,
    uid: str | None = None,
    ns: str = "default",
    kind: str = "",
    paths: tuple[str, ...] = ("/",),
    svc: str = "svc",
    cls: str = "nginx",
    tls: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    ann = dict(annotations or {})
    if kind:
        ann["nginx.org/mergeable-ingress-type"] = kind
    rules: list[dict[str, Any]] = []
    for h in hosts:
        r: dict[str, Any] = {"host": h}
        if kind != "master":
            r["http"] = {
                "paths": [
                    {
                        "path": p,
                        "pathType": "Prefix",
                        "backend": {"service": {"name": svc, "port": {"number": 80}}},
                    }
                    for p in paths
                ]
            }
        rules.append(r)
    spec: dict[str, Any] = {"ingressClassName": cls, "rules": rules}
    if tls is not None:
        spec["tls"] = tls
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": uid or f"uid-{name}",
            "generation": next(_generation),
            "creationTimestamp": f"2024-01-01T00:00:{ts:02d}Z",
            "annotations": ann,
        },
        "spec": spec,
    }


def ikey(ns_name: str) -> ResourceKey:
    return ResourceKey("ingress", ns_name)


def ops(changes: list[ResourceChange]) -> list[tuple[str, str]]:
    return [(c.op, c.resource.key) for c in changes]


def probs(problems: list[ConfigurationProblem]) -> list[tuple[str, str, str]]:
    return [
        (f"{p.obj['metadata']['namespace']}/{p.obj['metadata']['name']}", p.reason, p.message)
        for p in problems
    ]


@pytest.fixture
def conf() -> Configuration:
    c = Configuration(ingress_class="nginx")
    assert c.set_startup_complete() == ([], [])
    return c


T = "All hosts are taken by other resources"


def test_add_configures_and_owns_hosts(conf: Configuration) -> None:
    changes, problems = conf.add_or_update_ingress(ing("a", "a.com", "b.com"))
    assert ops(changes) == [("AddOrUpdate", "default/a")]
    assert problems == []
    assert changes[0].resource.valid_hosts == {"a.com": True, "b.com": True}
    assert changes[0].resource.warnings == []


def test_oldest_wins_whatever_the_order(conf: Configuration) -> None:
    conf.add_or_update_ingress(ing("young", "a.com", "b.com", ts=5))
    changes, problems = conf.add_or_update_ingress(ing("old", "a.com", ts=1))
    # young keeps b.com with a warning for a.com; old takes a.com.
    assert ops(changes) == [("AddOrUpdate", "default/old"), ("AddOrUpdate", "default/young")]
    young = conf.get_resource(ikey("default/young"))
    assert young is not None
    assert young.valid_hosts == {"a.com": False, "b.com": True}
    assert young.warnings == ["host a.com is taken by another resource (Ingress default/old)"]
    assert problems == []
    assert conf.host_owner("a.com") == ikey("default/old")


def test_all_hosts_taken_is_a_problem_and_deletes(conf: Configuration) -> None:
    conf.add_or_update_ingress(ing("young", "a.com", ts=5))
    changes, problems = conf.add_or_update_ingress(ing("old", "a.com", ts=1))
    assert ops(changes) == [("Delete", "default/young"), ("AddOrUpdate", "default/old")]  # deletes first
    # The loser's Delete names each host it lost and the winner (NIC's host-taken warning), and so does
    # the problem.
    assert changes[0].resource.warnings == ["host a.com is taken by another resource (Ingress default/old)"]
    assert changes[0].resource.valid_hosts == {"a.com": False}
    assert probs(problems) == [("default/young", "Rejected", f"{T}: host a.com by Ingress default/old")]
    assert problems[0].is_error is False
    # The same problem again is not re-reported; a later arrival that loses is reported once.
    changes, problems = conf.add_or_update_ingress(ing("younger", "a.com", ts=9))
    assert changes == []
    assert probs(problems) == [("default/younger", "Rejected", f"{T}: host a.com by Ingress default/old")]
    # Deleting the owner hands the host to the next oldest; the remaining loser's problem names it.
    changes, problems = conf.delete_ingress("default/old")
    assert ops(changes) == [("Delete", "default/old"), ("AddOrUpdate", "default/young")]
    assert probs(problems) == [("default/younger", "Rejected", f"{T}: host a.com by Ingress default/young")]
    assert conf.host_problems().keys() == {ikey("default/younger")}


def test_tie_on_timestamp_goes_to_greater_uid(conf: Configuration) -> None:
    conf.add_or_update_ingress(ing("x", "a.com", ts=3, uid="bbb"))
    conf.add_or_update_ingress(ing("y", "a.com", ts=3, uid="ccc"))
    conf.add_or_update_ingress(ing("z", "a.com", ts=3, uid="aaa"))
    assert conf.host_owner("a.com") == ikey("default/y")
    # String order, not length: "abc" > "ab" and "b" > "abc".
    conf.add_or_update_ingress(ing("p1", "p.com", ts=3, uid="ab"))
    conf.add_or_update_ingress(ing("p2", "p.com", ts=3, uid="abc"))
    assert conf.host_owner("p.com") == ikey("default/p2")
    conf.add_or_update_ingress(ing("p3", "p.com", ts=3, uid="b"))
    assert conf.host_owner("p.com") == ikey("default/p3")
    # An older object beats any UID; timestamps count in whole seconds.
    conf.add_or_update_ingress(ing("p4", "p.com", ts=2, uid="0"))
    assert conf.host_owner("p.com") == ikey("default/p4")


def test_invalid_ingress_is_rejected_and_removed(conf: Configuration) -> None:
    changes, problems = conf.add_or_update_ingress(ing("bad", "bad_host"))
    assert changes == []
    assert len(problems) == 1
    assert problems[0].reason == "Rejected" and problems[0].is_error is True
    assert problems[0].message.startswith(
        'spec.rules[0].host: Invalid value: "bad_host": a lowercase RFC 1123'
    )
    # The rejection is reported on every sync of the invalid Ingress.
    assert len(conf.add_or_update_ingress(ing("bad", "bad_host"))[1]) == 1
    # A configured Ingress that becomes invalid is deleted with the error.
    conf.add_or_update_ingress(ing("a", "a.com"))
    changes, problems = conf.add_or_update_ingress(ing("a", "a.com", paths=("/x", "/x")))
    assert ops(changes) == [("Delete", "default/a")]
    assert changes[0].error == 'spec.rules[0].http.paths[1].path: Duplicate value: "/x"'
    assert problems == []
    assert conf.get_resources() == []


def test_several_errors_are_aggregated(conf: Configuration) -> None:
    _, problems = conf.add_or_update_ingress(ing("bad", "bad_host", paths=("x",)))
    assert problems[0].message.startswith('[spec.rules[0].host: Invalid value: "bad_host"')
    assert 'spec.rules[0].http.paths[0].path: Invalid value: "x"' in problems[0].message


def test_class_change_deletes_silently(conf: Configuration) -> None:
    conf.add_or_update_ingress(ing("a", "a.com"))
    changes, problems = conf.add_or_update_ingress(ing("a", "a.com", cls="other"))
    assert ops(changes) == [("Delete", "default/a")] and changes[0].error == ""
    assert problems == []
    assert conf.add_or_update_ingress(ing("b", "b.com", cls="other")) == ([], [])
    annotated = ing("c", "c.com", cls="other", annotations={"kubernetes.io/ingress.class": "nginx"})
    assert ops(conf.add_or_update_ingress(annotated)[0]) == [("AddOrUpdate", "default/c")]


def test_no_op_updates_produce_no_change(conf: Configuration) -> None:
    a = ing("a", "a.com")
    conf.add_or_update_ingress(a)
    labelled = {**a, "metadata": {**a["metadata"], "labels": {"x": "y"}, "resourceVersion": "99"}}
    assert conf.add_or_update_ingress(labelled) == ([], [])
    assert conf.get_resources()[0].ingress is labelled  # the latest object is kept
    changed = ing("a", "a.com", paths=("/new",))
    assert ops(conf.add_or_update_ingress(changed)[0]) == [("AddOrUpdate", "default/a")]


def test_delete_unknown_is_a_no_op(conf: Configuration) -> None:
    assert conf.delete_ingress("default/none") == ([], [])


def test_changes_are_squashed_deletes_first(conf: Configuration) -> None:
    conf.add_or_update_ingress(ing("b", "b.com", ts=5))
    conf.add_or_update_ingress(ing("c", "c.com", "d.com", ts=5))
    # An older Ingress takes every host of b and one of c.
    changes, _ = conf.add_or_update_ingress(ing("a", "b.com", "c.com", ts=1))
    assert ops(changes) == [
        ("Delete", "default/b"),
        ("AddOrUpdate", "default/a"),
        ("AddOrUpdate", "default/c"),
    ]
    keys = [c.resource.key for c in changes]
    assert len(keys) == len(set(keys))


# ------------------------------------------------------------------------------------------- mergeable


def test_minions_attach_to_master_and_paths_conflict(conf: Configuration) -> None:
    changes, problems = conf.add_or_update_ingress(
        ing("m1", "a.com", kind="minion", paths=("/x", "/y"), ts=5)
    )
    assert changes == []
    assert probs(problems) == [
        ("default/m1", "NoIngressMasterFound", "Ingress master is invalid or doesn't exist")
    ]

    changes, problems = conf.add_or_update_ingress(ing("master", "a.com", kind="master", ts=9))
    assert ops(changes) == [("AddOrUpdate", "default/master")]
    assert problems == []  # the orphan problem disappears silently
    assert conf.host_problems() == {}
    master = changes[0].resource
    assert master.is_master and [m.key for m in master.minions] == ["default/m1"]

    # An older minion in another namespace takes /y.
    changes, _ = conf.add_or_update_ingress(
        ing("m2", "a.com", ns="other", kind="minion", paths=("/y", "/z"), ts=1)
    )
    assert ops(changes) == [("AddOrUpdate", "default/master")]
    master = changes[0].resource
    assert [(m.key, m.valid_paths) for m in master.minions] == [
        ("default/m1", {"/x": True, "/y": False}),
        ("other/m2", {"/y": True, "/z": True}),
    ]
    assert master.child_warnings == {"default/m1": ["path /y is taken by another resource"]}

    # Minion changes update the master; lookups by a minion's Service return the master.
    assert [r.key for r in conf.find_resources_for_service("other", "svc")] == ["default/master"]
    changes, _ = conf.delete_ingress("other/m2")
    assert ops(changes) == [("AddOrUpdate", "default/master")]
    assert changes[0].resource.minions[0].valid_paths == {"/x": True, "/y": True}

    # Without the master the minion is an orphan again.
    changes, problems = conf.delete_ingress("default/master")
    assert ops(changes) == [("Delete", "default/master")]
    assert probs(problems) == [
        ("default/m1", "NoIngressMasterFound", "Ingress master is invalid or doesn't exist")
    ]


def test_minion_under_regular_host_is_orphan(conf: Configuration) -> None:
    conf.add_or_update_ingress(ing("reg", "a.com", ts=1))
    _, problems = conf.add_or_update_ingress(ing("m", "a.com", kind="minion"))
    assert probs(problems) == [
        ("default/m", "NoIngressMasterFound", "Ingress master is invalid or doesn't exist")
    ]
    # A master younger than the regular Ingress cannot take the host either.
    _, problems = conf.add_or_update_ingress(ing("master", "a.com", kind="master", ts=4))
    assert probs(problems) == [("default/master", "Rejected", f"{T}: host a.com by Ingress default/reg")]
    # Once the regular Ingress goes, the master takes over and adopts the minion.
    changes, problems = conf.delete_ingress("default/reg")
    assert ops(changes) == [("Delete", "default/reg"), ("AddOrUpdate", "default/master")]
    assert [m.key for m in changes[1].resource.minions] == ["default/m"]
    assert problems == []


def test_minions_by_host_index_is_kept_during_startup() -> None:
    c = Configuration(ingress_class="nginx")
    c.add_or_update_ingress(ing("m", "a.com", kind="minion"))
    c.add_or_update_ingress(ing("m2", "b.com", kind="minion"))
    c.add_or_update_ingress(ing("m2", "a.com", kind="minion", paths=("/z",)))  # moved host
    assert c._children_by_host == {"a.com": {ikey("default/m"), ikey("default/m2")}}  # one key alone: no set
    c.delete_ingress("default/m")
    assert c._children_by_host == {"a.com": ikey("default/m2")}


# -------------------------------------------------------------------------------------------- start-up


def test_startup_defers_resolution_then_reports_everything() -> None:
    c = Configuration(ingress_class="nginx")
    assert c.add_or_update_ingress(ing("young", "a.com", ts=5)) == ([], [])
    assert c.add_or_update_ingress(ing("old", "a.com", "b.com", ts=1)) == ([], [])
    assert c.add_or_update_ingress(ing("orphan", "z.com", kind="minion")) == ([], [])
    assert c.add_or_update_ingress(ing("gone", "g.com")) == ([], [])
    assert c.delete_ingress("default/gone") == ([], [])
    _, problems = c.add_or_update_ingress(ing("bad", "bad_host"))
    assert [p.reason for p in problems] == ["Rejected"]  # validation errors are reported at once
    assert c.get_resources() == []
    assert c.find_resources_for_service("default", "svc") == []

    changes, problems = c.set_startup_complete()
    assert ops(changes) == [("AddOrUpdate", "default/old")]
    assert probs(problems) == [
        ("default/orphan", "NoIngressMasterFound", "Ingress master is invalid or doesn't exist"),
        ("default/young", "Rejected", f"{T}: host a.com by Ingress default/old"),
    ]
    assert c.set_startup_complete() == ([], [])
    # Steady state from now on.
    changes, _ = c.delete_ingress("default/old")
    assert ops(changes) == [("Delete", "default/old"), ("AddOrUpdate", "default/young")]


def _spy(c: Configuration, name: str) -> list[int]:
    calls: list[int] = []
    original = getattr(c, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    setattr(c, name, wrapper)
    return calls


@pytest.mark.parametrize("legacy", [False, True])
def test_startup_resolution_count(legacy: bool) -> None:
    n = 50
    c = Configuration(ingress_class="nginx", legacy_startup=legacy)
    rebuilds = _spy(c, "_rebuild_hosts")
    incremental = _spy(c, "_resolve_hosts")
    for i in range(n):
        c.add_or_update_ingress(ing(f"i{i}", f"h{i % 7}.com", f"x{i}.com", ts=i % 5))
    during = len(rebuilds)
    changes, _ = c.set_startup_complete()
    assert incremental == []
    if legacy:
        assert during == n and len(rebuilds) == n  # one full rebuild per add: O(N^2) overall
    else:
        assert during == 0 and len(rebuilds) == 1  # nothing per add, ONE resolution at the end
    assert len(changes) == n and all(ch.op == "AddOrUpdate" for ch in changes)
    # Steady state is incremental, not a rebuild.
    if not legacy:
        c.add_or_update_ingress(ing("late", "h1.com"))
        assert len(rebuilds) == 1 and len(incremental) == 1


def test_legacy_startup_reaches_the_same_state() -> None:
    objs = [ing("young", "a.com", ts=5), ing("old", "a.com", "b.com", ts=1), ing("m", "b.com", kind="minion")]
    states = []
    for legacy in (False, True):
        c = Configuration(ingress_class="nginx", legacy_startup=legacy)
        for o in objs:
            c.add_or_update_ingress(o)
        c.set_startup_complete()
        problem_keys = {k.ns_name for k in c.host_problems()}
        states.append(([(r.key, r.valid_hosts) for r in c.get_resources()], problem_keys))
    assert states[0] == states[1]


# --------------------------------------------------------------------------------------------- lookups


def test_lookups_by_service_and_secret(conf: Configuration) -> None:
    conf.add_or_update_ingress(ing("a", "a.com", svc="web", tls=[{"hosts": ["a.com"], "secretName": "cert"}]))
    conf.add_or_update_ingress(
        ing(
            "b",
            "b.com",
            svc="web",
            tls=[{"hosts": ["b.com"]}],
            annotations={"nginx.org/basic-auth-secret": "auth"},
        )
    )
    conf.add_or_update_ingress(ing("c", "c.com", svc="api", ns="other"))
    conf.add_or_update_ingress(ing("loser", "a.com", svc="web", ts=30))  # not configured
    assert [r.key for r in conf.find_resources_for_service("default", "web")] == ["default/a", "default/b"]
    assert conf.find_resources_for_service("default", "api") == []
    assert [r.key for r in conf.find_resources_for_service("other", "api")] == ["other/c"]
    assert [r.key for r in conf.find_resources_for_secret("default", "cert")] == ["default/a"]
    assert [r.key for r in conf.find_resources_for_secret("default", "auth")] == ["default/b"]
    assert [r.key for r in conf.find_resources_for_default_tls_secret()] == ["default/b"]
    # Indexes follow updates and deletes.
    conf.add_or_update_ingress(ing("a", "a.com", svc="api"))
    assert [r.key for r in conf.find_resources_for_service("default", "web")] == ["default/b"]
    assert conf.find_resources_for_secret("default", "cert") == []
    conf.delete_ingress("default/b")
    assert conf.find_resources_for_service("default", "web") == []
    assert conf._by_service.get(("default", "web")) == ikey("default/loser")
    assert [r.key for r in conf.get_resources()] == ["default/a", "other/c"]
