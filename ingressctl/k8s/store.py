"""client-go's ThreadSafeStore with indexers, keyed "namespace/name" (or "name" for cluster-scoped objects).

Guarantees:
- Every method takes one lock; readers never see a half-applied change, and indices always match the items.
- Indices are recomputed from the *old* object on update and delete, so stale index values never linger.
- `replace()` swaps the contents wholesale and returns what changed against the previous contents: a
  `DeletedFinalStateUnknown` tombstone (carrying the last known object) for every key that vanished, the new
  objects for new keys, and (old, new) pairs for keys whose resourceVersion changed. Keys whose
  resourceVersion is unchanged are not reported (client-go's "isSync" rule).
- Objects are stored and returned as they are, without copies: callers must treat them as read-only
  (client-go's cache has the same contract; copying every object would double ingest cost and memory).
- An update (`add` over an existing key) makes the new object reuse the old object's values wherever they are
  equal (whole fields, and fields of nested objects a few levels down): memory only, the new object reads,
  compares and serialises the same. Others often still hold the old object (the controller's configuration
  keeps the Ingress it rendered), so a status-only change then costs a new metadata and status, not a second
  copy of the whole object. Values of different types are never exchanged (JSON `true` and `1` stay apart).
- An index function must not fail on a valid object; if it raises, the error propagates and the store is left
  unchanged.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

IndexFunc = Callable[[dict[str, Any]], list[str]]

# An index maps each value to its keys. Most values (e.g. a Service name for EndpointSlices) have one key:
# it is stored as the key string itself; only values with several keys get a set (~200 bytes saved per value).
_Index = dict[str, "str | set[str]"]

NAMESPACE_INDEX = "namespace"


@dataclass(frozen=True)
class DeletedFinalStateUnknown:
    """A delete inferred from a relist: `obj` is the last known state (may be stale; may be None)."""

    key: str
    obj: dict[str, Any] | None


def meta_namespace_key(obj: dict[str, Any] | DeletedFinalStateUnknown) -> str:
    """client-go's DeletionHandlingMetaNamespaceKeyFunc: "namespace/name", "name", or a tombstone's key."""
    try:
        meta = obj["metadata"]  # type: ignore[index]
        name = meta["name"]
        ns = meta.get("namespace")
    except (KeyError, TypeError, AttributeError):
        if isinstance(obj, DeletedFinalStateUnknown):
            return obj.key
        raise ValueError("object has no metadata.name") from None
    if not name or not isinstance(name, str):
        raise ValueError("object has no metadata.name")
    return f"{ns}/{name}" if ns else name


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """(namespace, name); namespace is "" for a cluster-scoped key. ValueError on a malformed key."""
    parts = key.split("/")
    if len(parts) == 1 and parts[0]:
        return "", parts[0]
    if len(parts) == 2 and parts[1]:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format: {key!r}")


def meta_namespace_index_func(obj: dict[str, Any]) -> list[str]:
    """The built-in "namespace" index: [metadata.namespace], or [] for cluster-scoped objects."""
    ns = obj["metadata"].get("namespace")
    return [ns] if ns else []


def label_index_func(label: str) -> IndexFunc:
    """An index on one label's value, e.g. `label_index_func("kubernetes.io/service-name")`.

    Index values are "namespace/value" so that same-named objects in different namespaces do not mix.
    """

    def index(obj: dict[str, Any]) -> list[str]:
        meta = obj.get("metadata", {})
        labels = meta.get("labels") or {}
        value = labels.get(label)
        if value is None:
            return []
        ns = meta.get("namespace")
        return [f"{ns}/{value}" if ns else str(value)]

    return index


SERVICE_NAME_LABEL = "kubernetes.io/service-name"
BY_SERVICE_INDEX = "by-service"
endpoint_slices_by_service: IndexFunc = label_index_func(SERVICE_NAME_LABEL)
"""Index EndpointSlices by "namespace/service-name" (`kubernetes.io/service-name` label)."""


@dataclass
class ReplaceResult:
    """What `replace()` changed, in the order handlers should hear it: deletes, then `changes` in list order.

    `changes` holds (None, new) for a new key and (old, new) for a key whose resourceVersion changed.
    """

    deleted: list[DeletedFinalStateUnknown] = field(default_factory=list)
    changes: list[tuple[dict[str, Any] | None, dict[str, Any]]] = field(default_factory=list)

    @property
    def added(self) -> list[dict[str, Any]]:
        return [new for old, new in self.changes if old is None]

    @property
    def updated(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        return [(old, new) for old, new in self.changes if old is not None]


class ThreadSafeStore:
    """Items keyed by meta_namespace_key plus named indices; see the module docstring."""

    def __init__(self, indexers: dict[str, IndexFunc] | None = None, *,
                 key_func: Callable[[dict[str, Any]], str] = meta_namespace_key) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, dict[str, Any]] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, _Index] = {}
        self._key_func = key_func
        self._resource_version = ""
        self.add_indexers({NAMESPACE_INDEX: meta_namespace_index_func, **(indexers or {})})

    # -- writes ---------------------------------------------------------------------------------------------

    def add(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Store obj (add and update are the same); returns the previous object for the key, if any.
        Over an existing object, obj is changed in place to share that object's equal values (see above)."""
        key = self._key_func(obj)
        with self._lock:
            old = self._items.get(key)
            if old is not None and old is not obj:
                share_unchanged(old, obj)
            new_values = self._index_values(obj)  # compute first: a failing index func changes nothing
            self._items[key] = obj
            self._update_indices(key, self._index_values(old) if old is not None else None, new_values)
            return old

    update = add

    def delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> dict[str, Any] | None:
        """Remove by key (a tombstone's key for a tombstone); returns the removed object or None."""
        return self.delete_by_key(meta_namespace_key(obj) if isinstance(obj, DeletedFinalStateUnknown)
                                  else self._key_func(obj))

    def delete_by_key(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._update_indices(key, self._index_values(old), None)
            return old

    def replace(self, objs: Iterable[dict[str, Any]], resource_version: str = "") -> ReplaceResult:
        """Swap in `objs` wholesale, rebuild indices, and report the difference (see module docstring)."""
        new_items, ns_index = self._keyed(objs)
        new_indices: dict[str, _Index] = {}
        for name, fn in self._indexers.items():  # one pass per index: cheaper than per object per index
            if name == NAMESPACE_INDEX and ns_index is not None:
                new_indices[name] = ns_index
                continue
            index: _Index = {}
            get = index.get
            for key, obj in new_items.items():
                for value in fn(obj):
                    bucket = get(value)  # _bucket_add, inlined
                    if bucket is None:
                        index[value] = key
                    elif bucket.__class__ is str:
                        if bucket != key:
                            index[value] = {bucket, key}
                    else:
                        bucket.add(key)  # type: ignore[union-attr]
            new_indices[name] = index
        result = ReplaceResult()
        with self._lock:
            old_items = self._items
            if old_items:
                for key, last in old_items.items():
                    if key not in new_items:
                        result.deleted.append(DeletedFinalStateUnknown(key, last))
                changes = result.changes
                for key, obj in new_items.items():
                    prev = old_items.get(key)
                    if prev is None or (prev is not obj
                                        and resource_version_of(prev) != resource_version_of(obj)):
                        changes.append((prev, obj))
            else:
                result.changes = [(None, obj) for obj in new_items.values()]
            self._items = new_items
            self._indices = new_indices
            if resource_version:
                self._resource_version = resource_version
        return result

    def _keyed(self, objs: Iterable[dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], _Index | None]:
        """Objects by key, and the built-in namespace index when it can be built in the same pass.

        With the default key function and namespace index, both are computed inline (this runs for every
        object of every list); anything unexpected falls back to the generic path and its errors.
        """
        objs = objs if isinstance(objs, builtins.list) else builtins.list(objs)
        if self._key_func is meta_namespace_key and self._indexers.get(NAMESPACE_INDEX) is \
                meta_namespace_index_func:
            items: dict[str, dict[str, Any]] = {}
            ns_keys: dict[str, builtins.list[str]] = {}
            try:
                for obj in objs:
                    meta = obj["metadata"]
                    name = meta["name"]
                    ns = meta.get("namespace")
                    if not name or name.__class__ is not str:
                        raise TypeError("bad name")
                    if ns:
                        key = f"{ns}/{name}"
                        bucket = ns_keys.get(ns)
                        if bucket is None:
                            ns_keys[ns] = [key]
                        else:
                            bucket.append(key)
                    else:
                        key = name
                    items[key] = obj
            except (KeyError, TypeError, AttributeError):
                pass
            else:
                index: _Index = {}
                for ns, keys in ns_keys.items():
                    if len(keys) == 1:
                        index[ns] = keys[0]
                    else:
                        index[ns] = set(keys)
                        if len(index[ns]) == 1:  # the same key listed twice
                            index[ns] = keys[0]
                return items, index
        key_func = self._key_func
        return {key_func(obj): obj for obj in objs}, None

    def set_resource_version(self, resource_version: str) -> None:
        with self._lock:
            self._resource_version = resource_version

    # -- reads ----------------------------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        """The resourceVersion of the last replace() or bookmark the owner recorded."""
        return self._resource_version

    def get(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> dict[str, Any] | None:
        key = obj.key if isinstance(obj, DeletedFinalStateUnknown) else self._key_func(obj)
        return self.get_by_key(key)

    def get_by_key(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._items.get(key)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def list(self) -> builtins.list[dict[str, Any]]:
        with self._lock:
            return builtins.list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        with self._lock:
            return builtins.list(self._items)

    def items(self) -> builtins.list[tuple[str, dict[str, Any]]]:
        with self._lock:
            return builtins.list(self._items.items())

    # -- indices --------------------------------------------------------------------------------------------

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        """Add named index functions and index the existing items; a duplicate name is a ValueError."""
        with self._lock:
            dup = set(indexers) & set(self._indexers)
            if dup:
                raise ValueError(f"indexer(s) already exist: {', '.join(sorted(dup))}")
            built: dict[str, _Index] = {}
            for name, fn in indexers.items():
                index: _Index = {}
                for key, obj in self._items.items():
                    for value in fn(obj):
                        _bucket_add(index, value, key)
                built[name] = index
            self._indexers.update(indexers)
            self._indices.update(built)

    def get_indexers(self) -> dict[str, IndexFunc]:
        with self._lock:
            return dict(self._indexers)

    def by_index(self, index_name: str, value: str) -> builtins.list[dict[str, Any]]:
        """Objects whose index function returned `value`; KeyError for an unknown index name."""
        with self._lock:
            index = self._index(index_name)
            return [self._items[k] for k in _bucket_keys(index.get(value))]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        with self._lock:
            return builtins.list(_bucket_keys(self._index(index_name).get(value)))

    def index(self, index_name: str, obj: dict[str, Any]) -> builtins.list[dict[str, Any]]:
        """Objects sharing any of obj's index values."""
        with self._lock:
            index = self._index(index_name)
            keys: set[str] = set()
            for value in self._indexers[index_name](obj):
                keys.update(_bucket_keys(index.get(value)))
            return [self._items[k] for k in keys]

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        with self._lock:
            return builtins.list(self._index(index_name))

    def _index(self, name: str) -> _Index:
        try:
            return self._indices[name]
        except KeyError:
            raise KeyError(f"index {name!r} does not exist") from None

    def _index_values(self, obj: dict[str, Any]) -> dict[str, builtins.list[str]]:
        return {name: fn(obj) for name, fn in self._indexers.items()}

    def _update_indices(self, key: str, old: dict[str, builtins.list[str]] | None,
                        new: dict[str, builtins.list[str]] | None) -> None:
        for name in self._indexers:
            old_values = old[name] if old is not None else []
            new_values = new[name] if new is not None else []
            if old_values == new_values:
                continue
            index = self._indices[name]
            for value in old_values:
                if value not in new_values:
                    _bucket_remove(index, value, key)
            for value in new_values:
                _bucket_add(index, value, key)


def _bucket_add(index: _Index, value: str, key: str) -> None:
    bucket = index.get(value)
    if bucket is None:
        index[value] = key
    elif isinstance(bucket, str):
        if bucket != key:
            index[value] = {bucket, key}
    else:
        bucket.add(key)


def _bucket_remove(index: _Index, value: str, key: str) -> None:
    bucket = index.get(value)
    if bucket is None:
        return
    if isinstance(bucket, str):
        if bucket == key:
            del index[value]
        return
    bucket.discard(key)
    if len(bucket) == 1:
        index[value] = next(iter(bucket))
    elif not bucket:
        del index[value]


def _bucket_keys(bucket: str | set[str] | None) -> tuple[str, ...] | set[str]:
    if bucket is None:
        return ()
    return (bucket,) if isinstance(bucket, str) else bucket


_SHARE_DEPTH = 3


def share_unchanged(old: dict[str, Any], new: dict[str, Any], depth: int = _SHARE_DEPTH) -> None:
    """Make `new` use `old`'s value for every field whose value is equal (same JSON type, equal content), in
    place; fields of dicts that differ are compared the same way, `depth` levels down. Memory only: `new`
    reads, compares and serialises as before. Both must be read-only from now on (they share values)."""
    same: list[tuple[str, Any]] = []
    for k, v in new.items():
        ov = old.get(k, _MISSING)
        if ov is v or ov.__class__ is not v.__class__:
            continue
        cls = v.__class__
        if cls is dict:
            if _json_equal(ov, v):
                same.append((k, ov))
            elif depth > 1:
                share_unchanged(ov, v, depth - 1)
        elif (cls is list or cls is str) and _json_equal(ov, v):
            same.append((k, ov))
    for k, ov in same:
        new[k] = ov


def _json_equal(a: Any, b: Any) -> bool:
    """Equal as JSON text: `==`, keys in the same order, and no bool/int/float stands in for another anywhere
    inside."""
    if a != b:
        return False
    cls = a.__class__
    if cls is not b.__class__:
        return False
    if cls is dict:
        return list(a) == list(b) and all(_json_equal(v, b[k]) for k, v in a.items()
                                          if v.__class__ is not str)
    if cls is list:
        return all(_json_equal(x, y) for x, y in zip(a, b, strict=True) if x.__class__ is not str)
    return True


_MISSING: Any = object()


def resource_version_of(obj: dict[str, Any]) -> Any:
    meta = obj.get("metadata")
    return meta.get("resourceVersion") if isinstance(meta, dict) else None
