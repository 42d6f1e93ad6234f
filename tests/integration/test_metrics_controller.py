"""Prometheus metrics of a running controller (real App, real NGINX, devcluster): every metric name NIC's
dashboards use is served on /metrics with the `class` label, with values that follow what the controller and
NGINX actually do (reloads, Ingress counts, traffic, upstream latency, NGINX going down, start-up)."""

from __future__ import annotations

import re
import urllib.request
from collections import defaultdict
from typing import Any

import pytest

from tests.helpers import wait_until
from tests.integration.harness import NS, Controller, Env, rule

pytestmark = pytest.mark.integration

C = "nginx_ingress_controller_"
N = "nginx_ingress_nginx_"

# Every name NIC's Grafana dashboard and docs rely on (docs/metrics.md), as exposed samples.
DASHBOARD_SAMPLES = [
    C + "nginx_reloads_total",
    C + "nginx_reload_errors_total",
    C + "nginx_last_reload_status",
    C + "nginx_last_reload_milliseconds",
    C + "ingress_resources_total",
    C + "workqueue_depth",
    *(C + "workqueue_queue_duration_seconds" + s for s in ("_bucket", "_sum", "_count")),
    *(C + "workqueue_work_duration_seconds" + s for s in ("_bucket", "_sum", "_count")),
    C + "nginx_worker_processes_total",
    *(C + "upstream_server_response_latency_ms" + s for s in ("_bucket", "_sum", "_count")),
    N + "connections_active",
    N + "connections_accepted",
    N + "connections_handled",
    N + "connections_reading",
    N + "connections_writing",
    N + "connections_waiting",
    N + "http_requests_total",
    N + "up",
]

Samples = dict[str, list[tuple[dict[str, str], float]]]


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text: str) -> Samples:
    """Prometheus text format (0.0.4) as Prometheus reads it: sample name -> [(labels, value)]."""
    out: Samples = defaultdict(list)
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = {k: bytes(v, "utf-8").decode("unicode_escape") for k, v in _LABEL.findall(m.group(2) or "")}
        out[m.group(1)].append((labels, float(m.group(3))))
    return out


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        return parse_exposition(r.read().decode())


def value(samples: Samples, metric: str, **labels: str) -> float | None:
    """The value of the one sample of `metric` whose labels include `labels` (None if there is none)."""
    found = [v for lbls, v in samples.get(metric, [])
             if all(lbls.get(k) == want for k, want in labels.items())]
    assert len(found) <= 1, f"{metric}{labels} matches several samples: {found}"
    return found[0] if found else None


def metrics_port(c: Controller) -> int:
    return int(c.app.metrics.server.port)


def settings(env: Env, **kw: Any) -> Any:
    kw = {"enable_prometheus_metrics": True, "prometheus_metrics_listen_port": 0,
          "enable_latency_metrics": True, "health_status": True, **kw}
    # The run dir is a private (0700) temporary directory: the controller lets NGINX's workers (another user
    # under root) reach the syslog socket in it.
    return env.settings(**kw)


def test_dashboard_metrics_follow_reloads_ingresses_traffic_and_latency(env: Env) -> None:
    web = env.backend("web")
    env.service("web")
    env.endpoints("web", [web])
    names = ["app-0", "app-1", "app-2"]
    for n in names:
        env.ingress(n, [rule(f"{n}.example.com", ("/", "web"))])
    env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nginx-config", "namespace": NS},
               "data": {"external-status-address": "1.2.3.4"}})
    c = env.controller(settings(env, nginx_configmaps=f"{NS}/nginx-config", report_ingress_status=True,
                                enabled=True))
    port = metrics_port(c)
    c.wait_backend("app-0.example.com", "/", "web")
    c.wait_idle()  # the counts are taken after each task, which ends after NGINX already routes

    m = scrape(port)
    missing = [name for name in DASHBOARD_SAMPLES if name not in m and "latency" not in name]
    assert not missing, f"metrics missing before traffic: {missing}"
    for name, samples in m.items():
        for labels, _ in samples:
            assert labels.get("class") == "nginx", f"{name}{labels} lacks class=nginx"

    # Reloads: exactly the start-up reload so far, and it succeeded.
    assert value(m, C + "nginx_reloads_total", reason="other") == c.reloads >= 1
    assert value(m, C + "nginx_reloads_total", reason="endpoints") == 0
    assert value(m, C + "nginx_reload_errors_total") == 0
    assert value(m, C + "nginx_last_reload_status") == 1
    assert (value(m, C + "nginx_last_reload_milliseconds") or 0) >= 1
    # Ingress resources by type; the types without Ingresses are there at 0.
    assert value(m, C + "ingress_resources_total", type="regular") == len(names)
    assert value(m, C + "ingress_resources_total", type="master") == 0
    assert value(m, C + "ingress_resources_total", type="minion") == 0
    # The task queue, named as NIC names it; every Ingress, Service, slice, ... went through it.
    assert value(m, C + "workqueue_depth", name="taskQueue") is not None
    assert (value(m, C + "workqueue_queue_duration_seconds_count", name="taskQueue") or 0) >= len(names)
    assert (value(m, C + "workqueue_work_duration_seconds_count", name="taskQueue") or 0) >= len(names)
    # NGINX: our master's workers, and stub_status.
    assert (value(m, C + "nginx_worker_processes_total", generation="current") or 0) >= 1
    assert value(m, N + "up") == 1
    # Start-up: ready, a time to ready, and the leader's status flush wrote every status.
    assert value(m, C + "ready") == 1
    assert (value(m, C + "time_to_ready_seconds") or 0) > 0
    wait_until(lambda: value(scrape(port), C + "status_flush_written") == len(names), "flush progress")
    m = scrape(port)
    assert value(m, C + "status_flush_pending") == 0
    assert value(m, C + "status_write_errors_total") == 0

    # Traffic: stub_status counts it; the latency histogram gets one observation per proxied request,
    # labelled with the upstream, its Service, the Ingress and the Pod behind the address.
    before = value(m, N + "http_requests_total") or 0
    hits = 7
    for _ in range(hits):
        assert c.get("app-1.example.com", "/").backend == "web"
    labels = {"service": "web", "resource_type": "ingress", "resource_name": "app-1",
              "resource_namespace": NS, "pod_name": "web", "server": web.address, "code": "200"}

    def latency_count() -> float:
        return value(scrape(port), C + "upstream_server_response_latency_ms_count", **labels) or 0

    wait_until(lambda: latency_count() >= hits, "latency observations")
    m = scrape(port)
    assert (value(m, N + "http_requests_total") or 0) >= before + hits
    upstream = next(lbls["upstream"] for lbls, _ in m[C + "upstream_server_response_latency_ms_count"]
                    if lbls.get("resource_name") == "app-1")
    assert upstream.startswith(f"{NS}-app-1-app-1.example.com-web-")
    assert not [n for n in DASHBOARD_SAMPLES if n not in m], "a dashboard metric is missing after traffic"

    # A new Ingress, then a deleted one: the count follows, and so do the reloads.
    reloads = value(m, C + "nginx_reloads_total", reason="other") or 0
    env.ingress("app-3", [rule("app-3.example.com", ("/", "web"))])
    wait_until(lambda: value(scrape(port), C + "ingress_resources_total", type="regular") == 4, "count 4")
    env.delete("ingresses", "app-1")
    wait_until(lambda: value(scrape(port), C + "ingress_resources_total", type="regular") == 3, "count 3")
    c.wait_status("app-1.example.com", "/", 404)
    m = scrape(port)
    assert (value(m, C + "nginx_reloads_total", reason="other") or 0) >= reloads + 2
    assert value(m, C + "nginx_last_reload_status") == 1
    # The deleted Ingress's latency series went with it.
    assert not [lbls for lbls, _ in m[C + "upstream_server_response_latency_ms_count"]
                if lbls.get("resource_name") == "app-1"]

    # A new endpoint: the upstream gains a server (a dynamic update, no reload: the dynamic-peers module is
    # installed) and the new Pod gets its own series.
    web2 = env.backend("web-2")
    env.endpoints("web", [web, web2])
    wait_until(lambda: (value(scrape(port), C + "nginx_dynamic_updates_total") or 0) >= 1,
               "a dynamic update")
    wait_until(lambda: c.get("app-0.example.com", "/").backend == "web-2", "traffic reaches web-2")
    m = scrape(port)
    assert value(m, C + "nginx_reloads_total", reason="endpoints") == 0
    assert value(m, C + "nginx_dynamic_update_errors_total") == 0
    wait_until(lambda: value(scrape(port), C + "upstream_server_response_latency_ms_count",
                             pod_name="web-2", resource_name="app-0", server=web2.address), "web-2's latency")


def test_nginx_down_gives_up_0_and_no_stub_status_then_up_again(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("app", [rule("app.example.com", ("/", "web"))])
    c = env.controller(settings(env, enable_latency_metrics=False))
    port = metrics_port(c)
    m = scrape(port)
    assert value(m, N + "up") == 1
    assert value(m, C + "upstream_server_response_latency_ms_count") is None

    c.manager.quit()                    # NGINX stops (a quit the App did not ask for: no restart)
    m = scrape(port)
    assert value(m, N + "up") == 0
    assert not [name for name in m if name.startswith(N) and name != N + "up"]
    assert value(m, C + "nginx_worker_processes_total", generation="current") == 0
    assert value(m, C + "ingress_resources_total", type="regular") == 1     # the rest still answers

    c.manager.restart()
    m = scrape(port)
    assert value(m, N + "up") == 1
    assert (value(m, N + "http_requests_total") or 0) >= 0
    assert c.get("app.example.com", "/").backend == "web"


def test_metrics_off_by_default_and_health_endpoints(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("app", [rule("app.example.com", ("/", "web"))])
    c = env.controller(health_status=True, health_status_uri="/healthy-nginx")
    assert c.app.metrics is None
    # --health-status: the default server answers the URI for any host; other paths still get 404.
    r = c.get("anything.example.com", "/healthy-nginx")
    assert (r.status, r.body) == (200, "healthy\n")
    assert c.get("anything.example.com", "/").status == 404
    assert c.get("app.example.com", "/").backend == "web"
    # Readiness and liveness on the ready-status port.
    with urllib.request.urlopen(f"http://127.0.0.1:{c.ready_port}/nginx-ready", timeout=10) as resp:
        assert (resp.status, resp.read()) == (200, b"Ready\n")
    with urllib.request.urlopen(f"http://127.0.0.1:{c.ready_port}/healthz", timeout=10) as resp:
        assert resp.status == 200
