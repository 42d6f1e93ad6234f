"""In-memory object storage with etcd's guarantees as the API server exposes them.

Guarantees:
- One global resourceVersion counter; every committed write (create, update, status update, patch, delete,
  deletion mark) takes the next integer and appends exactly one event to a global history. No-op updates
  commit nothing and keep the object's resourceVersion, like a real API server.
- All reads and writes happen under one lock with short critical sections. An object is stored as its compact
  JSON bytes plus the few metadata fields selectors need; lists and watches send those bytes as they are and
  never re-serialise, and the garbage collector has almost nothing to scan however many objects are stored.
  Writers parse a private copy when they need the whole object.
- History keeps the last `history` events. A watch or an exact list from a resourceVersion whose successors
  are no longer all retained fails with 410 Expired; `compact()` drops the whole history at once.
- Lists are served from a consistent snapshot: the pages of a paginated list are cut from the state at the
  first page's resourceVersion, reconstructed from the history when writes happened in between.
- Creates pass kube-apiserver's mutating admission where a controller can tell (`default_class`: the default
  IngressClass) before defaulting.
- Watchers are registered under the lock that commits events, so a watch from resourceVersion R sees exactly
  the events after R, in order, with no gap and no duplicate.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ingressctl.devcluster import default_class, errors
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.patch import (
    PatchError,
    PatchFormatError,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from ingressctl.devcluster.resources import Obj, Registry, ResourceKind
from ingressctl.devcluster.selectors import FieldSelector, LabelSelector

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
MAX_PENDING_EVENTS = 200_000   # a watcher this far behind is closed, as the API server closes slow watchers

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_META_ORDER = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
               "annotations",
               "ownerReferences", "finalizers", "managedFields")
_SYSTEM_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")
_META_FIELDS = ("metadata.name", "metadata.namespace")

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes, as the API server writes them."""
    return _encoder.encode(obj).encode()


class SecondClock:
    """RFC 3339 UTC time with second precision (metav1.Time), formatted once per second."""

    def __init__(self) -> None:
        self._second = -1
        self._text = ""

    def __call__(self) -> str:
        now = int(time.time())
        if now != self._second:
            self._text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
            self._second = now
        return self._text


class Stored:
    """A committed object: its JSON bytes (storage form, no kind/apiVersion) and what selectors need."""

    __slots__ = ("body", "labels", "name", "namespace", "rv", "uid")

    def __init__(self, body: bytes, rv: int, meta: Obj) -> None:
        self.body = body
        self.rv = rv
        self.name: str = meta.get("name", "")
        self.namespace: str = meta.get("namespace", "")
        self.uid: str = meta.get("uid", "")
        labels = meta.get("labels")
        self.labels: dict[str, str] = dict(labels) if labels else {}

    def parse(self) -> Obj:
        """A private, mutable copy of the object."""
        obj: Obj = json.loads(self.body)
        return obj


@dataclass(slots=True)
class Event:
    """One committed change. `stored` is the new state (the last state, with the deletion RV, for DELETED)."""

    rv: int
    storage: str
    type: str
    key: str
    namespace: str
    stored: Stored
    prev: Stored | None
    lines: dict[str, bytes] = field(default_factory=dict)   # encoded watch lines by event type (cache)


def object_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


class Matcher:
    """Label and field selectors applied to stored objects; parses an object only for non-metadata fields."""

    def __init__(self, labels: LabelSelector, fields: FieldSelector,
                 view: Callable[[Stored], Obj] | None = None) -> None:
        self.labels = labels
        self.fields = fields
        self.view = view
        self.empty = labels.empty and fields.empty
        self._meta_only = all(name in _META_FIELDS for name, _, _ in fields.requirements)

    def __call__(self, stored: Stored) -> bool:
        if not self.labels.matches(stored.labels):
            return False
        if self.fields.empty:
            return True
        if self._meta_only:
            obj: Obj = {"metadata": {"name": stored.name, "namespace": stored.namespace}}
        else:
            obj = self.view(stored) if self.view is not None else stored.parse()
        return self.fields.matches(obj)


class Bucket:
    """The objects of one stored kind: a dict plus the sorted key list that pagination walks."""

    def __init__(self, kind: ResourceKind) -> None:
        self.kind = kind
        self.objects: dict[str, Stored] = {}
        self.keys: list[str] = []
        self.watchers: set[Watcher] = set()

    def put(self, key: str, stored: Stored) -> None:
        if key not in self.objects:
            if not self.keys or key > self.keys[-1]:
                self.keys.append(key)
            else:
                bisect.insort(self.keys, key)
        self.objects[key] = stored

    def remove(self, key: str) -> None:
        del self.objects[key]
        del self.keys[bisect.bisect_left(self.keys, key)]

    def key_range(self, namespace: str) -> tuple[int, int]:
        """Index range of the keys in `namespace` ("" for all)."""
        if not namespace:
            return 0, len(self.keys)
        # "0" sorts right after "/", so [ns + "/", ns + "0") holds exactly the keys of the namespace.
        return bisect.bisect_left(self.keys, namespace + "/"), bisect.bisect_left(self.keys, namespace + "0")


class Watcher:
    """A registered watch: committers push events (under the store lock); one reader drains them."""

    def __init__(self, bucket: Bucket, namespace: str) -> None:
        self.bucket = bucket
        self.namespace = namespace
        self._cond = threading.Condition(threading.Lock())
        self._pending: list[Event] = []
        self.dropped = False          # close abruptly (fault injection, server stop)
        self.overflowed = False       # fell too far behind; the reader closes the stream
        self.ended = False            # the kind is gone; the reader closes the stream after its events
        self.closer: Callable[[], None] | None = None   # unblocks the reader (shuts its socket down)

    def push(self, event: Event) -> None:
        with self._cond:
            if self.overflowed:
                return
            self._pending.append(event)
            if len(self._pending) > MAX_PENDING_EVENTS:
                self.overflowed = True
            self._cond.notify()

    def end(self) -> None:
        """Ask the reader to end the stream cleanly after the pending events (the kind is going away)."""
        with self._cond:
            self.ended = True
            self._cond.notify()

    def drop(self) -> None:
        with self._cond:
            self.dropped = True
            self._cond.notify()
        closer = self.closer
        if closer is not None:
            closer()

    def wait(self, timeout: float) -> list[Event]:
        """Wait up to `timeout` seconds for events (or a drop); return and clear what is pending."""
        with self._cond:
            if not self._pending and not self.dropped and timeout > 0:
                self._cond.wait(timeout)
            out, self._pending = self._pending, []
            return out

    def drain(self) -> list[Event]:
        with self._cond:
            out, self._pending = self._pending, []
            return out


@dataclass
class ListResult:
    items: list[Stored]
    resource_version: int
    continue_token: str
    remaining: int | None


@dataclass
class WriteResult:
    stored: Stored
    created: bool = False
    deleted: bool = False      # the object is gone (DELETE answered with its last state)
    warnings: list[str] = field(default_factory=list)     # for the response's Warning headers


def encode_continue(rv: int, start: str) -> str:
    token = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode((token + "=" * (-len(token) % 4)).encode()))
        if not isinstance(data, dict) or data.get("v") != "meta.k8s.io/v1":
            raise ValueError("unknown version")
        rv, start = data["rv"], data["start"]
        if not isinstance(rv, int) or not isinstance(start, str) or rv < 0:
            raise ValueError("bad fields")
        return rv, start
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError):
        raise errors.bad_request("continue key is not valid: the continue parameter is malformed") from None


def parse_resource_version(value: str, what: str = "resourceVersion") -> int:
    try:
        rv = int(value)
        if rv < 0:
            raise ValueError
        return rv
    except ValueError:
        raise errors.bad_request(f'invalid {what} "{value}": must be a non-negative integer') from None


def normalise(obj: Obj) -> Obj:
    """Canonical key order: metadata first (in ObjectMeta order), then the rest as given, kind dropped."""
    meta = obj["metadata"]
    ordered = {k: meta[k] for k in _META_ORDER if k in meta}
    if len(ordered) != len(meta):
        ordered.update((k, v) for k, v in meta.items() if k not in ordered)
    out: Obj = {"metadata": ordered}
    for k, v in obj.items():
        if k not in ("metadata", "kind", "apiVersion"):
            out[k] = v
    return out


class Store:
    """All objects of all kinds, the global resourceVersion and the event history."""

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

    # ------------------------------------------------------------------------------------------ dynamic kinds
    def on_commit(self, storage_id: str, hook: Callable[[Event], None]) -> None:
        """Call `hook(event)` after each committed change of the stored kind `storage_id`, with the store lock
        held: it may read and write through the `*_locked` methods and add or remove buckets."""
        self._commit_hooks.setdefault(storage_id, []).append(hook)

    def add_bucket_locked(self, kind: ResourceKind) -> None:
        """Storage for a stored kind added to the registry after start (lock held); kept if it exists."""
        if kind.storage_id not in self._buckets:
            self._buckets[kind.storage_id] = Bucket(kind)
        else:
            self._buckets[kind.storage_id].kind = kind

    def remove_bucket_locked(self, storage_id: str) -> None:
        """Delete every object of a stored kind (one DELETED event each), end its watches and drop its storage
        (lock held)."""
        bucket = self._buckets.get(storage_id)
        if bucket is None:
            return
        for key in list(bucket.keys):
            self._delete_locked(bucket, key, bucket.objects[key])
        for watcher in list(bucket.watchers):
            watcher.end()
        del self._buckets[storage_id]

    def convert_stored_locked(self, kind: ResourceKind, convert: Callable[[Obj], Obj]) -> int:
        """Pass every stored object of `kind` through `convert` (lock held), keeping its resourceVersion and
        committing no event: what a real API server does when it reads objects back with a changed schema
        (pruned and defaulted on decode). Returns how many objects changed."""
        bucket = self.bucket(kind)
        changed = 0
        for key in bucket.keys:
            cur = bucket.objects[key]
            obj = cur.parse()
            new = normalise(convert(obj))
            new["metadata"]["resourceVersion"] = str(cur.rv)
            if new != obj:
                bucket.objects[key] = Stored(dumps(new), cur.rv, new["metadata"])
                changed += 1
        return changed

    def remove_finalizer_locked(self, kind: ResourceKind, name: str, finalizer: str) -> None:
        """Drop `finalizer` from a cluster-scoped object (lock held); the last one gone deletes a marked
        object, as when a controller finishes its cleanup."""
        cur = self.bucket(kind).objects.get(name)
        if cur is None:
            return
        obj = cur.parse()
        finalizers = obj["metadata"].get("finalizers") or []
        if finalizer in finalizers:
            obj["metadata"]["finalizers"] = [f for f in finalizers if f != finalizer]
            self._update_locked(kind, "", name, obj, subresource="", dry_run=False, validate=False)

    def _admit(self, kind: ResourceKind, obj: Obj, old: Obj | None, subresource: str) -> None:
        """The kind's validation (after defaulting): any field error refuses the write with 422 Invalid."""
        if kind.validate is None:
            return
        causes = kind.validate(obj, old, subresource)
        if causes:
            raise errors.invalid(kind.kind, kind.group, obj["metadata"].get("name", ""), causes)

    def bucket_by_id(self, storage_id: str) -> Bucket:
        return self._buckets[storage_id]

    def _parsed_objects(self, storage_id: str) -> list[Obj]:
        """Private copies of every object of a stored kind (for admission; lock held)."""
        bucket = self._buckets.get(storage_id)
        return [] if bucket is None else [s.parse() for s in bucket.objects.values()]

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

    # ------------------------------------------------------------------------------------------- checks
    def _check_body(self, kind: ResourceKind, body: Any, *, field_validation: str = "",
                    warnings: list[str] | None = None) -> Obj:
        """Type checks a real API server's decoder makes; the body's apiVersion/kind must fit the URL.
        Returns the object in storage form with a private top-level dict and metadata dict.

        `field_validation` (the request's fieldValidation: "", Ignore, Warn or Strict) applies to kinds that
        know their fields (`unknown_fields`): Strict refuses unknown fields (400), Warn adds one warning each.
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
        if kind.unknown_fields is not None and field_validation in ("Strict", "Warn"):
            unknown = kind.unknown_fields(obj)
            if unknown and field_validation == "Strict":
                raise errors.bad_request(
                    f'{kind.kind} in version "{kind.version}" cannot be handled as a {kind.kind}: strict '
                    "decoding error: " + ", ".join(f'unknown field "{path}"' for path in unknown))
            if warnings is not None:
                warnings.extend(f'unknown field "{path}"' for path in unknown)
        if kind.to_storage is not None:
            obj = kind.to_storage(obj)
        return obj

    def _validate_name(self, kind: ResourceKind, name: str) -> None:
        label_only = kind.storage_id in ("/namespaces", "/services")
        pattern = _DNS_LABEL if label_only else _DNS_SUBDOMAIN
        limit = 63 if label_only else 253
        if len(name) > limit or not pattern.match(name):
            what = "RFC 1123 label" if label_only else "lowercase RFC 1123 subdomain"
            chars = "'-'" if label_only else "'-' or '.'"
            raise errors.invalid(kind.kind, kind.group, name, [(
                "metadata.name", "FieldValueInvalid",
                f'Invalid value: "{name}": a {what} must consist of lower case alphanumeric characters, '
                f"{chars}, and must start and end with an alphanumeric character "
                f"(at most {limit} characters)")])

    def _namespace_of(self, kind: ResourceKind, url_namespace: str, meta: Obj) -> str:
        if not kind.namespaced:
            meta.pop("namespace", None)
            return ""
        body_ns = meta.get("namespace") or ""
        if body_ns and url_namespace and body_ns != url_namespace:
            raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                     "sent on the request")
        namespace = url_namespace or body_ns
        if not namespace:
            raise errors.bad_request("the namespace of the object must be set for namespaced resources")
        meta["namespace"] = namespace
        return namespace

    def _require_namespace(self, namespace: str) -> None:
        ns = self._buckets["/namespaces"].objects.get(namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", namespace)
        if b'"deletionTimestamp"' in ns.body:
            raise errors.forbidden(f"unable to create new content in namespace {namespace} because it is "
                                   "being terminated")

    def _generate_name(self, bucket: Bucket, namespace: str, prefix: str) -> str:
        for _ in range(16):
            name = prefix + "".join(self._rng.choice(_GENERATE_CHARS) for _ in range(5))
            if object_key(namespace, name) not in bucket.objects:
                return name
        raise StatusError(409, "AlreadyExists", f"could not generate a unique name from {prefix!r}", {})

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

    # ------------------------------------------------------------------------------------------- writes
    def create(self, kind: ResourceKind, namespace: str, body: Any, *, dry_run: bool = False,
               reset_status: bool = True, field_validation: str = "") -> WriteResult:
        warnings: list[str] = []
        obj = self._check_body(kind, body, field_validation=field_validation, warnings=warnings)
        with self.lock:
            result = self._create_locked(kind, namespace, obj, dry_run=dry_run, reset_status=reset_status)
        result.warnings = warnings
        return result

    def _create_locked(self, kind: ResourceKind, namespace: str, obj: Obj, *, dry_run: bool,
                       reset_status: bool, validate: bool = True) -> WriteResult:
        bucket = self.bucket(kind)
        meta = obj["metadata"]
        namespace = self._namespace_of(kind, namespace, meta)
        name = meta.get("name") or ""
        if not name:
            prefix = meta.get("generateName") or ""
            if not prefix:
                raise errors.invalid(kind.kind, kind.group, "", [(
                    "metadata.name", "FieldValueRequired",
                    "Required value: name or generateName is required")])
            self._validate_name(kind, prefix + "x")
            name = meta["name"] = self._generate_name(bucket, namespace, prefix)
        self._validate_name(kind, name)
        if namespace:
            self._require_namespace(namespace)
        key = object_key(namespace, name)
        if key in bucket.objects:
            raise errors.already_exists(kind.plural, kind.group, name)
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "resourceVersion"):
            meta.pop(k, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self._clock()
        stored_kind = bucket.kind
        if stored_kind.generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if stored_kind.has_status and reset_status and stored_kind.reset_status_on_create:
            obj.pop("status", None)
        default_class.admit_create(stored_kind.storage_id, obj, self._parsed_objects)
        if stored_kind.default is not None:
            stored_kind.default(obj, None)
        if validate:
            self._admit(kind, obj, None, "")
        obj = normalise(obj)
        if dry_run:
            return WriteResult(Stored(dumps(obj), 0, obj["metadata"]), created=True)
        return WriteResult(self._commit(bucket, ADDED, key, obj, None).stored, created=True)

    def update(self, kind: ResourceKind, namespace: str, name: str, body: Any, *, subresource: str = "",
               dry_run: bool = False, field_validation: str = "") -> WriteResult:
        warnings: list[str] = []
        obj = self._check_body(kind, body, field_validation=field_validation, warnings=warnings)
        with self.lock:
            result = self._update_locked(kind, namespace, name, obj, subresource=subresource, dry_run=dry_run)
        result.warnings = warnings
        return result

    def _check_identity(self, kind: ResourceKind, namespace: str, name: str, meta: Obj) -> None:
        body_name = meta.get("name") or ""
        if body_name != name:
            raise errors.bad_request(f"the name of the object ({body_name}) does not match the name on "
                                     f"the URL ({name})")
        if kind.namespaced:
            body_ns = meta.get("namespace") or ""
            if body_ns and body_ns != namespace:
                raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                         "sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)

    def _update_locked(self, kind: ResourceKind, namespace: str, name: str, obj: Obj, *, subresource: str,
                       dry_run: bool, validate: bool = True) -> WriteResult:
        bucket = self.bucket(kind)
        stored_kind = bucket.kind
        meta = obj["metadata"]
        self._check_identity(kind, namespace, name, meta)
        key = object_key(namespace, name)
        cur = bucket.objects.get(key)
        if cur is None:
            if stored_kind.allow_create_on_update and not subresource:
                return self._create_locked(kind, namespace, obj, dry_run=dry_run, reset_status=True,
                                           validate=validate)
            raise errors.not_found(kind.plural, kind.group, name)
        want_rv = meta.get("resourceVersion")
        if want_rv and want_rv != str(cur.rv):
            raise errors.stale_resource_version(kind.plural, kind.group, name)
        want_uid = meta.get("uid")
        if want_uid and want_uid != cur.uid:
            raise errors.conflict(kind.plural, kind.group, name, f"Precondition failed: UID in precondition: "
                                  f"{cur.uid}, UID in object meta: {want_uid}")
        cur_obj = cur.parse()
        cur_meta = cur_obj["metadata"]
        if subresource == "status":
            new = cur.parse()
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
        else:
            new = obj
            for k in _SYSTEM_META:
                if k in cur_meta:
                    meta[k] = cur_meta[k]
                else:
                    meta.pop(k, None)
            if stored_kind.has_status:
                if "status" in cur_obj:
                    new["status"] = cur_obj["status"]
                else:
                    new.pop("status", None)
            if stored_kind.default is not None:
                stored_kind.default(new, cur_obj)
            if stored_kind.generation and new.get("spec") != cur_obj.get("spec"):
                meta["generation"] = int(cur_meta.get("generation", 0)) + 1
        new["metadata"]["resourceVersion"] = cur_meta["resourceVersion"]
        if validate:
            self._admit(kind, new, cur_obj, subresource)
        new = normalise(new)
        if new == cur_obj:
            return WriteResult(cur)
        new_meta = new["metadata"]
        # The last finalizer removed from an object marked for deletion: the object goes now.
        gone = bool(new_meta.get("deletionTimestamp")) and not new_meta.get("finalizers")
        if dry_run:
            return WriteResult(Stored(dumps(new), cur.rv, new_meta), deleted=gone)
        event = self._commit(bucket, DELETED if gone else MODIFIED, key, new, cur)
        return WriteResult(event.stored, deleted=gone)

    def patch(self, kind: ResourceKind, namespace: str, name: str, patch_type: str, patch: Any, *,
              subresource: str = "", dry_run: bool = False,
              view: Callable[[Stored], Obj] | None = None, field_validation: str = "") -> WriteResult:
        """Apply a patch to the current object and store the result like an update (optimistic concurrency
        included). patch_type: "merge", "json" or "strategic". `view` converts the stored object to the
        requested version.
        """
        bucket = self.bucket(kind)
        with self.lock:
            cur = bucket.objects.get(object_key(namespace, name))
            if cur is None:
                raise errors.not_found(kind.plural, kind.group, name)
            target: Obj = {"kind": kind.kind, "apiVersion": kind.api_version,
                           **(view(cur) if view is not None else cur.parse())}
            try:
                if patch_type == "merge":
                    if not isinstance(patch, dict):
                        raise PatchFormatError("a merge patch must be a JSON object")
                    result = merge_patch(target, patch)
                elif patch_type == "json":
                    result = json_patch(target, patch)
                else:
                    result = strategic_merge_patch(target, patch, bucket.kind.patch_meta)
            except PatchFormatError as e:
                raise errors.bad_request(f"invalid patch: {e}") from None
            except PatchError as e:
                raise errors.unprocessable(str(e)) from None
            if not isinstance(result, dict):
                raise errors.unprocessable("the patch did not produce a JSON object")
            warnings: list[str] = []
            obj = self._check_body(kind, result, field_validation=field_validation, warnings=warnings)
            written = self._update_locked(kind, namespace, name, obj, subresource=subresource,
                                          dry_run=dry_run)
        written.warnings = warnings
        return written

    def delete(self, kind: ResourceKind, namespace: str, name: str, *, precondition_uid: str = "",
               precondition_rv: str = "", dry_run: bool = False) -> WriteResult:
        bucket = self.bucket(kind)
        key = object_key(namespace, name)
        with self.lock:
            cur = bucket.objects.get(key)
            if cur is None:
                raise errors.not_found(kind.plural, kind.group, name)
            if precondition_uid and precondition_uid != cur.uid:
                raise errors.conflict(kind.plural, kind.group, name,
                                      f"Precondition failed: UID in precondition: "
                                      f"{precondition_uid}, UID in object meta: {cur.uid}")
            if precondition_rv and precondition_rv != str(cur.rv):
                raise errors.conflict(kind.plural, kind.group, name,
                                      f"Precondition failed: ResourceVersion in "
                                      f"precondition: {precondition_rv}, ResourceVersion in object meta: "
                                      f"{cur.rv}")
            if bucket.kind.storage_id == "/namespaces" and name in IMMORTAL_NAMESPACES:
                raise errors.forbidden(f'namespaces "{name}" is forbidden: this namespace may not be deleted')
            cur_meta = cur.parse()["metadata"]
            own = bucket.kind.delete_finalizer
            if dry_run:
                return WriteResult(cur, deleted=not (cur_meta.get("finalizers") or own))
            if own and not cur_meta.get("deletionTimestamp"):
                # The server's own finalizer: mark the object; its commit hook finishes the deletion.
                return WriteResult(self._mark_deleting(bucket, key, cur, finalizer=own).stored)
            if cur_meta.get("finalizers"):
                if cur_meta.get("deletionTimestamp"):
                    return WriteResult(cur)
                return WriteResult(self._mark_deleting(bucket, key, cur).stored)
            if bucket.kind.storage_id == "/namespaces":
                self._mark_deleting(bucket, key, cur)
                self._delete_namespace_contents(name)
                cur = bucket.objects[key]
            return WriteResult(self._delete_locked(bucket, key, cur).stored, deleted=True)

    def _mark_deleting(self, bucket: Bucket, key: str, cur: Stored, finalizer: str = "") -> Event:
        new = cur.parse()
        meta = new["metadata"]
        if finalizer and finalizer not in (meta.get("finalizers") or []):
            meta["finalizers"] = [*(meta.get("finalizers") or []), finalizer]
        meta["deletionTimestamp"] = self._clock()
        meta["deletionGracePeriodSeconds"] = 0
        if bucket.kind.generation:
            meta["generation"] = int(meta.get("generation", 0)) + 1
        if bucket.kind.storage_id == "/namespaces" and isinstance(new.get("status"), dict):
            new["status"]["phase"] = "Terminating"
        return self._commit(bucket, MODIFIED, key, normalise(new), cur)

    def _delete_locked(self, bucket: Bucket, key: str, cur: Stored) -> Event:
        return self._commit(bucket, DELETED, key, cur.parse(), cur)

    def _delete_namespace_contents(self, namespace: str) -> None:
        for bucket in self._buckets.values():
            if bucket.kind.namespaced:
                lo, hi = bucket.key_range(namespace)
                for key in bucket.keys[lo:hi]:
                    self._delete_locked(bucket, key, bucket.objects[key])

    def delete_collection(self, kind: ResourceKind, namespace: str, *, matcher: Matcher,
                          dry_run: bool = False) -> list[Stored]:
        out = []
        for stored in self.list_page(kind, namespace, matcher=matcher).items:
            try:
                result = self.delete(kind, stored.namespace, stored.name, dry_run=dry_run)
            except StatusError as e:
                if e.code == 404:
                    continue
                raise
            out.append(result.stored)
        return out

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

    # ------------------------------------------------------------------------------------------- bulk
    def load(self, objects: Iterable[Obj], *, batch: int = 1000) -> int:
        """Create or replace many objects (status kept as given), creating missing namespaces.

        Like a restore of the API server's storage, this skips the kinds' validation (defaulting still
        applies), so tests can hold objects a real API server refuses today. Nested values of the given
        objects are not modified; the store keeps only their serialised form.
        """
        count = 0
        pending: list[tuple[ResourceKind, Obj]] = []
        for raw in objects:
            if not isinstance(raw, dict):
                raise ValueError(f"not an object: {raw!r}")
            kind = self.registry.by_gvk(str(raw.get("apiVersion", "")), str(raw.get("kind", "")))
            if kind is None and pending:    # perhaps a kind defined by a CRD earlier in the batch
                count += self._load_batch(pending)
                pending = []
                kind = self.registry.by_gvk(str(raw.get("apiVersion", "")), str(raw.get("kind", "")))
            if kind is None:
                raise ValueError(f"unknown kind {raw.get('apiVersion')}/{raw.get('kind')}"
                                 " (load the CustomResourceDefinition that defines it, too)")
            pending.append((kind, self._check_body(kind, raw)))
            if len(pending) >= batch:
                count += self._load_batch(pending)
                pending = []
        if pending:
            count += self._load_batch(pending)
        return count

    def _load_batch(self, batch: list[tuple[ResourceKind, Obj]]) -> int:
        ns_kind = self._buckets["/namespaces"].kind
        namespaces = self._buckets["/namespaces"].objects
        with self.lock:
            for kind, obj in batch:
                meta = obj["metadata"]
                namespace = ""
                if kind.namespaced:
                    namespace = meta.get("namespace") or "default"
                    meta["namespace"] = namespace
                    if namespace not in namespaces:
                        self._create_locked(ns_kind, "", {"metadata": {"name": namespace}}, dry_run=False,
                                            reset_status=False)
                name = meta.get("name") or ""
                bucket = self.bucket(kind)
                if name and object_key(namespace, name) in bucket.objects:
                    meta.pop("resourceVersion", None)
                    status = obj.get("status")
                    self._update_locked(kind, namespace, name, obj, subresource="", dry_run=False,
                                        validate=False)
                    if status is not None and bucket.kind.has_status:
                        self._update_locked(kind, namespace, name, {"metadata": {"name": name},
                                                                    "status": status},
                                            subresource="status", dry_run=False, validate=False)
                else:
                    self._create_locked(kind, namespace, obj, dry_run=False, reset_status=False,
                                        validate=False)
        return len(batch)
