"""Lookups over the table of resource kinds a devcluster serves (`resources.ResourceKind` rows).

Guarantees: a kind is found by its URL (group, version, plural) or by (apiVersion, kind); each stored kind
(`storage_id`) has one row holding its stored form, other versions naming it in `storage`; kinds may be added
and replaced while the server runs and readers see the table before or after a change, never half of one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from ingressctl.devcluster.resources import ResourceKind


class Registry:
    """Lookups over a table of kinds: by URL (group, version, plural) and by (apiVersion, kind).

    Kinds may be added and removed while the server runs (`add`, `remove`: the kinds of a
    CustomResourceDefinition); readers see the table before or after a change, never half of one.
    """

    def __init__(self, kinds: Iterable[ResourceKind]) -> None:
        self.kinds: tuple[ResourceKind, ...] = ()
        self._by_path: dict[tuple[str, str, str], ResourceKind] = {}
        self._by_gvk: dict[tuple[str, str], ResourceKind] = {}
        self._storage: dict[str, ResourceKind] = {}
        self._lock = threading.Lock()
        self._rebuild(tuple(kinds))
        if "/namespaces" not in self._storage:
            raise ValueError("the table must contain core/v1 namespaces")

    def _rebuild(self, kinds: tuple[ResourceKind, ...]) -> None:
        by_path: dict[tuple[str, str, str], ResourceKind] = {}
        by_gvk: dict[tuple[str, str], ResourceKind] = {}
        storage: dict[str, ResourceKind] = {}
        for k in kinds:
            key = (k.group, k.version, k.plural)
            if key in by_path:
                raise ValueError(f"duplicate resource {k.api_version} {k.plural}")
            by_path[key] = k
            by_gvk.setdefault((k.api_version, k.kind), k)
            if not k.storage:
                storage[k.storage_id] = k
        for k in kinds:
            if k.storage and k.storage not in storage:
                raise ValueError(f"{k.api_version} {k.plural}: storage {k.storage!r} is not a stored kind")
        self._by_path, self._by_gvk, self._storage, self.kinds = by_path, by_gvk, storage, kinds

    def add(self, kinds: Iterable[ResourceKind]) -> None:
        """Append kinds to the table."""
        with self._lock:
            self._rebuild(self.kinds + tuple(kinds))

    def replace(self, storage_id: str, kinds: Iterable[ResourceKind]) -> list[ResourceKind]:
        """Replace every version of the stored kind `storage_id` by `kinds` (none: remove it) in one step;
        returns the rows removed."""
        with self._lock:
            gone = [k for k in self.kinds if k.storage_id == storage_id]
            self._rebuild(tuple(k for k in self.kinds if k.storage_id != storage_id) + tuple(kinds))
            return gone

    def by_path(self, group: str, version: str, plural: str) -> ResourceKind | None:
        return self._by_path.get((group, version, plural))

    def by_gvk(self, api_version: str, kind: str) -> ResourceKind | None:
        return self._by_gvk.get((api_version, kind))

    def stored_kind(self, kind: ResourceKind) -> ResourceKind:
        """The kind whose form is stored for `kind` (itself unless it is another version)."""
        return self._storage[kind.storage_id]

    def storage_ids(self) -> list[str]:
        return list(self._storage)

    def groups(self) -> dict[str, list[str]]:
        """Group name -> versions (core excluded), in table order."""
        out: dict[str, list[str]] = {}
        for k in self.kinds:
            if k.group and k.version not in out.setdefault(k.group, []):
                out[k.group].append(k.version)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceKind]:
        return [k for k in self.kinds if k.group == group and k.version == version]
