"""The composition root: what App wires up beyond the controller itself (the elector's own API client, clear
start-up errors for the metrics server, the latency access log, clean shutdown)."""

from __future__ import annotations

import os
import socket
from dataclasses import replace

import pytest

from ingressctl.app.root import LATENCY_CONFIG_NAME, App, StartupError
from tests.integration.harness import Env, rule

pytestmark = pytest.mark.integration


def test_leader_election_has_its_own_client_without_retries_and_a_short_timeout(env: Env) -> None:
    c = env.controller(enabled=True, lease_duration_s=8.0, renew_deadline_s=6.0, retry_period_s=1.0)
    app = c.app
    assert app.leader is not None and app.leader.is_leader()
    assert app.leader_client is not app.client
    assert app.leader_client._max_retries == 0
    assert app.leader_client._read_timeout == 3.0          # half the renew deadline
    assert app.client._max_retries > 0                       # the informers' client keeps retrying
    c.stop()
    lease = env.get("leases", "nginx-ingress-leader-election", namespace="default")
    assert lease["spec"].get("holderIdentity") in ("", None)  # released on stop


def test_metrics_port_in_use_is_a_clear_start_up_error_and_nothing_is_left_running(env: Env) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        settings = env.settings(enable_prometheus_metrics=True, prometheus_metrics_listen_port=port)
        app = App(settings, health_host="127.0.0.1")
        with pytest.raises(StartupError, match=f"cannot serve metrics on port {port}"):
            app.start()
    assert app.manager is not None and not app.manager.is_running()


def test_latency_access_log_only_with_latency_metrics(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("app", [rule("app.example.com", ("/", "web"))])
    plain = env.controller(enable_prometheus_metrics=True, prometheus_metrics_listen_port=0)
    conf_d = os.path.join(plain.settings.nginx.conf_dir, "conf.d")
    assert not os.path.exists(os.path.join(conf_d, LATENCY_CONFIG_NAME + ".conf"))
    assert plain.app.latency_labels is None
    plain.stop()

    # Same directories, latency on: the access log is there, NGINX accepted it, routing is unchanged.
    s = plain.settings
    latency = env.controller(replace(s, serving=replace(s.serving, enable_latency_metrics=True)))
    with open(os.path.join(conf_d, LATENCY_CONFIG_NAME + ".conf")) as f:
        text = f.read()
    assert "log_format response_time escape=json" in text
    assert f"syslog:server=unix:{latency.settings.nginx.run_dir}/nginx-syslog.sock" in text
    assert latency.get("app.example.com").backend == "web"
    assert latency.app.latency_labels is not None
    upstreams = latency.app.latency_labels.upstreams("demo/app")
    assert len(upstreams) == 1 and next(iter(upstreams)).startswith("demo-app-app.example.com-web-")
    latency.stop()

    # Off again: the file this controller did not write is removed at start-up.
    env.controller(plain.settings)
    assert not os.path.exists(os.path.join(conf_d, LATENCY_CONFIG_NAME + ".conf"))
