"""The metrics HTTP server on an ephemeral port: /metrics in the text format (plain and gzip), the index page,
404s, HEAD, a failing collector answered with 500 while the server keeps serving, and ControllerMetrics'
start/stop."""

from __future__ import annotations

import gzip
import http.client
import os
import tempfile
from collections.abc import Iterator

import pytest
from prometheus_client import Gauge
from prometheus_client.metrics_core import Metric

from ingressctl.metrics import ControllerMetrics, MetricsServer, new_registry
from ingressctl.metrics.exposition import CONTENT_TYPE
from ingressctl.nginx.stub_status import StubStatus
from tests.unit.test_metrics_collectors import parse_samples


def request(port: int, path: str, method: str = "GET",
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


class Flaky:
    def __init__(self) -> None:
        self.fail = False

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> list[Metric]:
        if self.fail:
            raise RuntimeError("collector exploded")
        return []


@pytest.fixture
def served() -> Iterator[tuple[MetricsServer, Flaky]]:
    reg = new_registry()
    Gauge("nginx_ingress_controller_demo", "A demo gauge", ["class"], registry=reg).labels("nginx").set(7)
    flaky = Flaky()
    reg.register(flaky)
    server = MetricsServer(reg, host="127.0.0.1", port=0)
    server.start()
    yield server, flaky
    server.stop()


def test_metrics_endpoint(served: tuple[MetricsServer, Flaky]) -> None:
    server, _ = served
    assert server.port != 0
    status, headers, body = request(server.port, "/metrics")
    assert status == 200
    assert headers["content-type"] == CONTENT_TYPE
    assert parse_samples(body.decode()) == {
        ("nginx_ingress_controller_demo", frozenset({("class", "nginx")})): 7.0}

    status, headers, zipped = request(server.port, "/metrics?x=1", headers={"Accept-Encoding": "gzip"})
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert gzip.decompress(zipped) == body

    status, headers, empty = request(server.port, "/metrics", method="HEAD")
    assert status == 200 and empty == b"" and int(headers["content-length"]) == len(body)


def test_index_and_not_found(served: tuple[MetricsServer, Flaky]) -> None:
    server, _ = served
    status, headers, body = request(server.port, "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b"href='/metrics'" in body
    status, _, _ = request(server.port, "/nope")
    assert status == 404


def test_failing_collector_gives_500_and_the_server_goes_on(served: tuple[MetricsServer, Flaky]) -> None:
    server, flaky = served
    flaky.fail = True
    status, _, body = request(server.port, "/metrics")
    assert status == 500 and b"collector exploded" in body
    flaky.fail = False
    status, _, _ = request(server.port, "/metrics")
    assert status == 200


def test_stop_closes_the_port_and_is_idempotent() -> None:
    server = MetricsServer(new_registry(), host="127.0.0.1", port=0)
    server.start()
    port = server.port
    with pytest.raises(RuntimeError, match="already started"):
        server.start()
    server.stop()
    server.stop()
    with pytest.raises(OSError):
        request(port, "/metrics")


def test_controller_metrics_start_and_stop() -> None:
    run_dir = tempfile.mkdtemp(prefix="mtr-")
    try:
        m = ControllerMetrics("nginx", run_dir=run_dir, host="127.0.0.1", port=0, enable_latency=True,
                              stub_status_fetch=lambda: StubStatus(1, 1, 1, 1, 0, 1, 0),
                              master_pid=lambda: None)
        m.start()
        try:
            assert os.path.exists(os.path.join(run_dir, "nginx-syslog.sock"))
            status, _, body = request(m.server.port, "/metrics")
            assert status == 200
            samples = parse_samples(body.decode())
            assert samples[("nginx_ingress_nginx_up", frozenset({("class", "nginx")}))] == 1
        finally:
            m.stop()
        assert not os.path.exists(os.path.join(run_dir, "nginx-syslog.sock"))
    finally:
        os.rmdir(run_dir)
