"""devcluster's built-in workload/RBAC/policy kinds, TokenRequest and RBAC mode, driven by kubectl and the
`kubernetes` client as a user drives them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from ingressctl.devcluster import DevCluster
from tests.integration.test_devcluster_cli import start

pytestmark = pytest.mark.integration

SA_USER = "system:serviceaccount:edge:ctl"


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True,
                          text=True, timeout=60)


def ok(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 0, out.stderr
    return out.stdout


WORKLOADS = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: ctl, namespace: edge}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: edge, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - {name: web, image: "web:1", ports: [{containerPort: 80}]}
        - {name: sidecar, image: "sidecar:1"}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: edge}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: "agent:1"}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: edge}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "db:1"}]}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, namespace: edge}
spec:
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec: {containers: [{name: rs, image: "rs:1"}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: edge}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: edge}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 4
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ingress-reader}
rules:
  - {apiGroups: [networking.k8s.io], resources: [ingresses], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ctl-ingress-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ingress-reader}
subjects: [{kind: ServiceAccount, name: ctl, namespace: edge}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: config-reader, namespace: edge}
rules:
  - {apiGroups: [""], resources: [configmaps], verbs: [get, list]}
  - {apiGroups: [""], resources: [secrets], resourceNames: [tls], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ctl-config-reader, namespace: edge}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: config-reader}
subjects: [{kind: ServiceAccount, name: ctl, namespace: edge}]
"""


@pytest.fixture
def rbac_cluster(tmp_path: Path) -> Any:
    with DevCluster(authorization_mode="RBAC") as dc:
        admin = dc.write_kubeconfig(str(tmp_path / "admin"))
        ok(kubectl(admin, "create", "namespace", "edge"))
        ok(kubectl(admin, "apply", "--validate=false", "-f", "-", stdin=WORKLOADS))
        yield dc, admin


def test_kubectl_get_apply_delete_the_builtin_kinds(rbac_cluster: Any) -> None:
    dc, admin = rbac_cluster
    for short in ("sa", "deploy", "ds", "sts", "rs", "pdb", "hpa", "role", "rolebinding"):
        assert ok(kubectl(admin, "get", short, "-n", "edge", "-o", "name")).strip(), short
    assert ok(kubectl(admin, "get", "clusterrole,clusterrolebinding", "-o", "name")).split() == [
        "clusterrole.rbac.authorization.k8s.io/ingress-reader",
        "clusterrolebinding.rbac.authorization.k8s.io/ctl-ingress-reader"]
    table = ok(kubectl(admin, "get", "deploy,pdb,hpa", "-n", "edge"))
    assert "READY" in table and "MIN AVAILABLE" in table and "Deployment/web" in table, table
    assert "ClusterRole/ingress-reader" in ok(kubectl(admin, "get", "clusterrolebinding"))
    dep = next(o for o in dc.objects("deployments", "edge"))
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"]["type"] == "RollingUpdate"
    assert dep["metadata"]["generation"] == 1
    # kubectl apply merges the pod template's containers by name (strategic merge patch).
    changed = WORKLOADS.replace('image: "web:1"', 'image: "web:2"')
    out = ok(kubectl(admin, "apply", "--validate=false", "-f", "-", stdin=changed))
    assert "deployment.apps/web configured" in out and "daemonset.apps/agent unchanged" in out, out
    dep = next(o for o in dc.objects("deployments", "edge"))
    assert [(c["name"], c["image"]) for c in dep["spec"]["template"]["spec"]["containers"]] == [
        ("web", "web:2"), ("sidecar", "sidecar:1")]
    assert dep["metadata"]["generation"] == 2
    ok(kubectl(admin, "delete", "-f", "-", stdin=WORKLOADS))
    assert dc.objects("deployments", "edge") == [] and dc.objects("clusterroles") == []


def test_discovery_lists_the_kinds_and_the_token_subresource(rbac_cluster: Any) -> None:
    _, admin = rbac_cluster
    resources = ok(kubectl(admin, "api-resources", "--no-headers"))
    for name in ("serviceaccounts", "deployments", "daemonsets", "statefulsets", "replicasets", "roles",
                 "clusterroles", "rolebindings", "clusterrolebindings", "poddisruptionbudgets",
                 "horizontalpodautoscalers"):
        assert f"{name} " in resources, name
    core = json.loads(ok(kubectl(admin, "get", "--raw", "/api/v1")))
    token = next(r for r in core["resources"] if r["name"] == "serviceaccounts/token")
    assert token == {"name": "serviceaccounts/token", "singularName": "", "namespaced": True,
                     "kind": "TokenRequest", "group": "authentication.k8s.io", "version": "v1",
                     "verbs": ["create"]}


def test_service_account_token_is_authorized_by_rbac(rbac_cluster: Any, tmp_path: Path) -> None:
    dc, admin = rbac_cluster
    token = ok(kubectl(admin, "create", "token", "ctl", "-n", "edge")).strip()
    sa = dc.write_kubeconfig(str(tmp_path / "sa"), token=token)
    ok(kubectl(sa, "get", "ingresses", "-A"))                          # ClusterRoleBinding: everywhere
    ok(kubectl(sa, "get", "configmaps", "-n", "edge"))                 # RoleBinding: its namespace
    out = kubectl(sa, "get", "configmaps", "-n", "default")
    assert out.returncode == 1
    assert out.stderr.strip() == (
        'Error from server (Forbidden): configmaps is forbidden: User "system:serviceaccount:edge:ctl" '
        'cannot list resource "configmaps" in API group "" in the namespace "default"')
    out = kubectl(sa, "get", "secret", "other", "-n", "edge")           # resourceNames: only "tls"
    assert 'secrets "other" is forbidden: User "system:serviceaccount:edge:ctl" cannot get resource ' \
        '"secrets" in API group "" in the namespace "edge"' in out.stderr
    assert "NotFound" in kubectl(sa, "get", "secret", "tls", "-n", "edge").stderr   # allowed, then 404
    out = kubectl(sa, "delete", "clusterrole", "ingress-reader")
    assert 'clusterroles.rbac.authorization.k8s.io "ingress-reader" is forbidden: User ' \
        '"system:serviceaccount:edge:ctl" cannot delete resource "clusterroles" in API group ' \
        '"rbac.authorization.k8s.io" at the cluster scope' in out.stderr
    # kubectl auth can-i asks the same policy (SelfSubjectAccessReview), for the token's own identity.
    assert kubectl(sa, "auth", "can-i", "list", "ingresses", "--all-namespaces").stdout.strip() == "yes"
    assert kubectl(sa, "auth", "can-i", "get", "secrets/tls", "-n", "edge").stdout.strip() == "yes"
    assert kubectl(sa, "auth", "can-i", "get", "secrets/other", "-n", "edge").stdout.strip() == "no"
    assert kubectl(sa, "auth", "can-i", "list", "configmaps", "-n", "default").stdout.strip() == "no"
    assert kubectl(admin, "auth", "can-i", "delete", "clusterroles").stdout.strip() == "yes"
    # The admin may ask as the ServiceAccount (impersonation); the ServiceAccount may not impersonate.
    as_sa = ("--as", SA_USER)
    assert kubectl(admin, *as_sa, "auth", "can-i", "list", "ingresses", "-A").stdout.strip() == "yes"
    assert kubectl(admin, *as_sa, "auth", "can-i", "delete", "clusterroles").stdout.strip() == "no"
    assert "forbidden" in kubectl(admin, *as_sa, "get", "configmaps", "-n", "default").stderr
    out = kubectl(sa, "--as", "system:admin", "get", "pods")
    assert ('users "system:admin" is forbidden: User "system:serviceaccount:edge:ctl" cannot impersonate '
            'resource "users" in API group "" at the cluster scope') in out.stderr
    # A permission granted later applies to the next request.
    ok(kubectl(admin, "create", "rolebinding", "ctl-default", "-n", "default", "--clusterrole",
               "ingress-reader", "--serviceaccount", "edge:ctl"))
    ok(kubectl(admin, "patch", "clusterrole", "ingress-reader", "--type", "json", "-p",
               '[{"op": "add", "path": "/rules/-", "value": {"apiGroups": [""], "resources": ["configmaps"],'
               ' "verbs": ["list"]}}]'))
    ok(kubectl(sa, "get", "configmaps", "-n", "default"))
    # Every decision is recorded for the identity; the admin's requests are not.
    allowed = dc.access_log.allowed(SA_USER)
    assert ("list", "networking.k8s.io", "ingresses", "", "") in allowed
    assert ("list", "", "configmaps", "", "edge") in allowed
    assert ("list", "", "configmaps", "", "default") in allowed
    denied = {(a.verb, a.resource, a.namespace, a.name) for a in dc.access_log.denied(SA_USER)}
    # (kubectl itself reads the namespace after a NotFound, to say whether the namespace exists.)
    assert denied == {("list", "configmaps", "default", ""), ("get", "secrets", "edge", "other"),
                      ("delete", "clusterroles", "", "ingress-reader"), ("get", "namespaces", "edge", "edge")}
    # A namespace is "in itself": a RoleBinding in it may grant reading it, as in kube-apiserver.
    out = kubectl(sa, "get", "namespace", "edge")
    assert ('namespaces "edge" is forbidden: User "system:serviceaccount:edge:ctl" cannot get resource '
            '"namespaces" in API group "" in the namespace "edge"') in out.stderr
    ok(kubectl(admin, "create", "role", "ns-reader", "-n", "edge", "--verb", "get", "--resource",
               "namespaces"))
    ok(kubectl(admin, "create", "rolebinding", "ns-reader", "-n", "edge", "--role", "ns-reader",
               "--serviceaccount", "edge:ctl"))
    ok(kubectl(sa, "get", "namespace", "edge"))
    assert "forbidden" in kubectl(sa, "get", "namespace", "default").stderr
    # The log keeps each distinct decision once, with how often it was made.
    listed = [a for a in dc.access_log.decisions(SA_USER) if (a.verb, a.resource, a.namespace) == (
        "list", "ingresses", "")]
    assert len(listed) == 1 and dc.access_log.count(SA_USER, listed[0]) == 1
    ok(kubectl(sa, "get", "ingresses", "-A"))
    assert dc.access_log.count(SA_USER, listed[0]) == 2
    assert dc.access_log.users() == [SA_USER]


def test_tokens_need_a_live_service_account(rbac_cluster: Any, tmp_path: Path) -> None:
    dc, admin = rbac_cluster
    url = f"{dc.url}/api/v1/namespaces/edge/serviceaccounts/ctl/token"
    verify = str(tmp_path / "ca.pem")
    Path(verify).write_bytes(dc.certificate.ca_pem)
    auth = {"Authorization": f"Bearer {dc.token}"}
    resp = requests.post(url, json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                    "spec": {"expirationSeconds": 60}}, headers=auth, verify=verify,
                         timeout=10)
    assert resp.status_code == 422, resp.text
    assert "may not specify a duration less than 10 minutes" in resp.json()["message"]
    resp = requests.post(url, json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                    "spec": {"audiences": ["api"], "expirationSeconds": 1200}}, headers=auth,
                         verify=verify, timeout=10)
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert body["kind"] == "TokenRequest" and body["spec"]["expirationSeconds"] == 1200
    token = body["status"]["token"]
    sa = dc.write_kubeconfig(str(tmp_path / "sa"), token=token)
    ok(kubectl(sa, "get", "ingresses", "-A"))
    assert "Unauthorized" in kubectl(sa[:-2] + "sa", "--token", token + "x", "get", "ingresses").stderr
    missing = requests.post(url.replace("/ctl/", "/nobody/"), json={"kind": "TokenRequest"}, headers=auth,
                            verify=verify, timeout=10)
    assert missing.status_code == 404
    # Deleting the ServiceAccount revokes its tokens, also once one of the same name exists again.
    ok(kubectl(admin, "delete", "serviceaccount", "ctl", "-n", "edge"))
    ok(kubectl(admin, "create", "serviceaccount", "ctl", "-n", "edge"))
    out = kubectl(sa, "get", "ingresses", "-A")
    assert out.returncode == 1 and "Unauthorized" in out.stderr
    # No credentials at all: 401 in RBAC mode, even over TLS.
    assert requests.get(f"{dc.url}/api/v1/namespaces", verify=verify, timeout=10).status_code == 401


def test_cli_authorization_mode_rbac(tmp_path: Path) -> None:
    server = start(tmp_path, "--authorization-mode", "RBAC")
    try:
        assert server.url.startswith("https://")
        kubeconfig = yaml.safe_load(server.kubeconfig.read_text())
        assert kubeconfig["users"][0]["user"]["token"]
        cache = tmp_path / "cache"
        assert server.kubectl("create", "serviceaccount", "bot", cache=cache).returncode == 0
        token = server.kubectl("create", "token", "bot", cache=cache).stdout.strip()
        out = server.kubectl("--token", token, "get", "pods", cache=cache)
        assert out.returncode == 1
        assert 'User "system:serviceaccount:default:bot" cannot list resource "pods"' in out.stderr
    finally:
        assert server.terminate() == 0
    bad = subprocess.run([sys.executable, "-m", "ingressctl.devcluster", "--kubeconfig-out",
                          str(tmp_path / "k"), "--authorization-mode", "ABAC"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "invalid choice: 'ABAC'" in bad.stderr
