"""Structural OpenAPI v3 schemas (CustomResourceDefinition `openAPIV3Schema`) applied as kube-apiserver does.

- `prune(obj, schema)` drops every field the schema does not specify (`unknown_fields` names them, for
  strict field validation), except below
  `x-kubernetes-preserve-unknown-fields: true`, in `additionalProperties` maps, and the `apiVersion`/`kind`/
  `metadata` of the root and of `x-kubernetes-embedded-resource` objects; unknown `metadata` keys are dropped.
- `apply_defaults(obj, schema)` fills missing properties that declare a `default` (and replaces a `null` in a
  non-nullable one), at every depth including list items; other `null`s in non-nullable fields are dropped.
- `validate(obj, schema)` returns every violation as a `FieldError` (field path, cause reason, message) with
  the wording of kube-apiserver's schema validation: types, required, enum, pattern, minimum/maximum (and
  exclusive), multipleOf, min/maxLength, min/maxItems, uniqueItems, min/maxProperties, nullable,
  x-kubernetes-int-or-string, x-kubernetes-list-type set/map, allOf/anyOf/oneOf/not.
- The input is never modified: prune and apply_defaults build new containers where they change something.
- `structural_errors(schema, path)` lists what makes a schema unacceptable in a v1 CRD (no type where one is
  required, an unknown type).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

Obj = dict[str, Any]
FieldError = tuple[str, str, str]     # (field path, cause reason, message), as errors.invalid takes them

OBJECT_META_KEYS = frozenset((
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields"))
_TYPES = ("object", "array", "string", "integer", "number", "boolean")
_COMBINATORS = frozenset(("allOf", "anyOf", "oneOf", "not"))


# --------------------------------------------------------------------------------------------- values
def type_name(value: Any) -> str:
    """The JSON type of a decoded value, as the schema validator names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def go_value(value: Any) -> str:
    """A value as apimachinery's field errors print it: strings quoted, numbers and booleans bare."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    if value is None:
        return "null"
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _number(value: Any) -> str:
    return go_value(value)


def _matches_type(value: Any, schema: Obj) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    want = schema.get("type")
    if not want:
        return True
    got = type_name(value)
    return got == want or (want == "number" and got == "integer")


@lru_cache(maxsize=512)
def _pattern(text: str) -> re.Pattern[str] | None:
    try:
        return re.compile(text)
    except re.error:
        return None


# --------------------------------------------------------------------------------------------- pruning
def prune(obj: Obj, schema: Obj) -> Obj:
    """The object without the fields `schema` (a root openAPIV3Schema) does not specify."""
    out = _Pruner(None).walk(obj, schema, "", root=True)
    return out if isinstance(out, dict) else obj


def unknown_fields(obj: Obj, schema: Obj) -> list[str]:
    """The paths of the fields `prune` drops (`spec.bogus`, `spec.upstreams[0].colour`), in document order:
    what a strict decoder reports as unknown."""
    dropped: list[str] = []
    _Pruner(dropped).walk(obj, schema, "", root=True)
    return dropped


class _Pruner:
    def __init__(self, dropped: list[str] | None) -> None:
        self.dropped = dropped

    def _drop(self, path: str) -> None:
        if self.dropped is not None:
            self.dropped.append(path)

    def walk(self, value: Any, schema: Obj | None, path: str, *, root: bool = False) -> Any:
        if schema is None:
            return value
        if isinstance(value, list):
            items = schema.get("items")
            return [self.walk(v, items, f"{path}[{i}]") for i, v in enumerate(value)] \
                if isinstance(items, dict) else value
        if not isinstance(value, dict):
            return value
        props: Obj = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        embedded = root or bool(schema.get("x-kubernetes-embedded-resource"))
        out: Obj = {}
        for key, item in value.items():
            here = _join(path, key)
            if embedded and key in ("apiVersion", "kind"):
                out[key] = item
            elif embedded and key == "metadata" and isinstance(item, dict):
                out[key] = {k: v for k, v in item.items() if k in OBJECT_META_KEYS}
                for k in item:
                    if k not in OBJECT_META_KEYS:
                        self._drop(f"{here}.{k}")
            elif key in props:
                out[key] = self.walk(item, props[key], here)
            elif isinstance(addl, dict):
                out[key] = self.walk(item, addl, here)
            elif addl is True or preserve:
                out[key] = item
            else:
                self._drop(here)
        return out


# --------------------------------------------------------------------------------------------- defaults
def apply_defaults(obj: Obj, schema: Obj) -> Obj:
    """The object with the schema's defaults filled in (defaults are copied, never shared)."""
    out = _default(obj, schema)
    return out if isinstance(out, dict) else obj


def _default(value: Any, schema: Obj | None) -> Any:
    if schema is None:
        return value
    if isinstance(value, dict):
        props: Obj = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        out: Obj = {}
        for key, item in value.items():
            sub = props.get(key) or (addl if isinstance(addl, dict) else None)
            if item is None and sub is not None and not sub.get("nullable"):
                if "default" in sub:
                    out[key] = _default(copy.deepcopy(sub["default"]), sub)
                continue        # a null in a non-nullable field is dropped, as the API server does
            out[key] = _default(item, sub)
        for key, sub in props.items():
            if key not in out and key not in value and isinstance(sub, dict) and "default" in sub:
                out[key] = _default(copy.deepcopy(sub["default"]), sub)
        return out
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return [_default(v, items) for v in value]
    return value


# --------------------------------------------------------------------------------------------- validation
def validate(obj: Obj, schema: Obj) -> list[FieldError]:
    """Every violation of `schema` by `obj`; the root's apiVersion/kind/metadata are not checked."""
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    root = {**schema, "properties": {k: v for k, v in (schema.get("properties") or {}).items()
                                     if k not in ("apiVersion", "kind", "metadata")}}
    errs: list[FieldError] = []
    _validate(body, root, "", errs)
    return errs


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _invalid(path: str, value: Any, detail: str) -> FieldError:
    return (path, "FieldValueInvalid", f"Invalid value: {go_value(value)}: {detail}")


def _validate(value: Any, schema: Obj, path: str, errs: list[FieldError]) -> None:
    where = path or "body"
    if value is None:
        if not schema.get("nullable") and (schema.get("type") or schema.get("x-kubernetes-int-or-string")):
            want = "integer,string" if schema.get("x-kubernetes-int-or-string") else schema["type"]
            errs.append((path, "FieldValueTypeInvalid",
                         f'Invalid value: "null": {where} in body must be of type {want}: "null"'))
        return
    if not _matches_type(value, schema):
        want = "integer,string" if schema.get("x-kubernetes-int-or-string") else schema["type"]
        got = type_name(value)
        errs.append((path, "FieldValueTypeInvalid",
                     f'Invalid value: "{got}": {where} in body must be of type {want}: "{got}"'))
        return
    _validate_enum(value, schema, path, errs)
    if isinstance(value, str):
        _validate_string(value, schema, path, where, errs)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _validate_number(value, schema, path, where, errs)
    elif isinstance(value, list):
        _validate_array(value, schema, path, where, errs)
    elif isinstance(value, dict):
        _validate_object(value, schema, path, where, errs)
    if _COMBINATORS.intersection(schema):
        _validate_combinators(value, schema, path, where, errs)


def _validate_enum(value: Any, schema: Obj, path: str, errs: list[FieldError]) -> None:
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and _canonical(value) not in {_canonical(e) for e in enum}:
        supported = ", ".join(json.dumps(e, ensure_ascii=False) for e in enum)
        errs.append((path, "FieldValueNotSupported",
                     f"Unsupported value: {go_value(value)}: supported values: {supported}"))


def _validate_string(value: str, schema: Obj, path: str, where: str, errs: list[FieldError]) -> None:
    max_len = schema.get("maxLength")
    if isinstance(max_len, int) and len(value) > max_len:
        errs.append((path, "FieldValueTooLong", f"Too long: may not be more than {max_len} bytes"))
    min_len = schema.get("minLength")
    if isinstance(min_len, int) and len(value) < min_len:
        errs.append(_invalid(path, value, f"{where} in body should be at least {min_len} chars long"))
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        compiled = _pattern(pattern)
        if compiled is not None and not compiled.search(value):
            errs.append(_invalid(path, value, f"{where} in body should match '{pattern}'"))


def _validate_number(value: float, schema: Obj, path: str, where: str, errs: list[FieldError]) -> None:
    maximum = schema.get("maximum")
    if isinstance(maximum, (int, float)):
        if schema.get("exclusiveMaximum") and value >= maximum:
            errs.append(_invalid(path, value, f"{where} in body should be less than {_number(maximum)}"))
        elif value > maximum:
            errs.append(_invalid(path, value,
                                 f"{where} in body should be less than or equal to {_number(maximum)}"))
    minimum = schema.get("minimum")
    if isinstance(minimum, (int, float)):
        if schema.get("exclusiveMinimum") and value <= minimum:
            errs.append(_invalid(path, value, f"{where} in body should be greater than {_number(minimum)}"))
        elif value < minimum:
            errs.append(_invalid(path, value,
                                 f"{where} in body should be greater than or equal to {_number(minimum)}"))
    multiple = schema.get("multipleOf")
    if isinstance(multiple, (int, float)) and multiple > 0 and (value / multiple) % 1:
        errs.append(_invalid(path, value, f"{where} in body should be a multiple of {_number(multiple)}"))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _check_count(count: int, schema: Obj, max_key: str, min_key: str, noun: str, path: str, where: str,
                 errs: list[FieldError]) -> None:
    """maxItems/minItems or maxProperties/minProperties."""
    most, least = schema.get(max_key), schema.get(min_key)
    if isinstance(most, int) and count > most:
        errs.append((path, "FieldValueTooMany", f"Too many: {count}: must have at most {most} items"))
    if isinstance(least, int) and count < least:
        errs.append(_invalid(path, count, f"{where} in body should have at least {least} {noun}"))


def _validate_array(value: list[Any], schema: Obj, path: str, where: str, errs: list[FieldError]) -> None:
    _check_count(len(value), schema, "maxItems", "minItems", "items", path, where, errs)
    list_type = schema.get("x-kubernetes-list-type")
    if schema.get("uniqueItems") or list_type == "set":
        seen: set[str] = set()
        for i, item in enumerate(value):
            key = _canonical(item)
            if key in seen:
                errs.append((f"{path}[{i}]", "FieldValueDuplicate", f"Duplicate value: {go_value(item)}"))
            seen.add(key)
    elif list_type == "map":
        keys = [k for k in schema.get("x-kubernetes-list-map-keys") or [] if isinstance(k, str)]
        seen_keys: set[str] = set()
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key = _canonical({k: item.get(k) for k in keys})
            if key in seen_keys:
                errs.append((f"{path}[{i}]", "FieldValueDuplicate",
                             f"Duplicate value: {_canonical({k: item[k] for k in keys if k in item})}"))
            seen_keys.add(key)
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _validate(item, items, f"{path}[{i}]", errs)


def _validate_object(value: Obj, schema: Obj, path: str, where: str, errs: list[FieldError]) -> None:
    for name in schema.get("required") or []:
        if isinstance(name, str) and name not in value:
            errs.append((_join(path, name), "FieldValueRequired", "Required value"))
    _check_count(len(value), schema, "maxProperties", "minProperties", "properties", path, where, errs)
    props: Obj = schema.get("properties") or {}
    addl = schema.get("additionalProperties")
    for key, item in value.items():
        sub = props.get(key)
        if sub is None and isinstance(addl, dict):
            sub = addl
        if isinstance(sub, dict):
            _validate(item, sub, _join(path, key), errs)


def _validate_combinators(value: Any, schema: Obj, path: str, where: str, errs: list[FieldError]) -> None:
    for sub in schema.get("allOf") or []:
        if isinstance(sub, dict):
            _validate(value, sub, path, errs)
    any_of = [s for s in schema.get("anyOf") or [] if isinstance(s, dict)]
    if any_of and not any(_passes(value, s, path) for s in any_of):
        errs.append(_invalid(path, value, f'"{where}" must validate at least one schema (anyOf)'))
    one_of = [s for s in schema.get("oneOf") or [] if isinstance(s, dict)]
    if one_of and sum(1 for s in one_of if _passes(value, s, path)) != 1:
        errs.append(_invalid(path, value, f'"{where}" must validate one and only one schema (oneOf)'))
    not_schema = schema.get("not")
    if isinstance(not_schema, dict) and _passes(value, not_schema, path):
        errs.append(_invalid(path, value, f'"{where}" must not validate the schema (not)'))


def _passes(value: Any, schema: Obj, path: str) -> bool:
    sub: list[FieldError] = []
    _validate(value, schema, path, sub)
    return not sub


# --------------------------------------------------------------------------------------------- the schema
def structural_errors(schema: Any, path: str) -> list[FieldError]:
    """What makes `schema` unacceptable as a v1 CRD's structural schema (at `path`)."""
    errs: list[FieldError] = []
    if not isinstance(schema, dict):
        return [(path, "FieldValueRequired", "Required value: schemas are required")]
    if schema.get("type") != "object":
        if not schema.get("type"):
            errs.append((f"{path}.type", "FieldValueRequired",
                         "Required value: must not be empty at the root"))
        else:
            errs.append((f"{path}.type", "FieldValueInvalid",
                         f'Invalid value: {go_value(schema["type"])}: must be object at the root'))
    _walk_structural(schema, path, errs, root=True)
    return errs


def _walk_structural(schema: Obj, path: str, errs: list[FieldError], *, root: bool = False) -> None:
    t = schema.get("type")
    if t is not None and t not in _TYPES:
        errs.append((f"{path}.type", "FieldValueNotSupported", f"Unsupported value: {go_value(t)}: supported "
                     f"values: {', '.join(json.dumps(x) for x in _TYPES)}"))
    special = schema.get("x-kubernetes-int-or-string") or schema.get("x-kubernetes-preserve-unknown-fields")
    if not root and not t and not special:
        errs.append((f"{path}.type", "FieldValueRequired", "Required value: must not be empty for specified "
                     "object fields"))
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and _pattern(pattern) is None:
        errs.append((f"{path}.pattern", "FieldValueInvalid",
                     f"Invalid value: {go_value(pattern)}: must be a valid regular expression"))
    if "default" in schema:
        for _, _, msg in _default_errors(schema["default"], schema):
            errs.append((f"{path}.default", "FieldValueInvalid", msg))
    for key, sub in _children(schema, path):
        _walk_structural(sub, key, errs)


def _default_errors(value: Any, schema: Obj) -> list[FieldError]:
    """A default must itself be valid (after its own pruning and defaulting), as the API server checks."""
    errs: list[FieldError] = []
    holder = {"properties": {"default": schema}}
    wrapped = _default(_Pruner(None).walk({"default": value}, holder, ""), holder)
    _validate(wrapped.get("default"), schema, "default", errs)
    return errs


def _children(schema: Obj, path: str) -> Iterable[tuple[str, Obj]]:
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict):
            yield f"{path}.properties[{name}]", sub
    items = schema.get("items")
    if isinstance(items, dict):
        yield f"{path}.items", items
    addl = schema.get("additionalProperties")
    if isinstance(addl, dict):
        yield f"{path}.additionalProperties", addl
