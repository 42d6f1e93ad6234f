"""The command line: NIC's flag names, Go-style booleans, and clear errors for bad values."""

from __future__ import annotations

import pytest

from ingressctl.cli import parse_args


def test_defaults_match_nic() -> None:
    s = parse_args([], environ={})
    assert s.controller.ingress_class == "nginx"
    assert s.serving.ready_status_port == 8081
    assert s.serving.prometheus_metrics_listen_port == 9113
    assert s.nginx.reload_timeout_ms == 60000
    assert s.leader_election.enabled is True
    assert s.leader_election.lock_name == "nginx-ingress-leader-election"
    assert (s.nginx.http_port, s.nginx.https_port) == (80, 443)
    assert s.kube.watch_namespaces == ()
    assert s.controller.report_ingress_status is False


@pytest.mark.parametrize(("argv", "expected"), [
    (["--enable-leader-election=false"], False),
    (["--enable-leader-election", "false"], False),
    (["--enable-leader-election"], True),
    (["--enable-leader-election=true"], True),
])
def test_go_style_booleans(argv: list[str], expected: bool) -> None:
    assert parse_args(argv, environ={}).leader_election.enabled is expected


def test_full_flag_set_parses() -> None:
    s = parse_args([
        "--kubeconfig", "/tmp/kc", "--watch-namespace", "a,b", "--nginx-configmaps", "nginx/cfg",
        "--default-server-tls-secret", "nginx/default", "--report-ingress-status", "--external-service", "lb",
        "--enable-snippets", "--nginx-binary", "/usr/sbin/nginx", "--nginx-conf-dir", "/tmp/c",
        "--nginx-run-dir", "/tmp/r", "--default-http-listener-port", "8080",
        "--default-https-listener-port", "8443", "--health-status", "--log-format", "json",
        "--log-level", "debug", "--enable-prometheus-metrics", "--enable-latency-metrics",
    ], environ={"POD_NAMESPACE": "nginx-ingress", "POD_NAME": "ic-0"})
    assert s.kube.watch_namespaces == ("a", "b")
    assert s.kube.pod_namespace == "nginx-ingress" and s.kube.pod_name == "ic-0"
    assert s.controller.nginx_configmaps == "nginx/cfg"
    assert s.nginx.http_port == 8080 and s.nginx.https_port == 8443
    assert s.serving.enable_latency_metrics is True
    assert s.log.format == "json"


@pytest.mark.parametrize("argv", [
    ["--health-status-uri", "/"],
    ["--health-status-uri", "/a b"],
    ["--health-status-uri", "/x;return 200"],
    ["--nginx-configmaps", "no-slash"],
    ["--watch-namespace", "Bad_NS"],
    ["--leader-election-lock-name", "UPPER"],
    ["--default-http-listener-port", "70000"],
    ["--nginx-reload-timeout", "0"],
    ["--enable-snippets=maybe"],
    ["--log-format", "glog2"],
    ["--default-http-listener-port", "443"],
])
def test_invalid_values_exit_with_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv, environ={})
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_latency_metrics_need_prometheus(capsys: pytest.CaptureFixture[str]) -> None:
    s = parse_args(["--enable-latency-metrics"], environ={})
    assert s.serving.enable_latency_metrics is False
    assert "needs --enable-prometheus-metrics" in capsys.readouterr().err
