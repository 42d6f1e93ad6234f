"""The committed state of the devcluster's store: objects by kind, the global resourceVersion, the event
history, and every read of them (get, paginated lists from consistent snapshots, watches).

Guarantees:
- One global resourceVersion counter; every commit (`_commit`, lock held) takes the next integer and appends
  exactly one event to a global history, pushed to the kind's watchers and commit hooks in the same step.
- History keeps the last `history` events. A watch or an exact list from a resourceVersion whose successors
  are no longer all retained fails with 410 Expired; `compact()` drops the whole history at once.
- Lists are served from a consistent snapshot: the pages of a paginated list are cut from the state at the
  first page's resourceVersion, reconstructed from the history when writes happened in between.
- Watchers are registered under the lock that commits events, so a watch from resourceVersion R sees exactly
  the events after R, in order, with no gap and no duplicate.
"""

from __future__ import annotations

import bisect
import random
import threading
from collections.abc import Callable

from ingressctl.devcluster import errors
from ingressctl.devcluster.objects import (
    ADDED,
    DELETED,
    Bucket,
    Event,
    ListResult,
    Matcher,
    SecondClock,
    Stored,
    Watcher,
    decode_continue,
    dumps,
    encode_continue,
    object_key,
    parse_resource_version,
)
from ingressctl.devcluster.registry import Registry
from ingressctl.devcluster.resources import Obj, ResourceKind


class Storage:
    """All objects of all kinds, the global resourceVersion and the event history; the reads of them."""

    def __init__(self, registry: Registry, *, history: int = 10000,
                 clock: Callable[[], str] | None = None) -> None:
        if history < 0:
            raise ValueError("history must be >= 0")
        self.registry = registry
        self.lock = threading.Lock()
        self._clock = clock or SecondClock()
        self._rv = 0
        self._history = history
        self._events: list[Event] = []
        self._compacted = 0          # events up to this resourceVersion are no longer available
        self._buckets: dict[str, Bucket] = {}
        for k in registry.kinds:
            if k.storage_id not in self._buckets:
                self._buckets[k.storage_id] = Bucket(registry.stored_kind(k))
        self._rng = random.Random()
        self._commit_hooks: dict[str, list[Callable[[Event], None]]] = {}

    # ------------------------------------------------------------------------------------------- basics
    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def compacted_resource_version(self) -> int:
        return self._compacted

    def bucket(self, kind: ResourceKind) -> Bucket:
        try:
            return self._buckets[kind.storage_id]
        except KeyError:     # a kind removed (its CustomResourceDefinition deleted) while a request ran
            raise errors.resource_not_found() from None

    def bucket_by_id(self, storage_id: str) -> Bucket:
        return self._buckets[storage_id]

    def _commit(self, bucket: Bucket, etype: str, key: str, obj: Obj, prev: Stored | None) -> Event:
        """Store `obj` (normalised, resourceVersion = current + 1) and record the event. Lock held."""
        rv = self._rv + 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(rv)
        stored = Stored(dumps(obj), rv, meta)
        self._rv = rv
        if etype == DELETED:
            bucket.remove(key)
        else:
            bucket.put(key, stored)
        event = Event(rv, bucket.kind.storage_id, etype, key, stored.namespace, stored, prev)
        events = self._events
        events.append(event)
        if len(events) > self._history:
            self._compacted = max(self._compacted, events[len(events) - self._history - 1].rv)
            if len(events) >= 2 * self._history + 1000:
                del events[:len(events) - self._history]
        for watcher in bucket.watchers:
            watcher.push(event)
        for hook in self._commit_hooks.get(bucket.kind.storage_id, ()):
            hook(event)
        return event

    def compact(self) -> int:
        """Drop the whole history: every older resourceVersion now gets 410. Returns the compaction point."""
        with self.lock:
            self._compacted = self._rv
            self._events = []
            return self._rv

    def _events_after(self, rv: int, storage: str) -> list[Event]:
        start = bisect.bisect_right(self._events, rv, key=lambda e: e.rv)
        return [e for e in self._events[start:] if e.storage == storage]

    # ------------------------------------------------------------------------------------------- reads
    def get(self, kind: ResourceKind, namespace: str, name: str) -> Stored:
        with self.lock:
            stored = self.bucket(kind).objects.get(object_key(namespace, name))
        if stored is None:
            raise errors.not_found(kind.plural, kind.group, name)
        return stored

    def _list_snapshot(self, resource_version: str, resource_version_match: str, limit: int,
                       continue_token: str) -> tuple[int | None, str]:
        """(exact resourceVersion to serve or None for the latest, start key) from the list parameters."""
        if continue_token:
            if resource_version:
                raise errors.bad_request("specifying resource version is not allowed when using continue")
            token_rv, start = decode_continue(continue_token)
            return (token_rv or None), start
        if resource_version_match:
            if not resource_version:
                raise errors.bad_request("resourceVersionMatch is forbidden unless resourceVersion is "
                                         "provided")
            if resource_version_match not in ("Exact", "NotOlderThan"):
                raise errors.bad_request(f'resourceVersionMatch: Unsupported value: '
                                         f'"{resource_version_match}": supported values: "Exact", '
                                         '"NotOlderThan"')
            rv = parse_resource_version(resource_version)
            if resource_version_match == "Exact":
                if rv == 0:
                    raise errors.bad_request('resourceVersionMatch "exact" is forbidden for '
                                             'resourceVersion "0"')
                return rv, ""
            if rv > self._rv:
                raise errors.too_large_resource_version(rv, self._rv)
            return None, ""
        if resource_version and resource_version != "0":
            rv = parse_resource_version(resource_version)
            if limit > 0:
                return rv, ""
            if rv > self._rv:
                raise errors.too_large_resource_version(rv, self._rv)
        return None, ""

    def list_page(self, kind: ResourceKind, namespace: str, *, matcher: Matcher, limit: int = 0,
                  continue_token: str = "", resource_version: str = "",
                  resource_version_match: str = "") -> ListResult:
        """One page of a list (all of it without `limit`), from a consistent snapshot."""
        exact, start = self._list_snapshot(resource_version, resource_version_match, limit, continue_token)
        fields = matcher.fields
        ns_fixed = fields.value_of("metadata.namespace")
        if kind.namespaced and ns_fixed is not None:
            if namespace and namespace != ns_fixed:
                return ListResult([], self._rv, "", None)
            namespace = ns_fixed
        name_fixed = fields.value_of("metadata.name")
        bucket = self.bucket(kind)
        with self.lock:
            current = self._rv
            if exact is not None and exact > current:
                raise errors.too_large_resource_version(exact, current)
            if exact is not None and exact < self._compacted:
                if continue_token:
                    err = errors.expired(
                        "The provided continue parameter is too old to display a consistent list result. "
                        "You can start a new list without the continue parameter, or use the continue token "
                        "in this response to retrieve the remainder of the results. Continuing with the "
                        "provided token results in an inconsistent list - objects that were created, "
                        "modified, or deleted between the time the first chunk was returned and now may show "
                        "up in the list.")
                    err.metadata = {"continue": encode_continue(0, start)}
                    raise err
                raise errors.expired(f"The resourceVersion for the provided list is too old. "
                                     f"(requested {exact}, compacted at {self._compacted})")
            snapshot_rv = exact if exact is not None else current
            keys = bucket.keys
            objects: dict[str, Stored] = bucket.objects
            if snapshot_rv < current:
                overlay: dict[str, Stored | None] = {}
                for ev in reversed(self._events_after(snapshot_rv, bucket.kind.storage_id)):
                    overlay[ev.key] = None if ev.type == ADDED else ev.prev
                if overlay:
                    objects = dict(objects)
                    for key, old in overlay.items():
                        if old is None:
                            objects.pop(key, None)
                        else:
                            objects[key] = old
                    keys = sorted(objects)
            lo, hi = 0, len(keys)
            if namespace:
                lo, hi = bisect.bisect_left(keys, namespace + "/"), bisect.bisect_left(keys, namespace + "0")
            if start:
                lo = max(lo, bisect.bisect_left(keys, start))
            if name_fixed is not None and (namespace or not kind.namespaced):
                key = object_key(namespace, name_fixed)
                i = bisect.bisect_left(keys, key, lo, hi)
                lo, hi = (i, i + 1) if i < hi and keys[i] == key else (lo, lo)
            if matcher.empty:
                end = min(hi, lo + limit) if limit else hi
                items = [objects[k] for k in keys[lo:end]]
                more = end < hi
                last = keys[end - 1] if more else ""
                remaining: int | None = hi - end if more else None
            else:
                items = []
                last = ""
                i = lo
                while i < hi:
                    stored = objects[keys[i]]
                    i += 1
                    if matcher(stored):
                        items.append(stored)
                        if limit and len(items) >= limit:
                            last = keys[i - 1]
                            break
                more = bool(last) and i < hi
                remaining = None
        token = encode_continue(snapshot_rv, last + "\x00") if more else ""
        return ListResult(items, snapshot_rv, token, remaining)

    # ------------------------------------------------------------------------------------------- watch
    def watch(self, kind: ResourceKind, namespace: str, *, resource_version: str = "",
              send_initial_events: bool | None = None) -> tuple[Watcher, list[Event]]:
        """Register a watcher; returns it and its first events (synthetic ADDED, or the history backlog).

        Raises StatusError 410 when `resource_version` is older than the retained history, 504
        (ResourceVersionTooLarge) when it is newer than the store's.
        """
        bucket = self.bucket(kind)
        rv = 0 if resource_version in ("", "0") else parse_resource_version(resource_version)
        initial_state = send_initial_events if send_initial_events is not None else rv == 0
        watcher = Watcher(bucket, namespace)
        with self.lock:
            if self._buckets.get(bucket.kind.storage_id) is not bucket:
                raise errors.resource_not_found()      # the kind went away (its CRD was deleted) meanwhile
            if rv and rv < self._compacted:
                raise errors.too_old_resource_version(rv, self._rv)
            if rv > self._rv:
                raise errors.too_large_resource_version(rv, self._rv)
            if initial_state:
                lo, hi = bucket.key_range(namespace)
                sid = bucket.kind.storage_id
                initial = [Event(s.rv, sid, ADDED, k, s.namespace, s, None)
                           for k in bucket.keys[lo:hi] for s in (bucket.objects[k],)]
            elif rv:
                initial = self._events_after(rv, bucket.kind.storage_id)
            else:
                initial = []
            bucket.watchers.add(watcher)
        return watcher, initial

    def bookmark_point(self, watcher: Watcher) -> tuple[list[Event], int]:
        """Pending events plus the resourceVersion up to which the watcher has then seen every event."""
        with self.lock:
            return watcher.drain(), self._rv

    def unregister(self, watcher: Watcher) -> None:
        with self.lock:
            watcher.bucket.watchers.discard(watcher)

    def drop_watches(self) -> int:
        with self.lock:
            watchers = [w for b in self._buckets.values() for w in b.watchers]
        for w in watchers:
            w.drop()
        return len(watchers)

    def watcher_count(self) -> int:
        with self.lock:
            return sum(len(b.watchers) for b in self._buckets.values())
