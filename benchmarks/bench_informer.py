"""Informer benchmark: initial sync of Ingresses, Services and EndpointSlices from a devcluster.

Prints a table and writes informer.json to --out. Numbers only; nothing here asserts a time.

  sync:     N objects of each kind are loaded with DevCluster.load into a devcluster that runs in a child
            process (so the server's CPU does not share this process's GIL). A SharedInformer per kind lists
            them (pages of 500), strips managedFields, fills its store and hands every object to a no-op
            handler. objects/s = N / wall time from start() (which sends the first list request) to
            has_synced(); objects/CPU-s uses this process's CPU time over the same interval. "all three"
            runs the three informers at once, as the controller does.
  memory:   the same sync under tracemalloc: bytes still allocated once the informer has synced and
            gc.collect() ran (its store, indices and the objects), minus before, divided by N. RSS growth
            (/proc/self/statm) over the same interval is shown too; it includes allocator slack.
  floor:    what one stored object is made of (dicts, lists, strings not shared with other objects, sizes
            from sys.getsizeof, GC headers included): the size the plain-dict representation cannot go under.
  baselines (same run, same objects): the `kubernetes` package's typed models
            (list_ingress_for_all_namespaces, pages of 500, V1Ingress); a naive raw-JSON loop (stdlib
            json.loads per page, GC on, pages one after the other, into a dict); and ablations of this
            informer (no prefetch; no gc.freeze(); list latency injected into the server).
Goals: >= 50,000 objects/s and < 3 KB retained per object.
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
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
import urllib.parse
import urllib.request
from multiprocessing.connection import Connection
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.informer import SharedInformer
from ingressctl.k8s.reflector import Transform, drop_fields, strip_managed_fields
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
        while True:  # until the parent says stop
            cmd = conn.recv()
            if cmd == "stop":
                break
            if isinstance(cmd, tuple) and cmd[0] == "list-latency-ms":
                dc.faults.set_latency(cmd[1], verb="list")
                conn.send("ok")


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


LIST_LATENCIES_MS = (5.0, 20.0)  # injected per list request, to show what prefetching hides

# Fields the controller's EndpointSlice code never reads: what a per-informer transform could drop.
EXAMPLE_SLICE_TRANSFORM = ("metadata.ownerReferences", "metadata.generateName", "metadata.annotations",
                           "endpoints[].targetRef", "endpoints[].nodeName", "endpoints[].zone",
                           "endpoints[].hints")


def make_informer(client: KubeClient, rt: ResourceType, **kw: Any) -> tuple[SharedInformer, Counter]:
    indexers = {BY_SERVICE_INDEX: endpoint_slices_by_service} if rt is ENDPOINTSLICES else None
    inf = SharedInformer(client, rt, indexers=indexers, **kw)
    counter = Counter()
    inf.add_event_handler(counter)
    return inf, counter


def sync_once(client: KubeClient, rts: list[ResourceType], n: int, **kw: Any) -> dict[str, float]:
    """Wall and CPU seconds of this process from start() to has_synced(), then the time of a gc.collect()
    (the collector's deferred work on the new objects, if they were not frozen)."""
    informers = [make_informer(client, rt, **kw) for rt in rts]
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    for inf, _ in informers:
        inf.start()
    for inf, _ in informers:
        if not inf.wait_synced(600):
            raise RuntimeError(f"{inf.name} did not sync")
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    g0 = time.perf_counter()
    gc.collect()
    collect = time.perf_counter() - g0
    for inf, counter in informers:
        inf.stop()
        if counter.adds != n or len(inf.store) != n:
            raise RuntimeError(f"{inf.name}: {counter.adds} adds, {len(inf.store)} stored, expected {n}")
    return {"wall": elapsed, "cpu": cpu, "collect": collect}


def rounds_of(client: KubeClient, rts: list[ResourceType], n: int, rounds: int,
              **kw: Any) -> dict[str, float]:
    runs = [sync_once(client, rts, n, **kw) for _ in range(rounds)]
    total = n * len(rts)
    walls = [r["wall"] for r in runs]
    return {"sync_seconds_median": round(statistics.median(walls), 4),
            "sync_seconds_best": round(min(walls), 4),
            "objects_per_second_median": round(total / statistics.median(walls)),
            "objects_per_second_best": round(total / min(walls)),
            "objects_per_cpu_second": round(total / statistics.median(r["cpu"] for r in runs)),
            "gc_collect_after_sync_ms": round(1000 * statistics.median(r["collect"] for r in runs), 1)}


def memory_once(client: KubeClient, rt: ResourceType, n: int,
                transform: Transform = strip_managed_fields) -> tuple[dict[str, float], dict[str, Any]]:
    """Retained bytes per object (tracemalloc), and one stored object for `representation`."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    inf, _ = make_informer(client, rt, transform=transform)
    inf.start()
    if not inf.wait_synced(600):
        raise RuntimeError(f"{inf.name} did not sync")
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    inf.stop()
    sample = inf.store.list()[n // 2]
    return {"retained_bytes_per_object": held / n}, sample


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _rss_child(kubeconfig: str, plural: str, n: int, slim: bool, conn: Connection) -> None:
    configure_logging(LogSettings(level="warning"))
    rt = {"ingresses": INGRESSES, "services": SERVICES, "endpointslices": ENDPOINTSLICES}[plural]
    client = KubeClient.from_kubeconfig(kubeconfig, read_timeout=300.0)
    transform = drop_fields(*EXAMPLE_SLICE_TRANSFORM) if slim else strip_managed_fields
    inf, _ = make_informer(client, rt, transform=transform)
    gc.collect()
    rss0 = _status_kb("VmRSS")
    inf.start()
    if not inf.wait_synced(600):
        raise RuntimeError(f"{inf.name} did not sync")
    gc.collect()
    rss1, hwm = _status_kb("VmRSS"), _status_kb("VmHWM")
    inf.stop()
    conn.send({"rss_growth_bytes_per_object": (rss1 - rss0) * 1024 / n,
               "rss_peak_growth_bytes_per_object": (hwm - rss0) * 1024 / n})


def rss_fresh_process(kubeconfig: str, plural: str, n: int, slim: bool = False) -> dict[str, float]:
    """RSS growth (and peak growth) per object of one sync in a freshly spawned interpreter, where memory
    freed by earlier runs cannot hide growth; it includes allocator slack and transient page buffers."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_rss_child, args=(kubeconfig, plural, n, slim, child), daemon=True)
    proc.start()
    try:
        if not parent.poll(600):
            raise RuntimeError("RSS measurement did not finish")
        result: dict[str, float] = parent.recv()
        return result
    finally:
        proc.join(30)


def objects_alone(client: KubeClient, rt: ResourceType, n: int) -> float:
    """Bytes per object of the decoded, stripped objects alone (no store): the floor for `retained`."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    items: list[dict[str, Any]] = []
    for page in client.list_pages(rt, limit=500, resource_version="0"):
        items.extend(strip_managed_fields(o) for o in page["items"])
    del page
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    if len(items) != n:
        raise RuntimeError(f"listed {len(items)}, expected {n}")
    return held / n


def representation(obj: dict[str, Any]) -> dict[str, int]:
    """What one stored object is made of: counts and bytes (sys.getsizeof, GC headers included) of its
    dicts and lists, and of its strings that are not shared (keys are shared by orjson's key cache)."""
    out = {"dicts": 0, "dict_bytes": 0, "lists": 0, "list_bytes": 0, "strings": 0, "string_bytes": 0}
    shared_strings = {"kind", "apiVersion", "namespace"}  # replaced by one shared string on ingest

    def walk(node: Any, key: str) -> None:
        if isinstance(node, dict):
            out["dicts"] += 1
            out["dict_bytes"] += sys.getsizeof(node)
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            out["lists"] += 1
            out["list_bytes"] += sys.getsizeof(node)
            for v in node:
                walk(v, key)
        elif isinstance(node, str) and key not in shared_strings and len(node) > 1:
            out["strings"] += 1
            out["string_bytes"] += sys.getsizeof(node)

    walk(obj, "")
    out["total_bytes"] = out["dict_bytes"] + out["list_bytes"] + out["string_bytes"]
    return out


def naive_baseline(url: str, rt: ResourceType, n: int) -> float:
    """Seconds for a naive raw-JSON load: pages one after the other, stdlib json.loads with the GC on, strip,
    a dict keyed namespace/name (no informer)."""
    gc.collect()
    t0 = time.perf_counter()
    store: dict[str, dict[str, Any]] = {}
    query = "limit=500&resourceVersion=0"
    while True:
        with urllib.request.urlopen(f"{url}{rt.path()}?{query}") as resp:
            page = json.loads(resp.read())
        for obj in page["items"]:
            strip_managed_fields(obj)
            store[f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"] = obj
        token = page["metadata"].get("continue")
        if not token:
            break
        query = urllib.parse.urlencode({"limit": "500", "continue": token})
    elapsed = time.perf_counter() - t0
    if len(store) != n:
        raise RuntimeError(f"naive baseline stored {len(store)}, expected {n}")
    return elapsed


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
    from ingressctl.k8s import codec

    return "orjson" if "orjson" in getattr(codec.raw_loads, "__module__", "") else "stdlib json"


def profile(client: KubeClient, rt: ResourceType) -> str:
    """cProfile of one initial list run on this thread: the reflector's list (decode, ingest; only the HTTP
    requests run in the prefetch helper) and the dispatcher's store replace and handler calls."""
    inf, _ = make_informer(client, rt)
    reflector, queue = inf.reflector, inf._queue
    gc.collect()
    prof = cProfile.Profile()
    prof.enable()
    reflector._list()
    delta = queue.pop()
    assert delta is not None
    inf._process(delta)
    if delta.release is not None:
        delta.release()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
    return out.getvalue()


def _kb(value: float) -> str:
    return f"{value:,.0f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None, help="directory for informer.json")
    p.add_argument("--quick", action="store_true", help="a small run (1,000 objects per kind, one round)")
    p.add_argument("-n", type=int, default=None, help="objects per kind (default 10,000)")
    p.add_argument("--rounds", type=int, default=None, help="sync rounds per kind (best and median reported)")
    p.add_argument("--profile", action="store_true", help="print a cProfile of one Ingress list")
    args = p.parse_args(argv)
    configure_logging(LogSettings(level="warning"))
    n = args.n or (1000 if args.quick else 10_000)
    rounds = args.rounds or (1 if args.quick else 5)

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
                                          "load_average_before": os.getloadavg()[0]}}
    try:
        client = KubeClient.from_kubeconfig(kubeconfig, read_timeout=300.0)
        calib = calibration_ms()
        results["params"]["calibration_sum_range_ms"] = round(calib, 1)
        rows: list[tuple[str, ...]] = []
        floors: list[str] = []
        kinds = {"ingresses": INGRESSES, "services": SERVICES, "endpointslices": ENDPOINTSLICES}
        for name, rt in kinds.items():
            sync_once(client, [rt], n)  # warm-up: connections, server-side caches
            r = rounds_of(client, [rt], n, rounds)
            mem, sample = memory_once(client, rt, n)
            mem["objects_alone_bytes_per_object"] = objects_alone(client, rt, n)
            mem.update(rss_fresh_process(kubeconfig, name, n))
            rep = representation(sample)
            naive = statistics.median(naive_baseline(url, rt, n) for _ in range(min(rounds, 3)))
            results[name] = {**r, **{k: round(v) for k, v in mem.items()}, "representation": rep,
                             "naive_baseline_objects_per_second": round(n / naive)}
            rows.append((name, f"{r['objects_per_second_median']:,}", f"{r['objects_per_second_best']:,}",
                         f"{r['objects_per_cpu_second']:,}", f"{r['gc_collect_after_sync_ms']:.0f}",
                         _kb(mem["retained_bytes_per_object"]), _kb(mem["objects_alone_bytes_per_object"]),
                         _kb(mem["rss_growth_bytes_per_object"]),
                         _kb(mem["rss_peak_growth_bytes_per_object"])))
            rows.append(("  baseline: naive raw JSON", f"{n / naive:,.0f}", "", "", "", "", "", "", ""))
            floors.append(f"  {name}: {rep['dicts']} dicts {rep['dict_bytes']:,} B + {rep['lists']} lists "
                          f"{rep['list_bytes']:,} B + {rep['strings']} own strings {rep['string_bytes']:,} B "
                          f"= {rep['total_bytes']:,} B per object")
        r = rounds_of(client, list(kinds.values()), n, rounds)
        results["all_three_concurrently"] = r
        rows.append(("all three at once", f"{r['objects_per_second_median']:,}",
                     f"{r['objects_per_second_best']:,}", f"{r['objects_per_cpu_second']:,}",
                     f"{r['gc_collect_after_sync_ms']:.0f}", "", "", "", ""))
        ablations: list[tuple[str, float, dict[str, Any]]] = [
            ("ingresses, no prefetch", 0, {"prefetch": False}),
            ("ingresses, no gc.freeze()", 0, {"freeze_gc_on_sync": False})]
        for latency in LIST_LATENCIES_MS:
            ablations += [(f"ingresses, list L={latency:g} ms", latency, {}),
                          (f"ingresses, list L={latency:g} ms, no prefetch", latency, {"prefetch": False})]
        for label, latency, kw in ablations:
            parent.send(("list-latency-ms", latency))
            parent.recv()
            r = rounds_of(client, [INGRESSES], n, rounds if not latency else min(rounds, 3), **kw)
            results[f"ablation: {label}"] = r
            rows.append((f"  {label}", f"{r['objects_per_second_median']:,}",
                         f"{r['objects_per_second_best']:,}", f"{r['objects_per_cpu_second']:,}",
                         f"{r['gc_collect_after_sync_ms']:.0f}", "", "", "", ""))
        parent.send(("list-latency-ms", 0))
        parent.recv()
        slim = drop_fields(*EXAMPLE_SLICE_TRANSFORM)
        r = rounds_of(client, [ENDPOINTSLICES], n, rounds, transform=slim)
        mem, sample = memory_once(client, ENDPOINTSLICES, n, transform=slim)
        mem.update(rss_fresh_process(kubeconfig, "endpointslices", n, slim=True))
        rep = representation(sample)
        results["endpointslices_with_example_transform"] = {
            **r, **{k: round(v) for k, v in mem.items()}, "representation": rep,
            "dropped": list(EXAMPLE_SLICE_TRANSFORM)}
        rows.append(("endpointslices, slim transform", f"{r['objects_per_second_median']:,}",
                     f"{r['objects_per_second_best']:,}", f"{r['objects_per_cpu_second']:,}",
                     f"{r['gc_collect_after_sync_ms']:.0f}", _kb(mem["retained_bytes_per_object"]), "",
                     _kb(mem["rss_growth_bytes_per_object"]), _kb(mem["rss_peak_growth_bytes_per_object"])))
        floors.append(f"  endpointslices, slim transform: {rep['dicts']} dicts {rep['dict_bytes']:,} B + "
                      f"{rep['lists']} lists {rep['list_bytes']:,} B + {rep['strings']} own strings "
                      f"{rep['string_bytes']:,} B = {rep['total_bytes']:,} B per object")
        base = baseline_models(kubeconfig, n)
        results["baseline_kubernetes_models_ingresses"] = {"seconds": round(base, 4),
                                                           "objects_per_second": round(n / base)}
        rows.append(("baseline: V1Ingress models", f"{n / base:,.0f}", "", "", "", "", "", "", ""))

        print(f"\ninformer initial sync, {n:,} objects per kind, {rounds} rounds (devcluster in a child "
              f"process, load took {load_s:.1f} s)")
        print(f"JSON decoder: {json_decoder()}; load average {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} CPUs")
        print(f"machine speed: sum(range(10**6)) takes {calib:.1f} ms (a recent desktop CPU: ~12-15 ms)")
        print(f"{'':35} {'obj/s median':>12} {'obj/s best':>11} {'obj/CPU-s':>10} {'GC after ms':>11} "
              f"{'retained B/obj':>15} {'objects alone':>14} {'RSS B/obj':>10} {'peak RSS':>9}")
        widths = (35, 12, 11, 10, 11, 15, 14, 10, 9)
        for row in rows:
            print(" ".join(f"{cell:{'<' if i == 0 else '>'}{widths[i]}}" for i, cell in enumerate(row)))
        speedup = results["ingresses"]["objects_per_second_median"] / results[
            "baseline_kubernetes_models_ingresses"]["objects_per_second"]
        results["speedup_vs_models"] = round(speedup, 1)
        ing = results["ingresses"]
        vs_naive = ing["objects_per_second_median"] / ing["naive_baseline_objects_per_second"]
        results["speedup_vs_naive_raw_json"] = round(vs_naive, 1)
        print(f"raw-JSON informer vs typed models (Ingresses): {speedup:.1f}x; vs the naive raw-JSON loop: "
              f"{vs_naive:.1f}x")
        print("methods: obj/s = N / wall time from start() (first list request) to has_synced(); "
              "obj/CPU-s the same with this process's CPU time; GC after = a gc.collect() right after the "
              "sync;\n  retained = tracemalloc bytes held after sync + gc.collect() (store, indices, "
              "objects) / N; objects alone = the decoded, stripped objects without a store;\n"
              "  RSS, peak RSS = growth of VmRSS and VmHWM over one sync in a fresh process / N (allocator "
              "slack, page buffers and the decoded managedFields before they are dropped included)")
        print("plain-dict representation of one stored object (sys.getsizeof; a dict of 1-5 keys is 184 B, "
              "6-10 keys 272 B, an empty one 64 B, a str 49 B + its length):")
        for line in floors:
            print(line)
        print("goals: >= 50,000 objects/s, < 3,000 bytes retained per object")
        if args.profile:
            print(profile(client, INGRESSES))
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
