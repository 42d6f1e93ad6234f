"""Validation of the `cache` Policy type (NIC 5.3's CRD patterns, CEL rules and `validateCache`), with NIC's
field-error messages.

Guarantees:
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
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingressctl.configs import parsing
from ingressctl.controller.policy_validation_fields import boolean, enum_list
from ingressctl.validation import FieldError, duplicate, forbidden, invalid, required

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
