"""`metadata.managedFields` for the writes that are not server-side apply (create, update, patch), as
kube-apiserver's field manager records them; `apply.py` records the Apply entries.

Guarantees:
- The manager is the request's `fieldManager`, else its User-Agent up to the first '/' (as
  kube-apiserver's managerOrUserAgent); its entry is keyed by (manager, operation Update, apiVersion,
  subresource).
- A write takes ownership of every field it adds or changes (FieldsV1, lists with a strategic-merge key as
  `k:{...}` items, primitive sets as `v:...`, other lists atomic); every other manager, Apply ones included,
  loses the fields the write changed or removed; a manager left owning nothing is dropped. So a later
  server-side apply of a different value to such a field conflicts with this manager, as on a real cluster.
- A write that omits `managedFields` keeps the stored ones; one that sends `managedFields: []` clears them.
- Entries whose fields did not change keep their timestamps (a no-op write stays a no-op). Entries are
  ordered Apply first, then by time, manager and apiVersion, as kube-apiserver sorts them.
- Not tracked: `apiVersion`, `kind`, and the metadata the server owns (name, namespace, uid,
  resourceVersion, generation, creationTimestamp, deletion fields, managedFields), nor `status` for the main
  resource of a kind with a status subresource.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

from ingressctl.devcluster.patch import FieldMeta
from ingressctl.devcluster.resources import Obj, now_rfc3339

_SERVER_META = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation",
                "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
                "managedFields")
_MISSING = object()
Fields = dict[str, Any]


def fields_of(value: Any, meta: FieldMeta) -> dict[str, Any]:
    """The FieldsV1 set of a value: the fields it sets, keyed the way managedFields records them."""
    if isinstance(value, dict):
        return {f"f:{k}": fields_of(v, meta.child(k)) for k, v in value.items()}
    if isinstance(value, list) and meta.merge_key:
        element = FieldMeta(fields=meta.fields)
        return {item_key(meta.merge_key, item): {".": {}, **fields_of(item, element)} for item in value
                if isinstance(item, dict) and meta.merge_key in item}
    if isinstance(value, list) and meta.merge_primitives:
        return {f"v:{json.dumps(item, separators=(',', ':'))}": {} for item in value}
    return {}


def item_key(merge_key: str, item: Obj) -> str:
    return "k:" + json.dumps({merge_key: item[merge_key]}, separators=(",", ":"))


def manager_of(field_manager: str, user_agent: str) -> str:
    """The manager a write is recorded under."""
    return field_manager or user_agent.split("/", 1)[0][:128]


def tracked(obj: Obj, *, status: bool) -> Obj:
    """The part of an object whose fields are tracked: without apiVersion/kind, the server's metadata, and
    `status` (or everything but `status`, for a /status write, when `status` is True)."""
    if status:
        return {"status": obj["status"]} if "status" in obj else {}
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _SERVER_META}
    if meta:
        out["metadata"] = meta
    else:
        out.pop("metadata", None)
    return out


def changes(new: Any, old: Any, meta: FieldMeta) -> tuple[Fields, Fields]:
    """(the fields `new` adds or changes, the fields it removes) compared with `old`, as FieldsV1 sets."""
    changed: Fields = {}
    removed: Fields = {}
    _compare(new, old, meta, changed, removed)
    return changed, removed


def _compare(new: Any, old: Any, meta: FieldMeta, changed: Fields, removed: Fields) -> None:
    """Fill the children of one node: `new` and `old` are the values of a map (dicts) or of a list."""
    if isinstance(new, dict) and isinstance(old, dict):
        for key, value in new.items():
            _child(f"f:{key}", value, old.get(key, _MISSING), meta.child(key), changed, removed)
        for key, value in old.items():
            if key not in new:
                removed[f"f:{key}"] = fields_of(value, meta.child(key))
        return
    if isinstance(new, list) and isinstance(old, list) and meta.merge_key:
        element = FieldMeta(fields=meta.fields)
        olds = {item_key(meta.merge_key, i): i for i in old if isinstance(i, dict) and meta.merge_key in i}
        seen = set()
        for item in new:
            if not isinstance(item, dict) or meta.merge_key not in item:
                continue
            key = item_key(meta.merge_key, item)
            seen.add(key)
            if key not in olds:
                changed[key] = {".": {}, **fields_of(item, element)}
                continue
            sub_changed: Fields = {}
            sub_removed: Fields = {}
            _compare(item, olds[key], element, sub_changed, sub_removed)
            if sub_changed:
                changed[key] = sub_changed
            if sub_removed:
                removed[key] = sub_removed
        for key, item in olds.items():
            if key not in seen:
                removed[key] = {".": {}, **fields_of(item, element)}
        return
    if isinstance(new, list) and isinstance(old, list) and meta.merge_primitives:
        for value in new:
            if value not in old:
                changed[f"v:{json.dumps(value, separators=(',', ':'))}"] = {}
        for value in old:
            if value not in new:
                removed[f"v:{json.dumps(value, separators=(',', ':'))}"] = {}


def _child(key: str, new: Any, old: Any, meta: FieldMeta, changed: Fields, removed: Fields) -> None:
    if old is _MISSING:
        changed[key] = fields_of(new, meta)
        return
    both_maps = isinstance(new, dict) and isinstance(old, dict)
    merged_lists = isinstance(new, list) and isinstance(old, list) and \
        bool(meta.merge_key or meta.merge_primitives)
    if both_maps or merged_lists:
        sub_changed: Fields = {}
        sub_removed: Fields = {}
        _compare(new, old, meta, sub_changed, sub_removed)
        if sub_changed:
            changed[key] = sub_changed
        if sub_removed:
            removed[key] = sub_removed
    elif new != old:
        changed[key] = fields_of(new, meta)


def union(a: Fields, b: Fields) -> Fields:
    out = copy.deepcopy(a)
    for key, child in b.items():
        out[key] = union(out[key], child) if isinstance(out.get(key), dict) else copy.deepcopy(child)
    return out


def difference(a: Fields, b: Fields) -> Fields:
    """`a` without the members of `b` (a leaf `{}` or a `.` is a member; a node's children are not removed
    by a member of the same path in `b` unless `b` holds them too)."""
    out: Fields = {}
    for key, child in a.items():
        if key not in b:
            out[key] = copy.deepcopy(child)
            continue
        theirs = b[key]
        if not child:                     # a member of a
            if theirs:                    # b has only children here: a's member stays
                out[key] = {}
            continue
        rest = difference(child, theirs) if isinstance(theirs, dict) else copy.deepcopy(child)
        if not theirs:                    # b's member: a's "." goes, its children stay
            rest.pop(".", None)
        if rest:
            out[key] = rest
    return out


def _normalised(entry: Obj) -> Obj:
    """A copy of an entry with its time as metav1.Time serialises it (clients may send "+00:00")."""
    out = copy.deepcopy(entry)
    when = out.get("time")
    if isinstance(when, str) and not when.endswith("Z"):
        try:
            parsed = datetime.fromisoformat(when)
        except ValueError:
            return out
        if parsed.tzinfo is not None:
            out["time"] = parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return out


def _sort_key(entry: Obj) -> tuple[int, str, str, str]:
    return (0 if entry.get("operation") == "Apply" else 1, str(entry.get("time", "")),
            str(entry.get("manager", "")), str(entry.get("apiVersion", "")))


def record_update(new: Obj, old: Obj | None, *, manager: str, api_version: str, subresource: str,
                  meta: FieldMeta, has_status: bool) -> None:
    """Set `new["metadata"]["managedFields"]` for a non-apply write of `new` over `old` (None: a create),
    starting from the entries `new` carries (the caller puts the stored ones there when the request sent
    none; an explicit `[]` clears them)."""
    new_meta = new["metadata"]
    entries = new_meta.get("managedFields")
    if isinstance(entries, list) and not entries:
        new_meta.pop("managedFields", None)
        return
    entries = [_normalised(e) for e in entries or [] if isinstance(e, dict)]
    status = subresource == "status"
    if not status and has_status:
        before = tracked({k: v for k, v in (old or {}).items() if k != "status"}, status=False)
        after = tracked({k: v for k, v in new.items() if k != "status"}, status=False)
    else:
        before, after = tracked(old or {}, status=status), tracked(new, status=status)
    changed, removed = changes(after, before, meta)
    lost = union(changed, removed)
    mine = None
    kept: list[Obj] = []
    for entry in entries:
        own = (entry.get("manager") == manager and entry.get("operation") == "Update"
               and entry.get("apiVersion") == api_version and entry.get("subresource", "") == subresource)
        if own:
            mine = entry
            continue
        fields = entry.get("fieldsV1")
        if isinstance(fields, dict) and lost:
            remaining = difference(fields, lost)
            if remaining != fields:
                if not remaining:
                    continue
                entry["fieldsV1"] = remaining
        kept.append(entry)
    previous = mine.get("fieldsV1") if mine is not None and isinstance(mine.get("fieldsV1"), dict) else {}
    assert isinstance(previous, dict)
    fields = difference(union(previous, changed), removed)
    if mine is not None and fields == previous:
        kept.append(mine)
    elif fields:
        entry = {"manager": manager, "operation": "Update", "apiVersion": api_version, "time": now_rfc3339(),
                 "fieldsType": "FieldsV1", "fieldsV1": fields}
        if subresource:
            entry["subresource"] = subresource
        kept.append(entry)
    kept.sort(key=_sort_key)
    if kept:
        new_meta["managedFields"] = kept
    else:
        new_meta.pop("managedFields", None)
