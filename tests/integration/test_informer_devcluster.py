"""SharedInformer against devcluster over HTTP, with fault injection while a writer changes ConfigMaps.

At the end the informer's store equals the server's state, every delete reached the handlers (as an event or a
tombstone), and no handler saw an object's resourceVersion go backwards.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import structlog

from ingressctl.devcluster import DevCluster
from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.informer import DeletedFinalStateUnknown, SharedInformer, wait_for_cache_sync
from ingressctl.k8s.reflector import Backoff
from ingressctl.k8s.resource import CONFIGMAPS, NAMESPACES
from ingressctl.k8s.store import meta_namespace_key

pytestmark = pytest.mark.integration

NAMESPACES_USED = ("ns-a", "ns-b")


class Recorder:
    """Builds the handler's view of the world; records deletes, tombstones and resourceVersion regressions."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.view: dict[str, int] = {}
        self.last_rv: dict[str, int] = {}
        self.regressions: list[str] = []
        self.deleted: list[str] = []
        self.tombstones: dict[str, DeletedFinalStateUnknown] = {}
        self.adds = self.updates = 0

    def _seen(self, obj: dict[str, Any]) -> tuple[str, int]:
        key, rv = meta_namespace_key(obj), int(obj["metadata"]["resourceVersion"])
        if rv < self.last_rv.get(key, 0):
            self.regressions.append(f"{key}: saw {rv} after {self.last_rv[key]}")
        self.last_rv[key] = max(rv, self.last_rv.get(key, 0))
        return key, rv

    def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
        with self.lock:
            key, rv = self._seen(obj)
            self.view[key] = rv
            self.adds += 1

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        with self.lock:
            key, rv = self._seen(new)
            self.view[key] = rv
            self.updates += 1

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        with self.lock:
            key = meta_namespace_key(obj)
            if isinstance(obj, DeletedFinalStateUnknown):
                self.tombstones[key] = obj
            else:
                self._seen(obj)
            self.deleted.append(key)
            self.view.pop(key, None)

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.view)


def wait_until(cond: Callable[[], bool], timeout: float = 90.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def server_state(dc: DevCluster, namespace: str | None = None) -> dict[str, int]:
    return {meta_namespace_key(o): int(o["metadata"]["resourceVersion"])
            for o in dc.objects("configmaps", namespace) if o["metadata"]["namespace"] in NAMESPACES_USED}


def store_state(inf: SharedInformer) -> dict[str, int]:
    return {k: int(o["metadata"]["resourceVersion"]) for k, o in inf.store.items()
            if o["metadata"]["namespace"] in NAMESPACES_USED}


def informer(client: KubeClient, namespace: str | None = None) -> SharedInformer:
    return SharedInformer(client, CONFIGMAPS, namespace, min_watch_timeout=2,
                          backoff=Backoff(initial=0.05, cap=1.0))


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    with DevCluster(history=150, bookmark_interval=0.5, seed=7) as dc:
        dc.faults.seed(7)
        kubeconfig = dc.write_kubeconfig(str(tmp_path / "kubeconfig"))
        admin = KubeClient.from_kubeconfig(kubeconfig)
        for ns in NAMESPACES_USED:
            admin.create(NAMESPACES, None, {"metadata": {"name": ns}})
        yield dc, kubeconfig, admin


def test_informer_converges_under_faults_and_delivers_every_delete(cluster: Any) -> None:
    dc, kubeconfig, admin = cluster
    for i in range(30):
        body = {"metadata": {"name": f"seed-{i}"}, "data": {"i": "0"}}
        admin.create(CONFIGMAPS, NAMESPACES_USED[i % 2], body)

    everything = informer(KubeClient.from_kubeconfig(kubeconfig))
    only_a = informer(KubeClient.from_kubeconfig(kubeconfig), "ns-a")
    rec_all, rec_a = Recorder(), Recorder()
    everything.add_event_handler(rec_all)
    only_a.add_event_handler(rec_a)
    everything.start()
    only_a.start()
    try:
        assert wait_for_cache_sync([everything, only_a], timeout=60)

        # Phase 1: random writes under random faults, watch drops and compactions.
        faults = dc.faults
        faults.set_latency(3)
        faults.set_error_rate(500, 0.15, verb="list", resource="configmaps")
        faults.set_error_rate(429, 0.1, verb="list", resource="configmaps")
        faults.set_error_rate(500, 0.1, verb="watch", resource="configmaps")
        faults.set_error_rate(429, 0.05, verb="watch", resource="configmaps")
        stop = threading.Event()
        writer_errors: list[str] = []

        def writer() -> None:
            rng = random.Random(11)
            client = KubeClient.from_kubeconfig(kubeconfig, max_retries=2)
            for i in range(500):
                ns = rng.choice(NAMESPACES_USED)
                name = f"cm-{rng.randrange(40)}"
                try:
                    roll = rng.random()
                    if roll < 0.45:
                        client.create(CONFIGMAPS, ns, {"metadata": {"name": name}, "data": {"i": str(i)}})
                    elif roll < 0.8:
                        client.patch(CONFIGMAPS, ns, name, {"data": {"i": str(i)}})
                    else:
                        client.delete(CONFIGMAPS, ns, name)
                except ApiError as e:
                    expected = e.is_not_found or e.is_already_exists or e.is_server_error
                    if not (expected or e.is_too_many_requests):
                        writer_errors.append(str(e))
                time.sleep(rng.uniform(0, 0.02))  # spread the writes over the chaos

        def chaos() -> None:
            rng = random.Random(5)
            while not stop.wait(rng.uniform(0.1, 0.4)):
                if rng.random() < 0.3:
                    faults.compact()
                faults.drop_watches()

        chaos_thread = threading.Thread(target=chaos)
        writer_thread = threading.Thread(target=writer)
        chaos_thread.start()
        writer_thread.start()
        writer_thread.join(180)
        stop.set()
        chaos_thread.join(10)
        assert not writer_thread.is_alive() and not writer_errors, writer_errors[:3]

        # Phase 2: a gap in which every watch fails; deletes then only show up on relists, as tombstones.
        faults.reset()
        faults.set_error_rate(500, 1.0, verb="watch", resource="configmaps")
        watches_before = dc.stats.count("watch", "configmaps")
        faults.drop_watches()
        wait_until(lambda: dc.stats.count("watch", "configmaps") >= watches_before + 2, what="failed watches")
        # A watch admitted just before the fault was set can register after a drop and live on (it replays
        # the deletes below as events): drop until no watch request is open or still on its way to opening
        # one; every later one starts after the fault and fails.
        wait_until(lambda: faults.drop_watches() == 0 and dc.stats.in_flight("watch", "configmaps") == 0,
                   what="no configmap watch left open or in flight")
        # (Only objects the informer has seen can come back as tombstones: one the server created after the
        # informer's last list, while its watch fails, is not in its store yet.)
        victims = sorted(k for k in server_state(dc) if k.startswith("ns-a/") and k in everything.store)[:5]
        assert victims
        last_known = {k: everything.store.get_by_key(k) for k in victims}
        for key in victims:
            ns, name = key.split("/")
            admin.delete(CONFIGMAPS, ns, name)
        wait_until(lambda: not any(k in everything.store for k in victims), what="relist removes the victims")
        for key in victims:
            assert key in rec_all.tombstones, key
            tomb_obj = rec_all.tombstones[key].obj
            assert tomb_obj is not None and last_known[key] is not None
            last_rv = int(last_known[key]["metadata"]["resourceVersion"])  # type: ignore[index]
            assert int(tomb_obj["metadata"]["resourceVersion"]) >= last_rv

        # Phase 3: faults off; everything converges.
        faults.reset()
        wait_until(lambda: store_state(everything) == server_state(dc), what="store == server")
        wait_until(lambda: store_state(only_a) == server_state(dc, "ns-a"), what="ns-a store == server")
        wait_until(lambda: rec_all.snapshot() == server_state(dc), what="handler view == server")
        wait_until(lambda: rec_a.snapshot() == server_state(dc, "ns-a"), what="ns-a handler view == server")
        wait_until(lambda: everything.healthy() and only_a.healthy(), what="healthy again")

        for rec in (rec_all, rec_a):
            assert not rec.regressions, rec.regressions[:5]
            # Every object a handler saw and that is gone now was deleted through on_delete.
            gone = set(rec.last_rv) - set(server_state(dc))
            assert gone <= set(rec.deleted)
        assert all(k.startswith("ns-a/") for k in rec_a.last_rv)
        assert everything.reflector.lists > 1
        assert everything.reflector.is_alive() and only_a.reflector.is_alive()
    finally:
        everything.stop()
        only_a.stop()


def test_unreachable_server_then_recovery(tmp_path: Path) -> None:
    """A kubeconfig that points nowhere: clear log lines, the reflector keeps trying, syncs once it can."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = tmp_path / "kubeconfig"
    kc.write_text(f"""apiVersion: v1
kind: Config
current-context: c
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
""")
    inf = informer(KubeClient.from_kubeconfig(str(kc), connect_timeout=2.0))
    with structlog.testing.capture_logs() as logs:
        inf.start()
        try:
            wait_until(lambda: sum(e["event"] == "list and watch failed" for e in logs) >= 2, what="failures")
            assert not inf.has_synced() and inf.reflector.is_alive() and not inf.healthy()
            failure = next(e for e in logs if e["event"] == "list and watch failed")
            assert "ConnectionRefused" in failure["error"] and failure["log_level"] == "warning"
            with DevCluster(port=port) as dc:
                KubeClient.from_kubeconfig(str(kc)).create(
                    CONFIGMAPS, "default", {"metadata": {"name": "hello"}, "data": {}})
                assert wait_for_cache_sync([inf], timeout=60)
                wait_until(lambda: "default/hello" in inf.store)
                assert inf.healthy()
                assert dc.stats.count("list", "configmaps") >= 1
        finally:
            inf.stop()


def test_expired_continue_token_against_devcluster(cluster: Any) -> None:
    dc, kubeconfig, admin = cluster
    dc.load({"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": f"bulk-{i:04d}", "namespace": "ns-b"}, "data": {"i": str(i)}}
            for i in range(1200))
    fired = threading.Event()

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        # While the first page is ingested, the cluster moves on and compacts: the continue token expires.
        # (Pages are prefetched at most two ahead of ingestion: with 12 pages, page 4 is requested after.)
        if not fired.is_set():
            fired.set()
            admin.delete(CONFIGMAPS, "ns-b", "bulk-0999")
            admin.create(CONFIGMAPS, "ns-b", {"metadata": {"name": "late"}, "data": {}})
            dc.faults.compact()
        return obj

    inf = SharedInformer(KubeClient.from_kubeconfig(kubeconfig), CONFIGMAPS, "ns-b", transform=transform,
                         backoff=Backoff(initial=0.05, cap=1.0), page_size=100)
    with structlog.testing.capture_logs() as logs:
        inf.start()
        try:
            assert wait_for_cache_sync([inf], timeout=60)
            assert store_state(inf) == server_state(dc, "ns-b")
            assert "ns-b/late" in inf.store and "ns-b/bulk-0999" not in inf.store
            assert inf.reflector.is_alive()
        finally:
            inf.stop()
    assert any(e["event"] == "list continue token expired; restarting with a full list" for e in logs)
