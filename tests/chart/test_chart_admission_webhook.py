"""The chart's admission webhook: off by default; when enabled, the controller's flags, port and certificate
volume, the Service, the ValidatingWebhookConfiguration (failurePolicy Ignore unless set), and either the
certgen hook Jobs with their narrow RBAC or cert-manager's Issuers and Certificate. End to end: the
rendered objects in a devcluster, the certgen command creating the Secret and setting the caBundle, and the
controller's webhook serving with that Secret refusing a bad Ingress applied with kubectl."""

from __future__ import annotations

import base64
import os
import tempfile
from typing import Any

import pytest

from ingressctl.controller.configuration import Configuration
from ingressctl.webhook.certgen import main as certgen
from ingressctl.webhook.server import AdmissionWebhookServer
from tests.chart.chartlib import NAMESPACE, RELEASE, Helm, container, find, flags, kinds, names
from tests.webhooks import Kubectl, ingress

ON = {"controller": {"admissionWebhook": {"enable": True}}}
VWC = "ValidatingWebhookConfiguration"
NAME = f"{RELEASE}-admission"
SERVICE = f"{RELEASE}-controller-admission"
VS_RULE = {"apiGroups": ["k8s.nginx.org"], "apiVersions": ["v1"],
           "resources": ["virtualservers", "virtualserverroutes", "policies"],
           "operations": ["CREATE", "UPDATE"],
           "scope": "Namespaced"}


def _with(**webhook: Any) -> dict[str, Any]:
    return {"controller": {"admissionWebhook": {"enable": True, **webhook}}}


def test_off_by_default(helm: Helm) -> None:
    docs = helm.render()
    assert VWC not in kinds(docs) and "Job" not in kinds(docs)
    assert not any(a.startswith("--enable-admission-webhook") for a in container(docs)["args"])
    assert "volumes" not in find(docs, "Deployment")["spec"]["template"]["spec"]


def test_enabled_renders_flags_port_volume_service_and_configuration(helm: Helm) -> None:
    docs = helm.render(ON)
    c = container(docs)
    f = flags(c["args"])
    assert f["--enable-admission-webhook"] == "true" and f["--admission-webhook-port"] == "8443"
    assert f["--admission-webhook-tls-cert-file"] == "/etc/ingressctl/admission-webhook/tls.crt"
    assert f["--admission-webhook-tls-key-file"] == "/etc/ingressctl/admission-webhook/tls.key"
    assert {"name": "webhook", "containerPort": 8443, "protocol": "TCP"} in c["ports"]
    assert c["volumeMounts"] == [{"name": "admission-webhook-cert", "readOnly": True,
                                  "mountPath": "/etc/ingressctl/admission-webhook"}]
    pod = find(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "admission-webhook-cert", "secret": {"secretName": NAME}}]

    svc = find(docs, "Service", SERVICE)
    assert svc["spec"]["ports"] == [{"name": "webhook", "port": 443, "targetPort": "webhook",
                                     "protocol": "TCP"}]
    assert svc["spec"]["selector"] == find(docs, "Deployment")["spec"]["selector"]["matchLabels"]

    (hook,) = find(docs, VWC, NAME)["webhooks"]
    assert hook["failurePolicy"] == "Ignore" and hook["sideEffects"] == "None"
    assert hook["admissionReviewVersions"] == ["v1"] and hook["timeoutSeconds"] == 10
    assert hook["clientConfig"] == {"service": {"namespace": NAMESPACE, "name": SERVICE, "path": "/validate",
                                                "port": 443}}
    assert hook["rules"] == [{"apiGroups": ["networking.k8s.io"], "apiVersions": ["v1"],
                              "resources": ["ingresses"], "operations": ["CREATE", "UPDATE"],
                              "scope": "Namespaced"}, VS_RULE]


def test_custom_resources_disabled_sends_ingresses_only(helm: Helm) -> None:
    docs = helm.render({"controller": {"enableCustomResources": False,
                                           "admissionWebhook": {"enable": True}}})
    (hook,) = find(docs, VWC, NAME)["webhooks"]
    assert [r["resources"] for r in hook["rules"]] == [["ingresses"]]


def test_failure_policy_timeout_and_selectors_are_values(helm: Helm) -> None:
    docs = helm.render(_with(failurePolicy="Fail", timeoutSeconds=3,
                                 namespaceSelector={"matchLabels": {"ingress": "on"}},
                                 objectSelector={"matchExpressions": [{"key": "skip",
                                                                       "operator": "DoesNotExist"}]}))
    (hook,) = find(docs, VWC, NAME)["webhooks"]
    assert hook["failurePolicy"] == "Fail" and hook["timeoutSeconds"] == 3
    assert hook["namespaceSelector"] == {"matchLabels": {"ingress": "on"}}
    assert hook["objectSelector"]["matchExpressions"][0]["key"] == "skip"
    assert "failurePolicy" in helm.error(_with(failurePolicy="Sometimes"))
    assert "timeoutSeconds" in helm.error(_with(timeoutSeconds=31))
    assert "port" in helm.error(_with(port=8081))


def test_certgen_jobs_and_their_narrow_rbac(helm: Helm) -> None:
    docs = helm.render(ON)
    job = f"{NAME}-certgen"
    create, patch = find(docs, "Job", f"{job}-create"), find(docs, "Job", f"{job}-patch")
    assert create["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert patch["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
    cc = create["spec"]["template"]["spec"]["containers"][0]
    assert cc["command"] == ["ingressctl-webhook-certgen"]
    assert cc["args"] == ["create", f"--namespace={NAMESPACE}", f"--secret-name={NAME}",
                          f"--host={SERVICE}.{NAMESPACE}.svc"]
    assert cc["image"] == container(docs)["image"]
    pc = patch["spec"]["template"]["spec"]["containers"][0]
    assert pc["args"] == ["patch", f"--namespace={NAMESPACE}", f"--secret-name={NAME}",
                          f"--webhook-name={NAME}"]
    for j in (create, patch):
        assert j["spec"]["template"]["spec"]["serviceAccountName"] == job
    role = find(docs, "Role", job)
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": [NAME],
                              "verbs": ["get"]},
                             {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}]
    cluster_role = find(docs, "ClusterRole", job)
    assert cluster_role["rules"] == [{"apiGroups": ["admissionregistration.k8s.io"],
                                      "resources": ["validatingwebhookconfigurations"],
                                      "resourceNames": [NAME], "verbs": ["get", "update"]}]
    for kind in ("ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"):
        hooks = find(docs, kind, job)["metadata"]["annotations"]["helm.sh/hook"]
        assert hooks == "pre-install,pre-upgrade,post-install,post-upgrade"
    assert "Certificate" not in kinds(docs)
    custom = helm.render(_with(certgen={"image": "registry.example/certgen:1"}))
    assert find(custom, "Job", f"{job}-create")["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "registry.example/certgen:1"


def test_cert_manager_instead_of_jobs(helm: Helm) -> None:
    docs = helm.render(_with(certManager={"enable": True}))
    assert "Job" not in kinds(docs)
    assert find(docs, VWC, NAME)["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": f"{NAMESPACE}/{NAME}"}
    cert = find(docs, "Certificate", NAME)
    assert cert["spec"]["secretName"] == NAME
    assert f"{SERVICE}.{NAMESPACE}.svc" in cert["spec"]["dnsNames"]
    assert cert["spec"]["issuerRef"] == {"kind": "Issuer", "name": f"{NAME}-ca"}
    assert find(docs, "Certificate", f"{NAME}-ca")["spec"]["isCA"] is True
    assert sorted(n for k, n in names(docs) if k == "Issuer") == [f"{NAME}-ca", f"{NAME}-self-signed"]


def test_rendered_webhook_with_certgen_refuses_a_bad_ingress(
        helm: Helm, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The chart's Service and ValidatingWebhookConfiguration in a devcluster, the certificate made and the
    caBundle set by the certgen command (as the hook Jobs run it), the controller's webhook serving the
    Secret's certificate: kubectl apply of a bad Ingress is refused with the reason, a good one passes."""
    from ingressctl.devcluster import DevCluster

    tmp = str(tmp_path_factory.mktemp("chart-webhook"))
    docs = helm.render(_with(failurePolicy="Fail"))
    with DevCluster() as cluster:
        kubeconfig = cluster.write_kubeconfig(os.path.join(tmp, "kubeconfig"))
        cluster.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                      for n in (NAMESPACE, "demo")])
        cluster.load([find(docs, "Service", SERVICE), find(docs, VWC, NAME)])
        create = find(docs, "Job", f"{NAME}-certgen-create")["spec"]["template"]["spec"]["containers"][0]
        patch = find(docs, "Job", f"{NAME}-certgen-patch")["spec"]["template"]["spec"]["containers"][0]
        assert certgen(["--kubeconfig", kubeconfig, *create["args"]]) == 0
        assert certgen(["--kubeconfig", kubeconfig, *create["args"]]) == 0   # idempotent: the Secret is kept
        assert certgen(["--kubeconfig", kubeconfig, *patch["args"]]) == 0
        secret = cluster.objects("secrets", NAMESPACE)[0]
        (hook,) = cluster.objects("validatingwebhookconfigurations")[0]["webhooks"]
        assert hook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]

        cert_dir = tempfile.mkdtemp(dir=tmp)
        for key in ("tls.crt", "tls.key"):
            with open(os.path.join(cert_dir, key), "wb") as f:
                f.write(base64.b64decode(secret["data"][key]))
        server = AdmissionWebhookServer(config=Configuration(ingress_class="nginx"),
                                        cert_file=os.path.join(cert_dir, "tls.crt"),
                                        key_file=os.path.join(cert_dir, "tls.key"), host="127.0.0.1", port=0)
        server.start()
        try:
            cluster.admission.set_service(f"{NAMESPACE}/{SERVICE}:443", f"127.0.0.1:{server.port}")
            kubectl = Kubectl(kubeconfig, tmp)
            bad = kubectl.apply(ingress("bad", "bad.example.com",
                                        annotations={"nginx.org/location-snippets": "deny all;"}))
            assert bad.returncode != 0
            assert ('admission webhook "ingresses.validate.nginx.org" denied the request: demo/bad was '
                    "rejected: annotations.nginx.org/location-snippets: Forbidden") in bad.stderr
            assert cluster.objects("ingresses", "demo") == []
            good = kubectl.apply(ingress("good", "good.example.com"))
            assert good.returncode == 0, good.stderr
        finally:
            server.stop()
