"""Server-side apply (`PATCH` with `application/apply-patch+yaml`), as Helm 4 and `kubectl apply
--server-side` use it.

Guarantees:
- A `fieldManager` is required (422 otherwise, as kube-apiserver answers). The applied configuration must name
  the object of the URL; an object that does not exist is created from it (201).
- Each manager's applied fields are recorded in `metadata.managedFields` (operation `Apply`, FieldsV1, lists
  with a strategic-merge key as `k:{...}` entries, primitive sets as `v:...`, other lists atomic). Applying
  again merges the new configuration into the live object by the kind's strategic-merge rules and removes
  the fields this manager applied last time and no longer applies, unless another manager applied them too;
  fields set by others (defaults, other managers, the status) stay.
- Applying a value different from the live one to a field another manager applied is a 409 Conflict naming
  the manager and the fields, as kube-apiserver words it; with `force=true` the applier takes the fields over.
- The write is an update with optimistic concurrency, retried on a concurrent change.
- Non-apply writers own the fields they set (`managed.py`), so applying another value to one conflicts with
  them too; `force=true` takes it over.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import yaml

from ingressctl.devcluster import errors, managed
from ingressctl.devcluster.decode import BodyIssues, loads_yaml
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.fields import TypedFields
from ingressctl.devcluster.managed import fields_of, tracked
from ingressctl.devcluster.objects import Stored, WriteResult
from ingressctl.devcluster.patch import FieldMeta
from ingressctl.devcluster.resources import Obj, ResourceKind, now_rfc3339
from ingressctl.devcluster.store import Store

CONTENT_TYPE = "application/apply-patch+yaml"
_RETRIES = 5


def _add_removals(patch: Obj, old: Any, new: dict[str, Any], meta: FieldMeta, shared: Any = None) -> None:
    """Turn `patch` (the applied map at this level) into a strategic merge patch that also removes what `old`
    had and `new` lacks, except what `shared` (the other managers' fields) holds. A malformed recorded set
    (managedFields written by a client) removes nothing."""
    if not isinstance(old, dict):
        return
    shared = shared if isinstance(shared, dict) else {}
    for key, old_child in old.items():
        if not isinstance(key, str) or not key.startswith("f:") or not isinstance(old_child, dict):
            continue
        name = key[2:]
        if key not in new:
            if key not in shared:
                patch[name] = None
            continue
        child_meta, sub, child_shared = meta.child(name), patch.get(name), shared.get(key)
        if isinstance(sub, dict):
            _add_removals(sub, old_child, new[key], child_meta, child_shared)
        elif isinstance(sub, list) and child_meta.merge_key:
            element = FieldMeta(fields=child_meta.fields)
            for item_key, old_item in old_child.items():
                if not item_key.startswith("k:"):
                    continue
                if item_key not in new[key]:
                    if isinstance(child_shared, dict) and item_key in child_shared:
                        continue
                    try:
                        ident = json.loads(item_key[2:])
                    except ValueError:
                        continue
                    if isinstance(ident, dict):
                        sub.append({"$patch": "delete", **ident})
                    continue
                match = next(i for i in sub if isinstance(i, dict) and child_meta.merge_key in i
                             and managed.item_key(child_meta.merge_key, i) == item_key)
                _add_removals(match, old_item, new[key][item_key], element,
                              child_shared.get(item_key) if isinstance(child_shared, dict) else None)
        elif isinstance(sub, list) and child_meta.merge_primitives:
            gone = []
            for v in old_child:
                if v.startswith("v:") and v not in new[key] and not (isinstance(child_shared, dict)
                                                                      and v in child_shared):
                    try:
                        gone.append(json.loads(v[2:]))
                    except ValueError:
                        continue
            if gone:
                patch[f"$deleteFromPrimitiveList/{name}"] = gone


Path = tuple[str, ...]


def _merge_trees(trees: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tree in trees:
        if not isinstance(tree, dict):
            continue
        for key, child in tree.items():
            out[key] = _merge_trees([out.get(key), child])
    return out


def _common_leaves(new: dict[str, Any], other: Any, path: Path = ()) -> list[Path]:
    """Fields set in both field sets (a leaf on either side covers the whole subtree)."""
    if not isinstance(other, dict):
        return []
    out: list[Path] = []
    for key, child in new.items():
        theirs = other.get(key)
        if key == "." or not isinstance(theirs, dict):
            continue
        if not child or not theirs:
            out.append((*path, key))
        else:
            out.extend(_common_leaves(child, theirs, (*path, key)))
    return out


def _value_at(obj: Any, path: Path) -> tuple[bool, Any]:
    node = obj
    for key in path:
        kind, _, rest = key.partition(":")
        if kind == "f" and isinstance(node, dict) and rest in node:
            node = node[rest]
            continue
        if kind in ("k", "v") and isinstance(node, list):
            try:
                ident = json.loads(rest)
            except ValueError:
                return False, None
            if kind == "v":
                return ident in node, ident
            found = [i for i in node if isinstance(i, dict) and isinstance(ident, dict)
                     and all(i.get(k) == v for k, v in ident.items())]
            if found:
                node = found[0]
                continue
        return False, None
    return True, node


def _path_text(path: Path) -> str:
    out = ""
    for key in path:
        kind, _, rest = key.partition(":")
        if kind == "f":
            out += f".{rest}"
        else:
            try:
                ident = json.loads(rest)
            except ValueError:
                ident = rest
            if isinstance(ident, dict):
                out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in ident.items()) + "]"
            else:
                out += f"[={json.dumps(ident)}]"
    return out


def _remove_path(tree: dict[str, Any], path: Path) -> None:
    """Drop `path` from a field set, and the parents it leaves empty."""
    if not path or not isinstance(tree.get(path[0]), dict):
        return
    if len(path) == 1:
        del tree[path[0]]
        return
    child = tree[path[0]]
    _remove_path(child, path[1:])
    if not [k for k in child if k != "."]:
        del tree[path[0]]


def _conflict(conflicts: list[tuple[str, str, Path]]) -> StatusError:
    """409 Conflict worded as kube-apiserver's field manager does."""
    if len(conflicts) == 1:
        manager, api_version, path = conflicts[0]
        message = (f'Apply failed with 1 conflict: conflict with "{manager}" using {api_version}: '
                   f"{_path_text(path)}")
    else:
        by_manager: dict[tuple[str, str], list[Path]] = {}
        for manager, api_version, path in conflicts:
            by_manager.setdefault((manager, api_version), []).append(path)
        parts = [f'conflicts with "{m}" using {v}:\n' + "\n".join(f"- {_path_text(p)}" for p in paths)
                 for (m, v), paths in by_manager.items()]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(parts)
    causes = [{"reason": "FieldManagerConflict", "message": f'conflict with "{m}" using {v}',
               "field": _path_text(p)} for m, v, p in conflicts]
    return StatusError(409, "Conflict", message, {"causes": causes})


def parse_applied(raw: bytes) -> tuple[Obj, BodyIssues]:
    """The applied configuration and the keys it sets twice (as Go's strict YAML decoder reports them)."""
    prefix = "error converting YAML to JSON: yaml: unmarshal errors:"
    try:
        body, issues = loads_yaml(raw, strict_prefix=prefix) if raw.strip() else (None, BodyIssues())
    except yaml.YAMLError as e:
        raise errors.bad_request(f"error decoding YAML: {e}") from None
    if not isinstance(body, dict):
        raise errors.bad_request("the apply patch must be an object")
    return body, issues


def undeclared_fields(kind: ResourceKind, applied: Obj, meta: FieldMeta) -> StatusError | None:
    """The error kube-apiserver's field manager gives an applied configuration that sets fields the kind's
    schema does not declare (HTTP 500 in kube-apiserver 1.32, whatever the fieldValidation directive)."""
    if kind.typed:
        paths = TypedFields.of(kind.typed).apply_paths(applied, meta)
    elif kind.unknown_fields is not None:
        paths = ["." + p for p in kind.unknown_fields(applied)]
    else:
        return None
    if not paths:
        return None
    meta_obj = applied.get("metadata") or {}
    target = f"{meta_obj.get('namespace') or ''}/{meta_obj.get('name') or ''}"
    group_version = kind.api_version if kind.group else f"/{kind.version}"
    lines = [f"{p}: field not declared in schema" for p in paths]
    detail = lines[0] if len(lines) == 1 else "errors:\n" + "\n".join(f"  {line}" for line in lines)
    return StatusError(500, "", f"failed to create typed patch object ({target}; {group_version}, "
                       f"Kind={kind.kind}): {detail}", None)


def server_side_apply(store: Store, kind: ResourceKind, namespace: str, name: str, raw: bytes, *,
                      manager: str, force: bool = False, subresource: str = "", dry_run: bool = False,
                      view: Callable[[Stored], Obj] | None = None,
                      field_validation: str = "") -> tuple[WriteResult, bool]:
    """Apply `raw` (YAML or JSON) as `manager`; returns the write and whether it created the object.

    Fields the kind's schema does not declare refuse the apply (500, as kube-apiserver's field manager);
    keys set twice refuse it with fieldValidation=Strict (400) and warn otherwise (except Ignore)."""
    if not manager:
        raise errors.invalid("PatchOptions", "meta.k8s.io", "", [
            ("fieldManager", "FieldValueRequired", "Required value: is required for apply patch")])
    applied, issues = parse_applied(raw)
    meta = applied.get("metadata")
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata: the apply patch must have metadata")
    if meta.get("name", name) != name:
        raise errors.bad_request(f'the name of the object ({meta.get("name")}) does not match the name on '
                                 f'the URL ({name})')
    if not applied.get("apiVersion") or not applied.get("kind"):
        raise errors.bad_request("the apply patch must set apiVersion and kind")
    patch_meta = store.bucket(kind).kind.patch_meta
    if not subresource:
        undeclared = undeclared_fields(kind, applied, patch_meta)
        if undeclared is not None:
            raise undeclared
    directive = field_validation or "Warn"
    if issues.strict and directive == "Strict":
        raise errors.bad_request("error strict decoding YAML: " + "".join(issues.strict))
    warnings = issues.warnings if directive == "Warn" else []
    body = {k: v for k, v in applied.items() if k not in ("apiVersion", "kind")}
    new_fields = fields_of(tracked(applied, status=False), patch_meta)   # not name, namespace, ...
    entry = {"manager": manager, "operation": "Apply", "apiVersion": kind.api_version, "time": now_rfc3339(),
             "fieldsType": "FieldsV1", "fieldsV1": new_fields}
    for _ in range(_RETRIES):
        try:
            current = store.get(kind, namespace, name)
        except StatusError as e:
            if e.code != 404 or subresource:
                raise
            created = {**applied, "metadata": {**{k: v for k, v in meta.items() if k != "resourceVersion"},
                                               "name": name, "managedFields": [entry]}}
            try:
                result = store.create(kind, namespace, created, dry_run=dry_run)
                result.warnings[:0] = warnings
                return result, True
            except StatusError as e2:
                if e2.reason != "AlreadyExists":
                    raise
                continue
        live = view(current) if view is not None else current.parse()
        managed = [m for m in live.get("metadata", {}).get("managedFields") or [] if isinstance(m, dict)]
        previous: Any = next((m.get("fieldsV1") for m in managed
                         if m.get("manager") == manager and m.get("operation") == "Apply"), {})
        others = [json.loads(json.dumps(m)) for m in managed
                  if not (m.get("manager") == manager and m.get("operation") == "Apply")]
        conflicts: list[tuple[str, str, Path]] = []
        for other in others:
            for path in _common_leaves(new_fields, other.get("fieldsV1")):
                (in_live, live_value), (_, applied_value) = _value_at(live, path), _value_at(body, path)
                if in_live and live_value != applied_value:
                    conflicts.append((str(other.get("manager", "")), str(other.get("apiVersion", "")), path))
                    if force:
                        _remove_path(other["fieldsV1"], path)
        if conflicts and not force:
            raise _conflict(conflicts)
        others = [m for m in others if m.get("fieldsV1")]   # a manager that owns nothing any more goes
        patch = json.loads(json.dumps(applied))
        _add_removals(patch, previous, {"f:apiVersion": {}, "f:kind": {}, **new_fields}, patch_meta,
                      _merge_trees([m.get("fieldsV1") for m in others]))
        patch["metadata"] = {**(patch.get("metadata") or {}), "resourceVersion": str(current.rv),
                             "managedFields": [*others, entry]}
        try:
            result = store.patch(kind, namespace, name, "strategic", patch, subresource=subresource,
                                 dry_run=dry_run, view=view)
            result.warnings[:0] = warnings
            return result, False
        except StatusError as e:
            if e.code != 409:
                raise
    raise errors.conflict(kind.plural, kind.group, name, "the object kept changing; please apply again")
