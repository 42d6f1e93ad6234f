"""deployments/: the committed plain manifests equal a fresh render of the chart, and kubectl loads them (and
the chart's optional objects) into a devcluster."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart.chartlib import NAMESPACE, ROOT, Renderer, chart_cluster, kubectl, names

DEPLOYMENTS = ROOT / "deployments"


def render_deployments(renderer: Renderer, outdir: Path) -> Path:
    out = subprocess.run(["bash", str(ROOT / "scripts" / "render-deployments.sh"), str(outdir)],
                         env={**os.environ, "RENDER": str(renderer.binary)}, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return outdir / "ingressctl.yaml"


def test_committed_manifests_equal_a_fresh_render(renderer: Renderer, tmp_path: Path) -> None:
    fresh = render_deployments(renderer, tmp_path).read_text()
    committed = (DEPLOYMENTS / "ingressctl.yaml").read_text()
    assert committed == fresh, "deployments/ is stale: run scripts/render-deployments.sh"


def test_manifests_are_the_default_chart_plus_its_namespace(renderer: Renderer) -> None:
    docs = [d for d in yaml.safe_load_all((DEPLOYMENTS / "ingressctl.yaml").read_text()) if d]
    assert names(docs)[0] == ("Namespace", NAMESPACE)
    assert names(docs)[1:] == names(renderer.render())
    for d in docs[1:]:  # namespaced objects all carry the namespace: no -n needed
        if d["kind"] not in ("ClusterRole", "ClusterRoleBinding", "IngressClass"):
            assert d["metadata"]["namespace"] == NAMESPACE


PLURALS = {"Namespace": "namespaces", "ServiceAccount": "serviceaccounts", "ConfigMap": "configmaps",
           "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings", "Role": "roles",
           "RoleBinding": "rolebindings", "Service": "services", "Deployment": "deployments",
           "DaemonSet": "daemonsets", "IngressClass": "ingressclasses",
           "PodDisruptionBudget": "poddisruptionbudgets", "ServiceMonitor": "servicemonitors"}


def _subset(rendered: Any, stored: Any) -> bool:
    """`rendered` is contained in `stored` (which may carry fields the server defaulted)."""
    if isinstance(rendered, dict):
        return isinstance(stored, dict) and all(k in stored and _subset(v, stored[k])
                                                for k, v in rendered.items())
    if isinstance(rendered, list):
        return isinstance(stored, list) and len(stored) == len(rendered) and all(
            _subset(a, b) for a, b in zip(rendered, stored, strict=True))
    return bool(rendered == stored)


def _assert_loaded(cluster: Any, docs: list[dict[str, Any]]) -> None:
    for d in docs:
        md = d["metadata"]
        stored = [o for o in cluster.objects(PLURALS[d["kind"]], md.get("namespace"))
                  if o["metadata"]["name"] == md["name"]]
        assert len(stored) == 1, (d["kind"], md["name"])
        body = {k: v for k, v in d.items() if k not in ("metadata", "apiVersion", "kind")}  # stored bare
        assert _subset(body, stored[0]), (d["kind"], md["name"], stored[0])
        assert _subset(md.get("labels", {}), stored[0]["metadata"].get("labels", {}))


@pytest.mark.integration
def test_kubectl_applies_the_plain_manifests(tmp_path: Path) -> None:
    with chart_cluster() as cluster:
        kubeconfig = cluster.write_kubeconfig(str(tmp_path / "kubeconfig"))
        # devcluster serves no OpenAPI document, hence no client-side validation.
        out = kubectl(kubeconfig, "apply", "--validate=false", "-f", str(DEPLOYMENTS / "ingressctl.yaml"))
        assert out.returncode == 0, out.stderr
        docs = [d for d in yaml.safe_load_all((DEPLOYMENTS / "ingressctl.yaml").read_text()) if d]
        assert len(out.stdout.strip().splitlines()) == len(docs), out.stdout
        _assert_loaded(cluster, docs)
        dep = cluster.objects("deployments", NAMESPACE)[0]
        rendered = next(d for d in docs if d["kind"] == "Deployment")
        assert dep["spec"]["template"]["spec"]["containers"][0]["args"] == \
            rendered["spec"]["template"]["spec"]["containers"][0]["args"]
        again = kubectl(kubeconfig, "apply", "--validate=false", "-f", str(DEPLOYMENTS / "ingressctl.yaml"))
        assert again.returncode == 0, again.stderr
        assert all(line.endswith("unchanged") for line in again.stdout.strip().splitlines()), again.stdout


@pytest.mark.integration
def test_kubectl_creates_every_optional_object(renderer: Renderer, tmp_path: Path) -> None:
    values = {"controller": {"kind": "DaemonSet", "podDisruptionBudget": {"enabled": True},
                             "service": {"type": "NodePort"}},
              "prometheus": {"service": {"create": True}, "serviceMonitor": {"create": True}}}
    text = renderer.text(values)
    docs = [d for d in yaml.safe_load_all(text) if d]
    assert {"DaemonSet", "PodDisruptionBudget", "ServiceMonitor"} <= {d["kind"] for d in docs}
    with chart_cluster() as cluster:
        kubeconfig = cluster.write_kubeconfig(str(tmp_path / "kubeconfig"))
        assert kubectl(kubeconfig, "create", "namespace", NAMESPACE).returncode == 0
        out = kubectl(kubeconfig, "create", "--validate=false", "-f", "-", stdin=text)
        assert out.returncode == 0, out.stderr
        _assert_loaded(cluster, docs)
