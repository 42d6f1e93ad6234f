"""The three patch formats of the Kubernetes API, applied to plain JSON values.

- `merge_patch`: JSON merge patch, RFC 7386 (`application/merge-patch+json`).
- `json_patch`: JSON patch, RFC 6902 (`application/json-patch+json`), all six operations including `test`.
- `strategic_merge_patch`: Kubernetes strategic merge patch (`application/strategic-merge-patch+json`)
  driven by a `FieldMeta` tree (the `patchStrategy`/`patchMergeKey` tags of the Go types), with the
  directives kubectl sends: `$patch: replace|delete|merge`, `$setElementOrder/<field>`,
  `$deleteFromPrimitiveList/<field>` and `$retainKeys`. Lists without a merge key or strategy are atomic
  (replaced), as in Kubernetes.

All functions may modify `target` in place and return the result; callers pass a private copy. Errors raise
`PatchError` (the server maps it to 422, or 400 for a malformed patch document).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class PatchError(Exception):
    """The patch cannot be applied (a failed `test`, a missing path, a bad directive)."""


class PatchFormatError(PatchError):
    """The patch document itself is malformed."""


@dataclass(frozen=True)
class FieldMeta:
    """Strategic-merge metadata for one field (and, for lists of maps, for their elements).

    merge_key: the list holds maps merged by this key (`patchStrategy:"merge" patchMergeKey:"..."`).
    merge_primitives: the list holds scalars merged as a set (`patchStrategy:"merge"` on []string).
    retain_keys: `patchStrategy:"retainKeys"` (honours `$retainKeys`).
    fields: metadata of the map's fields (or of each list element's fields).
    """

    merge_key: str = ""
    merge_primitives: bool = False
    retain_keys: bool = False
    fields: Mapping[str, FieldMeta] = field(default_factory=dict)

    def child(self, name: str) -> FieldMeta:
        return self.fields.get(name, _EMPTY)


_EMPTY = FieldMeta()

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


# ---------------------------------------------------------------------------------------- RFC 7386
def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch: maps merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = merge_patch(target.get(key), value)
    return target


# ---------------------------------------------------------------------------------------- RFC 6902
def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str):
        raise PatchFormatError(f"path must be a string, got {path!r}")
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchFormatError(f"JSON pointer must start with '/': {path!r}")
    return [_unescape(t) for t in path[1:].split("/")]


def _index(container: list[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    idx = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if idx > limit:
        raise PatchError(f"array index {idx} out of bounds")
    return idx


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f"path {path!r} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, allow_end=False)]
        else:
            raise PatchError(f"path {path!r} does not exist")
    return node


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {path!r} does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, allow_end=False)]
    raise PatchError(f"path {path!r} does not exist")


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise PatchError(f"cannot add at {path!r}: parent is not a container")
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    tokens = _pointer(path)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"unable to remove nonexistent key {last!r} at {path!r}")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, allow_end=False))
    raise PatchError(f"path {path!r} does not exist")


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def json_patch(target: Any, operations: Any) -> Any:
    """Apply an RFC 6902 JSON patch (a list of operations) to `target`."""
    if not isinstance(operations, list):
        raise PatchFormatError("a JSON patch must be a list of operations")
    doc = target
    for op in operations:
        if not isinstance(op, dict) or not isinstance(op.get("op"), str):
            raise PatchFormatError(f"invalid JSON patch operation: {op!r}")
        kind = op["op"]
        path = op.get("path")
        if not isinstance(path, str):
            raise PatchFormatError(f"operation {kind!r} is missing a string 'path'")
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchFormatError(f"operation {kind!r} is missing 'value'")
        if kind == "add":
            doc = _add(doc, path, _copy(op["value"]))
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            if not _pointer(path):
                doc = _copy(op["value"])
            else:
                doc, _ = _remove(doc, path)
                doc = _add(doc, path, _copy(op["value"]))
        elif kind in ("move", "copy"):
            source = op.get("from")
            if not isinstance(source, str):
                raise PatchFormatError(f"operation {kind!r} is missing a string 'from'")
            if kind == "move":
                if path.startswith(source + "/"):
                    raise PatchError(f"cannot move {source!r} into its own child {path!r}")
                doc, value = _remove(doc, source)
            else:
                value = _copy(_get(doc, source))
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise PatchError(f"testing value {path} failed")
        else:
            raise PatchFormatError(f"unknown JSON patch operation {kind!r}")
    return doc


# --------------------------------------------------------------------------------------- strategic
def _strip(value: Any, meta: FieldMeta) -> Any:
    """A new value (no original): merge with an empty original so directives are applied and removed."""
    if isinstance(value, dict):
        return _merge_map({}, value, meta)
    if isinstance(value, list):
        return _merge_list([], value, meta)
    return value


def _merge_map(original: dict[str, Any], patch: dict[str, Any], meta: FieldMeta) -> dict[str, Any]:
    directive = patch.get(_DIRECTIVE, "merge")
    if directive == "replace":
        return {k: _strip(v, meta.child(k)) for k, v in patch.items() if k != _DIRECTIVE and v is not None}
    if directive != "merge":
        raise PatchError(f"unknown or misplaced patch directive {_DIRECTIVE}: {directive!r}")
    result = original
    retain = patch.get(_RETAIN_KEYS)
    if retain is not None:
        if not isinstance(retain, list):
            raise PatchError(f"{_RETAIN_KEYS} must be a list")
        keep = set(retain)
        for key in [k for k in result if k not in keep]:
            del result[key]
    for key, value in patch.items():
        if key.startswith(_DELETE_PRIMITIVE):
            name = key[len(_DELETE_PRIMITIVE):]
            if not isinstance(value, list):
                raise PatchError(f"{key} must be a list")
            current = result.get(name)
            if isinstance(current, list):
                result[name] = [x for x in current if x not in value]
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
            continue
        child = meta.child(key)
        current = result.get(key)
        if isinstance(value, dict):
            if value.get(_DIRECTIVE) == "delete":
                result.pop(key, None)
                continue
            result[key] = _merge_map(current if isinstance(current, dict) else {}, value, child)
        elif isinstance(value, list):
            result[key] = _merge_list(current if isinstance(current, list) else [], value, child)
        else:
            result[key] = value
    for key, value in patch.items():
        if key.startswith(_SET_ORDER):
            name = key[len(_SET_ORDER):]
            if not isinstance(value, list):
                raise PatchError(f"{key} must be a list")
            current = result.get(name)
            if isinstance(current, list):
                result[name] = _reorder(current, value, meta.child(name))
    return result


def _merge_list(original: list[Any], patch: list[Any], meta: FieldMeta) -> list[Any]:
    if any(isinstance(e, dict) and e.get(_DIRECTIVE) == "replace" for e in patch):
        return [_strip(e, meta) for e in patch if not (isinstance(e, dict) and _DIRECTIVE in e)]
    if meta.merge_key:
        key = meta.merge_key
        result = list(original)
        for element in patch:
            if not isinstance(element, dict):
                raise PatchError(f"list with merge key {key!r} must hold maps, got {element!r}")
            if key not in element:
                raise PatchError(f"map: {element!r} does not contain declared merge key: {key}")
            found = next((i for i, e in enumerate(result)
                          if isinstance(e, dict) and e.get(key) == element[key]),
                         None)
            directive = element.get(_DIRECTIVE)
            if directive == "delete":
                if found is not None:
                    del result[found]
                continue
            if found is None:
                result.append(_merge_map({}, element, meta))
            else:
                result[found] = _merge_map(result[found], element, meta)
        return result
    if meta.merge_primitives:
        result = list(original)
        for element in patch:
            if element not in result:
                result.append(element)
        return result
    return [_strip(e, meta) for e in patch]


def _reorder(current: list[Any], order: list[Any], meta: FieldMeta) -> list[Any]:
    def ident(e: Any) -> Any:
        if meta.merge_key and isinstance(e, dict):
            return e.get(meta.merge_key)
        return e if not isinstance(e, (dict, list)) else id(e)

    wanted = [ident(o) for o in order]
    rank = {w: i for i, w in enumerate(wanted) if not isinstance(w, (dict, list))}
    placed = sorted((e for e in current if ident(e) in rank), key=lambda e: rank[ident(e)])
    rest = [e for e in current if ident(e) not in rank]
    return placed + rest


def strategic_merge_patch(target: dict[str, Any], patch: Any, meta: FieldMeta) -> dict[str, Any]:
    """Apply a strategic merge patch to an object; `meta` describes its top-level fields."""
    if not isinstance(patch, dict):
        raise PatchFormatError("a strategic merge patch must be a JSON object")
    if patch.get(_DIRECTIVE) == "delete":
        raise PatchError("$patch: delete is not allowed at the top level of an object")
    return _merge_map(target, patch, meta)
