"""Resilience: deletes missed during a watch gap (tombstones), API faults, --watch-namespace, NGINX dying."""

from __future__ import annotations

import os
import signal
import urllib.error
import urllib.request

import pytest

from tests.helpers import wait_until
from tests.integration.harness import NS, Controller, Env, rule

pytestmark = pytest.mark.integration


def serve(env: Env, *names: str) -> None:
    for name in names:
        env.service(name)
        env.endpoints(name, [env.backend(name)])


def test_delete_missed_during_a_watch_gap_is_applied(env: Env) -> None:
    """The watch breaks, the Ingress is deleted and the history compacted: the relist sees it gone and
    delivers a tombstone, which the controller handles (NIC drops these)."""
    serve(env, "web")
    env.ingress("keep", [rule("keep.example.com", ("/", "web"))])
    env.ingress("gone", [rule("gone.example.com", ("/", "web"))])
    c = env.controller()
    c.wait_backend("gone.example.com", "/", "web")
    f = env.cluster.faults
    f.set_error_rate(500, 1.0, verb="watch", resource="ingresses")
    f.set_error_rate(500, 1.0, verb="list", resource="ingresses")
    f.drop_watches()
    env.delete("ingresses", "gone")
    f.compact()
    f.reset()
    c.wait_status("gone.example.com", "/", 404)
    assert c.get("keep.example.com", "/").backend == "web"
    assert c.lbc.stats.sync_errors == 0


def test_api_errors_during_startup_are_retried(env: Env) -> None:
    serve(env, "web")
    env.ingress("app", [rule("app.example.com", ("/", "web"))])
    env.cluster.faults.fail_next(500, count=3, verb="list", resource="ingresses")
    env.cluster.faults.fail_next(429, count=2, verb="list", resource="services", retry_after=1)
    c = env.controller()
    c.wait_backend("app.example.com", "/", "web")
    assert c.reloads == 1


def test_watch_namespace(env: Env) -> None:
    env.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    serve(env, "web")
    env.service("web", namespace="other")
    env.endpoints("web", [env.backend("other-web")], namespace="other")
    env.ingress("mine", [rule("mine.example.com", ("/", "web"))])
    env.ingress("theirs", [rule("theirs.example.com", ("/", "web"))], namespace="other")
    c = env.controller(watch_namespaces=(NS,))
    c.wait_backend("mine.example.com", "/", "web")
    assert c.get("theirs.example.com", "/").status == 404
    assert env.events("theirs", namespace="other") == []


def _kill_nginx(c: Controller) -> int:
    pid = int(c.manager.master_pid)
    os.killpg(pid, signal.SIGKILL)
    return pid


def test_nginx_dies_and_is_restarted(env: Env) -> None:
    serve(env, "web")
    env.ingress("app", [rule("app.example.com", ("/", "web"))])
    c = env.controller()
    c.wait_backend("app.example.com", "/", "web")
    old = _kill_nginx(c)
    wait_until(lambda: c.app.nginx_restarts == 1 and c.manager.master_pid not in (None, old), "restart")
    c.wait_backend("app.example.com", "/", "web")
    assert c.app.is_ready()
    # And it keeps following changes.
    env.ingress("app", [rule("app.example.com", ("/", "web")), rule("b.example.com", ("/", "web"))])
    c.wait_backend("b.example.com", "/", "web")


def _status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_nginx_that_cannot_restart_turns_readiness_off(env: Env) -> None:
    serve(env, "web")
    env.ingress("app", [rule("app.example.com", ("/", "web"))])
    c = env.controller()
    c.wait_backend("app.example.com", "/", "web")
    assert _status(c.ready_port, "/nginx-ready") == 200
    # Someone breaks nginx.conf on disk, then NGINX dies: the one restart fails.
    with open(c.manager.main_config_path, "w") as f:
        f.write("this is not an nginx config;\n")
    _kill_nginx(c)
    wait_until(lambda: _status(c.ready_port, "/nginx-ready") == 503, "readiness off")
    assert _status(c.ready_port, "/healthz") == 503
    assert c.app.nginx_restarts == 0
