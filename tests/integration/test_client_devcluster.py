"""KubeClient against devcluster over HTTP and HTTPS: raw JSON verbs, errors, retries, watches, threads."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from ingressctl.devcluster import DevCluster
from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.resource import CONFIGMAPS, INGRESSES, LEASES

pytestmark = pytest.mark.integration


def ingress(name: str) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": f"{name}.example.com"}]}}


@pytest.fixture
def dc() -> Any:
    with DevCluster() as cluster:
        yield cluster


@pytest.fixture
def client(dc: DevCluster, tmp_path: Path) -> KubeClient:
    return KubeClient.from_kubeconfig(dc.write_kubeconfig(str(tmp_path / "kubeconfig")))


def test_crud_status_and_patches_as_plain_dicts(client: KubeClient) -> None:
    created = client.create(INGRESSES, "default", ingress("web"))
    assert type(created) is dict and created["metadata"]["uid"]
    got = client.get(INGRESSES, "default", "web")
    assert got["spec"]["rules"][0]["host"] == "web.example.com"

    got["spec"]["rules"][0]["host"] = "www.example.com"
    updated = client.update(INGRESSES, "default", "web", got)
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    with pytest.raises(ApiError) as ei:
        client.update(INGRESSES, "default", "web", got)  # stale resourceVersion
    assert ei.value.is_conflict and ei.value.status == 409

    status = {**updated, "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}}
    after = client.update_status(INGRESSES, "default", "web", status)
    assert after["status"]["loadBalancer"]["ingress"] == [{"ip": "10.0.0.1"}]
    patched = client.patch(INGRESSES, "default", "web", {"status": {"loadBalancer": {"ingress": [
        {"hostname": "lb.example.com"}]}}}, subresource="status")
    assert patched["status"]["loadBalancer"]["ingress"] == [{"hostname": "lb.example.com"}]

    p = client.patch(INGRESSES, "default", "web", {"metadata": {"labels": {"a": "1"}}})
    assert p["metadata"]["labels"] == {"a": "1"}
    p = client.patch(INGRESSES, "default", "web", [{"op": "add", "path": "/metadata/labels/b", "value": "2"}],
                     patch_type="json")
    assert p["metadata"]["labels"] == {"a": "1", "b": "2"}
    p = client.patch(INGRESSES, "default", "web", {"metadata": {"labels": {"c": "3"}}},
                     patch_type="strategic")
    assert p["metadata"]["labels"] == {"a": "1", "b": "2", "c": "3"}

    with pytest.raises(ApiError) as ei:
        client.create(INGRESSES, "default", ingress("web"))
    assert ei.value.is_already_exists and not ei.value.is_conflict
    client.delete(INGRESSES, "default", "web")
    with pytest.raises(ApiError) as ei:
        client.get(INGRESSES, "default", "web")
    assert ei.value.is_not_found and ei.value.reason == "NotFound"


def test_pagination_and_selectors(dc: DevCluster, client: KubeClient) -> None:
    dc.load({"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": f"cm-{i:03d}", "namespace": "default", "labels": {"parity": str(i % 2)}},
             "data": {}} for i in range(120))
    page = client.list(CONFIGMAPS, "default", limit=50)
    assert len(page["items"]) == 50 and page["metadata"]["continue"]
    items, rv = client.list_all(CONFIGMAPS, "default", page_size=50)
    assert len(items) == 120 and int(rv) >= 120
    odd, _ = client.list_all(CONFIGMAPS, "default", label_selector="parity=1", page_size=7)
    assert len(odd) == 60
    one = client.list(CONFIGMAPS, "default", field_selector="metadata.name=cm-007")
    assert [o["metadata"]["name"] for o in one["items"]] == ["cm-007"]


def test_injected_429_and_500_are_retried(dc: DevCluster, client: KubeClient) -> None:
    dc.faults.fail_next(429, count=2, verb="create", resource="configmaps", retry_after=0)
    dc.faults.fail_next(503, count=2, verb="get", resource="configmaps")
    client.create(CONFIGMAPS, "default", {"metadata": {"name": "x"}, "data": {}})
    assert client.get(CONFIGMAPS, "default", "x")["metadata"]["name"] == "x"
    assert dc.stats.count("create", "configmaps") == 3
    assert dc.stats.count("get", "configmaps") == 3
    dc.faults.fail_next(500, count=20, verb="delete", resource="configmaps")
    with pytest.raises(ApiError) as ei:
        KubeClient.for_host(dc.url, retry_backoff=0.001).delete(CONFIGMAPS, "default", "x")
    assert ei.value.status == 500  # bounded: gives up after max_retries


def test_watch_from_a_resource_version(dc: DevCluster, client: KubeClient) -> None:
    start = client.list(CONFIGMAPS, "default")["metadata"]["resourceVersion"]
    for name in ("a", "b"):
        client.create(CONFIGMAPS, "default", {"metadata": {"name": name}, "data": {}})
    client.delete(CONFIGMAPS, "default", "a")
    with client.watch(CONFIGMAPS, "default", resource_version=start, timeout_seconds=1) as w:
        events = [(e["type"], e["object"]["metadata"].get("name")) for e in w if e["type"] != "BOOKMARK"]
    assert events == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    dc.faults.compact()
    with client.watch(CONFIGMAPS, "default", resource_version=start, timeout_seconds=5) as w:
        first = next(iter(w))
    assert first["type"] == "ERROR" and ApiError.from_status(first["object"]).is_gone


def test_ten_concurrent_writers_share_one_client(dc: DevCluster, client: KubeClient) -> None:
    dc.faults.set_latency(30, verb="create", resource="leases")
    errors: list[BaseException] = []
    barrier = threading.Barrier(10)

    def writer(i: int) -> None:
        try:
            barrier.wait(30)
            for j in range(5):
                client.create(LEASES, "default", {"metadata": {"name": f"l-{i}-{j}"}, "spec": {}})
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert len(client.list(LEASES, "default")["items"]) == 50
    assert dc.stats.max_in_flight("create", "leases") >= 5  # requests really ran in parallel


def test_tls_and_bearer_token_from_kubeconfig(tmp_path: Path) -> None:
    with DevCluster(tls=True) as dc:
        client = KubeClient.from_kubeconfig(dc.write_kubeconfig(str(tmp_path / "kc")))
        assert client.host.startswith("https://")
        client.create(CONFIGMAPS, "default", {"metadata": {"name": "secure"}, "data": {}})
        assert client.get(CONFIGMAPS, "default", "secure")["metadata"]["name"] == "secure"
        assert dc.certificate is not None
        ca = tmp_path / "ca.pem"
        ca.write_bytes(dc.certificate.ca_pem)
        with pytest.raises(ApiError) as ei:
            KubeClient.for_host(dc.url, ca_cert=str(ca), token="wrong").get(CONFIGMAPS, "default", "secure")
        assert ei.value.status == 401
