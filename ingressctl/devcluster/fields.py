"""The declared fields of built-in kinds, as kube-apiserver's decoder knows them from its Go types.

A built-in kind names its type (`ResourceKind.typed`, e.g. "V1Service"); `TypedFields.of(name)` gives the
field tree of that type, read once from the `kubernetes` client's generated models (their `openapi_types` and
`attribute_map` are the Go types' JSON fields). `unknown(obj)` lists the paths of the fields the type does not
declare (`spec.notAField`, `spec.ports[0].colour`, `metadata.bogus`) in document order, as a strict decoder
reports them; `prune(obj)` returns the object without them, as decoding into the Go struct drops them.
Free-form values (`object` in the models: IntOrString, Quantity, RawExtension, JSON, FieldsV1) accept
anything. `apply_paths(obj, meta)` renders the same fields as server-side apply's type converter names them
(`.spec.notAField`, `.spec.ports[port=80].colour`).

Guarantees: the input is never modified; an unknown model name raises KeyError when the kind is defined, not
on a request. The field sets are those of the installed client's API version (fields newer than the served
Kubernetes version are accepted).
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from ingressctl.devcluster.patch import FieldMeta

Obj = dict[str, Any]
_SCALARS = frozenset(("str", "int", "bool", "float", "bytes", "datetime", "date", "object"))
_LIST = re.compile(r"^(?:list|List)\[(.+)\]$")
_MAP = re.compile(r"^(?:dict\(str, ?(.+)\)|Dict\[str, ?(.+)\])$")


class Node:
    """The type of one field: a struct (its fields), a list or map of a type, or a scalar (anything goes)."""

    __slots__ = ("element", "fields", "shape")

    def __init__(self, shape: str) -> None:
        self.shape = shape                      # "struct", "list", "map" or "scalar"
        self.fields: dict[str, Node] = {}
        self.element: Node | None = None


_SCALAR = Node("scalar")


class TypedFields:
    """The field tree of one built-in type (built lazily, shared by every kind of that type)."""

    _cache: dict[str, TypedFields] = {}
    _lock = threading.Lock()

    def __init__(self, model: str) -> None:
        self.model = model
        self._root: Node | None = None

    @classmethod
    def of(cls, model: str) -> TypedFields:
        with cls._lock:
            typed = cls._cache.get(model)
            if typed is None:
                typed = cls._cache[model] = TypedFields(model)
            return typed

    @property
    def root(self) -> Node:
        if self._root is None:
            self._root = _build(self.model, {})
        return self._root

    def unknown(self, obj: Obj) -> list[str]:
        out: list[str] = []
        _walk(obj, self.root, "", out, None)
        return out

    def prune(self, obj: Obj) -> Obj:
        pruned = _walk(obj, self.root, "", None, None)
        return pruned if isinstance(pruned, dict) else obj

    def apply_paths(self, obj: Obj, meta: FieldMeta) -> list[str]:
        """The undeclared fields of an applied configuration, as server-side apply names them."""
        out: list[str] = []
        _walk(obj, self.root, "", out, meta)
        return out


def _model(name: str) -> Any:
    import kubernetes.client.models as models  # heavy: imported on the first check of a built-in kind

    return getattr(models, name)


def _node(type_name: str, seen: dict[str, Node]) -> Node:
    if type_name in _SCALARS:
        return _SCALAR
    m = _LIST.match(type_name)
    if m:
        node = Node("list")
        node.element = _node(m.group(1).strip(), seen)
        return node
    m = _MAP.match(type_name)
    if m:
        node = Node("map")
        node.element = _node((m.group(1) or m.group(2)).strip(), seen)
        return node
    return _build(type_name, seen)


def _build(model_name: str, seen: dict[str, Node]) -> Node:
    if model_name in seen:          # recursive types (JSONSchemaProps) share their node
        return seen[model_name]
    model = _model(model_name)
    node = seen[model_name] = Node("struct")
    for attr, type_name in model.openapi_types.items():
        node.fields[model.attribute_map[attr]] = _node(str(type_name), seen)
    return node


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _item_path(path: str, index: int, item: Any, meta: FieldMeta | None) -> str:
    if meta is not None and meta.merge_key and isinstance(item, dict) and meta.merge_key in item:
        return f"{path}[{meta.merge_key}={json.dumps(item[meta.merge_key])}]"
    return f"{path}[{index}]"


def _walk(value: Any, node: Node, path: str, dropped: list[str] | None, meta: FieldMeta | None) -> Any:
    """The value without undeclared fields; their paths appended to `dropped` (apply-style with `meta`)."""
    if node.shape == "scalar" or value is None:
        return value
    if node.shape == "list":
        if not isinstance(value, list) or node.element is None or node.element.shape == "scalar":
            return value
        element = FieldMeta(fields=meta.fields) if meta is not None else None
        return [_walk(v, node.element, _item_path(path, i, v, meta), dropped, element)
                for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    if node.shape == "map":
        if node.element is None or node.element.shape == "scalar":
            return value
        return {k: _walk(v, node.element, _join(path, k) if meta is None else f"{path}.{k}", dropped,
                         None if meta is None else FieldMeta())
                for k, v in value.items()}
    out: Obj = {}
    for key, item in value.items():
        child = node.fields.get(key)
        here = _join(path, key) if meta is None else f"{path}.{key}"
        if child is None:
            if dropped is not None:
                dropped.append(here)
            continue
        out[key] = _walk(item, child, here, dropped, None if meta is None else meta.child(key))
    return out
