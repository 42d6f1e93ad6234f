"""deployments/: the committed plain manifests equal a fresh render of the chart by Helm 3 and by Helm 4, and
kubectl loads them (and the chart's optional objects) into a devcluster."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.chart.chartlib import NAMESPACE, ROOT, Helm, assert_loaded, chart_cluster, kubectl, names

DEPLOYMENTS = ROOT / "deployments"


def render_deployments(helm: Helm, outdir: Path) -> Path:
    out = subprocess.run(["bash", str(ROOT / "scripts" / "render-deployments.sh"), str(outdir)],
                         env={**helm.env, "HELM": str(helm.binary)}, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return outdir / "ingressctl.yaml"


def test_committed_manifests_equal_a_fresh_render(helm: Helm, tmp_path: Path) -> None:
    fresh = render_deployments(helm, tmp_path).read_text()
    committed = (DEPLOYMENTS / "ingressctl.yaml").read_text()
    assert committed == fresh, "deployments/ is stale: run scripts/render-deployments.sh"


def test_manifests_are_the_default_chart_plus_its_namespace(helm: Helm) -> None:
    docs = [d for d in yaml.safe_load_all((DEPLOYMENTS / "ingressctl.yaml").read_text()) if d]
    assert names(docs)[0] == ("Namespace", NAMESPACE)
    assert names(docs)[1:] == names(helm.render())
    for d in docs[1:]:  # namespaced objects all carry the namespace: no -n needed
        if d["kind"] not in ("ClusterRole", "ClusterRoleBinding", "IngressClass"):
            assert d["metadata"]["namespace"] == NAMESPACE


@pytest.mark.integration
def test_kubectl_applies_the_plain_manifests(tmp_path: Path) -> None:
    with chart_cluster() as cluster:
        kubeconfig = cluster.write_kubeconfig(str(tmp_path / "kubeconfig"))
        # devcluster serves no OpenAPI document, hence no client-side validation.
        out = kubectl(kubeconfig, "apply", "--validate=false", "-f", str(DEPLOYMENTS / "ingressctl.yaml"))
        assert out.returncode == 0, out.stderr
        docs = [d for d in yaml.safe_load_all((DEPLOYMENTS / "ingressctl.yaml").read_text()) if d]
        assert len(out.stdout.strip().splitlines()) == len(docs), out.stdout
        assert_loaded(cluster, docs)
        dep = cluster.objects("deployments", NAMESPACE)[0]
        rendered = next(d for d in docs if d["kind"] == "Deployment")
        assert dep["spec"]["template"]["spec"]["containers"][0]["args"] == \
            rendered["spec"]["template"]["spec"]["containers"][0]["args"]
        again = kubectl(kubeconfig, "apply", "--validate=false", "-f", str(DEPLOYMENTS / "ingressctl.yaml"))
        assert again.returncode == 0, again.stderr
        assert all(line.endswith("unchanged") for line in again.stdout.strip().splitlines()), again.stdout


@pytest.mark.integration
def test_kubectl_creates_every_optional_object(helm: Helm, tmp_path: Path) -> None:
    values = {"controller": {"kind": "DaemonSet", "podDisruptionBudget": {"enabled": True},
                             "service": {"type": "NodePort"}},
              "prometheus": {"service": {"create": True}, "serviceMonitor": {"create": True}}}
    text = helm.text(values)
    docs = [d for d in yaml.safe_load_all(text) if d]
    assert {"DaemonSet", "PodDisruptionBudget", "ServiceMonitor"} <= {d["kind"] for d in docs}
    with chart_cluster() as cluster:
        kubeconfig = cluster.write_kubeconfig(str(tmp_path / "kubeconfig"))
        assert kubectl(kubeconfig, "create", "namespace", NAMESPACE).returncode == 0
        out = kubectl(kubeconfig, "create", "--validate=false", "-f", "-", stdin=text)
        assert out.returncode == 0, out.stderr
        assert_loaded(cluster, docs)
