"""`python -m ingressctl migrate-report --kubeconfig`: the report of a cluster (devcluster through its
kubeconfig and the project's client), its Ingresses listed in pages as the informers list them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.integration.harness import NS, Env

ROOT = Path(__file__).resolve().parents[2]
N = "nginx.ingress.kubernetes.io/"


def ingress(name: str, namespace: str = NS, *, cls: str | None = "nginx",
            annotations: dict[str, str] | None = None) -> dict[str, Any]:
    backend = {"service": {"name": "web", "port": {"number": 80}}}
    spec: dict[str, Any] = {"rules": [{"host": f"{name}.{namespace}.example.com", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": backend}]}}]}
    if cls is not None:
        spec["ingressClassName"] = cls
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": spec}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ingressctl", "migrate-report", *args], capture_output=True,
                          text=True, cwd=ROOT, check=False)


def test_report_of_a_cluster(env: Env) -> None:
    env.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "public"},
                "spec": {"controller": "k8s.io/ingress-nginx"}})
    env.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    env.cluster.load([ingress(f"app-{i}") for i in range(1100)])  # more than one page of 500
    env.create(ingress("shop", cls="public", annotations={N + "proxy-body-size": "8m", N + "x-unknown": "1"}))
    env.create(ingress("waf", "other", cls=None, annotations={"kubernetes.io/ingress.class": "nginx",
                                                             N + "enable-modsecurity": "true"}))
    env.create(ingress("classless", "other", cls=None))
    env.cluster.stats.reset()

    done = run("--kubeconfig", env.kubeconfig, "--output", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    # Paging as the informers page: 500, then up to 1,000 (the 603 others in one page).
    assert env.cluster.stats.count("list", "ingresses") == 2
    assert env.cluster.stats.count("list", "ingressclasses") == 1
    assert env.cluster.stats.count() == 3  # read only
    assert doc["source"] == {"from": "cluster", "server": env.cluster.url, "namespace": None}
    assert doc["summary"]["ingresses"] == {"total": 1103, "served": 1100, "served-with-warnings": 1,
                                           "rejected": 1, "not-served": 1}
    ings = {f"{i['namespace']}/{i['name']}": i for i in doc["ingresses"]}
    assert ings["demo/app-1099"]["verdict"] == "served" and ings["demo/app-1099"]["where"] == ""
    shop = ings["demo/shop"]
    # Served: the unknown key is named (the Warning event of a served Ingress says it too).
    assert shop["verdict"] == "served-with-warnings"
    assert shop["why"] == ["class public: IngressClass public has controller k8s.io/ingress-nginx"]
    assert [(a["key"], a["status"]) for a in shop["annotations"]] == [
        (N + "proxy-body-size", "translated"), (N + "x-unknown", "ignored")]
    assert shop["warnings"] == [f"ingress-nginx annotations not honoured in full: {N}x-unknown ignored "
                                "(not an ingress-nginx annotation ingressctl knows)"]
    waf = ings["other/waf"]
    assert waf["verdict"] == "rejected"
    assert waf["why"] == ["class nginx (the annotation kubernetes.io/ingress.class) is the --ingress-class"]
    assert waf["errors"][0].startswith(f"annotations.{N}enable-modsecurity: Forbidden: ")
    assert ings["other/classless"]["verdict"] == "not-served"
    assert ings["other/classless"]["why"][0].startswith("no class: ")
    assert doc["summary"]["annotations"][N + "proxy-body-size"]["translated"] == 1
    assert [(c["name"], c["served"]) for c in doc["ingressClasses"]] == [("nginx", True), ("public", True)]
    assert doc["notes"] == []

    text = run("--kubeconfig", env.kubeconfig, "--namespace", "other")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"ingress-nginx migration report: 2 Ingresses from the cluster at "
                                  f"{env.cluster.url}, namespace other, ")
    assert "\nother/waf\n  verdict: REJECTED\n" in text.stdout
    assert f"    refused  {N}enable-modsecurity=\"true\"\n" in text.stdout
    assert "Summary: 0 served, 0 served with warnings, 1 rejected, 1 not served (2 Ingresses)" in text.stdout


def test_primary_class_missing_and_unreachable_cluster(env: Env) -> None:
    done = run("--kubeconfig", env.kubeconfig, "--ingress-class", "ingressctl", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["notes"] == [
        "IngressClass ingressctl does not exist: ingressctl --ingress-class ingressctl would not start until "
        "it does (spec.controller nginx.org/ingress-controller or k8s.io/ingress-nginx)"]
    env.cluster.stop()
    gone = run("--kubeconfig", env.kubeconfig)
    assert gone.returncode == 2 and "cannot list" in gone.stderr and not gone.stdout


NAMESPACED_READER = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: auditor, namespace: edge}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: ingress-reader, namespace: edge}
rules:
  - {apiGroups: [networking.k8s.io], resources: [ingresses], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: auditor-ingress-reader, namespace: edge}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: ingress-reader}
subjects: [{kind: ServiceAccount, name: auditor, namespace: edge}]
"""


def test_a_user_who_may_read_one_namespace(tmp_path: Path) -> None:
    """RBAC as a namespace's team has it: the Ingresses of its namespace, no IngressClasses (a note, the
    report goes on), and a list of every namespace refused (exit 2, the API server's message)."""
    from ingressctl.devcluster import DevCluster

    def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], input=stdin,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    with DevCluster(authorization_mode="RBAC") as dc:
        admin = dc.write_kubeconfig(str(tmp_path / "admin"))
        kubectl(admin, "create", "namespace", "edge")
        kubectl(admin, "apply", "-f", "-", stdin=NAMESPACED_READER)
        kubectl(admin, "apply", "-f", "-", stdin=json.dumps(
            ingress("web", "edge", annotations={N + "proxy-read-timeout": "30"})))
        token = kubectl(admin, "create", "token", "auditor", "-n", "edge").strip()
        auditor = dc.write_kubeconfig(str(tmp_path / "auditor"), token=token)

        done = run("--kubeconfig", auditor, "--namespace", "edge", "-o", "json")
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert [(i["name"], i["verdict"]) for i in doc["ingresses"]] == [("web", "served")]
        assert len(doc["notes"]) == 1 and doc["notes"][0].startswith(
            "cannot list IngressClasses (403 Forbidden: ingressclasses.networking.k8s.io is forbidden: User "
            '"system:serviceaccount:edge:auditor" cannot list resource "ingressclasses"')
        everywhere = run("--kubeconfig", auditor)
        assert everywhere.returncode == 2 and not everywhere.stdout
        assert everywhere.stderr.count("\n") == 1  # one line: the client's log lines are for the controller
        assert everywhere.stderr.startswith(
            "ingressctl migrate-report: error: cannot list Ingresses in all namespaces: 403 Forbidden: "
            'ingresses.networking.k8s.io is forbidden: User "system:serviceaccount:edge:auditor" cannot list '
            'resource "ingresses" in API group "networking.k8s.io" at the cluster scope'), everywhere.stderr
