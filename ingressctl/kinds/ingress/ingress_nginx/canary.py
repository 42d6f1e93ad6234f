"""ingress-nginx's canary Ingresses (`canary`, `canary-weight`, `canary-weight-total`, `canary-by-header`,
`canary-by-header-value`, `canary-by-header-pattern`, `canary-by-cookie`): a canary attaches to the Ingress
that serves its host (the primary) and turns the primary's location of each of its paths into a choice
between the primary's upstream and its own.

Guarantees:
- `is_canary(obj)`: `canary` is Go-true (with `--ingress-nginx-compat`, such an Ingress is a child of the
  Ingress owning its first host, never a host owner: it loses no collision and wins none).
- `rules(annotations)`: ingress-nginx's values (the parsers in `values.py`); the header and cookie names are
  narrowed to what an NGINX variable can name (`$http_<name>`, `$cookie_<name>`), refused otherwise.
- `matching_paths(primary, canary, host)`: the canary's paths of `host` with the same path and pathType as a
  path of the primary; every other path is a warning for the canary (ingress-nginx skips it too).
- Per request, as ingress-nginx's balancer: the header first (`always` -> canary, `never` -> primary; with
  `canary-by-header-value` an exact match -> canary; with `canary-by-header-pattern`, when no value is set, a
  PCRE match -> canary; anything else falls through), then the cookie (`always` / `never`), then the weight:
  `weight / total` of the requests (total = `canary-weight-total` when above 100, else 100), by
  `split_clients` on `$request_id` with two decimals of a percent. NGINX `map`s with case-sensitive regexes
  chain the three; the location proxies to the variable of the first. A weight of 0 (or one that rounds to
  0.00%) sends nothing by weight, a weight >= total everything.
- The request runs through the primary's location (its rewrite, limits, timeouts); only the upstream
  changes, as in ingress-nginx. The canary's upstream is `<canary-ns>-<canary-name>-<host>-<svc>-<port>` with
  the primary's upstream settings. The canary's own other annotations are not applied (a warning names them).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ingressctl.configs.config import CanarySplit, ValueMap
from ingressctl.kinds.ingress.annotations import annotation_error
from ingressctl.kinds.ingress.ingress_nginx import values as v
from ingressctl.validation import parse_go_bool

PREFIX = "nginx.ingress.kubernetes.io/"
CANARY = PREFIX + "canary"
WEIGHT = PREFIX + "canary-weight"
WEIGHT_TOTAL = PREFIX + "canary-weight-total"
BY_HEADER = PREFIX + "canary-by-header"
BY_HEADER_VALUE = PREFIX + "canary-by-header-value"
BY_HEADER_PATTERN = PREFIX + "canary-by-header-pattern"
BY_COOKIE = PREFIX + "canary-by-cookie"
KEYS = (CANARY, WEIGHT, WEIGHT_TOTAL, BY_HEADER, BY_HEADER_VALUE, BY_HEADER_PATTERN, BY_COOKIE)
MAX_WEIGHT = 2147483647
_HEADER = re.compile(r"[A-Za-z0-9_-]{1,256}")
_COOKIE = re.compile(r"[A-Za-z0-9_]{1,256}")
_BASIC = re.compile(r"[-._~A-Za-z0-9/:]{1,1024}")  # ingress-nginx's BasicCharsRegex
# ingress-nginx's IsValidRegex: alphanumerics, `-._~/:` and `^$[](){}*+?|&=\`
_REGEX_CHARS = re.compile(r"[-._~A-Za-z0-9/:^$\[\](){}*+?|&=\\]{1,1024}")


def is_canary(obj: Mapping[str, Any]) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(CANARY)
    return isinstance(value, str) and parse_go_bool(value) is True


def weight(value: str) -> int:
    return v.integer(value, 0, MAX_WEIGHT)


def weight_total(value: str) -> int:
    return v.integer(value, 1, MAX_WEIGHT)


def header_name(value: str) -> str:
    if not _HEADER.fullmatch(value):
        raise ValueError("must be a header name of letters, digits, '-' and '_' (ingressctl reads the header "
                         "as the NGINX variable $http_<name>)")
    return value


def cookie_name(value: str) -> str:
    if not _COOKIE.fullmatch(value):
        raise ValueError("must be a cookie name of letters, digits and '_' (ingressctl reads the cookie as "
                         "the NGINX variable $cookie_<name>)")
    return value


def header_value(value: str) -> str:
    if not _BASIC.fullmatch(value):
        raise ValueError("must hold only letters, digits, '-', '.', '_', '~', '/' and ':'")
    return value


def header_pattern(value: str) -> str:
    if not _REGEX_CHARS.fullmatch(value):
        raise ValueError("must hold only letters, digits, '-', '.', '_', '~', '/', ':' and the regex "
                         "characters ^$[](){}*+?|&=\\")
    try:
        re.compile(value)
    except re.error as e:
        raise ValueError(f"not a valid regular expression ({e})") from None
    return value


@dataclass(frozen=True)
class Rules:
    weight: int = 0
    total: int = 100
    header: str = ""
    header_value: str = ""
    header_pattern: str = ""
    cookie: str = ""


PARSERS = {CANARY: v.go_bool, WEIGHT: weight, WEIGHT_TOTAL: weight_total, BY_HEADER: header_name,
           BY_HEADER_VALUE: header_value, BY_HEADER_PATTERN: header_pattern, BY_COOKIE: cookie_name}


def parse(annotations: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The canary annotations present (empty values skipped, as ingress-nginx), and an error per invalid one
    (`annotation <key>: Invalid value ...`, as the table's)."""
    parsed: dict[str, Any] = {}
    errors: list[str] = []
    for key in KEYS:
        value = annotations.get(key)
        if not isinstance(value, str) or value == "":
            continue
        try:
            parsed[key] = PARSERS[key](value)
        except ValueError as e:
            errors.append(annotation_error(key, value, str(e)))
    return parsed, errors


def parsed(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """A canary Ingress's parsed canary annotations; None when one is invalid."""
    values, errors = parse((obj.get("metadata") or {}).get("annotations") or {})
    return None if errors else values


def rules(parsed: Mapping[str, Any]) -> Rules:
    """The canary's rules from its parsed annotations (key -> value, as the table's parsers return them)."""
    total = parsed.get(WEIGHT_TOTAL, 100)
    return Rules(weight=parsed.get(WEIGHT, 0), total=total if total > 100 else 100,
                 header=parsed.get(BY_HEADER, ""), header_value=parsed.get(BY_HEADER_VALUE, ""),
                 header_pattern=parsed.get(BY_HEADER_PATTERN, ""), cookie=parsed.get(BY_COOKIE, ""))


def _paths(obj: Mapping[str, Any], host: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for rule in (obj.get("spec") or {}).get("rules") or []:
        if isinstance(rule, dict) and (rule.get("host") or "") == host:
            http = rule.get("http")
            out.extend(p for p in ((http.get("paths") if isinstance(http, dict) else None) or [])
                       if isinstance(p, dict))
    return out


def _path_key(p: Mapping[str, Any]) -> tuple[str, str]:
    return str(p.get("path") or "/"), str(p.get("pathType") or "ImplementationSpecific")


def matching_paths(primary: Mapping[str, Any], canary: Mapping[str, Any], host: str,
                   members: Sequence[Mapping[str, Any]] = ()) -> tuple[list[dict[str, Any]], list[str]]:
    """See the module docstring: (the canary's matching path entries, warnings for the others). `members`:
    the other Ingresses whose paths of the host the primary's server serves (a shared host)."""
    served = {_path_key(p) for ing in (primary, *members) for p in _paths(ing, host)}
    matched: list[dict[str, Any]] = []
    warnings: list[str] = []
    for p in _paths(canary, host):
        if _path_key(p) in served:
            matched.append(p)
        else:
            path, ptype = _path_key(p)
            warnings.append(f"canary path {path} ({ptype}) of host {host} has no path with the same pathType "
                            "in the primary Ingress; ignored")
    return matched, warnings


def canary_warnings(primary: Mapping[str, Any], obj: Mapping[str, Any],
                    hosts: Mapping[str, bool], members: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """What a canary Ingress gets told: invalid canary values (then nothing of it applies), its hosts the
    primary does not serve, its paths without a primary path, and its other annotations (not applied)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    _, errors = parse(annotations)
    if errors:
        return [f"the canary is not applied: {'; '.join(errors)}"]
    out: list[str] = []
    for host, served in hosts.items():
        if not served:
            out.append(f"canary host {host} is not served by the primary Ingress; ignored")
            continue
        out.extend(matching_paths(primary, obj, host, members)[1])
    ignored = sorted(k for k in annotations if k.startswith((PREFIX, "nginx.org/", "nginx.com/"))
                     and k not in KEYS)
    if ignored:
        out.append(f"annotation(s) {', '.join(ignored)} of a canary Ingress are not applied: its requests "
                   "take the primary Ingress's location settings (as ingress-nginx)")
    return out


def _regex_literal(text: str) -> str:
    """A BasicChars text as an exact regex (only `.` is special among those characters)."""
    return "^" + text.replace(".", "[.]") + "$"


def choice(rules: Rules, namespace: str, name: str, host: str, location: str, primary: str,
           canary: str) -> tuple[str, tuple[ValueMap, ...], tuple[CanarySplit, ...]]:
    """What a location proxies to (an upstream name, or the `$variable` of the first map), with the maps and
    the split that decide it (see the module docstring)."""
    digest = hashlib.sha1(f"{namespace}/{name}/{host}/{location}".encode()).hexdigest()[:16]
    var = f"$inn_canary_{digest}"
    splits: tuple[CanarySplit, ...] = ()
    if rules.weight <= 0:
        chosen = primary
    elif rules.weight >= rules.total:
        chosen = canary
    else:
        percent = f"{rules.weight * 100 / rules.total:.2f}".rstrip("0").rstrip(".")
        if percent == "0":
            chosen = primary
        else:
            chosen = var + "_weight"
            splits = (CanarySplit(variable=chosen, percent=percent, canary=canary, primary=primary),)
    maps: list[ValueMap] = []
    if rules.cookie:
        maps.append(ValueMap(source=f"$cookie_{rules.cookie}", variable=var + "_cookie",
                              entries=(("^always$", canary), ("^never$", primary)), default=chosen))
        chosen = var + "_cookie"
    if rules.header:
        source = "$http_" + rules.header.lower().replace("-", "_")
        if rules.header_value:
            entries: tuple[tuple[str, str], ...] = ((_regex_literal(rules.header_value), canary),)
        elif rules.header_pattern:  # an absent header does not count (an empty one neither)
            entries = (("^$", chosen), (rules.header_pattern, canary))
        else:
            entries = (("^always$", canary), ("^never$", primary))
        maps.append(ValueMap(source=source, variable=var + "_header", entries=entries, default=chosen))
        chosen = var + "_header"
    return chosen, tuple(reversed(maps)), splits
