"""Endpoint churn under load: reloads, failed requests, time to traffic and NGINX memory, with endpoint
changes applied without reloads (the dynamic-peers NGINX module) and with today's reload path, in one run.

The real controller (real NGINX, 2 workers) runs against a devcluster holding `--size` Ingresses of the
plain shape plus `--services` churn Services, each with its own Ingress and `--base` Pods. Every
`--interval` s one churn Service (round robin) scales up by a new Pod or back down by its oldest one, for
`--duration` s. Pods are addresses 127.1.<s>.<k> on one port, all served by one HTTP server in a child
process (so its work does not share the benchmark's GIL); a removed Pod stops answering `--grace` s after
its EndpointSlice update (it resets connections, as a terminated Pod does). A load generator (its own child
process, `--clients` keep-alive connections) sends requests through NGINX to the churn hosts all along.

Reported per mode: changes made, NGINX reloads (config versions) and dynamic updates during the churn,
requests sent and failed (anything but 200), requests NGINX sent to stopped Pods (retried elsewhere by
NGINX), time from the EndpointSlice update to the new Pod's first request through NGINX (a prober asks the
Service's host every 5 ms until the Pod answers) as p50/p99/max, and NGINX's memory (the sum of the
proportional set sizes of its master and workers, sampled every second): at the start, the maximum, at the
end, and the most NGINX processes seen (old workers of past reloads included). Numbers are reported, not
asserted. Writes bench_endpoints.json to --out.
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import socket
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import (
    ClusterProcess,
    ControllerProcess,
    base_objects,
    config_map,
    free_port,
    ingress,
    machine,
    namespace,
    nginx_pss,
    print_table,
    service,
    write_json,
)

from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.resource import ENDPOINTSLICES

NS = "churn"
PUSHED = "nginx upstreams updated without a reload"  # the controller's log event of a dynamic update


def pod_address(svc: int, k: int) -> str:
    return f"127.1.{svc}.{k}"


def churn_slice(svc: int, pods: list[str], port: int) -> dict[str, Any]:
    name = f"c-{svc}"
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": f"{name}-abcde", "namespace": NS,
                         "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [a], "conditions": {"ready": True, "serving": True},
                           "targetRef": {"kind": "Pod", "namespace": NS, "name": f"{name}-{a}"}}
                          for a in pods],
            "ports": [{"name": "http", "port": port, "protocol": "TCP"}]}


# ------------------------------------------------------------------------------ pods and load (child)

def _pods_and_load(conn: Connection, port: int, nginx_port: int, hosts: list[str], clients: int) -> None:
    """The Pods' HTTP server and the load generator; answers commands over `conn`."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    lock = threading.Lock()
    first_hit: dict[str, float] = {}
    dead: set[str] = set()
    state = {"dead_hits": 0, "ok": 0, "failed": 0, "run": False}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            local = self.connection.getsockname()[0]
            with lock:
                if local in dead:
                    state["dead_hits"] += 1
                    self.close_connection = True
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                    return
                first_hit.setdefault(local, time.monotonic())
            body = local.encode()
            self.send_response(200)
            self.send_header("X-Pod", local)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    # Every 127.1.x.y address is the loopback interface: one listener on all of them (only lo reaches them).
    server = ThreadingHTTPServer(("0.0.0.0", port), Handler)
    server.daemon_threads = True
    server.request_queue_size = 1024
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def client(offset: int) -> None:
        c: http.client.HTTPConnection | None = None
        i = offset
        while True:
            if not state["run"]:
                time.sleep(0.05)
                continue
            host = hosts[i % len(hosts)]
            i += 1
            try:
                if c is None:
                    c = http.client.HTTPConnection("127.0.0.1", nginx_port, timeout=10)
                c.request("GET", "/", headers={"Host": host})
                r = c.getresponse()
                r.read()
                ok = r.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                if c is not None:
                    c.close()
                c = None
            with lock:
                state["ok" if ok else "failed"] += 1

    for k in range(clients):
        threading.Thread(target=client, args=(k * 7,), daemon=True).start()
    conn.send("ready")
    while True:
        try:
            cmd, arg = conn.recv()
        except EOFError:
            return
        with lock:
            if cmd == "kill":
                dead.add(arg)
                result: Any = None
            elif cmd == "first_hits":
                result = dict(first_hit)
            elif cmd == "load":
                state["run"] = bool(arg)
                result = None
            elif cmd == "stats":
                result = {k: state[k] for k in ("ok", "failed", "dead_hits")}
            elif cmd == "reset":
                state.update(ok=0, failed=0, dead_hits=0)
                result = None
            else:
                return
        conn.send(result)


class PodsAndLoad:
    def __init__(self, port: int, nginx_port: int, hosts: list[str], clients: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_pods_and_load, args=(child, port, nginx_port, hosts, clients),
                                 daemon=True)
        self._proc.start()
        assert self._conn.recv() == "ready"
        self._lock = threading.Lock()

    def call(self, cmd: str, arg: Any = None) -> Any:
        with self._lock:
            self._conn.send((cmd, arg))
            return self._conn.recv()

    def close(self) -> None:
        self._proc.kill()
        self._proc.join(5)


# ------------------------------------------------------------------------------ one mode

def probe_until_served(nginx_port: int, host: str, pod: str, deadline: float) -> bool:
    c = http.client.HTTPConnection("127.0.0.1", nginx_port, timeout=5)
    try:
        while time.monotonic() < deadline:
            try:
                c.request("GET", "/", headers={"Host": host})
                r = c.getresponse()
                r.read()
                if r.getheader("X-Pod") == pod:
                    return True
            except (OSError, http.client.HTTPException):
                c.close()
            time.sleep(0.005)
        return False
    finally:
        c.close()


def run_mode(dynamic: bool, args: argparse.Namespace, workdir: str) -> dict[str, Any]:
    port = free_port()
    cluster = ClusterProcess(workdir)
    c: ControllerProcess | None = None
    load: PodsAndLoad | None = None
    client: KubeClient | None = None
    try:
        cm = config_map("10.0.0.1")
        cm["data"]["worker-processes"] = "2"
        cluster.load([*base_objects("10.0.0.1")[:2], cm])
        cluster.load_shape("plain", n=args.size, namespaces=min(150, args.size), tls_share=0.0, port=port)
        pods = {s: [pod_address(s, k) for k in range(1, args.base + 1)] for s in range(args.services)}
        objs: list[dict[str, Any]] = [namespace(NS)]
        for s in range(args.services):
            objs += [service(NS, f"c-{s}"), churn_slice(s, pods[s], port),
                     ingress(NS, f"c-{s}", f"c-{s}.example.com", [("/", f"c-{s}")])]
        cluster.load(objs)
        c = ControllerProcess(cluster.kubeconfig, workdir=workdir,
                              extra=[f"--enable-dynamic-upstreams={'true' if dynamic else 'false'}"])
        c.start()
        ready = c.wait_ready(1800)
        hosts = [f"c-{s}.example.com" for s in range(args.services)]
        load = PodsAndLoad(port, c.http_port, hosts, args.clients)
        for s in range(args.services):
            if not probe_until_served(c.http_port, hosts[s], pods[s][0], time.monotonic() + 60):
                raise RuntimeError(f"{hosts[s]} is not served")
        client = KubeClient.from_kubeconfig(cluster.kubeconfig)
        versions0 = c.config_version()
        pushes0 = sum(1 for e in c.log_events() if e.get("event") == PUSHED)
        memory: list[int] = []
        procs: list[int] = []
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                pss, n = nginx_pss(c.run_dir)  # type: ignore[union-attr]
                memory.append(pss)
                procs.append(n)
                stop.wait(1.0)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        load.call("reset")
        load.call("load", True)
        next_k = {s: args.base + 1 for s in range(args.services)}
        latencies: list[float] = []
        missed = 0
        probes: list[threading.Thread] = []
        kills: list[threading.Timer] = []
        changes = 0
        t_start = time.monotonic()
        step = 0
        while time.monotonic() - t_start < args.duration:
            s = step % args.services
            up = len(pods[s]) == args.base
            removed = ""
            if up:
                new = pod_address(s, next_k[s])
                next_k[s] += 1
                pods[s].append(new)
            else:
                removed = pods[s].pop(0)
            body = churn_slice(s, pods[s], port)
            t0 = time.monotonic()
            client.update(ENDPOINTSLICES, NS, body["metadata"]["name"], body)
            changes += 1
            if up:
                def probe(host: str = hosts[s], pod: str = new, t0: float = t0) -> None:
                    nonlocal missed
                    if probe_until_served(c.http_port, host, pod, t0 + args.probe_timeout):  # type: ignore
                        hit = load.call("first_hits").get(pod)  # type: ignore[union-attr]
                        latencies.append((hit or time.monotonic()) - t0)
                    else:
                        missed += 1
                t = threading.Thread(target=probe, daemon=True)
                t.start()
                probes.append(t)
            else:
                timer = threading.Timer(args.grace, load.call, args=("kill", removed))
                timer.daemon = True
                timer.start()
                kills.append(timer)
            step += 1
            time.sleep(max(0.0, t_start + step * args.interval - time.monotonic()))
        for t in probes:
            t.join(args.probe_timeout + 5)
        for timer in kills:
            timer.join()
        time.sleep(1.0)
        load.call("load", False)
        stop.set()
        sampler.join()
        stats = load.call("stats")
        reloads = c.config_version() - versions0
        pushes = sum(1 for e in c.log_events() if e.get("event") == PUSHED) - pushes0
        lat = sorted(latencies)

        def q(p: float) -> float | None:
            return round(lat[min(len(lat) - 1, round(p * (len(lat) - 1)))] * 1000, 1) if lat else None

        return {"mode": "dynamic" if dynamic else "reload", "ready_s": ready, "changes": changes,
                "reloads": reloads, "dynamic_updates": pushes, "requests": stats["ok"] + stats["failed"],
                "failed": stats["failed"], "to_stopped_pods": stats["dead_hits"],
                "time_to_traffic_ms": {"p50": q(0.5), "p99": q(0.99), "max": q(1.0), "samples": len(lat),
                                       "never_served": missed},
                "nginx_pss_bytes": {"start": memory[0] if memory else 0, "max": max(memory, default=0),
                                    "end": memory[-1] if memory else 0},
                "nginx_processes_max": max(procs, default=0)}
    finally:
        if client is not None:
            client.close()
        if load is not None:
            load.close()
        if c is not None:
            c.stop()
            c.cleanup()
        cluster.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None, help="directory for bench_endpoints.json")
    p.add_argument("--quick", action="store_true", help="200 Ingresses, 20 Services, 15 s")
    p.add_argument("--size", type=int, default=None, help="Ingresses of the plain shape (default 1000)")
    p.add_argument("--services", type=int, default=None, help="churn Services (default 100)")
    p.add_argument("--duration", type=float, default=None, help="seconds of churn (default 60)")
    p.add_argument("--interval", type=float, default=0.1, help="seconds between changes (default 0.1)")
    p.add_argument("--base", type=int, default=2, help="Pods of a churn Service before it scales up")
    p.add_argument("--grace", type=float, default=1.0,
                   help="seconds a removed Pod keeps answering after its EndpointSlice update")
    p.add_argument("--clients", type=int, default=4, help="load generator connections")
    p.add_argument("--probe-timeout", type=float, default=60.0)
    p.add_argument("--modes", default="dynamic,reload", help="dynamic, reload or both (comma-separated)")
    args = p.parse_args(argv)
    args.size = args.size or (200 if args.quick else 1000)
    args.services = args.services or (20 if args.quick else 100)
    args.duration = args.duration or (15.0 if args.quick else 60.0)
    if args.services > 250:
        p.error("--services: at most 250 (Pod addresses are 127.1.<service>.<n>)")
    workdir = tempfile.mkdtemp(prefix="bench-endpoints-", dir="/tmp")
    print(f"endpoint churn: {args.services} Services scaling by one Pod every {args.interval:g} s for "
          f"{args.duration:g} s, {args.size:,} Ingresses loaded, {args.clients} load connections", flush=True)
    results = []
    for mode in args.modes.split(","):
        t0 = time.monotonic()
        r = run_mode(mode.strip() == "dynamic", args, workdir)
        r["seconds"] = time.monotonic() - t0
        results.append(r)
        print(f"   {r['mode']}: {r['reloads']} reloads, {r['failed']} failed of {r['requests']} "
              f"(took {r['seconds']:.0f} s)", flush=True)
    rows = []
    for r in results:
        t, m = r["time_to_traffic_ms"], r["nginx_pss_bytes"]
        rows.append([r["mode"], r["changes"], r["reloads"], r["dynamic_updates"], r["requests"], r["failed"],
                     r["to_stopped_pods"], t["p50"], t["p99"], t["max"], t["never_served"],
                     f"{m['start'] / 1e6:.0f}", f"{m['max'] / 1e6:.0f}", f"{m['end'] / 1e6:.0f}",
                     r["nginx_processes_max"]])
    print()
    print_table(["mode", "changes", "reloads", "dynamic updates", "requests", "failed", "to stopped Pods",
                 "to traffic p50 ms", "p99 ms", "max ms", "never served", "NGINX PSS MB start", "max",
                 "end", "NGINX processes max"], rows)
    path = write_json(args.out, "bench_endpoints.json",
                      {"meta": {"machine": machine(), "args": vars(args)}, "results": results})
    if path:
        print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
