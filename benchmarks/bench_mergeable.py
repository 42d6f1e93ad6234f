"""Mergeable Ingresses at the scale of NIC issue #9657: time to build the whole configuration.

Shape: 150 namespaces x 5 masters x 10 minions (750 masters, 7,500 minions; each minion in a namespace of its
own choosing, as NIC allows), every minion with two Prefix paths to its own Services.

Measured in one run, on the same objects:
- indexed (ingressctl): `Configuration` in start-up mode (validate and store each Ingress, with the
  minions-by-host index kept up to date), `set_startup_complete()` (ONE host resolution, minions attached from
  the index), then every master rendered with its minions (model + ingress.conf.j2);
- naive baseline: the same start-up store, but each master's minions found by scanning every stored Ingress
  (what a per-master scan costs: masters x Ingresses), then the same rendering;
- with `--legacy-namespaces N` (default 10, 0 to skip): `legacy_startup=True` (a full host rebuild on every
  Ingress, pre-5.5) against the indexed start-up on a smaller shape of N namespaces, since the legacy mode is
  quadratic.
Both full-shape paths must produce byte-identical configs (checked, not timed).

Prints a table; `--out DIR` also writes DIR/bench_mergeable.json; `--quick` uses 15 namespaces and one
repeat. Numbers are reported, not asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.controller.configuration import Configuration, IngressConfiguration
from ingressctl.kinds.ingress.annotation_validation import get_annotations
from ingressctl.kinds.ingress.config import generate_nginx_config_for_mergeable
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key

MASTERS_PER_NAMESPACE = 5
MINIONS_PER_MASTER = 10


def _ingress(ns: str, name: str, host: str, kind: str, paths: list[tuple[str, str]],
             n: int) -> dict[str, Any]:
    rule: dict[str, Any] = {"host": host}
    if paths:
        rule["http"] = {"paths": [{"path": p, "pathType": "Prefix",
                                   "backend": {"service": {"name": svc, "port": {"number": 8080}}}}
                                  for p, svc in paths]}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"namespace": ns, "name": name, "uid": f"{n:08d}", "generation": 1,
                         "creationTimestamp": f"2024-01-{1 + n // 86400:02d}T{n // 3600 % 24:02d}:"
                                              f"{n // 60 % 60:02d}:{n % 60:02d}Z",
                         "annotations": {"nginx.org/mergeable-ingress-type": kind,
                                         "nginx.org/proxy-read-timeout": "30s"}},
            "spec": {"ingressClassName": "nginx", "rules": [rule]}}


def make_objects(namespaces: int) -> list[dict[str, Any]]:
    """Masters and minions, interleaved as a cluster list would return them (by namespace, then name)."""
    objs: list[dict[str, Any]] = []
    n = 0
    for i in range(namespaces):
        for j in range(MASTERS_PER_NAMESPACE):
            host = f"shop{j}.ns{i}.example.com"
            objs.append(_ingress(f"ns{i}", f"shop{j}", host, "master", [], n))
            n += 1
            for k in range(MINIONS_PER_MASTER):
                ns = f"ns{(i + k) % namespaces}"
                name = f"shop{j}-ns{i}-part{k}"
                objs.append(_ingress(ns, name, host, "minion", [(f"/part{k}", f"{name}-web"),
                                                                (f"/part{k}-api", f"{name}-api")], n))
                n += 1
    objs.sort(key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"]))
    return objs


def _ex(obj: dict[str, Any], valid_paths: dict[str, bool] | None, valid_hosts: dict[str, bool]) -> IngressEx:
    endpoints: dict[str, list[str]] = {}
    uid = int(obj["metadata"]["uid"])
    for p in (obj["spec"]["rules"][0].get("http") or {}).get("paths") or []:
        svc = p["backend"]["service"]["name"]
        a, b, c = uid // 65536 % 100, uid // 256 % 256, uid % 256
        endpoints[backend_key(svc, 8080)] = [f"10.{a}.{b}.{c}:8080", f"10.{a + 100}.{b}.{c}:8080"]
    return IngressEx(obj, dict(valid_hosts), endpoints, valid_minion_paths=dict(valid_paths or {}))


def mergeable(master: dict[str, Any], minions: list[tuple[dict[str, Any], dict[str, bool]]],
              valid_hosts: dict[str, bool]) -> MergeableIngresses:
    return MergeableIngresses(_ex(master, None, valid_hosts), [_ex(m, vp, valid_hosts) for m, vp in minions])


def render_all(items: list[MergeableIngresses], static: StaticConfigParams, params: ConfigParams,
               templates: TemplateExecutor) -> list[str]:
    return [templates.execute_ingress_template(generate_nginx_config_for_mergeable(m, static, params).config)
            for m in items]


def indexed(objs: list[dict[str, Any]]) -> tuple[dict[str, float], list[MergeableIngresses]]:
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    conf = Configuration(ingress_class="nginx")
    for o in objs:
        conf.add_or_update_ingress(o)
    times["store_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    changes, problems = conf.set_startup_complete()
    assert not problems, problems[:3]
    times["resolve_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    items = [mergeable(c.resource.ingress, [(m.ingress, m.valid_paths) for m in c.resource.minions],
                       c.resource.valid_hosts) for c in changes]
    times["ingress_ex_s"] = time.perf_counter() - t0
    return times, items


def _minion_paths(ing: dict[str, Any]) -> list[str]:
    return [str(p.get("path", "")) for p in (ing["spec"]["rules"][0].get("http") or {}).get("paths") or []]


def naive(objs: list[dict[str, Any]]) -> tuple[dict[str, float], list[MergeableIngresses]]:
    """The same start-up store, but minions found per master by scanning every Ingress (path conflicts
    resolved the same way: the first claimant in key order takes a path, an older one takes it over)."""
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    conf = Configuration(ingress_class="nginx")
    for o in objs:
        conf.add_or_update_ingress(o)
    times["store_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    changes, _ = conf.set_startup_complete()
    masters: list[IngressConfiguration] = [c.resource for c in changes]
    times["resolve_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    stored = [conf.get_ingress(k) for k in sorted(o["metadata"]["namespace"] + "/" + o["metadata"]["name"]
                                                  for o in objs)]
    items = []
    for res in masters:
        host = res.ingress["spec"]["rules"][0]["host"]
        minions = [m for m in stored if m is not None and get_annotations(m).get(
            "nginx.org/mergeable-ingress-type") == "minion" and m["spec"]["rules"][0].get("host") == host]
        owner: dict[str, dict[str, Any]] = {}
        for m in minions:
            for p in _minion_paths(m):
                cur = owner.get(p)
                if cur is None or m["metadata"]["creationTimestamp"] < cur["metadata"]["creationTimestamp"]:
                    owner[p] = m
        won = [(m, {p: owner[p] is m for p in _minion_paths(m)}) for m in minions]
        items.append(mergeable(res.ingress, won, res.valid_hosts))
    times["ingress_ex_s"] = time.perf_counter() - t0
    return times, items


def legacy(objs: list[dict[str, Any]]) -> dict[str, float]:
    t0 = time.perf_counter()
    conf = Configuration(ingress_class="nginx", legacy_startup=True)
    for o in objs:
        conf.add_or_update_ingress(o)
    store = time.perf_counter() - t0
    t0 = time.perf_counter()
    conf.set_startup_complete()
    return {"store_s": store, "resolve_s": time.perf_counter() - t0}


def best(repeats: int, fn: Callable[[], Any]) -> Any:
    results = []
    for _ in range(repeats):
        gc.collect()
        results.append(fn())
    return min(results, key=lambda r: sum(r[0].values()) if isinstance(r, tuple) else sum(r.values()))


def run(namespaces: int, repeats: int, legacy_namespaces: int) -> dict[str, Any]:
    static = StaticConfigParams()
    params = ConfigParams()
    templates = TemplateExecutor()
    objs = make_objects(namespaces)
    masters = namespaces * MASTERS_PER_NAMESPACE
    r: dict[str, Any] = {"namespaces": namespaces, "masters": masters,
                         "minions": masters * MINIONS_PER_MASTER, "repeats": repeats}
    for label, fn in (("indexed", indexed), ("naive", naive)):
        times, items = best(repeats, lambda fn=fn: fn(objs))  # type: ignore[misc]
        t0 = time.perf_counter()
        texts = render_all(items, static, params, templates)
        times["render_s"] = time.perf_counter() - t0
        times["total_s"] = sum(times.values())
        r[label] = times
        r[f"{label}_bytes"] = sum(len(t) for t in texts)
        r[f"{label}_digest"] = hash(tuple(texts))
    r["identical_configs"] = r.pop("indexed_digest") == r.pop("naive_digest")
    r["find_minions_speedup"] = (r["naive"]["resolve_s"] + r["naive"]["ingress_ex_s"]) / max(
        1e-9, r["indexed"]["resolve_s"] + r["indexed"]["ingress_ex_s"])
    r["total_speedup"] = r["naive"]["total_s"] / max(1e-9, r["indexed"]["total_s"])
    if legacy_namespaces:
        small = make_objects(legacy_namespaces)
        r["legacy_shape"] = {"namespaces": legacy_namespaces, "ingresses": len(small)}
        r["legacy_startup"] = legacy(small)
        r["indexed_small"] = indexed(small)[0]
    return r


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="directory for bench_mergeable.json")
    parser.add_argument("--quick", action="store_true", help="15 namespaces, one repeat")
    parser.add_argument("--namespaces", type=int, default=None, help="default 150 (quick: 15)")
    parser.add_argument("--legacy-namespaces", type=int, default=None,
                        help="shape for the legacy start-up comparison (default 10, quick 5; 0 skips it)")
    args = parser.parse_args(argv)
    namespaces = args.namespaces or (15 if args.quick else 150)
    legacy_ns = args.legacy_namespaces if args.legacy_namespaces is not None else (5 if args.quick else 10)
    repeats = 1 if args.quick else 2
    r = run(namespaces, repeats, legacy_ns)
    ix, nv = r["indexed"], r["naive"]
    print(f"bench_mergeable: {namespaces} namespaces x {MASTERS_PER_NAMESPACE} masters x "
          f"{MINIONS_PER_MASTER} minions ({r['masters']} masters, {r['minions']} minions), "
          f"best of {repeats}, Python {platform.python_version()}, {os.cpu_count()} CPUs")
    rows = [("phase", "indexed (ms)", "naive scan (ms)")]
    for key, label in (("store_s", "validate + store (start-up mode)"),
                       ("resolve_s", "set_startup_complete (host resolution)"),
                       ("ingress_ex_s", "find minions + build IngressEx"),
                       ("render_s", "render every master (model + template)"),
                       ("total_s", "total")):
        rows.append((label, f"{ix[key] * 1000:.1f}", f"{nv[key] * 1000:.1f}"))
    width = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print(f"  {row[0]:<{width[0]}}  {row[1]:>{width[1]}}  {row[2]:>{width[2]}}")
    print(f"  finding minions: {r['find_minions_speedup']:.1f}x faster indexed; "
          f"total {r['total_speedup']:.2f}x; identical configs: {r['identical_configs']}; "
          f"{r['indexed_bytes'] / 1e6:.1f} MB of config")
    if legacy_ns:
        lg, sm = r["legacy_startup"], r["indexed_small"]
        print(f"  legacy_startup (pre-5.5, a host rebuild per Ingress) at {legacy_ns} namespaces "
              f"({r['legacy_shape']['ingresses']} Ingresses): store {lg['store_s'] * 1000:.1f} ms + resolve "
              f"{lg['resolve_s'] * 1000:.1f} ms vs indexed {sm['store_s'] * 1000:.1f} + "
              f"{sm['resolve_s'] * 1000:.1f} ms")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "bench_mergeable.json")
        with open(path, "w") as f:
            json.dump({"benchmark": "mergeable", "python": platform.python_version(), **r}, f, indent=2)
        print(f"  wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
