"""Render cost: IngressEx -> model -> ingress.conf.j2, per Ingress and for 10,000 Ingresses.

Measures, on synthetic Ingresses (one host each, two Prefix paths to two Services with two endpoints each,
half of them with TLS, spread over 150 namespaces):
- per Ingress: model generation and template rendering (p50 / p95 of single calls);
- all N: templates only (model + render), with the cyclic GC on and paused, and (CPU time) through
  `IngressRenderer` with the Configurator's context (nginx.conf's proxy defaults inherited);
- all N through the Configurator with file writes (atomic, into a temp conf dir; NGINX is not started);
- one changed Ingress among N (the steady-state cost of an update);
- a baseline measured in the same run: a plain f-string of one server block per Ingress, so numbers can be
  compared across noisy runs.

Prints a table; `--out DIR` also writes DIR/bench_render.json; `--quick` uses 1,000 Ingresses and fewer
repeats.
Numbers are reported, not asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams, proxy_defaults
from ingressctl.configs.configurator import Configurator
from ingressctl.configs.renderers import IngressRenderer, RenderContext
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.kinds.ingress.config import generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.nginx.manager import Manager
from ingressctl.secret_types import SecretReference


def make_ingresses(n: int) -> list[IngressEx]:
    exes = []
    for i in range(n):
        ns, name, host = f"ns{i % 150}", f"app{i}", f"app{i}.example.com"
        svc_a, svc_b = f"app{i}-web", f"app{i}-api"
        spec: dict[str, Any] = {"rules": [{"host": host, "http": {"paths": [
            {"path": "/", "pathType": "Prefix",
             "backend": {"service": {"name": svc_a, "port": {"number": 80}}}},
            {"path": "/api", "pathType": "Prefix",
             "backend": {"service": {"name": svc_b, "port": {"number": 8080}}}},
        ]}}]}
        refs = {}
        if i % 2 == 0:
            spec["tls"] = [{"hosts": [host], "secretName": f"{name}-tls"}]
            refs[f"{name}-tls"] = SecretReference(f"{ns}/{name}-tls", f"/etc/nginx/secrets/{ns}-{name}-tls",
                                                  secret_type="kubernetes.io/tls")
        a, b = (i // 250) % 250, i % 250
        endpoints = {
            backend_key(svc_a, 80): [f"10.1.{a}.{b}:8080", f"10.2.{a}.{b}:8080"],
            backend_key(svc_b, 8080): [f"10.3.{a}.{b}:9090", f"10.4.{a}.{b}:9090"],
        }
        ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
               "metadata": {"namespace": ns, "name": name, "annotations": {}}, "spec": spec}
        exes.append(IngressEx(ing, {host: True}, endpoints, secret_refs=refs))
    return exes


def baseline_render(ex: IngressEx) -> str:
    """The naive lower bound: one f-string server block, no model, no validation."""
    meta, rule = ex.ingress["metadata"], ex.ingress["spec"]["rules"][0]
    locs = "".join(
        f"    location {p['path']} {{\n        proxy_pass http://{meta['namespace']}-{meta['name']}-"
        f"{p['backend']['service']['name']};\n    }}\n" for p in rule["http"]["paths"])
    return f"server {{\n    listen 80;\n    server_name {rule['host']};\n{locs}}}\n"


def best_of(repeats: int, fn: Callable[[], Any]) -> float:
    """Best wall-clock time of `repeats` runs (the least disturbed by other load)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def cpu_of(fn: Callable[[], Any]) -> float:
    """CPU time of one run of `fn` in this process (less sensitive to other processes than wall time)."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def per_call_us(items: list[Any], fn: Callable[[Any], Any]) -> tuple[float, float]:
    samples = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        samples.append((time.perf_counter() - t0) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95)]


def run(n: int, repeats: int, write_repeats: int) -> dict[str, Any]:
    static = StaticConfigParams()
    params = ConfigParams()
    templates = TemplateExecutor()
    exes = make_ingresses(n)
    sample = exes[: min(len(exes), 2000)]
    results: dict[str, Any] = {"n": n, "repeats": repeats, "write_repeats": write_repeats}

    def model_all() -> list[Any]:
        return [generate_nginx_config(ex, static, params)[0] for ex in exes]

    cfgs = model_all()
    texts = [templates.execute_ingress_template(c) for c in cfgs]
    results["bytes_per_ingress"] = sum(len(t) for t in texts) // n

    results["baseline_us_p50"], _ = per_call_us(sample, baseline_render)
    results["model_us_p50"], results["model_us_p95"] = per_call_us(
        sample, lambda ex: generate_nginx_config(ex, static, params))
    results["render_us_p50"], results["render_us_p95"] = per_call_us(
        cfgs[: len(sample)], templates.execute_ingress_template)

    def templates_only() -> None:
        for ex in exes:
            templates.execute_ingress_template(generate_nginx_config(ex, static, params)[0])

    results["baseline_all_s"] = best_of(repeats, lambda: [baseline_render(ex) for ex in exes])
    results["templates_only_all_s"] = best_of(repeats, templates_only)
    results["templates_only_all_cpu_s"] = cpu_of(templates_only)

    # As the Configurator renders: one context, nginx.conf's proxy defaults inherited by plain locations.
    renderer, ctx = IngressRenderer(), RenderContext(static, params, templates,
                                                     proxy_defaults=proxy_defaults(params))
    results["renderer_all_cpu_s"] = min(cpu_of(lambda: [renderer.render(ex, ctx) for ex in exes])
                                        for _ in range(repeats))
    gc.disable()
    try:
        results["templates_only_all_gc_paused_s"] = best_of(repeats, templates_only)
    finally:
        gc.enable()

    # Through the Configurator, with atomic file writes into a fresh conf dir each time.
    write_times, incremental_ms = [], []
    for _ in range(write_repeats):
        base = tempfile.mkdtemp(prefix="bench-render-")
        try:
            manager = Manager(binary="nginx", conf_dir=f"{base}/conf", run_dir=f"{base}/run")
            configurator = Configurator(manager, static, params, TemplateExecutor())
            t0 = time.perf_counter()
            configurator.add_or_update_ingresses(exes)
            write_times.append(time.perf_counter() - t0)
            changed = make_ingresses(1)[0]
            changed.ingress["metadata"]["name"] = exes[n // 2].name
            changed.ingress["metadata"]["namespace"] = exes[n // 2].namespace
            t0 = time.perf_counter()
            configurator.add_or_update_ingress(changed)
            incremental_ms.append((time.perf_counter() - t0) * 1000)
            assert len(manager.list_configs()) == n
        finally:
            shutil.rmtree(base, ignore_errors=True)
    results["with_writes_all_s"] = min(write_times)
    results["incremental_one_of_all_ms"] = min(incremental_ms)
    results["with_writes_us_per_ingress"] = results["with_writes_all_s"] / n * 1e6
    results["templates_only_us_per_ingress"] = results["templates_only_all_s"] / n * 1e6
    results["vs_baseline"] = results["templates_only_all_s"] / results["baseline_all_s"]
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="directory for bench_render.json")
    parser.add_argument("--quick", action="store_true", help="1,000 Ingresses, fewer repeats")
    parser.add_argument("-n", type=int, default=None, help="number of Ingresses (default 10000, quick 1000)")
    args = parser.parse_args(argv)
    n = args.n or (1000 if args.quick else 10000)
    repeats = 2 if args.quick else 3
    r = run(n, repeats, 1 if args.quick else 2)
    rows = [
        ("baseline f-string, per Ingress (p50)", f"{r['baseline_us_p50']:.1f} us"),
        ("model, per Ingress (p50 / p95)", f"{r['model_us_p50']:.1f} / {r['model_us_p95']:.1f} us"),
        ("render, per Ingress (p50 / p95)", f"{r['render_us_p50']:.1f} / {r['render_us_p95']:.1f} us"),
        (f"baseline f-string, all {n}", f"{r['baseline_all_s'] * 1000:.1f} ms"),
        (f"templates only (model + render), all {n}",
         f"{r['templates_only_all_s'] * 1000:.1f} ms ({r['templates_only_us_per_ingress']:.1f} us each, "
         f"{r['vs_baseline']:.1f}x baseline)"),
        (f"templates only, CPU time, all {n}", f"{r['templates_only_all_cpu_s'] * 1000:.1f} ms"),
        (f"IngressRenderer as the Configurator runs it, CPU time, all {n}",
         f"{r['renderer_all_cpu_s'] * 1000:.1f} ms ({r['renderer_all_cpu_s'] / n * 1e6:.1f} us each)"),
        (f"templates only, GC paused, all {n}", f"{r['templates_only_all_gc_paused_s'] * 1000:.1f} ms"),
        (f"Configurator with file writes, all {n}",
         f"{r['with_writes_all_s'] * 1000:.1f} ms ({r['with_writes_us_per_ingress']:.1f} us each)"),
        (f"one changed Ingress among {n}", f"{r['incremental_one_of_all_ms']:.2f} ms"),
        ("config bytes per Ingress", f"{r['bytes_per_ingress']}"),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"bench_render: {n} Ingresses, best of {repeats}, Python {platform.python_version()}, "
          f"{os.cpu_count()} CPUs")
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "bench_render.json")
        with open(path, "w") as f:
            json.dump({"benchmark": "render", "python": platform.python_version(), **r}, f, indent=2)
        print(f"  wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
