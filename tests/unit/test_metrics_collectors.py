"""The collectors on a dedicated registry, read back through the text exposition the server serves: names, the
`class` label everywhere, pre-created series at 0, updates, bad input; stub_status with a fake fetch; worker
processes from a fake /proc tree; the exposition format itself (Go float formatting, counter family names)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.parser import text_string_to_metric_families

from ingressctl.keys import INGRESS_KIND
from ingressctl.metrics import ControllerMetrics, generate_text, new_registry
from ingressctl.metrics.controller import ControllerMetricsCollector
from ingressctl.metrics.exposition import format_metrics, go_float
from ingressctl.metrics.manager import ManagerMetricsCollector
from ingressctl.metrics.nginx import NginxStubStatusCollector
from ingressctl.metrics.processes import NginxProcessesMetricsCollector
from ingressctl.metrics.startup import StartupMetricsCollector
from ingressctl.nginx.stub_status import StubStatus, StubStatusError

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_samples(text: str) -> Samples:
    """Sample lines of a text exposition, keyed by (name, labels). Fails on a line it cannot read."""
    out: Samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        assert m, f"bad exposition line {line!r}"
        labels = frozenset(_LABEL.findall(m.group(2) or ""))
        key = (m.group(1), labels)
        assert key not in out, f"duplicate series {line!r}"
        out[key] = float(m.group(3))
    return out


def scrape(registry: CollectorRegistry) -> Samples:
    text = generate_text(registry).decode()
    list(text_string_to_metric_families(text))  # also valid for prometheus_client's own parser
    return parse_samples(text)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def names(samples: Samples) -> set[str]:
    return {name for name, _ in samples}


# -- manager ---------------------------------------------------------------------------------------------

def test_manager_metrics_start_at_zero_with_both_reasons() -> None:
    reg = new_registry()
    ManagerMetricsCollector(reg, "nginx")
    s = scrape(reg)
    assert value(s, "nginx_ingress_controller_nginx_reloads_total",
                 **{"class": "nginx", "reason": "other"}) == 0
    assert value(s, "nginx_ingress_controller_nginx_reloads_total",
                 **{"class": "nginx", "reason": "endpoints"}) == 0
    assert value(s, "nginx_ingress_controller_nginx_reload_errors_total", **{"class": "nginx"}) == 0
    assert value(s, "nginx_ingress_controller_nginx_last_reload_status", **{"class": "nginx"}) == 0
    assert value(s, "nginx_ingress_controller_nginx_last_reload_milliseconds", **{"class": "nginx"}) == 0
    assert value(s, "nginx_ingress_controller_nginx_dynamic_updates_total", **{"class": "nginx"}) == 0
    assert value(s, "nginx_ingress_controller_nginx_dynamic_update_errors_total", **{"class": "nginx"}) == 0
    assert len(s) == 7


def test_manager_on_dynamic_update_hook_counts_updates_and_failures() -> None:
    reg = new_registry()
    mc = ManagerMetricsCollector(reg, "nginx")
    mc.on_dynamic_update(True)
    mc.on_dynamic_update(True)
    mc.on_dynamic_update(False)
    s = scrape(reg)
    cls = {"class": "nginx"}
    assert value(s, "nginx_ingress_controller_nginx_dynamic_updates_total", **cls) == 2
    assert value(s, "nginx_ingress_controller_nginx_dynamic_update_errors_total", **cls) == 1
    assert value(s, "nginx_ingress_controller_nginx_reloads_total", reason="endpoints", **cls) == 0


def test_manager_on_reload_hook_follows_nic() -> None:
    reg = new_registry()
    mc = ManagerMetricsCollector(reg, "internal")
    cls = {"class": "internal"}
    mc.on_reload(True, 123, False)
    mc.on_reload(True, 45, True)
    mc.on_reload(True, 46, True)
    s = scrape(reg)
    assert value(s, "nginx_ingress_controller_nginx_reloads_total", reason="other", **cls) == 1
    assert value(s, "nginx_ingress_controller_nginx_reloads_total", reason="endpoints", **cls) == 2
    assert value(s, "nginx_ingress_controller_nginx_last_reload_status", **cls) == 1
    assert value(s, "nginx_ingress_controller_nginx_last_reload_milliseconds", **cls) == 46

    mc.on_reload(False, 9999, False)  # a failure: counted, status 0, duration of the last success kept
    s = scrape(reg)
    assert value(s, "nginx_ingress_controller_nginx_reload_errors_total", **cls) == 1
    assert value(s, "nginx_ingress_controller_nginx_last_reload_status", **cls) == 0
    assert value(s, "nginx_ingress_controller_nginx_last_reload_milliseconds", **cls) == 46
    assert value(s, "nginx_ingress_controller_nginx_reloads_total", reason="other", **cls) == 1


def test_manager_methods_and_truncated_milliseconds() -> None:
    reg = new_registry()
    mc = ManagerMetricsCollector(reg, "nginx")
    mc.inc_reload_errors()
    mc.inc_reload_count(is_endpoints_update=False)
    mc.update_last_reload(True, 12.9)
    s = scrape(reg)
    assert value(s, "nginx_ingress_controller_nginx_last_reload_milliseconds", **{"class": "nginx"}) == 12
    assert value(s, "nginx_ingress_controller_nginx_last_reload_status", **{"class": "nginx"}) == 1
    with pytest.raises(ValueError, match="non-negative"):
        mc.update_last_reload(True, -1)
    with pytest.raises(ValueError, match="ingress class"):
        ManagerMetricsCollector(new_registry(), "")


# -- controller and start-up -------------------------------------------------------------------------------

TYPES = ("regular", "master", "minion")


def test_ingress_resources_pre_set_and_updated() -> None:
    reg = new_registry()
    cc = ControllerMetricsCollector(reg, "nginx")
    metric = "nginx_ingress_controller_ingress_resources_total"
    s = scrape(reg)
    assert {value(s, metric, type=t, **{"class": "nginx"}) for t in TYPES} == {0}
    cc.set_resources(INGRESS_KIND, {"regular": 7, "master": 2, "minion": 5})
    s = scrape(reg)
    assert [value(s, metric, type=t, **{"class": "nginx"}) for t in TYPES] == [7, 2, 5]
    cc.set_resources(INGRESS_KIND, {"regular": 1})  # missing types are 0
    s = scrape(reg)
    assert [value(s, metric, type=t, **{"class": "nginx"}) for t in TYPES] == [1, 0, 0]
    with pytest.raises(ValueError, match="unknown ingress resource types"):
        cc.set_resources(INGRESS_KIND, {"regular": 3, "virtualserver": 1})
    with pytest.raises(ValueError, match="non-negative int"):
        cc.set_resources(INGRESS_KIND, {"regular": -1})
    assert value(scrape(reg), metric, type="regular", **{"class": "nginx"}) == 1  # bad input changed nothing


def test_startup_metrics() -> None:
    reg = new_registry()
    st = StartupMetricsCollector(reg, "nginx")
    cls = {"class": "nginx"}
    p = "nginx_ingress_controller_"
    s = scrape(reg)
    for n in ("ready", "time_to_ready_seconds", "status_flush_pending", "status_flush_written",
              "status_flush_duration_seconds", "status_write_errors_total"):
        assert value(s, p + n, **cls) == 0, n

    st.mark_ready(2.5)
    st.set_ready(False)
    st.mark_ready(99.0)  # readiness came back: the time to ready stays the first one
    st.status_flush_started(4)
    st.status_flush_item("written")
    st.status_flush_item("unchanged")
    st.status_flush_item("failed")
    s = scrape(reg)
    assert value(s, p + "ready", **cls) == 1
    assert value(s, p + "time_to_ready_seconds", **cls) == 2.5
    assert value(s, p + "status_flush_pending", **cls) == 1
    assert value(s, p + "status_flush_written", **cls) == 1
    assert value(s, p + "status_write_errors_total", **cls) == 1

    st.status_flush_finished(0.75)
    st.inc_status_write_errors()
    s = scrape(reg)
    assert value(s, p + "status_flush_pending", **cls) == 0
    assert value(s, p + "status_flush_duration_seconds", **cls) == 0.75
    assert value(s, p + "status_write_errors_total", **cls) == 2
    with pytest.raises(ValueError, match="outcome"):
        st.status_flush_item("lost")
    with pytest.raises(ValueError):
        st.status_flush_started(-1)
    with pytest.raises(ValueError):
        st.mark_ready(float("nan"))


# -- stub_status -------------------------------------------------------------------------------------------

STUB = StubStatus(connections_active=3, connections_accepted=120, connections_handled=119,
                  http_requests_total=4567, connections_reading=1, connections_writing=2,
                  connections_waiting=0)


class FakeFetch:
    def __init__(self) -> None:
        self.calls = 0
        self.result: StubStatus | Exception = STUB

    def __call__(self) -> StubStatus:
        self.calls += 1
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def test_stub_status_up_with_values() -> None:
    fetch = FakeFetch()
    reg = new_registry()
    reg.register(NginxStubStatusCollector("nginx", "/nonexistent.sock", fetch=fetch))
    assert fetch.calls == 0  # registering does not scrape
    s = scrape(reg)
    assert fetch.calls == 1
    cls = {"class": "nginx"}
    expected = {
        "nginx_ingress_nginx_connections_active": 3, "nginx_ingress_nginx_connections_accepted": 120,
        "nginx_ingress_nginx_connections_handled": 119, "nginx_ingress_nginx_connections_reading": 1,
        "nginx_ingress_nginx_connections_writing": 2, "nginx_ingress_nginx_connections_waiting": 0,
        "nginx_ingress_nginx_http_requests_total": 4567, "nginx_ingress_nginx_up": 1,
    }
    assert {n: value(s, n, **cls) for n in expected} == expected
    assert len(s) == len(expected)


def test_stub_status_types_as_the_exporter_names_them() -> None:
    reg = new_registry()
    reg.register(NginxStubStatusCollector("nginx", "/x.sock", fetch=FakeFetch()))
    text = generate_text(reg).decode()
    assert "# TYPE nginx_ingress_nginx_connections_accepted counter\n" in text
    assert "# TYPE nginx_ingress_nginx_connections_handled counter\n" in text
    assert "# TYPE nginx_ingress_nginx_http_requests_total counter\n" in text
    assert "# TYPE nginx_ingress_nginx_connections_active gauge\n" in text
    assert "_created" not in text


@pytest.mark.parametrize("error", [StubStatusError("connection refused"), ValueError("bad"),
                                   RuntimeError("anything")])
def test_stub_status_error_gives_only_up_zero(error: Exception) -> None:
    fetch = FakeFetch()
    fetch.result = error
    reg = new_registry()
    reg.register(NginxStubStatusCollector("nginx", "/x.sock", fetch=fetch))
    s = scrape(reg)
    assert s == {("nginx_ingress_nginx_up", frozenset({("class", "nginx")})): 0.0}
    fetch.result = STUB  # recovers on the next scrape
    assert value(scrape(reg), "nginx_ingress_nginx_up", **{"class": "nginx"}) == 1


def test_stub_status_real_fetch_of_missing_socket_is_up_zero(tmp_path: Path) -> None:
    reg = new_registry()
    reg.register(NginxStubStatusCollector("nginx", str(tmp_path / "nginx-status.sock"), timeout=1.0))
    assert scrape(reg) == {("nginx_ingress_nginx_up", frozenset({("class", "nginx")})): 0.0}


# -- worker processes --------------------------------------------------------------------------------------

PAD = b"\0" * 40


def add_proc(root: Path, pid: int, cmdline: bytes, ppid: int = 1) -> None:
    d = root / str(pid)
    d.mkdir()
    (d / "cmdline").write_bytes(cmdline)
    (d / "stat").write_bytes(f"{pid} (nginx) S {ppid} {pid} {pid} 0 -1 4194624".encode())


def test_worker_processes_from_fake_proc(tmp_path: Path) -> None:
    add_proc(tmp_path, 100, b"nginx: master process /usr/sbin/nginx" + PAD)
    add_proc(tmp_path, 101, b"nginx: worker process" + PAD, ppid=100)
    add_proc(tmp_path, 102, b"nginx: worker process" + PAD, ppid=100)
    add_proc(tmp_path, 103, b"nginx: worker process is shutting down" + PAD, ppid=100)
    add_proc(tmp_path, 201, b"nginx: worker process" + PAD, ppid=200)  # another NGINX on the host
    metric = "nginx_ingress_controller_nginx_worker_processes_total"

    reg = new_registry()
    reg.register(NginxProcessesMetricsCollector("nginx", proc_root=str(tmp_path)))
    s = scrape(reg)
    assert value(s, metric, generation="current", **{"class": "nginx"}) == 3
    assert value(s, metric, generation="old", **{"class": "nginx"}) == 1

    pid: list[int | None] = [100]
    reg2 = new_registry()
    reg2.register(NginxProcessesMetricsCollector("nginx", proc_root=str(tmp_path), master_pid=lambda: pid[0]))
    s = scrape(reg2)
    assert value(s, metric, generation="current", **{"class": "nginx"}) == 2
    assert value(s, metric, generation="old", **{"class": "nginx"}) == 1
    # Computed on each scrape: the old worker finished draining.
    (tmp_path / "103" / "cmdline").write_bytes(b"")
    assert value(scrape(reg2), metric, generation="old", **{"class": "nginx"}) == 0
    pid[0] = None  # NGINX not running
    s = scrape(reg2)
    assert value(s, metric, generation="current", **{"class": "nginx"}) == 0


def test_worker_processes_scan_failure_is_not_a_failed_scrape(tmp_path: Path) -> None:
    def boom() -> int | None:
        raise RuntimeError("pid file unreadable")

    reg = new_registry()
    reg.register(NginxProcessesMetricsCollector("nginx", proc_root=str(tmp_path), master_pid=boom))
    assert scrape(reg) == {}


# -- registry and exposition -------------------------------------------------------------------------------

def test_controller_metrics_registry_has_no_process_metrics_and_class_everywhere() -> None:
    m = ControllerMetrics("my-class", run_dir="/nonexistent", enable_latency=True,
                          stub_status_fetch=lambda: STUB, proc_root="/nonexistent")
    s = scrape(m.registry)
    assert s
    prefixes = ("nginx_ingress_controller_", "nginx_ingress_nginx_")
    assert not [n for n in names(s) if not n.startswith(prefixes)]
    assert all(("class", "my-class") in labels for _, labels in s)


def test_go_float() -> None:
    cases = {1.0: "1", 0.0: "0", 0.1: "0.1", 2.5: "2.5", 123456.0: "123456", 1e6: "1e+06",
             1234567.0: "1.234567e+06", 0.0001: "0.0001", 0.00001: "1e-05", -3.25: "-3.25",
             float("inf"): "+Inf", float("-inf"): "-Inf", float("nan"): "NaN"}
    assert {v: go_float(v) for v in cases if v == v} == {v: s for v, s in cases.items() if v == v}
    assert go_float(float("nan")) == "NaN"


def test_exposition_escapes_and_names_families() -> None:
    reg = CollectorRegistry()
    c = Counter("demo_things_total", "Things\\counted\nhere", ["k"], registry=reg)
    c.labels('a "quoted"\\ value\n').inc(3)
    Gauge("demo_level", "Level", registry=reg).set(1.5)
    Histogram("demo_seconds", "Seconds", buckets=(1.0,), registry=reg).observe(0.5)
    Counter("demo_unused_total", "Never labelled", ["x"], registry=reg)
    text = format_metrics(reg.collect())
    assert "# HELP demo_things_total Things\\\\counted\\nhere\n" in text
    assert "# TYPE demo_things_total counter\n" in text
    assert 'demo_things_total{k="a \\"quoted\\"\\\\ value\\n"} 3\n' in text
    assert "demo_level 1.5\n" in text
    assert 'demo_seconds_bucket{le="+Inf"} 1\n' in text and "demo_seconds_count 1\n" in text
    assert "# TYPE demo_unused_total counter\n" in text
    assert "_created" not in text
    list(text_string_to_metric_families(text))
