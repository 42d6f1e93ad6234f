"""Reflector against an in-memory fake API (`FakeKube`): resourceVersion choice, pagination, relists, backoff.

`FakeKube` is also used by the informer unit tests.
"""

from __future__ import annotations

import copy
import gc
import itertools
import json
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog

from ingressctl.k8s.clock import FakeClock
from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.pager import page_limits, paged_list
from ingressctl.k8s.reflector import (
    LAST_APPLIED_ANNOTATION,
    Backoff,
    Reflector,
    drop_fields,
    strip_managed_fields,
)
from ingressctl.k8s.resource import CONFIGMAPS, ResourceType
from ingressctl.k8s.store import ThreadSafeStore, meta_namespace_key

# -- the fake API -------------------------------------------------------------------------------------------

_END = object()


class FakeWatch:
    """A watch stream fed by FakeKube; iteration blocks until an event, end() or close()."""

    def __init__(self, kube: FakeKube) -> None:
        self._q: queue.Queue[Any] = queue.Queue()
        self._kube = kube
        self.closed = False

    def push(self, event: dict[str, Any]) -> None:
        self._q.put(json.loads(json.dumps(event)))

    def end(self) -> None:
        self._q.put(_END)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        item = self._q.get()
        if item is _END:
            raise StopIteration
        return item  # type: ignore[no-any-return]

    def close(self) -> None:
        self.closed = True
        self._kube._forget(self)
        self._q.put(_END)

    def __enter__(self) -> FakeWatch:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class FakeKube:
    """One resource type in memory, with the list/watch surface of KubeClient and fault knobs.

    Integer resourceVersions, a bounded history, 410 for watches from a compacted RV, list pagination with
    continue tokens (which `expire_continue_tokens()` invalidates), and scripted failures per verb.
    """

    def __init__(self, rt: ResourceType = CONFIGMAPS, history: int = 10_000) -> None:
        self.rt = rt
        self._lock = threading.RLock()
        self.rv = 100
        self.objects: dict[str, dict[str, Any]] = {}
        self.history: list[tuple[int, dict[str, Any]]] = []
        self.oldest_rv = self.rv  # watches from before this RV are expired
        self.max_history = history
        self.watchers: list[FakeWatch] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail: dict[str, list[BaseException | Callable[[dict[str, Any]], BaseException | None]]] = {}
        self._snapshots: dict[str, list[dict[str, Any]]] = {}
        self._snapshot_rv: dict[str, str] = {}
        self.watch_prelude: list[dict[str, Any]] = []  # events sent first on the next watch only

    # -- test side: mutations -----------------------------------------------------------------------------

    def _commit(self, etype: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        key = meta_namespace_key(obj)
        if etype == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        event = {"type": etype, "object": obj}
        self.history.append((self.rv, event))
        if len(self.history) > self.max_history:
            dropped = self.history.pop(0)
            self.oldest_rv = dropped[0]
        for w in list(self.watchers):
            w.push(event)
        return obj

    def create(self, name: str, ns: str = "default", **data: str) -> dict[str, Any]:
        with self._lock:
            obj = {"kind": self.rt.kind, "apiVersion": self.rt.api_version,
                   "metadata": {"name": name, "namespace": ns}, "data": dict(data)}
            return self._commit("ADDED", obj)

    def update(self, name: str, ns: str = "default", **data: str) -> dict[str, Any]:
        with self._lock:
            obj = copy.deepcopy(self.objects[f"{ns}/{name}"])
            obj["data"] = dict(data)
            return self._commit("MODIFIED", obj)

    def delete(self, name: str, ns: str = "default") -> dict[str, Any]:
        with self._lock:
            return self._commit("DELETED", self.objects[f"{ns}/{name}"])

    def bookmark(self) -> None:
        with self._lock:
            self.rv += 1
            for w in list(self.watchers):
                obj = {"kind": self.rt.kind, "apiVersion": self.rt.api_version,
                       "metadata": {"resourceVersion": str(self.rv)}}
                w.push({"type": "BOOKMARK", "object": obj})

    def compact(self) -> None:
        with self._lock:
            self.history.clear()
            self.oldest_rv = self.rv

    def drop_watches(self) -> None:
        with self._lock:
            for w in list(self.watchers):
                w.end()
            self.watchers.clear()

    def expire_continue_tokens(self) -> None:
        with self._lock:
            self._snapshots.clear()

    def state(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self.objects)

    def count(self, verb: str) -> int:
        with self._lock:
            return sum(1 for v, _ in self.calls if v == verb)

    def _forget(self, w: FakeWatch) -> None:
        with self._lock:
            if w in self.watchers:
                self.watchers.remove(w)

    def _maybe_fail(self, verb: str, kwargs: dict[str, Any]) -> None:
        pending = self.fail.get(verb)
        if pending:
            item = pending.pop(0)
            err = item(kwargs) if callable(item) and not isinstance(item, BaseException) else item
            if err is not None:
                raise err

    # -- KubeClient surface -------------------------------------------------------------------------------

    def list(self, rt: ResourceType, namespace: str | None = None, *, resource_version: str | None = None,
             resource_version_match: str | None = None, limit: int | None = None,
             continue_token: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> dict[str, Any]:
        kwargs = {"resource_version": resource_version, "limit": limit, "continue_token": continue_token}
        with self._lock:
            self.calls.append(("list", kwargs))
            self._maybe_fail("list", kwargs)
            if continue_token:
                if continue_token not in self._snapshots:
                    raise ApiError(410, "Expired", "The provided continue parameter is too old to display a "
                                   "consistent list result.")
                items = self._snapshots.pop(continue_token)
                list_rv = self._snapshot_rv.pop(continue_token)
            else:
                items = [copy.deepcopy(o) for _, o in sorted(self.objects.items())]
                for o in items:
                    o.pop("kind", None)
                    o.pop("apiVersion", None)
                list_rv = str(self.rv)
            cont = ""
            if limit and len(items) > limit:
                cont = f"tok-{random.random()}"
                self._snapshots[cont] = items[limit:]
                self._snapshot_rv[cont] = list_rv
                items = items[:limit]
            return {"kind": f"{self.rt.kind}List", "apiVersion": self.rt.api_version,
                    "metadata": {"resourceVersion": list_rv, "continue": cont}, "items": items}

    def list_pages(self, rt: ResourceType, namespace: str | None = None, *,
                   resource_version: str | None = None, resource_version_match: str | None = None,
                   limit: int | None = None, max_limit: int | None = None, label_selector: str | None = None,
                   field_selector: str | None = None, prefetch: bool = True) -> Iterator[dict[str, Any]]:
        """KubeClient.list_pages over `list()`: the real pager (prefetching in a helper thread) on JSON."""
        limits = page_limits(limit, max_limit)

        def first() -> bytes:
            page = self.list(rt, namespace, resource_version=resource_version, limit=limit,
                             label_selector=label_selector, field_selector=field_selector)
            return json.dumps(page).encode()

        def fetch(token: str) -> bytes:
            page = self.list(rt, namespace, limit=next(limits), continue_token=token,
                             label_selector=label_selector, field_selector=field_selector)
            return json.dumps(page).encode()

        def decode(body: bytes) -> dict[str, Any]:
            return json.loads(body)  # type: ignore[no-any-return]

        return paged_list(first, fetch, decode, prefetch=prefetch, name=rt.plural)

    def watch(self, rt: ResourceType, namespace: str | None = None, *, resource_version: str,
              timeout_seconds: int, allow_bookmarks: bool = True, label_selector: str | None = None,
              field_selector: str | None = None) -> FakeWatch:
        kwargs = {"resource_version": resource_version, "timeout_seconds": timeout_seconds,
                  "allow_bookmarks": allow_bookmarks}
        with self._lock:
            self.calls.append(("watch", kwargs))
            self._maybe_fail("watch", kwargs)
            w = FakeWatch(self)
            for event in self.watch_prelude:
                w.push(event)
            self.watch_prelude = []
            rv = int(resource_version)
            if rv < self.oldest_rv:
                w.push({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                                    "message": f"too old resource version: {rv}"}})
                w.end()
                return w
            for erv, event in self.history:
                if erv > rv:
                    w.push(event)
            self.watchers.append(w)
            return w


class RecordingStore:
    """A ReflectorStore that records calls and keeps a plain key -> object map."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.items: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.fail_on: str | None = None

    def _rec(self, op: str, arg: Any) -> None:
        with self.lock:
            self.calls.append((op, arg))

    def add(self, obj: dict[str, Any]) -> None:
        self._rec("add", obj)
        if self.fail_on == "add":
            raise RuntimeError("store is broken")
        self.items[meta_namespace_key(obj)] = obj

    def update(self, obj: dict[str, Any]) -> None:
        self._rec("update", obj)
        self.items[meta_namespace_key(obj)] = obj

    def delete(self, obj: dict[str, Any]) -> None:
        self._rec("delete", obj)
        self.items.pop(meta_namespace_key(obj), None)

    def replace(self, objs: list[dict[str, Any]], resource_version: str) -> None:
        self._rec("replace", (objs, resource_version))
        self.items = {meta_namespace_key(o): o for o in objs}

    def ops(self) -> list[str]:
        with self.lock:
            return [op for op, _ in self.calls]


def wait_until(cond: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def fast_backoff() -> Backoff:
    return Backoff(initial=0.005, cap=0.02)


def data_of(items: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {k: (v["metadata"]["resourceVersion"], v.get("data")) for k, v in items.items()}


def make(kube: FakeKube, store: Any = None, **kw: Any) -> tuple[Reflector, RecordingStore]:
    st = store if store is not None else RecordingStore()
    kw.setdefault("backoff", fast_backoff())
    r = Reflector(kube, kube.rt, st, **kw)  # type: ignore[arg-type]
    return r, st


@pytest.fixture
def kube() -> FakeKube:
    return FakeKube()


# -- list and watch -----------------------------------------------------------------------------------------


def test_initial_list_is_rv0_paginated_then_watch_from_list_rv(kube: FakeKube) -> None:
    for i in range(1203):
        kube.create(f"cm{i:04d}")
    r, st = make(kube, page_size=500)
    r.start()
    try:
        wait_until(lambda: kube.count("watch") >= 1, what="watch")
        lists = [kw for v, kw in kube.calls if v == "list"]
        assert lists[0] == {"resource_version": "0", "limit": 500, "continue_token": None}
        # Each continue page twice as large as the one before: 500 + 1000 covers 1203 in two round trips.
        assert [kw["limit"] for kw in lists] == [500, 1000]
        assert all(kw["resource_version"] is None for kw in lists[1:])
        assert len(st.items) == 1203
        assert st.calls[0][0] == "replace" and st.calls[0][1][1] == str(kube.rv)
        watch = next(kw for v, kw in kube.calls if v == "watch")
        assert watch["resource_version"] == str(kube.rv) and watch["allow_bookmarks"] is True
        assert 300 <= watch["timeout_seconds"] < 600
        assert r.last_sync_resource_version == str(kube.rv)
        assert r.healthy
        # list items get kind/apiVersion like watched objects
        assert all(o["kind"] == "ConfigMap" and o["apiVersion"] == "v1" for o in st.items.values())
    finally:
        r.stop()
    assert not r.is_alive()


def test_events_and_bookmarks_advance_the_resource_version(kube: FakeKube) -> None:
    kube.create("a")
    r, st = make(kube)
    r.start()
    try:
        wait_until(lambda: len(kube.watchers) == 1)
        kube.create("b", x="1")
        kube.update("a", y="2")
        kube.delete("b")
        wait_until(lambda: r.last_sync_resource_version == str(kube.rv))
        assert st.ops()[1:] == ["add", "update", "delete"]
        assert data_of(st.items) == data_of(kube.state())
        kube.bookmark()
        wait_until(lambda: r.last_sync_resource_version == str(kube.rv), what="bookmark rv")
        assert st.ops()[1:] == ["add", "update", "delete"]  # a bookmark changes no object
    finally:
        r.stop()


def test_normal_close_rewatches_from_last_rv_without_relist(kube: FakeKube) -> None:
    r, st = make(kube)
    r.start()
    try:
        wait_until(lambda: len(kube.watchers) == 1)
        kube.create("a")
        wait_until(lambda: "default/a" in st.items)
        for round_ in range(3):
            rv_before = r.last_sync_resource_version
            watches = kube.count("watch")
            kube.drop_watches()
            wait_until(lambda w=watches: kube.count("watch") > w and len(kube.watchers) == 1)  # type: ignore[misc]
            last = [kw for v, kw in kube.calls if v == "watch"][-1]
            assert last["resource_version"] == rv_before, round_
            kube.create(f"b{round_}")  # an event, so the next close is not a "very short watch"
            wait_until(lambda n=round_: f"default/b{n}" in st.items)  # type: ignore[misc]
        assert kube.count("list") == 1
    finally:
        r.stop()


def test_expired_watch_relists_from_last_rv_not_zero(kube: FakeKube) -> None:
    kube.create("a")
    r, st = make(kube)
    r.start()
    try:
        wait_until(lambda: len(kube.watchers) == 1)
        kube.create("b")
        wait_until(lambda: "default/b" in st.items)
        seen_rv = r.last_sync_resource_version
        # While nobody watches: changes happen, then history is compacted; the re-watch gets 410.
        kube.drop_watches()
        with kube._lock:
            kube.fail["watch"] = [ApiError(0, "ConnectionRefused", "down")]
            kube.delete("a")
            kube.create("c")
            kube.compact()
        wait_until(lambda: kube.count("list") == 2, what="relist")
        relist = [kw for v, kw in kube.calls if v == "list"][1]
        assert relist == {"resource_version": seen_rv, "limit": None, "continue_token": None}
        wait_until(lambda: sorted(st.items) == ["default/b", "default/c"])
        assert st.ops().count("replace") == 2
    finally:
        r.stop()


def test_watch_error_event_410_relists(kube: FakeKube) -> None:
    r, st = make(kube)
    r.start()
    try:
        wait_until(lambda: len(kube.watchers) == 1)
        with kube._lock:
            kube.drop_watches()
            kube.create("x")  # missed by the watch...
            kube.compact()  # ...and gone from history: the re-watch gets an ERROR 410 event
        wait_until(lambda: kube.count("list") >= 2, what="relist after 410")
        wait_until(lambda: "default/x" in st.items)
        assert r.is_alive()
    finally:
        r.stop()


def test_continue_pages_double_up_to_the_max_page_size(kube: FakeKube) -> None:
    for i in range(40):
        kube.create(f"cm{i:02d}")
    r, st = make(kube, page_size=2, max_page_size=8)
    r.start()
    try:
        wait_until(lambda: kube.count("watch") >= 1, what="watch")
        lists = [kw for v, kw in kube.calls if v == "list"]
        assert [kw["limit"] for kw in lists] == [2, 4, 8, 8, 8, 8, 8]
        assert len(st.items) == 40
    finally:
        r.stop()


def test_page_limits() -> None:
    assert list(itertools.islice(page_limits(500, 5000), 5)) == [1000, 2000, 4000, 5000, 5000]
    assert list(itertools.islice(page_limits(500), 3)) == [500, 500, 500]
    assert list(itertools.islice(page_limits(None, 5000), 2)) == [None, None]
    assert list(itertools.islice(page_limits(700, 500), 2)) == [700, 700]  # never below the first page


def test_list_gone_at_rv_falls_back_to_most_recent(kube: FakeKube) -> None:
    kube.create("a")
    r, _ = make(kube)
    r.start()
    try:
        wait_until(lambda: len(kube.watchers) == 1)
        kube.fail["list"] = [ApiError(410, "Expired", "too old")]
        kube.fail["watch"] = [ApiError(500, "InternalError", "watch broke")]  # forces a relist
        kube.drop_watches()
        wait_until(lambda: kube.count("list") == 3, what="fallback list")
        lists = [kw for v, kw in kube.calls if v == "list"]
        assert lists[1]["resource_version"] not in ("", "0", None)
        assert lists[2]["resource_version"] is None  # "" is sent as no resourceVersion: most recent
        assert lists[2]["limit"] == 500
        wait_until(lambda: len(kube.watchers) == 1)
    finally:
        r.stop()


def test_expired_continue_token_restarts_with_a_full_list(kube: FakeKube) -> None:
    for i in range(12):
        kube.create(f"cm{i:02d}")

    def expire_after_first_page(kw: dict[str, Any]) -> None:
        # Between the first and the second page, the cluster changes and the token expires.
        kube.expire_continue_tokens()
        kube.delete("cm00")
        kube.create("new")
        return None

    kube.fail["list"] = [lambda kw: None, expire_after_first_page]
    r, st = make(kube, page_size=5)
    with structlog.testing.capture_logs() as logs:
        r.start()
        try:
            wait_until(lambda: len(kube.watchers) == 1)
            lists = [kw for v, kw in kube.calls if v == "list"]
            assert lists[2] == {"resource_version": None, "limit": None, "continue_token": None}
            assert st.ops() == ["replace"]
            assert sorted(st.items) == sorted(kube.state())
            assert "default/new" in st.items and "default/cm00" not in st.items
            assert r.last_sync_resource_version == str(kube.rv)
        finally:
            r.stop()
    assert any(e["event"] == "list continue token expired; restarting with a full list" for e in logs)


def test_connection_refused_and_429_on_watch_back_off_without_relist(kube: FakeKube) -> None:
    kube.fail["watch"] = [ApiError(0, "ConnectionRefused", "refused"), ApiError(429, "TooManyRequests", "x"),
                          ApiError(0, "ConnectionRefused", "refused")]
    r, _ = make(kube)
    with structlog.testing.capture_logs() as logs:
        r.start()
        try:
            wait_until(lambda: len(kube.watchers) == 1)
            assert kube.count("watch") == 4
            assert kube.count("list") == 1
            assert r.healthy
        finally:
            r.stop()
    assert sum(e["event"] == "watch could not be started; retrying the watch" for e in logs) == 3


def test_other_watch_failures_relist_with_backoff(kube: FakeKube) -> None:
    kube.fail["watch"] = [ApiError(500, "InternalError", "boom"), ApiError(403, "Forbidden", "no")]
    r, _ = make(kube)
    with structlog.testing.capture_logs() as logs:
        r.start()
        try:
            wait_until(lambda: len(kube.watchers) == 1)
            assert kube.count("list") == 3
        finally:
            r.stop()
    failures = [e for e in logs if e["event"] == "list and watch failed"]
    assert len(failures) == 2 and "boom" in failures[0]["error"]


def test_error_event_relists_and_the_thread_survives(kube: FakeKube) -> None:
    status = {"kind": "Status", "code": 500, "reason": "InternalError", "message": "etcd hiccup"}
    kube.watch_prelude = [{"type": "ERROR", "object": status}]
    r, _ = make(kube)
    with structlog.testing.capture_logs() as logs:
        r.start()
        try:
            wait_until(lambda: len(kube.watchers) == 1)
            assert kube.count("list") == 2
            assert r.is_alive()
        finally:
            r.stop()
    err = next(e for e in logs if e["event"] == "watch ended with error; relisting")
    assert "etcd hiccup" in err["error"]


def test_very_short_watch_counts_as_an_error(kube: FakeKube) -> None:
    clock = FakeClock()  # frozen: every watch that ends without events lasted "0 s"
    r, _ = make(kube, clock=clock)
    r.start()
    try:
        wait_until(lambda: len(kube.watchers) == 1)
        with structlog.testing.capture_logs() as logs:
            kube.drop_watches()  # no events delivered
            assert clock.block_until_waiters(1)  # backing off before the relist
            assert kube.count("list") == 1
            clock.step(1)
            wait_until(lambda: kube.count("list") == 2, what="relist after a very short watch")
        assert any(e["event"].startswith("very short watch") for e in logs)
    finally:
        r.stop()


def test_unexpected_exceptions_are_logged_and_the_loop_continues(kube: FakeKube) -> None:
    kube.fail["list"] = [KeyError("a bug"), RuntimeError("another bug")]
    r, _ = make(kube)
    with structlog.testing.capture_logs() as logs:
        r.start()
        try:
            wait_until(lambda: len(kube.watchers) == 1)
            assert r.is_alive() and r.healthy
        finally:
            r.stop()
    errors = [e for e in logs if e["event"] == "reflector error"]
    assert len(errors) == 2 and errors[0]["log_level"] == "error"


def test_store_errors_do_not_end_the_watch(kube: FakeKube) -> None:
    r, st = make(kube)
    r.start()
    try:
        wait_until(lambda: len(kube.watchers) == 1)
        st.fail_on = "add"
        with structlog.testing.capture_logs() as logs:
            kube.create("a")
            wait_until(lambda: r.last_sync_resource_version == str(kube.rv))
        st.fail_on = None
        kube.create("b")
        wait_until(lambda: "default/b" in st.items)
        assert kube.count("list") == 1
        assert any(e["event"] == "store rejected a watch event" for e in logs)
    finally:
        r.stop()


def test_malformed_events_are_skipped(kube: FakeKube) -> None:
    kube.watch_prelude = [
        {"type": "ADDED", "object": {"metadata": {"namespace": "x"}}},  # no name / rv
        {"type": "WHAT", "object": {"metadata": {"name": "q", "resourceVersion": "5"}}},
        {"type": "ADDED", "object": {"kind": "Secret", "metadata": {"name": "s", "namespace": "d",
                                                                    "resourceVersion": "7"}}},
    ]
    r, st = make(kube)
    with structlog.testing.capture_logs() as logs:
        r.start()
        try:
            wait_until(lambda: len(kube.watchers) == 1)
            kube.create("ok")
            wait_until(lambda: "default/ok" in st.items)
            assert list(st.items) == ["default/ok"]
        finally:
            r.stop()
    events = {e["event"] for e in logs}
    assert "skipping watch event without metadata.name/resourceVersion" in events
    assert "skipping watch event of unknown type" in events
    assert "skipping watch event of an unexpected kind" in events


def test_transform_strips_managed_fields_on_list_and_watch(kube: FakeKube) -> None:
    kube.create("a")
    with kube._lock:
        for o in kube.objects.values():
            o["metadata"]["managedFields"] = [{"manager": "kubectl"}]
            o["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: "{...}", "keep": "me"}
    watched = {"kind": "ConfigMap",
               "metadata": {"name": "w", "namespace": "default", "resourceVersion": "100",
                            "managedFields": [{"manager": "x"}],
                            "annotations": {LAST_APPLIED_ANNOTATION: "{}"}}}
    kube.watch_prelude = [{"type": "ADDED", "object": watched}]
    r, st = make(kube)
    r.start()
    try:
        wait_until(lambda: len(kube.watchers) == 1 and "default/w" in st.items)
        meta = st.items["default/a"]["metadata"]
        assert "managedFields" not in meta and meta["annotations"] == {"keep": "me"}
        assert st.items["default/w"]["metadata"] == {"name": "w", "namespace": "default",
                                                     "resourceVersion": "100", "annotations": {}}
    finally:
        r.stop()
    o = {"metadata": {"managedFields": [], "annotations": {LAST_APPLIED_ANNOTATION: "x"}}}
    assert strip_managed_fields(o) == {"metadata": {"annotations": {}}}
    assert strip_managed_fields({"no": "meta"}) == {"no": "meta"}


def test_drop_fields_transform() -> None:
    transform = drop_fields("metadata.ownerReferences", "endpoints[].targetRef", "spec.a.b")
    obj = {"metadata": {"name": "s", "ownerReferences": [{"name": "svc"}], "managedFields": [{}],
                        "annotations": {LAST_APPLIED_ANNOTATION: "{}", "keep": "1"}},
           "endpoints": [{"addresses": ["10.0.0.1"], "targetRef": {"name": "p"}}, {"addresses": []}, "odd"],
           "spec": {"a": "not a dict"}}
    assert transform(obj) is obj
    assert obj == {"metadata": {"name": "s", "annotations": {"keep": "1"}},
                   "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": []}, "odd"],
                   "spec": {"a": "not a dict"}}
    assert drop_fields("endpoints[].x")({"endpoints": {"x": 1}}) == {"endpoints": {"x": 1}}  # not a list
    for bad in [("",), ("a..b",), ("a[]",), ("a[0].b",), ("[].b",), ("a[].b", "a.c")]:
        with pytest.raises(ValueError):
            drop_fields(*bad)
    merged = drop_fields("spec", "spec.x", "status.a", "status.b")  # "spec" covers "spec.x"
    assert merged({"spec": {"x": 1}, "status": {"a": 1, "b": 2, "c": 3}}) == {"status": {"c": 3}}


def test_listed_objects_share_kind_and_namespace_strings(kube: FakeKube) -> None:
    for i in range(30):
        kube.create(f"cm{i}", ns="team-a" if i % 2 else "team-b")
    r, st = make(kube, page_size=7)
    r.start()
    try:
        wait_until(lambda: len(kube.watchers) == 1, what="watch")
        kube.create("late", ns="team-a")
        wait_until(lambda: "team-a/late" in st.items, what="watched object")
        objs = list(st.items.values())
        assert len({id(o["metadata"]["namespace"]) for o in objs}) == 2  # one string per namespace
        assert all(o["kind"] is kube.rt.kind for o in objs)
        assert {o["metadata"]["namespace"] for o in objs} == {"team-a", "team-b"}
    finally:
        r.stop()


class GcProbeStore(RecordingStore):
    """Records whether the cyclic GC was enabled when the list was handed over."""

    def __init__(self) -> None:
        super().__init__()
        self.gc_enabled_at_replace: list[bool] = []

    def replace(self, objs: list[dict[str, Any]], resource_version: str) -> None:
        self.gc_enabled_at_replace.append(gc.isenabled())
        super().replace(objs, resource_version)


def test_gc_is_paused_for_the_list_and_restored_after(kube: FakeKube) -> None:
    for i in range(25):
        kube.create(f"cm{i}")
    assert gc.isenabled()
    st = GcProbeStore()
    r, _ = make(kube, st, page_size=10, max_page_size=10)
    r.start()
    try:
        wait_until(lambda: len(kube.watchers) == 1, what="watch")
        assert st.gc_enabled_at_replace == [False]
        assert gc.isenabled()
        assert kube.count("list") == 3
        kube.fail["list"] = [lambda kw: None, ApiError(500, "InternalError", "broken page")]
        kube.compact()
        kube.drop_watches()  # the re-watch gets 410: relist; its second page fails, the next relist succeeds
        wait_until(lambda: len(st.gc_enabled_at_replace) == 2, what="relist after the failed one")
        assert kube.count("list") == 3 + 2 + 3
        assert st.gc_enabled_at_replace == [False, False]
        wait_until(lambda: len(kube.watchers) == 1, what="watch after the relist")
        assert gc.isenabled()
    finally:
        r.stop()
    assert gc.isenabled()


def test_stop_interrupts_a_blocked_watch_and_a_backoff(kube: FakeKube) -> None:
    r, _ = make(kube)
    r.start()
    wait_until(lambda: len(kube.watchers) == 1)
    r.stop(timeout=10)
    assert not r.is_alive() and not r.healthy
    kube2 = FakeKube()
    kube2.fail["list"] = [ApiError(500, "InternalError", "x")] * 5
    r2, _ = make(kube2, backoff=Backoff(initial=100, cap=100))
    r2.start()
    wait_until(lambda: kube2.count("list") == 1)
    r2.stop(timeout=10)
    assert not r2.is_alive()


def test_works_with_a_thread_safe_store(kube: FakeKube) -> None:
    for i in range(7):
        kube.create(f"c{i}")
    store = ThreadSafeStore()
    r, _ = make(kube, store=store, page_size=3)
    r.start()
    try:
        wait_until(lambda: len(kube.watchers) == 1)
        kube.delete("c3")
        kube.update("c4", z="1")
        wait_until(lambda: len(store) == 6 and store.get_by_key("default/c4")["data"] == {"z": "1"})  # type: ignore[index]
    finally:
        r.stop()


# -- backoff ------------------------------------------------------------------------------------------------


def test_backoff_is_jittered_exponential_capped_and_resets_after_quiet() -> None:
    clock = FakeClock()
    b = Backoff(clock=clock, rng=random.Random(7))
    delays = [b.next() for _ in range(12)]
    base = 0.8
    for d in delays:
        assert min(base, 30.0) <= d <= min(2 * base, 30.0) + 1e-9
        base *= 2
    assert delays[-1] == 30.0
    clock.step(60)  # not quiet long enough: still capped
    assert b.next() == 30.0
    clock.step(30 + 121)  # > 2 min after the last backoff ended
    assert 0.8 <= b.next() < 1.6


def test_watch_timeouts_are_randomised(kube: FakeKube) -> None:
    r, _ = make(kube, min_watch_timeout=5)
    r.start()
    try:
        for i in range(5):
            wait_until(lambda: len(kube.watchers) == 1)
            n = kube.count("watch")
            kube.create(f"x{i}")
            wait_until(lambda: r.last_sync_resource_version == str(kube.rv))
            kube.drop_watches()
            wait_until(lambda n=n: kube.count("watch") > n)  # type: ignore[misc]
        timeouts = {kw["timeout_seconds"] for v, kw in kube.calls if v == "watch"}
        assert all(5 <= t < 10 for t in timeouts)
    finally:
        r.stop()
