"""devcluster under bad input and injected faults: Kubernetes Status errors, and the server keeps serving.

Bad requests are sent with `requests` over one keep-alive session (what a buggy client would do); after each
one the same session must still get a normal answer. Faults are checked with the official client.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from ingressctl.devcluster import DevCluster

pytestmark = pytest.mark.integration

ING = "/apis/networking.k8s.io/v1/namespaces/default/ingresses"


@pytest.fixture(scope="module")
def cluster() -> Iterator[DevCluster]:
    with DevCluster(bookmark_interval=0.2) as dc:
        yield dc


@pytest.fixture()
def http(cluster: DevCluster) -> Iterator[requests.Session]:
    s = requests.Session()
    yield s
    s.close()


@pytest.fixture(scope="module")
def core(cluster: DevCluster, tmp_path_factory: pytest.TempPathFactory) -> client.CoreV1Api:
    path = cluster.write_kubeconfig(str(tmp_path_factory.mktemp("kc") / "kubeconfig"))
    return client.CoreV1Api(config.new_client_from_config(path))


@pytest.fixture(autouse=True)
def clean_faults(cluster: DevCluster) -> Iterator[None]:
    cluster.faults.reset()
    yield
    cluster.faults.reset()


def status_of(resp: requests.Response, code: int, reason: str) -> dict[str, Any]:
    assert resp.status_code == code, resp.text
    assert resp.headers["Content-Type"] == "application/json"
    st: dict[str, Any] = resp.json()
    assert (st["kind"], st["apiVersion"], st["status"], st["code"], st["reason"]) == (
        "Status", "v1", "Failure", code, reason)
    assert st["message"]
    return st


def still_serving(cluster: DevCluster, http: requests.Session) -> None:
    resp = http.get(cluster.url + ING)
    assert resp.status_code == 200 and resp.json()["kind"] == "IngressList"


def ingress(name: str) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name},
            "spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}}}


# ----------------------------------------------------------------------------------------------- bad input
def test_malformed_json_is_400(cluster: DevCluster, http: requests.Session) -> None:
    for data in (b"{not json", b"", b"[1, 2]", b'"a string"', b'{"metadata": "oops"}'):
        resp = http.post(cluster.url + ING, data=data, headers={"Content-Type": "application/json"})
        status_of(resp, 400, "BadRequest")
        still_serving(cluster, http)


def test_missing_name_is_422_invalid(cluster: DevCluster, http: requests.Session) -> None:
    obj = ingress("x")
    del obj["metadata"]["name"]
    st = status_of(http.post(cluster.url + ING, json=obj), 422, "Invalid")
    assert st["details"]["causes"] == [{"reason": "FieldValueRequired", "field": "metadata.name",
                                        "message": "Required value: name or generateName is required"}]
    bad = status_of(http.post(cluster.url + ING, json=ingress("Not_A_Name")), 422, "Invalid")
    assert bad["details"]["causes"][0]["field"] == "metadata.name"
    still_serving(cluster, http)


def test_unknown_resource_is_404(cluster: DevCluster, http: requests.Session) -> None:
    for path in ("/apis/networking.k8s.io/v1/namespaces/default/widgets", "/apis/example.com/v1/things",
                 "/api/v2/pods", "/nothing/here", "/apis/networking.k8s.io/v1beta1/ingresses"):
        status_of(http.get(cluster.url + path), 404, "NotFound")
        status_of(http.post(cluster.url + path, json=ingress("x")), 404, "NotFound")
    status_of(http.get(cluster.url + "/apis/networking.k8s.io/v1/ingresses/name-without-namespace"),
              404, "NotFound")
    status_of(http.get(cluster.url + "/api/v1/namespaces/default/configmaps/x/status"), 404, "NotFound")
    still_serving(cluster, http)


def test_body_that_does_not_fit_the_url_is_400(cluster: DevCluster, http: requests.Session) -> None:
    obj = ingress("x")
    obj["metadata"]["namespace"] = "kube-system"
    st = status_of(http.post(cluster.url + ING, json=obj), 400, "BadRequest")
    assert "does not match the namespace" in st["message"]
    status_of(http.post(cluster.url + ING, json={**ingress("x"), "kind": "Service"}), 400, "BadRequest")
    status_of(http.post(cluster.url + ING, json={**ingress("x"), "apiVersion": "v1"}), 400, "BadRequest")
    http.post(cluster.url + ING, json=ingress("named"))
    st = status_of(http.put(cluster.url + ING + "/named", json=ingress("other")), 400, "BadRequest")
    assert "does not match the name on the URL" in st["message"]
    still_serving(cluster, http)


def test_huge_body_is_413(cluster: DevCluster, http: requests.Session) -> None:
    obj = ingress("huge")
    obj["metadata"]["annotations"] = {"blob": "x" * (4 * 1024 * 1024)}
    st = status_of(http.post(cluster.url + ING, json=obj), 413, "RequestEntityTooLarge")
    assert "3145728" in st["message"]
    still_serving(cluster, http)
    status_of(http.get(cluster.url + ING + "/huge"), 404, "NotFound")


def test_bad_parameters_are_400(cluster: DevCluster, http: requests.Session) -> None:
    for query in ("labelSelector=a%20in%20(b", "fieldSelector=spec.x%3Dy", "continue=garbage",
                  "resourceVersion=abc", "limit=-1", "resourceVersionMatch=Exact",
                  "resourceVersion=0&resourceVersionMatch=Exact", "continue=x&resourceVersion=5",
                  "watch=1&resourceVersion=nope",
                  "watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=1"):
        status_of(http.get(f"{cluster.url}{ING}?{query}"), 400, "BadRequest")
    still_serving(cluster, http)


def test_unsupported_patch_and_method(cluster: DevCluster, http: requests.Session) -> None:
    http.post(cluster.url + ING, json=ingress("p"))
    status_of(http.patch(cluster.url + ING + "/p", data=b"{}", headers={"Content-Type": "text/plain"}),
              415, "UnsupportedMediaType")
    # Server-side apply without a field manager (kube-apiserver requires one).
    status_of(http.patch(cluster.url + ING + "/p", data=b"{}",
                         headers={"Content-Type": "application/apply-patch+yaml"}), 422, "Invalid")
    status_of(http.patch(cluster.url + ING + "/p", data=b"{bad",
                         headers={"Content-Type": "application/merge-patch+json"}), 400, "BadRequest")
    status_of(http.patch(cluster.url + ING + "/p", data=b'{"op": "add"}',
                         headers={"Content-Type": "application/json-patch+json"}), 400, "BadRequest")
    status_of(http.patch(cluster.url + ING + "/p", data=b'[{"op": "remove", "path": "/spec/nothing"}]',
                         headers={"Content-Type": "application/json-patch+json"}), 422, "Invalid")
    status_of(http.post(cluster.url + ING + "/p", json=ingress("p")), 405, "MethodNotAllowed")
    status_of(http.put(cluster.url + "/version", json={}), 405, "MethodNotAllowed")
    still_serving(cluster, http)


def test_too_large_resource_version(cluster: DevCluster, http: requests.Session) -> None:
    for query in ("resourceVersion=999999999", "watch=1&resourceVersion=999999999"):
        resp = http.get(f"{cluster.url}{ING}?{query}")
        st = status_of(resp, 504, "Timeout")
        assert st["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
        assert resp.headers["Retry-After"] == "1"


def test_garbage_on_the_wire_harms_no_one(cluster: DevCluster, http: requests.Session) -> None:
    host, port = cluster.url.split("//")[1].rsplit(":", 1)
    for junk in (b"\x00\x01\x02 garbage\r\n\r\n", b"GET /api HTTP/1.1\r\nContent-Length: zz\r\n\r\n",
                 b"POST " + ING.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{"):
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(junk)
            s.shutdown(socket.SHUT_WR)
            s.recv(65536)
    still_serving(cluster, http)


# ----------------------------------------------------------------------------------------------- faults
def test_error_rates_500_and_429(cluster: DevCluster, http: requests.Session, core: client.CoreV1Api) -> None:
    cluster.faults.set_error_rate(500, 1.0, verb="list", resource="configmaps")
    st = status_of(http.get(cluster.url + "/api/v1/namespaces/default/configmaps"), 500, "InternalError")
    assert st["message"].startswith("Internal error occurred")
    still_serving(cluster, http)                                   # other resources are not affected
    cluster.faults.set_error_rate(500, 0.0, verb="list", resource="configmaps")
    cluster.faults.set_error_rate(429, 1.0, resource="configmaps", retry_after=3)
    resp = http.get(cluster.url + "/api/v1/namespaces/default/configmaps/x")
    st = status_of(resp, 429, "TooManyRequests")
    assert resp.headers["Retry-After"] == "3" and st["details"]["retryAfterSeconds"] == 3
    # The official client sees the same (its urllib3 layer retries GETs with Retry-After a few times first).
    cluster.faults.set_error_rate(429, 1.0, verb="create", resource="configmaps", retry_after=3)
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", {"metadata": {"name": "limited"}})
    assert err.value.status == 429 and err.value.headers["Retry-After"] == "3"
    cluster.faults.reset()
    assert core.list_namespaced_config_map("default").kind == "ConfigMapList"


def test_partial_error_rate_and_fail_next(cluster: DevCluster, http: requests.Session) -> None:
    cluster.faults.seed(7)
    cluster.faults.set_error_rate(500, 0.5, verb="get", resource="namespaces")
    codes = [http.get(cluster.url + "/api/v1/namespaces/default").status_code for _ in range(200)]
    assert set(codes) == {200, 500} and 40 < codes.count(500) < 160
    cluster.faults.reset()
    cluster.faults.fail_next(503, count=2, verb="get")
    codes = [http.get(cluster.url + "/api/v1/namespaces/default").status_code for _ in range(3)]
    assert codes == [503, 503, 200]


def test_latency_per_verb(cluster: DevCluster, http: requests.Session) -> None:
    cluster.faults.set_latency(300, verb="list", resource="secrets")
    t0 = time.monotonic()
    http.get(cluster.url + "/api/v1/namespaces/default/secrets")
    assert time.monotonic() - t0 >= 0.3
    assert cluster.faults.latency_for("get", "secrets") == 0
    assert cluster.faults.latency_for("list", "secrets") == pytest.approx(0.3)


def test_stats_count_and_max_in_flight(cluster: DevCluster, core: client.CoreV1Api) -> None:
    api = core
    cluster.stats.reset()
    cluster.faults.set_latency(1500, verb="list", resource="services")
    threads = [threading.Thread(target=api.list_namespaced_service, args=("default",)) for _ in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while cluster.stats.in_flight("list", "services") < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    for t in threads:
        t.join()
    assert cluster.stats.count("list", "services") == 4
    assert cluster.stats.max_in_flight("list", "services") == 4
    while cluster.stats.in_flight("list", "services") and time.monotonic() < deadline:
        time.sleep(0.01)    # the server counts a request done just after its response is sent
    assert cluster.stats.in_flight("list", "services") == 0
    api.create_namespaced_config_map("default", {"metadata": {"name": "stats"}})
    calls = cluster.stats.calls()
    assert ("create", "configmaps", "default", "") in calls
    assert calls.count(("list", "services", "default", "")) == 4
    assert cluster.stats.group_of("configmaps") == ""


def test_status_calls_are_recorded_with_subresource(cluster: DevCluster, http: requests.Session) -> None:
    http.post(cluster.url + ING, json=ingress("st"))
    cluster.stats.reset()
    http.patch(cluster.url + ING + "/st/status",
               json={"status": {"loadBalancer": {"ingress": [{"ip": "1.1.1.1"}]}}},
               headers={"Content-Type": "application/merge-patch+json"})
    assert cluster.stats.count("patch", "ingresses/status") == 1
    assert cluster.stats.calls() == [("patch", "ingresses/status", "default", "status")]
    assert cluster.stats.group_of("ingresses/status") == "networking.k8s.io"


def test_drop_watches_closes_streams_abruptly(cluster: DevCluster, core: client.CoreV1Api) -> None:
    api = core
    outcome: list[str] = []
    opened = threading.Event()

    def watch() -> None:
        resp = api.list_namespaced_config_map("default", watch=True, timeout_seconds=120,
                                              _preload_content=False)
        opened.set()
        try:
            for _ in resp.stream(1024, decode_content=False):
                pass
            outcome.append("clean end")
        except Exception as e:   # urllib3 ProtocolError: the chunked stream was cut
            outcome.append(type(e).__name__)

    reader = threading.Thread(target=watch)
    reader.start()
    assert opened.wait(30)
    deadline = time.monotonic() + 30
    while cluster.store.watcher_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cluster.faults.drop_watches() >= 1
    reader.join(30)
    assert outcome and outcome[0] != "clean end"
    assert api.list_namespaced_config_map("default").kind == "ConfigMapList"


def test_injected_fault_on_watch_request(cluster: DevCluster, http: requests.Session) -> None:
    cluster.faults.set_error_rate(429, 1.0, verb="watch", retry_after=2)
    resp = http.get(cluster.url + ING + "?watch=1&timeoutSeconds=1")
    status_of(resp, 429, "TooManyRequests")
    assert resp.headers["Retry-After"] == "2"
    still_serving(cluster, http)


def test_watch_answers_are_parseable_after_errors(cluster: DevCluster, http: requests.Session) -> None:
    resp = http.get(cluster.url + ING + "?watch=true&timeoutSeconds=1&allowWatchBookmarks=true", stream=True)
    assert resp.headers["Transfer-Encoding"] == "chunked"
    lines = [json.loads(line) for line in resp.iter_lines() if line]
    assert all(e["type"] in ("ADDED", "BOOKMARK") for e in lines)
    still_serving(cluster, http)


def test_restart_keeps_url_and_data(tmp_path_factory: pytest.TempPathFactory) -> None:
    with DevCluster(tls=True) as dc:
        path = dc.write_kubeconfig(str(tmp_path_factory.mktemp("restart") / "kubeconfig"))
        api = client.CoreV1Api(config.new_client_from_config(path))
        created = api.create_namespaced_config_map("default", {"metadata": {"name": "survivor"}})
        url = dc.url
        dc.stop()
        host, port = url.split("//")[1].rsplit(":", 1)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((host, int(port)), timeout=5)
        dc.start()
        assert dc.url == url
        again = api.read_namespaced_config_map("survivor", "default")
        assert again.metadata.resource_version == created.metadata.resource_version
        assert api.create_namespaced_config_map("default", {"metadata": {"name": "after"}}).metadata.uid


def test_injected_faults_carry_the_reason_a_real_server_gives() -> None:
    """An injected 409 must look like a real conflict (reason Conflict), so clients treat it as one."""
    import json as _json
    import urllib.error
    import urllib.request

    from ingressctl.devcluster import DevCluster

    with DevCluster() as cluster:
        for code, reason in ((409, "Conflict"), (503, "ServiceUnavailable"), (429, "TooManyRequests")):
            cluster.faults.fail_next(code, verb="list", resource="configmaps")
            try:
                urllib.request.urlopen(f"{cluster.url}/api/v1/namespaces/default/configmaps", timeout=10)
            except urllib.error.HTTPError as e:
                body = _json.loads(e.read())
                assert (e.code, body["reason"], body["code"]) == (code, reason, code)
            else:
                raise AssertionError(f"injected {code} was not returned")
