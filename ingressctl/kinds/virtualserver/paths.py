"""VirtualServer and VirtualServerRoute paths (NIC 5.5): the path forms, their normalisation and the rules
that tie a VirtualServerRoute's subroutes to the VirtualServer routes delegating to it.

Guarantees:
- `validate_path` accepts NIC 5.5's forms: prefix `/p`, exact `=/p`, longest prefix `^~/p`, regex `~re` /
  `~*re`, with optional whitespace after the modifier; prefix paths (and those after `=` and `^~`) have no
  whitespace, `{`, `}`, `;` or `\\`, no leading `//` and no `..` segment; a regex compiles and has every `"`
  escaped. Errors are apimachinery field errors with NIC's wording.
- `normalize_path` is the form paths are compared in (`= /x` is `=/x`); `modifier_category` is NIC's kind of a
  path (regex, exact, longest-prefix, prefix).
- `vsr_fit_errors` and `vsr_reference_errors` are NIC 5.5's VirtualServerRoute path rules (see each).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ingressctl.validation import CONTROL, ESCAPED, FieldError, as_dict, as_list, as_str, invalid, required

_PREFIX_PATH = re.compile(r"/[^\s{};\\]*")


_d, _l, _s = as_dict, as_list, as_str


_PREFIX_MSG = "must start with / and must not include any whitespace character, `{`, `}` or `;`"


def path_modifier(path: str) -> tuple[str, str]:
    """A route path's NGINX modifier (`""`, `=`, `^~`, `~`, `~*`) and its path or regex, the whitespace
    after the modifier removed (NIC 5.5's `NormalizePath`)."""
    for modifier in ("^~", "~*", "~", "="):
        if path.startswith(modifier):
            return modifier, path[len(modifier):].lstrip(" \t")
    return "", path


def normalize_path(path: str) -> str:
    """The form paths are compared in (duplicates, VirtualServerRoute fit): `= /x` equals `=/x`."""
    modifier, rest = path_modifier(path)
    return modifier + rest


def modifier_category(path: str) -> str:
    """NIC 5.5's categories of a path: regex (`~`, `~*`), exact, longest-prefix (`^~`) or prefix."""
    modifier = path_modifier(path)[0]
    return {"~": "regex", "~*": "regex", "=": "exact", "^~": "longest-prefix"}.get(modifier, "prefix")


def _prefix_path_errors(field: str, original: str, path: str) -> list[FieldError]:
    """NIC 5.5's prefix-path rule (shared with Ingress paths): no whitespace, `{`, `}`, `;` or `\\`, no
    leading `//`, no `..` segment."""
    if not _PREFIX_PATH.fullmatch(path):
        return [invalid(field, original, _PREFIX_MSG)]
    errs: list[FieldError] = []
    if path.startswith("//"):
        errs.append(invalid(field, original, "must not start with '//' (a protocol-relative URL)"))
    if ".." in re.split(r"[/\\]", path):
        errs.append(invalid(field, original, "must not contain '..' path segments"))
    return errs


def validate_path(field: str, path: Any) -> list[FieldError]:
    """prefix `/p`, exact `=/p`, longest-prefix `^~/p`, regex `~re` / `~*re` (NIC 5.5's path forms; whitespace
    after the modifier is allowed and removed)."""
    if not isinstance(path, str) or not path:
        return [required(field)]
    if CONTROL.search(path):
        return [invalid(field, path, "must not contain control characters")]
    modifier, rest = path_modifier(path)
    if modifier in ("=", "^~"):
        return _prefix_path_errors(field, path, rest)
    if modifier in ("~", "~*"):
        errs: list[FieldError] = []
        if not ESCAPED.fullmatch(rest):
            errs.append(invalid(field, path, 'a valid path must have all \'"\' escaped'))
        try:
            re.compile(rest)
        except re.error as e:
            errs.append(invalid(field, path, f"must be a valid regular expression: {e}"))
        if rest.endswith("\\") and not rest.endswith("\\\\"):
            errs.append(invalid(field, path, "must not end with a lone \\"))
        return errs
    if path.startswith("/"):
        return _prefix_path_errors(field, path, path)
    return [invalid(field, path, "must start with /, ~, ^~ or =")]


def vsr_fit_errors(route_paths: Sequence[str] | str, vsr: Mapping[str, Any]) -> list[str]:
    """How a valid VirtualServerRoute fails the VirtualServer route(s) delegating to it (NIC 5.5's
    `ValidateVirtualServerRouteForVirtualServer`): under regex routes its subroute paths are exactly those
    routes' paths; under an exact path it has exactly one subroute, with that path; under a prefix (or `^~`)
    path every subroute path starts with it. Paths are compared normalised (`= /x` is `=/x`)."""
    paths = [route_paths] if isinstance(route_paths, str) else list(route_paths)
    subroutes = [normalize_path(_s(_d(r).get("path"))) for r in _l(_d(vsr.get("spec")).get("subroutes"))]
    first = normalize_path(paths[0]) if paths else ""
    category = modifier_category(first)
    if category == "regex":
        want = {normalize_path(p) for p in paths}
        errs = [f"spec.subroutes: Required value: must have a subroute with the path {p!r}"
                for p in sorted(want - set(subroutes))]
        errs += [f"spec.subroutes[{i}].path: Invalid value: {p!r}: must be the path of a VirtualServer route "
                 "that references this VirtualServerRoute" for i, p in enumerate(subroutes) if p not in want]
        return errs
    if category == "exact":
        if len(subroutes) != 1 or subroutes[0] != first:
            return [f"spec.subroutes: must have exactly one subroute with the path {paths[0]!r}"]
        return []
    return [f"spec.subroutes[{i}].path: Invalid value: {p!r}: must start with {first!r}"
            for i, p in enumerate(subroutes) if not p.startswith(first)]


def vsr_reference_errors(namespace: str, routes: list[Any]) -> list[FieldError]:
    """NIC 5.5: routes of one VirtualServer that reference the same VirtualServerRoute must use the same kind
    of path (regex, exact, `^~` or prefix)."""
    seen: dict[str, str] = {}
    errs: list[FieldError] = []
    for i, route in enumerate(routes):
        rd = _d(route)
        ref, path = _s(rd.get("route")), _s(rd.get("path"))
        if not ref or not path:
            continue
        key = ref if "/" in ref else f"{namespace}/{ref}"
        category = modifier_category(path)
        if seen.setdefault(key, category) != category:
            errs.append(invalid(f"spec.routes[{i}].route", ref, "routes referencing the same "
                                "VirtualServerRoute must all use the same path modifier type"))
    return errs
