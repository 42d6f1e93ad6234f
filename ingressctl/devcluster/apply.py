"""Server-side apply (`PATCH` with `application/apply-patch+yaml`), as Helm 4 and `kubectl apply
--server-side` use it.

Guarantees:
- A `fieldManager` is required (422 otherwise, as kube-apiserver answers). The applied configuration must name
  the object of the URL; an object that does not exist is created from it (201).
- Each manager's applied fields are recorded in `metadata.managedFields` (operation `Apply`, FieldsV1, lists
  with a strategic-merge key as `k:{...}` entries, primitive sets as `v:...`, other lists atomic). Applying
  again merges the new configuration into the live object by the kind's strategic-merge rules and removes
  the fields this manager applied last time and no longer applies, leaving fields set by others (defaults,
  other managers, the status) alone.
- The write is an update with optimistic concurrency, retried on a concurrent change.
Differences from kube-apiserver: conflicts with other managers are not detected (every apply behaves as with
`force=true`), and managers of non-apply writes are not recorded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import yaml

from ingressctl.devcluster import errors
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.patch import FieldMeta
from ingressctl.devcluster.resources import Obj, ResourceKind, now_rfc3339
from ingressctl.devcluster.store import Store, Stored, WriteResult

CONTENT_TYPE = "application/apply-patch+yaml"
_RETRIES = 5


def fields_of(value: Any, meta: FieldMeta) -> dict[str, Any]:
    """The FieldsV1 set of a value: the fields it sets, keyed the way managedFields records them."""
    if isinstance(value, dict):
        return {f"f:{k}": fields_of(v, meta.child(k)) for k, v in value.items()}
    if isinstance(value, list) and meta.merge_key:
        element = FieldMeta(fields=meta.fields)
        return {_item_key(meta.merge_key, item): {".": {}, **fields_of(item, element)} for item in value
                if isinstance(item, dict) and meta.merge_key in item}
    if isinstance(value, list) and meta.merge_primitives:
        return {f"v:{json.dumps(item, separators=(',', ':'))}": {} for item in value}
    return {}


def _item_key(merge_key: str, item: Obj) -> str:
    return "k:" + json.dumps({merge_key: item[merge_key]}, separators=(",", ":"))


def _add_removals(patch: Obj, old: Any, new: dict[str, Any], meta: FieldMeta) -> None:
    """Turn `patch` (the applied map at this level) into a strategic merge patch that also removes what `old`
    had and `new` lacks. A malformed recorded set (managedFields written by a client) removes nothing."""
    if not isinstance(old, dict):
        return
    for key, old_child in old.items():
        if not isinstance(key, str) or not key.startswith("f:") or not isinstance(old_child, dict):
            continue
        name = key[2:]
        if key not in new:
            patch[name] = None
            continue
        child_meta, sub = meta.child(name), patch.get(name)
        if isinstance(sub, dict):
            _add_removals(sub, old_child, new[key], child_meta)
        elif isinstance(sub, list) and child_meta.merge_key:
            element = FieldMeta(fields=child_meta.fields)
            for item_key, old_item in old_child.items():
                if not item_key.startswith("k:"):
                    continue
                if item_key not in new[key]:
                    try:
                        ident = json.loads(item_key[2:])
                    except ValueError:
                        continue
                    if isinstance(ident, dict):
                        sub.append({"$patch": "delete", **ident})
                    continue
                match = next(i for i in sub if isinstance(i, dict) and child_meta.merge_key in i
                             and _item_key(child_meta.merge_key, i) == item_key)
                _add_removals(match, old_item, new[key][item_key], element)
        elif isinstance(sub, list) and child_meta.merge_primitives:
            gone = []
            for v in old_child:
                if v.startswith("v:") and v not in new[key]:
                    try:
                        gone.append(json.loads(v[2:]))
                    except ValueError:
                        continue
            if gone:
                patch[f"$deleteFromPrimitiveList/{name}"] = gone


def parse_applied(raw: bytes) -> Obj:
    try:
        body = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as e:
        raise errors.bad_request(f"error decoding YAML: {e}") from None
    if not isinstance(body, dict):
        raise errors.bad_request("the apply patch must be an object")
    return body


def server_side_apply(store: Store, kind: ResourceKind, namespace: str, name: str, raw: bytes, *,
                      manager: str, subresource: str = "", dry_run: bool = False,
                      view: Callable[[Stored], Obj] | None = None) -> tuple[WriteResult, bool]:
    """Apply `raw` (YAML or JSON) as `manager`; returns the write and whether it created the object."""
    if not manager:
        raise errors.invalid("PatchOptions", "meta.k8s.io", "", [
            ("fieldManager", "FieldValueRequired", "Required value: is required for apply patch")])
    applied = parse_applied(raw)
    meta = applied.get("metadata")
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata: the apply patch must have metadata")
    if meta.get("name", name) != name:
        raise errors.bad_request(f'the name of the object ({meta.get("name")}) does not match the name on '
                                 f'the URL ({name})')
    if not applied.get("apiVersion") or not applied.get("kind"):
        raise errors.bad_request("the apply patch must set apiVersion and kind")
    patch_meta = store.bucket(kind).kind.patch_meta
    body = {k: v for k, v in applied.items() if k not in ("apiVersion", "kind")}
    new_fields = fields_of(body, patch_meta)
    entry = {"manager": manager, "operation": "Apply", "apiVersion": kind.api_version, "time": now_rfc3339(),
             "fieldsType": "FieldsV1", "fieldsV1": new_fields}
    for _ in range(_RETRIES):
        try:
            current = store.get(kind, namespace, name)
        except StatusError as e:
            if e.code != 404 or subresource:
                raise
            created = {**applied, "metadata": {**meta, "name": name, "managedFields": [entry]}}
            try:
                return store.create(kind, namespace, created, dry_run=dry_run), True
            except StatusError as e2:
                if e2.reason != "AlreadyExists":
                    raise
                continue
        live = view(current) if view is not None else current.parse()
        managed = [m for m in live.get("metadata", {}).get("managedFields") or [] if isinstance(m, dict)]
        previous: Any = next((m.get("fieldsV1") for m in managed
                         if m.get("manager") == manager and m.get("operation") == "Apply"), {})
        patch = json.loads(json.dumps(applied))
        _add_removals(patch, previous, {"f:apiVersion": {}, "f:kind": {}, **new_fields}, patch_meta)
        others = [m for m in managed if not (m.get("manager") == manager and m.get("operation") == "Apply")]
        patch["metadata"] = {**(patch.get("metadata") or {}), "resourceVersion": str(current.rv),
                             "managedFields": [*others, entry]}
        try:
            return store.patch(kind, namespace, name, "strategic", patch, subresource=subresource,
                               dry_run=dry_run, view=view), False
        except StatusError as e:
            if e.code != 409:
                raise
    raise errors.conflict(kind.plural, kind.group, name, "the object kept changing; please apply again")
