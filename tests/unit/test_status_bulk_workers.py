"""StatusUpdater.bulk_update with several workers: every key once, at most `workers` writes at a time,
failures counted, should_stop honoured, an unexpected error re-raised to the caller, no thread left behind."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import pytest

from ingressctl.controller.status import StatusUpdater


class CountingClient:
    """update_status records keys and the highest number of calls in flight; a gate holds calls until enough
    are waiting, so a test can see the pool's real concurrency without sleeping."""

    def __init__(self, fail: set[str] | None = None, gate: int = 0) -> None:
        self.lock = threading.Lock()
        self.written: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.fail = fail or set()
        self._gate = threading.Barrier(gate) if gate > 1 else None

    def get(self, rt: Any, namespace: str | None, name: str) -> dict[str, Any]:
        raise RuntimeError("get is not expected")

    def update_status(self, rt: Any, namespace: str | None, name: str,
                      body: dict[str, Any]) -> dict[str, Any]:
        key = f"{namespace}/{name}"
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self._gate is not None:
                with contextlib.suppress(threading.BrokenBarrierError):
                    self._gate.wait(timeout=30)
            if key in self.fail:
                raise RuntimeError(f"boom {key}")
            with self.lock:
                self.written.append(key)
            return body
        finally:
            with self.lock:
                self.in_flight -= 1


def updater(client: CountingClient, keys: list[str]) -> StatusUpdater:
    cache = {k: {"metadata": {"name": k.split("/")[1], "namespace": "ns", "resourceVersion": "1"}}
             for k in keys}
    u = StatusUpdater(client, get_cached=cache.get, report_ingress_status=True, ingress_rt="ingresses")
    u.save_status_from_external_status("10.0.0.1")
    return u


def status_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("status-")]


def test_every_key_once_with_at_most_workers_in_flight() -> None:
    keys = [f"ns/i{i}" for i in range(200)]
    client = CountingClient(gate=4)
    u = updater(client, keys)
    outcomes: list[str] = []
    assert u.bulk_update(keys, workers=4, on_item=outcomes.append) == 0
    assert sorted(client.written) == sorted(keys)
    assert client.max_in_flight == 4          # the gate only opens with 4 calls waiting: all workers ran
    assert outcomes.count("written") == 200
    assert not status_threads()


def test_failures_are_counted_and_reported() -> None:
    keys = [f"ns/i{i}" for i in range(30)]
    client = CountingClient(fail={"ns/i3", "ns/i17"})
    u = updater(client, keys)
    outcomes: list[str] = []
    assert u.bulk_update(keys, workers=10, on_item=outcomes.append) == 2
    assert len(client.written) == 28 and outcomes.count("failed") == 2


def test_fewer_keys_than_workers() -> None:
    client = CountingClient()
    u = updater(client, ["ns/a"])
    assert u.bulk_update(["ns/a"], workers=10) == 0
    assert client.written == ["ns/a"]
    assert u.bulk_update([], workers=10) == 0


def test_should_stop_skips_the_remaining_keys() -> None:
    keys = [f"ns/i{i}" for i in range(100)]
    client = CountingClient()
    u = updater(client, keys)
    stop = threading.Event()

    def on_item(outcome: str) -> None:
        if len(client.written) >= 10:
            stop.set()

    assert u.bulk_update(keys, workers=5, on_item=on_item, should_stop=stop.is_set) == 0
    assert 10 <= len(client.written) < 100


def test_an_unexpected_error_reaches_the_caller_and_stops_the_workers() -> None:
    keys = [f"ns/i{i}" for i in range(100)]
    client = CountingClient()
    u = updater(client, keys)
    calls = 0

    def should_stop() -> bool:
        nonlocal calls
        calls += 1
        if calls >= 5:
            raise ValueError("broken stop check")
        return False

    with pytest.raises(ValueError, match="broken stop check"):
        u.bulk_update(keys, workers=3, should_stop=should_stop)
    assert len(client.written) < 100
    assert not status_threads()
