"""Admission webhook throughput: AdmissionReviews per second over HTTPS on 127.0.0.1, and latency at that
load.

The webhook server (`ingressctl.webhook.server`, 16 pool workers) runs in a child process with a
Configuration holding N configured Ingresses (so the host-ownership lookups are real); the client sends a mix
of valid, invalid (bad annotation values, snippets) and host-conflicting Ingress reviews from C threads, each
on its own keep-alive HTTPS connection, as kube-apiserver does. Each concurrency level is bounded by a request
count and a time limit. The baseline, measured in the same run, is the same `review()` called in-process (no
HTTP, no TLS): the difference is the cost of serving. The client shares the machine (and its own process's
GIL) with the server, so the numbers are a lower bound of what the server alone sustains.

Prints a table (requests/s, p50/p99/max latency per concurrency); `--out DIR` writes DIR/bench_webhook.json;
`--quick` uses fewer requests. Numbers are reported, not asserted.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import ssl
import statistics
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import machine, print_table, write_json
from ingressctl.controller.configuration import Configuration
from ingressctl.devcluster.tlsutil import generate
from ingressctl.webhook.admission import review


def _ingress(name: str, host: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "bench", "uid": f"uid-{name}",
                          "creationTimestamp": "2025-01-01T00:00:00Z"}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": md,
            "spec": {"ingressClassName": "nginx", "tls": [{"hosts": [host], "secretName": f"{name}-tls"}],
                     "rules": [{"host": host, "http": {"paths": [
                         {"path": p, "pathType": "Prefix",
                          "backend": {"service": {"name": f"svc{i}", "port": {"number": 80}}}}
                         for i, p in enumerate(("/", "/api", "/static"))]}}]}}


def configuration(n: int) -> Configuration:
    c = Configuration(ingress_class="nginx")
    for i in range(n):
        ing = _ingress(f"ing{i}", f"host{i}.example.com")
        ing["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
        c.add_or_update_ingress(ing)
    c.set_startup_complete()
    return c


def reviews() -> list[bytes]:
    """The request mix: valid (with annotations), a host another Ingress owns, a bad value, a snippet."""
    good = {"nginx.org/proxy-connect-timeout": "10s", "nginx.org/lb-method": "least_conn",
            "nginx.org/proxy-set-headers": "X-Forwarded-ABC", "nginx.org/client-max-body-size": "4m"}
    objects = [_ingress("new", "new.example.com", good), _ingress("dup", "host7.example.com", good),
               _ingress("bad", "new.example.com", {"nginx.org/proxy-connect-timeout": "ten"}),
               _ingress("snip", "new.example.com", {"nginx.org/server-snippets": "return 200;"})]
    out = []
    for i, obj in enumerate(objects):
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": f"00000000-0000-0000-0000-{i:012d}", "operation": "CREATE",
            "kind": {"group": "networking.k8s.io", "version": "v1", "kind": "Ingress"},
            "resource": {"group": "networking.k8s.io", "version": "v1", "resource": "ingresses"},
            "name": obj["metadata"]["name"], "namespace": "bench", "object": obj, "oldObject": None,
            "userInfo": {"username": "kubernetes-admin"}, "dryRun": False}}
        out.append(json.dumps(body).encode())
    return out


def _serve(conn: Connection, cert_file: str, key_file: str, n: int) -> None:
    from ingressctl.logging import configure_logging
    from ingressctl.settings import LogSettings
    from ingressctl.webhook.server import AdmissionWebhookServer

    configure_logging(LogSettings(level="warning"))   # no line per denial in the measurement

    server = AdmissionWebhookServer(config=configuration(n), cert_file=cert_file, key_file=key_file,
                                    host="127.0.0.1", port=0)
    server.start()
    conn.send(server.port)
    conn.recv()   # until told to stop
    server.stop()


def load(port: int, ca_pem: bytes, bodies: list[bytes], concurrency: int, total: int,
         time_limit: float) -> dict[str, Any]:
    """`total` requests from `concurrency` keep-alive connections, stopping early at `time_limit` seconds."""
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    counter = iter(range(total))
    deadline = time.monotonic() + time_limit

    def worker() -> None:
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
        mine: list[float] = []
        try:
            with lock:
                i = next(counter, None)
            while i is not None and time.monotonic() < deadline:
                body = bodies[i % len(bodies)]
                t0 = time.perf_counter()
                conn.request("POST", "/validate", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
                mine.append(time.perf_counter() - t0)
                if resp.status != 200 or b'"uid"' not in data:
                    with lock:
                        errors[0] += 1
                with lock:
                    i = next(counter, None)
        finally:
            conn.close()
            with lock:
                latencies.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000 if latencies else 0.0

    return {"concurrency": concurrency, "requests": len(latencies), "errors": errors[0], "seconds": elapsed,
            "rps": len(latencies) / elapsed if elapsed else 0.0, "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "max_ms": latencies[-1] * 1000 if latencies else 0.0}


def baseline(n: int, bodies: list[bytes], repeats: int) -> dict[str, Any]:
    config = configuration(n)
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        review(json.loads(bodies[i % len(bodies)]), config)
        times.append(time.perf_counter() - t0)
    return {"calls": repeats, "per_call_us": statistics.mean(times) * 1e6,
            "calls_per_s": repeats / sum(times)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="directory for bench_webhook.json")
    parser.add_argument("--quick", action="store_true", help="fewer requests per level")
    parser.add_argument("-n", type=int, default=1000, help="Ingresses in the Configuration (default 1000)")
    parser.add_argument("--time-limit", type=float, default=20.0,
                        help="seconds per level at most (default 20)")
    args = parser.parse_args()
    total = 1000 if args.quick else 5000
    levels = (1, 4, 16) if args.quick else (1, 4, 16, 32)
    bodies = reviews()

    with tempfile.TemporaryDirectory(prefix="bench-webhook-") as tmp:
        cert = generate("127.0.0.1")
        cert_file, key_file = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        with open(cert_file, "wb") as f:
            f.write(cert.cert_pem + cert.ca_pem)
        with open(key_file, "wb") as f:
            f.write(cert.key_pem)
        parent, child = multiprocessing.Pipe()
        proc = multiprocessing.get_context("spawn").Process(target=_serve, args=(child, cert_file, key_file,
                                                                                   args.n), daemon=True)
        proc.start()
        try:
            if not parent.poll(120):
                raise RuntimeError("the webhook server did not start")
            port = parent.recv()
            load(port, cert.ca_pem, bodies, 4, 200, args.time_limit)   # warm-up: TLS sessions, imports
            results = [load(port, cert.ca_pem, bodies, c, total, args.time_limit) for c in levels]
        finally:
            parent.send("stop")
            proc.join(10)
    base = baseline(args.n, bodies, total)

    print(f"admission webhook over HTTPS on 127.0.0.1: {args.n} Ingresses configured, "
          f"request mix {len(bodies)} reviews (valid, host taken, bad value, snippet)")
    print_table(["concurrency", "requests", "errors", "req/s", "p50 ms", "p99 ms", "max ms"],
                [[r["concurrency"], r["requests"], r["errors"], f"{r['rps']:.0f}", f"{r['p50_ms']:.2f}",
                  f"{r['p99_ms']:.2f}", f"{r['max_ms']:.2f}"] for r in results])
    best = max(results, key=lambda r: r["rps"])
    print(f"sustained: {best['rps']:.0f} requests/s at concurrency {best['concurrency']}, "
          f"p99 {best['p99_ms']:.2f} ms at that load")
    print(f"baseline (review() in-process, no HTTP/TLS): {base['per_call_us']:.0f} us per call, "
          f"{base['calls_per_s']:.0f} calls/s")
    path = write_json(args.out, "bench_webhook.json", {"machine": machine(), "ingresses": args.n,
                                                        "levels": results, "best": best, "baseline": base})
    if path:
        print(f"wrote {path}")
    return 0 if all(r["errors"] == 0 for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
