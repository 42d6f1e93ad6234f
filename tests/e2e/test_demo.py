"""The `make run` path: `python -m ingressctl.demo` with the repository's examples/."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading

import pytest

from tests.helpers import wait_until

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
