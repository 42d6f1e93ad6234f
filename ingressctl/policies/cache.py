"""The `cache` Policy type: response caching (`proxy_cache`) in a zone of its own.

Validation (NIC 5.3's CRD patterns, CEL rules and `validateCache`):
- `validate_cache(field, spec)` returns every error at once; it never reads the cluster.
- Every field of NIC's cache type is checked: `cacheZoneName` (`^[a-z][a-zA-Z0-9_]*[a-zA-Z0-9]$|^[a-z]$`),
  `cacheZoneSize` (`<n>[kmgKMG]`), `levels` (`1`/`2` up to three levels), `inactive` and `time` (`<n>[smhd]`),
  `maxSize`/`minFree` (sizes), `useTempPath`, `manager{files>=1, sleep, threshold}` (times in ms or s),
  `allowedCodes` (100-599, or `any` alone; needs `time`), `allowedMethods` (at most GET, HEAD, POST),
  `cacheKey` (at most 1024 characters, none of `$(`, backtick, `;`, `&&`, `||`, not ending in `$`),
  `overrideUpstreamCache`, `cacheUseStale` (NGINX's conditions, no duplicates), `cacheRevalidate`,
  `cacheBackgroundUpdate`, `cacheMinUses` >= 1, `lock{enable, timeout, age}` (timeout and age need enable),
  `conditions{noCache[], bypass[]}`. `cachePurgeAllow` is NGINX Plus only and forbidden here.
- Stricter than NIC where NGINX would otherwise refuse the configuration at reload: `cacheKey` and the
  conditions may reference only variables NGINX knows (core variables and the `arg_`, `http_`, `cookie_`...
  prefixes), and carry no control characters or quotes.
Rendering (NIC 5.3's OSS rendering):
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
- cache: the zone `proxy_cache_path` at http level (one per owner and zone name), `proxy_cache...` in the
  context. First per context wins (warning).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from ingressctl.configs import parsing
from ingressctl.configs.configmaps import NIC_CACHE_DIR
from ingressctl.configs.quoting import arg, quote_vars, token
from ingressctl.policies.base import PolicyContext, PolicyResult, PolicyType, at_level, ignored, vsr_of
from ingressctl.policies.fields import boolean, enum_list
from ingressctl.validation import FieldError, as_dict, as_list, duplicate, forbidden, invalid, required

ZONE_NAME = re.compile(r"[a-z][a-zA-Z0-9_]*[a-zA-Z0-9]|[a-z]")
ZONE_SIZE = re.compile(r"[0-9]{1,9}[kmgKMG]")
LEVELS = re.compile(r"[12](?::[12]){0,2}")
CACHE_TIME = re.compile(r"[0-9]{1,9}[smhd]")
MANAGER_TIME = re.compile(r"[0-9]{1,9}(?:ms|s)")
SIZE = re.compile(r"[0-9]{1,12}[kmgKMG]?")
ALLOWED_METHODS = ("GET", "HEAD", "POST")
USE_STALE = ("error", "timeout", "invalid_header", "updating", "http_500", "http_502", "http_503", "http_504",
             "http_403", "http_404", "http_429", "off")
_DANGEROUS_KEY = ("$(", "`", ";", "&&", "||")
_CONDITION = re.compile(r"[^\s\"'\\;`\x00-\x1f\x7f]{1,1024}")


def _pattern(field: str, value: Any, pattern: re.Pattern[str], what: str) -> list[FieldError]:
    if value in (None, ""):
        return []
    if not isinstance(value, str) or not pattern.fullmatch(value):
        return [invalid(field, value, f"must be {what} (regex used for validation is '{pattern.pattern}')")]
    return []


def _variables(field: str, value: str) -> list[FieldError]:
    bad = parsing.unknown_variables(value)
    if bad:
        return [invalid(field, value, f"unknown NGINX variable(s): {', '.join(dict.fromkeys(bad))}")]
    return []


def _validate_codes(field: str, codes: Any, time: Any) -> list[FieldError]:
    if codes is None:
        return []
    if not isinstance(codes, list):
        return [invalid(field, codes, "must be a list")]
    errs: list[FieldError] = []
    if codes and not time:
        errs.append(required(field.rsplit(".", 1)[0] + ".time", "time is required when allowedCodes is set"))
    for i, code in enumerate(codes):
        if code == "any":
            if len(codes) > 1:
                errs.append(invalid(f"{field}[{i}]", code,
                                    "the string 'any' must be the only element of allowedCodes"))
            continue
        if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 599:
            errs.append(invalid(f"{field}[{i}]", code, "must be an HTTP status code between 100 and 599, "
                                                       "or the string 'any'"))
    seen = [c for c in codes if isinstance(c, int)]
    errs += [duplicate(field, c) for c in sorted({c for c in seen if seen.count(c) > 1})]
    return errs


def _validate_cache_key(field: str, key: Any) -> list[FieldError]:
    if key in (None, ""):
        return []
    if not isinstance(key, str):
        return [invalid(field, key, "must be a string")]
    if len(key) > 1024:
        return [invalid(field, key, "must be no more than 1024 characters")]
    for bad in _DANGEROUS_KEY:
        if bad in key:
            return [invalid(field, key, f"must not contain '{bad}'")]
    if key.endswith("$"):
        return [invalid(field, key, "must not end with '$'")]
    if not _CONDITION.fullmatch(key):
        return [invalid(field, key, "must not contain whitespace, quotes, backslashes or control "
                                    "characters")]
    return _variables(field, key)


def _validate_conditions(field: str, conditions: Any) -> list[FieldError]:
    if conditions is None:
        return []
    if not isinstance(conditions, dict):
        return [invalid(field, conditions, "must be an object")]
    errs: list[FieldError] = []
    for name in ("noCache", "bypass"):
        values = conditions.get(name)
        if values is None:
            continue
        if not isinstance(values, list):
            errs.append(invalid(f"{field}.{name}", values, "must be a list"))
            continue
        for i, v in enumerate(values):
            f = f"{field}.{name}[{i}]"
            if not isinstance(v, str) or not _CONDITION.fullmatch(v) or "$(" in v or v.endswith("$"):
                errs.append(invalid(f, v, "must be an NGINX variable expression such as $cookie_nocache "
                                          "(no whitespace, quotes, backslashes or ';')"))
            else:
                errs += _variables(f, v)
    return errs


def validate_cache(field: str, spec: Mapping[str, Any]) -> list[FieldError]:
    """See the module docstring."""
    errs: list[FieldError] = []
    name, size = spec.get("cacheZoneName"), spec.get("cacheZoneSize")
    if not name:
        errs.append(required(f"{field}.cacheZoneName"))
    else:
        errs += _pattern(f"{field}.cacheZoneName", name, ZONE_NAME, "a valid cache zone name")
    if not size:
        errs.append(required(f"{field}.cacheZoneSize"))
    else:
        errs += _pattern(f"{field}.cacheZoneSize", size, ZONE_SIZE, "a size such as 10m")
    errs += _pattern(f"{field}.levels", spec.get("levels"), LEVELS, "levels such as 1:2")
    errs += _pattern(f"{field}.inactive", spec.get("inactive"), CACHE_TIME, "a time such as 60m")
    errs += _pattern(f"{field}.time", spec.get("time"), CACHE_TIME, "a time such as 30s")
    errs += _pattern(f"{field}.maxSize", spec.get("maxSize"), SIZE, "a size such as 1g")
    errs += _pattern(f"{field}.minFree", spec.get("minFree"), SIZE, "a size such as 100m")
    for b in ("useTempPath", "overrideUpstreamCache", "cacheRevalidate", "cacheBackgroundUpdate"):
        errs += boolean(f"{field}.{b}", spec.get(b))
    manager = spec.get("manager")
    if manager is not None:
        m = manager if isinstance(manager, dict) else {}
        if not isinstance(manager, dict):
            errs.append(invalid(f"{field}.manager", manager, "must be an object"))
        files = m.get("files")
        if files is not None and (isinstance(files, bool) or not isinstance(files, int) or files < 1):
            errs.append(invalid(f"{field}.manager.files", files, "must be at least 1"))
        errs += _pattern(f"{field}.manager.sleep", m.get("sleep"), MANAGER_TIME, "a time such as 50ms")
        errs += _pattern(f"{field}.manager.threshold", m.get("threshold"), MANAGER_TIME,
                         "a time such as 200ms")
    errs += _validate_codes(f"{field}.allowedCodes", spec.get("allowedCodes"), spec.get("time"))
    errs += enum_list(f"{field}.allowedMethods", spec.get("allowedMethods"), ALLOWED_METHODS, maximum=3)
    errs += _validate_cache_key(f"{field}.cacheKey", spec.get("cacheKey"))
    errs += enum_list(f"{field}.cacheUseStale", spec.get("cacheUseStale"), USE_STALE)
    min_uses = spec.get("cacheMinUses")
    if min_uses is not None and (isinstance(min_uses, bool) or not isinstance(min_uses, int) or min_uses < 1):
        errs.append(invalid(f"{field}.cacheMinUses", min_uses, "must be at least 1"))
    lock = spec.get("lock")
    if lock is not None:
        lk = lock if isinstance(lock, dict) else {}
        if not isinstance(lock, dict):
            errs.append(invalid(f"{field}.lock", lock, "must be an object"))
        errs += boolean(f"{field}.lock.enable", lk.get("enable"))
        for t in ("timeout", "age"):
            errs += _pattern(f"{field}.lock.{t}", lk.get(t), CACHE_TIME, "a time such as 5s")
            if lk.get(t) and lk.get("enable") is not True:
                errs.append(forbidden(f"{field}.lock.{t}", "lock timeout and age require lock.enable to be "
                                                           "true"))
    errs += _validate_conditions(f"{field}.conditions", spec.get("conditions"))
    if spec.get("cachePurgeAllow"):
        errs.append(forbidden(f"{field}.cachePurgeAllow", "cache purge is only supported in NGINX Plus"))
    return errs


DEFAULT_CACHE_KEY = "$scheme$proxy_host$request_uri"
OVERRIDE_HEADERS = "Cache-Control Expires Set-Cookie Vary X-Accel-Expires"
_NAME_PART = re.compile(r"[^A-Za-z0-9_]")


def cache_zone_name(owner_ns: str, owner: str, zone: str, vsr: tuple[str, str] | None = None) -> str:
    """See the module docstring (characters NGINX would misread in a zone name become `_`)."""
    parts = [owner_ns, owner, "vs", *(vsr or ()), zone]
    return "_".join(_NAME_PART.sub("_", p) for p in parts)


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
    manager = as_dict(spec.get("manager"))
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
    codes = as_list(spec.get("allowedCodes"))
    if codes and time:
        lines += [f"proxy_cache_valid {token(str(c))} {token(time)};" for c in codes]
    elif time:
        lines.append(f"proxy_cache_valid {token(time)};")
    methods = as_list(spec.get("allowedMethods"))
    if methods:
        lines.append(f"proxy_cache_methods {' '.join(token(str(m)) for m in methods)};")
    if spec.get("overrideUpstreamCache") is True:
        lines.append(f"proxy_ignore_headers {OVERRIDE_HEADERS};")
    stale = as_list(spec.get("cacheUseStale"))
    if stale:
        lines.append(f"proxy_cache_use_stale {' '.join(token(str(s)) for s in stale)};")
    if spec.get("cacheRevalidate") is True:
        lines.append("proxy_cache_revalidate on;")
    if spec.get("cacheBackgroundUpdate") is True:
        lines.append("proxy_cache_background_update on;")
    min_uses = spec.get("cacheMinUses")
    if isinstance(min_uses, int) and not isinstance(min_uses, bool):
        lines.append(f"proxy_cache_min_uses {int(min_uses)};")
    lock = as_dict(spec.get("lock"))
    if lock.get("enable") is True:
        lines.append("proxy_cache_lock on;")
        for key in ("timeout", "age"):
            if lock.get(key):
                lines.append(f"proxy_cache_lock_{key} {token(str(lock[key]))};")
    conditions = as_dict(spec.get("conditions"))
    for key, directive in (("noCache", "proxy_no_cache"), ("bypass", "proxy_cache_bypass")):
        values = [str(v) for v in as_list(conditions.get(key))]
        if values:
            lines.append(f"{directive} {' '.join(quote_vars(v) for v in values)};")
    return lines


def render_cache(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        return ignored("Cache", ctx)
    zone = cache_zone_name(ctx.owner_namespace, ctx.owner_name, str(spec.get("cacheZoneName")), vsr_of(ctx))
    root = ctx.cache_dir or NIC_CACHE_DIR
    result = PolicyResult(http=[cache_path_line(spec, zone, root)], location=cache_lines(spec, zone))
    return at_level(result, ctx)


TYPE = PolicyType(
    key="cache",
    label="Cache",
    validate=lambda f, s, c: validate_cache(f, s),
    render=render_cache,
    fields_doc="every field of NIC 5.3 (see below)",
    nginx_doc="`proxy_cache_path` at http level, `proxy_cache*` in the server or location",
)
