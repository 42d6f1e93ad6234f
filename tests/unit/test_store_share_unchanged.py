"""ThreadSafeStore updates share the old object's equal values: the new object reads the same, the old one is
never changed, and values of different JSON types are never exchanged."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from ingressctl.k8s.store import (
    BY_SERVICE_INDEX,
    ThreadSafeStore,
    endpoint_slices_by_service,
    share_unchanged,
)


def ingress(rv: str, status_ip: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"loadBalancer": {}}
    if status_ip:
        status = {"loadBalancer": {"ingress": [{"ip": status_ip}]}}
    return {"kind": "Ingress", "apiVersion": "networking.k8s.io/v1",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u-1", "resourceVersion": rv,
                         "creationTimestamp": "2024-01-01T00:00:00Z", "labels": {"app": "web"},
                         "annotations": {"nginx.org/rewrites": "x"}},
            "spec": {"ingressClassName": "nginx",
                     "rules": [{"host": "a.example.com", "http": {"paths": [
                         {"path": "/", "pathType": "Prefix",
                          "backend": {"service": {"name": "svc", "port": {"number": 80}}}}]}}]},
            "status": status}


def test_a_status_update_shares_spec_and_unchanged_metadata() -> None:
    s = ThreadSafeStore()
    old = ingress("1")
    s.add(old)
    old_copy = copy.deepcopy(old)
    new = ingress("2", status_ip="10.0.0.1")
    expected = copy.deepcopy(new)
    assert s.add(new) is old
    stored = s.get_by_key("ns/web")
    assert stored is new and new == expected and old == old_copy
    assert new["spec"] is old["spec"]
    assert new["metadata"] is not old["metadata"]
    assert new["metadata"]["labels"] is old["metadata"]["labels"]
    assert new["metadata"]["annotations"] is old["metadata"]["annotations"]
    assert new["metadata"]["uid"] is old["metadata"]["uid"]
    assert new["status"] is not old["status"]


def test_a_spec_change_shares_only_what_is_equal() -> None:
    old = ingress("1")
    new = ingress("2")
    new["spec"]["rules"][0]["host"] = "b.example.com"
    expected = copy.deepcopy(new)
    share_unchanged(old, new)
    assert new == expected
    assert new["spec"] is not old["spec"] and new["spec"]["rules"] is not old["spec"]["rules"]
    assert new["status"] is old["status"]


def test_json_types_are_never_exchanged() -> None:
    old: dict[str, Any] = {"metadata": {"name": "x"}, "a": {"ready": True}, "b": [1], "c": {"n": {"v": 1}},
                           "d": 2}
    new: dict[str, Any] = {"metadata": {"name": "x"}, "a": {"ready": 1}, "b": [1.0], "c": {"n": {"v": True}},
                           "d": 2.0}
    share_unchanged(old, new)
    assert type(new["a"]["ready"]) is int and type(new["b"][0]) is float
    assert type(new["c"]["n"]["v"]) is bool and type(new["d"]) is float
    assert new["a"] is not old["a"] and new["b"] is not old["b"] and new["c"]["n"] is not old["c"]["n"]


def test_indices_follow_an_update_with_shared_values() -> None:
    s = ThreadSafeStore({BY_SERVICE_INDEX: endpoint_slices_by_service})
    labels = {"kubernetes.io/service-name": "web"}
    s.add({"metadata": {"name": "s", "namespace": "ns", "resourceVersion": "1", "labels": dict(labels)}})
    s.add({"metadata": {"name": "s", "namespace": "ns", "resourceVersion": "2", "labels": dict(labels)},
           "endpoints": []})
    assert [o["metadata"]["resourceVersion"] for o in s.by_index(BY_SERVICE_INDEX, "ns/web")] == ["2"]
    s.add({"metadata": {"name": "s", "namespace": "ns", "resourceVersion": "3",
                        "labels": {"kubernetes.io/service-name": "api"}}})
    assert s.by_index(BY_SERVICE_INDEX, "ns/web") == []
    assert len(s.by_index(BY_SERVICE_INDEX, "ns/api")) == 1


json_leaf = st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from([0.0, 1.0, 2.5]) | \
    st.sampled_from(["", "a", "b"])
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["a", "b", "c"]), inner, max_size=3), max_leaves=12)
json_object = st.dictionaries(st.sampled_from(["metadata", "spec", "status", "x"]), json_value, max_size=4)


@settings(max_examples=400, deadline=None)
@given(old=json_object, new=json_object)
@example(old={"metadata": {"a": 1, "b": 1, "c": 1}}, new={"metadata": {"a": 1, "c": 1, "b": 1}})
def test_share_unchanged_never_changes_what_either_object_says(old: dict[str, Any],
                                                              new: dict[str, Any]) -> None:
    old_text, new_text = json.dumps(old), json.dumps(new)
    share_unchanged(old, new)
    assert json.dumps(old) == old_text and json.dumps(new) == new_text
