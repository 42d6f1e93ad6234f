"""Server-side apply's field sets and removal patches (devcluster/apply.py)."""

from __future__ import annotations

import json

from ingressctl.devcluster.apply import _add_removals, _conflict
from ingressctl.devcluster.builtin import DEPLOYMENTS
from ingressctl.devcluster.managed import fields_of
from ingressctl.devcluster.patch import strategic_merge_patch

META = DEPLOYMENTS.patch_meta


def deployment(*containers: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, object]:
    return {"metadata": {"name": "web", "labels": labels or {}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": list(containers)}}}}


def test_fields_of_keys_lists_by_their_merge_key() -> None:
    fields = fields_of(deployment({"name": "web", "image": "web:1"}, labels={"app": "web"}), META)
    assert fields == {
        "f:metadata": {"f:name": {}, "f:labels": {"f:app": {}}},
        "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
            'k:{"name":"web"}': {".": {}, "f:name": {}, "f:image": {}}}}}}}
    # A list without a merge key is atomic: one leaf.
    assert fields_of({"args": ["a", "b"]}, META) == {"f:args": {}}


def apply_again(live: dict[str, object], before: dict[str, object], after: dict[str, object]) -> object:
    patch = dict(after)
    _add_removals(patch, fields_of(before, META), fields_of(after, META), META)
    return strategic_merge_patch(live, patch, META)


def test_reapply_removes_what_the_manager_dropped_and_keeps_the_rest() -> None:
    before = deployment({"name": "web", "image": "web:1", "imagePullPolicy": "Always"},
                        {"name": "sidecar", "image": "s:1"}, labels={"app": "web", "tier": "edge"})
    live = deployment({"name": "web", "image": "web:1", "imagePullPolicy": "Always",
                       "terminationMessagePath": "/dev/termination-log"},      # a server default
                      {"name": "sidecar", "image": "s:1"}, {"name": "injected", "image": "i:1"},
                      labels={"app": "web", "tier": "edge", "owner": "other-manager"})
    after = deployment({"name": "web", "image": "web:2"}, labels={"app": "web"})
    result = apply_again(live, before, after)
    assert result["metadata"]["labels"] == {"app": "web", "owner": "other-manager"}  # type: ignore[index]
    assert result["spec"]["template"]["spec"]["containers"] == [                    # type: ignore[index]
        {"name": "web", "image": "web:2", "terminationMessagePath": "/dev/termination-log"},
        {"name": "injected", "image": "i:1"}]
    assert result["spec"]["replicas"] == 2                                          # type: ignore[index]


def test_malformed_recorded_fields_remove_nothing() -> None:
    live = deployment({"name": "web", "image": "web:1"}, labels={"app": "web"})
    after = deployment({"name": "web", "image": "web:2"}, labels={"app": "web"})
    for recorded in (None, "junk", {"f:spec": "junk"}, {"f:metadata": {"f:labels": {"f:gone": {}}},
                                                        "f:spec": {"f:template": {"f:spec": {"f:containers": {
                                                            "k:not-json": {}}}}}}):
        patch = dict(after)
        _add_removals(patch, recorded, fields_of(after, META), META)
        result = strategic_merge_patch(json_copy(live), patch, META)
        assert result["spec"]["template"]["spec"]["containers"] == [{"name": "web", "image": "web:2"}]


def json_copy(value: dict[str, object]) -> dict[str, object]:
    out: dict[str, object] = json.loads(json.dumps(value))
    return out


def test_conflict_messages() -> None:
    one = _conflict([("helm", "apps/v1", ("f:spec", "f:template", "f:spec", "f:containers",
                                           'k:{"name":"web"}', "f:image"))])
    assert (one.code, one.reason) == (409, "Conflict")
    assert one.message == ('Apply failed with 1 conflict: conflict with "helm" using apps/v1: '
                           '.spec.template.spec.containers[name="web"].image')
    two = _conflict([("kubectl", "v1", ("f:data", "f:a")), ("kubectl", "v1", ("f:data", "f:b"))])
    assert two.message == ('Apply failed with 2 conflicts: conflicts with "kubectl" using v1:\n'
                           "- .data.a\n- .data.b")
    assert [c["field"] for c in two.details["causes"]] == [".data.a", ".data.b"]  # type: ignore[index]
