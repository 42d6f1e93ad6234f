"""Restart: the same config comes back, changes made while the controller was down are not lost, and the new
process reloads NGINX exactly once. Also `python -m ingressctl --kubeconfig PATH` as a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from typing import Any

import pytest
import requests_unixsocket

from ingressctl.configs.configurator import CERTIFICATE_MAP_FILE, SPARES_FILE
from ingressctl.nginx.paths import CONFIG_VERSION_SOCKET_NAME
from tests.helpers import free_port, http_get, process_gone, wait_until
from tests.integration.harness import Env, rule

pytestmark = pytest.mark.integration


def conf_d(conf_dir: str) -> dict[str, str]:
    d = os.path.join(conf_dir, "conf.d")
    return {n: open(os.path.join(d, n)).read() for n in sorted(os.listdir(d)) if n.endswith(".conf")}


def test_restart_same_config_no_lost_update_one_reload(env: Env) -> None:
    for name in ("a", "b", "c"):
        env.service(name)
        env.endpoints(name, [env.backend(name)])
    env.ingress("a", [rule("a.example.com", ("/", "a"))])
    env.ingress("b", [rule("b.example.com", ("/", "b"))])
    settings = env.settings()
    first = env.controller(settings)
    first.wait_backend("a.example.com", "/", "a")
    env.ingress("b", [rule("b.example.com", ("/", "b"), ("/c", "c"))])      # a change while running
    first.wait_backend("b.example.com", "/c", "c")
    first.wait_idle()
    files_before = conf_d(settings.nginx.conf_dir)
    first.stop()

    # Same cluster, nothing changed: byte-identical config, one reload.
    second = env.controller(settings)
    second.wait_idle()
    assert conf_d(settings.nginx.conf_dir) == files_before
    assert second.reloads == 1
    assert second.get("b.example.com", "/c").backend == "c"
    second.stop()

    # Changes while no controller runs: an update, a delete and a create. None is lost.
    env.ingress("a", [rule("a.example.com", ("/", "c"))])
    env.delete("ingresses", "b")
    env.ingress("d", [rule("d.example.com", ("/", "b"))])
    third = env.controller(settings)
    assert third.get("a.example.com", "/").backend == "c"
    assert third.get("b.example.com", "/c").status == 404
    assert third.get("d.example.com", "/").backend == "b"
    assert third.reloads == 1
    # the resources' files (and the certificate map where certificates are loaded at handshakes, and the
    # routes' spare upstreams)
    static = {f"{CERTIFICATE_MAP_FILE}.conf", f"{SPARES_FILE}.conf"}
    assert sorted(set(conf_d(settings.nginx.conf_dir)) - static) == ["demo-a.conf", "demo-d.conf"]


def _served_version(run_dir: str) -> int:
    sock = f"{run_dir}/{CONFIG_VERSION_SOCKET_NAME}".replace("/", "%2F")
    with requests_unixsocket.Session() as s:
        return int(s.get(f"http+unix://{sock}/configVersion", timeout=5).text.strip())


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/nginx-ready", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


class Proc:
    """`python -m ingressctl` as a child process."""

    def __init__(self, env: Env, conf_dir: str, run_dir: str, http_port: int) -> None:
        self.ready_port = free_port()
        self.run_dir = run_dir
        self.log_path = os.path.join(env.tmp, f"controller-{self.ready_port}.log")
        log = open(self.log_path, "w")  # noqa: SIM115 - handed to the child; closed below
        self.p = subprocess.Popen(
            [sys.executable, "-m", "ingressctl", "--kubeconfig", env.kubeconfig, "--nginx-conf-dir", conf_dir,
             "--nginx-run-dir", run_dir, "--default-http-listener-port", str(http_port),
             "--default-https-listener-port", str(free_port()), "--ready-status-port", str(self.ready_port),
             "--nginx-status=false", "--enable-leader-election=false", "--log-level", "debug"],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "POD_NAMESPACE": "default",
                                                       "POD_NAME": "ingressctl-proc"},
        )
        log.close()

    def output(self) -> str:
        with open(self.log_path) as f:
            return f.read()[-3000:]

    def wait_ready(self) -> None:
        wait_until(lambda: (self.p.poll() is None and _ready(self.ready_port)) or self.p.poll() is not None,
                   "controller process ready")
        assert self.p.poll() is None, self.output()

    def nginx_pid(self) -> int:
        return int(open(os.path.join(self.run_dir, "nginx.pid")).read().strip())


def test_process_killed_and_restarted(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("app", [rule("app.example.com", ("/", "web"))])
    conf_dir = os.path.join(env.tmp, "proc-conf")
    run_dir = env.settings().nginx.run_dir
    http_port = free_port()
    p1 = Proc(env, conf_dir, run_dir, http_port)
    try:
        p1.wait_ready()
        wait_until(lambda: http_get(http_port, "app.example.com", "/").backend == "web", "routing (process)")
        assert _served_version(run_dir) == 1            # version 0 at start, exactly one reload
        nginx = p1.nginx_pid()
        # The Pod dies: the controller and its NGINX are killed (SIGKILL, no clean-up).
        p1.p.kill()
        p1.p.wait(30)
        os.killpg(nginx, signal.SIGKILL)
        wait_until(lambda: process_gone(nginx), "nginx gone")
    finally:
        _reap(p1.p)

    env.ingress("app", [rule("app.example.com", ("/", "web")), rule("new.example.com", ("/", "web"))])
    p2 = Proc(env, conf_dir, run_dir, http_port)
    try:
        p2.wait_ready()
        assert http_get(http_port, "new.example.com", "/").backend == "web"
        assert http_get(http_port, "app.example.com", "/").backend == "web"
        assert _served_version(run_dir) == 1
        # SIGTERM: graceful shutdown, exit 0, NGINX quits too.
        nginx = p2.nginx_pid()
        p2.p.send_signal(signal.SIGTERM)
        assert p2.p.wait(60) == 0, p2.output()
        wait_until(lambda: process_gone(nginx), "nginx quit with the controller")
    finally:
        _reap(p2.p)


def test_missing_ingress_class_is_fatal_with_a_clear_message(env: Env) -> None:
    env.delete("ingressclasses", "nginx", namespace=None)
    run_dir = env.settings().nginx.run_dir
    p = Proc(env, os.path.join(env.tmp, "c"), run_dir, free_port())
    try:
        assert p.p.wait(60) == 1
        assert "IngressClass 'nginx' does not exist" in p.output()
    finally:
        _reap(p.p)


def _reap(p: Any) -> None:
    if p.poll() is None:
        p.kill()
        p.wait(30)
