"""devcluster's manifest loading: CustomResourceDefinitions are loaded before the objects of their kinds, in
whatever order the files are named, and an object of an undefined kind is an error that says what to load."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ingressctl.devcluster import DevCluster
from ingressctl.devcluster.manifests import read_manifests

CRDS = Path(__file__).resolve().parents[2] / "charts" / "ingressctl" / "crds"

VS = {"apiVersion": "k8s.nginx.org/v1", "kind": "VirtualServer",
      "metadata": {"name": "cafe", "namespace": "demo"},
      "spec": {"host": "cafe.example.com"}}


def test_crds_are_read_first_whatever_the_order_of_the_paths(tmp_path: Path) -> None:
    (tmp_path / "vs.yaml").write_text(yaml.safe_dump(VS))
    objects = read_manifests([str(tmp_path / "vs.yaml"), str(CRDS)])
    kinds = [o["kind"] for o in objects]
    assert kinds[-1] == "VirtualServer"
    assert set(kinds[:-1]) == {"CustomResourceDefinition"}
    with DevCluster(manifests=[str(tmp_path / "vs.yaml"), str(CRDS)]) as cluster:
        assert [o["metadata"]["name"] for o in cluster.objects("virtualservers", "demo")] == ["cafe"]


def test_an_object_of_an_undefined_kind_names_the_missing_definition(tmp_path: Path) -> None:
    (tmp_path / "vs.yaml").write_text(yaml.safe_dump(VS))
    missing = r"unknown kind k8s\.nginx\.org/v1/VirtualServer .*CustomResourceDefinition"
    with pytest.raises(ValueError, match=missing), DevCluster(manifests=[str(tmp_path / "vs.yaml")]):
        pass
