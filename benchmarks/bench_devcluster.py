"""devcluster benchmark: bulk load, paginated list through the Python client's raw path, and watch fan-out.

Prints a table and writes devcluster.json to --out. Numbers only; nothing here asserts a time.

  list: N Ingresses loaded with DevCluster.load, then listed in pages of 500 with the official `kubernetes`
        client (`_preload_content=False` + json.loads), several rounds. The same list over a bare keep-alive
        http.client connection without parsing is reported as the server's share.
  watch: W concurrent raw watches (one client and thread each) on one namespace; E Ingresses are then written
        and every watch must receive all E events. Reports the time from the first write to the last delivery
        and the events delivered per second. Replay: the same, with the events written before and each watch
        started from the resourceVersion before them (pure fan-out from the history).
  Server, clients and writers share one process (and its GIL), as in the integration tests.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

from kubernetes import client, config

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ingressctl.devcluster import DevCluster


def ingress(i: int, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": f"ing-{i:06d}", "namespace": namespace, "labels": {"app": f"app-{i % 17}"},
                     "annotations": {"nginx.org/proxy-connect-timeout": "10s"}},
        "spec": {"ingressClassName": "nginx", "rules": [{"host": f"h{i}.example.com", "http": {"paths": [
            {"path": "/", "pathType": "Prefix",
             "backend": {"service": {"name": f"svc-{i}", "port": {"number": 80}}}}]}}]},
    }


def api_client(cluster: DevCluster, tmp: str, name: str) -> client.ApiClient:
    return config.new_client_from_config(cluster.write_kubeconfig(os.path.join(tmp, f"{name}.kubeconfig")))


def bench_list(n: int, rounds: int, tmp: str) -> dict[str, Any]:
    with DevCluster() as cluster:
        objs = [ingress(i, f"ns-{i % 20}") for i in range(n)]
        t0 = time.perf_counter()
        cluster.load(objs)
        load_s = time.perf_counter() - t0
        del objs
        gc.collect()
        api = client.NetworkingV1Api(api_client(cluster, tmp, "list"))
        walls = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            count, cont, pages = 0, None, 0
            while True:
                resp = api.list_ingress_for_all_namespaces(limit=500, _continue=cont, _preload_content=False)
                page = json.loads(resp.data)
                resp.release_conn()
                count += len(page["items"])
                pages += 1
                cont = page["metadata"].get("continue")
                if not cont:
                    break
            walls.append(time.perf_counter() - t0)
            if count != n:
                raise RuntimeError(f"listed {count} objects, expected {n}")
        host, port = cluster.url.split("//", 1)[1].rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port))
        server_walls = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            cont = ""
            while True:
                conn.request("GET", "/apis/networking.k8s.io/v1/ingresses?limit=500"
                             + (f"&continue={cont}" if cont else ""))
                body = conn.getresponse().read()
                # Only the continue token is needed; it sits in the first bytes of the list.
                head = body[:body.find(b'"items"')]
                meta = json.loads(head[head.find(b'"metadata":') + 11:].rstrip(b","))
                cont = meta.get("continue", "")
                if not cont:
                    break
            server_walls.append(time.perf_counter() - t0)
        conn.close()
    return {"objects": n, "pages": pages, "load_s": load_s, "list_wall_s": walls,
            "list_wall_median_s": statistics.median(walls),
            "http_only_wall_median_s": statistics.median(server_walls)}


def bench_watch(watchers: int, events: int, tmp: str, *, replay: bool) -> dict[str, Any]:
    """Live: the events are written while the watches are open. Replay: they were written before, and each
    watch starts from the resourceVersion before them (served from the history)."""
    with DevCluster() as cluster:
        cluster.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}])
        rv = cluster.resource_version
        if replay:
            cluster.load(ingress(i, "bench") for i in range(events))
        received = [0] * watchers
        done = threading.Barrier(watchers + 1)
        ready = threading.Semaphore(0)
        errors: list[str] = []
        last_delivery = [0.0] * watchers
        apis = [client.NetworkingV1Api(api_client(cluster, tmp, f"w{i}")) for i in range(watchers)]

        def watch(idx: int) -> None:
            try:
                api = apis[idx]
                resp = api.list_namespaced_ingress("bench", watch=True, resource_version=rv,
                                                   timeout_seconds=300,
                                                   _preload_content=False)
                ready.release()
                buf = b""
                for chunk in resp.stream(65536, decode_content=False):
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        if line and json.loads(line)["type"] == "ADDED":
                            received[idx] += 1
                    if received[idx] >= events:
                        last_delivery[idx] = time.perf_counter()
                        break
                resp.close()
                resp.release_conn()
            except Exception as e:  # reported below
                errors.append(f"watch {idx}: {e!r}")
                ready.release()
            finally:
                done.wait()

        threads = [threading.Thread(target=watch, args=(i,), daemon=True) for i in range(watchers)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        write_s = 0.0
        if not replay:
            for _ in range(watchers):
                ready.acquire()
            deadline = time.monotonic() + 30
            while cluster.store.watcher_count() < watchers and time.monotonic() < deadline:
                time.sleep(0.01)
            t0 = time.perf_counter()
            cluster.load(ingress(i, "bench") for i in range(events))
            write_s = time.perf_counter() - t0
        done.wait()
        wall = max(last_delivery) - t0 if all(last_delivery) else float("nan")
        if errors:
            raise RuntimeError("; ".join(errors[:5]))
        total = sum(received)
    return {"mode": "replay" if replay else "live", "watchers": watchers, "events_per_watch": events,
            "delivered": total, "write_s": write_s,
            "wall_s": wall, "events_per_s": total / wall if wall == wall and wall > 0 else 0.0,
            "max_in_flight_watch": cluster.stats.max_in_flight("watch", "ingresses")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="", help="directory for devcluster.json")
    p.add_argument("--quick", action="store_true",
                   help="smaller run (2,000 objects, 20 watches x 200 events)")
    args = p.parse_args(argv)
    n, rounds, watchers, events = (2000, 2, 20, 200) if args.quick else (10000, 3, 100, 1000)
    with tempfile.TemporaryDirectory() as tmp:
        listing = bench_list(n, rounds, tmp)
        watching = bench_watch(watchers, events, tmp, replay=False)
        replaying = bench_watch(watchers, events, tmp, replay=True)
    print(f"{'benchmark':<44}{'value':>14}")
    print(f"{'load ' + str(n) + ' Ingresses (DevCluster.load)':<44}{listing['load_s']:>13.3f}s")
    print(f"{'list ' + str(n) + ' in pages of 500, raw client (median)':<44}"
          f"{listing['list_wall_median_s']:>13.3f}s")
    print(f"{'  same list over bare HTTP, no parsing':<44}{listing['http_only_wall_median_s']:>13.3f}s")
    print(f"{str(watchers) + ' watches x ' + str(events) + ' events: wall':<44}{watching['wall_s']:>13.3f}s")
    print(f"{'  events delivered per second':<44}{watching['events_per_s']:>14,.0f}")
    print(f"{'  writes (DevCluster.load) took':<44}{watching['write_s']:>13.3f}s")
    print(f"{'same, replayed from history: wall':<44}{replaying['wall_s']:>13.3f}s")
    print(f"{'  events delivered per second':<44}{replaying['events_per_s']:>14,.0f}")
    result = {"benchmark": "devcluster", "quick": args.quick, "list": listing, "watch": watching,
              "watch_replay": replaying}
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "devcluster.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
