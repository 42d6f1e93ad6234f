"""Informer benchmark: initial sync of Ingresses, Services and EndpointSlices from a devcluster.

Prints a table and writes informer.json to --out. Numbers only; nothing here asserts a time.

  sync:     N objects of each kind are loaded with DevCluster.load into a devcluster that runs in a child
            process (so the server's CPU does not share this process's GIL). A SharedInformer per kind lists
            them (pages of 500), strips managedFields, fills its store and hands every object to a no-op
            handler; the time from start() to has_synced() gives objects per second. "all" runs the three
            informers at once, as the controller does.
  memory:   the same sync under tracemalloc: bytes still allocated once the informer has synced (its store,
            indices and the objects) divided by the number of objects. RSS growth is reported too.
  baseline: in the same run, the `kubernetes` package's typed-model path (list_ingress_for_all_namespaces in
            pages of 500, V1Ingress models) on the same Ingresses: the cost this design avoids.
Goals from the issue: >= 50,000 objects/s and < 3 KB retained per object.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import multiprocessing
import os
import pstats
import resource
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from multiprocessing.connection import Connection
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.informer import SharedInformer
from ingressctl.k8s.resource import ENDPOINTSLICES, INGRESSES, SERVICES, ResourceType
from ingressctl.k8s.store import BY_SERVICE_INDEX, endpoint_slices_by_service
from ingressctl.logging import configure_logging
from ingressctl.settings import LogSettings

NAMESPACES = 50
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


# -- objects (shaped like what a real cluster returns, managedFields included) -------------------------------

def _managed(manager: str, fields: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"manager": manager, "operation": "Update", "apiVersion": "v1", "time": "2024-05-01T10:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": fields}]


def ingress(i: int) -> dict[str, Any]:
    ns, host = f"team-{i % NAMESPACES}", f"app-{i}.example.com"
    spec = {"ingressClassName": "nginx", "tls": [{"hosts": [host], "secretName": f"tls-{i}"}],
            "rules": [{"host": host, "http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": f"svc-{i}", "port": {"number": 80}}}},
                {"path": "/api", "pathType": "Prefix",
                 "backend": {"service": {"name": f"svc-{i}", "port": {"name": "http"}}}}]}}]}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": f"ing-{i}", "namespace": ns, "labels": {"app": f"app-{i}", "tier": "web"},
                         "annotations": {"nginx.org/proxy-read-timeout": "60s",
                                         LAST_APPLIED: json.dumps({"spec": spec})},
                         "managedFields": _managed("kubectl-client-side-apply",
                                                   {"f:spec": {"f:rules": {}, "f:tls": {}}})},
            "spec": spec, "status": {"loadBalancer": {}}}


def service(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": f"svc-{i}", "namespace": f"team-{i % NAMESPACES}",
                         "labels": {"app": f"app-{i}"},
                         "managedFields": _managed("kubectl", {"f:spec": {"f:ports": {}, "f:selector": {}}})},
            "spec": {"type": "ClusterIP", "clusterIP": f"10.96.{i // 250 % 256}.{i % 250 + 1}",
                     "clusterIPs": [f"10.96.{i // 250 % 256}.{i % 250 + 1}"], "ipFamilies": ["IPv4"],
                     "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None",
                     "internalTrafficPolicy": "Cluster", "selector": {"app": f"app-{i}"},
                     "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]},
            "status": {"loadBalancer": {}}}


def endpoint_slice(i: int) -> dict[str, Any]:
    ns = f"team-{i % NAMESPACES}"
    endpoints = [{"addresses": [f"10.{i // 256 % 256}.{i % 256}.{k + 1}"],
                  "conditions": {"ready": True, "serving": True, "terminating": False},
                  "nodeName": f"node-{(i + k) % 20}", "zone": f"zone-{k % 3}",
                  "targetRef": {"kind": "Pod", "namespace": ns, "name": f"app-{i}-{k}",
                                "uid": f"00000000-0000-0000-{k:04d}-{i:012d}"}} for k in range(3)]
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": f"svc-{i}-abcde", "namespace": ns, "generateName": f"svc-{i}-",
                         "labels": {"kubernetes.io/service-name": f"svc-{i}",
                                    "endpointslice.kubernetes.io/managed-by":
                                        "endpointslice-controller.k8s.io"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": f"svc-{i}",
                                              "uid": f"11111111-0000-0000-0000-{i:012d}", "controller": True,
                                              "blockOwnerDeletion": True}],
                         "managedFields": _managed("endpointslice-controller", {"f:endpoints": {}})},
            "addressType": "IPv4", "endpoints": endpoints,
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}


# -- the server, in a child process -------------------------------------------------------------------------

def serve(n: int, kubeconfig: str, conn: Connection) -> None:
    from ingressctl.devcluster import DevCluster

    with DevCluster(history=1000) as dc:
        for ns in range(NAMESPACES):
            dc.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{ns}"}}])
        for make in (ingress, service, endpoint_slice):
            dc.load(make(i) for i in range(n))
        dc.write_kubeconfig(kubeconfig)
        conn.send(dc.url)
        conn.recv()  # until the parent says stop


# -- measurements -------------------------------------------------------------------------------------------

class Counter:
    def __init__(self) -> None:
        self.adds = 0

    def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
        self.adds += 1

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        pass

    def on_delete(self, obj: Any) -> None:
        pass


def make_informer(client: KubeClient, rt: ResourceType) -> tuple[SharedInformer, Counter]:
    indexers = {BY_SERVICE_INDEX: endpoint_slices_by_service} if rt is ENDPOINTSLICES else None
    inf = SharedInformer(client, rt, indexers=indexers)
    counter = Counter()
    inf.add_event_handler(counter)
    return inf, counter


def sync_once(client: KubeClient, rts: list[ResourceType], n: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) from start() to has_synced()."""
    informers = [make_informer(client, rt) for rt in rts]
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    for inf, _ in informers:
        inf.start()
    for inf, _ in informers:
        if not inf.wait_synced(600):
            raise RuntimeError(f"{inf.name} did not sync")
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    for inf, counter in informers:
        inf.stop()
        if counter.adds != n or len(inf.store) != n:
            raise RuntimeError(f"{inf.name}: {counter.adds} adds, {len(inf.store)} stored, expected {n}")
    return elapsed, cpu


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def memory_once(client: KubeClient, rt: ResourceType, n: int) -> dict[str, float]:
    gc.collect()
    rss0 = rss_bytes()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    inf, _ = make_informer(client, rt)
    inf.start()
    if not inf.wait_synced(600):
        raise RuntimeError(f"{inf.name} did not sync")
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    rss = rss_bytes() - rss0
    inf.stop()
    return {"retained_bytes_per_object": held / n, "rss_growth_bytes_per_object": rss / n}


def objects_alone(client: KubeClient, rt: ResourceType, n: int) -> float:
    """Bytes per object of the decoded, stripped objects alone (no store): the floor for `retained`."""
    from ingressctl.k8s.reflector import strip_managed_fields

    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    items: list[dict[str, Any]] = []
    cont = None
    while True:
        page = client.list(rt, limit=500, continue_token=cont, resource_version=None if cont else "0")
        items.extend(strip_managed_fields(o) for o in page["items"])
        cont = page["metadata"].get("continue")
        if not cont:
            break
        del page
    del page
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    if len(items) != n:
        raise RuntimeError(f"listed {len(items)}, expected {n}")
    return held / n


def calibration_ms() -> float:
    """Milliseconds for sum(range(10**6)), best of 5: a rough speed of this machine (~12-15 ms on a recent
    desktop CPU), to normalise objects/s between machines."""
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        sum(range(10**6))
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def baseline_models(client_kubeconfig: str, n: int) -> float:
    from kubernetes import client, config

    api = client.NetworkingV1Api(config.new_client_from_config(client_kubeconfig))  # type: ignore[no-untyped-call]
    t0 = time.perf_counter()
    count, cont = 0, None
    while True:
        page = api.list_ingress_for_all_namespaces(limit=500, _continue=cont)
        count += len(page.items)
        cont = page.metadata._continue if page.metadata else None
        if not cont:
            break
    elapsed = time.perf_counter() - t0
    if count != n:
        raise RuntimeError(f"baseline listed {count}, expected {n}")
    return elapsed


def json_decoder() -> str:
    from ingressctl.k8s import client as client_module

    return "orjson" if "orjson" in getattr(client_module._loads, "__module__", "") else "stdlib json"


def profile(client: KubeClient, rt: ResourceType, n: int) -> str:
    prof = cProfile.Profile()
    prof.enable()
    sync_once(client, [rt], n)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None, help="directory for informer.json")
    p.add_argument("--quick", action="store_true", help="a small run (1,000 objects per kind, one round)")
    p.add_argument("-n", type=int, default=None, help="objects per kind (default 10,000)")
    p.add_argument("--rounds", type=int, default=None, help="sync rounds per kind (best and median reported)")
    p.add_argument("--profile", action="store_true", help="print a cProfile of one Ingress sync")
    args = p.parse_args(argv)
    configure_logging(LogSettings(level="warning"))
    n = args.n or (1000 if args.quick else 10_000)
    rounds = args.rounds or (1 if args.quick else 3)

    tmp = tempfile.mkdtemp(prefix="bench-informer-")
    kubeconfig = os.path.join(tmp, "kubeconfig")
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(n, kubeconfig, child), daemon=True)
    t0 = time.perf_counter()
    server.start()
    if not parent.poll(900):
        raise RuntimeError("devcluster did not start")
    url = parent.recv()
    load_s = time.perf_counter() - t0
    results: dict[str, Any] = {"params": {"objects_per_kind": n, "rounds": rounds, "server": url,
                                          "load_seconds": round(load_s, 2), "python": sys.version.split()[0],
                                          "cpus": os.cpu_count(), "json_decoder": json_decoder(),
                                          "load_average": os.getloadavg()[0]}}
    try:
        client = KubeClient.from_kubeconfig(kubeconfig, read_timeout=300.0)
        calib = calibration_ms()
        results["params"]["calibration_sum_range_ms"] = round(calib, 1)
        rows: list[tuple[str, ...]] = []
        kinds = {"ingresses": INGRESSES, "services": SERVICES, "endpointslices": ENDPOINTSLICES}
        for name, rt in kinds.items():
            sync_once(client, [rt], n)  # warm-up: connections, server-side caches
            runs = [sync_once(client, [rt], n) for _ in range(rounds)]
            walls, cpus = [w for w, _ in runs], [c for _, c in runs]
            mem = memory_once(client, rt, n)
            mem["objects_alone_bytes_per_object"] = objects_alone(client, rt, n)
            results[name] = {
                "sync_seconds_median": round(statistics.median(walls), 4),
                "sync_seconds_best": round(min(walls), 4),
                "objects_per_second_median": round(n / statistics.median(walls)),
                "objects_per_second_best": round(n / min(walls)),
                "objects_per_cpu_second": round(n / statistics.median(cpus)),
                **{k: round(v) for k, v in mem.items()}}
            rows.append((name, f"{n / statistics.median(walls):,.0f}", f"{n / min(walls):,.0f}",
                         f"{n / statistics.median(cpus):,.0f}", f"{mem['retained_bytes_per_object']:,.0f}",
                         f"{mem['objects_alone_bytes_per_object']:,.0f}",
                         f"{mem['rss_growth_bytes_per_object']:,.0f}"))
        runs = [sync_once(client, list(kinds.values()), n) for _ in range(rounds)]
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        results["all_three_concurrently"] = {
            "sync_seconds_median": round(statistics.median(walls), 4),
            "objects_per_second_median": round(3 * n / statistics.median(walls)),
            "objects_per_cpu_second": round(3 * n / statistics.median(cpus))}
        rows.append(("all three at once", f"{3 * n / statistics.median(walls):,.0f}",
                     f"{3 * n / min(walls):,.0f}", f"{3 * n / statistics.median(cpus):,.0f}", "", "", ""))
        base = baseline_models(kubeconfig, n)
        results["baseline_kubernetes_models_ingresses"] = {"seconds": round(base, 4),
                                                           "objects_per_second": round(n / base)}
        rows.append(("baseline: V1Ingress models", f"{n / base:,.0f}", "", "", "", "", ""))

        print(f"\ninformer initial sync, {n:,} objects per kind (devcluster in a child process, "
              f"load took {load_s:.1f} s)")
        print(f"JSON decoder: {json_decoder()}; load average {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} CPUs")
        print(f"machine speed: sum(range(10**6)) takes {calib:.1f} ms (a recent desktop CPU: ~12-15 ms)")
        print(f"{'':28} {'obj/s median':>12} {'obj/s best':>11} {'obj/CPU-s':>10} {'retained B/obj':>15} "
              f"{'objects alone':>14} {'RSS B/obj':>10}")
        widths = (28, 12, 11, 10, 15, 14, 10)
        for row in rows:
            print(" ".join(f"{cell:{'<' if i == 0 else '>'}{widths[i]}}" for i, cell in enumerate(row)))
        speedup = results["ingresses"]["objects_per_second_median"] / results[
            "baseline_kubernetes_models_ingresses"]["objects_per_second"]
        results["speedup_vs_models"] = round(speedup, 1)
        print(f"raw-JSON informer vs typed models (Ingresses): {speedup:.1f}x")
        print("goals: >= 50,000 objects/s, < 3,000 bytes retained per object")
        if args.profile:
            print(profile(client, INGRESSES, n))
    finally:
        parent.send("stop")
        server.join(30)
        if server.is_alive():
            server.terminate()
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "informer.json")
        with open(path, "w") as f:
            json.dump(results, f, indent=2)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    sys.exit(main())
