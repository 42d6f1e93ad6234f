"""kube-apiserver's write semantics that a controller or an API client sees, through the `kubernetes` client
and plain HTTP against devcluster: Secret `stringData` never stored (get, list, watch events, responses,
dry runs); fieldValidation's default (Warn) and its Warning headers; duplicate fields (JSON, YAML), unknown
JSON patch operation keys and a server-side apply's duplicate YAML keys, each per directive.
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client, watch

from ingressctl.devcluster import DevCluster

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster() -> Iterator[DevCluster]:
    with DevCluster(bookmark_interval=0.2) as dc:
        yield dc


@pytest.fixture
def core(cluster: DevCluster) -> client.CoreV1Api:
    config = client.Configuration()
    config.host = cluster.url
    return client.CoreV1Api(client.ApiClient(config))


@dataclass
class Reply:
    code: int
    body: Any
    warnings: list[str]


def call(cluster: DevCluster, method: str, path: str, body: str | bytes,
         content_type: str = "application/json") -> Reply:
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(cluster.url + path, data=data, method=method,
                                 headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return Reply(resp.status, json.loads(resp.read()), resp.headers.get_all("Warning") or [])
    except urllib.error.HTTPError as e:
        return Reply(e.code, json.loads(e.read()), e.headers.get_all("Warning") or [])


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_string_data_never_reaches_a_reader(cluster: DevCluster, core: client.CoreV1Api) -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    started = threading.Event()

    def follow() -> None:
        w = watch.Watch()
        started.set()
        for ev in w.stream(core.list_namespaced_secret, "default", timeout_seconds=30,
                           _preload_content=False):
            raw = ev["raw_object"]
            events.append((ev["type"], raw))
            if ev["type"] == "DELETED":
                w.stop()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    started.wait(10)
    body = {"metadata": {"name": "auth"}, "type": "nginx.org/htpasswd",
            "stringData": {"htpasswd": "foo:bar\n"}}
    dry = call(cluster, "POST", "/api/v1/namespaces/default/secrets?dryRun=All", json.dumps(body))
    assert dry.code == 201 and "stringData" not in dry.body
    assert dry.body["data"] == {"htpasswd": b64("foo:bar\n")}
    created = core.create_namespaced_secret("default", body)
    assert created.string_data is None and created.data == {"htpasswd": b64("foo:bar\n")}
    core.patch_namespaced_secret("auth", "default", {"stringData": {"more": "x"}})
    core.replace_namespaced_secret("auth", "default", {"metadata": {"name": "auth"},
                                                       "type": "nginx.org/htpasswd",
                                                       "data": {"htpasswd": b64("old")},
                                                       "stringData": {"htpasswd": "new"}})
    got = core.read_namespaced_secret("auth", "default")
    assert got.string_data is None and got.data == {"htpasswd": b64("new")}
    with urllib.request.urlopen(cluster.url + "/api/v1/namespaces/default/secrets", timeout=30) as resp:
        listed = json.loads(resp.read())
    assert [set(item) for item in listed["items"]] == [{"metadata", "data", "type"}]
    core.delete_namespaced_secret("auth", "default")
    thread.join(30)
    assert [t for t, _ in events] == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]
    assert all("stringData" not in obj for _, obj in events)
    assert events[1][1]["data"] == {"htpasswd": b64("foo:bar\n"), "more": b64("x")}


SERVICE = '{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},' \
          '"spec":{"type":"ClusterIP","type":"NodePort","ports":[{"port":80}],"notAField":1}}'


def test_field_validation_default_is_warn(cluster: DevCluster) -> None:
    # No directive (the kubernetes client's and client-go's default): accepted, pruned, warned about.
    reply = call(cluster, "POST", "/api/v1/namespaces/default/services", SERVICE)
    assert reply.code == 201
    assert reply.warnings == ['299 - "duplicate field \\"spec.type\\"", '
                              '299 - "unknown field \\"spec.notAField\\""']
    assert "notAField" not in reply.body["spec"] and reply.body["spec"]["type"] == "NodePort"   # last wins
    ignore = call(cluster, "POST", "/api/v1/namespaces/default/services?fieldValidation=Ignore",
                  SERVICE.replace('"web"', '"quiet"'))
    assert ignore.code == 201 and ignore.warnings == [] and "notAField" not in ignore.body["spec"]


def test_strict_reports_duplicate_and_unknown_fields(cluster: DevCluster) -> None:
    reply = call(cluster, "POST", "/api/v1/namespaces/default/services?fieldValidation=Strict", SERVICE)
    assert reply.code == 400
    assert reply.body["message"] == (
        'Service in version "v1" cannot be handled as a Service: strict decoding error: duplicate field '
        '"spec.type", unknown field "spec.notAField"')
    yaml_body = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  name: cm\n"
                 "data:\n  a: b\nbogus: 1\n")
    reply = call(cluster, "POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", yaml_body,
                 "application/yaml")
    assert reply.code == 400
    assert reply.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: yaml: unmarshal '
        'errors:\n  line 5: key "name" already set in map, unknown field "bogus"')
    warned = call(cluster, "POST", "/api/v1/namespaces/default/configmaps", yaml_body, "application/yaml")
    assert warned.code == 201
    assert warned.warnings == ['299 - "line 5: key \\"name\\" already set in map", '
                               '299 - "unknown field \\"bogus\\""']


def test_patches_are_checked_per_directive(cluster: DevCluster) -> None:
    assert call(cluster, "POST", "/api/v1/namespaces/default/configmaps",
                '{"metadata":{"name":"cm"},"data":{"a":"b"}}').code == 201
    path = "/api/v1/namespaces/default/configmaps/cm"
    merge = call(cluster, "PATCH", path + "?fieldValidation=Strict", '{"data":{"a":"1","a":"2"},"zz":1}',
                 "application/merge-patch+json")
    assert merge.code == 422
    assert merge.body["message"].endswith(
        ': strict decoding error: duplicate field "data.a", unknown field "zz"')
    assert merge.body["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert merge.body["details"]["causes"][0]["field"] == "patch"
    json_patch = '[{"op":"add","path":"/data/c","value":"d","foo":"bar"}]'
    strict = call(cluster, "PATCH", path + "?fieldValidation=Strict", json_patch,
                  "application/json-patch+json")
    assert strict.code == 422 and strict.body["message"].endswith(
        'strict decoding error: json patch unknown field "[0].foo"')
    warned = call(cluster, "PATCH", path, json_patch, "application/json-patch+json")
    assert warned.code == 200 and warned.body["data"] == {"a": "b", "c": "d"}
    assert warned.warnings == ['299 - "json patch unknown field \\"[0].foo\\""']
    smp = call(cluster, "PATCH", path + "?fieldValidation=Strict", '{"nope":{"x":1}}',
               "application/strategic-merge-patch+json")
    assert smp.code == 422 and smp.body["message"] == (
        ' "" is invalid: patch: Invalid value: "map[nope:map[x:1]]": strict decoding error: unknown field '
        '"nope"')


def test_server_side_apply_duplicate_keys_per_directive(cluster: DevCluster) -> None:
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: x\n  a: y\n"
    path = "/api/v1/namespaces/default/configmaps/applied?fieldManager=test"
    strict = call(cluster, "PATCH", path + "&fieldValidation=Strict", doc, "application/apply-patch+yaml")
    assert strict.code == 400
    assert strict.body["message"] == ('error strict decoding YAML: error converting YAML to JSON: yaml: '
                                      'unmarshal errors:\n  line 7: key "a" already set in map')
    warned = call(cluster, "PATCH", path, doc, "application/apply-patch+yaml")
    assert warned.code == 201 and warned.body["data"] == {"a": "y"}
    assert warned.warnings == ['299 - "line 7: key \\"a\\" already set in map"']
    ignored = call(cluster, "PATCH", path + "&fieldValidation=Ignore", doc, "application/apply-patch+yaml")
    assert ignored.code == 200 and ignored.warnings == []
    undeclared = call(cluster, "PATCH", path + "&fieldValidation=Ignore",
                      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\nbogus: 1\n",
                      "application/apply-patch+yaml")
    assert undeclared.code == 500 and "reason" not in undeclared.body
    assert undeclared.body["message"] == (
        "failed to create typed patch object (/applied; /v1, Kind=ConfigMap): .bogus: field not declared in "
        "schema")


def test_create_refuses_a_resource_version(core: client.CoreV1Api) -> None:
    # kubectl clears it before creating; an API client that re-creates an object it read does not.
    read = core.create_namespaced_config_map("default", {"metadata": {"name": "exported"},
                                                         "data": {"k": "v"}})
    core.delete_namespaced_config_map("exported", "default")
    body = core.api_client.sanitize_for_serialization(read)
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_config_map("default", body)
    assert exc.value.status == 500
    assert json.loads(exc.value.body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "resourceVersion should not be set on objects to be created", "code": 500}
    body["metadata"]["resourceVersion"] = "0"        # not a resourceVersion: accepted, as kube-apiserver does
    assert core.create_namespaced_config_map("default", body).metadata.resource_version != "0"


def test_managed_fields_kept_by_a_write_that_sends_none_and_cleared_by_an_empty_list(
        core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"k": "v"}},
                                      field_manager="creator")
    got = core.read_namespaced_config_map("cm", "default")
    assert [(m.manager, m.operation) for m in got.metadata.managed_fields] == [("creator", "Update")]
    got.metadata.managed_fields = None                      # not sent: the stored entries stay
    got.data = {"k": "v", "more": "x"}
    replaced = core.replace_namespaced_config_map("cm", "default", got, field_manager="editor")
    assert {m.manager: m.fields_v1 for m in replaced.metadata.managed_fields} == {
        "creator": {"f:data": {"f:k": {}}}, "editor": {"f:data": {"f:more": {}}}}
    # A client's own timestamp format does not make a no-op write a change.
    again = core.replace_namespaced_config_map("cm", "default", replaced, field_manager="editor")
    assert again.metadata.resource_version == replaced.metadata.resource_version
    cleared = core.patch_namespaced_config_map("cm", "default", {"metadata": {"managedFields": []}})
    assert cleared.metadata.managed_fields is None
