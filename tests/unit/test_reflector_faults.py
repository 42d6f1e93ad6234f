"""Reflector + KubeClient over HTTP against a scripted fake API server: bad watch streams and list pages.

Each fault must give a clear log line and recovery, and the reflector thread must still be alive afterwards.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import structlog

from ingressctl.k8s.reflector import Backoff, Reflector
from ingressctl.k8s.resource import CONFIGMAPS
from ingressctl.k8s.store import ThreadSafeStore
from tests.unit.test_client import (
    FakeApiServer,
    Reply,
    Request,
    cm,
    fast_client,
    list_reply,
    status_body,
    status_reply,
    watch_reply,
)
from tests.unit.test_reflector import wait_until


class Script:
    """Answers lists and watches from per-verb queues; the last watch reply repeats (an idle, held watch)."""

    def __init__(self, lists: list[Reply], watches: list[Reply]) -> None:
        self.lists = lists
        self.watches = watches
        self.lock = threading.Lock()
        self.list_queries: list[dict[str, str]] = []
        self.watch_queries: list[dict[str, str]] = []

    def __call__(self, req: Request) -> Reply:
        with self.lock:
            if req.is_watch:
                self.watch_queries.append(req.query)
                return self.watches.pop(0) if len(self.watches) > 1 else self.watches[0]
            self.list_queries.append(req.query)
            if not self.lists:
                return status_reply(500, "InternalError", "script exhausted")
            return self.lists.pop(0)


IDLE = watch_reply([], hold=True)


def run_reflector(script: Script, check: Callable[[Reflector, ThreadSafeStore], None],
                  **kw: Any) -> list[Any]:
    store = ThreadSafeStore()
    with FakeApiServer(script) as srv, structlog.testing.capture_logs() as logs:
        r = Reflector(fast_client(srv.url), CONFIGMAPS, store, backoff=Backoff(initial=0.01, cap=0.05), **kw)
        r.start()
        try:
            check(r, store)
            assert r.is_alive()
        finally:
            r.stop()
    assert not r.is_alive()
    return logs


def rv_of(store: ThreadSafeStore, key: str) -> str | None:
    obj = store.get_by_key(key)
    return None if obj is None else str(obj["metadata"]["resourceVersion"])


def test_malformed_watch_line_is_logged_and_relisted() -> None:
    script = Script(
        lists=[list_reply([cm("a", "5")], "10"),
               list_reply([cm("a", "5"), cm("b", "11"), cm("c", "12")], "12")],
        watches=[watch_reply([{"type": "ADDED", "object": cm("b", "11")}, b"{garbage, not json\n"],
                             hold=True),
                 IDLE])

    def check(r: Reflector, store: ThreadSafeStore) -> None:
        wait_until(lambda: rv_of(store, "default/c") == "12", what="relist")
        wait_until(lambda: len(script.watch_queries) == 2)
        assert script.list_queries[0] == {"resourceVersion": "0", "limit": "500"}
        assert script.list_queries[1] == {"resourceVersion": "11"}  # relist from the last RV, unpaginated
        assert script.watch_queries[1]["resourceVersion"] == "12"
        assert r.last_sync_resource_version == "12"

    logs = run_reflector(script, check)
    bad = [e for e in logs if e["event"] == "watch ended with error; relisting"]
    assert len(bad) == 1 and "unable to decode an event from the watch stream" in bad[0]["error"]
    assert bad[0]["log_level"] == "warning"


def test_error_event_is_logged_and_relisted() -> None:
    status = status_body(500, "InternalError", "etcdserver: request timed out")
    error_event = {"type": "ERROR", "object": status}
    script = Script(
        lists=[list_reply([cm("a", "5")], "10"), list_reply([cm("a", "13")], "13")],
        watches=[watch_reply([{"type": "MODIFIED", "object": cm("a", "11")}, error_event], hold=True), IDLE])

    def check(r: Reflector, store: ThreadSafeStore) -> None:
        wait_until(lambda: rv_of(store, "default/a") == "13", what="relist")
        assert script.list_queries[1] == {"resourceVersion": "11"}

    logs = run_reflector(script, check)
    bad = [e for e in logs if e["event"] == "watch ended with error; relisting"]
    assert len(bad) == 1 and "etcdserver: request timed out" in bad[0]["error"]


def test_expired_error_event_relists_from_the_last_resource_version() -> None:
    expired = {"type": "ERROR", "object": status_body(410, "Expired", "too old resource version: 10 (50)")}
    script = Script(lists=[list_reply([cm("a", "5")], "10"), list_reply([cm("a", "50")], "50")],
                    watches=[watch_reply([expired]), IDLE])

    def check(r: Reflector, store: ThreadSafeStore) -> None:
        wait_until(lambda: rv_of(store, "default/a") == "50", what="relist")
        assert script.list_queries[1] == {"resourceVersion": "10"}

    logs = run_reflector(script, check)
    assert any(e["event"] == "watch resourceVersion expired; relisting" for e in logs)


def test_stream_closed_mid_object_rewatches_without_relist() -> None:
    script = Script(
        lists=[list_reply([cm("a", "5")], "10")],
        watches=[watch_reply([{"type": "ADDED", "object": cm("b", "11")},
                              b'{"type": "MODIFIED", "object": {"metadata": {"na'], abort=True),
                 watch_reply([{"type": "MODIFIED", "object": cm("b", "12", x="y")}], hold=True),
                 IDLE])

    def check(r: Reflector, store: ThreadSafeStore) -> None:
        wait_until(lambda: rv_of(store, "default/b") == "12", what="re-watch")
        assert len(script.list_queries) == 1  # no relist
        assert script.watch_queries[1]["resourceVersion"] == "11"

    logs = run_reflector(script, check)
    assert any(e["event"] == "watch stream closed in the middle of an event; discarding the partial event"
               for e in logs)


def test_expired_continue_token_restarts_with_a_full_list() -> None:
    script = Script(
        lists=[list_reply([cm("a", "3"), cm("b", "4")], "10", cont="tok1"),
               status_reply(410, "Expired", "The provided continue parameter is too old to display a "
                                             "consistent list result. You can start a new list without the "
                                             "continue parameter."),
               list_reply([cm("a", "3"), cm("c", "15")], "20")],
        watches=[IDLE])

    def check(r: Reflector, store: ThreadSafeStore) -> None:
        wait_until(lambda: len(script.watch_queries) >= 1, what="watch")
        assert sorted(store.list_keys()) == ["default/a", "default/c"]  # no page glued from the old snapshot
        assert script.list_queries[1] == {"limit": "4", "continue": "tok1"}  # twice the first page
        assert script.list_queries[2] == {}  # full list, most recent
        assert script.watch_queries[0]["resourceVersion"] == "20"

    logs = run_reflector(script, check, page_size=2)
    warn = [e for e in logs if e["event"] == "list continue token expired; restarting with a full list"]
    assert len(warn) == 1 and "too old" in warn[0]["error"]


def test_500_on_list_backs_off_and_retries() -> None:
    failures = [status_reply(500, "InternalError", "boom")] * 7
    script = Script(lists=[*failures, list_reply([cm("a", "5")], "10")], watches=[IDLE])

    def check(r: Reflector, store: ThreadSafeStore) -> None:
        wait_until(lambda: store.get_by_key("default/a") is not None, what="list after failures")
        assert r.healthy

    logs = run_reflector(script, check)
    # The client retried 5 times inside one call; the reflector logged the failure once and tried again.
    assert sum(e["event"] == "list and watch failed" for e in logs) == 1


def test_unreachable_server_is_logged_and_the_thread_keeps_trying() -> None:
    from tests.unit.test_client import free_port

    store = ThreadSafeStore()
    client = fast_client(f"http://127.0.0.1:{free_port()}")
    with structlog.testing.capture_logs() as logs:
        r = Reflector(client, CONFIGMAPS, store, backoff=Backoff(initial=0.01, cap=0.05))
        r.start()
        try:
            wait_until(lambda: sum(e["event"] == "list and watch failed" for e in logs) >= 3)
            assert r.is_alive() and not r.healthy
            assert r.last_error is not None and "ConnectionRefused" in r.last_error
        finally:
            r.stop()
    assert not r.is_alive()
