"""What kube-apiserver's decoder and name validation check in a write's body before any storage logic.

- `check_body`: the body is a JSON object whose apiVersion/kind fit the URL, with a well-typed metadata
  (labels and annotations maps of strings, string names, a list of string finalizers); `fieldValidation`
  applies to kinds that know their fields. Returns the object in storage form with private top-level and
  metadata dicts.
- `validate_name`: an object name a kind accepts (`metavalidation.name_messages`), refused with 422 naming
  `metadata.name`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from ingressctl.devcluster import errors
from ingressctl.devcluster.fields import TypedFields
from ingressctl.devcluster.metavalidation import name_messages
from ingressctl.devcluster.resources import Obj, ResourceKind


@dataclass
class BodyIssues:
    """What a strict decoder found in a request body before any schema: duplicate fields (JSON, YAML) and
    unknown JSON patch operation keys. `strict` are the items of a strict decoding error, `warnings` the
    Warning texts the same findings give under fieldValidation=Warn."""

    strict: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.strict or self.warnings)


def loads_json(raw: bytes | str) -> tuple[Any, BodyIssues]:
    """JSON decoded as Go's strict decoder reads it: a duplicate key keeps its last value and is reported
    (`duplicate field "spec.paused"`, in document order)."""
    found = False

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[Any, Any]:
        nonlocal found
        out: dict[Any, Any] = {}
        dups: list[str] = []
        for key, value in pairs:
            if key in out and key not in dups:
                dups.append(key)
            out[key] = value
        if dups:
            found = True
            out[_DUPS] = dups      # a key no JSON text can hold; removed below
        return out

    obj = json.loads(raw, object_pairs_hook=pairs_hook)
    issues = BodyIssues()
    if found:
        obj = _take_duplicates(obj, "", issues.strict)
        issues.warnings = list(issues.strict)
    return obj, issues


_DUPS = object()


def _take_duplicates(value: Any, path: str, out: list[str]) -> Any:
    if isinstance(value, dict):
        dups = value.pop(_DUPS, None) if _DUPS in value else None
        out.extend(f'duplicate field "{_join(path, k)}"' for k in dups or ())
        return {k: _take_duplicates(v, _join(path, k), out) for k, v in value.items()}
    if isinstance(value, list):
        return [_take_duplicates(v, f"{path}[{i}]", out) for i, v in enumerate(value)]
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _DuplicateKeysLoader(yaml.SafeLoader):
    """A safe YAML loader that records keys set twice in a mapping (the later value wins, as in Go)."""

    duplicates: list[str]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is not None and key in seen:
                self.duplicates.append(f'line {key_node.start_mark.line + 1}: key "{key}" already set in map')
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def loads_yaml(raw: bytes | str, *, strict_prefix: str = "yaml: unmarshal errors:") -> tuple[Any, BodyIssues]:
    """YAML decoded safely; keys set twice are reported as Go's YAML decoder words them."""
    loader = _DuplicateKeysLoader(raw)
    loader.duplicates = []
    try:
        obj = loader.get_single_data()
    finally:
        loader.dispose()
    issues = BodyIssues()
    if loader.duplicates:
        issues.strict = [strict_prefix + "".join(f"\n  {d}" for d in loader.duplicates)]
        issues.warnings = list(loader.duplicates)
    return obj, issues


_PATCH_OP_KEYS = ("op", "path", "value", "from")


def json_patch_issues(patch: Any, issues: BodyIssues) -> BodyIssues:
    """A JSON patch's own strict findings: unknown and duplicate keys of its operations, as kube-apiserver
    reports them (`json patch unknown field "[0].foo"`, `json patch duplicate field "[1].path"`)."""
    found = [f"json patch {d}" for d in issues.strict]
    if isinstance(patch, list):
        unknown = [f'json patch unknown field "[{i}].{k}"' for i, op in enumerate(patch)
                   if isinstance(op, dict) for k in op if k not in _PATCH_OP_KEYS]
        found = unknown + found
    return BodyIssues(found, list(found))


def go_map(value: Any) -> str:
    """A decoded value as Go's %+v prints a map[string]interface{} (keys sorted)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_map(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_map(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def check_body(kind: ResourceKind, body: Any, *, field_validation: str = "",
               warnings: list[str] | None = None, issues: BodyIssues | None = None,
               patch: Callable[[], str] | None = None) -> Obj:
    """Type checks a real API server's decoder makes; the body's apiVersion/kind must fit the URL.
    Returns the object in storage form with a private top-level dict and metadata dict.

    `field_validation` (the request's fieldValidation: Ignore, Warn, or Strict; absent means Warn, as in
    kube-apiserver) applies to the fields the kind's schema does not declare (`unknown_fields`, or the
    built-in type named by `typed`) and to `issues` found when the body was parsed: Strict refuses them
    (400 "strict decoding error", or for a patch's result, `patch` being the patch as the error shows it,
    422 on the field "patch"), Warn adds one warning each; under every directive unknown fields are dropped.
    """
    if not isinstance(body, dict):
        raise errors.bad_request(f"the body of the request must be a JSON object describing a "
                                 f"{kind.kind}")
    api_version = body.get("apiVersion")
    if api_version not in (None, "", kind.api_version):
        raise errors.bad_request(f"the API version in the data ({api_version}) does not match the "
                                 f"expected API version ({kind.api_version})")
    body_kind = body.get("kind")
    if body_kind not in (None, "", kind.kind):
        raise errors.bad_request(f"the kind in the data ({body_kind}) does not match the expected kind "
                                 f"({kind.kind})")
    meta = body.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata: expected an object")
    obj = dict(body)
    meta = obj["metadata"] = dict(meta)
    for name in ("labels", "annotations"):
        value = meta.get(name)
        if value is None:
            meta.pop(name, None)
        elif not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise errors.bad_request(f"metadata.{name}: expected a map of strings to strings")
    for name in ("name", "namespace", "generateName", "resourceVersion", "uid"):
        if meta.get(name) is not None and not isinstance(meta[name], str):
            raise errors.bad_request(f"metadata.{name}: expected a string")
    finalizers = meta.get("finalizers")
    if finalizers is not None and not (isinstance(finalizers, list)
                                       and all(isinstance(f, str) for f in finalizers)):
        raise errors.bad_request("metadata.finalizers: expected a list of strings")
    directive = field_validation or "Warn"
    typed = TypedFields.of(kind.typed) if kind.typed else None
    if directive == "Ignore":
        unknown: list[str] = []
    elif kind.unknown_fields is not None:
        unknown = kind.unknown_fields(obj)
    else:
        unknown = typed.unknown(obj) if typed is not None else []
    if patch is not None:
        unknown = sorted(unknown)     # a patch's result is checked as a map: kube-apiserver sorts the paths
    found = [*(issues.strict if issues else ()), *(f'unknown field "{path}"' for path in unknown)]
    if directive == "Strict" and found:
        message = "strict decoding error: " + ", ".join(found)
        if patch is not None:
            raise errors.invalid("", "", "", [("patch", "FieldValueInvalid",
                                               f"Invalid value: {json.dumps(patch())}: {message}")])
        raise errors.bad_request(f'{kind.kind} in version "{kind.version}" cannot be handled as a '
                                 f"{kind.kind}: {message}")
    if directive == "Warn" and warnings is not None:
        warnings.extend([*(issues.warnings if issues else ()), *(f'unknown field "{p}"' for p in unknown)])
    if typed is not None and (unknown or directive == "Ignore"):
        obj = typed.prune(obj)
    if kind.to_storage is not None:
        obj = kind.to_storage(obj)
    return obj


def validate_name(kind: ResourceKind, name: str) -> None:
    """Refuse (422 on `metadata.name`) a name the kind does not accept, worded as kube-apiserver's."""
    messages = name_messages(kind.storage_id, name)
    if messages:
        raise errors.invalid(kind.kind, kind.group, name, [
            ("metadata.name", "FieldValueInvalid", f"Invalid value: {json.dumps(name)}: {m}")
            for m in messages])
