"""The project's SharedInformer on a custom resource served by devcluster: started before the CRD exists (as a
controller started before its CRDs are installed), it syncs once the CRD is applied, delivers adds, updates
(spec and /status) and deletes, sees every object deleted when the CRD goes, and recovers when it returns."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from ingressctl.devcluster import DevCluster
from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.informer import DeletedFinalStateUnknown, SharedInformer
from ingressctl.k8s.reflector import Backoff
from ingressctl.k8s.resource import NAMESPACES, ResourceType
from ingressctl.k8s.store import meta_namespace_key
from tests.helpers import wait_until

pytestmark = pytest.mark.integration

CRD = Path(__file__).resolve().parents[2] / "charts/ingressctl/crds/k8s.nginx.org_virtualservers.yaml"
CRDS = ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
                    namespaced=False)
VS = ResourceType("k8s.nginx.org", "v1", "virtualservers", "VirtualServer")


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, str]] = []
        self.last: dict[str, dict[str, Any]] = {}

    def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
        self._record("add", obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._record("update", new)

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        key = meta_namespace_key(obj)
        with self.lock:
            self.events.append(("delete", key))
            self.last.pop(key, None)

    def _record(self, what: str, obj: dict[str, Any]) -> None:
        key = meta_namespace_key(obj)
        with self.lock:
            self.events.append((what, key))
            self.last[key] = obj

    def seen(self, what: str, key: str) -> bool:
        with self.lock:
            return (what, key) in self.events


def vs(name: str) -> dict[str, Any]:
    return {"apiVersion": "k8s.nginx.org/v1", "kind": "VirtualServer", "metadata": {"name": name},
            "spec": {"host": f"{name}.example.com"}}


def test_informer_follows_a_custom_resource_through_its_crd_lifecycle(tmp_path: Path) -> None:
    with DevCluster(bookmark_interval=0.2) as dc:
        admin = KubeClient.from_kubeconfig(dc.write_kubeconfig(str(tmp_path / "kubeconfig")))
        admin.create(NAMESPACES, None, {"metadata": {"name": "cafe"}})
        reader = KubeClient.from_kubeconfig(str(tmp_path / "kubeconfig"))
        inf = SharedInformer(reader, VS, min_watch_timeout=2, backoff=Backoff(initial=0.05, cap=0.5))
        rec = Recorder()
        inf.add_event_handler(rec)
        inf.start()
        try:
            assert not inf.wait_synced(timeout=1.0)          # no such resource yet: the list fails (404)
            crd = admin.create(CRDS, None, yaml.safe_load(CRD.read_text()))
            assert inf.wait_synced(timeout=30)
            admin.create(VS, "cafe", vs("cafe"))
            admin.create(VS, "cafe", vs("tea"))
            wait_until(lambda: rec.seen("add", "cafe/cafe") and rec.seen("add", "cafe/tea"), "adds delivered")
            admin.patch(VS, "cafe", "cafe", {"spec": {"gunzip": True}})
            admin.patch(VS, "cafe", "cafe", {"status": {"state": "Valid"}}, subresource="status")
            wait_until(lambda: rec.last.get("cafe/cafe", {}).get("status") == {"state": "Valid"},
                       "status update delivered")
            assert rec.last["cafe/cafe"]["spec"]["gunzip"] is True
            assert rec.last["cafe/cafe"]["metadata"]["generation"] == 2
            admin.delete(CRDS, None, crd["metadata"]["name"])
            wait_until(lambda: rec.seen("delete", "cafe/cafe") and rec.seen("delete", "cafe/tea"),
                       "every object deleted with its CRD")
            wait_until(lambda: inf.store.list_keys() == [], "the informer's store emptied")
            admin.create(CRDS, None, yaml.safe_load(CRD.read_text()))
            admin.create(VS, "cafe", vs("again"))
            wait_until(lambda: rec.seen("add", "cafe/again"), "the informer recovers when the CRD returns")
            assert inf.store.list_keys() == ["cafe/again"]
        finally:
            inf.stop()
            reader.close()
            admin.close()
