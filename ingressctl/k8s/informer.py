"""client-go's SharedIndexInformer: a reflector, an in-order event queue, a store, and one dispatcher thread.

Design (client-go's RealFIFO in atomic mode, simplified): the reflector appends deltas (upsert, delete,
replace of a whole list) to an unbounded FIFO; ONE dispatcher thread per informer pops them in arrival order,
applies each to the store, and then calls every handler. Guarantees:
- Handlers run on the dispatcher thread, one call at a time, in the order events happened. The store is
  updated before handlers are called, so a lookup inside a handler sees the new state.
- Per key, updates never go backwards: deltas are applied in arrival order and a relist is diffed against the
  cache with every earlier delta already applied. Re-delivery of an unchanged resourceVersion is suppressed
  (client-go's isSync rule), except for resync.
- Deletes always reach handlers: a DELETED event as the final object, a delete inferred by a relist as a
  `DeletedFinalStateUnknown` tombstone carrying the last known object. Deletes of keys never seen are dropped.
- `has_synced()` is True once every object of the FIRST list has been stored and handed to every handler
  registered at that time; it never turns back to False. `on_add(obj, is_initial_list=True)` marks those adds.
- A handler added after start receives `on_add(obj, True)` for every cached object, atomically with respect to
  event processing (the replay is itself a queued delta), then live events. Its registration's `has_synced()`
  turns True after that replay.
- Resync (`resync_period` > 0) re-delivers `on_update(obj, obj)` for every cached object periodically.
- A handler that raises is logged and skipped; the dispatcher and the other handlers carry on. The dispatcher
  and resync threads catch everything at their loop tops.
- Cached objects are shared, not copied: handlers and listers must not mutate them.
- Memory and the cyclic GC: a list is built, stored and dispatched with the collector paused (walking
  thousands of new long-lived objects again and again costs as much as decoding them); the pause ends when
  the list has been dispatched, or dropped by stop(). With `freeze_gc_on_sync` (the default), the first
  sync ends with `gc.freeze()`: everything alive then, the cache included, moves to the collector's
  permanent generation and is never walked again (objects are still freed by reference counting when the
  cache lets go of them; only garbage cycles that exist at that moment are kept). O(1), once per informer.
"""

from __future__ import annotations

import collections
import gc
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.clock import Clock, RealClock
from ingressctl.k8s.codec import gc_paused, pause_gc
from ingressctl.k8s.reflector import Backoff, Reflector, Transform, drop_fields, strip_managed_fields
from ingressctl.k8s.resource import ResourceType
from ingressctl.k8s.store import (
    DeletedFinalStateUnknown,
    IndexFunc,
    ThreadSafeStore,
    meta_namespace_key,
    resource_version_of,
)
from ingressctl.logging import get_logger

__all__ = [
    "DeletedFinalStateUnknown", "HandlerRegistration", "ResourceEventHandler", "SharedInformer",
    "drop_fields", "strip_managed_fields", "wait_for_cache_sync",
]

log = get_logger(__name__)


class ResourceEventHandler(Protocol):
    def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None: ...

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None: ...

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None: ...


class HandlerRegistration:
    """Returned by add_event_handler; `has_synced()` is True once this handler has seen the initial state."""

    def __init__(self, handler: ResourceEventHandler) -> None:
        self.handler = handler
        self._synced = threading.Event()

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)


@dataclass(slots=True)
class _Delta:
    op: str  # "upsert" | "delete" | "replace" | "sync" | "register"
    obj: Any = None
    resource_version: str = ""
    release: Callable[[], None] | None = None  # ends a GC pause once the delta is applied or dropped


class _DeltaQueue:
    """The reflector's store: an unbounded FIFO of deltas in arrival order (never blocks the reflector)."""

    def __init__(self) -> None:
        self._items: collections.deque[_Delta] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False

    def add(self, obj: dict[str, Any]) -> None:
        self._put(_Delta("upsert", obj))

    update = add

    def delete(self, obj: dict[str, Any]) -> None:
        self._put(_Delta("delete", obj))

    def replace(self, objs: list[dict[str, Any]], resource_version: str) -> None:
        # The collector stays paused until the dispatcher has stored and dispatched the list (see pause_gc).
        self._put(_Delta("replace", objs, resource_version, pause_gc()))

    def _put(self, delta: _Delta) -> None:
        with self._cond:
            self._items.append(delta)
            self._cond.notify()

    def pop(self) -> _Delta | None:
        """The next delta; None once closed."""
        with self._cond:
            while not self._items and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            return self._items.popleft()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            dropped = list(self._items)
            self._items.clear()
        for delta in dropped:
            if delta.release is not None:
                delta.release()

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)


class SharedInformer:
    """List/watch one resource into `store` and fan events out to handlers; see the module docstring."""

    def __init__(self, client: KubeClient, rt: ResourceType, namespace: str | None = None, *,
                 label_selector: str | None = None, field_selector: str | None = None,
                 resync_period: float = 0.0, indexers: dict[str, IndexFunc] | None = None,
                 transform: Transform | None = strip_managed_fields, clock: Clock | None = None,
                 page_size: int = 500, min_watch_timeout: float = 300.0, backoff: Backoff | None = None,
                 name: str | None = None, freeze_gc_on_sync: bool = True, prefetch: bool = True) -> None:
        self.rt = rt
        self.namespace = namespace
        self.name = name or (f"{rt.plural}@{namespace}" if namespace else rt.plural)
        self.store = ThreadSafeStore(indexers)
        self._clock: Clock = clock or RealClock()
        self._queue = _DeltaQueue()
        self._reflector = Reflector(client, rt, self._queue, namespace, label_selector=label_selector,
                                    field_selector=field_selector, transform=transform, page_size=page_size,
                                    min_watch_timeout=min_watch_timeout, backoff=backoff, clock=self._clock,
                                    name=self.name, prefetch=prefetch)
        self._resync_period = resync_period
        self._freeze_gc_on_sync = freeze_gc_on_sync
        self._registrations: list[HandlerRegistration] = []
        self._lock = threading.Lock()
        self._started = False
        self._stopped = False
        self._synced = threading.Event()
        self._stop_cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self.handler_errors = 0

    # -- handlers -------------------------------------------------------------------------------------------

    def add_event_handler(self, handler: ResourceEventHandler) -> HandlerRegistration:
        """Register a handler; after start it first receives on_add(obj, True) for every cached object."""
        reg = HandlerRegistration(handler)
        with self._lock:
            if self._stopped:
                raise RuntimeError(f"informer {self.name} is stopped")
            if not self._started:
                self._registrations.append(reg)
                return reg
        self._queue._put(_Delta("register", reg))
        return reg

    # -- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the dispatcher, the reflector and (with a resync period) the resync thread."""
        with self._lock:
            if self._started:
                log.warning("informer already started", informer=self.name)
                return
            if self._stopped:
                raise RuntimeError(f"informer {self.name} is stopped")
            self._started = True
        self._spawn(self._dispatch_loop, "dispatch")
        if self._resync_period > 0:
            self._spawn(self._resync_loop, "resync")
        self._reflector.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the reflector and the threads; pending events are dropped."""
        with self._lock:
            self._stopped = True
        with self._stop_cond:
            self._stop_cond.notify_all()
        self._reflector.stop(timeout)
        self._queue.close()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout)

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    @property
    def reflector(self) -> Reflector:
        return self._reflector

    @property
    def last_sync_resource_version(self) -> str:
        return self._reflector.last_sync_resource_version

    def healthy(self) -> bool:
        """The reflector's health and every thread alive."""
        threads_alive = all(t.is_alive() for t in self._threads)
        return self._reflector.healthy and self._reflector.is_alive() and threads_alive

    def pending(self) -> int:
        """Deltas queued and not yet dispatched (the handler backlog)."""
        return len(self._queue)

    def _spawn(self, target: Any, what: str) -> None:
        t = threading.Thread(target=target, name=f"informer-{self.name}-{what}", daemon=True)
        self._threads.append(t)
        t.start()

    # -- dispatcher -----------------------------------------------------------------------------------------

    def _dispatch_loop(self) -> None:
        while True:
            delta = self._queue.pop()
            if delta is None:
                return
            try:
                self._process(delta)
            except Exception as e:
                log.exception("informer failed to process an event", informer=self.name, op=delta.op,
                              error=str(e))
            finally:
                if delta.release is not None:
                    delta.release()

    def _process(self, delta: _Delta) -> None:
        op = delta.op
        if op == "upsert":
            obj = delta.obj
            old = self.store.add(obj)
            if old is None:
                initial = not self._synced.is_set()
                for reg in self._registrations:
                    self._call(reg, "on_add", obj, initial)
            elif old is not obj and resource_version_of(old) != resource_version_of(obj):
                for reg in self._registrations:
                    self._call(reg, "on_update", old, obj)
        elif op == "delete":
            if self.store.delete(delta.obj) is None:
                log.debug("delete of an unknown object dropped", informer=self.name,
                          key=meta_namespace_key(delta.obj))
                return
            for reg in self._registrations:
                self._call(reg, "on_delete", delta.obj)
        elif op == "replace":
            self._process_replace(delta.obj, delta.resource_version)
        elif op == "sync":
            for obj in self.store.list():
                for reg in self._registrations:
                    self._call(reg, "on_update", obj, obj)
        elif op == "register":
            reg = delta.obj
            self._registrations.append(reg)
            for obj in self.store.list():
                self._call(reg, "on_add", obj, True)
            if self._synced.is_set():
                reg._synced.set()

    def _process_replace(self, objs: list[dict[str, Any]], resource_version: str) -> None:
        with gc_paused():  # thousands of long-lived index entries: skip the useless collections
            self._replace_and_notify(objs, resource_version)

    def _replace_and_notify(self, objs: list[dict[str, Any]], resource_version: str) -> None:
        result = self.store.replace(objs, resource_version)
        initial = not self._synced.is_set()
        regs = self._registrations
        if result.deleted:
            log.info("relist found objects deleted while not watching", informer=self.name,
                     count=len(result.deleted))
        for tombstone in result.deleted:
            for reg in regs:
                self._call(reg, "on_delete", tombstone)
        # Handler methods are looked up once per list, not once per object (this loop runs for every object).
        adds = [(reg, getattr(reg.handler, "on_add", None)) for reg in regs]
        updates = [(reg, getattr(reg.handler, "on_update", None)) for reg in regs]
        for old, new in result.changes:
            if old is None:
                for reg, on_add in adds:
                    try:
                        on_add(new, initial)  # type: ignore[misc]
                    except Exception as e:
                        self._handler_failed(reg, "on_add", new, e)
            else:
                for reg, on_update in updates:
                    try:
                        on_update(old, new)  # type: ignore[misc]
                    except Exception as e:
                        self._handler_failed(reg, "on_update", new, e)
        if initial:
            if self._freeze_gc_on_sync:
                gc.freeze()
            self._synced.set()
            for reg in regs:
                reg._synced.set()
            log.debug("informer synced", informer=self.name, objects=len(objs))

    def _call(self, reg: HandlerRegistration, method: str, *args: Any) -> None:
        try:
            getattr(reg.handler, method)(*args)
        except Exception as e:
            self._handler_failed(reg, method, args[-1] if method != "on_add" else args[0], e)

    def _handler_failed(self, reg: HandlerRegistration, method: str, obj: Any, e: Exception) -> None:
        self.handler_errors += 1
        try:
            key = meta_namespace_key(obj)
        except (ValueError, AttributeError, TypeError):
            key = "?"
        log.exception("event handler failed", informer=self.name, handler=type(reg.handler).__name__,
                      callback=method, key=key, error=str(e))

    # -- resync ---------------------------------------------------------------------------------------------

    def _resync_loop(self) -> None:
        while True:
            try:
                with self._stop_cond:
                    deadline = self._clock.now() + self._resync_period
                    while not self._stopped and (remaining := deadline - self._clock.now()) > 0:
                        self._clock.wait(self._stop_cond, remaining)
                if self._stopped:
                    return
                if self._synced.is_set():
                    self._queue._put(_Delta("sync"))
            except Exception as e:
                log.exception("resync failed", informer=self.name, error=str(e))


def wait_for_cache_sync(informers: Iterable[Any], timeout: float | None = None, *,
                        poll_interval: float = 0.1) -> bool:
    """Wait until every informer (or registration) has synced; False on timeout."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pending = list(informers)
    while True:
        pending = [i for i in pending if not i.has_synced()]
        if not pending:
            return True
        head = pending[0]
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            log.warning("caches did not sync in time",
                        waiting_for=[getattr(i, "name", repr(i)) for i in pending])
            return False
        wait = getattr(head, "wait_synced", None)
        step = poll_interval if remaining is None else min(poll_interval, remaining)
        if wait is not None:
            wait(remaining)
        else:
            time.sleep(step)
