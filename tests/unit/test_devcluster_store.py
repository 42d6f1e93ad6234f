"""The devcluster store without HTTP: resourceVersions, history bounds, snapshots, watcher registration.

A fixed clock is injected, so creationTimestamp is deterministic.
"""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.objects import DELETED, MODIFIED, Matcher, decode_continue
from ingressctl.devcluster.registry import Registry
from ingressctl.devcluster.resources import (
    CONFIGMAPS,
    DEFAULT_KINDS,
    INGRESSES,
    NAMESPACES,
    SERVICES,
)
from ingressctl.devcluster.selectors import parse_field_selector, parse_label_selector
from ingressctl.devcluster.store import Store

ALL = Matcher(parse_label_selector(""), parse_field_selector("", {}))


def make_store(history: int = 100) -> Store:
    store = Store(Registry(DEFAULT_KINDS), history=history, clock=lambda: "2025-01-02T03:04:05Z")
    store.create(NAMESPACES, "", {"metadata": {"name": "ns"}})
    return store


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": data}


def test_create_metadata_with_injected_clock() -> None:
    store = make_store()
    stored = store.create(CONFIGMAPS, "ns", cm("a", k="v")).stored
    obj = stored.parse()
    assert obj["metadata"]["creationTimestamp"] == "2025-01-02T03:04:05Z"
    assert obj["metadata"]["resourceVersion"] == str(stored.rv) == str(store.resource_version)
    assert "generation" not in obj["metadata"]          # ConfigMaps have no spec
    backend = {"service": {"name": "web", "port": {"number": 80}}}
    ing = store.create(INGRESSES, "ns", {"metadata": {"name": "i"}, "spec": {"defaultBackend": backend}}
                       ).stored.parse()
    assert ing["metadata"]["generation"] == 1 and list(ing)[:1] == ["metadata"]


def test_every_commit_takes_the_next_resource_version() -> None:
    store = make_store()
    start = store.resource_version
    store.create(CONFIGMAPS, "ns", cm("a"))
    store.update(CONFIGMAPS, "ns", "a", cm("a", k="1"))
    store.update(CONFIGMAPS, "ns", "a", cm("a", k="1"))          # no-op: nothing committed
    store.patch(CONFIGMAPS, "ns", "a", "merge", {"data": {"k": "2"}})
    store.delete(CONFIGMAPS, "ns", "a")
    assert store.resource_version == start + 4
    watcher, events = store.watch(CONFIGMAPS, "ns", resource_version=str(start))
    assert [(e.type, e.rv) for e in events] == [("ADDED", start + 1), ("MODIFIED", start + 2),
                                                ("MODIFIED", start + 3), ("DELETED", start + 4)]
    assert events[-1].stored.parse()["data"] == {"k": "2"}
    store.unregister(watcher)


def test_history_bound_and_compaction() -> None:
    store = make_store(history=3)
    base = store.resource_version
    for i in range(6):
        store.create(CONFIGMAPS, "ns", cm(f"c{i}"))
    _, kept = store.watch(CONFIGMAPS, "ns", resource_version=str(base + 3))
    assert [e.rv for e in kept] == [base + 4, base + 5, base + 6]
    with pytest.raises(StatusError) as err:
        store.watch(CONFIGMAPS, "ns", resource_version=str(base + 2))
    assert (err.value.code, err.value.reason) == (410, "Expired")
    store.compact()
    with pytest.raises(StatusError):
        store.watch(CONFIGMAPS, "ns", resource_version=str(base + 5))
    _, none = store.watch(CONFIGMAPS, "ns", resource_version=str(store.resource_version))
    assert none == []


def test_snapshot_pages_ignore_later_writes() -> None:
    store = make_store()
    for i in range(6):
        store.create(CONFIGMAPS, "ns", cm(f"c{i}", v="old"))
    first = store.list_page(CONFIGMAPS, "ns", matcher=ALL, limit=2)
    assert [s.name for s in first.items] == ["c0", "c1"] and first.remaining == 4
    store.delete(CONFIGMAPS, "ns", "c3")
    store.update(CONFIGMAPS, "ns", "c4", cm("c4", v="new"))
    store.create(CONFIGMAPS, "ns", cm("c2a"))
    rest = store.list_page(CONFIGMAPS, "ns", matcher=ALL, limit=10, continue_token=first.continue_token)
    assert [(s.name, s.parse()["data"]["v"]) for s in rest.items] == [
        ("c2", "old"), ("c3", "old"), ("c4", "old"), ("c5", "old")]
    assert rest.resource_version == first.resource_version and rest.continue_token == ""
    assert decode_continue(first.continue_token) == (first.resource_version, "ns/c1\x00")


def test_watcher_registration_is_atomic_with_commits() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "ns", cm("a"))
    watcher, initial = store.watch(CONFIGMAPS, "ns")
    assert [(e.type, e.stored.name) for e in initial] == [("ADDED", "a")]
    store.update(CONFIGMAPS, "ns", "a", cm("a", x="1"))
    pending, rv = store.bookmark_point(watcher)
    assert [(e.type, e.rv) for e in pending] == [(MODIFIED, rv)]
    store.delete(CONFIGMAPS, "ns", "a")
    assert [e.type for e in watcher.wait(0)] == [DELETED]
    store.unregister(watcher)
    store.create(CONFIGMAPS, "ns", cm("c"))
    assert watcher.drain() == []


def test_finalizers_and_namespace_deletion() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "ns", {"metadata": {"name": "f", "finalizers": ["x"]}})
    marked = store.delete(CONFIGMAPS, "ns", "f")
    assert not marked.deleted and marked.stored.parse()["metadata"]["deletionTimestamp"]
    gone = store.patch(CONFIGMAPS, "ns", "f", "merge", {"metadata": {"finalizers": None}})
    assert gone.deleted
    store.create(CONFIGMAPS, "ns", cm("a"))
    store.delete(NAMESPACES, "", "ns")
    assert store.list_page(CONFIGMAPS, "", matcher=ALL).items == []
    with pytest.raises(StatusError) as err:
        store.create(CONFIGMAPS, "ns", cm("b"))
    assert err.value.code == 404


def test_load_keeps_status_and_leaves_inputs_alone() -> None:
    store = make_store()
    obj = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": "i", "namespace": "fresh", "labels": {"a": "b"}},
           "spec": {"rules": []}, "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "fresh"},
           "spec": {"ports": [{"port": 80}]}}
    before = repr((obj, svc))
    assert store.load([obj, svc]) == 2
    assert repr((obj, svc)) == before
    stored = store.get(INGRESSES, "fresh", "i").parse()
    assert stored["status"]["loadBalancer"]["ingress"] == [{"ip": "1.2.3.4"}]
    assert store.get(NAMESPACES, "", "fresh").name == "fresh"
    # Loading again replaces (uid kept).
    uid = stored["metadata"]["uid"]
    store.load([{**obj, "spec": {"ingressClassName": "x"}}])
    again = store.get(INGRESSES, "fresh", "i").parse()
    assert again["metadata"]["uid"] == uid and again["metadata"]["generation"] == 2
    # ... including a new status (as a cloud controller would set a Service's load balancer address).
    lb = {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}
    store.load([{**svc, "status": lb}])
    assert store.get(SERVICES, "fresh", "s").parse()["status"] == lb
