"""Subselector endpoint filtering and the Pod handler (VirtualServer upstream `subselector`)."""

from __future__ import annotations

from typing import Any

from ingressctl.controller.task import Task
from ingressctl.kinds.virtualserver.pods import (
    POD_KIND,
    PodHandler,
    pod_transform,
    subselected_services,
    subselected_slices,
)

PODS = {"demo/a": {"metadata": {"name": "a", "labels": {"app": "web", "v": "1"}}},
        "demo/b": {"metadata": {"name": "b", "labels": {"app": "web", "v": "2"}}},
        "other/c": {"metadata": {"name": "c", "labels": {"v": "2"}}}}


def _ep(ip: str, pod: str | None, ns: str | None = None) -> dict[str, Any]:
    ep: dict[str, Any] = {"addresses": [ip], "conditions": {"ready": True}}
    if pod is not None:
        ep["targetRef"] = {"kind": "Pod", "name": pod, **({"namespace": ns} if ns else {})}
    return ep


def test_only_endpoints_on_matching_pods_are_kept() -> None:
    sl = {"ports": [{"port": 8080}], "endpoints": [_ep("10.0.0.1", "a"), _ep("10.0.0.2", "b"),
                                                   _ep("10.0.0.3", None), _ep("10.0.0.4", "gone"),
                                                   _ep("10.0.0.5", "c", "other")]}
    out = subselected_slices([sl], "demo", {"v": "2"}, PODS.get)
    assert [e["addresses"] for e in out[0]["endpoints"]] == [["10.0.0.2"], ["10.0.0.5"]]
    assert out[0]["ports"] == sl["ports"] and len(sl["endpoints"]) == 5      # the cached slice is untouched
    both = subselected_slices([sl], "demo", {"app": "web", "v": "1"}, PODS.get)
    assert [e["addresses"] for e in both[0]["endpoints"]] == [["10.0.0.1"]]


def test_pod_handler_enqueues_label_changes_only() -> None:
    tasks: list[Task] = []
    h = PodHandler(tasks.append)
    pod = {"metadata": {"name": "a", "namespace": "demo", "resourceVersion": "1", "labels": {"v": "1"}},
           "status": {"phase": "Running"}}
    h.on_add(pod, True)    # the initial list
    assert tasks == []
    moved = {**pod, "metadata": {**pod["metadata"], "resourceVersion": "2"}, "status": {"phase": "Failed"}}
    h.on_update(pod, moved)
    assert tasks == []
    relabelled = {**moved, "metadata": {**moved["metadata"], "resourceVersion": "3", "labels": {"v": "2"}}}
    h.on_update(moved, relabelled)
    h.on_delete(relabelled)
    assert tasks == [Task(POD_KIND, "demo/a")] * 2
    assert pod_transform(pod) == {"metadata": {"name": "a", "namespace": "demo", "resourceVersion": "1",
                                               "labels": {"v": "1"}}}


def test_subselected_services_of_a_namespace() -> None:
    class Res:
        obj = {"metadata": {"namespace": "demo"}, "spec": {"upstreams": [
            {"name": "a", "service": "web", "subselector": {"v": "1"}},
            {"name": "b", "service": "other/api", "subselector": {"v": "1"}},
            {"name": "c", "service": "plain"}]}}
        vsrs = [("k", {"metadata": {"namespace": "other"}, "spec": {"upstreams": [
            {"name": "d", "service": "db", "subselector": {"x": "y"}}]}})]

    assert subselected_services([Res()], "demo") == ["demo/web"]
    assert subselected_services([Res()], "other") == ["other/api", "other/db"]
