"""managedFields of non-apply writes (devcluster/managed.py): changed fields, set difference, recording."""

from __future__ import annotations

from typing import Any

from ingressctl.devcluster.builtin import DEPLOYMENTS
from ingressctl.devcluster.managed import changes, difference, manager_of, record_update

META = DEPLOYMENTS.patch_meta


def deployment(*containers: dict[str, str], replicas: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "default", "uid": "u", "resourceVersion": "3"},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": list(containers)}}},
            "status": {"replicas": 1}}


def test_changes_follow_merge_keys() -> None:
    old = deployment({"name": "web", "image": "web:1"}, {"name": "side", "image": "s:1"})
    new = deployment({"name": "web", "image": "web:2"}, {"name": "extra", "image": "e:1"}, replicas=3)
    changed, removed = changes(new, old, META)
    containers = changed["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert containers == {'k:{"name":"web"}': {"f:image": {}},
                          'k:{"name":"extra"}': {".": {}, "f:name": {}, "f:image": {}}}
    assert changed["f:spec"]["f:replicas"] == {}
    assert removed["f:spec"]["f:template"]["f:spec"]["f:containers"] == {
        'k:{"name":"side"}': {".": {}, "f:name": {}, "f:image": {}}}


def test_difference_removes_members_only() -> None:
    owned = {"f:data": {"f:a": {}, "f:b": {}}, "f:list": {'k:{"name":"x"}': {".": {}, "f:v": {}}}}
    assert difference(owned, {"f:data": {"f:a": {}}}) == {"f:data": {"f:b": {}},
                                                          "f:list": {'k:{"name":"x"}': {".": {}, "f:v": {}}}}
    assert difference(owned, {"f:list": {'k:{"name":"x"}': {}}}) == {
        "f:data": {"f:a": {}, "f:b": {}}, "f:list": {'k:{"name":"x"}': {"f:v": {}}}}
    assert difference({"f:data": {}}, {"f:data": {"f:a": {}}}) == {"f:data": {}}


def test_record_update_moves_ownership_and_ignores_server_fields() -> None:
    old = deployment({"name": "web", "image": "web:1"})
    old["metadata"]["managedFields"] = [
        {"manager": "helm", "operation": "Update", "apiVersion": "apps/v1",
         "time": "2026-01-01T00:00:00+00:00", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {}}}}]
    new = deployment({"name": "web", "image": "web:1"}, replicas=5)
    new["metadata"]["managedFields"] = old["metadata"]["managedFields"]
    record_update(new, old, manager="kubectl-scale", api_version="apps/v1", subresource="", meta=META,
                  has_status=True)
    entries = new["metadata"]["managedFields"]
    assert [(e["manager"], e["fieldsV1"]) for e in entries] == [
        ("helm", {"f:spec": {"f:template": {}}}), ("kubectl-scale", {"f:spec": {"f:replicas": {}}})]
    assert entries[0]["time"] == "2026-01-01T00:00:00Z"        # normalised, otherwise unchanged


def test_manager_of_takes_the_user_agent_product() -> None:
    assert manager_of("", "kubectl/v1.32.0 (linux/amd64) kubernetes/abc") == "kubectl"
    assert manager_of("helm", "Go-http-client/1.1") == "helm"
