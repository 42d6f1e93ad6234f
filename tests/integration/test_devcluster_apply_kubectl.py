"""`kubectl apply --server-side` against devcluster: create, re-apply with fields dropped, managedFields."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingressctl.devcluster import DevCluster
from tests.integration.test_devcluster_rbac import WORKLOADS, kubectl, ok

pytestmark = pytest.mark.integration

CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default, labels: {app: web, tier: edge}}
data: {a: "1", b: "2"}
"""
# The Deployment of the RBAC test's workloads (namespace edge): containers web (web:1) and sidecar.
DEPLOYMENT = next(doc for doc in WORKLOADS.split("---") if "kind: Deployment" in doc)
CM = CONFIGMAP + "---" + DEPLOYMENT


def test_kubectl_server_side_apply(tmp_path: Path) -> None:
    with DevCluster() as dc:
        kc = dc.write_kubeconfig(str(tmp_path / "kubeconfig"))
        ok(kubectl(kc, "create", "namespace", "edge"))
        out = ok(kubectl(kc, "apply", "--server-side", "--validate=false", "-f", "-", stdin=CM))
        assert "configmap/settings serverside-applied" in out
        assert "deployment.apps/web serverside-applied" in out
        cm = dc.objects("configmaps", "default")[0]
        assert cm["data"] == {"a": "1", "b": "2"}
        [entry] = cm["metadata"]["managedFields"]
        assert (entry["manager"], entry["operation"]) == ("kubectl", "Apply")
        assert entry["fieldsV1"]["f:data"] == {"f:a": {}, "f:b": {}}
        # Another writer's change stays; what this manager no longer applies goes.
        ok(kubectl(kc, "label", "configmap", "settings", "owner=ops"))
        changed = CM.replace(', tier: edge', '').replace('b: "2"', 'c: "3"').replace(
            '        - {name: sidecar, image: "sidecar:1"}\n', '').replace('"web:1"', '"web:2"')
        ok(kubectl(kc, "apply", "--server-side", "--validate=false", "-f", "-", stdin=changed))
        cm = dc.objects("configmaps", "default")[0]
        assert cm["data"] == {"a": "1", "c": "3"}
        assert cm["metadata"]["labels"] == {"app": "web", "owner": "ops"}
        dep = dc.objects("deployments", "edge")[0]
        assert [(c["name"], c["image"]) for c in dep["spec"]["template"]["spec"]["containers"]] == [
            ("web", "web:2")]
        assert dep["spec"]["replicas"] == 1 and dep["metadata"]["generation"] == 2    # defaults kept


def test_conflicts_between_managers(tmp_path: Path) -> None:
    with DevCluster() as dc:
        kc = dc.write_kubeconfig(str(tmp_path / "kubeconfig"))
        ok(kubectl(kc, "apply", "--server-side", "-f", "-", stdin=CONFIGMAP))
        other = CONFIGMAP.replace('a: "1", b: "2"', 'a: "9"')
        out = kubectl(kc, "apply", "--server-side", "--field-manager", "ops", "-f", "-", stdin=other)
        assert out.returncode == 1
        assert 'Apply failed with 1 conflict: conflict with "kubectl" using v1: .data.a' in out.stderr
        assert dc.objects("configmaps", "default")[0]["data"] == {"a": "1", "b": "2"}
        # The same value is no conflict: both own it then.
        same = CONFIGMAP.replace('a: "1", b: "2"', 'a: "1"')
        ok(kubectl(kc, "apply", "--server-side", "--field-manager", "ops", "-f", "-", stdin=same))
        # kubectl drops a: ops still applies it, so it stays; b (only kubectl's) goes.
        ok(kubectl(kc, "apply", "--server-side", "-f", "-", stdin=CONFIGMAP.replace(
            'a: "1", b: "2"', 'c: "3"')))
        assert dc.objects("configmaps", "default")[0]["data"] == {"a": "1", "c": "3"}
        # --force-conflicts takes the field over.
        ok(kubectl(kc, "apply", "--server-side", "--field-manager", "ops", "--force-conflicts", "-f", "-",
                   stdin=other.replace('a: "9"', 'c: "9"')))
        cm = dc.objects("configmaps", "default")[0]
        assert cm["data"] == {"c": "9"}          # ops dropped a (no one else applies it) and took c
        owners = {m["manager"]: m["fieldsV1"].get("f:data") for m in cm["metadata"]["managedFields"]}
        assert owners == {"kubectl": None, "ops": {"f:c": {}}}
