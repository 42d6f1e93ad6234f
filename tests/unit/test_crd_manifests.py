"""The chart's k8s.nginx.org CustomResourceDefinitions: NIC's names, scopes, subresources and printer columns,
valid structural schemas, and deployments/crds.yaml equal to a fresh render of them."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ingressctl.devcluster.crd import validate_crd

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "charts" / "ingressctl" / "crds"

STATE, AGE = ("State", ".status.state", 0), ("Age", ".metadata.creationTimestamp", 0)
HOST_COLUMNS = [STATE, ("Host", ".spec.host", 0), ("IP", ".status.externalEndpoints[*].ip", 0),
                ("ExternalHostname", ".status.externalEndpoints[*].hostname", 1),
                ("Ports", ".status.externalEndpoints[*].ports", 0), AGE]
# kind: (plural, short name, has /status, printer columns (name, jsonPath, priority))
EXPECTED: dict[str, tuple[str, str, bool, list[tuple[str, str, int]]]] = {
    "VirtualServer": ("virtualservers", "vs", True, HOST_COLUMNS),
    "VirtualServerRoute": ("virtualserverroutes", "vsr", True, HOST_COLUMNS),
    "TransportServer": ("transportservers", "ts", True, [STATE, ("Reason", ".status.reason", 0), AGE]),
    "Policy": ("policies", "pol", True, [STATE, AGE]),
    "GlobalConfiguration": ("globalconfigurations", "gc", False, []),
}


def crds() -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted(CRDS.glob("*.yaml"))]


def test_the_five_kinds_with_nic_names_scope_status_and_columns() -> None:
    by_kind = {c["spec"]["names"]["kind"]: c for c in crds()}
    assert set(by_kind) == set(EXPECTED)
    for kind, (plural, short, status, columns) in EXPECTED.items():
        crd = by_kind[kind]
        spec = crd["spec"]
        assert crd["metadata"]["name"] == f"{plural}.k8s.nginx.org"
        assert spec["group"] == "k8s.nginx.org" and spec["scope"] == "Namespaced"
        assert spec["names"]["plural"] == plural and spec["names"]["shortNames"] == [short]
        [version] = spec["versions"]
        assert version["name"] == "v1" and version["served"] and version["storage"]
        assert ("status" in version.get("subresources", {})) is status
        columns_of = version.get("additionalPrinterColumns", [])
        got = [(c["name"], c["jsonPath"], c.get("priority", 0)) for c in columns_of]
        assert got == columns


@pytest.mark.parametrize("path", sorted(CRDS.glob("*.yaml")), ids=lambda p: p.name)
def test_each_crd_is_valid_for_the_api_server(path: Path) -> None:
    assert validate_crd(yaml.safe_load(path.read_text()), None, "") == []


def test_nic_5_5_fields_are_in_the_schemas() -> None:
    by_kind = {c["spec"]["names"]["kind"]: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
               for c in crds()}
    vs = by_kind["VirtualServer"]["properties"]["spec"]["properties"]
    upstream = vs["upstreams"]["items"]["properties"]
    route = vs["routes"]["items"]["properties"]
    assert {"add-header-inherit", "listener", "externalDNS", "gunzip", "dos"} <= set(vs)
    assert {"busy-buffers-size", "client-body-buffer-size", "sessionCookie", "healthCheck", "backup",
            "backupPort", "use-cluster-ip", "subselector"} <= set(upstream)
    assert {"routeSelector", "add-header-inherit", "matches", "splits", "errorPages", "action",
            "route"} <= set(route)
    vsr = by_kind["VirtualServerRoute"]["properties"]
    assert "route" not in vsr["spec"]["properties"]["subroutes"]["items"]["properties"]
    assert "referencedBy" in vsr["status"]["properties"]
    policy = by_kind["Policy"]["properties"]["spec"]["properties"]
    assert {"accessControl", "rateLimit", "basicAuth", "apiKey", "ingressMTLS", "egressMTLS", "jwt", "oidc",
            "waf", "cache", "cors", "externalAuth"} <= set(policy)
    assert "variables" in policy["rateLimit"]["properties"]["condition"]["properties"]
    assert "status" not in by_kind["GlobalConfiguration"]["properties"]


def test_committed_plain_manifest_equals_a_fresh_render(tmp_path: Path) -> None:
    out = subprocess.run(["bash", str(ROOT / "scripts" / "render-crds.sh"), str(tmp_path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    fresh = (tmp_path / "crds.yaml").read_text()
    assert (ROOT / "deployments" / "crds.yaml").read_text() == fresh, \
        "deployments/crds.yaml is stale: run scripts/render-crds.sh"
    docs = [d for d in yaml.safe_load_all(fresh) if d]
    assert docs == crds()
