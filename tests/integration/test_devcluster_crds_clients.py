"""devcluster's CustomResourceDefinitions through the `kubernetes` Python client and the project's own raw
JSON client (`ingressctl.k8s.client.KubeClient`): the chart's CRDs created over the API, then VirtualServers
created, read, listed (pages, selectors), watched, patched, replaced, given a status and deleted; the dynamic
client finds a kind created after it started; a bad object is a 422 whose causes name the field.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config, dynamic, watch
from kubernetes.client.exceptions import ApiException

from ingressctl.devcluster import DevCluster
from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.resource import ResourceType

pytestmark = pytest.mark.integration

CRDS = Path(__file__).resolve().parents[2] / "charts" / "ingressctl" / "crds"
GROUP, VERSION, PLURAL = "k8s.nginx.org", "v1", "virtualservers"
VS = ResourceType(GROUP, VERSION, PLURAL, "VirtualServer")


def crd_docs() -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted(CRDS.glob("*.yaml"))]


def vs(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "VirtualServer",
            "metadata": {"name": name, "labels": labels or {"app": name}},
            "spec": {"host": f"{name}.example.com",
                     "upstreams": [{"name": "up", "service": "svc", "port": 80}],
                     "routes": [{"path": "/", "action": {"pass": "up"}}]}}


@pytest.fixture
def cluster() -> Iterator[DevCluster]:
    with DevCluster(bookmark_interval=0.2) as dc:
        yield dc


@pytest.fixture
def api_client(cluster: DevCluster, tmp_path: Path) -> client.ApiClient:
    return config.new_client_from_config(cluster.write_kubeconfig(str(tmp_path / "kubeconfig")))


@pytest.fixture
def installed(api_client: client.ApiClient) -> client.CustomObjectsApi:
    ext = client.ApiextensionsV1Api(api_client)
    for doc in crd_docs():
        created = ext.create_custom_resource_definition(doc)
        conditions = {c.type: c.status for c in created.status.conditions}
        assert conditions == {"NamesAccepted": "True", "Established": "True"}
    client.CoreV1Api(api_client).create_namespace({"metadata": {"name": "cafe"}})
    return client.CustomObjectsApi(api_client)


def test_custom_objects_api_lifecycle(installed: client.CustomObjectsApi) -> None:
    co = installed
    created = co.create_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, vs("cafe"))
    assert created["metadata"]["generation"] == 1 and created["kind"] == "VirtualServer"
    for name in ("tea", "coffee"):
        co.create_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, vs(name, tier="drinks"))
    got = co.get_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, "cafe")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    # Pagination and selectors.
    first = co.list_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, limit=2)
    assert [i["metadata"]["name"] for i in first["items"]] == ["cafe", "coffee"]
    assert first["metadata"]["remainingItemCount"] == 1
    rest = co.list_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, limit=2,
                                            _continue=first["metadata"]["continue"])
    assert [i["metadata"]["name"] for i in rest["items"]] == ["tea"] and "continue" not in rest["metadata"]
    drinks = co.list_cluster_custom_object(GROUP, VERSION, PLURAL, label_selector="tier=drinks")
    assert sorted(i["metadata"]["name"] for i in drinks["items"]) == ["coffee", "tea"]
    named = co.list_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL,
                                             field_selector="metadata.name=tea")
    assert [i["metadata"]["name"] for i in named["items"]] == ["tea"]
    # Patch (merge) and replace with optimistic concurrency.
    patched = co.patch_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, "cafe",
                                                {"spec": {"gunzip": True}})
    assert patched["spec"]["gunzip"] is True and patched["metadata"]["generation"] == 2
    stale = dict(got)
    with pytest.raises(ApiException) as exc:
        co.replace_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, "cafe", stale)
    assert exc.value.status == 409
    patched["spec"]["host"] = "cafe.example.org"
    replaced = co.replace_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, "cafe", patched)
    assert replaced["spec"]["host"] == "cafe.example.org" and replaced["metadata"]["generation"] == 3
    # Status through /status only.
    status = {"status": {"state": "Valid", "reason": "AddedOrUpdated", "message": "ok",
                         "externalEndpoints": [{"ip": "192.0.2.1", "ports": "[80,443]"}]}}
    after = co.patch_namespaced_custom_object_status(GROUP, VERSION, "cafe", PLURAL, "cafe", status)
    assert after["status"] == status["status"] and after["metadata"]["generation"] == 3
    ignored = co.patch_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, "cafe",
                                                {"status": {"state": "Invalid"}})
    assert ignored["status"]["state"] == "Valid"
    assert co.get_namespaced_custom_object_status(GROUP, VERSION, "cafe", PLURAL, "cafe")["status"] == \
        status["status"]
    # Delete.
    co.delete_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, "cafe")
    with pytest.raises(ApiException) as exc:
        co.get_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, "cafe")
    assert exc.value.status == 404
    co.delete_collection_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL,
                                                  label_selector="tier=drinks")
    assert co.list_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL)["items"] == []


def test_a_bad_object_is_a_422_naming_the_field(installed: client.CustomObjectsApi) -> None:
    bad = vs("cafe")
    bad["spec"]["upstreams"][0]["port"] = "string"
    bad["spec"]["routes"][0]["splits"] = [{"weight": "half"}]
    with pytest.raises(ApiException) as exc:
        installed.create_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, bad)
    assert exc.value.status == 422
    status = json.loads(exc.value.body)
    assert status["reason"] == "Invalid" and status["details"]["kind"] == "VirtualServer"
    assert status["details"]["group"] == GROUP and status["details"]["name"] == "cafe"
    assert [(c["field"], c["reason"]) for c in status["details"]["causes"]] == [
        ("spec.upstreams[0].port", "FieldValueTypeInvalid"),
        ("spec.routes[0].splits[0].weight", "FieldValueTypeInvalid")]
    assert status["message"].startswith(
        'VirtualServer.k8s.nginx.org "cafe" is invalid: [spec.upstreams[0].port: Invalid value: "string": '
        'spec.upstreams[0].port in body must be of type integer: "string", ')


def test_field_validation_directives(installed: client.CustomObjectsApi) -> None:
    body = vs("cafe")
    body["spec"]["colour"] = "blue"
    with pytest.raises(ApiException) as exc:
        installed.create_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, body,
                                                  field_validation="Strict")
    assert exc.value.status == 400
    assert json.loads(exc.value.body)["message"] == (
        'VirtualServer in version "v1" cannot be handled as a VirtualServer: strict decoding error: '
        'unknown field "spec.colour"')
    with pytest.raises(ApiException) as exc:
        installed.create_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, body,
                                                  field_validation="Loose")
    assert exc.value.status == 400
    # Without a directive (the client's default), unknown fields are pruned.
    created = installed.create_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, body)
    assert "colour" not in created["spec"]
    with pytest.raises(ApiException) as exc:     # a patch's result is checked the same way
        installed.patch_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, "cafe",
                                                 {"spec": {"size": 1}}, field_validation="Strict")
    assert 'unknown field "spec.size"' in json.loads(exc.value.body)["message"]


def test_watch_custom_objects(installed: client.CustomObjectsApi) -> None:
    co = installed
    rv = co.list_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL)["metadata"]["resourceVersion"]
    events: list[tuple[str, str, Any]] = []
    done = threading.Event()

    def run() -> None:
        w = watch.Watch()
        for ev in w.stream(co.list_namespaced_custom_object, GROUP, VERSION, "cafe", PLURAL,
                           resource_version=rv, timeout_seconds=20):
            obj = ev["object"]
            events.append((ev["type"], obj["metadata"]["name"], obj.get("status")))
            if ev["type"] == "DELETED":
                w.stop()
        done.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    co.create_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, vs("cafe"))
    co.patch_namespaced_custom_object_status(GROUP, VERSION, "cafe", PLURAL, "cafe",
                                             {"status": {"state": "Valid"}})
    co.delete_namespaced_custom_object(GROUP, VERSION, "cafe", PLURAL, "cafe")
    assert done.wait(30)
    assert events == [("ADDED", "cafe", None), ("MODIFIED", "cafe", {"state": "Valid"}),
                      ("DELETED", "cafe", {"state": "Valid"})]


def test_dynamic_client_finds_a_kind_created_after_it_started(api_client: client.ApiClient,
                                                              tmp_path: Path) -> None:
    # Discovers (and caches) the API before the CRD exists; its own cache file, since the client's default
    # one is named by host alone and a devcluster of an earlier run may have had the same port.
    dyn = dynamic.DynamicClient(api_client, cache_file=str(tmp_path / "discovery.json"))
    with pytest.raises(dynamic.exceptions.ResourceNotFoundError):
        dyn.resources.get(api_version=f"{GROUP}/{VERSION}", kind="TransportServer")
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    crds.create(body=yaml.safe_load((CRDS / "k8s.nginx.org_transportservers.yaml").read_text()))
    ts = dyn.resources.get(api_version=f"{GROUP}/{VERSION}", kind="TransportServer")
    assert ts.namespaced and ts.short_names == ["ts"] and ts.subresources.get("status") is not None
    created = ts.create(namespace="default", body={
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "TransportServer", "metadata": {"name": "dns"},
        "spec": {"listener": {"name": "dns-udp", "protocol": "UDP"},
                 "upstreams": [{"name": "dns", "service": "coredns", "port": 53}],
                 "action": {"pass": "dns"}}})
    assert created.spec.listener.protocol == "UDP"
    assert [i.metadata.name for i in ts.get(namespace="default").items] == ["dns"]


def test_kubeclient_raw_json_lifecycle(installed: client.CustomObjectsApi, cluster: DevCluster) -> None:
    kube = KubeClient.for_host(cluster.url)
    try:
        created = kube.create(VS, "cafe", vs("cafe"))
        assert created["metadata"]["namespace"] == "cafe"
        kube.create(VS, "cafe", vs("tea"))
        assert [i["metadata"]["name"] for i in kube.list(VS, "cafe")["items"]] == ["cafe", "tea"]
        pages = list(kube.list_pages(VS, None, limit=1))
        assert [[i["metadata"]["name"] for i in p["items"]] for p in pages] == [["cafe"], ["tea"]]
        rv = kube.list(VS, "cafe")["metadata"]["resourceVersion"]
        with kube.watch(VS, "cafe", resource_version=rv, timeout_seconds=10,
                        allow_bookmarks=False) as stream:
            current = kube.get(VS, "cafe", "cafe")
            current["status"] = {"state": "Warning", "reason": "AddedOrUpdatedWithWarning", "message": "w"}
            updated = kube.update_status(VS, "cafe", "cafe", current)
            assert updated["status"]["state"] == "Warning" and updated["metadata"]["generation"] == 1
            kube.patch(VS, "cafe", "cafe", {"spec": {"gunzip": True}})
            kube.delete(VS, "cafe", "tea")
            seen = [next(stream) for _ in range(3)]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [
            ("MODIFIED", "cafe"), ("MODIFIED", "cafe"), ("DELETED", "tea")]
        assert seen[1]["object"]["spec"]["gunzip"] is True
        assert seen[1]["object"]["metadata"]["generation"] == 2
        with pytest.raises(ApiError) as exc:     # custom resources take merge and JSON patches only
            kube.patch(VS, "cafe", "cafe", {"spec": {"gunzip": False}}, patch_type="strategic")
        assert exc.value.status == 415
        bad = vs("bad")
        bad["spec"]["host"] = 7
        with pytest.raises(ApiError) as exc:
            kube.create(VS, "cafe", bad)
        assert exc.value.status == 422
        assert 'spec.host: Invalid value: "integer": spec.host in body must be of type string: "integer"' \
            in str(exc.value)
    finally:
        kube.close()


def test_openapi_v3_documents_for_crd_group_versions(installed: client.CustomObjectsApi,
                                                     cluster: DevCluster) -> None:
    def get(path: str) -> Any:
        with urllib.request.urlopen(cluster.url + path, timeout=10) as resp:
            return json.loads(resp.read())
    root = get("/openapi/v3")
    assert "apis/k8s.nginx.org/v1" in root["paths"]
    # Built-in group/versions have documents with their operations only (no schemas: kubectl then computes
    # strategic merge patches from its compiled-in types).
    assert {"api/v1", "apis/networking.k8s.io/v1", "apis/apps/v1"} <= set(root["paths"])
    core = get(root["paths"]["api/v1"]["serverRelativeURL"])
    assert core["components"] == {}
    patch = core["paths"]["/api/v1/namespaces/{namespace}/services/{name}"]["patch"]
    assert [p["name"] for p in patch["parameters"]] == ["fieldValidation"] and "requestBody" not in patch
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "Service"}
    url = root["paths"]["apis/k8s.nginx.org/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/k8s.nginx.org/v1?hash=")
    doc = get(url)
    schemas = doc["components"]["schemas"]
    assert sorted(schemas) == ["org.nginx.k8s.v1.GlobalConfiguration", "org.nginx.k8s.v1.Policy",
                               "org.nginx.k8s.v1.TransportServer", "org.nginx.k8s.v1.VirtualServer",
                               "org.nginx.k8s.v1.VirtualServerRoute"]
    assert schemas["org.nginx.k8s.v1.VirtualServer"]["x-kubernetes-group-version-kind"] == [
        {"group": GROUP, "version": VERSION, "kind": "VirtualServer"}]
    item = doc["paths"]["/apis/k8s.nginx.org/v1/namespaces/{namespace}/virtualservers/{name}"]
    assert [p["name"] for p in item["patch"]["parameters"]] == ["fieldValidation"]
    assert "/apis/k8s.nginx.org/v1/namespaces/{namespace}/virtualservers/{name}/status" in doc["paths"]
    assert "/apis/k8s.nginx.org/v1/namespaces/{namespace}/globalconfigurations/{name}/status" \
        not in doc["paths"]
    # A changed CRD changes its document's hash (clients cache by it).
    ext = client.ApiextensionsV1Api(installed.api_client)
    crd = ext.read_custom_resource_definition("globalconfigurations.k8s.nginx.org")
    crd.spec.versions[0].schema.open_apiv3_schema.description = "changed"
    ext.replace_custom_resource_definition("globalconfigurations.k8s.nginx.org", crd)
    assert get("/openapi/v3")["paths"]["apis/k8s.nginx.org/v1"]["serverRelativeURL"] != url
    with pytest.raises(urllib.error.HTTPError) as exc:
        get("/openapi/v3/apis/nothing.example.com/v1")
    assert exc.value.code == 404
