"""Scale: start-up and change latency at 1,000 / 10,000 / 50,000 Ingresses, and a churn of changes under
keep-alive load, with the routes module (plain Ingress hosts as data, changes pushed without reloads) and,
as the baseline in the same run, with `--enable-dynamic-routes=false` (every change a reload).

The real controller (real NGINX, one worker) runs against a devcluster in a child process (`--latency` ms
added to every API request, 50 by default) holding N
Ingresses of the plain shape (500 namespaces, half of them TLS) plus a probe namespace: Services v1, v2, v3
(real backends on 127.0.0.1, in a child process of their own) and two probe Ingresses, one plain and one
TLS. Measured per size and mode:

- ready: process spawn -> /nginx-ready 200, the reloads at ready (must be 1), `nginx -t` of the very
  configuration (wall and CPU), the controller's peak RSS (VmHWM) and NGINX's memory (the summed PSS of its
  master and workers) once ready.
- change latency: from just before the API write until the probe URL answers the new way and has kept
  answering so for `--settle` s (polled every 5 ms; the old answer gone too), for each kind in turn: a path
  added (to another Service), the backend of `/` switched to a Service the Ingress did not use, a host
  added (with a Service of its own) and one removed, an annotation (nginx.org/ssl-redirect of the TLS
  probe: plain HTTP then answers instead of redirecting, and back), a path removed.
- churn (`--churn-size`): one change per `--churn-interval` s for `--churn-seconds` (the same cycle of
  kinds), while `--clients` keep-alive connections send requests that must always answer 200 (stable hosts
  and the probe's `/`, whichever backend it has); failed requests by kind, reloads and pushes, NGINX memory
  sampled every second (start / max / end, and the most NGINX processes), with `worker-shutdown-timeout`
  set (`--worker-shutdown-timeout`) so that a reload's old workers cannot hold long connections for ever.

The goals of the scale issue are printed with measured / target / verdict, each beside its baseline;
bench_scale.json and bench_scale.png (ready time and change latency against N) go to --out.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import (
    CONFIG_MAP,
    CONFIG_NS,
    ClusterProcess,
    ControllerProcess,
    base_objects,
    endpoint_slice,
    ingress,
    machine,
    mb,
    namespace,
    nginx_pss,
    nginx_t_seconds,
    plot_against_n,
    print_table,
    service,
    tls_secret,
    write_json,
)
from scale_load import LoadProcess

from ingressctl.k8s.client import ApiError, KubeClient
from ingressctl.k8s.resource import ENDPOINTSLICES, INGRESSES, SERVICES

PROBE_NS = "probe"
PLAIN, TLS = "probe.example.com", "tlsprobe.example.com"
BACKENDS = ["v1", "v2", "v3", "web"]
KINDS = ["path added", "backend switched", "host added", "annotation", "host removed", "path removed"]
GOALS = {"p50_10k_s": 1.0, "p99_10k_s": 2.0, "p50_50k_s": 2.0, "ready_50k_s": 30.0, "rss_50k_mb": 1000.0,
         "growth": 6.0, "ready_factor": 1.3, "ready_slack_s": 1.0}


def get_label(port: int, host: str, path: str) -> str:
    """What a request answers: the backend's name, `HTTP <status>` otherwise, `error ...` on failure."""
    import http.client

    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        c.request("GET", path, headers={"Host": host, "Connection": "close"})
        r = c.getresponse()
        r.read()
        return r.getheader("X-Backend") or f"HTTP {r.status}"
    except OSError as e:
        return f"error {type(e).__name__}"
    finally:
        c.close()


def wait_live(port: int, host: str, path: str, want: str, t0: float, settle: float, timeout: float) -> float:
    """Seconds from t0 until host+path answers `want` and keeps answering it for `settle` s."""
    end = t0 + timeout
    streak = 0.0
    while time.monotonic() < end:
        t = time.monotonic()
        if get_label(port, host, path) == want:
            streak = streak or t
            if t - streak >= settle:
                return streak - t0
        else:
            streak = 0.0
        time.sleep(0.005)
    raise TimeoutError(f"{host}{path} did not answer {want!r} within {timeout} s")


class Probe:
    """The probe Ingresses and the changes made to them (and to the hosts they add and remove)."""

    seq = 0  # across cases: every added host has a name of its own

    def __init__(self, client: KubeClient, port: int, ports: dict[str, int]) -> None:
        self.client = client
        self.port = port
        self.ports = ports
        self.paths: list[tuple[str, str]] = [("/", "v1")]
        self.extra: list[str] = []  # paths added, removed in turn
        self.hosts: list[int] = []  # hosts added, removed in turn
        self.redirect = True

    def cleanup(self) -> None:
        """Remove the hosts this probe added (the next case starts from the probe objects again)."""
        for m in self.hosts:
            for rt, name in ((INGRESSES, f"h{m}"), (ENDPOINTSLICES, f"h{m}-abcde"), (SERVICES, f"h{m}")):
                with contextlib.suppress(ApiError):
                    self.client.delete(rt, PROBE_NS, name)
        self.hosts.clear()

    @staticmethod
    def objects(ports: dict[str, int], key_type: str = "ec") -> list[dict[str, Any]]:
        out = [namespace(PROBE_NS), tls_secret(PROBE_NS, "tlsprobe", key_type)]
        for name in ("v1", "v2", "v3"):
            out += [service(PROBE_NS, name), endpoint_slice(PROBE_NS, name, "127.0.0.1", ports[name])]
        out += [ingress(PROBE_NS, "probe", PLAIN, [("/", "v1")]),
                ingress(PROBE_NS, "tlsprobe", TLS, [("/", "v1")], tls_secret_name="tlsprobe")]
        return out

    def _update(self, name: str, host: str, paths: list[tuple[str, str]], *, annotations: dict[str, str]
                | None = None, tls: str = "") -> None:
        for _ in range(20):
            body = self.client.get(INGRESSES, PROBE_NS, name)
            fresh = ingress(PROBE_NS, name, host, paths, tls_secret_name=tls, annotations=annotations)
            body["spec"] = fresh["spec"]
            body["metadata"]["annotations"] = annotations or {}
            try:
                self.client.update(INGRESSES, PROBE_NS, name, body)
                return
            except ApiError as e:
                if e.status != 409:
                    raise
        raise RuntimeError(f"could not update {name}")

    def change(self, kind: str) -> tuple[float, str, str, str]:
        """Make one change; returns (t0, host, path, the answer once it is live)."""
        Probe.seq += 1
        n = Probe.seq
        if kind == "path added":
            path = f"/p{n}"
            self.paths.append((path, "v3"))
            self.extra.append(path)
            t0 = time.monotonic()
            self._update("probe", PLAIN, self.paths)
            return t0, PLAIN, path, "v3"
        if kind == "path removed" and self.extra:
            path = self.extra.pop(0)
            self.paths = [p for p in self.paths if p[0] != path]
            t0 = time.monotonic()
            self._update("probe", PLAIN, self.paths)
            return t0, PLAIN, path, self.paths[0][1]  # through `/` again
        if kind == "backend switched":
            now = "v2" if self.paths[0][1] == "v1" else "v1"
            self.paths[0] = ("/", now)
            t0 = time.monotonic()
            self._update("probe", PLAIN, self.paths)
            return t0, PLAIN, "/", now
        if kind == "annotation":
            self.redirect = not self.redirect
            annotations = {} if self.redirect else {"nginx.org/ssl-redirect": "false"}
            t0 = time.monotonic()
            self._update("tlsprobe", TLS, [("/", "v1")], annotations=annotations, tls="tlsprobe")
            return t0, TLS, "/", "HTTP 301" if self.redirect else "v1"
        if kind == "host added":
            name = f"h{n}"
            self.client.create(SERVICES, PROBE_NS, service(PROBE_NS, name))
            self.client.create(ENDPOINTSLICES, PROBE_NS, endpoint_slice(PROBE_NS, name, "127.0.0.1",
                                                                          self.ports["v3"]))
            self.hosts.append(n)
            t0 = time.monotonic()
            self.client.create(INGRESSES, PROBE_NS, ingress(PROBE_NS, name, f"{name}.example.com",
                                                            [("/", name)]))
            return t0, f"{name}.example.com", "/", "v3"
        if kind == "host removed" and self.hosts:
            m = self.hosts.pop(0)
            t0 = time.monotonic()
            self.client.delete(INGRESSES, PROBE_NS, f"h{m}")
            return t0, f"h{m}.example.com", "/", "HTTP 404"
        return self.change("path added")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.workdir = tempfile.mkdtemp(prefix="bench-scale-", dir="/tmp")
        self.load = LoadProcess(BACKENDS, args.nginx_binary)
        self.results: list[dict[str, Any]] = []
        self.finished: list[ControllerProcess] = []

    def controller(self, cluster: ClusterProcess, routes: bool) -> ControllerProcess:
        extra = [f"--nginx-binary={self.args.nginx_binary}", f"--enable-dynamic-routes={str(routes).lower()}",
                 "--log-level=warning", *self.args.controller_args]
        return ControllerProcess(cluster.kubeconfig, workdir=self.workdir, extra=extra)

    def start(self, c: ControllerProcess, n: int, routes: bool) -> dict[str, Any]:
        c.start()
        row: dict[str, Any] = {"n": n, "routes": routes, "ready_s": c.wait_ready(self.args.ready_timeout)}
        row["reloads_at_ready"] = c.config_version()
        row["peak_rss_bytes"] = c.peak_rss()
        row["nginx_pss_bytes"], row["nginx_processes"] = nginx_pss(c.run_dir)
        row["nginx_t_s"], row["nginx_t_cpu_s"] = nginx_t_seconds(c.main_config_path, self.args.nginx_binary)
        wait_live(c.http_port, PLAIN, "/", "v1", time.monotonic(), 0.3, 120)
        return row

    def changes(self, c: ControllerProcess, client: KubeClient, count: int) -> dict[str, list[float]]:
        probe = Probe(client, c.http_port, self.load.ports)
        out: dict[str, list[float]] = {}
        try:
            for i in range(count):
                kind = KINDS[i % len(KINDS)]
                t0, host, path, want = probe.change(kind)
                out.setdefault(kind, []).append(wait_live(c.http_port, host, path, want, t0, self.args.settle,
                                                          self.args.change_timeout))
                time.sleep(0.2)
        finally:
            probe.cleanup()
        return out

    def churn(self, c: ControllerProcess, client: KubeClient, seconds: float) -> dict[str, Any]:
        probe = Probe(client, c.http_port, self.load.ports)
        stable = [(f"app-{i}.example.com", p) for i in range(1, 200, 2) for p in ("/", "/api")]
        targets = [(PLAIN, "/"), *stable]
        samples: list[tuple[int, int]] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                samples.append(nginx_pss(c.run_dir))
                stop.wait(1.0)

        sampler = threading.Thread(target=sample, daemon=True)
        version0 = c.config_version()
        latencies: list[float] = []
        lock = threading.Lock()
        self.load.start_load(c.http_port, targets, self.args.clients)
        sampler.start()
        started = time.monotonic()
        checks = []
        i = 0
        try:
            while time.monotonic() - started < seconds:
                tick = started + i * self.args.churn_interval
                time.sleep(max(0.0, tick - time.monotonic()))
                t0, host, path, want = probe.change(KINDS[i % len(KINDS)])
                i += 1

                def check(t0: float = t0, host: str = host, path: str = path, want: str = want) -> None:
                    try:
                        v = wait_live(c.http_port, host, path, want, t0, 0.0, self.args.change_timeout)
                    except TimeoutError:
                        v = float("inf")
                    with lock:
                        latencies.append(v)

                th = threading.Thread(target=check, daemon=True)
                th.start()
                checks.append(th)
        finally:
            for th in checks:
                th.join(self.args.change_timeout + 5)
            load = self.load.stop_load()
            stop.set()
            sampler.join(5)
            probe.cleanup()
        pss = [s for s, _ in samples if s]
        return {"seconds": time.monotonic() - started, "changes": i, "requests_ok": load["ok"],
                "requests_failed": sum(load["failed"].values()), "failures": load["failed"],
                "reloads": c.config_version() - version0, "nginx_pss_start": pss[0] if pss else 0,
                "nginx_pss_max": max(pss, default=0), "nginx_pss_end": pss[-1] if pss else 0,
                "nginx_processes_max": max((p for _, p in samples), default=0),
                "change_p50_s": pct(latencies, 50) if latencies else None,
                "change_p99_s": pct(latencies, 99) if latencies else None,
                "changes_not_live": sum(1 for v in latencies if v == float("inf"))}

    def case(self, cluster: ClusterProcess, n: int, routes: bool, changes: int, churn: float) -> None:
        label = f"{n:,} Ingresses, {'routes' if routes else 'reloads (baseline)'}"
        print(f"-- {label} ...", flush=True)
        cluster.load(Probe.objects(self.load.ports))  # the probes as they start
        c = self.controller(cluster, routes)
        client = KubeClient.from_kubeconfig(cluster.kubeconfig)
        t = time.monotonic()
        try:
            row = self.start(c, n, routes)
            print(f"   ready {row['ready_s']:.2f} s, {row['reloads_at_ready']} reload(s), nginx -t "
                  f"{row['nginx_t_s']:.2f} s (CPU {row['nginx_t_cpu_s']:.2f} s), controller peak RSS "
                  f"{mb(row['peak_rss_bytes'])} MB, NGINX {mb(row['nginx_pss_bytes'])} MB", flush=True)
            v0 = c.config_version()
            if changes:
                row["latency_s"] = self.changes(c, client, changes)
                flat = [v for vs in row["latency_s"].values() for v in vs]
                row["p50_s"], row["p99_s"] = pct(flat, 50), pct(flat, 99)
                row["change_reloads"] = c.config_version() - v0
                print(f"   {len(flat)} changes: p50 {row['p50_s'] * 1000:.0f} ms, "
                      f"p99 {row['p99_s'] * 1000:.0f} ms, {row['change_reloads']} reload(s)", flush=True)
            if churn:
                row["churn"] = self.churn(c, client, churn)
                ch = row["churn"]
                print(f"   churn {ch['changes']} changes in {ch['seconds']:.0f} s: "
                      f"{ch['requests_failed']} of "
                      f"{ch['requests_ok'] + ch['requests_failed']} requests failed {ch['failures']}, "
                      f"{ch['reloads']} reload(s), NGINX {mb(ch['nginx_pss_start'])} -> max "
                      f"{mb(ch['nginx_pss_max'])} MB, {ch['nginx_processes_max']} processes max", flush=True)
        except Exception as e:
            row = {"n": n, "routes": routes, "error": str(e)[:1000]}
            print(f"   FAILED: {e}", flush=True)
        finally:
            client.close()
            c.stop()
            self.finished.append(c)
        row["seconds"] = time.monotonic() - t
        self.results.append(row)

    def run(self) -> None:
        a = self.args
        cluster = ClusterProcess(self.workdir)
        try:
            cluster.load(base_objects("10.0.0.1"))
            cm = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": CONFIG_MAP, "namespace": CONFIG_NS},
                  "data": {"external-status-address": "10.0.0.1", "worker-processes": "1",
                           "worker-shutdown-timeout": a.worker_shutdown_timeout}}
            cluster.load([cm])
            cluster.load(Probe.objects(self.load.ports))
            for n in a.sizes:
                t = time.monotonic()
                info = cluster.load_shape("plain", n=n, namespaces=a.namespaces, tls_share=0.5, key_type="ec",
                                          port=self.load.ports["web"])
                print(f"== {n:,} Ingresses: {info['kinds']} (loaded in {time.monotonic() - t:.1f} s)",
                      flush=True)
                if a.latency:
                    cluster.set_latency(a.latency)
                churn = a.churn_seconds if n == a.churn_size else 0
                changes = a.changes if n < max(a.sizes) else a.changes_largest
                self.case(cluster, n, True, changes, churn)
                if n in a.baseline_sizes:
                    self.case(cluster, n, False, a.baseline_changes,
                              a.baseline_churn_seconds if n == a.churn_size else 0)
        finally:
            cluster.close()
            for c in self.finished:
                c.cleanup()
            self.load.close()


def find(results: list[dict[str, Any]], n: int, routes: bool) -> dict[str, Any] | None:
    return next((r for r in results if r["n"] == n and r["routes"] == routes and "error" not in r), None)


def goals(results: list[dict[str, Any]], args: argparse.Namespace) -> list[list[str]]:
    def v(ok: bool | None) -> str:
        return "n/a" if ok is None else "met" if ok else "MISSED"

    def s(x: float | None, unit: str = "s") -> str:
        return "-" if x is None else f"{x * 1000:.0f} ms" if unit == "ms" else f"{x:.2f} s"

    mid, big = args.churn_size, max(args.sizes)
    r10, b10, r50, b50 = find(results, mid, True), find(results, mid, False), find(results, big, True), \
        find(results, big, False)
    out = []
    for name, r, b, key, target in (
            (f"1. change live p50 at {mid:,}", r10, b10, "p50_s", GOALS["p50_10k_s"]),
            (f"1. change live p99 at {mid:,}", r10, b10, "p99_s", GOALS["p99_10k_s"]),
            (f"1. change live p50 at {big:,}", r50, b50, "p50_s", GOALS["p50_50k_s"])):
        m = r.get(key) if r else None
        base = b.get(key) if b else None
        out.append([name, s(m, "ms"), s(base, "ms"), f"< {target:g} s",
                    v(None if m is None else m < target)])
    if r10 and r10.get("latency_s"):
        for kind, vs in r10["latency_s"].items():
            base_vs = (b10 or {}).get("latency_s", {}).get(kind)
            out.append([f"   {kind}, p50 at {mid:,}", s(statistics.median(vs), "ms"),
                        s(statistics.median(base_vs), "ms") if base_vs else "-", "(reported)", ""])
        out.append([f"   reloads during the {sum(map(len, r10['latency_s'].values()))} changes at {mid:,}",
                    str(r10.get("change_reloads")), str((b10 or {}).get("change_reloads", "-")),
                    "(reported)", ""])
    m = r50["ready_s"] if r50 else None
    out.append([f"2. ready at {big:,}", s(m), s(b50["ready_s"]) if b50 else "-",
                f"< {GOALS['ready_50k_s']:g} s",
                v(None if m is None else m < GOALS["ready_50k_s"])])
    out.append([f"2. reloads at ready, {big:,}", str(r50["reloads_at_ready"]) if r50 else "-",
                str(b50["reloads_at_ready"]) if b50 else "-", "1",
                v(r50["reloads_at_ready"] == 1 if r50 else None)])
    m = r50["peak_rss_bytes"] / 1e6 if r50 else None
    out.append([f"2. controller peak RSS, {big:,}", f"{m:.0f} MB" if m else "-",
                f"{b50['peak_rss_bytes'] / 1e6:.0f} MB" if b50 else "-", f"< {GOALS['rss_50k_mb']:g} MB",
                v(None if m is None else m < GOALS["rss_50k_mb"])])
    out.append([f"2. NGINX memory once ready (PSS, all processes), {big:,}",
                f"{mb(r50['nginx_pss_bytes'])} MB" if r50 else "-",
                f"{mb(b50['nginx_pss_bytes'])} MB" if b50 else "-", "(reported)", ""])
    g = r50["ready_s"] / r10["ready_s"] if r50 and r10 else None
    out.append([f"2. growth of ready {mid:,} -> {big:,}", f"{g:.1f}x" if g else "-", "",
                f"<= {GOALS['growth']:g}x",
                v(None if g is None else g <= GOALS["growth"])])
    if r10:
        limit = GOALS["ready_factor"] * r10["nginx_t_s"] + GOALS["ready_slack_s"]
        out.append([f"3. ready at {mid:,} vs nginx -t of that config ({r10['nginx_t_s']:.2f} s)",
                    s(r10["ready_s"]),
                    s(b10["ready_s"]) + f" (nginx -t {b10['nginx_t_s']:.2f} s)" if b10 else "-",
                    f"<= {limit:.2f} s", v(r10["ready_s"] <= limit)])
    ch, bch = (r10 or {}).get("churn"), (b10 or {}).get("churn")
    if ch:
        total = ch["requests_ok"] + ch["requests_failed"]
        out.append([f"4. churn at {mid:,}: failed requests ({args.clients} keep-alive clients)",
                    f"{ch['requests_failed']} of {total}",
                    (f"{bch['requests_failed']} of {bch['requests_ok'] + bch['requests_failed']}"
                     if bch else "-"),
                    "0", v(ch["requests_failed"] == 0)])
        bound = ch["nginx_pss_start"] * 1.25 + 64e6
        out.append(["4. churn: NGINX memory start -> max (all processes)",
                    f"{mb(ch['nginx_pss_start'])} -> {mb(ch['nginx_pss_max'])} MB ({ch['reloads']} reloads)",
                    f"{mb(bch['nginx_pss_start'])} -> {mb(bch['nginx_pss_max'])} MB "
                    f"({bch['reloads']} reloads)"
                    if bch else "-", f"<= {mb(int(bound))} MB (start x 1.25 + 64 MB)",
                    v(ch["nginx_pss_max"] <= bound)])
        out.append(["4. churn: change live p50 / p99, changes never live",
                    f"{s(ch['change_p50_s'], 'ms')} / {s(ch['change_p99_s'], 'ms')}, "
                    f"{ch['changes_not_live']}",
                    f"{s(bch['change_p50_s'], 'ms')} / {s(bch['change_p99_s'], 'ms')}, "
                    f"{bch['changes_not_live']}"
                    if bch else "-", "(reported)", ""])
    return out


def plot(results: list[dict[str, Any]], path: str) -> str | None:
    series: dict[str, list[tuple[int, float]]] = {}
    for r in results:
        if "error" in r:
            continue
        mode = "routes" if r["routes"] else "reloads (baseline)"
        series.setdefault(f"ready, {mode}", []).append((r["n"], r["ready_s"]))
        if r["routes"]:
            series.setdefault("nginx -t of the same config", []).append((r["n"], r["nginx_t_s"]))
        for key in ("p50_s", "p99_s"):
            if r.get(key) is not None:
                series.setdefault(f"change {key[:3]}, {mode}", []).append((r["n"], r[key]))

    def style(name: str) -> str:
        return ("s--" if "baseline" in name else "d-." if "nginx -t" in name else "^-" if "change" in name
                else "o-")

    return plot_against_n(path, "Ready time and change latency against cluster size", "seconds", series,
                          goals={"change p50 goal at 10k (1 s)": 1.0, "ready goal at 50k (30 s)": 30.0},
                          log_y=True, style=style)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ints = lambda s: [int(x) for x in s.split(",") if x]  # noqa: E731
    p.add_argument("--out", default=None, help="directory for bench_scale.json and bench_scale.png")
    p.add_argument("--quick", action="store_true", help="200, 1,000 and 2,000 Ingresses, a 20 s churn")
    p.add_argument("--sizes", type=ints, default=None, help="Ingress counts (default 1000,10000,50000)")
    p.add_argument("--baseline-sizes", type=ints, default=None,
                   help="sizes run with reloads too (default 10000)")
    p.add_argument("--namespaces", type=int, default=500)
    p.add_argument("--latency", type=float, default=50.0, help="API latency (ms) added to every request")
    p.add_argument("--changes", type=int, default=24, help="changes measured per size (4 of each kind)")
    p.add_argument("--changes-largest", type=int, default=12, help="changes at the largest size")
    p.add_argument("--baseline-changes", type=int, default=6, help="changes measured with reloads")
    p.add_argument("--churn-size", type=int, default=None, help="size of the churn (default 10000)")
    p.add_argument("--churn-seconds", type=float, default=300.0)
    p.add_argument("--baseline-churn-seconds", type=float, default=60.0)
    p.add_argument("--churn-interval", type=float, default=1.0)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--worker-shutdown-timeout", default="10s")
    p.add_argument("--settle", type=float, default=0.5)
    p.add_argument("--change-timeout", type=float, default=120.0)
    p.add_argument("--ready-timeout", type=float, default=900.0)
    p.add_argument("--nginx-binary", default="nginx")
    p.add_argument("--controller-args", nargs="*", default=[])
    args = p.parse_args(argv)
    if args.quick:
        args.sizes = args.sizes or [200, 1000, 2000]
        args.baseline_sizes = args.baseline_sizes if args.baseline_sizes is not None else [1000]
        args.churn_size = args.churn_size or 1000
        args.churn_seconds, args.baseline_churn_seconds = 20.0, 10.0
    args.sizes = sorted(args.sizes or [1000, 10000, 50000])
    args.baseline_sizes = args.baseline_sizes if args.baseline_sizes is not None else [10000]
    args.churn_size = args.churn_size or 10000
    started = time.monotonic()
    print(f"scale benchmark: sizes {args.sizes}, baseline (reloads) at {args.baseline_sizes}, churn at "
          f"{args.churn_size:,} for {args.churn_seconds:g} s ({args.baseline_churn_seconds:g} s baseline); "
          f"{os.cpu_count()} CPUs", flush=True)
    bench = Bench(args)
    bench.run()
    results = bench.results
    rows = []
    for r in results:
        name = f"{r['n']:,} {'routes' if r['routes'] else 'reloads'}"
        if "error" in r:
            rows.append([name, "ERROR", r["error"][:60], "", "", "", "", "", "", ""])
            continue
        rows.append([name, f"{r['ready_s']:.2f}", r["reloads_at_ready"], f"{r['nginx_t_s']:.2f}",
                     f"{r['nginx_t_cpu_s']:.2f}", mb(r["peak_rss_bytes"]), mb(r["nginx_pss_bytes"]),
                     f"{r['p50_s'] * 1000:.0f}" if r.get("p50_s") is not None else "-",
                     f"{r['p99_s'] * 1000:.0f}" if r.get("p99_s") is not None else "-",
                     f"{r['seconds']:.0f}"])
    print()
    print_table(["case", "ready s", "reloads at ready", "nginx -t s", "nginx -t CPU s", "ctl peak RSS MB",
                 "NGINX PSS MB", "change p50 ms", "change p99 ms", "took s"], rows)
    print()
    g = goals(results, args)
    print_table(["goal", "measured", "baseline (reloads)", "target", "verdict"], g)
    total = time.monotonic() - started
    print(f"\ntotal benchmark time {total / 60:.1f} min")
    out = args.out or bench.workdir
    path = write_json(out, "bench_scale.json", {"meta": {"machine": machine(), "args": vars(args),
                                                          "total_seconds": total},
                                                 "results": results, "goals": g})
    png = plot(results, os.path.join(out, "bench_scale.png"))
    print(f"wrote {path}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
