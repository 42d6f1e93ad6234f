"""Configuration ownership under ANY arrival order (hypothesis).

Random Ingresses (regular, master, minion, invalid, other class) with overlapping hosts, random creation times
and UIDs are added, updated and deleted in random orders. In every mode (steady state, start-up with a random
switch point, legacy start-up) the final state must equal a reference computed from scratch, and replaying the
returned ResourceChanges must rebuild exactly the configured resources (nothing lost, nothing stale).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ingressctl.controller.configuration import Configuration, ResourceChange

HOSTS = ("a.com", "b.com", "c.com", "d.com")
PATHS = ("/x", "/y", "/z")
KEYS = tuple(f"{ns}/i{i}" for ns in ("n1", "n2") for i in range(4))


@dataclass(frozen=True)
class Spec:
    kind: str  # regular | master | minion | invalid | foreign
    hosts: tuple[str, ...]
    paths: tuple[str, ...]
    ts: int
    uid_prefix: str


specs = st.builds(
    Spec,
    kind=st.sampled_from(
        ("regular", "regular", "regular", "master", "minion", "minion", "invalid", "foreign")
    ),
    hosts=st.lists(st.sampled_from(HOSTS), min_size=1, max_size=3, unique=True).map(tuple),
    paths=st.lists(st.sampled_from(PATHS), min_size=1, max_size=3, unique=True).map(tuple),
    ts=st.integers(0, 2),
    uid_prefix=st.sampled_from("0123"),
)
operations = st.lists(st.tuples(st.sampled_from(KEYS), st.none() | specs), min_size=1, max_size=30)


def build(key: str, spec: Spec, generation: int) -> dict[str, Any]:
    ns, name = key.split("/")
    hosts = spec.hosts[:1] if spec.kind in ("master", "minion") else spec.hosts
    ann: dict[str, str] = {}
    if spec.kind in ("master", "minion"):
        ann["nginx.org/mergeable-ingress-type"] = spec.kind
    rules: list[dict[str, Any]] = []
    for h in hosts:
        rule: dict[str, Any] = {"host": "bad_host" if spec.kind == "invalid" else h}
        if spec.kind != "master":
            rule["http"] = {
                "paths": [
                    {
                        "path": p,
                        "pathType": "Prefix",
                        "backend": {"service": {"name": "svc", "port": {"number": 80}}},
                    }
                    for p in spec.paths
                ]
            }
        rules.append(rule)
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"{spec.uid_prefix}-{key}",
            "generation": generation,
            "creationTimestamp": f"2024-01-01T00:00:0{spec.ts}Z",
            "annotations": ann,
        },
        "spec": {"ingressClassName": "other" if spec.kind == "foreign" else "nginx", "rules": rules},
    }


Rendered = dict[str, tuple[dict[str, bool], tuple[tuple[str, dict[str, bool]], ...]]]


def reference(
    final: dict[str, dict[str, Any]], specs_by_key: dict[str, Spec]
) -> tuple[dict[str, str], Rendered, dict[str, str]]:
    """Ownership from scratch: oldest creation time wins, then the greater UID."""
    valid = {k: s for k, s in specs_by_key.items() if s.kind not in ("invalid", "foreign")}

    def rank(k: str) -> tuple[int, str]:
        return valid[k].ts, final[k]["metadata"]["uid"]

    def best(keys: list[str]) -> str:
        oldest = min(rank(k)[0] for k in keys)
        return max((k for k in keys if rank(k)[0] == oldest), key=lambda k: rank(k)[1])

    def hosts_of(k: str) -> tuple[str, ...]:
        return valid[k].hosts[:1] if valid[k].kind in ("master", "minion") else valid[k].hosts

    owners: dict[str, str] = {}
    for h in HOSTS:
        claimants = [k for k in valid if valid[k].kind != "minion" and h in hosts_of(k)]
        if claimants:
            owners[h] = best(claimants)
    rendered: Rendered = {}
    problems: dict[str, str] = {}
    for k, s in valid.items():
        if s.kind == "minion":
            owner = owners.get(hosts_of(k)[0])
            if owner is None or valid[owner].kind != "master":
                problems[k] = "NoIngressMasterFound"
            continue
        vh = {h: owners.get(h) == k for h in hosts_of(k)}
        if not any(vh.values()):
            problems[k] = "Rejected"
            continue
        minions: list[tuple[str, dict[str, bool]]] = []
        if s.kind == "master":
            mkeys = sorted(m for m in valid if valid[m].kind == "minion" and hosts_of(m)[0] == s.hosts[0])
            for m in mkeys:
                vp = {p: best([o for o in mkeys if p in valid[o].paths]) == m for p in valid[m].paths}
                minions.append((m, vp))
        rendered[k] = (vh, tuple(minions))
    return owners, rendered, problems


def apply(rendered: Rendered, changes: list[ResourceChange]) -> None:
    ops = [c.op for c in changes]
    assert ops == sorted(ops, key=lambda op: op != "Delete"), "deletes must come first"
    keys = [c.resource.key for c in changes]
    assert len(keys) == len(set(keys)), "a resource appears twice"
    for c in changes:
        if c.op == "Delete":
            assert c.resource.key in rendered, f"delete of a resource never added: {c.resource.key}"
            del rendered[c.resource.key]
        else:
            r = c.resource
            rendered[r.key] = (dict(r.valid_hosts), tuple((m.key, dict(m.valid_paths)) for m in r.minions))


def state(c: Configuration) -> Rendered:
    return {
        r.key: (dict(r.valid_hosts), tuple((m.key, dict(m.valid_paths)) for m in r.minions))
        for r in c.get_resources()
    }


def messages(c: Configuration) -> tuple[dict[str, list[str]], dict[str, str]]:
    return ({r.key: sorted(r.warnings) for r in c.get_resources()},
            {k.ns_name: p.message for k, p in c.host_problems().items()})


def run(mode: str, sequence: list[tuple[str, Spec | None]], switch: int) -> tuple[Configuration, Rendered]:
    c = Configuration(ingress_class="nginx", legacy_startup=(mode == "legacy"))
    rendered: Rendered = {}
    if mode == "steady":
        switch = 0
    elif mode == "legacy":
        switch = len(sequence)
    for i, (key, spec) in enumerate(sequence):
        if i == switch:
            changes, _ = c.set_startup_complete()
            apply(rendered, changes)
        if spec is None:
            changes, _ = c.delete_ingress(key)
        else:
            changes, _ = c.add_or_update_ingress(build(key, spec, i + 1))
        if mode == "startup" and i < switch:
            assert changes == [], "start-up must not resolve hosts"
        apply(rendered, changes)
    if not c.startup_complete:
        changes, _ = c.set_startup_complete()
        apply(rendered, changes)
    return c, rendered


@settings(max_examples=300, deadline=None)
@given(sequence=operations, switch=st.integers(0, 30))
def test_ownership_is_independent_of_arrival_order_in_every_mode(
    sequence: list[tuple[str, Spec | None]], switch: int
) -> None:
    final: dict[str, dict[str, Any]] = {}
    specs_by_key: dict[str, Spec] = {}
    for i, (key, spec) in enumerate(sequence):
        if spec is None:
            final.pop(key, None)
            specs_by_key.pop(key, None)
        else:
            final[key] = build(key, spec, i + 1)
            specs_by_key[key] = spec
    owners, expected, expected_problems = reference(final, specs_by_key)
    scratch = Configuration(ingress_class="nginx")
    scratch.set_startup_complete()
    for obj in final.values():
        scratch.add_or_update_ingress(obj)
    for mode in ("steady", "startup", "legacy"):
        c, rendered = run(mode, sequence, switch)
        assert state(c) == expected, mode
        # Warnings and problem messages name the current winners: never stale after ownership moved.
        assert messages(c) == messages(scratch), mode
        assert rendered == expected, f"{mode}: replaying the changes does not give the configured state"
        assert {k.ns_name: p.reason for k, p in c.host_problems().items()} == expected_problems, mode
        owner_names = {h: o.ns_name if (o := c.host_owner(h)) else None for h in HOSTS}
        assert owner_names == {h: owners.get(h) for h in HOSTS}, mode


@settings(max_examples=200, deadline=None)
@given(sequence=operations, order=st.randoms(use_true_random=False))
def test_same_objects_in_any_order_give_the_same_state(
    sequence: list[tuple[str, Spec | None]], order: Any
) -> None:
    objs = {key: build(key, spec, 1) for key, spec in sequence if spec is not None}
    results = []
    for _ in range(2):
        keys = list(objs)
        order.shuffle(keys)
        c = Configuration(ingress_class="nginx")
        c.set_startup_complete()
        for k in keys:
            c.add_or_update_ingress(objs[k])
        results.append((state(c), messages(c)))
    assert results[0] == results[1]
