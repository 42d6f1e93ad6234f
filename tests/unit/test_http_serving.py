"""Every HTTP server the controller, the demo and the test suites run polls for shutdown every 50 ms, not
every half second (`serve_forever`'s default), so stopping one never waits on the poll."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from ingressctl.demo.backend import Backend
from ingressctl.health import HealthServer
from ingressctl.http_serving import POLL_INTERVAL
from ingressctl.metrics.server import MetricsServer
from tests.helpers import wait_until
from tests.unit.test_client import FakeApiServer, Reply


@pytest.fixture
def poll_intervals(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The poll interval of every serve_forever started while the test runs."""
    seen: list[float] = []
    original = socketserver.BaseServer.serve_forever
    lock = threading.Lock()

    def spy(self: socketserver.BaseServer, poll_interval: float = 0.5) -> None:
        with lock:
            seen.append(poll_interval)
        original(self, poll_interval)

    monkeypatch.setattr(socketserver.BaseServer, "serve_forever", spy)
    yield seen


def _health() -> Callable[[], None]:
    s = HealthServer(is_ready=lambda: True, host="127.0.0.1", port=0)
    s.start()
    return s.stop


def _metrics() -> Callable[[], None]:
    s = MetricsServer(CollectorRegistry(), host="127.0.0.1", port=0)
    s.start()
    return s.stop


def _backend() -> Callable[[], None]:
    return Backend("web").start().stop


def _fake_api() -> Callable[[], None]:
    server = FakeApiServer(lambda request: Reply(200, b"{}"))
    server.__enter__()
    return lambda: server.__exit__(None, None, None)


@pytest.mark.parametrize("start", [_health, _metrics, _backend, _fake_api],
                         ids=["readiness", "metrics", "demo-backend", "tests-fake-api"])
def test_servers_poll_for_shutdown_every_50_ms(start: Callable[[], Any], poll_intervals: list[float]) -> None:
    stop = start()
    try:
        wait_until(lambda: poll_intervals, "serve_forever running")
        assert poll_intervals == [POLL_INTERVAL]
    finally:
        stop()
    assert POLL_INTERVAL <= 0.05
