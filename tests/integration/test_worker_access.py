"""Directories NGINX's workers must traverse at request time (ingressctl.nginx.worker_access), through the
real controller and a real NGINX. The tests run as root, so NGINX's workers run as another user (the
compiled-in `nobody` of Debian's NGINX): a conf dir below a 0700 directory (what `mktemp -d` makes) is refused
at start with exit status 2 and a message naming it (basic auth would answer 500), and a 0700 run dir the
controller owns is opened for them (bodies larger than their buffers go through temp files under it)."""

from __future__ import annotations

import http.client
import os
import re
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest

from tests.helpers import free_port, http_get, wait_until
from tests.integration.harness import Env, rule
from tests.integration.policy_helpers import basic, htpasswd_secret

pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOST = "private.example.com"


@pytest.fixture
def private_dir() -> Iterator[str]:
    """A directory as `mktemp -d` makes it: 0700, owned by this (root) process."""
    d = tempfile.mkdtemp(prefix="ic-private-", dir="/tmp")
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    try:
        yield d
    finally:
        subprocess.run(["rm", "-rf", d], check=False)


def basic_auth_ingress(env: Env) -> None:
    env.service("staff")
    env.endpoints("staff", [env.backend("staff")])
    env.create(htpasswd_secret("users", {"alice": "wonderland"}))
    env.ingress("private", [rule(HOST, ("/", "staff"))],
                annotations={"nginx.org/basic-auth-secret": "users"})


def test_a_conf_dir_below_a_directory_the_workers_cannot_traverse_is_refused_with_exit_2(
        env: Env, private_dir: str) -> None:
    """Without the check the controller starts and the basic-auth route answers 500 to valid credentials
    (NGINX's workers cannot open the htpasswd file); with it, `python -m ingressctl` exits 2 naming the
    directory, its mode and owner, and the workers' user."""
    assert os.geteuid() == 0, "this test needs root: only then do NGINX's workers run as another user"
    basic_auth_ingress(env)
    run_dir = tempfile.mkdtemp(prefix="ic-run-", dir="/tmp")
    env.cleanup_dirs.append(run_dir)
    conf_dir = os.path.join(private_dir, "conf")
    http_port, ready_port = free_port(), free_port()
    p = subprocess.Popen(
        [sys.executable, "-m", "ingressctl", f"--kubeconfig={env.kubeconfig}", f"--nginx-conf-dir={conf_dir}",
         f"--nginx-run-dir={run_dir}", f"--default-http-listener-port={http_port}",
         f"--default-https-listener-port={free_port()}", f"--ready-status-port={ready_port}",
         "--nginx-status=false", "--enable-leader-election=false"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "POD_NAMESPACE": "default", "POD_NAME": "ingressctl-test"})
    try:
        def exited_or_ready() -> bool:
            if p.poll() is not None:
                return True
            try:
                return http_get(ready_port, "localhost", "/nginx-ready").status == 200
            except OSError:
                return False

        wait_until(exited_or_ready, "the controller exits or becomes ready", deadline=120)
        if p.poll() is None:
            answer = http_get(http_port, HOST, "/", headers=basic("alice", "wonderland"))
            pytest.fail(f"the controller started; {HOST} answers {answer.status} to valid credentials")
    finally:
        if p.poll() is None:
            p.terminate()
        out, _ = p.communicate(timeout=60)
    assert p.returncode == 2, out
    assert "cannot start" in out, out
    m = re.search(r"NGINX's workers run as (\S+) \(uid (\d+)\) and cannot traverse (\S+) \(mode 0700, owner "
                  r"root:root\) \(above the conf dir (\S+)\)", out)
    assert m is not None, out
    assert int(m.group(2)) != 0 and m.group(3) == private_dir and m.group(4) == conf_dir
    assert "basic-auth user files" in out and f"chmod o+x {private_dir}" in out, out
    assert "pass --nginx-conf-dir with a directory it can reach" in out, out
    # Refused before it served anything; the directory above the conf dir was not touched.
    assert stat.S_IMODE(os.stat(private_dir).st_mode) == 0o700


def test_the_same_conf_dir_once_its_parent_is_traversable_serves_basic_auth(
        env: Env, private_dir: str) -> None:
    """The remedy the refusal names: the controller starts, and the basic-auth route checks passwords."""
    basic_auth_ingress(env)
    os.chmod(private_dir, 0o711)
    c = env.controller(conf_dir=os.path.join(private_dir, "conf"))
    r = wait_until(lambda: (x := c.get(HOST)).status == 401 and x, "401 without credentials")
    assert "www-authenticate" in r.headers
    assert http_get(c.http_port, HOST, "/", headers=basic("alice", "wonderland")).backend == "staff"
    assert http_get(c.http_port, HOST, "/", headers=basic("alice", "looking-glass")).status == 401


def post(port: int, host: str, body: bytes) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/upload", body=body, headers={"Host": host, "Connection": "close",
                                                           "Content-Type": "application/octet-stream"})
        r = conn.getresponse()
        return r.status, r.read().decode(errors="replace")
    finally:
        conn.close()


def test_a_0700_run_dir_of_the_controller_is_made_traversable_for_request_bodies(env: Env) -> None:
    """The run dir the harness hands over is 0700 (`mkdtemp`), owned by the controller: before the fix a
    request body larger than its buffer (NGINX writes it to <run dir>/client_body) answered 500; now the
    controller adds search for group and others (0711, not listable) and the body reaches the backend."""
    assert os.geteuid() == 0, "this test needs root: only then do NGINX's workers run as another user"
    env.service("uploads")
    env.endpoints("uploads", [env.backend("uploads")])
    env.ingress("uploads", [rule("uploads.example.com", ("/", "uploads"))])
    settings = env.settings()
    assert stat.S_IMODE(os.stat(settings.nginx.run_dir).st_mode) == 0o700
    c = env.controller(settings)
    c.wait_backend("uploads.example.com", "/", "uploads")
    status, body = post(c.http_port, "uploads.example.com", os.urandom(512 * 1024))
    assert status == 200 and body.startswith("uploads POST"), (status, body[:300])
    assert stat.S_IMODE(os.stat(settings.nginx.run_dir).st_mode) == 0o711
    assert os.path.isdir(os.path.join(settings.nginx.run_dir, "client_body"))
