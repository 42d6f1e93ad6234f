"""devcluster conformance through the official `kubernetes` Python client (typed APIs, Watch, raw responses).

Each test drives the server only over HTTP with the client a controller would use, and checks the API server
semantics a controller can observe: resourceVersion/uid/generation/creationTimestamp, optimistic concurrency,
the status subresource, patches, pagination, selectors, and watch (resume, bookmarks, timeouts, 410).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from ingressctl.devcluster import DevCluster

pytestmark = pytest.mark.integration

RFC3339_SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


@pytest.fixture(scope="module")
def cluster() -> Iterator[DevCluster]:
    with DevCluster(bookmark_interval=0.2) as dc:
        yield dc


@pytest.fixture(scope="module")
def api_client(cluster: DevCluster, tmp_path_factory: pytest.TempPathFactory) -> client.ApiClient:
    path = cluster.write_kubeconfig(str(tmp_path_factory.mktemp("kc") / "kubeconfig"))
    return config.new_client_from_config(path)


@pytest.fixture(scope="module")
def net(api_client: client.ApiClient) -> client.NetworkingV1Api:
    return client.NetworkingV1Api(api_client)


@pytest.fixture(scope="module")
def core(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


_counter = iter(range(1, 1_000_000))


@pytest.fixture()
def ns(core: client.CoreV1Api) -> str:
    name = f"t{next(_counter)}"
    core.create_namespace({"metadata": {"name": name}})
    return name


def ingress(name: str, host: str = "a.example.com", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"rules": [{"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix",
                                                                  "backend": {
                "service": {"name": "svc", "port": {"number": 80}}}}]}}]}}


def raw(resp: Any) -> Any:
    data = json.loads(resp.data)
    resp.release_conn()
    return data


def body(e: ApiException) -> dict[str, Any]:
    status: dict[str, Any] = json.loads(e.body)
    assert status["kind"] == "Status" and status["apiVersion"] == "v1" and status["status"] == "Failure"
    assert status["code"] == e.status
    return status


def raw_watch(api_call: Any, *args: Any, read_until: Any = None, **kwargs: Any) -> list[dict[str, Any]]:
    """Events of a raw watch (split on newlines at the byte level) until the server closes or `read_until`."""
    resp = api_call(*args, watch=True, _preload_content=False, **kwargs)
    events: list[dict[str, Any]] = []
    buf = b""
    try:
        for chunk in resp.stream(4096, decode_content=False):
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line.strip():
                    events.append(json.loads(line))
            if read_until is not None and read_until(events):
                break
    finally:
        resp.close()
        resp.release_conn()
    return events


# ----------------------------------------------------------------------------------------------- discovery
def test_discovery_is_usable_by_the_client(api_client: client.ApiClient) -> None:
    version = client.VersionApi(api_client).get_code()
    assert version.major == "1" and version.git_version.startswith("v1.")
    groups = {g.name: g for g in client.ApisApi(api_client).get_api_versions().groups}
    assert {"networking.k8s.io", "discovery.k8s.io", "coordination.k8s.io", "events.k8s.io"} <= set(groups)
    assert groups["networking.k8s.io"].preferred_version.group_version == "networking.k8s.io/v1"
    resources = {r.name: r for r in client.NetworkingV1Api(api_client).get_api_resources().resources}
    assert resources["ingresses"].short_names == ["ing"] and resources["ingresses"].namespaced
    assert resources["ingresses"].kind == "Ingress"
    assert set(resources["ingresses"].verbs) >= {"create", "get", "list", "watch", "update", "patch",
                                                 "delete"}
    assert resources["ingresses/status"].verbs == ["get", "patch", "update"]
    assert not resources["ingressclasses"].namespaced
    core_resources = {r.name: r for r in client.CoreV1Api(api_client).get_api_resources().resources}
    assert core_resources["services"].short_names == ["svc"]
    assert core_resources["configmaps"].short_names == ["cm"]
    assert core_resources["namespaces"].short_names == ["ns"]
    assert core_resources["pods"].short_names == ["po"]


# ----------------------------------------------------------------------------------------------- create/get
def test_create_sets_metadata_and_duplicate_is_already_exists(net: client.NetworkingV1Api, ns: str) -> None:
    created = raw(net.create_namespaced_ingress(ns, ingress("web"), _preload_content=False))
    meta = created["metadata"]
    assert created["kind"] == "Ingress" and created["apiVersion"] == "networking.k8s.io/v1"
    assert UUID4.match(meta["uid"])
    assert RFC3339_SECONDS.match(meta["creationTimestamp"])
    assert meta["generation"] == 1 and meta["namespace"] == ns
    assert meta["resourceVersion"].isdigit()
    assert created["status"] == {"loadBalancer": {}}
    with pytest.raises(ApiException) as err:
        net.create_namespaced_ingress(ns, ingress("web"))
    status = body(err.value)
    assert (err.value.status, status["reason"]) == (409, "AlreadyExists")
    assert status["details"] == {"name": "web", "group": "networking.k8s.io", "kind": "ingresses"}
    got = raw(net.read_namespaced_ingress("web", ns, _preload_content=False))
    assert got == created


def test_resource_versions_are_global_and_increasing(core: client.CoreV1Api, net: client.NetworkingV1Api,
                                                     ns: str) -> None:
    rvs = [int(net.create_namespaced_ingress(ns, ingress("i1")).metadata.resource_version),
           int(core.create_namespaced_config_map(ns, {"metadata": {"name": "c1"}}).metadata.resource_version),
           int(net.create_namespaced_ingress(ns, ingress("i2")).metadata.resource_version),
           int(core.create_namespaced_secret(ns, {"metadata": {"name": "s1"}}).metadata.resource_version)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 4
    listed = raw(net.list_namespaced_ingress(ns, _preload_content=False))
    assert int(listed["metadata"]["resourceVersion"]) >= rvs[-1]
    assert listed["kind"] == "IngressList" and listed["apiVersion"] == "networking.k8s.io/v1"
    assert all("kind" not in item and "apiVersion" not in item for item in listed["items"])


def test_generate_name(core: client.CoreV1Api, ns: str) -> None:
    cm = core.create_namespaced_config_map(ns, {"metadata": {"generateName": "cfg-"}})
    assert re.match(r"^cfg-[a-z0-9]{5}$", cm.metadata.name)
    assert cm.metadata.generate_name == "cfg-"


def test_missing_namespace_is_not_found(net: client.NetworkingV1Api) -> None:
    with pytest.raises(ApiException) as err:
        net.create_namespaced_ingress("no-such-namespace", ingress("x"))
    status = body(err.value)
    assert (err.value.status, status["reason"]) == (404, "NotFound")
    assert status["details"]["kind"] == "namespaces" and status["details"]["name"] == "no-such-namespace"


# ----------------------------------------------------------------------------------------------- update
def test_stale_resource_version_is_conflict(net: client.NetworkingV1Api, ns: str) -> None:
    first = net.create_namespaced_ingress(ns, ingress("web"))
    first.metadata.labels = {"v": "1"}
    second = net.replace_namespaced_ingress("web", ns, first)
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)
    first.metadata.labels = {"v": "2"}
    with pytest.raises(ApiException) as err:
        net.replace_namespaced_ingress("web", ns, first)   # carries the old resourceVersion
    status = body(err.value)
    assert (err.value.status, status["reason"]) == (409, "Conflict")
    assert "the object has been modified" in status["message"]
    # Without a resourceVersion the update is unconditional.
    first.metadata.resource_version = None
    third = net.replace_namespaced_ingress("web", ns, first)
    assert third.metadata.labels == {"v": "2"}


def test_no_op_update_keeps_resource_version(net: client.NetworkingV1Api, ns: str) -> None:
    created = net.create_namespaced_ingress(ns, ingress("web"))
    again = net.replace_namespaced_ingress("web", ns, created)
    assert again.metadata.resource_version == created.metadata.resource_version


def test_generation_bumps_on_spec_only(net: client.NetworkingV1Api, ns: str) -> None:
    ing = net.create_namespaced_ingress(ns, ingress("web"))
    assert ing.metadata.generation == 1
    ing.metadata.labels = {"changed": "yes"}
    ing.metadata.annotations = {"note": "metadata only"}
    ing = net.replace_namespaced_ingress("web", ns, ing)
    assert ing.metadata.generation == 1
    ing = net.patch_namespaced_ingress_status("web", ns,
                                              {"status": {"loadBalancer": {"ingress": [{"ip": "1.1.1.1"}]}}})
    assert ing.metadata.generation == 1
    ing = net.patch_namespaced_ingress("web", ns, {"spec": {"ingressClassName": "nginx"}})
    assert ing.metadata.generation == 2
    ing.spec.rules[0].host = "b.example.com"
    ing = net.replace_namespaced_ingress("web", ns, ing)
    assert ing.metadata.generation == 3


def test_status_subresource(net: client.NetworkingV1Api, ns: str) -> None:
    ing = net.create_namespaced_ingress(ns, ingress("web"))
    # The main resource ignores status.
    ing.status = client.V1IngressStatus(load_balancer=client.V1IngressLoadBalancerStatus(
        ingress=[client.V1IngressLoadBalancerIngress(ip="9.9.9.9")]))
    ing.metadata.labels = {"x": "y"}
    ing = net.replace_namespaced_ingress("web", ns, ing)
    assert ing.metadata.labels == {"x": "y"}
    assert not ing.status.load_balancer.ingress
    # /status changes only status: spec and metadata in the body are ignored.
    ing.status = client.V1IngressStatus(load_balancer=client.V1IngressLoadBalancerStatus(
        ingress=[client.V1IngressLoadBalancerIngress(ip="10.0.0.1")]))
    ing.spec.rules[0].host = "ignored.example.com"
    ing.metadata.labels = {"ignored": "yes"}
    updated = net.replace_namespaced_ingress_status("web", ns, ing)
    assert updated.status.load_balancer.ingress[0].ip == "10.0.0.1"
    assert updated.spec.rules[0].host == "a.example.com"
    assert updated.metadata.labels == {"x": "y"}
    assert updated.metadata.generation == 1
    # Optimistic concurrency applies to /status too.
    with pytest.raises(ApiException) as err:
        net.replace_namespaced_ingress_status("web", ns, ing)
    assert err.value.status == 409
    patched = net.patch_namespaced_ingress_status("web", ns, [
        {"op": "replace", "path": "/status/loadBalancer/ingress/0/ip", "value": "10.0.0.2"}])
    assert patched.status.load_balancer.ingress[0].ip == "10.0.0.2"
    assert net.read_namespaced_ingress_status("web", ns).status.load_balancer.ingress[0].ip == "10.0.0.2"


def test_put_creates_leases_but_not_ingresses(api_client: client.ApiClient, net: client.NetworkingV1Api,
                                              ns: str) -> None:
    coord = client.CoordinationV1Api(api_client)
    lease = coord.replace_namespaced_lease("leader", ns, {"metadata": {"name": "leader"},
                                                          "spec": {"holderIdentity": "a"}})
    assert lease.spec.holder_identity == "a"
    lease.spec.holder_identity = "b"
    assert coord.replace_namespaced_lease("leader", ns, lease).spec.holder_identity == "b"
    with pytest.raises(ApiException) as err:
        coord.replace_namespaced_lease("leader", ns, lease)
    assert err.value.status == 409
    with pytest.raises(ApiException) as err:
        net.replace_namespaced_ingress("absent", ns, ingress("absent"))
    assert err.value.status == 404


# ----------------------------------------------------------------------------------------------- patch
def test_patch_types(core: client.CoreV1Api, ns: str) -> None:
    svc = core.create_namespaced_service(ns, {"metadata": {"name": "svc"}, "spec": {
        "selector": {"app": "x"}, "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}})
    assert svc.spec.cluster_ip and svc.spec.ports[0].target_port == 80 and svc.spec.ports[0].protocol == "TCP"
    # Strategic merge (the client's default for a dict): ports merge by their key "port".
    svc = core.patch_namespaced_service("svc", ns, {"spec": {"ports": [{"port": 80, "targetPort": 8080}]}})
    assert [(p.port, p.target_port) for p in svc.spec.ports] == [(80, 8080), (443, 443)]
    svc = core.patch_namespaced_service("svc", ns, {"spec": {"ports": [{"port": 443, "$patch": "delete"}]}})
    assert [p.port for p in svc.spec.ports] == [80]
    # JSON patch (a list body) including a failing test op: 422, nothing changed.
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_service("svc", ns, [{"op": "test", "path": "/spec/type", "value": "NodePort"},
                                                  {"op": "replace", "path": "/spec/selector/app",
                                                   "value": "y"}])
    assert err.value.status == 422
    assert core.read_namespaced_service("svc", ns).spec.selector == {"app": "x"}
    # JSON merge patch replaces lists wholesale and deletes with null.
    merged = raw(core.patch_namespaced_service(
        "svc", ns, {"spec": {"ports": [{"name": "m", "port": 9000}], "selector": {"app": None,
                                                                                  "tier": "web"}}},
        _content_type="application/merge-patch+json", _preload_content=False))
    assert [p["port"] for p in merged["spec"]["ports"]] == [9000]
    assert merged["spec"]["selector"] == {"tier": "web"}
    # Patching a missing object is 404.
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_service("absent", ns, {"metadata": {"labels": {"a": "b"}}})
    assert err.value.status == 404


def test_patch_with_stale_resource_version_conflicts(core: client.CoreV1Api, ns: str) -> None:
    cm = core.create_namespaced_config_map(ns, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    core.patch_namespaced_config_map("c", ns, {"data": {"a": "2"}})
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("c", ns,
                                         {"metadata": {"resourceVersion": cm.metadata.resource_version},
                                                   "data": {"a": "3"}})
    assert err.value.status == 409
    assert core.read_namespaced_config_map("c", ns).data == {"a": "2"}


# ----------------------------------------------------------------------------------------------- delete
def test_delete_and_finalizers(net: client.NetworkingV1Api, core: client.CoreV1Api, ns: str) -> None:
    net.create_namespaced_ingress(ns, ingress("plain"))
    status = raw(net.delete_namespaced_ingress("plain", ns, _preload_content=False))
    assert status["kind"] == "Status" and status["status"] == "Success"
    with pytest.raises(ApiException) as err:
        net.read_namespaced_ingress("plain", ns)
    assert err.value.status == 404
    with pytest.raises(ApiException) as err:
        net.delete_namespaced_ingress("plain", ns)
    assert err.value.status == 404
    # An object with finalizers is only marked; removing the last finalizer deletes it.
    cm = core.create_namespaced_config_map(ns, {"metadata": {"name": "held",
                                                             "finalizers": ["example.com/x"]}})
    marked = raw(core.delete_namespaced_config_map("held", ns, _preload_content=False))
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["finalizers"] == ["example.com/x"]
    assert int(marked["metadata"]["resourceVersion"]) > int(cm.metadata.resource_version)
    core.patch_namespaced_config_map("held", ns, [{"op": "remove", "path": "/metadata/finalizers"}])
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("held", ns)
    assert err.value.status == 404


def test_delete_precondition(core: client.CoreV1Api, ns: str) -> None:
    core.create_namespaced_config_map(ns, {"metadata": {"name": "c"}})
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_config_map("c", ns, body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid="00000000-0000-4000-8000-000000000000")))
    assert err.value.status == 409
    core.read_namespaced_config_map("c", ns)


def test_namespace_deletion_removes_its_objects(core: client.CoreV1Api, net: client.NetworkingV1Api) -> None:
    core.create_namespace({"metadata": {"name": "doomed"}})
    net.create_namespaced_ingress("doomed", ingress("web"))
    core.create_namespaced_config_map("doomed", {"metadata": {"name": "c"}})
    core.delete_namespace("doomed")
    assert net.list_namespaced_ingress("doomed").items == []
    assert core.list_namespaced_config_map("doomed").items == []
    with pytest.raises(ApiException) as err:
        core.read_namespace("doomed")
    assert err.value.status == 404
    with pytest.raises(ApiException) as err:
        core.delete_namespace("default")
    assert err.value.status == 403


# ----------------------------------------------------------------------------------------------- list
def test_pagination_returns_every_object_exactly_once(cluster: DevCluster, net: client.NetworkingV1Api,
                                                      ns: str) -> None:
    names = [f"ing-{i:04d}" for i in range(537)]
    cluster.load({**ingress(n), "metadata": {"name": n, "namespace": ns}} for n in names)
    seen: list[str] = []
    cont = None
    pages = 0
    first_rv = None
    while True:
        page = raw(net.list_namespaced_ingress(ns, limit=50, _continue=cont, _preload_content=False))
        pages += 1
        first_rv = first_rv or page["metadata"]["resourceVersion"]
        assert page["metadata"]["resourceVersion"] == first_rv
        seen.extend(i["metadata"]["name"] for i in page["items"])
        cont = page["metadata"].get("continue")
        if pages == 1:
            assert page["metadata"]["remainingItemCount"] == len(names) - 50
            # Changes after the first page do not show up in later pages (a consistent snapshot).
            net.delete_namespaced_ingress(names[-1], ns)
            net.create_namespaced_ingress(ns, ingress("zzz-late"))
            net.patch_namespaced_ingress(names[300], ns, {"metadata": {"labels": {"late": "yes"}}})
        if not cont:
            break
    assert pages == 11
    assert seen == names
    snapshot_item = raw(net.list_namespaced_ingress(ns, field_selector=f"metadata.name={names[300]}",
                                                    _preload_content=False))["items"][0]
    assert snapshot_item["metadata"]["labels"] == {"late": "yes"}


def test_all_namespace_pagination_and_exact_list(net: client.NetworkingV1Api, cluster: DevCluster) -> None:
    cluster.load({**ingress(f"x{i}"), "metadata": {"name": f"x{i}", "namespace": f"pg{i % 3}"}}
                 for i in range(60))
    keys: list[tuple[str, str]] = []
    cont = None
    while True:
        page = raw(net.list_ingress_for_all_namespaces(limit=7, _continue=cont, _preload_content=False))
        keys.extend((i["metadata"]["namespace"], i["metadata"]["name"]) for i in page["items"])
        cont = page["metadata"].get("continue")
        if not cont:
            break
    assert len(keys) == len(set(keys))
    assert {k for k in keys if k[0].startswith("pg")} == {(f"pg{i % 3}", f"x{i}") for i in range(60)}
    rv = raw(net.list_namespaced_ingress("pg0", _preload_content=False))["metadata"]["resourceVersion"]
    net.delete_namespaced_ingress("x0", "pg0")
    exact = raw(net.list_namespaced_ingress("pg0", resource_version=rv, resource_version_match="Exact",
                                            _preload_content=False))
    assert exact["metadata"]["resourceVersion"] == rv
    assert "x0" in {i["metadata"]["name"] for i in exact["items"]}
    latest = raw(net.list_namespaced_ingress("pg0", _preload_content=False))
    assert "x0" not in {i["metadata"]["name"] for i in latest["items"]}


def test_expired_continue_token_is_410(cluster: DevCluster, net: client.NetworkingV1Api, ns: str) -> None:
    cluster.load({**ingress(f"e{i}"), "metadata": {"name": f"e{i}", "namespace": ns}} for i in range(10))
    page = raw(net.list_namespaced_ingress(ns, limit=3, _preload_content=False))
    net.create_namespaced_ingress(ns, ingress("newer"))
    cluster.faults.compact()
    with pytest.raises(ApiException) as err:
        net.list_namespaced_ingress(ns, limit=3, _continue=page["metadata"]["continue"])
    status = body(err.value)
    assert (err.value.status, status["reason"]) == (410, "Expired")
    assert status["message"].startswith("The provided continue parameter is too old")
    # The Status carries a token to finish the list inconsistently.
    rest = raw(net.list_namespaced_ingress(ns, limit=100, _continue=status["metadata"]["continue"],
                                           _preload_content=False))
    assert {i["metadata"]["name"] for i in rest["items"]} == {f"e{i}" for i in range(3, 10)} | {"newer"}


def test_label_and_field_selectors_filter_lists(net: client.NetworkingV1Api, ns: str) -> None:
    specs = {"a": {"app": "web", "tier": "front"}, "b": {"app": "web", "tier": "back"}, "c": {"app": "db"},
             "d": {}}
    for name, labels in specs.items():
        net.create_namespaced_ingress(ns, ingress(name, labels=labels))

    def names(**kw: Any) -> set[str]:
        return {i.metadata.name for i in net.list_namespaced_ingress(ns, **kw).items}

    assert names(label_selector="app=web") == {"a", "b"}
    assert names(label_selector="app==web,tier=back") == {"b"}
    assert names(label_selector="app!=web") == {"c", "d"}
    assert names(label_selector="app in (db, web)") == {"a", "b", "c"}
    assert names(label_selector="app notin (web)") == {"c", "d"}
    assert names(label_selector="tier") == {"a", "b"}
    assert names(label_selector="!tier") == {"c", "d"}
    assert names(field_selector="metadata.name=c") == {"c"}
    assert names(field_selector="metadata.name!=c") == {"a", "b", "d"}
    assert names(field_selector=f"metadata.namespace=={ns},metadata.name=a") == {"a"}
    assert names(field_selector="metadata.namespace=other") == set()
    page = net.list_namespaced_ingress(ns, label_selector="app=web", limit=1)
    assert len(page.items) == 1 and page.metadata._continue
    for bad in {"label_selector": "app in (web"}, {"field_selector": "spec.nothing=x"}:
        with pytest.raises(ApiException) as err:
            net.list_namespaced_ingress(ns, **bad)
        assert err.value.status == 400


def test_kind_specific_field_selectors(api_client: client.ApiClient, core: client.CoreV1Api, ns: str) -> None:
    core.create_namespaced_secret(ns, {"metadata": {"name": "tls"}, "type": "kubernetes.io/tls",
                                       "data": {"tls.crt": "", "tls.key": ""}})
    core.create_namespaced_secret(ns, {"metadata": {"name": "opaque"}})
    assert [s.metadata.name for s in core.list_namespaced_secret(
        ns, field_selector="type=kubernetes.io/tls").items] == ["tls"]
    disc = client.DiscoveryV1Api(api_client)
    for svc, ip in (("a", "10.0.0.1"), ("b", "10.0.0.2")):
        disc.create_namespaced_endpoint_slice(ns, {
            "metadata": {"name": f"{svc}-1", "labels": {"kubernetes.io/service-name": svc}},
            "addressType": "IPv4", "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
            "ports": [{"name": "http", "port": 8080}]})
    slices = disc.list_namespaced_endpoint_slice(ns, label_selector="kubernetes.io/service-name=b").items
    assert [s.endpoints[0].addresses for s in slices] == [["10.0.0.2"]]
    assert slices[0].ports[0].protocol == "TCP"


def test_events_in_both_api_versions(api_client: client.ApiClient, core: client.CoreV1Api, ns: str) -> None:
    events_v1 = client.EventsV1Api(api_client)
    created = raw(events_v1.create_namespaced_event(ns, {
        "metadata": {"name": "ev"}, "eventTime": "2025-01-01T00:00:00.000000Z", "reason": "Sync",
        "note": "synced", "type": "Normal", "action": "Sync", "reportingController": "ingressctl",
        "reportingInstance": "ingressctl-1", "regarding": {"kind": "Ingress", "name": "web",
                                                           "namespace": ns}},
        _preload_content=False))
    assert created["note"] == "synced" and created["regarding"]["name"] == "web"
    as_core = core.read_namespaced_event("ev", ns)
    assert (as_core.message, as_core.involved_object.name, as_core.reporting_component) == (
        "synced", "web", "ingressctl")
    core.create_namespaced_event(ns, {"metadata": {"name": "old-style"}, "reason": "Bad", "message": "m",
                                      "type": "Warning", "involvedObject": {"kind": "Ingress", "name": "web"},
                                      "source": {"component": "ingressctl"}})
    warnings = core.list_namespaced_event(ns, field_selector="type=Warning,involvedObject.name=web").items
    assert [e.metadata.name for e in warnings] == ["old-style"]
    items = raw(events_v1.list_namespaced_event(ns, _preload_content=False))["items"]
    assert {i["metadata"]["name"]: i.get("note") for i in items} == {"ev": "synced", "old-style": "m"}


# ----------------------------------------------------------------------------------------------- watch
def test_watch_from_resource_version_sees_exactly_later_events(net: client.NetworkingV1Api, ns: str) -> None:
    net.create_namespaced_ingress(ns, ingress("before"))
    start = net.list_namespaced_ingress(ns).metadata.resource_version
    net.create_namespaced_ingress(ns, ingress("one"))
    net.patch_namespaced_ingress("before", ns, {"metadata": {"labels": {"k": "v"}}})
    net.create_namespaced_ingress(ns, ingress("two"))
    net.delete_namespaced_ingress("one", ns)
    net.patch_namespaced_ingress_status("two", ns,
                                        {"status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}})
    events = list(watch.Watch().stream(net.list_namespaced_ingress, ns, resource_version=start,
                                       timeout_seconds=1))
    assert [(e["type"], e["object"].metadata.name) for e in events] == [
        ("ADDED", "one"), ("MODIFIED", "before"), ("ADDED", "two"), ("DELETED", "one"), ("MODIFIED", "two")]
    rvs = [int(e["object"].metadata.resource_version) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(start) and len(set(rvs)) == len(rvs)
    # DELETED carries the last state with the deletion's new resourceVersion.
    added_one = events[0]["raw_object"]
    deleted_one = events[3]["raw_object"]
    assert deleted_one["metadata"]["uid"] == added_one["metadata"]["uid"]
    assert int(deleted_one["metadata"]["resourceVersion"]) > int(added_one["metadata"]["resourceVersion"])
    assert events[4]["object"].status.load_balancer.ingress[0].ip == "1.2.3.4"
    # A watch from the middle sees only the suffix.
    middle = events[2]["object"].metadata.resource_version
    suffix = list(watch.Watch().stream(net.list_namespaced_ingress, ns, resource_version=middle,
                                       timeout_seconds=1))
    assert [(e["type"], e["object"].metadata.name) for e in suffix] == [
        ("DELETED", "one"), ("MODIFIED", "two")]


def test_watch_without_resource_version_starts_with_synthetic_added(net: client.NetworkingV1Api,
                                                                    ns: str) -> None:
    for n in ("a", "b"):
        net.create_namespaced_ingress(ns, ingress(n))
    for rv in (None, "0"):
        kwargs = {"resource_version": rv} if rv else {}
        events = list(watch.Watch().stream(net.list_namespaced_ingress, ns, timeout_seconds=1, **kwargs))
        assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "a"), ("ADDED", "b")]


def test_live_watch_and_timeout(cluster: DevCluster, net: client.NetworkingV1Api, ns: str) -> None:
    rv = net.list_namespaced_ingress(ns).metadata.resource_version
    received: list[dict[str, Any]] = []
    watchers = cluster.store.watcher_count()
    reader = threading.Thread(target=lambda: received.extend(raw_watch(
        net.list_namespaced_ingress, ns, resource_version=rv, timeout_seconds=2)))
    reader.start()
    deadline = time.monotonic() + 30
    while cluster.store.watcher_count() <= watchers and time.monotonic() < deadline:
        time.sleep(0.01)   # poll until the watch is registered (it must then see the create, live)
    net.create_namespaced_ingress(ns, ingress("live"))
    reader.join(timeout=30)
    assert not reader.is_alive(), "timeoutSeconds must end the watch"
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in received] == [("ADDED", "live")]


def test_bookmarks_arrive_when_asked_for(net: client.NetworkingV1Api, ns: str) -> None:
    net.create_namespaced_ingress(ns, ingress("a"))
    rv = net.list_namespaced_ingress(ns).metadata.resource_version
    events = raw_watch(net.list_namespaced_ingress, ns, resource_version=rv, allow_watch_bookmarks=True,
                       timeout_seconds=60, read_until=lambda evs: any(e["type"] == "BOOKMARK" for e in evs))
    bookmark = next(e for e in events if e["type"] == "BOOKMARK")
    obj = bookmark["object"]
    assert set(obj) == {"kind", "apiVersion", "metadata"} and set(obj["metadata"]) == {"resourceVersion"}
    assert obj["kind"] == "Ingress" and obj["apiVersion"] == "networking.k8s.io/v1"
    assert int(obj["metadata"]["resourceVersion"]) >= int(rv)
    plain = raw_watch(net.list_namespaced_ingress, ns, resource_version=rv, timeout_seconds=1)
    assert all(e["type"] != "BOOKMARK" for e in plain)


def test_streaming_list_ends_initial_events_with_a_bookmark(net: client.NetworkingV1Api, ns: str) -> None:
    for n in ("a", "b"):
        net.create_namespaced_ingress(ns, ingress(n))
    events = raw_watch(net.list_namespaced_ingress, ns, send_initial_events=True, allow_watch_bookmarks=True,
                       resource_version_match="NotOlderThan", timeout_seconds=30,
                       read_until=lambda evs: any(e["type"] == "BOOKMARK" for e in evs))
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "BOOKMARK"]
    assert events[-1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_watch_from_compacted_resource_version_is_410(cluster: DevCluster, net: client.NetworkingV1Api,
                                                      ns: str) -> None:
    net.create_namespaced_ingress(ns, ingress("a"))
    old = net.list_namespaced_ingress(ns).metadata.resource_version
    net.create_namespaced_ingress(ns, ingress("b"))
    cluster.faults.compact()
    events = raw_watch(net.list_namespaced_ingress, ns, resource_version=old, timeout_seconds=30)
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    with pytest.raises(ApiException) as err:
        list(watch.Watch().stream(net.list_namespaced_ingress, ns, resource_version=old, timeout_seconds=5))
    assert err.value.status == 410
    # The current resourceVersion still works after compaction.
    current = net.list_namespaced_ingress(ns).metadata.resource_version
    assert list(watch.Watch().stream(net.list_namespaced_ingress, ns, resource_version=current,
                                     timeout_seconds=1)) == []


def test_bounded_history(tmp_path: Path) -> None:
    with DevCluster(history=5) as dc:
        api = client.CoreV1Api(config.new_client_from_config(dc.write_kubeconfig(str(tmp_path / "kc"))))
        first = api.create_namespaced_config_map("default",
                                                 {"metadata": {"name": "c0"}}).metadata.resource_version
        rvs = [api.create_namespaced_config_map("default",
                                                {"metadata": {"name": f"c{i}"}}).metadata.resource_version
               for i in range(1, 8)]
        # The 5 newest events are retained: a watch from rvs[-6] still works, older ones get 410.
        kept = list(watch.Watch().stream(api.list_namespaced_config_map, "default", resource_version=rvs[-6],
                                         timeout_seconds=1))
        assert [e["object"].metadata.name for e in kept] == [f"c{i}" for i in range(3, 8)]
        for too_old in (first, rvs[0]):
            with pytest.raises(ApiException) as err:
                list(watch.Watch().stream(api.list_namespaced_config_map, "default", resource_version=too_old,
                                          timeout_seconds=1))
            assert err.value.status == 410


def test_selectors_filter_watch(net: client.NetworkingV1Api, ns: str) -> None:
    net.create_namespaced_ingress(ns, ingress("a", labels={"app": "web"}))
    net.create_namespaced_ingress(ns, ingress("b", labels={"app": "db"}))
    start = net.list_namespaced_ingress(ns).metadata.resource_version
    net.patch_namespaced_ingress("a", ns, {"metadata": {"labels": {"app": "other"}}})   # stops matching
    net.patch_namespaced_ingress("b", ns, {"metadata": {"labels": {"app": "web"}}})     # starts matching
    net.patch_namespaced_ingress("b", ns, {"spec": {"ingressClassName": "nginx"}})      # still matches
    net.create_namespaced_ingress(ns, ingress("c", labels={"app": "db"}))               # never matches
    net.delete_namespaced_ingress("b", ns)
    events = raw_watch(net.list_namespaced_ingress, ns, resource_version=start, label_selector="app=web",
                       timeout_seconds=1)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("DELETED", "a"), ("ADDED", "b"), ("MODIFIED", "b"), ("DELETED", "b")]
    # The object that stopped matching is sent in its last matching state, at the event's resourceVersion.
    assert events[0]["object"]["metadata"]["labels"] == {"app": "web"}
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) > int(start)
    by_name = raw_watch(net.list_namespaced_ingress, ns, resource_version=start,
                        field_selector="metadata.name=c",
                        timeout_seconds=1)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in by_name] == [("ADDED", "c")]


def test_watch_across_namespaces_and_single_object(net: client.NetworkingV1Api,
                                                   core: client.CoreV1Api) -> None:
    rv = net.list_ingress_for_all_namespaces().metadata.resource_version
    for n in ("wa", "wb"):
        core.create_namespace({"metadata": {"name": n}})
        net.create_namespaced_ingress(n, ingress("x"))
    events = raw_watch(net.list_ingress_for_all_namespaces, resource_version=rv, timeout_seconds=1)
    assert [(e["object"]["metadata"]["namespace"], e["object"]["metadata"]["name"]) for e in events] == [
        ("wa", "x"), ("wb", "x")]
