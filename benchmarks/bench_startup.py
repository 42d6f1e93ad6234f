"""Start-up at scale: the real controller process against a devcluster holding thousands of Ingresses.

For each case a fresh `python -m ingressctl` (real NGINX, leader election on, `--report-ingress-status`, the
ConfigMap's external-status-address set to a new value so that every Ingress's status must be written) starts
against a devcluster running in a child process, with L ms of latency added to every API request. Measured:

- sync:     informers started -> caches synced (the controller's log);
- ready:    process spawned -> `/nginx-ready` 200 (wall clock: interpreter start, NGINX start, lists, the
            drain, one host resolution, render, the NGINX reload); `internal` is informers started -> ready;
- reloads:  the config version NGINX serves at ready and at the end (= successful reloads);
- status:   ready -> every Ingress's status written (devcluster's count of `update ingresses/status`), the
            flush rate (writes per second after ready) and its concurrency (devcluster's high-water mark of
            in-flight status updates);
- RSS:      the controller's peak RSS (VmHWM of the Python process; NGINX not included).
- CPU:      user and system CPU seconds of the controller up to ready, its reaped children (the render and
            Secret-writer processes) included, NGINX not; the system share is where a filesystem slow to
            create files shows.

Shapes: plain (N Ingresses over 150 namespaces, each with its Service and EndpointSlice, `--tls-share` of them
with a TLS Secret) for N in `--sizes`, and NIC issue #9657's mergeable shape (150 namespaces x 5 masters x 10
minions), and the same hosts and paths as ingress-nginx users write them (5 x 10 Ingresses of an ingress-nginx
class per namespace, one path each, sharing each host's server; `--ingress-nginx-compat`). The pre-5.5 path
(`--legacy-startup`: per-item host rebuild, serial status writes before readiness) runs in the same run at
`--legacy-sizes` as the baseline. One extra case puts `--status-path-latency` ms on
status writes only: readiness must not move.

The annotated shapes (`--annotated-size` Ingresses, default 10,000, at the goal latency): the plain shape with
half of its Ingresses carrying five ingress-nginx annotations (proxy-body-size, ssl-redirect,
proxy-read-timeout, whitelist-source-range, limit-rps) served with `--ingress-nginx-compat`, beside the same
shape with five nginx.org annotations (the baseline), each in its own devcluster, `--annotated-repeats` runs
each, alternating. Their medians are compared: measured / baseline / ratio / verdict against 1.05 (the
ingress-nginx compatibility's "no start-up regression").

The devcluster runs in its own process so its CPU does not share the controller's GIL, but on a 2-core machine
both still share the machine (and NGINX's reload uses it too). `--files-dir` puts the controllers' conf and
run dirs on another filesystem (e.g. a tmpfs, as an emptyDir with medium Memory): on an ext4 without a
journal, creating a file where many files were deleted in the last minutes costs the kernel up to ~0.6 ms
(it skips the recently freed inodes one by one, as long as their inode table blocks are dirty), which the
controller's 15,000 files at 10,000 Ingresses feel: that run's system CPU then grows by seconds. So the runs'
files are removed at the end of the benchmark, not between runs. Numbers are reported, not asserted; the goals
are printed next to them. Writes bench_startup.json and bench_startup.png (time to ready against N) to --out.
"""

from __future__ import annotations

import argparse
import contextlib
import os
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
    config_map,
    machine,
    mb,
    nginx_t_seconds,
    plot_against_n,
    print_table,
    process_cpu_split,
    write_json,
)

GOALS = {
    "ready_10k_l50_s": 10.0,
    "own_work_10k_s": 2.5,
    "ready_mergeable_l50_s": 10.0,
    "linearity_10k_over_1k": 12.0,
    "legacy_slowdown_5k": 10.0,
    "flush_writes_per_s_l50": 160.0,
    "rss_10k_mb": 250.0,
    "status_concurrency": 10,
    "annotated_ratio": 1.05,
}
COMPAT = ["--ingress-nginx-compat"]
ANNOTATED_METRICS = (("ready_s", "time to ready (s)"), ("ready_internal_s", "informers -> ready (s)"),
                     ("own_work_s", "controller's own work (s)"), ("sync_s", "caches synced (s)"),
                     ("cpu_user_at_ready_s", "user CPU to ready (s)"),
                     ("peak_rss_at_ready_bytes", "peak RSS at ready (MB)"))


class Runner:
    def __init__(self, args: argparse.Namespace, workdir: str, files_dir: str | None = None) -> None:
        self.args = args
        self.workdir = workdir
        self.files_dir = files_dir or workdir  # where each controller's conf and run dirs are created
        self.results: list[dict[str, Any]] = []
        self.run_index = 0
        # Each run's files are removed at the end, not between runs: on an ext4 without a journal the next
        # run would pay for the deletes (see the module docstring).
        self.finished: list[ControllerProcess] = []
        self.t0 = time.monotonic()

    def case(self, cluster: ClusterProcess, *, shape: str, n: int, objects: dict[str, int], latency: float,
             legacy: bool = False, status_latency: float = 0, wait_status: bool = True,
             extra: list[str] | None = None) -> dict[str, Any]:
        """One controller start; returns the measurements."""
        self.run_index += 1
        address = f"10.{self.run_index // 250}.{self.run_index % 250 + 1}.1"
        cluster.call("reset_faults")
        cluster.load([config_map(address)])
        cluster.call("reset_stats")
        if latency:
            cluster.set_latency(latency)
        if status_latency:
            cluster.set_latency(status_latency, "update", "ingresses/status")
        expected = objects.get("Ingress", 0)
        profile = None
        if self.args.profile:
            os.makedirs(self.args.profile, exist_ok=True)
            profile = os.path.join(self.args.profile, f"{shape.replace(' ', '-')}-{n}-L{latency:g}"
                                   f"{'-legacy' if legacy else ''}-{self.run_index}"
                                   f"{f'-s{status_latency:g}' if status_latency else ''}.txt")
        c = ControllerProcess(cluster.kubeconfig, legacy=legacy, workdir=self.files_dir,
                              extra=[f"--nginx-binary={self.args.nginx_binary}", *self.args.controller_args,
                                     *(extra or [])],
                              profile=profile)
        label = f"{shape} n={n} L={latency:g}ms{' legacy' if legacy else ''}" + (
            f" status+{status_latency:g}ms" if status_latency else "")
        print(f"-- {label} ...", flush=True)
        row: dict[str, Any] = {"shape": shape, "n": n, "objects": objects, "latency_ms": latency,
                               "mode": "legacy" if legacy else "5.5", "status_latency_ms": status_latency,
                               "expected_status_writes": expected}
        try:
            c.start()
            row["ready_s"] = c.wait_ready(self.args.ready_timeout)
            row["peak_rss_at_ready_bytes"] = c.peak_rss()
            # The kernel's share (system CPU) shows a filesystem slow to create files: see the docstring.
            row["cpu_user_at_ready_s"], row["cpu_system_at_ready_s"] = process_cpu_split(c.pid)
            row["reloads_at_ready"] = c.config_version()
            row["status_writes_at_ready"] = int(cluster.call("status_updates"))
            if wait_status and expected:
                end = time.monotonic() + self.args.status_timeout
                done = None
                while time.monotonic() < end:
                    if int(cluster.call("status_updates")) >= expected:
                        done = time.monotonic()
                        break
                    if c.proc is not None and c.proc.poll() is not None:
                        raise RuntimeError("the controller exited")
                    if c.find_log("start-up status flush finished") is not None:
                        row["status_incomplete"] = True      # e.g. a failed reload: nothing to write
                        break
                    time.sleep(0.05)
                if done is not None:
                    row["status_done_after_ready_s"] = done - c.ready_at
                    writes_after = expected - row["status_writes_at_ready"]
                    dt = max(done - c.ready_at, 1e-9)
                    row["flush_writes_per_s"] = writes_after / dt if writes_after > 0 else None
                else:
                    row["status_done_after_ready_s"] = None
            stats = cluster.call("stats")
            row["status_writes"] = stats["status_updates"]
            row["status_max_in_flight"] = stats["status_max_in_flight"]
            row["api_calls"] = stats["counts"]
            row["reloads_at_end"] = c.config_version()
            row["peak_rss_bytes"] = c.peak_rss()
            synced = c.find_log("informer caches synced")
            ready = c.find_log("controller ready")
            row["sync_s"] = synced.get("seconds") if synced else None
            row["ready_internal_s"] = ready.get("seconds") if ready else None
            row["phases"] = (ready or {}).get("phases")
            ahead = c.find_log("rendered ahead")
            row["render_processes"] = ahead.get("processes") if ahead else 1
            row["render_child_private_mb"] = ahead.get("child_private_mb") if ahead else None
            # How much earlier than the sync thread the render children finished (~0: shares well sized).
            row["render_children_ahead_s"] = ahead.get("children_ahead_seconds") if ahead else None
            flush = c.find_log("start-up status flush finished")
            row["flush_log_s"] = flush.get("seconds") if flush else None
            reload = c.find_log("nginx reloaded")
            row["reload_s"] = reload["ms"] / 1000 if reload and reload.get("ms") is not None else None
            if row["reload_s"] is not None and row.get("ready_internal_s") is not None:
                row["ready_without_reload_s"] = row["ready_internal_s"] - row["reload_s"]
            failed = c.find_log("nginx reload failed")
            if failed:
                row["reload_error"] = str(failed.get("error"))[:300]
            phases = row["phases"] or {}
            if "startup_reload" in phases:
                # The controller's own work: the Secrets' pre-sync, the drain (model), host resolution,
                # render and files.
                row["own_work_s"] = (phases.get("pre_sync", 0.0) + phases.get("drain", 0.0)
                                     + phases.get("resolve_hosts", 0.0)
                                     + phases["render_and_reload"] - phases["startup_reload"])
            # The NGINX floor of this very configuration: what any reload of it costs.
            row["nginx_t_s"], row["nginx_t_cpu_s"] = nginx_t_seconds(c.main_config_path,
                                                                     self.args.nginx_binary)
            with open(c.main_config_path) as f:
                row["certificates_per_handshake"] = "$ingressctl_certificate" in f.read()
        except Exception as e:
            row["error"] = str(e)[:2000]
            print(f"   FAILED: {e}", flush=True)
        finally:
            c.stop()
            self.finished.append(c)
            cluster.call("reset_faults")
        self.results.append(row)
        print("   " + summary(row), flush=True)
        return row

    def cleanup(self) -> None:
        """Remove the finished runs' files (kept with --keep)."""
        if not self.args.keep:
            for c in self.finished:
                c.cleanup()
        self.finished.clear()


def summary(r: dict[str, Any]) -> str:
    def f(v: Any, fmt: str = ".2f") -> str:
        return "-" if v is None else format(v, fmt)

    reloads = f"{r.get('reloads_at_ready', '-')}/{r.get('reloads_at_end', '-')}"
    rate = f(r.get("flush_writes_per_s"), ".0f")
    return (f"sync {f(r.get('sync_s'))} s, ready {f(r.get('ready_s'))} s (internal "
            f"{f(r.get('ready_internal_s'))}, of which NGINX reload {f(r.get('reload_s'))}; controller's own "
            f"work {f(r.get('own_work_s'))}; nginx -t of the same config {f(r.get('nginx_t_s'))} s), CPU to "
            f"ready {f(r.get('cpu_user_at_ready_s'))} s user, {f(r.get('cpu_system_at_ready_s'))} s system, "
            f"reloads {reloads}, "
            f"status done +{f(r.get('status_done_after_ready_s'))} s ({rate}/s, max in flight "
            f"{r.get('status_max_in_flight', '-')}), peak RSS {mb(r.get('peak_rss_at_ready_bytes') or 0)} "
            f"MB at ready, {mb(r.get('peak_rss_bytes') or 0)} MB at the end; rendered by "
            f"{r.get('render_processes', 1)} processes"
            + (f" (a child's own memory {r['render_child_private_mb']} MB, for the render only; the children"
               f" done {f(r.get('render_children_ahead_s'))} s before the sync thread)"
               if r.get("render_child_private_mb") else ""))


def find(results: list[dict[str, Any]], **kw: Any) -> dict[str, Any] | None:
    for r in results:
        if all(r.get(k) == v for k, v in kw.items()) and "error" not in r:
            return r
    return None


def goals(results: list[dict[str, Any]], args: argparse.Namespace) -> list[list[Any]]:
    """Each goal: [goal, measured, target, verdict]."""
    out: list[list[Any]] = []
    big = max(args.sizes)
    small = min(args.sizes)
    gl = args.goal_latency

    def verdict(ok: bool | None) -> str:
        return "n/a" if ok is None else ("met" if ok else "MISSED")

    r = find(results, shape="plain", n=big, latency_ms=gl, mode="5.5", status_latency_ms=0)
    v = r["ready_s"] if r else None
    target = GOALS["ready_10k_l50_s"]
    out.append([f"time to ready, {big:,} plain, L={gl:g}ms", f"{v:.2f} s" if v else "-",
                f"< {target:g} s", verdict(None if v is None else v < target)])
    v = r.get("own_work_s") if r else None
    out.append([f"controller's own work (pre-sync, drain, hosts, render, files), {big:,} plain",
                f"{v:.2f} s" if v is not None else "-", f"< {GOALS['own_work_10k_s']:g} s",
                verdict(None if v is None else v < GOALS["own_work_10k_s"])])
    if r and r.get("nginx_t_s") is not None:
        where = "at handshakes" if r.get("certificates_per_handshake") else "at reloads"
        out.append([f"NGINX floor: nginx -t of that configuration (certificates loaded {where})",
                    f"{r['nginx_t_s']:.2f} s (CPU {r['nginx_t_cpu_s']:.2f} s)", "(reported)", ""])
    if r and r.get("cpu_system_at_ready_s") is not None:
        out.append(["the controller's CPU up to ready (its render and Secret-writer children included)",
                    f"{r['cpu_user_at_ready_s']:.2f} s user, {r['cpu_system_at_ready_s']:.2f} s system",
                    "(reported)", ""])
    v = r.get("ready_without_reload_s") if r else None
    out.append([f"time to ready without the NGINX reload, {big:,} plain, L={gl:g}ms",
                f"{v:.2f} s" if v else "-",
                "<= 3 s (perf. anchors G1)", verdict(None if v is None else v <= 3.0)])
    rm = find(results, shape="mergeable", latency_ms=gl, mode="5.5")
    v = rm["ready_s"] if rm else None
    out.append([f"time to ready, #9657 shape ({rm['n'] if rm else '-'} Ingresses), L={gl:g}ms",
                f"{v:.2f} s" if v else "pending" if args.mergeable and not rm else "-",
                f"< {GOALS['ready_mergeable_l50_s']:g} s",
                verdict(None if v is None else v < GOALS["ready_mergeable_l50_s"])])
    sh = find(results, shape="shared hosts", latency_ms=gl, mode="5.5")
    if sh and sh.get("ready_s"):
        out.append([f"time to ready, the #9657 layout as shared ingress-nginx hosts ({sh['n']} Ingresses), "
                    f"L={gl:g}ms", f"{sh['ready_s']:.2f} s", f"< {GOALS['ready_mergeable_l50_s']:g} s",
                    verdict(sh["ready_s"] < GOALS["ready_mergeable_l50_s"])])
    rs = find(results, shape="plain", n=small, latency_ms=gl, mode="5.5", status_latency_ms=0)
    if r and rs:
        for key, name in (("ready_s", "wall"), ("ready_internal_s", "internal")):
            if r.get(key) and rs.get(key):
                ratio = r[key] / rs[key]
                out.append([f"linearity T({big:,})/T({small:,}) ({name}), L={gl:g}ms", f"{ratio:.1f}x",
                            f"<= {GOALS['linearity_10k_over_1k']:g}x (N ratio {big / small:g})",
                            verdict(ratio <= GOALS["linearity_10k_over_1k"] * (big / small) / 10)])
    for n in args.legacy_sizes:
        new = find(results, shape="plain", n=n, latency_ms=args.legacy_latency, mode="5.5",
                   status_latency_ms=0)
        old = find(results, shape="plain", n=n, latency_ms=args.legacy_latency, mode="legacy")
        if new and old:
            ratio = old["ready_s"] / new["ready_s"]
            out.append([f"pre-5.5 / 5.5 time to ready, {n:,}, L={args.legacy_latency:g}ms", f"{ratio:.1f}x",
                        f">= {GOALS['legacy_slowdown_5k']:g}x" if n >= 5000 else "(reported)",
                        verdict(ratio >= GOALS["legacy_slowdown_5k"]) if n >= 5000 else ""])
    rates = [x for x in results if x["latency_ms"] == gl and x.get("flush_writes_per_s")
             and x["mode"] == "5.5" and not x["status_latency_ms"] and x["n"] >= 1000]
    if rates:
        worst = min(rates, key=lambda x: x["flush_writes_per_s"])
        out.append([f"status flush rate, L={gl:g}ms (worst case: {worst['shape']} {worst['n']:,})",
                    f"{worst['flush_writes_per_s']:.0f}/s", f">= {GOALS['flush_writes_per_s_l50']:g}/s",
                    verdict(worst["flush_writes_per_s"] >= GOALS["flush_writes_per_s_l50"])])
    conc = [x["status_max_in_flight"] for x in results if x.get("status_max_in_flight") is not None
            and x["mode"] == "5.5" and x["latency_ms"] > 0]
    if conc:
        out.append(["status write concurrency (max in flight, L>0)", f"{max(conc)}",
                    f"<= {GOALS['status_concurrency']}", verdict(max(conc) <= GOALS["status_concurrency"])])
    rss = [x for x in results if x["shape"] == "plain" and x["n"] == big and x.get("peak_rss_bytes")]
    if rss:
        peak = max(x["peak_rss_bytes"] for x in rss)
        out.append([f"peak RSS of the controller, {big:,} plain", f"{mb(peak)} MB",
                    f"< {GOALS['rss_10k_mb']:g} MB", verdict(peak / 1e6 < GOALS["rss_10k_mb"])])
        child = max((x.get("render_child_private_mb") or 0 for x in rss), default=0)
        if child:
            out.append([f"+ a render child's own memory while it runs (~1 s), {big:,} plain",
                        f"{child:.0f} MB", "(reported)", ""])
    sp = find(results, shape="plain", mode="5.5", status_latency_ms=args.status_path_latency)
    if sp and args.status_path_latency:
        base = find(results, shape="plain", n=sp["n"], latency_ms=sp["latency_ms"], mode="5.5",
                    status_latency_ms=0)
        if base:
            out.append([f"time to ready with +{args.status_path_latency:g}ms on status writes, {sp['n']:,}",
                        f"{sp['ready_s']:.2f} s (vs {base['ready_s']:.2f} s)", "unchanged",
                        verdict(sp["ready_s"] < base["ready_s"] * 1.5 + 1.0)])
    one = [x.get("reloads_at_ready") for x in results if "error" not in x]
    if one:
        out.append(["reloads at start-up (every case)", ",".join(sorted({str(x) for x in one})), "1",
                    verdict(all(x == 1 for x in one))])
    return out


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def annotated_comparison(results: list[dict[str, Any]], limit: float,
                         baseline_shape: str = "annotated nginx.org") -> list[list[Any]]:
    """[metric, measured (ingress-nginx annotations, median), baseline (median), ratio, verdict against
    `limit`] for each of `ANNOTATED_METRICS` both shapes have. The baseline is the nginx.org-annotated shape;
    against another shape (the plain one, without annotations, at the same size and latency) the verdict is
    "(reported)"."""
    rows: list[list[Any]] = []
    measured_runs = [r for r in results if r["shape"] == "annotated ingress-nginx" and "error" not in r]
    if not measured_runs:
        return rows
    first = measured_runs[0]
    baseline_runs = [r for r in results if r["shape"] == baseline_shape and "error" not in r
                     and r["n"] == first["n"] and r["latency_ms"] == first["latency_ms"]
                     and not r["status_latency_ms"] and r["mode"] == "5.5"]
    for key, name in ANNOTATED_METRICS:
        measured = [r[key] for r in measured_runs if r.get(key) is not None]
        baseline = [r[key] for r in baseline_runs if r.get(key) is not None]
        if not measured or not baseline:
            continue
        m, b = _median(measured), _median(baseline)
        scale = 1e6 if key.endswith("_bytes") else 1.0
        ratio = m / b if b else float("inf")
        verdict = ("met" if ratio <= limit else "MISSED") if baseline_shape.startswith("annotated") \
            else "(reported)"
        rows.append([f"{name}, n={len(measured)}/{len(baseline)}", f"{m / scale:.2f}", f"{b / scale:.2f}",
                     f"{ratio:.3f}", verdict])
    return rows


def plot(results: list[dict[str, Any]], path: str) -> str | None:
    series: dict[str, list[tuple[int, float]]] = {}
    top = max((x["latency_ms"] for x in results), default=0.0)
    for r in results:
        if "error" in r or r["shape"] != "plain" or r["status_latency_ms"]:
            continue
        mode = "pre-5.5 (legacy)" if r["mode"] == "legacy" else "ingressctl (5.5 start-up)"
        name = f"{mode}, L={r['latency_ms']:g} ms"
        series.setdefault(name, []).append((r["n"], r["ready_s"]))
        if r["mode"] == "5.5" and r.get("ready_without_reload_s"):
            series.setdefault(f"ingressctl without the NGINX reload, L={r['latency_ms']:g} ms", []).append(
                (r["n"], r["ready_without_reload_s"]))
        if r["mode"] == "5.5" and r.get("nginx_t_s") and r["latency_ms"] == top:
            series.setdefault("nginx -t of the same configuration", []).append((r["n"], r["nginx_t_s"]))
    for r in results:
        if r["shape"] == "mergeable" and "error" not in r:
            series[f"#9657 mergeable shape, L={r['latency_ms']:g} ms"] = [(r["n"], r["ready_s"])]

    def style(name: str) -> str:
        return ("^" if "mergeable" in name else "s--" if "legacy" in name else "x:" if "without" in name
                else "d-." if "nginx -t" in name else "o-")

    return plot_against_n(path, "Start-up time against cluster size",
                          "time to ready (s): process start -> /nginx-ready 200", series,
                          goals={"goal at 10,000 (10 s)": 10.0}, log_y=True, style=style)


def run_annotated(runner: Runner, workdir: str, args: argparse.Namespace) -> None:
    """The two annotated shapes, each in its own devcluster (both loaded first), run alternately."""
    from common import base_objects

    n = args.annotated_size
    clusters: dict[str, tuple[ClusterProcess, dict[str, int]]] = {}
    try:
        for family in ("nginx.org", "ingress-nginx"):
            sub = os.path.join(workdir, f"annotated-{family}")
            os.makedirs(sub, exist_ok=True)
            cluster = ClusterProcess(sub)
            clusters[family] = (cluster, {})
            cluster.load(base_objects("10.0.0.1"))
            info = cluster.load_shape("annotated", n=n, namespaces=args.namespaces, tls_share=args.tls_share,
                                      key_type=args.key_type, family=family)
            clusters[family] = (cluster, info["kinds"])
            print(f"== annotated shape ({family}), {n:,} Ingresses, half with five annotations: "
                  f"{info['kinds']} (loaded in {info['load_seconds']:.1f} s)", flush=True)
        order = list(clusters)
        for i in range(args.annotated_repeats):
            for family in order if i % 2 == 0 else order[::-1]:
                cluster, kinds = clusters[family]
                runner.case(cluster, shape=f"annotated {family}", n=n, objects=kinds,
                            latency=args.goal_latency, wait_status=False,
                            extra=COMPAT if family == "ingress-nginx" else [])
    finally:
        for cluster, _ in clusters.values():
            cluster.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None, help="directory for bench_startup.json and bench_startup.png")
    p.add_argument("--quick", action="store_true", help="small sizes, two latencies (a couple of minutes)")
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=None,
                   help="comma-separated Ingress counts (default 1000,5000,10000)")
    p.add_argument("--latencies", type=lambda s: [float(x) for x in s.split(",")], default=None,
                   help="comma-separated API latencies in ms (default 0,10,50)")
    p.add_argument("--legacy-sizes", type=lambda s: [int(x) for x in s.split(",") if x], default=None,
                   help="sizes to run the pre-5.5 path at (default 1000,5000; empty to skip)")
    p.add_argument("--legacy-latency", type=float, default=50.0, help="latency for the pre-5.5 runs (ms)")
    p.add_argument("--goal-latency", type=float, default=50.0, help="latency the goals are read at (ms)")
    p.add_argument("--namespaces", type=int, default=150)
    p.add_argument("--tls-share", type=float, default=0.5, help="share of Ingresses with a TLS Secret")
    p.add_argument("--mergeable", type=int, default=None,
                   help="namespaces of the #9657 shape (5 masters x 10 minions each; default 150, 0 to skip)")
    p.add_argument("--mergeable-latencies", type=lambda s: [float(x) for x in s.split(",")], default=None,
                   help="latencies for the mergeable shape (default: the goal latency)")
    p.add_argument("--status-path-latency", type=float, default=500.0,
                   help="extra case: this much latency on status writes only (0 to skip)")
    p.add_argument("--status-path-size", type=int, default=None, help="size of that case (default 5000)")
    p.add_argument("--annotated-size", type=int, default=10000,
                   help="Ingresses of the annotated shapes (half with five ingress-nginx annotations against "
                        "half with five nginx.org ones; default 10000, 0 to skip)")
    p.add_argument("--annotated-repeats", type=int, default=3,
                   help="runs of each annotated shape, alternating; their medians are compared (default 3)")
    p.add_argument("--ready-timeout", type=float, default=900.0)
    p.add_argument("--status-timeout", type=float, default=600.0)
    p.add_argument("--keep", action="store_true", help="keep the controllers' files and logs")
    p.add_argument("--profile", metavar="DIR", help="profile each controller with py-spy into DIR")
    p.add_argument("--files-dir", metavar="DIR",
                   help="create the controllers' conf and run dirs under DIR (default: the benchmark's temp "
                        "dir under /tmp), e.g. /dev/shm to leave the filesystem's cost out")
    p.add_argument("--key-type", choices=("rsa", "ec"), default="ec",
                   help="key of the TLS Secrets' certificate: ECDSA P-256 (default) or RSA 2048 "
                        "(validating an RSA key costs ~60 ms each in the controller today)")
    p.add_argument("--controller-args", nargs="*", default=[], help="extra flags for the controller")
    p.add_argument("--nginx-binary", default="nginx",
                   help="the NGINX the controllers run and `nginx -t` uses (default nginx)")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes = args.sizes or [200, 1000]
        args.latencies = args.latencies or [0.0, 50.0]
        args.legacy_sizes = args.legacy_sizes if args.legacy_sizes is not None else [200, 1000]
        args.mergeable = args.mergeable if args.mergeable is not None else 15
        args.status_path_size = args.status_path_size or 1000
        args.annotated_size = min(args.annotated_size, 1000)
    args.sizes = sorted(args.sizes or [1000, 5000, 10000])
    args.latencies = args.latencies or [0.0, 10.0, 50.0]
    args.legacy_sizes = args.legacy_sizes if args.legacy_sizes is not None else [1000, 5000]
    args.mergeable = 150 if args.mergeable is None else args.mergeable
    args.mergeable_latencies = args.mergeable_latencies or [args.goal_latency]
    args.status_path_size = args.status_path_size or 5000

    workdir = tempfile.mkdtemp(prefix="bench-startup-", dir="/tmp")
    files_dir = tempfile.mkdtemp(prefix="bench-startup-", dir=args.files_dir) if args.files_dir else None
    runner = Runner(args, workdir, files_dir)
    started = time.monotonic()
    meta: dict[str, Any] = {"machine": machine(), "args": {k: v for k, v in vars(args).items()},
                            "notes": ["devcluster runs in a separate process; on 2 cores it shares the "
                                      "machine with the controller and NGINX",
                                      "ready_s is wall time from process spawn to /nginx-ready 200"]}
    print(f"start-up benchmark: sizes {args.sizes}, latencies {args.latencies} ms, legacy at "
          f"{args.legacy_sizes} (L={args.legacy_latency:g} ms), mergeable {args.mergeable} namespaces; "
          f"{os.cpu_count()} CPUs", flush=True)

    # Plain shape: one devcluster, grown size by size (the first N Ingresses of a bigger shape are the same).
    cluster = ClusterProcess(workdir)
    try:
        from common import base_objects

        cluster.load(base_objects("10.0.0.1"))
        for n in args.sizes:
            info = cluster.load_shape("plain", n=n, namespaces=args.namespaces, tls_share=args.tls_share,
                                      key_type=args.key_type)
            kinds = info["kinds"]
            print(f"== plain shape, {n:,} Ingresses: {kinds} (loaded in {info['load_seconds']:.1f} s)",
                  flush=True)
            for lat in args.latencies:
                runner.case(cluster, shape="plain", n=n, objects=kinds, latency=lat)
            if n in args.legacy_sizes:
                runner.case(cluster, shape="plain", n=n, objects=kinds, latency=args.legacy_latency,
                            legacy=True)
            if args.status_path_latency and n == args.status_path_size:
                runner.case(cluster, shape="plain", n=n, objects=kinds, latency=args.goal_latency,
                            status_latency=args.status_path_latency, wait_status=False)
    finally:
        cluster.close()

    if args.annotated_size:
        run_annotated(runner, workdir, args)

    if args.mergeable:
        from ingressctl.configs.configurator import Configurator

        if not hasattr(Configurator, "add_or_update_mergeable_ingress"):
            print("== mergeable shape: PENDING (the Configurator cannot render mergeable Ingresses yet)")
            meta["mergeable"] = "pending"
        else:
            cluster = ClusterProcess(workdir)
            try:
                from common import base_objects

                cluster.load(base_objects("10.0.0.1"))
                info = cluster.load_shape("mergeable", namespaces=args.mergeable, masters=5, minions=10)
                kinds = info["kinds"]
                print(f"== #9657 mergeable shape, {args.mergeable} namespaces: {kinds}", flush=True)
                for lat in args.mergeable_latencies:
                    runner.case(cluster, shape="mergeable", n=kinds["Ingress"], objects=kinds, latency=lat)
            finally:
                cluster.close()
            cluster = ClusterProcess(workdir)  # the same hosts and paths as ingress-nginx's shared hosts
            try:
                cluster.load(base_objects("10.0.0.1"))
                info = cluster.load_shape("shared", namespaces=args.mergeable, hosts=5, paths=10)
                kinds = info["kinds"]
                print(f"== the #9657 layout as shared ingress-nginx hosts, {args.mergeable} namespaces: "
                      f"{kinds}", flush=True)
                for lat in args.mergeable_latencies:
                    runner.case(cluster, shape="shared hosts", n=kinds["Ingress"], objects=kinds, latency=lat,
                                extra=COMPAT)
            finally:
                cluster.close()
    runner.cleanup()

    results = runner.results
    print()
    headers = ["case", "objects", "sync s", "ready s", "internal s", "reload s", "w/o reload s", "own work s",
               "nginx -t s", "system CPU s", "reloads", "status done +s", "writes/s", "max in flight",
               "peak RSS MB"]
    rows = []
    for r in results:
        name = (f"{r['shape']} {r['n']:,} L={r['latency_ms']:g}{' legacy' if r['mode'] == 'legacy' else ''}"
                + (f" status+{r['status_latency_ms']:g}" if r["status_latency_ms"] else ""))
        if "error" in r:
            rows.append([name, "", "ERROR", r["error"][:60], "", "", "", "", "", "", "", "", "", "", ""])
            continue

        def f(v: Any, fmt: str = ".2f") -> str:
            return "-" if v is None else format(v, fmt)

        rows.append([name, sum(r["objects"].values()), f(r.get("sync_s")), f(r.get("ready_s")),
                     f(r.get("ready_internal_s")), f(r.get("reload_s")), f(r.get("ready_without_reload_s")),
                     f(r.get("own_work_s")), f(r.get("nginx_t_s")), f(r.get("cpu_system_at_ready_s")),
                     f"{r.get('reloads_at_ready')}/{r.get('reloads_at_end')}",
                     f(r.get("status_done_after_ready_s")), f(r.get("flush_writes_per_s"), ".0f"),
                     r.get("status_max_in_flight"),
                     f"{mb(r.get('peak_rss_at_ready_bytes') or 0)}/{mb(r.get('peak_rss_bytes') or 0)}"])
    print_table(headers, rows)
    print()
    g = goals(results, args)
    print_table(["goal", "measured", "target", "verdict"], g)
    comparison = annotated_comparison(results, GOALS["annotated_ratio"])
    if comparison:
        print(f"\n{args.annotated_size:,} Ingresses, half with five ingress-nginx annotations "
              "(--ingress-nginx-compat) against half with five nginx.org annotations, medians, "
              f"L={args.goal_latency:g}ms:")
        print_table(["metric", "measured", "baseline", "ratio", f"verdict (<= {GOALS['annotated_ratio']})"],
                    comparison)
    against_plain = annotated_comparison(results, GOALS["annotated_ratio"], "plain")
    if against_plain:
        print("\nThe same against the plain shape of that size (no annotations; the difference is what the "
              "annotations make NGINX do, e.g. a rate-limit zone per Ingress, in either family):")
        print_table(["metric", "measured", "plain", "ratio", "verdict"], against_plain)
    total = time.monotonic() - started
    print(f"\ntotal benchmark time {total / 60:.1f} min")
    meta["total_seconds"] = total
    data = {"meta": meta, "results": results, "goals": [dict(zip(["goal", "measured", "target", "verdict"], x,
                                                                  strict=True)) for x in g],
            "annotated": [dict(zip(["metric", "measured", "baseline", "ratio", "verdict"], x, strict=True))
                          for x in comparison],
            "annotated_against_plain": [dict(zip(["metric", "measured", "plain", "ratio", "verdict"], x,
                                                 strict=True)) for x in against_plain]}
    if files_dir:
        with contextlib.suppress(OSError):
            os.rmdir(files_dir)  # empty unless --keep
    out = args.out or workdir
    path = write_json(out, "bench_startup.json", data)
    png = plot(results, os.path.join(out, "bench_startup.png"))
    print(f"wrote {path}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
