"""NGINX directives of the `cache` Policy type (NIC 5.3's OSS rendering).

Guarantees:
- `cache_zone_name(owner_ns, owner, zone, vsr=None)`: NIC's zone name, `<ns>_<vs>_vs_<zone>`, or
  `<ns>_<vs>_vs_<vsrNs>_<vsr>_<zone>` when a VirtualServerRoute holds the policy: a policy shared by two
  resources gets two zones, and one resource gets one zone per cache zone name.
- `cache_path_line(spec, zone, root)`: the http-level `proxy_cache_path <root>/<zone> [levels=]
  keys_zone=<zone>:<size> [inactive=] [max_size=] [min_free=] use_temp_path=off|on [manager_*=];`.
  `root` is the cache directory of the static configuration (`StaticConfigParams.cache_dir`, chosen by
  `prepare_cache_dir` at start-up: NIC's `/var/cache/nginx` when the controller may write there, else
  `<run-dir>/cache`); NGINX creates the zone's directory itself.
- `cache_lines(spec, zone)`: the `proxy_cache` directives of the server or location: `proxy_cache`,
  `proxy_cache_key` (default `$scheme$proxy_host$request_uri`), `proxy_cache_valid` (one per code, or the
  time alone), `proxy_cache_methods`, `proxy_ignore_headers` (overrideUpstreamCache), `proxy_cache_use_stale`,
  `_revalidate`, `_background_update`, `_min_uses`, `_lock`/`_lock_timeout`/`_lock_age`, `proxy_no_cache`,
  `proxy_cache_bypass`.
- Every value passes a quoting filter: no input can add a directive.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from typing import Any

from ingressctl.configs.quoting import arg, quote_vars, token

DEFAULT_CACHE_KEY = "$scheme$proxy_host$request_uri"
NIC_CACHE_DIR = "/var/cache/nginx"
OVERRIDE_HEADERS = "Cache-Control Expires Set-Cookie Vary X-Accel-Expires"
_NAME_PART = re.compile(r"[^A-Za-z0-9_]")


def prepare_cache_dir(run_dir: str) -> str:
    """At start-up: NIC's `/var/cache/nginx` when it exists and this process may create zones there, else
    `<run_dir>/cache`, created here (0755: NGINX creates each zone's directory in it, owned by the worker
    user), so an unprivileged controller can still serve cache policies."""
    if os.path.isdir(NIC_CACHE_DIR) and os.access(NIC_CACHE_DIR, os.W_OK | os.X_OK):
        return NIC_CACHE_DIR
    path = os.path.join(run_dir, "cache")
    with contextlib.suppress(OSError):   # NGINX then reports the path on the resources using a cache policy
        os.makedirs(path, mode=0o755, exist_ok=True)
    return path


def cache_zone_name(owner_ns: str, owner: str, zone: str, vsr: tuple[str, str] | None = None) -> str:
    """See the module docstring (characters NGINX would misread in a zone name become `_`)."""
    parts = [owner_ns, owner, "vs", *(vsr or ()), zone]
    return "_".join(_NAME_PART.sub("_", p) for p in parts)


def _l(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


_KEYS_ZONE = re.compile(r"proxy_cache_path .* keys_zone=([^:\s]+):")


def cache_zone_of(line: str) -> tuple[str, str] | None:
    """(zone, line) of a `proxy_cache_path` line of `cache_path_line`; None for other lines."""
    m = _KEYS_ZONE.match(line)
    return (m.group(1), line) if m else None


def cache_path_line(spec: Mapping[str, Any], zone: str, root: str) -> str:
    """See the module docstring."""
    params = [arg(os.path.join(root, zone))]
    if spec.get("levels"):
        params.append(f"levels={token(str(spec['levels']))}")
    params.append(f"keys_zone={token(zone)}:{token(str(spec.get('cacheZoneSize')))}")
    for key, name in (("inactive", "inactive"), ("maxSize", "max_size"), ("minFree", "min_free")):
        if spec.get(key):
            params.append(f"{name}={token(str(spec[key]))}")
    params.append(f"use_temp_path={'on' if spec.get('useTempPath') is True else 'off'}")
    manager = _d(spec.get("manager"))
    if isinstance(manager.get("files"), int) and not isinstance(manager.get("files"), bool):
        params.append(f"manager_files={int(manager['files'])}")
    for key in ("sleep", "threshold"):
        if manager.get(key):
            params.append(f"manager_{key}={token(str(manager[key]))}")
    return f"proxy_cache_path {' '.join(params)};"


def cache_lines(spec: Mapping[str, Any], zone: str) -> list[str]:
    """See the module docstring."""
    lines = [f"proxy_cache {token(zone)};",
             f"proxy_cache_key {quote_vars(str(spec.get('cacheKey') or DEFAULT_CACHE_KEY))};"]
    time = str(spec.get("time") or "")
    codes = _l(spec.get("allowedCodes"))
    if codes and time:
        lines += [f"proxy_cache_valid {token(str(c))} {token(time)};" for c in codes]
    elif time:
        lines.append(f"proxy_cache_valid {token(time)};")
    methods = _l(spec.get("allowedMethods"))
    if methods:
        lines.append(f"proxy_cache_methods {' '.join(token(str(m)) for m in methods)};")
    if spec.get("overrideUpstreamCache") is True:
        lines.append(f"proxy_ignore_headers {OVERRIDE_HEADERS};")
    stale = _l(spec.get("cacheUseStale"))
    if stale:
        lines.append(f"proxy_cache_use_stale {' '.join(token(str(s)) for s in stale)};")
    if spec.get("cacheRevalidate") is True:
        lines.append("proxy_cache_revalidate on;")
    if spec.get("cacheBackgroundUpdate") is True:
        lines.append("proxy_cache_background_update on;")
    min_uses = spec.get("cacheMinUses")
    if isinstance(min_uses, int) and not isinstance(min_uses, bool):
        lines.append(f"proxy_cache_min_uses {int(min_uses)};")
    lock = _d(spec.get("lock"))
    if lock.get("enable") is True:
        lines.append("proxy_cache_lock on;")
        for key in ("timeout", "age"):
            if lock.get(key):
                lines.append(f"proxy_cache_lock_{key} {token(str(lock[key]))};")
    conditions = _d(spec.get("conditions"))
    for key, directive in (("noCache", "proxy_no_cache"), ("bypass", "proxy_cache_bypass")):
        values = [str(v) for v in _l(conditions.get(key))]
        if values:
            lines.append(f"{directive} {' '.join(quote_vars(v) for v in values)};")
    return lines
