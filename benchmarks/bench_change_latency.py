"""Change latency: from an Ingress change in the API to NGINX serving it, with thousands of Ingresses loaded.

The real controller process (real NGINX) runs against a devcluster in a child process holding N
Ingresses of the plain shape (each with its Service and EndpointSlice), plus one probe Ingress whose
Services point at two real HTTP backends on 127.0.0.1 ("v1" and "v2"). Each change alternates between
- adding a path `/p<i>` routed to the backend `/` does not use (before the change `/p<i>` reaches the
  other one through `/`), and
- switching the backend of `/` between v1 and v2;
the time is measured from just before the API update until requests through NGINX (polled every 5 ms over
real HTTP) reach the new backend, counted from the first request of a run of answers that all do for
`--settle` s (while a reload finishes, the previous workers still answer for a moment; the first new answer
is reported too). Reported: min/p50/p90/p99/max over `--changes` changes, the NGINX reload time from the
controller's log and `nginx -t` of the generated configuration (the floor any reload of it pays), for each
of `--sizes` in one run, so the cost of scale is read in one run; the issue's goals beside them. Numbers are
reported, not asserted. Writes bench_change_latency.json and bench_change_latency.png (p50 and p99 against
N) to --out.
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import (
    ClusterProcess,
    ControllerProcess,
    base_objects,
    endpoint_slice,
    ingress,
    machine,
    nginx_t_seconds,
    plot_against_n,
    print_table,
    service,
    write_json,
)

from ingressctl.demo.backend import Backend
from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.resource import INGRESSES

PROBE_NS, PROBE_HOST = "probe", "probe.example.com"


def get_backend(port: int, path: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path, headers={"Host": PROBE_HOST, "Connection": "close"})
        r = conn.getresponse()
        r.read()
        return r.getheader("X-Backend") or f"HTTP {r.status}"
    except OSError as e:
        return f"error {e}"
    finally:
        conn.close()


def wait_backend(port: int, path: str, backend: str, timeout: float,
                 settle: float = 0.0) -> tuple[float, float]:
    """Poll until `path` reaches `backend`. Returns the monotonic times it first did and from which on every
    request did for `settle` seconds: during a reload the previous NGINX workers still answer for a moment,
    so the first new answer is not yet the end of the change."""
    end = time.monotonic() + timeout
    last, first, streak = "", 0.0, 0.0
    while time.monotonic() < end:
        t = time.monotonic()
        last = get_backend(port, path)
        if last == backend:
            first = first or t
            streak = streak or t
            if t - streak >= settle:
                return first, streak
        else:
            streak = 0.0
        time.sleep(0.005)
    raise TimeoutError(f"{path} did not reach {backend} within {timeout}s (last: {last})")


def probe_objects(v1: Backend, v2: Backend) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PROBE_NS}},
        service(PROBE_NS, "v1"), endpoint_slice(PROBE_NS, "v1", "127.0.0.1", v1.port),
        service(PROBE_NS, "v2"), endpoint_slice(PROBE_NS, "v2", "127.0.0.1", v2.port),
        ingress(PROBE_NS, "probe", PROBE_HOST, [("/", "v1")]),
    ]


def measure(size: int, changes: int, args: argparse.Namespace, workdir: str) -> dict[str, Any]:
    v1, v2 = Backend("v1").start(), Backend("v2").start()
    cluster = ClusterProcess(workdir)
    c: ControllerProcess | None = None
    client: KubeClient | None = None
    try:
        cluster.load(base_objects("10.0.0.1"))
        info = cluster.load_shape("plain", n=size, namespaces=args.namespaces, tls_share=args.tls_share,
                                  key_type="ec", port=v1.port)
        cluster.load(probe_objects(v1, v2))
        if args.latency:
            cluster.set_latency(args.latency)
        c = ControllerProcess(cluster.kubeconfig, workdir=workdir,
                              extra=[f"--nginx-binary={args.nginx_binary}", *args.controller_args])
        c.start()
        ready = c.wait_ready(1800)
        wait_backend(c.http_port, "/", "v1", 60, settle=0.5)
        client = KubeClient.from_kubeconfig(cluster.kubeconfig)
        paths: list[tuple[str, str]] = [("/", "v1")]
        samples: list[float] = []
        first_samples: list[float] = []
        for i in range(changes):
            if i % 2 == 0:
                # A new path to the backend `/` does NOT serve, so that only the new config can answer.
                other = "v2" if paths[0][1] == "v1" else "v1"
                paths.append((f"/p{i}", other))
                check, want = f"/p{i}", other
            else:
                now = paths[0][1]
                paths[0] = ("/", "v2" if now == "v1" else "v1")
                check, want = "/", paths[0][1]
            body = client.get(INGRESSES, PROBE_NS, "probe")
            body["spec"] = ingress(PROBE_NS, "probe", PROBE_HOST, paths)["spec"]
            t0 = time.monotonic()
            client.update(INGRESSES, PROBE_NS, "probe", body)
            first, steady = wait_backend(c.http_port, check, want, args.change_timeout, settle=args.settle)
            first_samples.append(first - t0)
            samples.append(steady - t0)
        reloads = [e["ms"] for e in c.log_events() if e.get("event") == "nginx reloaded" and "ms" in e]
        nginx_t, _ = nginx_t_seconds(c.main_config_path, args.nginx_binary)
        return {"nginx_t_s": nginx_t, "size": size, "objects": info["kinds"], "changes": changes,
                "ready_s": ready,
                "latency_s": samples, "first_answer_latency_s": first_samples, "reloads": len(reloads),
                "startup_reload_ms": reloads[0] if reloads else None,
                "change_reload_ms_median": statistics.median(reloads[1:]) if len(reloads) > 1 else None,
                "peak_rss_bytes": c.peak_rss()}
    finally:
        if client is not None:
            client.close()
        if c is not None:
            c.stop()
            c.cleanup()
        cluster.close()
        v1.stop()
        v2.stop()


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[k]


GOALS_MS = {"p50 at 5,000": (5000, "p50", 2000.0), "p99 at 5,000": (5000, "p99", 4000.0),
            "p50 at 100": (100, "p50", 150.0)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None, help="directory for bench_change_latency.json and .png")
    p.add_argument("--quick", action="store_true", help="50 and 500 Ingresses, 6 changes")
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=None,
                   help="comma-separated Ingress counts (default 100,1000,5000)")
    p.add_argument("--changes", type=int, default=None,
                   help="changes measured per size (default 20: each costs a reload of the whole config)")
    p.add_argument("--namespaces", type=int, default=150)
    p.add_argument("--tls-share", type=float, default=0.5)
    p.add_argument("--latency", type=float, default=0.0, help="API latency (ms) added to every request")
    p.add_argument("--change-timeout", type=float, default=300.0)
    p.add_argument("--settle", type=float, default=0.5,
                   help="a change counts as served once every request gets it for this long (s)")
    p.add_argument("--nginx-binary", default="nginx", help="the NGINX the controller runs (default nginx)")
    p.add_argument("--controller-args", nargs="*", default=[], help="extra flags for the controller")
    args = p.parse_args(argv)
    sizes = sorted(args.sizes or ([50, 500] if args.quick else [100, 1000, 5000]))
    changes = args.changes or (6 if args.quick else 20)
    workdir = tempfile.mkdtemp(prefix="bench-change-", dir="/tmp")
    print(f"change latency: {changes} changes with {', '.join(f'{n:,}' for n in sizes)} Ingresses loaded "
          f"(API latency {args.latency:g} ms)", flush=True)
    results = []
    for n in sizes:
        t0 = time.monotonic()
        r = measure(n, changes, args, workdir)
        r["seconds"] = time.monotonic() - t0
        results.append(r)
        print(f"   {n:,} Ingresses: p50 {statistics.median(r['latency_s']) * 1000:.0f} ms "
              f"(took {r['seconds']:.0f} s)", flush=True)
    rows = []
    for r in results:
        lat = r["latency_s"]
        r["summary_ms"] = {k: round(v * 1000, 1) for k, v in (
            ("min", min(lat)), ("p50", pct(lat, 50)), ("p90", pct(lat, 90)), ("p99", pct(lat, 99)),
            ("max", max(lat)))}
        s = r["summary_ms"]
        first_p50 = round(pct(r["first_answer_latency_s"], 50) * 1000, 1)
        r["first_answer_p50_ms"] = first_p50
        rows.append([f"{r['size']:,} Ingresses", r["changes"], s["min"], s["p50"], s["p90"], s["p99"],
                     s["max"], first_p50, r["change_reload_ms_median"], f"{r['nginx_t_s']:.2f}",
                     r["reloads"]])
    print()
    print_table(["cluster", "changes", "min ms", "p50 ms", "p90 ms", "p99 ms", "max ms",
                 "first answer p50 ms", "NGINX reload ms (median)", "nginx -t s", "reloads"], rows)
    ratio = results[-1]["summary_ms"]["p50"] / max(results[0]["summary_ms"]["p50"], 1e-9)
    print(f"\np50 at {sizes[-1]:,} / p50 at {sizes[0]:,}: {ratio:.1f}x (reloading a bigger NGINX config "
          "dominates)")
    by_size = {r["size"]: r for r in results}
    goal_rows = []
    for name, (n, stat, target) in GOALS_MS.items():
        r = by_size.get(n)
        v = r["summary_ms"][stat] if r else None
        goal_rows.append([f"change live, {name}", f"{v:.0f} ms" if v is not None else "-", f"< {target:g} ms",
                          "n/a" if v is None else "met" if v < target else "MISSED"])
    print()
    print_table(["goal", "measured", "target", "verdict"], goal_rows)
    png = None
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        png = plot_against_n(
            os.path.join(args.out, "bench_change_latency.png"), "One Ingress change: API update -> served",
            "seconds",
            {"p50": [(r["size"], r["summary_ms"]["p50"] / 1000) for r in results],
             "p99": [(r["size"], r["summary_ms"]["p99"] / 1000) for r in results],
             "nginx -t of the same config": [(r["size"], r["nginx_t_s"]) for r in results]},
            goals={"p50 goal at 5,000 (2 s)": 2.0, "p99 goal at 5,000 (4 s)": 4.0})
    path = write_json(args.out, "bench_change_latency.json",
                      {"meta": {"machine": machine(), "args": vars(args)}, "results": results,
                       "goals": goal_rows})
    if path:
        print(f"wrote {path}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
