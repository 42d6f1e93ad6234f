"""The metrics server against a real NGINX run by the Manager: stub_status over the unix socket (up, a
request counter that grows with real requests, up 0 alone once NGINX quits), reload metrics through the
Manager's hook, worker processes from /proc, a real latency observation from NGINX's syslog access log for a
request proxied to a real 127.0.0.1 backend, and every metric name NIC's Grafana dashboard uses."""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ingressctl.http_serving import serve_in_background
from ingressctl.k8s.workqueue import RateLimitingQueue
from ingressctl.metrics import ControllerMetrics, UpstreamServerLabels, latency_access_log, syslog_socket_path
from ingressctl.metrics.latency import LATENCY_LOG_FORMAT
from ingressctl.nginx.manager import Manager
from tests.helpers import free_port, wait_until
from tests.unit.test_metrics_collectors import Samples, parse_samples

pytestmark = pytest.mark.integration

UPSTREAM = "default-cafe-cafe.example.com-tea-svc-80"
LABELS = UpstreamServerLabels(service="tea-svc", resource_type="ingress", resource_name="cafe",
                              resource_namespace="default")
LATENCY = "nginx_ingress_controller_upstream_server_response_latency_ms"

# Every metric NIC's Grafana dashboard queries (docs/metrics.md), as sample names.
DASHBOARD_METRICS = [
    "nginx_ingress_controller_nginx_reloads_total",
    "nginx_ingress_controller_nginx_reload_errors_total",
    "nginx_ingress_controller_nginx_last_reload_status",
    "nginx_ingress_controller_nginx_last_reload_milliseconds",
    "nginx_ingress_controller_ingress_resources_total",
    "nginx_ingress_controller_workqueue_depth",
    "nginx_ingress_controller_workqueue_queue_duration_seconds_bucket",
    "nginx_ingress_controller_workqueue_work_duration_seconds_bucket",
    "nginx_ingress_controller_nginx_worker_processes_total",
    "nginx_ingress_nginx_connections_active",
    "nginx_ingress_nginx_connections_accepted",
    "nginx_ingress_nginx_connections_handled",
    "nginx_ingress_nginx_connections_reading",
    "nginx_ingress_nginx_connections_writing",
    "nginx_ingress_nginx_connections_waiting",
    "nginx_ingress_nginx_http_requests_total",
    "nginx_ingress_nginx_up",
    LATENCY + "_bucket",
]


class _Backend(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = b"tea\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def main_config(m: Manager, port: int, backend_port: int, syslog_path: str) -> str:
    """A minimal main config: the Manager's directives, the latency log format, and one proxied server."""
    return (
        m.paths.main_directives()
        + "worker_processes 1;\nevents { worker_connections 64; }\n"
        + "http {\n    access_log off;\n    default_type text/plain;\n"
        + f"    {LATENCY_LOG_FORMAT}\n"
        + m.paths.http_directives()
        + f"    upstream {UPSTREAM} {{ server 127.0.0.1:{backend_port}; }}\n"
        + "    server {\n"
        + f"        listen 127.0.0.1:{port};\n"
        + f"        {latency_access_log(syslog_path)}\n"
        + "        location = /local { return 200 'local\\n'; }\n"
        + f"        location / {{ proxy_pass http://{UPSTREAM}; }}\n"
        + "    }\n}\n"
    )


def get(port: int, path: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers={"Connection": "close"})
        r = conn.getresponse()
        return r.status, r.read().decode()
    finally:
        conn.close()


@dataclass
class Env:
    manager: Manager
    metrics: ControllerMetrics
    port: int
    backend_port: int

    def scrape(self) -> Samples:
        status, body = get(self.metrics.server.port, "/metrics")
        assert status == 200, body
        return parse_samples(body)

    def value(self, metric: str, /, **labels: str) -> float:
        return self.scrape()[(metric, frozenset({"class": "nginx", **labels}.items()))]


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    backend = ThreadingHTTPServer(("127.0.0.1", 0), _Backend)
    serve_in_background(backend, "backend")
    run_dir = tempfile.mkdtemp(prefix="mtr-")  # short: unix socket paths are limited to 107 bytes
    os.chmod(run_dir, 0o755)  # as /var/lib/nginx: workers running as another user reach the syslog socket
    m = Manager(binary="nginx", conf_dir=str(tmp_path / "conf"), run_dir=run_dir, reload_timeout_ms=30000)
    metrics = ControllerMetrics("nginx", run_dir=run_dir, host="127.0.0.1", port=0, enable_latency=True,
                                master_pid=lambda: m.master_pid)
    assert metrics.syslog is not None
    metrics.syslog.rebind_interval = 0.05  # notice quickly when an NGINX restart clears the run dir
    m.on_reload = metrics.manager.on_reload
    port = free_port()
    m.create_main_config(main_config(m, port, int(backend.server_address[1]), syslog_socket_path(run_dir)))
    pid = None
    try:
        m.start()
        pid = m.master_pid
        # After NGINX: its start-up removes stale sockets from the run dir.
        metrics.start()
        yield Env(m, metrics, port, int(backend.server_address[1]))
    finally:
        metrics.stop()
        try:
            m.quit(timeout=5)
        finally:
            if pid is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
            backend.shutdown()
            backend.server_close()
            shutil.rmtree(run_dir, ignore_errors=True)


def test_stub_status_up_and_requests_grow_then_up_zero_after_quit(env: Env) -> None:
    s = env.scrape()
    up = ("nginx_ingress_nginx_up", frozenset({("class", "nginx")}))
    requests_total = ("nginx_ingress_nginx_http_requests_total", frozenset({("class", "nginx")}))
    assert s[up] == 1
    before = s[requests_total]
    for _ in range(5):
        assert get(env.port, "/local") == (200, "local\n")
    s = env.scrape()
    assert s[requests_total] >= before + 5
    assert s[("nginx_ingress_nginx_connections_accepted", frozenset({("class", "nginx")}))] >= 5
    assert s[("nginx_ingress_nginx_connections_active", frozenset({("class", "nginx")}))] >= 1  # the scrape

    env.manager.quit(timeout=10)
    s = env.scrape()
    nginx_series = {k: v for k, v in s.items() if k[0].startswith("nginx_ingress_nginx_")}
    assert nginx_series == {up: 0.0}
    workers = "nginx_ingress_controller_nginx_worker_processes_total"
    assert s[(workers, frozenset({("class", "nginx"), ("generation", "current")}))] == 0


def test_reload_metrics_and_worker_processes(env: Env) -> None:
    workers = "nginx_ingress_controller_nginx_worker_processes_total"
    wait_until(lambda: env.value(workers, generation="current") == 1, "one current worker")
    assert env.value("nginx_ingress_controller_nginx_last_reload_status") == 0
    env.manager.reload()
    env.manager.reload(is_endpoints_update=True)
    assert env.value("nginx_ingress_controller_nginx_reloads_total", reason="other") == 1
    assert env.value("nginx_ingress_controller_nginx_reloads_total", reason="endpoints") == 1
    assert env.value("nginx_ingress_controller_nginx_last_reload_status") == 1
    assert env.value("nginx_ingress_controller_nginx_last_reload_milliseconds") == env.manager.last_reload_ms

    env.manager.create_config("broken", "server { this is not nginx; }\n")
    with pytest.raises(Exception, match="reload failed"):
        env.manager.reload()
    assert env.value("nginx_ingress_controller_nginx_reload_errors_total") == 1
    assert env.value("nginx_ingress_controller_nginx_last_reload_status") == 0
    wait_until(lambda: env.value(workers, generation="current") == 1, "one current worker after reloads")


def test_latency_observation_from_a_real_proxied_request(env: Env) -> None:
    latency = env.metrics.latency
    assert latency is not None
    server = f"127.0.0.1:{env.backend_port}"
    # Unmapped at first: the observation is dropped.
    assert get(env.port, "/tea") == (200, "tea\n")
    messages = "nginx_ingress_controller_latency_syslog_messages_total"
    wait_until(lambda: env.value(messages, result="unmapped") == 1, "the unmapped message")
    assert not [k for k in env.scrape() if k[0].startswith(LATENCY)]

    latency.set_upstream_peers(UPSTREAM, LABELS, {server: "tea-7d9f-abcde"})
    assert get(env.port, "/tea") == (200, "tea\n")
    assert get(env.port, "/local") == (200, "local\n")  # not proxied: skipped
    labels = {"upstream": UPSTREAM, "server": server, "code": "200", "service": "tea-svc",
              "resource_type": "ingress", "resource_name": "cafe", "resource_namespace": "default",
              "pod_name": "tea-7d9f-abcde"}
    wait_until(lambda: env.value(LATENCY + "_count", **labels) == 1, "one latency observation")
    assert env.value(LATENCY + "_bucket", le="+Inf", **labels) == 1
    wait_until(lambda: env.value(messages, result="skipped") == 1, "the skipped message")
    assert env.value(messages, result="malformed") == 0
    assert env.value(messages, result="observed") == 1

    # The backend Pod went away: its series goes with it.
    latency.set_upstream_peers(UPSTREAM, LABELS, {})
    assert not [k for k in env.scrape() if k[0].startswith(LATENCY)]


def test_latency_survives_an_nginx_restart(env: Env) -> None:
    latency, listener = env.metrics.latency, env.metrics.syslog
    assert latency is not None and listener is not None
    latency.set_upstream_peers(UPSTREAM, LABELS, {f"127.0.0.1:{env.backend_port}": "tea-pod"})
    env.manager.quit(timeout=10)
    env.manager.start()  # removes NGINX's stale sockets, never the controller's syslog socket
    assert listener.rebinds == 0
    assert env.value("nginx_ingress_nginx_up") == 1
    assert get(env.port, "/tea") == (200, "tea\n")
    labels = {"upstream": UPSTREAM, "server": f"127.0.0.1:{env.backend_port}", "code": "200",
              "service": "tea-svc", "resource_type": "ingress", "resource_name": "cafe",
              "resource_namespace": "default", "pod_name": "tea-pod"}
    wait_until(lambda: env.value(LATENCY + "_count", **labels) == 1,
               "a latency observation after the restart")


def test_every_dashboard_metric_is_in_a_scrape(env: Env) -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue(name="taskQueue",
                                                      metrics_provider=env.metrics.workqueue)
    try:
        queue.add("ingress/default/cafe")
        item, _ = queue.get(timeout=10)
        assert item is not None
        queue.done(item)
        assert env.metrics.latency is not None
        env.metrics.latency.set_upstream_peers(UPSTREAM, LABELS, {f"127.0.0.1:{env.backend_port}": "tea-pod"})
        assert get(env.port, "/tea") == (200, "tea\n")
        wait_until(lambda: any(k[0] == LATENCY + "_bucket" for k in env.scrape()), "a latency observation")
        s = env.scrape()
        present = {name for name, _ in s}
        assert [n for n in DASHBOARD_METRICS if n not in present] == []
        assert all(("class", "nginx") in labels for _, labels in s)
        assert env.value("nginx_ingress_controller_workqueue_depth", name="taskQueue") == 0
        assert env.value("nginx_ingress_controller_workqueue_adds_total", name="taskQueue") == 1
    finally:
        queue.shut_down()
        queue.join(10)
