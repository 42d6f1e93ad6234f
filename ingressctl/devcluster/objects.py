"""The store's value types: committed objects, events, watchers, buckets, selectors' matcher, list and
write results, continue tokens and the canonical JSON form.

Guarantees:
- `Stored` holds an object's compact JSON bytes (storage form, no kind/apiVersion) and only the metadata
  selectors need; `parse()` always returns a private, mutable copy.
- `Watcher` queues events pushed under the store lock for one reader; a reader that falls
  `MAX_PENDING_EVENTS` behind is marked overflowed (its stream is closed, as the API server closes slow
  watchers).
- `dumps` and `normalise` give the one canonical byte form every stored object has (metadata first, in
  ObjectMeta order).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ingressctl.devcluster import errors
from ingressctl.devcluster.resources import Obj, ResourceKind
from ingressctl.devcluster.selectors import FieldSelector, LabelSelector

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
MAX_PENDING_EVENTS = 200_000   # a watcher this far behind is closed, as the API server closes slow watchers
_META_ORDER = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
               "annotations",
               "ownerReferences", "finalizers", "managedFields")
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

