"""devcluster calls ValidatingWebhookConfigurations as kube-apiserver does: the AdmissionReview it sends,
rules and selectors, denials and warnings as the API server returns them, failurePolicy on a failed call
(down, timeout, wrong CA, wrong uid), dry run, and clientConfig by URL or by Service."""

from __future__ import annotations

import json
import socket
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ingressctl.devcluster import DevCluster
from ingressctl.devcluster.tlsutil import generate
from ingressctl.http_serving import serve_in_background
from tests.webhooks import INGRESS_RULE, SERVICE, SERVICE_NS, WebhookCert, ingress, vwc, webhook_cert

Answer = Callable[[dict[str, Any]], dict[str, Any]]


def allow(req: dict[str, Any]) -> dict[str, Any]:
    return {"uid": req["uid"], "allowed": True}


class RecordingWebhook:
    """An HTTPS webhook that records every AdmissionReview and answers with `answer(request)`."""

    def __init__(self, cert: WebhookCert) -> None:
        import ssl

        self.reviews: list[dict[str, Any]] = []
        self.answer: Answer = allow
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.reviews.append(body)
                data = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": outer.answer(body["request"])}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert.cert_file, cert.key_file)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = int(self.server.server_address[1])
        self.thread = serve_in_background(self.server, "recording-webhook")

    def requests(self) -> list[dict[str, Any]]:
        return [r["request"] for r in self.reviews]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def cert(tmp_path_factory: pytest.TempPathFactory) -> WebhookCert:
    return webhook_cert(str(tmp_path_factory.mktemp("webhook-cert")))


@pytest.fixture
def hook(cert: WebhookCert) -> Iterator[RecordingWebhook]:
    h = RecordingWebhook(cert)
    yield h
    h.close()


@pytest.fixture
def cluster(hook: RecordingWebhook) -> Iterator[DevCluster]:
    with DevCluster(webhook_services={f"{SERVICE_NS}/{SERVICE}": f"127.0.0.1:{hook.port}"}) as c:
        c.load([{"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": "demo", "labels": {"team": "a"}}},
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}])
        yield c


def call(cluster: DevCluster, method: str, path: str, body: Any = None,
         content_type: str = "application/json") -> tuple[int, Any, list[str]]:
    """(status, decoded body, Warning headers) of one request to the cluster."""
    import http.client

    url = urllib.parse.urlsplit(cluster.url)
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, data, {"Content-Type": content_type} if data is not None else {})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null"), resp.headers.get_all("Warning") or []
    finally:
        conn.close()


ING = "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses"


def create(cluster: DevCluster, obj: dict[str, Any], query: str = "") -> tuple[int, Any, list[str]]:
    return call(cluster, "POST", ING.format(ns=obj["metadata"]["namespace"]) + query, obj)


def test_the_admission_review_sent_on_create_update_patch_and_delete(cluster: DevCluster,
                                                                     hook: RecordingWebhook,
                                                                     cert: WebhookCert) -> None:
    rule = {**INGRESS_RULE, "operations": ["*"]}
    cluster.load([vwc("v", cert.ca_bundle, rules=[rule])])
    code, created, _ = create(cluster, ingress("web", "a.example.com"))
    assert code == 201
    (req,) = hook.requests()
    assert req["uid"] and req["operation"] == "CREATE" and req["dryRun"] is False
    assert req["kind"] == {"group": "networking.k8s.io", "version": "v1", "kind": "Ingress"}
    assert req["resource"] == {"group": "networking.k8s.io", "version": "v1", "resource": "ingresses"}
    assert req["requestKind"] == req["kind"] and req["requestResource"] == req["resource"]
    assert (req["name"], req["namespace"]) == ("web", "demo")
    assert req["userInfo"]["username"] and req["options"]["kind"] == "CreateOptions"
    assert req["object"]["kind"] == "Ingress" and req["object"]["apiVersion"] == "networking.k8s.io/v1"
    assert req["object"]["metadata"]["creationTimestamp"] and req["object"]["metadata"]["uid"]
    assert req["object"]["spec"] == created["spec"]
    assert req["oldObject"] is None

    changed = {**created, "spec": ingress("web", "b.example.com")["spec"]}
    code, _, _ = call(cluster, "PUT", ING.format(ns="demo") + "/web", changed)
    assert code == 200
    req = hook.requests()[-1]
    assert req["operation"] == "UPDATE" and req["options"]["kind"] == "UpdateOptions"
    assert req["oldObject"]["spec"]["rules"][0]["host"] == "a.example.com"
    assert req["object"]["spec"]["rules"][0]["host"] == "b.example.com"
    assert req["uid"] != hook.requests()[0]["uid"]

    code, _, _ = call(cluster, "PATCH", ING.format(ns="demo") + "/web", {"metadata": {"labels": {"x": "y"}}},
                      "application/merge-patch+json")
    assert code == 200
    req = hook.requests()[-1]
    assert req["operation"] == "UPDATE" and req["object"]["metadata"]["labels"] == {"x": "y"}
    assert "labels" not in req["oldObject"]["metadata"]

    code, _, _ = call(cluster, "DELETE", ING.format(ns="demo") + "/web")
    assert code == 200
    req = hook.requests()[-1]
    assert req["operation"] == "DELETE" and req["object"] is None
    assert req["oldObject"]["metadata"]["name"] == "web"


def test_rules_pick_operations_resources_and_subresources(cluster: DevCluster, hook: RecordingWebhook,
                                                          cert: WebhookCert) -> None:
    cluster.load([vwc("v", cert.ca_bundle)])   # CREATE and UPDATE of ingresses
    code, created, _ = create(cluster, ingress("web", "a.example.com"))
    assert code == 201 and len(hook.reviews) == 1
    status = {**created, "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}}
    assert call(cluster, "PUT", ING.format(ns="demo") + "/web/status", status)[0] == 200
    assert len(hook.reviews) == 1   # "ingresses" does not cover ingresses/status
    assert call(cluster, "DELETE", ING.format(ns="demo") + "/web")[0] == 200
    assert len(hook.reviews) == 1   # DELETE is not in the rule
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "demo"},
           "spec": {"ports": [{"port": 80}]}}
    assert call(cluster, "POST", "/api/v1/namespaces/demo/services", svc)[0] == 201
    assert len(hook.reviews) == 1

    cluster.load([vwc("status", cert.ca_bundle, webhook_name="status.example",
                      rules=[{**INGRESS_RULE, "resources": ["ingresses/status"], "operations": ["UPDATE"]}])])
    code, created, _ = create(cluster, ingress("web2", "a.example.com"))
    before = len(hook.reviews)
    assert call(cluster, "PUT", ING.format(ns="demo") + "/web2/status", {**created, "status": {}})[0] == 200
    assert len(hook.reviews) == before + 1
    assert hook.requests()[-1]["subResource"] == "status"


def test_namespace_and_object_selectors(cluster: DevCluster, hook: RecordingWebhook,
                                        cert: WebhookCert) -> None:
    cluster.load([vwc("v", cert.ca_bundle, namespace_selector={"matchLabels": {"team": "a"}},
                      object_selector={"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]})])
    assert create(cluster, ingress("web", "a.example.com", namespace="other"))[0] == 201
    assert hook.reviews == []
    skipped = ingress("skipped", "a.example.com")
    skipped["metadata"]["labels"] = {"skip": "yes"}
    assert create(cluster, skipped)[0] == 201
    assert hook.reviews == []
    assert create(cluster, ingress("web", "a.example.com"))[0] == 201
    assert [r["name"] for r in hook.requests()] == ["web"]


def test_a_denial_is_returned_as_the_api_server_returns_it(cluster: DevCluster, hook: RecordingWebhook,
                                                           cert: WebhookCert) -> None:
    cluster.load([vwc("v", cert.ca_bundle, failure_policy="Fail")])
    hook.answer = lambda r: {"uid": r["uid"], "allowed": False,
                             "status": {"code": 403, "reason": "Forbidden", "message": "no such host here"}}
    code, status, _ = create(cluster, ingress("web", "a.example.com"))
    assert code == 403
    assert status["kind"] == "Status" and status["status"] == "Failure" and status["reason"] == "Forbidden"
    assert status["message"] == 'admission webhook "ingresses.validate.ingressctl" denied the request: ' \
                                "no such host here"
    assert call(cluster, "GET", ING.format(ns="demo") + "/web")[0] == 404

    hook.answer = lambda r: {"uid": r["uid"], "allowed": False}
    code, status, _ = create(cluster, ingress("web", "a.example.com"))
    assert code == 400
    assert status["message"] == 'admission webhook "ingresses.validate.ingressctl" denied the request ' \
                                "without explanation"


def test_warnings_become_warning_headers(cluster: DevCluster, hook: RecordingWebhook,
                                         cert: WebhookCert) -> None:
    cluster.load([vwc("v", cert.ca_bundle)])
    hook.answer = lambda r: {"uid": r["uid"], "allowed": True,
                             "warnings": ['host "a" is taken', "second \u00e9\n"]}
    code, _, warnings = create(cluster, ingress("web", "a.example.com"))
    assert code == 201
    # One header, the warnings comma-separated (as the store's own warnings); not latin-1 text replaced.
    assert warnings == ['299 - "host \\"a\\" is taken", 299 - "second ??"']


def _silent_listener() -> socket.socket:
    """A port that accepts connections (backlog) and never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    return s


@pytest.mark.parametrize("failure", ["down", "timeout", "wrong-ca", "wrong-uid", "no-uid"])
def test_failure_policy_decides_when_the_call_fails(cluster: DevCluster, hook: RecordingWebhook,
                                                   cert: WebhookCert, failure: str) -> None:
    kw: dict[str, Any] = {"timeout": 1}
    ca = cert.ca_bundle
    silent = _silent_listener()
    try:
        if failure == "down":
            cluster.admission.set_service(f"{SERVICE_NS}/{SERVICE}", f"127.0.0.1:{_closed_port()}")
        elif failure == "timeout":
            cluster.admission.set_service(f"{SERVICE_NS}/{SERVICE}", f"127.0.0.1:{silent.getsockname()[1]}")
        elif failure == "wrong-ca":
            import base64

            ca = base64.b64encode(generate("elsewhere").ca_pem).decode()
        elif failure == "wrong-uid":
            hook.answer = lambda r: {"uid": "another", "allowed": True}
        else:
            hook.answer = lambda r: {"allowed": True}
        cluster.load([vwc("v", ca, failure_policy="Fail", **kw)])
        code, status, _ = create(cluster, ingress("web", "a.example.com"))
        assert code == 500 and status["reason"] == "InternalError", status
        assert status["message"].startswith('Internal error occurred: failed calling webhook '
                                            '"ingresses.validate.ingressctl": ')
        assert call(cluster, "GET", ING.format(ns="demo") + "/web")[0] == 404

        cluster.load([vwc("v", ca, failure_policy="Ignore", **kw)])
        assert create(cluster, ingress("web", "a.example.com"))[0] == 201
    finally:
        silent.close()


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def test_dry_run_and_side_effects(cluster: DevCluster, hook: RecordingWebhook, cert: WebhookCert) -> None:
    cluster.load([vwc("v", cert.ca_bundle)])
    code, _, _ = create(cluster, ingress("web", "a.example.com"), "?dryRun=All")
    assert code == 201 and hook.requests()[-1]["dryRun"] is True
    assert call(cluster, "GET", ING.format(ns="demo") + "/web")[0] == 404
    cluster.load([vwc("v", cert.ca_bundle, side_effects="Some")])
    code, status, _ = create(cluster, ingress("web", "a.example.com"), "?dryRun=All")
    assert code == 400 and "does not support dry run" in status["message"]


def test_client_config_by_url_and_an_unrouted_service(cluster: DevCluster, hook: RecordingWebhook,
                                                      cert: WebhookCert) -> None:
    cluster.load([vwc("v", cert.ca_bundle, url=f"https://127.0.0.1:{hook.port}/validate",
                      failure_policy="Fail")])
    assert create(cluster, ingress("web", "a.example.com"))[0] == 201
    assert len(hook.reviews) == 1
    with DevCluster() as bare:
        bare.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}},
                   vwc("v", cert.ca_bundle, failure_policy="Fail")])
        code, status, _ = create(bare, ingress("web", "a.example.com"))
        assert code == 500 and "is not reachable from devcluster" in status["message"]


def test_generate_name_keeps_the_name_the_webhook_saw(cluster: DevCluster, hook: RecordingWebhook,
                                                      cert: WebhookCert) -> None:
    cluster.load([vwc("v", cert.ca_bundle)])
    obj = ingress("", "a.example.com")
    del obj["metadata"]["name"]
    obj["metadata"]["generateName"] = "web-"
    code, created, _ = create(cluster, obj)
    assert code == 201 and created["metadata"]["name"] == hook.requests()[-1]["name"]




def test_the_command_line_routes_webhook_services() -> None:
    from ingressctl.devcluster.__main__ import parse_args

    a = parse_args(["--kubeconfig-out", "/tmp/kc", "--webhook-service", "ns/svc:443=127.0.0.1:8443",
                    "--webhook-service", "ns/other=[::1]:9443"])
    assert dict(a.webhook_service) == {"ns/svc:443": "127.0.0.1:8443", "ns/other": "[::1]:9443"}
    with pytest.raises(SystemExit):
        parse_args(["--kubeconfig-out", "/tmp/kc", "--webhook-service", "svc=127.0.0.1"])


def test_custom_resource_kinds_are_sent_too(cluster: DevCluster, hook: RecordingWebhook, cert: WebhookCert,
                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    """A kind a CustomResourceDefinition adds (NIC's VirtualServer) is matched and sent like a built-in one;
    kubectl prints the denial."""
    from pathlib import Path

    import yaml

    from tests.webhooks import Kubectl

    crds = Path(__file__).resolve().parents[2] / "charts" / "ingressctl" / "crds"
    crd = crds / "k8s.nginx.org_virtualservers.yaml"
    assert call(cluster, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                yaml.safe_load(crd.read_text()))[0] == 201
    rule = {**INGRESS_RULE, "apiGroups": ["k8s.nginx.org"], "resources": ["virtualservers"]}
    cluster.load([vwc("v", cert.ca_bundle, failure_policy="Fail", webhook_name="virtualservers.validate.test",
                      rules=[rule])])
    hook.answer = lambda r: ({"uid": r["uid"], "allowed": True} if r["object"]["spec"].get("upstreams")
                             else {"uid": r["uid"], "allowed": False,
                                   "status": {"message": "spec.upstreams: Required value"}})
    tmp = str(tmp_path_factory.mktemp("vs"))
    kubectl = Kubectl(cluster.write_kubeconfig(f"{tmp}/kubeconfig"), tmp)
    vs = {"apiVersion": "k8s.nginx.org/v1", "kind": "VirtualServer",
          "metadata": {"name": "cafe", "namespace": "demo"},
          "spec": {"host": "cafe.example.com", "routes": [{"path": "/", "action": {"pass": "tea"}}]}}
    bad = kubectl.apply(vs)
    assert bad.returncode != 0
    assert ('admission webhook "virtualservers.validate.test" denied the request: '
            "spec.upstreams: Required value") in bad.stderr
    assert cluster.objects("virtualservers", "demo") == []
    req = hook.requests()[-1]
    assert req["kind"] == {"group": "k8s.nginx.org", "version": "v1", "kind": "VirtualServer"}
    assert req["resource"]["resource"] == "virtualservers" and req["object"]["kind"] == "VirtualServer"
    vs["spec"]["upstreams"] = [{"name": "tea", "service": "tea-svc", "port": 80}]
    good = kubectl.apply(vs)
    assert good.returncode == 0, good.stderr
    assert [o["metadata"]["name"] for o in cluster.objects("virtualservers", "demo")] == ["cafe"]


def test_server_side_apply_is_admitted_like_any_write(cluster: DevCluster, hook: RecordingWebhook,
                                                      cert: WebhookCert) -> None:
    """Helm 4 and `kubectl apply --server-side` write by apply patches: the webhook sees their result."""
    cluster.load([vwc("v", cert.ca_bundle, failure_policy="Fail")])
    path = ING.format(ns="demo") + "/web?fieldManager=helm"
    applied = ingress("web", "a.example.com")
    code, _, _ = call(cluster, "PATCH", path, applied, "application/apply-patch+yaml")
    assert code == 201
    req = hook.requests()[-1]
    assert req["operation"] == "CREATE" and req["object"]["spec"]["rules"][0]["host"] == "a.example.com"
    code, _, _ = call(cluster, "PATCH", path, ingress("web", "b.example.com"), "application/apply-patch+yaml")
    assert code == 200
    req = hook.requests()[-1]
    assert req["operation"] == "UPDATE" and req["object"]["spec"]["rules"][0]["host"] == "b.example.com"
    assert req["oldObject"]["spec"]["rules"][0]["host"] == "a.example.com"
    hook.answer = lambda r: {"uid": r["uid"], "allowed": False,
                             "status": {"code": 403, "reason": "Forbidden", "message": "not this host"}}
    code, status, _ = call(cluster, "PATCH", path, ingress("web", "c.example.com"),
                           "application/apply-patch+yaml")
    assert code == 403 and "not this host" in status["message"]
    stored = cluster.objects("ingresses", "demo")[0]
    assert stored["spec"]["rules"][0]["host"] == "b.example.com"


def test_the_requesters_identity_is_sent(cluster: DevCluster, hook: RecordingWebhook,
                                         cert: WebhookCert) -> None:
    import http.client

    cluster.load([vwc("v", cert.ca_bundle), {"apiVersion": "v1", "kind": "ServiceAccount",
                                             "metadata": {"name": "bot", "namespace": "demo"}}])
    token = cluster.create_token("demo", "bot")
    url = urllib.parse.urlsplit(cluster.url)
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
    try:
        conn.request("POST", ING.format(ns="demo"), json.dumps(ingress("web", "a.example.com")).encode(),
                     {"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        assert conn.getresponse().status == 201
    finally:
        conn.close()
    info = hook.requests()[-1]["userInfo"]
    assert info["username"] == "system:serviceaccount:demo:bot"
    assert "system:serviceaccounts:demo" in info["groups"] and info["uid"]
    assert create(cluster, ingress("admin", "b.example.com"))[0] == 201      # no token: the admin
    assert hook.requests()[-1]["userInfo"]["groups"][0] == "system:masters"
