"""SharedInformer against the in-memory FakeKube: order, has_synced, tombstones, late handlers, resync."""

from __future__ import annotations

import gc
import random
import threading
import time
from typing import Any

import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from ingressctl.k8s.clock import FakeClock
from ingressctl.k8s.informer import (
    DeletedFinalStateUnknown,
    SharedInformer,
    wait_for_cache_sync,
)
from ingressctl.k8s.reflector import Backoff
from ingressctl.k8s.store import meta_namespace_key
from tests.unit.test_reflector import FakeKube, wait_until


class RecordingHandler:
    """Records every call; keeps the view a handler would build; flags any resourceVersion going backwards."""

    def __init__(self, informer: SharedInformer | None = None) -> None:
        self.events: list[tuple[str, Any, Any]] = []
        self.view: dict[str, dict[str, Any]] = {}
        self.last_rv: dict[str, int] = {}
        self.regressions: list[str] = []
        self.deleted: set[str] = set()
        self.tombstones: list[DeletedFinalStateUnknown] = []
        self.lock = threading.Lock()
        self.informer = informer
        self.store_mismatch: list[str] = []
        self.threads: set[str] = set()

    def _seen(self, obj: dict[str, Any], in_store: bool = True) -> None:
        key = meta_namespace_key(obj)
        rv = int(obj["metadata"]["resourceVersion"])
        if rv < self.last_rv.get(key, 0):
            self.regressions.append(f"{key}: {rv} after {self.last_rv[key]}")
        self.last_rv[key] = rv
        if self.informer is not None and (self.informer.store.get_by_key(key) is obj) != in_store:
            self.store_mismatch.append(key)  # the store must already show the change the handler hears of

    def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
        with self.lock:
            self.threads.add(threading.current_thread().name)
            self.events.append(("add", meta_namespace_key(obj), is_initial_list))
            self._seen(obj)
            self.view[meta_namespace_key(obj)] = obj

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        with self.lock:
            self.threads.add(threading.current_thread().name)
            self.events.append(("update", meta_namespace_key(new), old["metadata"]["resourceVersion"]))
            self._seen(new)
            self.view[meta_namespace_key(new)] = new

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        with self.lock:
            self.threads.add(threading.current_thread().name)
            key = meta_namespace_key(obj)
            if isinstance(obj, DeletedFinalStateUnknown):
                self.tombstones.append(obj)
                self.events.append(("tombstone", key, None))
            else:
                self.events.append(("delete", key, None))
                self._seen(obj, in_store=False)
            self.deleted.add(key)
            self.view.pop(key, None)

    def of(self, kind: str) -> list[tuple[str, Any, Any]]:
        with self.lock:
            return [e for e in self.events if e[0] == kind]


def informer_for(kube: FakeKube, **kw: Any) -> SharedInformer:
    kw.setdefault("backoff", Backoff(initial=0.005, cap=0.02))
    return SharedInformer(kube, kube.rt, **kw)  # type: ignore[arg-type]


def rvs(d: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {k: v["metadata"]["resourceVersion"] for k, v in d.items()}


def test_initial_list_is_delivered_as_initial_adds_then_synced() -> None:
    kube = FakeKube()
    for i in range(25):
        kube.create(f"cm{i}")
    inf = informer_for(kube)
    h = RecordingHandler(inf)
    reg = inf.add_event_handler(h)
    assert not inf.has_synced()
    inf.start()
    try:
        assert wait_for_cache_sync([inf], timeout=20)
        assert reg.has_synced()
        adds = h.of("add")
        assert len(adds) == 25 and all(initial for _, _, initial in adds)
        assert rvs(dict(inf.store.items())) == rvs(kube.state())
        assert not h.store_mismatch  # the store was updated before each callback
        assert h.threads == {f"informer-{inf.name}-dispatch"}
        kube.create("late")
        wait_until(lambda: len(h.of("add")) == 26)
        assert h.of("add")[-1] == ("add", "default/late", False)
    finally:
        inf.stop()


def test_has_synced_waits_for_handlers_to_finish_the_first_list() -> None:
    kube = FakeKube()
    kube.create("a")
    kube.create("b")
    gate = threading.Event()

    class Slow(RecordingHandler):
        def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
            gate.wait(20)
            super().on_add(obj, is_initial_list)

    inf = informer_for(kube)
    h = Slow()
    inf.add_event_handler(h)
    inf.start()
    try:
        wait_until(lambda: kube.count("list") == 1)
        assert not wait_for_cache_sync([inf], timeout=0.2)
        assert not inf.has_synced()
        gate.set()
        assert wait_for_cache_sync([inf], timeout=20)
        assert len(h.of("add")) == 2
    finally:
        gate.set()
        inf.stop()


def test_an_empty_first_list_syncs_at_once() -> None:
    inf = informer_for(FakeKube())
    inf.start()
    try:
        assert wait_for_cache_sync([inf], timeout=20)
    finally:
        inf.stop()


def test_live_events_in_order_and_unknown_deletes_dropped() -> None:
    kube = FakeKube()
    inf = informer_for(kube)
    h = RecordingHandler(inf)
    inf.add_event_handler(h)
    inf.start()
    try:
        assert wait_for_cache_sync([inf], timeout=20)
        wait_until(lambda: len(kube.watchers) == 1)
        kube.create("a", v="1")
        kube.update("a", v="2")
        kube.create("b")
        kube.delete("a")
        wait_until(lambda: len(h.events) == 4)
        assert [(e[0], e[1]) for e in h.events] == [("add", "default/a"), ("update", "default/a"),
                                                    ("add", "default/b"), ("delete", "default/a")]
        # a DELETED for a key never seen is dropped; the stream goes on
        kube.watchers[0].push({"type": "DELETED", "object": {"kind": "ConfigMap", "metadata": {
            "name": "ghost", "namespace": "default", "resourceVersion": str(kube.rv)}}})
        kube.create("c")
        wait_until(lambda: len(h.events) == 5)
        assert h.events[-1][:2] == ("add", "default/c")
        assert not h.regressions and not h.store_mismatch
    finally:
        inf.stop()


def test_relist_after_a_gap_emits_tombstones_updates_and_adds() -> None:
    kube = FakeKube()
    for name in ("keep", "change", "gone"):
        kube.create(name)
    inf = informer_for(kube)
    h = RecordingHandler(inf)
    inf.add_event_handler(h)
    inf.start()
    try:
        assert wait_for_cache_sync([inf], timeout=20)
        wait_until(lambda: len(kube.watchers) == 1)
        last_known_gone = inf.store.get_by_key("default/gone")
        with kube._lock:  # a gap: the watch is dropped, changes happen, history is compacted
            kube.drop_watches()
            kube.update("change", v="2")
            kube.delete("gone")
            kube.create("new")
            kube.compact()
        wait_until(lambda: "default/new" in h.view, what="relist")
        assert [t.key for t in h.tombstones] == ["default/gone"]
        assert h.tombstones[0].obj is last_known_gone
        ordered = [(e[0], e[1]) for e in h.events[3:]]
        assert ordered == [("tombstone", "default/gone"), ("update", "default/change"),
                           ("add", "default/new")]
        assert h.events[-1][2] is False  # not part of the initial list
        assert rvs(h.view) == rvs(kube.state()) == rvs(dict(inf.store.items()))
    finally:
        inf.stop()


def test_handler_added_after_start_gets_a_replay_then_live_events() -> None:
    kube = FakeKube()
    for i in range(10):
        kube.create(f"cm{i}")
    inf = informer_for(kube)
    first = RecordingHandler(inf)
    inf.add_event_handler(first)
    inf.start()
    try:
        assert wait_for_cache_sync([inf], timeout=20)
        wait_until(lambda: len(kube.watchers) == 1)
        late = RecordingHandler(inf)
        stop = threading.Event()

        def churn() -> None:
            i = 0
            while not stop.is_set():
                kube.update(f"cm{i % 10}", n=str(i))
                i += 1
                time.sleep(0.001)

        t = threading.Thread(target=churn)
        t.start()
        reg = inf.add_event_handler(late)
        assert reg.wait_synced(20)
        stop.set()
        t.join()
        wait_until(lambda: rvs(late.view) == rvs(kube.state()) and rvs(first.view) == rvs(kube.state()))
        replay = late.events[:10]
        assert all(e[0] == "add" and e[2] is True for e in replay)
        assert not late.regressions and not first.regressions
    finally:
        inf.stop()


def test_a_raising_handler_is_logged_and_does_not_stop_the_others() -> None:
    kube = FakeKube()
    kube.create("a")

    class Broken:
        calls = 0

        def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
            Broken.calls += 1
            raise ValueError("handler bug")

        def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
            raise ValueError("handler bug")

        def on_delete(self, obj: Any) -> None:
            raise ValueError("handler bug")

    inf = informer_for(kube)
    inf.add_event_handler(Broken())
    good = RecordingHandler(inf)
    inf.add_event_handler(good)
    with structlog.testing.capture_logs() as logs:
        inf.start()
        try:
            assert wait_for_cache_sync([inf], timeout=20)
            wait_until(lambda: len(kube.watchers) == 1)
            kube.create("b")
            kube.update("b", x="1")
            kube.delete("b")
            wait_until(lambda: len(good.events) == 4)
            assert inf.healthy()
        finally:
            inf.stop()
    failures = [e for e in logs if e["event"] == "event handler failed"]
    assert len(failures) == 4 and failures[0]["key"] == "default/a" and "handler bug" in failures[0]["error"]
    assert Broken.calls == 2 and inf.handler_errors == 4


def test_resync_redelivers_cached_objects_as_same_rv_updates() -> None:
    kube = FakeKube()
    kube.create("a")
    kube.create("b")
    clock = FakeClock()
    inf = informer_for(kube, resync_period=30.0, clock=clock)
    h = RecordingHandler(inf)
    inf.add_event_handler(h)
    inf.start()
    try:
        assert wait_for_cache_sync([inf], timeout=20)
        wait_until(lambda: len(kube.watchers) == 1)
        assert clock.block_until_waiters(1)
        clock.step(29)
        assert clock.waiters() >= 1 and h.of("update") == []  # not due yet: still waiting
        clock.step(1)
        wait_until(lambda: len(h.of("update")) == 2, what="resync")
        for _, key, old_rv in h.of("update"):
            assert inf.store.get_by_key(key)["metadata"]["resourceVersion"] == old_rv  # type: ignore[index]
    finally:
        inf.stop()


def test_stop_ends_all_threads() -> None:
    kube = FakeKube()
    inf = informer_for(kube, resync_period=5.0)
    inf.start()
    assert wait_for_cache_sync([inf], timeout=20)
    inf.stop()
    assert not inf.reflector.is_alive()
    assert not any(t.is_alive() for t in inf._threads)


def test_gc_is_paused_until_the_list_is_dispatched_and_frozen_once_after_the_first_sync(
        monkeypatch: pytest.MonkeyPatch) -> None:
    freezes: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(gc.isenabled()))
    kube = FakeKube()
    for i in range(12):
        kube.create(f"cm{i}")
    gc_during_initial_adds: list[bool] = []

    class Probe(RecordingHandler):
        def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
            if is_initial_list:
                gc_during_initial_adds.append(gc.isenabled())
            super().on_add(obj, is_initial_list)

    inf = informer_for(kube, page_size=5)
    h = Probe(inf)
    inf.add_event_handler(h)
    inf.start()
    try:
        assert wait_for_cache_sync([inf], timeout=20)
        assert gc_during_initial_adds == [False] * 12
        assert freezes == [False]  # frozen while still paused: the new objects were never walked
        wait_until(gc.isenabled, what="the collector to be enabled again")
        wait_until(lambda: len(kube.watchers) == 1, what="watch")
        with kube._lock:  # a gap, then a relist: a tombstone for cm0; a relist does not freeze again
            kube.drop_watches()
            kube.delete("cm0")
            kube.compact()
        wait_until(lambda: len(h.tombstones) == 1, what="relist tombstone")
        assert freezes == [False]
        wait_until(gc.isenabled, what="the collector to be enabled after the relist")
    finally:
        inf.stop()
    assert gc.isenabled()


def test_no_gc_freeze_when_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    freezes: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(True))
    kube = FakeKube()
    kube.create("a")
    inf = informer_for(kube, freeze_gc_on_sync=False, prefetch=False)
    inf.start()
    try:
        assert wait_for_cache_sync([inf], timeout=20)
        assert len(inf.store) == 1 and freezes == []
    finally:
        inf.stop()


def test_stopping_with_an_undispatched_list_resumes_the_gc() -> None:
    kube = FakeKube()
    kube.create("a")
    gate = threading.Event()
    entered = threading.Event()

    class Blocking(RecordingHandler):
        def on_add(self, obj: dict[str, Any], is_initial_list: bool) -> None:
            entered.set()
            gate.wait(20)

    inf = informer_for(kube, freeze_gc_on_sync=False)
    inf.add_event_handler(Blocking())
    inf.start()
    try:
        assert entered.wait(20)  # the dispatcher is inside the first list's handlers: the GC is paused
        assert not gc.isenabled()
        wait_until(lambda: len(kube.watchers) == 1, what="watch")
        with kube._lock:  # a gap and a relist: a second list is queued behind the blocked one
            kube.drop_watches()
            kube.create("b")
            kube.compact()
        wait_until(lambda: inf.pending() >= 1, what="a second list queued")
    finally:
        inf.stop(timeout=0.1)  # drops the queued list
        gate.set()
    wait_until(gc.isenabled, what="the collector to be enabled after stop")


@pytest.mark.parametrize("seed", range(3))
def test_random_churn_with_drops_and_compactions_converges(seed: int) -> None:
    """A small in-memory version of the devcluster fault test (that one runs over HTTP)."""
    rng = random.Random(seed)
    kube = FakeKube(history=50)
    inf = informer_for(kube)
    h = RecordingHandler(inf)
    inf.add_event_handler(h)
    inf.start()
    try:
        assert wait_for_cache_sync([inf], timeout=20)
        created: set[str] = set()
        for i in range(400):
            names = sorted(n.split("/")[1] for n in kube.state())
            roll = rng.random()
            if roll < 0.4 or not names:
                name = f"o{rng.randrange(60)}"
                if f"default/{name}" not in kube.state():
                    kube.create(name, i=str(i))
                    created.add(f"default/{name}")
            elif roll < 0.75:
                kube.update(rng.choice(names), i=str(i))
            else:
                kube.delete(rng.choice(names))
            if rng.random() < 0.03:
                kube.drop_watches()
            if rng.random() < 0.02:
                with kube._lock:
                    kube.drop_watches()
                    kube.compact()
        wait_until(lambda: rvs(dict(inf.store.items())) == rvs(kube.state()), what="convergence")
        wait_until(lambda: rvs(h.view) == rvs(kube.state()))
        assert not h.regressions, h.regressions[:5]
        gone = created - set(kube.state())
        seen = {e[1] for e in h.events if e[0] == "add"} | {e[1] for e in h.events if e[0] == "update"}
        assert {k for k in gone if k in seen} <= h.deleted
    finally:
        inf.stop()


# -- model check: random watch events, gaps and relists, driven synchronously through the dispatcher --

KEYS = st.sampled_from([f"ns{i % 2}/o{i}" for i in range(6)])
STEPS = st.lists(st.tuples(st.sampled_from(["write", "write", "delete", "relist"]), KEYS, st.booleans()),
                 max_size=60)


def _obj(key: str, rv: int) -> dict[str, Any]:
    ns, name = key.split("/")
    return {"kind": "ConfigMap", "metadata": {"namespace": ns, "name": name, "resourceVersion": str(rv)}}


@settings(max_examples=200, deadline=None)
@given(STEPS)
def test_dispatcher_matches_the_server_through_gaps_and_relists(steps: list[tuple[str, str, bool]]) -> None:
    inf = SharedInformer(FakeKube(), FakeKube().rt)  # type: ignore[arg-type]
    h = RecordingHandler(inf)
    inf.add_event_handler(h)
    queue = inf._queue
    server: dict[str, dict[str, Any]] = {}
    rv = 100

    def drain() -> None:
        while len(queue):
            delta = queue.pop()
            assert delta is not None
            try:
                inf._process(delta)
            finally:  # as the dispatcher loop does: end the GC pause a replace holds
                if delta.release is not None:
                    delta.release()

    queue.replace([], str(rv))  # the first list: empty
    drain()
    assert inf.has_synced()
    for op, key, observed in steps:  # observed=False: the event happens during a watch gap
        if op == "relist":
            before = set(inf.store.list_keys())
            tombstones_before = len(h.tombstones)
            queue.replace([dict(o) for o in server.values()], str(rv))
            drain()
            assert {t.key for t in h.tombstones[tombstones_before:]} == before - set(server)
            assert rvs(dict(inf.store.items())) == rvs(server)
            continue
        rv += 1
        if op == "write":
            obj = _obj(key, rv)
            server[key] = obj
            if observed:
                queue.add(dict(obj))
        elif key in server:
            gone = server.pop(key)
            if observed:
                queue.delete(dict(gone, metadata={**gone["metadata"], "resourceVersion": str(rv)}))
        drain()
    queue.replace(list(server.values()), str(rv))
    drain()
    assert rvs(dict(inf.store.items())) == rvs(server) == rvs(h.view)
    assert not h.regressions and not h.store_mismatch
