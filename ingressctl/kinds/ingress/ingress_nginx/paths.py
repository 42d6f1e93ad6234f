"""ingress-nginx's path semantics (`use-regex`, `rewrite-target`): its regex mode, which is decided per host,
its locations and rewrites, and their order.

Guarantees:
- The value of `rewrite-target` is checked by `values.rewrite_target`.
- Regex mode (ingress-nginx's `enforceRegexModifier`): an Ingress wants it when it has `use-regex: "true"` or
  a `rewrite-target` that differs from one of its paths; an Ingress with `nginx.org/path-regex` keeps NIC's
  semantics (that annotation wins, with a warning when `use-regex` is set). When one Ingress of those
  ingressctl serves together for a host (a regular Ingress; a master and its minions) wants it, every path
  of all of them without `nginx.org/path-regex` becomes `location ~* "^<path>"` (case-insensitive, anchored
  at the start only, whatever the pathType), and must be a valid regular expression.
- `rewrite "(?i)<path>" <target> break;` for a path whose Ingress has a `rewrite-target` different from the
  path (the whole URI is replaced, as ingress-nginx does since 0.22.0); none when they are equal.
- A path `/` in regex mode (`location ~* "^/"`) is the server's root: no default-backend `location /` or
  404 fallback is added beside it (it would never be reached).
- `ordered(locations)`: the regex locations after the others, by descending path length, then descending
  path (ingress-nginx's two stable sorts); NGINX takes the first regex that matches.
- `strict_path_problem(path, path_type)`: ingress-nginx's `strict-validate-path-type` (on by default since
  1.12): a Prefix or Exact path holds only letters, digits, `.`, `_`, `-` and `/`; a regex needs
  ImplementationSpecific.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ingressctl.configs.config import REGEX, REGEX_CASE_INSENSITIVE, Location
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.kinds.ingress.settings import ingress_settings

USE_REGEX_KEY = "nginx.ingress.kubernetes.io/use-regex"
PATH_REGEX_KEY = "nginx.org/path-regex"
REWRITES_KEY = "nginx.org/rewrites"
_STRICT_PATH = re.compile(r"/[A-Za-z0-9._\-/]*")
IMPLEMENTATION_SPECIFIC = "ImplementationSpecific"


def ingress_paths(ing: Mapping[str, Any]) -> list[str]:
    """Every path of the Ingress's rules ("" read as "/", as ingress-nginx does)."""
    out: list[str] = []
    for rule in (ing.get("spec") or {}).get("rules") or []:
        http = rule.get("http") if isinstance(rule, dict) else None
        for p in (http.get("paths") if isinstance(http, dict) else None) or []:
            path = p.get("path") if isinstance(p, dict) else None
            out.append(path if isinstance(path, str) and path else "/")
    return out


def rewrites(params: ConfigParams, annotations: Mapping[str, Any]) -> bool:
    """Whether ingress-nginx's `rewrite-target` applies: set, and not displaced by `nginx.org/rewrites`."""
    return params.ingress_nginx_rewrite and bool(params.rewrite_target) and REWRITES_KEY not in annotations


def wants_regex(params: ConfigParams, annotations: Mapping[str, Any], ing: Mapping[str, Any],
                warnings: list[str] | None = None) -> bool:
    """Whether this Ingress turns its host's regex mode on (see the module docstring); `params`: its settings
    with ingress-nginx's annotations translated."""
    if not (params.ingress_nginx_use_regex or params.ingress_nginx_rewrite):
        return False  # (the cost for every other Ingress)
    target = params.rewrite_target
    rewriting = rewrites(params, annotations) and any(p != target for p in ingress_paths(ing))
    if not (params.ingress_nginx_use_regex or rewriting):
        return False
    if PATH_REGEX_KEY in annotations:
        if params.ingress_nginx_use_regex and warnings is not None:
            warnings.append(f"annotation {PATH_REGEX_KEY} wins over {USE_REGEX_KEY}; {USE_REGEX_KEY} is "
                            "ignored")
        return False
    return True


def modes(params: ConfigParams, annotations: Mapping[str, Any], ing: Mapping[str, Any], warnings: list[str],
          regex_host: bool | None) -> tuple[bool, bool]:
    """(ingress-nginx's rewrite applies, regex mode) of an Ingress's builder; `regex_host`: the host's mode
    when decided for a group (a master and its minions), None when this Ingress alone decides."""
    if warning := rewrite_warning(params, annotations):
        warnings.append(warning)
    wants = wants_regex(params, annotations, ing, warnings)
    return rewrites(params, annotations), wants if regex_host is None else regex_host


def group_wants_regex(group: Iterable[tuple[Mapping[str, Any], dict[str, str]]], config: ConfigParams,
                      static: StaticConfigParams) -> bool:
    """Whether one of the (Ingress, its annotations) served together for a host (a master and its minions)
    wants regex mode; an Ingress rejected for its annotations has no say."""
    for ing, anns in group:
        settings = ingress_settings(anns, config, static)
        if not settings.anns.errors and wants_regex(settings.params, anns, ing):
            return True
    return False


def rewrite_warning(params: ConfigParams, annotations: Mapping[str, Any]) -> str:
    """The warning for a `rewrite-target` that `nginx.org/rewrites` displaces ("" when none)."""
    if params.ingress_nginx_rewrite and params.rewrite_target and REWRITES_KEY in annotations:
        return (f"annotation {REWRITES_KEY} wins over nginx.ingress.kubernetes.io/rewrite-target; "
                "nginx.ingress.kubernetes.io/rewrite-target is ignored")
    return ""


def location_key(path: str) -> tuple[str, str]:
    """The location of a path in regex mode."""
    return REGEX_CASE_INSENSITIVE, "^" + path


def rewrite_pattern(path: str) -> str:
    """The regex of ingress-nginx's `rewrite` for a path (unanchored, case-insensitive, as ingress-nginx)."""
    return "(?i)" + path


def regex_problem(path: str) -> str:
    """Why the path is not a regular expression ("" when it is)."""
    try:
        re.compile(path)
    except re.error as e:
        return f"is not a valid regular expression ({e})"
    return ""


def strict_path_problem(path: str, path_type: str) -> str:
    """Why ingress-nginx's strict path validation refuses the path ("" when it does not)."""
    if not path or path_type == IMPLEMENTATION_SPECIFIC or _STRICT_PATH.fullmatch(path):
        return ""
    return (f"cannot be used with pathType {path_type} (ingress-nginx's strict-validate-path-type: a regular "
            "expression needs pathType ImplementationSpecific)")


def has_regex_root(locations: Iterable[Location]) -> bool:
    """Whether regex mode's `location ~* "^/"` is there: it answers every URI, as `location /` would."""
    return any(loc.path == "^/" and loc.modifier == REGEX_CASE_INSENSITIVE for loc in locations)


def ordered(locations: Iterable[Location]) -> list[Location]:
    """See the module docstring."""
    plain: list[Location] = []
    regex: list[Location] = []
    for loc in locations:
        (regex if loc.modifier in (REGEX, REGEX_CASE_INSENSITIVE) else plain).append(loc)
    regex.sort(key=lambda loc: loc.path, reverse=True)
    regex.sort(key=lambda loc: len(loc.path), reverse=True)
    return plain + regex
