"""`helm install`, `upgrade`, `rollback` and `uninstall` of the chart into a devcluster, with Helm 3 and
Helm 4, as docs/installation.md shows them: every object is created as rendered, a changed value reaches its
object, a rollback restores the first revision and an uninstall removes everything the release created."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ingressctl.devcluster import DevCluster
from tests.chart.chartlib import (
    CHART,
    NAMESPACE,
    RELEASE,
    Helm,
    assert_loaded,
    chart_cluster,
    kubectl,
    released,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[DevCluster, str]]:
    with chart_cluster(authorization_mode="RBAC") as dc:
        yield dc, dc.write_kubeconfig(str(tmp_path / "kubeconfig"))


def test_install_upgrade_rollback_uninstall(helm: Helm, cluster: tuple[DevCluster, str]) -> None:
    dc, kubeconfig = cluster
    base = {"controller": {"config": {"entries": {"worker-processes": "2"}}}}
    edge = {"controller": {"defaultTLS": {"secret": f"{NAMESPACE}/default-cert"},
                           "podDisruptionBudget": {"enabled": True}, "replicaCount": 2}}
    values = helm.values_files(base, edge)
    out = helm.run("install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace", *values,
                   kubeconfig=kubeconfig, check=True)
    # NOTES.txt
    assert "STATUS: deployed" in out.stdout and "REVISION: 1" in out.stdout
    assert "kubectl --namespace ingressctl get service ingressctl-controller" in out.stdout
    assert "ingressClassName: nginx" in out.stdout
    docs = helm.render(base, edge)
    assert_loaded(dc, docs)
    objects = released(dc)
    assert {(k, n) for k, _, n in objects if k != "Secret"} == {(d["kind"], d["metadata"]["name"])
                                                               for d in docs}
    assert [n for k, _, n in objects if k == "Secret"] == [f"sh.helm.release.v1.{RELEASE}.v1"]
    table = kubectl(kubeconfig, "get", "deploy,pdb,sa,role,rolebinding", "-n", NAMESPACE)
    assert table.returncode == 0 and "ingressctl-controller" in table.stdout, table.stderr
    # Helm installed the chart's crds/ first: the custom resources are served.
    crds = sorted(o["metadata"]["name"] for o in dc.objects("customresourcedefinitions"))
    assert crds == sorted(f"{p.stem.split('_', 1)[1]}.k8s.nginx.org" for p in (CHART / "crds").glob("*.yaml"))
    assert kubectl(kubeconfig, "get", "vs", "-A").returncode == 0

    # A changed value takes effect; a Deployment that becomes a DaemonSet is replaced.
    changed = {"controller": {"kind": "DaemonSet", "config": {"entries": {"worker-processes": "4"}}}}
    helm.run("upgrade", RELEASE, str(CHART), "--namespace", NAMESPACE, *values,
             *helm.values_files(changed), kubeconfig=kubeconfig, check=True)
    assert_loaded(dc, helm.render(base, edge, changed))
    cm = next(o for o in dc.objects("configmaps", NAMESPACE) if o["metadata"]["name"] == "ingressctl")
    assert cm["data"] == {"worker-processes": "4"}
    assert dc.objects("deployments", NAMESPACE) == [] and len(dc.objects("daemonsets", NAMESPACE)) == 1
    history = helm.run("history", RELEASE, "--namespace", NAMESPACE, kubeconfig=kubeconfig, check=True)
    assert [line.split()[0] for line in history.stdout.splitlines()[1:]] == ["1", "2"]

    helm.run("rollback", RELEASE, "1", "--namespace", NAMESPACE, kubeconfig=kubeconfig, check=True)
    assert_loaded(dc, docs)
    assert dc.objects("daemonsets", NAMESPACE) == []
    listed = helm.run("list", "--namespace", NAMESPACE, "-o", "yaml", kubeconfig=kubeconfig, check=True)
    assert [(r["name"], r["revision"], r["status"]) for r in yaml.safe_load(listed.stdout)] == [
        (RELEASE, "3", "deployed")]

    out = helm.run("uninstall", RELEASE, "--namespace", NAMESPACE, kubeconfig=kubeconfig, check=True)
    assert f'release "{RELEASE}" uninstalled' in out.stdout
    assert released(dc) == {}
    # As Helm does for every chart, the CustomResourceDefinitions stay (they may hold other users' objects).
    assert len(dc.objects("customresourcedefinitions")) == len(crds)
    # The namespace --create-namespace made is not the release's and stays, as with a real cluster.
    assert [o["metadata"]["name"] for o in dc.objects("namespaces") if o["metadata"]["name"] == NAMESPACE]


def test_notes_without_an_ingress_class(helm: Helm, cluster: tuple[DevCluster, str]) -> None:
    dc, kubeconfig = cluster
    values = helm.values_files({"controller": {"ingressClass": {"create": False}}})
    out = helm.run("install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace", *values,
                   kubeconfig=kubeconfig, check=True)
    assert "CrashLoopBackOff" in out.stdout
    assert dc.objects("ingressclasses") == []
