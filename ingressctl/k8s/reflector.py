"""client-go's Reflector: list, then watch from the list's resourceVersion, and feed a store; forever.

Guarantees (client-go semantics; see the project's reference notes):
- First list at resourceVersion "0", its first page of 500 items (client-go's page size), the following pages
  of 1,000 (`max_page_size`): 10,000 objects take 11 round trips, not client-go's 20. Larger pages would
  save more round trips but cost peak memory: the decoded pages of every informer are in flight at once
  (pages of 5,000 added ~35 MiB to the controller's peak at 10,000 Ingresses; 1,000 adds ~6 MiB). A
  watch-cache-served list at "0" ignores the limit anyway and answers with one page. A relist uses the last
  synced resourceVersion without pagination (not-older-than semantics); only when that list is Expired/Gone
  or "too large resource version" does it fall back to a consistent list at "" (most recent). A continue
  token that expires mid-list (410) restarts the list as one full list at "" and throws the partial pages
  away.
- Watches start from the last synced resourceVersion with bookmarks allowed and a random server timeout in
  [min_watch_timeout, 2*min_watch_timeout). Every event, bookmarks included, advances the last synced
  resourceVersion; the list's own `metadata.resourceVersion` (never an item's) starts the first watch.
- A watch that ends normally (server timeout, EOF, reset, read timeout, torn last event) is re-opened at
  once from the last resourceVersion: no relist. A watch that ends within 1 s having delivered nothing counts
  as an error. 410 (as an HTTP status or an ERROR event), any other ERROR event, a malformed line, or a
  failing watch request lead to a relist; connection-refused and 429 on opening a watch back off and
  re-watch without relisting.
- Every relist is preceded by a jittered exponential backoff (0.8 s doubling up to 30 s, reset after 2 min
  without backoff); in-watch retries share the same backoff state.
- Pages are requested one ahead of ingestion (`KubeClient.list_pages` with prefetch): the server's latency
  for page k+1 is spent decoding page k. The cyclic GC is paused from the first list request until the
  store has the list (see `pause_gc`; the informer extends the pause until the list is dispatched).
- The transform (by default: strip `metadata.managedFields` and the last-applied-configuration annotation)
  runs on every object before the store sees it; list items get their `kind` and `apiVersion` filled in so
  listed and watched objects look alike. Equal `kind`, `apiVersion` and `metadata.namespace` strings are
  replaced by one shared string each (memory only: the objects compare and serialise the same).
- The loop catches everything, logs it, backs off and continues until `stop()`; the thread never dies
  silently.
  `healthy` is False from a failure until the next successful list or watch; `last_sync_resource_version` is
  readable from any thread.
"""

from __future__ import annotations

import enum
import random
import sys
import threading
from collections.abc import Callable
from typing import Any, Protocol

from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.clock import Clock, RealClock
from ingressctl.k8s.codec import pause_gc
from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.resource import ResourceType
from ingressctl.logging import get_logger

log = get_logger(__name__)

LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
DEFAULT_PAGE_SIZE = 500
DEFAULT_MAX_PAGE_SIZE = 1000
_MAX_SHARED_NAMESPACES = 100_000  # bounds the namespace strings remembered between lists

Transform = Callable[[dict[str, Any]], dict[str, Any]]


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop `metadata.managedFields` and the last-applied-configuration annotation, in place; return obj."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED_ANNOTATION, None)
    return obj


def _share_namespace(meta: dict[str, Any], namespaces: dict[str, str]) -> None:
    """One string per namespace in every object (memory, not meaning); at most _MAX_SHARED_NAMESPACES kept."""
    ns = meta.get("namespace")
    if ns.__class__ is str:
        shared = namespaces.get(ns)
        if shared is not None:
            meta["namespace"] = shared
        elif len(namespaces) < _MAX_SHARED_NAMESPACES:
            namespaces[ns] = ns


def drop_fields(*paths: str) -> Transform:
    """A transform for an informer whose users never read some fields: `strip_managed_fields`, then drop
    `paths` in place. A path is dotted field names; "[]" after a name walks every item of that list, e.g.
    `drop_fields("metadata.ownerReferences", "endpoints[].targetRef")`. Absent fields are ignored. (Field
    names containing dots, like annotation keys, cannot be addressed.)
    """
    # The paths are merged into one tree, walked once per object: {name: (walk list items?, subtree)};
    # a subtree of None drops the field.
    tree: dict[str, tuple[bool, Any]] = {}
    for path in paths:
        parts = path.split(".")
        names = [part.removesuffix("[]") for part in parts]
        if any(not n or "[" in n or "]" in n for n in names) or parts[-1].endswith("[]"):
            raise ValueError(f"bad field path {path!r}: want names joined by dots; each but the last may "
                             f"end in []")
        node = tree
        for part, name in zip(parts[:-1], names[:-1], strict=True):
            walk = part.endswith("[]")
            walk_before, sub = node.setdefault(name, (walk, {}))
            if sub is None:
                break  # an enclosing field is dropped already
            if walk_before != walk:
                raise ValueError(f"field path {path!r} walks {name!r} differently from another path")
            node = sub
        else:
            node[names[-1]] = (False, None)

    def drop(node: dict[str, Any], spec: dict[str, tuple[bool, Any]]) -> None:
        for name, (walk, sub) in spec.items():
            if sub is None:
                node.pop(name, None)
                continue
            child = node.get(name)
            if walk:
                if child.__class__ is list:
                    for item in child:
                        if item.__class__ is dict:
                            drop(item, sub)
            elif child.__class__ is dict:
                drop(child, sub)

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        strip_managed_fields(obj)
        drop(obj, tree)
        return obj

    return transform


class ReflectorStore(Protocol):
    """Where a reflector delivers objects (client-go's Store subset): an informer's queue or a plain store."""

    def add(self, obj: dict[str, Any]) -> Any: ...

    def update(self, obj: dict[str, Any]) -> Any: ...

    def delete(self, obj: dict[str, Any]) -> Any: ...

    def replace(self, objs: list[dict[str, Any]], resource_version: str) -> Any: ...


class Backoff:
    """Jittered exponential backoff with a reset after a quiet period (client-go's reflector defaults)."""

    def __init__(self, initial: float = 0.8, cap: float = 30.0, factor: float = 2.0, jitter: float = 1.0,
                 reset_after: float = 120.0, *, clock: Clock | None = None,
                 rng: random.Random | None = None) -> None:
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self._clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._current = initial
        self._last_end: float | None = None
        self._lock = threading.Lock()

    def next(self) -> float:
        """The next delay (s); back to `initial` when no backoff ended in the last `reset_after` seconds."""
        with self._lock:
            now = self._clock.now()
            if self._last_end is not None and now - self._last_end > self.reset_after:
                self._current = self.initial
            base = self._current
            self._current = min(self._current * self.factor, self.cap)
            delay = min(base * (1.0 + self.jitter * self._rng.random()), self.cap)
            self._last_end = now + delay
            return delay

    def reset(self) -> None:
        with self._lock:
            self._current = self.initial
            self._last_end = None


class _Stop(Exception):
    """Raised inside the loop when stop() was called."""


class _WatchEnd(enum.Enum):
    REWATCH = "rewatch"        # normal close: re-watch at once
    RETRY = "retry"            # back off, then re-watch (429)
    RELIST = "relist"          # return to the outer loop: backoff, then list
    STOP = "stop"


class Reflector:
    """Keeps `store` in step with one resource collection; see the module docstring."""

    def __init__(self, client: KubeClient, rt: ResourceType, store: ReflectorStore,
                 namespace: str | None = None, *, label_selector: str | None = None,
                 field_selector: str | None = None, transform: Transform | None = strip_managed_fields,
                 page_size: int = DEFAULT_PAGE_SIZE, max_page_size: int = DEFAULT_MAX_PAGE_SIZE,
                 min_watch_timeout: float = 300.0,
                 backoff: Backoff | None = None, clock: Clock | None = None, name: str | None = None,
                 rng: random.Random | None = None, prefetch: bool = True) -> None:
        self._client = client
        self._prefetch = prefetch
        self._rt = rt
        self._store = store
        self._namespace = namespace
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._transform = transform
        self._page_size = page_size
        self._max_page_size = max(page_size, max_page_size)
        self._min_watch_timeout = max(1.0, min_watch_timeout)
        self._clock: Clock = clock or RealClock()
        self._backoff = backoff or Backoff(clock=self._clock)
        self._rng = rng or random.Random()
        self.name = name or (f"{rt.plural}@{namespace}" if namespace else rt.plural)
        self._last_rv = ""
        self._namespaces: dict[str, str] = {}  # one shared string per namespace name seen
        self._rv_unavailable = False
        self._paginated_result = False
        self._healthy = False
        self._last_error: str | None = None
        self._stopped = False
        self._cond = threading.Condition()
        self._stream_lock = threading.Lock()
        self._stream: Any = None
        self._thread: threading.Thread | None = None
        self.lists = 0
        self.watches = 0

    # -- public ---------------------------------------------------------------------------------------------

    @property
    def last_sync_resource_version(self) -> str:
        return self._last_rv

    @property
    def healthy(self) -> bool:
        """True while the last list or watch attempt succeeded."""
        return self._healthy and not self._stopped

    @property
    def last_error(self) -> str | None:
        return self._last_error

    def is_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Run the loop in a daemon thread."""
        if self._thread is not None:
            raise RuntimeError(f"reflector {self.name} already started")
        self._thread = threading.Thread(target=self.run, name=f"reflector-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop the loop, close an open watch, and wait (up to `timeout`) for the thread to end."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        with self._stream_lock:
            stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def run(self) -> None:
        """ListAndWatch until stopped, backing off between attempts; never raises."""
        log.debug("reflector starting", reflector=self.name)
        try:
            while not self._stopped:
                try:
                    self._list_and_watch()
                except _Stop:
                    break
                except ApiError as e:
                    self._failed("list and watch failed", e, level="warning")
                except Exception as e:
                    self._failed("reflector error", e, level="exception")
                if self._stopped:
                    break
                try:
                    self._wait(self._backoff.next())
                except _Stop:
                    break
        finally:
            if self._stopped:
                log.debug("reflector stopped", reflector=self.name)
            else:
                log.critical("reflector thread exiting unexpectedly", reflector=self.name,
                             error=repr(sys.exc_info()[1]))

    # -- list -----------------------------------------------------------------------------------------------

    def _list_and_watch(self) -> None:
        self._list()
        self._watch_loop()

    def _relist_resource_version(self) -> str:
        if self._rv_unavailable:
            return ""
        return self._last_rv or "0"

    def _list(self) -> None:
        rv = self._relist_resource_version()
        self._namespaces = {}  # rebuilt by every list, so namespaces deleted since are forgotten
        # No collections while the list is decoded and handed over: they would only walk the new objects
        # (again and again as the heap grows). The store's replace() may extend the pause (the informer
        # holds it until the list has been applied and dispatched).
        release_gc = pause_gc()
        try:
            try:
                items, list_rv = self._paged_list(rv)
            except ApiError as e:
                if not (e.is_gone or e.is_too_large_resource_version) or rv == "":
                    raise
                log.info("list resourceVersion unavailable; listing the most recent state",
                         reflector=self.name, resource_version=rv, error=e.message)
                self._rv_unavailable = True
                items, list_rv = self._paged_list("")
            self._rv_unavailable = False
            self.lists += 1
            self._check_stopped()
            self._store.replace(items, list_rv)
        finally:
            release_gc()
        self._last_rv = list_rv
        self._healthy = True
        log.debug("listed", reflector=self.name, items=len(items), resource_version=list_rv)

    def _paged_list(self, rv: str) -> tuple[list[dict[str, Any]], str]:
        limit: int | None = self._page_size
        if rv not in ("", "0") and not self._paginated_result:
            limit = None  # a list at RV=X must not paginate (Exact semantics, spurious 410s)
        # With prefetch, the client requests page k+1 while this thread ingests page k (client-go fetches
        # pages strictly one after the other; here the server's latency is hidden behind the decoding).
        pages = self._client.list_pages(self._rt, self._namespace, resource_version=rv or None, limit=limit,
                                        max_limit=self._max_page_size if limit is not None else None,
                                        label_selector=self._label_selector,
                                        field_selector=self._field_selector, prefetch=self._prefetch)
        try:
            page = next(pages)
            items = self._ingest_items(page)
            list_rv, token = _list_meta(page)
            if rv == "0" and token:
                self._paginated_result = True
            while token:
                self._check_stopped()
                try:
                    page = next(pages)
                except StopIteration:
                    raise ApiError(500, "InternalError", "a list ended before its last page") from None
                except ApiError as e:
                    if not e.is_gone:
                        raise
                    log.warning("list continue token expired; restarting with a full list",
                                reflector=self.name, items_so_far=len(items), error=e.message)
                    pages.close()
                    page = self._client.list(self._rt, self._namespace, label_selector=self._label_selector,
                                             field_selector=self._field_selector)
                    items = self._ingest_items(page)
                    list_rv, token = _list_meta(page)
                    if token:
                        raise ApiError(500, "InternalError",
                                       "an unpaginated list returned a continue token") from e
                    break
                items.extend(self._ingest_items(page))
                _, token = _list_meta(page)
        finally:
            pages.close()
        if not list_rv:
            raise ApiError(500, "InternalError", f"list of {self._rt.plural} has no metadata.resourceVersion")
        return items, list_rv

    def _ingest_items(self, page: Any) -> list[dict[str, Any]]:
        if not isinstance(page, dict):
            raise ApiError(500, "InternalError", f"list response is not an object: {type(page).__name__}")
        raw = page.get("items") or []
        if not isinstance(raw, list):
            raise ApiError(500, "InternalError", "list response items is not an array")
        kind = self._rt.kind
        api_version = self._rt.api_version
        transform = self._transform
        strip = transform is strip_managed_fields  # the default, inlined: it runs on every listed object
        namespaces = self._namespaces
        out: list[dict[str, Any]] = []
        append = out.append
        skipped = 0
        for obj in raw:
            try:
                meta = obj["metadata"]
                if not meta["name"]:
                    raise KeyError("name")
            except (KeyError, TypeError):
                skipped += 1
                continue
            # Listed items normally carry no kind/apiVersion; when they do, the shared strings replace the
            # decoded copies, as one string per namespace replaces each object's copy (memory, not meaning).
            obj_kind = obj.get("kind")
            if obj_kind is None:
                obj["kind"] = kind
                obj["apiVersion"] = api_version
            elif obj_kind == kind:
                obj["kind"] = kind
                if obj.get("apiVersion") == api_version:
                    obj["apiVersion"] = api_version
            _share_namespace(meta, namespaces)
            if strip:
                meta.pop("managedFields", None)
                annotations = meta.get("annotations")
                if annotations.__class__ is dict:
                    annotations.pop(LAST_APPLIED_ANNOTATION, None)
                append(obj)
            else:
                append(transform(obj) if transform is not None else obj)
        if skipped:
            log.warning("skipped list items without metadata.name", reflector=self.name, skipped=skipped)
        return out

    # -- watch ----------------------------------------------------------------------------------------------

    def _watch_loop(self) -> None:
        while True:
            self._check_stopped()
            timeout = int(self._min_watch_timeout * (1.0 + self._rng.random()))
            started = self._clock.now()
            try:
                stream = self._client.watch(self._rt, self._namespace, resource_version=self._last_rv,
                                            timeout_seconds=timeout, allow_bookmarks=True,
                                            label_selector=self._label_selector,
                                            field_selector=self._field_selector)
            except ApiError as e:
                if e.is_connection_refused or e.is_too_many_requests:
                    self._failed("watch could not be started; retrying the watch", e, level="warning")
                    self._wait(self._backoff.next())
                    continue
                if e.is_gone:
                    log.info("watch resourceVersion expired; relisting", reflector=self.name,
                             resource_version=self._last_rv, error=e.message)
                    return
                raise
            with self._stream_lock:
                if self._stopped:
                    stream.close()
                    raise _Stop
                self._stream = stream
            self.watches += 1
            self._healthy = True
            try:
                end = self._handle_watch(stream, started)
            finally:
                with self._stream_lock:
                    self._stream = None
                stream.close()
            if end is _WatchEnd.STOP:
                raise _Stop
            if end is _WatchEnd.RELIST:
                return
            if end is _WatchEnd.RETRY:
                self._wait(self._backoff.next())

    def _handle_watch(self, stream: Any, started: float) -> _WatchEnd:
        count = 0
        expected_kind = self._rt.kind
        api_version = self._rt.api_version
        transform = self._transform
        store = self._store
        namespaces = self._namespaces
        for event in stream:
            if self._stopped:
                return _WatchEnd.STOP
            etype = event.get("type")
            obj = event.get("object")
            if etype == "ERROR":
                err = ApiError.from_status(obj)
                if err.is_gone:
                    log.info("watch resourceVersion expired; relisting", reflector=self.name,
                             resource_version=self._last_rv, error=err.message)
                    return _WatchEnd.RELIST
                if err.is_too_many_requests:
                    self._failed("watch throttled; retrying the watch", err, level="warning")
                    return _WatchEnd.RETRY
                self._failed("watch ended with error; relisting", err, level="warning")
                return _WatchEnd.RELIST
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
            if etype == "BOOKMARK":
                if isinstance(rv, str) and rv:
                    self._last_rv = rv
                count += 1
                continue
            if etype not in ("ADDED", "MODIFIED", "DELETED"):
                log.warning("skipping watch event of unknown type", reflector=self.name,
                            type=repr(etype)[:50])
                continue
            assert isinstance(obj, dict)
            if not isinstance(rv, str) or not rv or not meta or not meta.get("name"):
                log.warning("skipping watch event without metadata.name/resourceVersion", reflector=self.name,
                            type=etype)
                continue
            kind = obj.get("kind")
            if kind is not None:
                if kind != expected_kind:
                    log.warning("skipping watch event of an unexpected kind", reflector=self.name,
                                kind=str(kind)[:60], expected=expected_kind)
                    continue
                obj["kind"] = expected_kind
                if obj.get("apiVersion") == api_version:
                    obj["apiVersion"] = api_version
            _share_namespace(meta, namespaces)
            if transform is not None:
                obj = transform(obj)
            try:
                if etype == "ADDED":
                    store.add(obj)
                elif etype == "MODIFIED":
                    store.update(obj)
                else:
                    store.delete(obj)
            except Exception as e:
                log.exception("store rejected a watch event", reflector=self.name, type=etype, error=str(e))
            self._last_rv = rv
            count += 1
        if self._stopped:
            return _WatchEnd.STOP
        if count == 0 and self._clock.now() - started < 1.0:
            self._failed("very short watch: closed within 1 s without any event; relisting",
                         None, level="warning")
            return _WatchEnd.RELIST
        log.debug("watch closed; re-watching", reflector=self.name, events=count,
                  resource_version=self._last_rv)
        return _WatchEnd.REWATCH

    # -- helpers --------------------------------------------------------------------------------------------

    def _failed(self, message: str, error: BaseException | None, *, level: str) -> None:
        self._healthy = False
        self._last_error = f"{message}: {error}" if error is not None else message
        fields: dict[str, Any] = {"reflector": self.name, "resource_version": self._last_rv}
        if error is not None:
            fields["error"] = str(error)
        if level == "exception":
            log.exception(message, **fields)
        else:
            getattr(log, level)(message, **fields)

    def _check_stopped(self) -> None:
        if self._stopped:
            raise _Stop

    def _wait(self, seconds: float) -> None:
        """Sleep on the clock, waking early on stop()."""
        with self._cond:
            deadline = self._clock.now() + seconds
            while not self._stopped:
                remaining = deadline - self._clock.now()
                if remaining <= 0:
                    break
                self._clock.wait(self._cond, remaining)
        self._check_stopped()


def _list_meta(page: dict[str, Any]) -> tuple[str, str]:
    meta = page.get("metadata")
    if not isinstance(meta, dict):
        return "", ""
    return str(meta.get("resourceVersion") or ""), str(meta.get("continue") or "")
