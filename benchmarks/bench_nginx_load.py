"""NGINX configuration load time at scale, by host shape: exact hosts, wildcard hosts, a mix.

Renders N Ingresses (one host each, two Prefix paths to two Services with two endpoints each, spread over
150 namespaces) through the Configurator into a fresh conf dir, then times `nginx -t` on it (the parse and
set-up NGINX does on every start and reload). A share of the hosts are wildcards (`*.w<i>.example.com`):
their servers carry the one-label check the Ingress spec asks for, so comparing the shares in one run shows
what the wildcards cost. Each case reports the median wall time and the median and minimum CPU time (user +
system of `nginx -t`, the least disturbed by other load) of `--repeats` runs. With `--catch-all` one more
Ingress (no rules, a defaultBackend) is the class-wide catch-all.

Prints a table; `--out DIR` also writes DIR/bench_nginx_load.json. Numbers are reported, not asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import machine, nginx_t_seconds, print_table, write_json

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.configurator import Configurator
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.nginx.manager import Manager


def make_ingresses(n: int, wildcard_share: float) -> list[IngressEx]:
    every = round(1 / wildcard_share) if wildcard_share else 0
    exes = []
    for i in range(n):
        ns, name = f"ns{i % 150}", f"app{i}"
        host = f"*.w{i}.example.com" if every and i % every == 0 else f"app{i}.example.com"
        web, api = f"app{i}-web", f"app{i}-api"
        paths = [{"path": p, "pathType": "Prefix",
                  "backend": {"service": {"name": svc, "port": {"number": 80}}}}
                 for p, svc in (("/", web), ("/api", api))]
        spec: dict[str, Any] = {"rules": [{"host": host, "http": {"paths": paths}}]}
        a, b = (i // 250) % 250, i % 250
        endpoints = {backend_key(web, 80): [f"10.1.{a}.{b}:8080", f"10.2.{a}.{b}:8080"],
                     backend_key(api, 80): [f"10.3.{a}.{b}:8080", f"10.4.{a}.{b}:8080"]}
        ing = {"metadata": {"namespace": ns, "name": name}, "spec": spec}
        exes.append(IngressEx(ing, {host: True}, endpoints))
    return exes


def catch_all() -> IngressEx:
    ing = {"metadata": {"namespace": "default", "name": "catch-all"},
           "spec": {"defaultBackend": {"service": {"name": "echo", "port": {"number": 80}}}}}
    return IngressEx(ing, {"": True}, {backend_key("echo", 80): ["10.9.0.1:8080"]})


def case(n: int, share: float, repeats: int, with_catch_all: bool) -> dict[str, Any]:
    base = tempfile.mkdtemp(prefix="bench-nginx-load-", dir="/tmp")
    try:
        manager = Manager(binary="nginx", conf_dir=f"{base}/conf", run_dir=f"{base}/run")
        configurator = Configurator(manager, StaticConfigParams(), ConfigParams(), TemplateExecutor())
        exes = make_ingresses(n, share) + ([catch_all()] if with_catch_all else [])
        manager._write_config_version(1)  # what start() writes first; nginx.conf includes it
        warnings = configurator.add_or_update_ingresses(exes)
        if warnings:
            raise RuntimeError(f"render warnings: {warnings[:3]}")
        size = sum(os.path.getsize(os.path.join(manager.paths.conf_d, f))
                   for f in os.listdir(manager.paths.conf_d))
        runs = [nginx_t_seconds(manager.main_config_path) for _ in range(repeats)]
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        return {"n": n, "wildcard_share": share, "catch_all": with_catch_all, "conf_bytes": size,
                "nginx_t_median_s": statistics.median(walls), "nginx_t_cpu_median_s": statistics.median(cpus),
                "nginx_t_cpu_min_s": min(cpus), "runs": runs}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=None)
    p.add_argument("--quick", action="store_true", help="1,000 Ingresses, 3 runs per case")
    p.add_argument("-n", type=int, default=10000, help="number of Ingresses (default 10,000)")
    p.add_argument("--shares", type=lambda s: [float(x) for x in s.split(",")], default=[0.0, 0.1, 1.0],
                   help="comma-separated shares of wildcard hosts (default 0,0.1,1)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--catch-all", action="store_true", help="add a catch-all Ingress to every case")
    args = p.parse_args(argv)
    n, repeats = (1000, 3) if args.quick else (args.n, args.repeats)
    results = [case(n, share, repeats, args.catch_all) for share in args.shares]
    rows = [[f"{r['n']:,}", f"{r['wildcard_share']:.0%}", "yes" if r["catch_all"] else "no",
             f"{r['conf_bytes'] / 1e6:.1f}", f"{r['nginx_t_median_s']:.3f}",
             f"{r['nginx_t_cpu_median_s']:.3f}", f"{r['nginx_t_cpu_min_s']:.3f}"] for r in results]
    print_table(["Ingresses", "wildcard hosts", "catch-all", "conf.d MB", "nginx -t wall median s",
                 "CPU median s", "CPU min s"], rows)
    write_json(args.out, "bench_nginx_load.json", {"meta": {"machine": machine(), "args": vars(args)},
                                                   "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
