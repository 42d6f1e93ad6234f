"""The start-up write path: N conf.d files and N/2 Secret files, as the sync thread writes them.

Renders N synthetic Ingresses once (bench_render's shape: two upstreams each, half with TLS), applies the
upstream-front transform as the Configurator does when NGINX loads that module, then measures on a fresh
conf dir each time (CPU time of this thread, best of the repeats):
- `ConfigFiles.write` of every file with dynamic upstreams on, after `prune_stale()` (start-up's case: each
  file known absent): the dynamic form (`DynamicUpstreams.slot`), one digest, the atomic write;
- `ConfigFiles.create_secret` of N/2 Secret files (certificate and key, ~1.3 kB) into an empty secrets dir;
- the same N writes again with the same bytes (no write: what a resync costs);
- `DynamicUpstreams.slot` alone over the N texts.

`--dir` puts the conf dirs on another file system (default: the system's temp dir; /dev/shm is a tmpfs).
Prints a table; `--out DIR` also writes DIR/bench_files.json. Numbers are reported, not asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_render import make_ingresses

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams, proxy_defaults
from ingressctl.configs.dynamic_upstreams import DynamicUpstreams
from ingressctl.configs.files import ConfigFiles
from ingressctl.configs.renderers import IngressRenderer, RenderContext
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.configs.upstream_front import front_upstreams
from ingressctl.keys import ResourceKey
from ingressctl.nginx.manager import Manager

_PEM = ((b"-----BEGIN CERTIFICATE-----\n" + (b"A" * 64 + b"\n") * 12 + b"-----END CERTIFICATE-----\n")
        + b"-----BEGIN EC PRIVATE KEY-----\n" + (b"B" * 64 + b"\n") * 3 + b"-----END EC PRIVATE KEY-----\n")


def rendered(n: int) -> list[tuple[ResourceKey, str, str]]:
    """(key, file name, text) of N Ingresses, rendered as the Configurator renders them."""
    params = ConfigParams()
    ctx = RenderContext(StaticConfigParams(), params, TemplateExecutor(),
                        proxy_defaults=proxy_defaults(params))
    renderer = IngressRenderer()
    return [(ResourceKey("Ingress", f"{ex.namespace}/{ex.name}"), f"{ex.namespace}-{ex.name}",
             front_upstreams(renderer.render(ex, ctx).text)) for ex in make_ingresses(n)]


def cpu(fn: Callable[[], object]) -> float:
    start = time.thread_time()
    fn()
    return time.thread_time() - start


def one_run(files: list[tuple[ResourceKey, str, str]], base_dir: str | None) -> dict[str, float]:
    base = tempfile.mkdtemp(prefix="bench-files-", dir=base_dir)
    try:
        manager = Manager(binary="nginx", conf_dir=f"{base}/conf", run_dir=f"{base}/run")
        engine = ConfigFiles(manager, DynamicUpstreams(f"unix:{base}/run/ingressctl-502-server.sock"))
        engine.prune_stale()
        gc.collect()

        def write_all() -> None:
            for key, name, text in files:
                engine.write(key, name, text)

        def secrets() -> None:
            for i, (_, name, _) in enumerate(files[: len(files) // 2]):
                engine.create_secret(f"{name}-tls", _PEM + str(i).encode())

        result = {"write_s": cpu(write_all), "secrets_s": cpu(secrets), "rewrite_same_s": cpu(write_all)}
        assert len(manager.list_configs()) == len(files)
        return result
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="directory for bench_files.json")
    parser.add_argument("--quick", action="store_true", help="1,000 Ingresses")
    parser.add_argument("-n", type=int, default=None, help="number of Ingresses (default 10000, quick 1000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the conf dirs go (default: the temp dir)")
    args = parser.parse_args(argv)
    n = args.n or (1000 if args.quick else 10000)
    files = rendered(n)
    runs = [one_run(files, args.dir) for _ in range(args.repeats)]
    r: dict[str, float] = {k: min(run[k] for run in runs) for k in runs[0]}
    dynamic = DynamicUpstreams("unix:/run/ingressctl-502-server.sock")
    r["slot_s"] = min(cpu(lambda: [dynamic.slot(name, text) for _, name, text in files])
                      for _ in range(args.repeats))
    rows = [
        (f"ConfigFiles.write, {n} new files (dynamic upstreams)", r["write_s"], n),
        (f"ConfigFiles.create_secret, {n // 2} new Secret files", r["secrets_s"], n // 2),
        (f"ConfigFiles.write, {n} unchanged files", r["rewrite_same_s"], n),
        (f"DynamicUpstreams.slot, {n} files", r["slot_s"], n),
    ]
    width = max(len(k) for k, _, _ in rows)
    print(f"bench_files: CPU time, best of {args.repeats}, in {args.dir or tempfile.gettempdir()}, "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs")
    for key, seconds, count in rows:
        print(f"  {key:<{width}}  {seconds * 1000:7.1f} ms  ({seconds / count * 1e6:.1f} us each)")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "bench_files.json")
        with open(path, "w") as f:
            json.dump({"benchmark": "files", "n": n, "dir": args.dir, "python": platform.python_version(),
                       **r, "runs": runs}, f, indent=2)
        print(f"  wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
