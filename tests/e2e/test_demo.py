"""The `make run` path: `python -m ingressctl.demo` with the repository's examples/."""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading

import pytest

from tests.helpers import free_port, http_get, https_get, process_gone, wait_until

pytestmark = pytest.mark.e2e

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_demo_check_passes() -> None:
    with tempfile.TemporaryDirectory(prefix="ic-demo-", dir="/tmp") as run_dir:
        p = subprocess.run([sys.executable, "-m", "ingressctl.demo", "--check", "--run-dir", run_dir],
                           cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "demo check passed" in p.stdout
    for path in ("/reports-runner", "/reports-cron", "/reports-admin"):
        assert re.search(rf"PASS  curl -H 'Host: reports.example.com' http://127.0.0.1:\d+{path} ", p.stdout)
    assert re.search(r"PASS  curl http://127.0.0.1:\d+/  -> 200 'tcp-echo GET tcp.example/' \(TCP through "
                     r"TransportServer demo/tcp-echo\)", p.stdout)
    assert "FAIL" not in p.stdout


def test_demo_check_fails_when_a_route_is_broken() -> None:
    """The check can fail: a manifest whose Ingress points at a Service without backends."""
    with tempfile.TemporaryDirectory(prefix="ic-demo-", dir="/tmp") as run_dir:
        broken = os.path.join(run_dir, "broken.yaml")
        with open(broken, "w") as f:
            f.write(
                "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: broken, namespace: demo}\n"
                "spec:\n  ingressClassName: nginx\n  rules:\n  - host: broken.example.com\n    http:\n"
                "      paths:\n      - path: /\n        pathType: Prefix\n"
                "        backend: {service: {name: missing, port: {number: 80}}}\n")
        p = subprocess.run([sys.executable, "-m", "ingressctl.demo", "--check", "--run-dir", run_dir,
                            "--manifests", os.path.join(REPO, "examples"), broken],
                           cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "FAIL  curl -H 'Host: broken.example.com'" in p.stdout
    assert "demo check FAILED" in p.stdout


def test_demo_runs_until_interrupted_and_its_curl_commands_work() -> None:
    with tempfile.TemporaryDirectory(prefix="ic-demo-", dir="/tmp") as run_dir:
        p = subprocess.Popen([sys.executable, "-m", "ingressctl.demo", "--run-dir", run_dir], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(iter(p.stdout.readline, "")), daemon=True)
        reader.start()
        try:
            wait_until(lambda: any("Ctrl-C stops everything" in ln for ln in lines), "the demo banner",
                       deadline=120)
            prefix = "curl -H 'Host: reports.example.com'"
            curls = [ln.strip() for ln in lines if ln.strip().startswith(prefix)]
            assert len(curls) == 3
            for cmd in curls:
                m = re.match(r"curl -H 'Host: (\S+)' http://127\.0\.0\.1:(\d+)(\S+)", cmd)
                assert m, cmd
                host, port, path = m.group(1), int(m.group(2)), m.group(3)
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("GET", path, headers={"Host": host})
                r = conn.getresponse()
                body = r.read().decode()
                conn.close()
                assert r.status == 200 and body.startswith(path.strip("/") + " GET"), body
            p.send_signal(signal.SIGINT)
            assert p.wait(60) == 0
        finally:
            if p.poll() is None:
                p.kill()
                p.wait(30)


class RunningDemo:
    """`python -m ingressctl.demo` in the background, with its output collected."""

    def __init__(self, *args: str) -> None:
        self.p = subprocess.Popen([sys.executable, "-m", "ingressctl.demo", *args], cwd=REPO,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        assert self.p.stdout is not None
        stdout = self.p.stdout
        threading.Thread(target=lambda: self.lines.extend(iter(stdout.readline, "")), daemon=True).start()

    def wait_banner(self) -> None:
        wait_until(lambda: any("Ctrl-C stops everything" in ln for ln in self.lines)
                   or self.p.poll() is not None, "the demo banner", deadline=120)
        assert self.p.poll() is None, "".join(self.lines)

    def line(self, prefix: str) -> str:
        return next(ln.strip() for ln in self.lines if ln.strip().startswith(prefix))

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(30)


def _ports(demo: RunningDemo) -> dict[str, int]:
    m = re.search(r"ports: HTTP (\d+), HTTPS (\d+), readiness (\d+), metrics (\d+)", demo.line("ports:"))
    assert m, demo.lines
    return dict(zip(("http", "https", "ready", "metrics"), map(int, m.groups()), strict=True))


def _snapshot(run_dir: str) -> dict[str, bytes]:
    """Every file the demo wrote under its run dir (the lock file aside), with its bytes."""
    out = {}
    for root, _, files in os.walk(run_dir):
        for name in files:
            path = os.path.join(root, name)
            if name != "demo.lock" and not name.endswith(".sock") and os.path.isfile(path):
                with open(path, "rb") as f:
                    out[os.path.relpath(path, run_dir)] = f.read()
    return out


def test_a_second_demo_or_a_check_leaves_the_running_demo_alone() -> None:
    with tempfile.TemporaryDirectory(prefix="ic-demo-", dir="/tmp") as run_dir:
        first = RunningDemo("--run-dir", run_dir)
        try:
            first.wait_banner()
            ports = _ports(first)
            before = _snapshot(run_dir)
            assert "kubeconfig" in before and "nginx/conf/nginx.conf" in before

            second = subprocess.run([sys.executable, "-m", "ingressctl.demo", "--run-dir", run_dir], cwd=REPO,
                                    capture_output=True, text=True, timeout=120)
            assert second.returncode == 1
            assert f"is running with the run dir {run_dir}" in second.stderr, second.stderr
            # The README's check, run from the same checkout: a run dir of its own.
            check = subprocess.run([sys.executable, "-m", "ingressctl.demo", "--check"], cwd=REPO,
                                   capture_output=True, text=True, timeout=300)
            assert check.returncode == 0, check.stdout + check.stderr

            assert _snapshot(run_dir) == before
            # Still serving as before, also after a reload of the first demo's NGINX.
            with open(os.path.join(run_dir, "nginx", "run", "nginx.pid")) as f:
                os.kill(int(f.read()), signal.SIGHUP)
            wait_until(lambda: http_get(ports["http"], "shop.example.com", "/api").backend == "shop-api",
                       "shop-api through the first demo")
            assert http_get(ports["http"], "unknown.example.com", "/").status == 404
        finally:
            first.stop()


def test_a_killed_demos_nginx_is_stopped_and_its_ports_reused() -> None:
    with tempfile.TemporaryDirectory(prefix="ic-demo-", dir="/tmp") as run_dir:
        http, https, metrics = free_port(), free_port(), free_port()
        args = ("--run-dir", run_dir, "--http-port", str(http), "--https-port", str(https),
                "--metrics-port", str(metrics))
        killed = RunningDemo(*args)
        again: RunningDemo | None = None
        try:
            killed.wait_banner()
            with open(os.path.join(run_dir, "nginx", "run", "nginx.pid")) as f:
                orphan = int(f.read())
            killed.p.kill()
            killed.p.wait(30)
            assert http_get(http, "shop.example.com", "/").status in (200, 502)   # the orphan still listens

            again = RunningDemo(*args)
            again.wait_banner()
            assert _ports(again)["http"] == http and _ports(again)["https"] == https
            assert any(f"stopped NGINX (pid {orphan}) left running by a previous demo" in ln
                       for ln in again.lines)
            assert process_gone(orphan)
            wait_until(lambda: http_get(http, "shop.example.com", "/").backend == "shop-web", "shop-web")
        finally:
            killed.stop()
            if again is not None:
                again.stop()


def test_the_demo_prints_every_port_an_absolute_kubeconfig_and_serves_tls() -> None:
    # The HTTPS port asked for is taken: the banner shows the one used.
    with tempfile.TemporaryDirectory(prefix="ic-demo-", dir="/tmp") as run_dir, socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        demo = RunningDemo("--run-dir", run_dir, "--https-port", str(taken))
        try:
            demo.wait_banner()
            ports = _ports(demo)
            assert ports["https"] != taken
            assert any(f"HTTPS port {taken} is in use; the demo uses port {ports['https']}" in ln
                       for ln in demo.lines)
            kubectl = demo.line("kubectl:")
            assert f"--kubeconfig {os.path.join(run_dir, 'kubeconfig')} " in kubectl
            tls = demo.line("curl -k --resolve secure.example.com")
            assert f"https://secure.example.com:{ports['https']}/" in tls
            r = https_get(ports["https"], "secure.example.com", "/")
            assert r.status == 200 and r.body.startswith("secure-web GET")
            assert https_get(ports["https"], "unknown.example.com", "/").status == 404
        finally:
            demo.stop()
