"""The Manager against a real NGINX: start, verified reloads, failed reloads that keep the old config serving,
graceful quit, crash detection and restart, `nginx -t`, stub_status, and unprivileged operation."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
import requests_unixsocket

from ingressctl.http_serving import POLL_INTERVAL
from ingressctl.nginx.manager import Manager, NginxStartError, ReloadError
from ingressctl.nginx.master import parent_pid
from ingressctl.nginx.paths import RuntimePaths
from ingressctl.nginx.processes import count_worker_processes
from ingressctl.nginx.stub_status import StubStatusError, fetch_stub_status, unix_socket_url
from tests.helpers import free_port

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 30.0


def wait_until(cond: Callable[[], bool], what: str, deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def main_config(paths: RuntimePaths, port: int, backend_port: int, body: str = "v0") -> str:
    """A minimal main config for these tests (the real template belongs to the configs package)."""
    return (
        paths.main_directives()
        + "worker_processes 1;\nevents { worker_connections 64; }\n"
        + "http {\n    access_log off;\n    default_type text/plain;\n"
        + paths.http_directives()
        + "    server {\n"
        + f"        listen 127.0.0.1:{port};\n"
        + f"        location / {{ return 200 '{body}\\n'; }}\n"
        + f"        location /backend {{ proxy_pass http://127.0.0.1:{backend_port}; }}\n"
        + "    }\n}\n"
    )


def server_conf(port: int, body: str) -> str:
    return f"server {{\n    listen 127.0.0.1:{port};\n    location / {{ return 200 '{body}\\n'; }}\n}}\n"


def get(port: int, path: str = "/") -> str:
    resp = requests.get(f"http://127.0.0.1:{port}{path}", timeout=10)
    resp.raise_for_status()
    return resp.text


def served_version(m: Manager) -> str:
    with requests_unixsocket.Session() as s:
        resp = s.get(unix_socket_url(m.paths.config_version_socket, "/configVersion"), timeout=5)
        return str(resp.text)


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group `pgid`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            found.append(int(entry))
    return found


class _Backend(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"backend\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def backend() -> Iterator[int]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Backend)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": POLL_INTERVAL}, daemon=True)
    t.start()
    yield int(srv.server_address[1])
    srv.shutdown()
    srv.server_close()


class Env:
    def __init__(self, tmp_path: Path, backend_port: int) -> None:
        self.tmp_path = tmp_path
        self.backend_port = backend_port
        self.managers: list[Manager] = []
        self.run_dirs: list[str] = []

    def manager(self, reload_timeout_ms: int = 30000, name: str = "a",
                run_dir: str | None = None) -> Manager:
        if run_dir is None:
            run_dir = tempfile.mkdtemp(prefix="ngx-")  # short: unix socket paths are limited to 107 bytes
            self.run_dirs.append(run_dir)
        m = Manager(binary="nginx", conf_dir=str(self.tmp_path / name / "conf"), run_dir=run_dir,
                    reload_timeout_ms=reload_timeout_ms)
        self.managers.append(m)
        return m

    def started(self, port: int, on_exit: Callable[[int], None] | None = None,
                reload_timeout_ms: int = 30000) -> Manager:
        m = self.manager(reload_timeout_ms=reload_timeout_ms)
        m.create_main_config(main_config(m.paths, port, self.backend_port))
        m.start(on_exit=on_exit)
        return m

    def cleanup(self) -> None:
        for m in self.managers:
            pid = m.master_pid
            try:
                m.quit(timeout=5)
            finally:
                if pid is not None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pid, signal.SIGKILL)
        for d in self.run_dirs:
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def env(tmp_path: Path, backend: int) -> Iterator[Env]:
    e = Env(tmp_path, backend)
    try:
        yield e
    finally:
        e.cleanup()


def test_start_serves_version_zero_and_http(env: Env) -> None:
    port = free_port()
    m = env.started(port)
    assert m.is_running() and m.master_pid is not None
    assert served_version(m) == "0" and m.config_version == 0
    assert get(port) == "v0\n"
    assert get(port, "/backend") == "backend\n"
    assert Path(m.paths.pid_file).read_text().strip() == str(m.master_pid)
    with pytest.raises(NginxStartError, match="already running"):
        m.start()


def test_reload_bumps_version_and_is_verified(env: Env) -> None:
    port, port2 = free_port(), free_port()
    m = env.started(port)
    calls: list[tuple[bool, int, bool]] = []
    m.on_reload = lambda ok, ms, ep: calls.append((ok, ms, ep))
    assert m.create_config("default-cafe", server_conf(port2, "cafe")) is True
    m.reload()
    assert m.config_version == 1 and served_version(m) == "1"
    assert get(port2) == "cafe\n"
    m.reload(is_endpoints_update=True)
    assert m.config_version == 2 and served_version(m) == "2"
    assert (m.reload_count, m.endpoints_reload_count, m.reload_errors, m.last_reload_ok) == (2, 1, 0, True)
    assert [(ok, ep) for ok, _, ep in calls] == [(True, False), (True, True)]
    assert all(ms >= 0 for _, ms, _ in calls) and m.last_reload_ms == calls[-1][1]
    assert "return 200 2;" in Path(m.paths.config_version_file).read_text()


def test_syntax_error_keeps_old_config_serving_until_fixed(env: Env) -> None:
    port, port2 = free_port(), free_port()
    m = env.started(port)
    m.create_config("default-cafe", server_conf(port2, "good"))
    m.reload()
    assert get(port2) == "good\n"

    m.create_config("default-cafe", server_conf(port2, "bad").replace("location", "locatoin"))
    with pytest.raises(ReloadError) as err:
        m.reload()
    text = str(err.value)
    assert text.startswith("nginx reload failed: ")
    assert 'unknown directive "locatoin"' in text and "default-cafe.conf" in text
    assert 'unknown directive "locatoin"' in err.value.output
    assert m.configs_named_in(err.value.output) == ["default-cafe"]
    assert (m.last_reload_ok, m.reload_errors, m.config_version) == (False, 1, 2)  # version not rolled back
    # The old config keeps serving real HTTP, on the main server and the conf.d server.
    assert get(port2) == "good\n" and get(port) == "v0\n" and served_version(m) == "1"
    assert m.is_running()

    m.create_config("default-cafe", server_conf(port2, "fixed"))
    m.reload()
    assert get(port2) == "fixed\n"
    assert served_version(m) == "3" and m.last_reload_ok is True


def test_every_connection_after_reload_gets_the_new_config(env: Env) -> None:
    """reload() returns only after the old workers stopped accepting, not just once a new worker serves."""
    port, port2 = free_port(), free_port()
    m = env.started(port)
    for i in range(8):
        m.create_config("default-cafe", server_conf(port2, f"gen{i}"))
        m.reload()
        assert get(port2) == f"gen{i}\n"


def test_reload_fails_fast_when_a_shared_zone_is_full(env: Env) -> None:
    """A full shared zone fails the new cycle with a [crit] from the master and no [emerg]: reload() must
    report it with NGINX's words, not time out with no reason."""
    port = free_port()
    m = env.started(port, reload_timeout_ms=60000)
    upstreams = "".join(
        f"upstream u{i} {{ zone tiny 32k; "
        + " ".join(f"server 10.0.{i}.{j}:80;" for j in range(1, 40)) + " }\n" for i in range(40))
    m.create_config("default-full", upstreams)
    with pytest.raises(ReloadError) as err:
        m.reload()
    assert "no memory in upstream zone" in str(err.value)
    assert get(port) == "v0\n"
    m.delete_config("default-full")
    m.reload()
    assert served_version(m) == str(m.config_version)


def test_reload_fails_fast_when_the_master_cannot_apply_the_config(env: Env) -> None:
    """The master applies the config after SIGHUP: a bind failure shows up only in its log, which reload()
    watches."""
    port = free_port()
    m = env.started(port)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        m.create_config("default-taken", server_conf(taken, "never"))
        with pytest.raises(ReloadError) as err:
            m.reload()
    assert str(err.value).startswith("nginx reload failed: ")
    assert "bind()" in str(err.value) and "still could not bind()" in err.value.output
    assert get(port) == "v0\n" and served_version(m) == "0"
    m.delete_config("default-taken")
    m.reload()
    assert served_version(m) == str(m.config_version)


def test_unverified_reload_times_out(env: Env) -> None:
    """A master that does not act on the reload (stopped here) leaves the old version: ReloadError."""
    port = free_port()
    m = env.started(port, reload_timeout_ms=1500)
    pid = m.master_pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(ReloadError,
                           match=r"^could not get newest config version: .* expected version: 1 "):
            m.reload()
        assert get(port) == "v0\n" and served_version(m) == "0"  # old workers still serve
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until(lambda: served_version(m) == "1", "the master to apply the pending reload")
    m.reload()
    assert served_version(m) == "2" and (m.reload_count, m.reload_errors) == (1, 1)


def test_quit_stops_nginx_and_removes_pid_file(env: Env) -> None:
    exits: list[int] = []
    port = free_port()
    m = env.started(port, on_exit=exits.append)
    pid = m.master_pid
    assert pid is not None and os.path.exists(m.paths.pid_file)
    m.quit(timeout=DEADLINE)
    assert not m.is_running() and m.master_pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert group_members(pid) == []
    assert not os.path.exists(m.paths.pid_file)
    assert not os.path.exists(m.paths.config_version_socket)
    with pytest.raises(requests.ConnectionError):
        get(port)
    assert exits == []  # a requested stop is not reported as a crash
    m.quit()  # idempotent


def test_quit_kills_after_the_timeout(env: Env) -> None:
    """A request in progress keeps a gracefully stopping worker alive; quit() kills it after the timeout."""
    exits: list[int] = []
    port = free_port()
    m = env.started(port, on_exit=exits.append)
    pid = m.master_pid
    assert pid is not None
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")             # unfinished: client_header_timeout is 60 s
        wait_until(lambda: fetch_stub_status(m.paths.status_socket, timeout=5).connections_reading >= 1,
                   "the worker to accept the connection")
        m.quit(timeout=0.5)
        assert not m.is_running()
        wait_until(lambda: group_members(pid) == [], "every nginx process to be gone")
    assert not os.path.exists(m.paths.pid_file) and not os.path.exists(m.paths.status_socket)
    assert exits == []
    m.start()                                                       # and it starts again cleanly
    assert get(port) == "v0\n"


def test_sigkill_triggers_on_exit_and_restart_brings_it_back(env: Env) -> None:
    exited = threading.Event()
    codes: list[int] = []

    def on_exit(rc: int) -> None:
        codes.append(rc)
        exited.set()

    port, port2 = free_port(), free_port()
    m = env.started(port, on_exit=on_exit)
    m.create_config("default-cafe", server_conf(port2, "cafe"))
    m.reload()
    pid = m.master_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert exited.wait(DEADLINE)
    assert codes == [-signal.SIGKILL]
    assert not m.is_running()
    # The orphaned workers are killed too, or they would keep the ports and the new master could not bind.
    wait_until(lambda: group_members(pid) == [], "the old workers to die")
    with pytest.raises(ReloadError, match="not running"):
        m.reload()

    m.restart()
    assert m.is_running() and m.master_pid != pid
    assert get(port) == "v0\n" and get(port2) == "cafe\n"
    assert served_version(m) == str(m.config_version) == "1"  # the refused reload did not bump it
    m.reload()
    assert served_version(m) == "2"


def test_start_failure_reports_nginx_output(env: Env) -> None:
    m = env.manager()
    m.create_main_config(main_config(m.paths, free_port(), env.backend_port).replace("worker_processes",
                                                                                      "worker_processez"))
    with pytest.raises(NginxStartError, match='unknown directive "worker_processez"') as err:
        m.start()
    assert "worker_processez" in err.value.output
    assert not m.is_running()


def test_second_master_on_the_same_run_dir_is_refused(env: Env) -> None:
    first = env.started(free_port())
    other = env.manager(name="b", run_dir=first.run_dir)
    other.create_main_config(main_config(other.paths, free_port(), env.backend_port))
    with pytest.raises(NginxStartError, match="already running with this run dir"):
        other.start()
    assert first.is_running() and served_version(first) == "0"


def test_an_orphaned_master_from_a_killed_controller_is_replaced(env: Env, tmp_path: Path) -> None:
    """A controller killed with SIGKILL leaves NGINX running, re-parented to init; the next one takes over."""
    first = env.manager(name="orphan")
    port = free_port()
    first.create_main_config(main_config(first.paths, port, env.backend_port))
    # Start NGINX from a short-lived intermediate process so that it is re-parented to init, as it is when
    # its controller dies.
    script = tmp_path / "spawn.py"
    script.write_text(
        "import subprocess, sys\n"
        f"subprocess.Popen({[first._command()[0], *first._command()[1:]]!r}, start_new_session=True,\n"
        "                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n")
    first._write_config_version(0)
    subprocess.run([sys.executable, str(script)], check=True)
    pid_file = Path(first.paths.pid_file)
    # NGINX creates the file, then writes it: wait for the number, not only the file.
    wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", "the orphan's pid file")
    orphan = int(pid_file.read_text().strip())
    assert parent_pid("/proc", orphan) == 1

    second = env.manager(name="orphan", run_dir=first.run_dir)
    second.create_main_config(main_config(second.paths, port, env.backend_port))
    second.start()
    assert second.is_running() and second.master_pid != orphan
    assert not os.path.exists(f"/proc/{orphan}")
    assert served_version(second) == "0"


def test_test_config_detects_errors(env: Env) -> None:
    port2 = free_port()
    m = env.manager()
    m.create_main_config(main_config(m.paths, free_port(), env.backend_port))
    m.create_config("default-cafe", server_conf(port2, "ok"))
    m.start()
    ok, out = m.test_config()
    assert ok, out
    assert "syntax is ok" in out

    bad = server_conf(port2, "x").replace("listen", "lsten")
    ok, out = m.test_configs({"default-cafe": bad})          # a staging copy; live files untouched
    assert not ok and 'unknown directive "lsten"' in out
    assert m.read_config("default-cafe") == server_conf(port2, "ok")
    ok, out = m.test_configs({"default-cafe": None, "default-new": server_conf(free_port(), "new")})
    assert ok, out
    assert not any(n.startswith("staging-") for n in os.listdir(m.run_dir))

    m.create_config("default-cafe", bad)
    ok, out = m.test_config()
    assert not ok and 'unknown directive "lsten"' in out and "test failed" in out
    absolute = env.manager(name="abs")
    absolute.create_main_config(main_config(absolute.paths, free_port(), env.backend_port).replace(
        "include conf.d/*.conf;", f"include {absolute.paths.conf_d}/*.conf;"))
    with pytest.raises(ValueError, match="relative path"):
        absolute.test_configs({"x": ""})
    ok, out = m.test_config(str(env.tmp_path / "missing.conf"))
    assert not ok and "missing.conf" in out
    assert m.is_running() and served_version(m) == "0"       # testing never touches the running NGINX


def test_stub_status_over_the_unix_socket(env: Env) -> None:
    port = free_port()
    m = env.started(port)
    for _ in range(3):
        get(port)
    s = fetch_stub_status(m.paths.status_socket, timeout=5)
    assert s.connections_active >= 1 and s.connections_writing >= 1  # our own request is being written
    assert s.http_requests_total >= 4 and s.connections_accepted >= s.connections_handled >= 1
    with pytest.raises(StubStatusError, match=r"nope\.sock"):
        fetch_stub_status(os.path.join(m.run_dir, "nope.sock"), timeout=1)
    # The config-version server is not a stub_status endpoint: a 404 is a clear error.
    with pytest.raises(StubStatusError, match="HTTP 404"):
        fetch_stub_status(m.paths.config_version_socket, timeout=5)


def test_worker_processes_counted_by_generation(env: Env) -> None:
    m = env.started(free_port())
    pid = m.master_pid
    assert pid is not None
    wait_until(lambda: count_worker_processes(parent_pid=pid).current == 1, "one current worker")
    # Hold a connection open to the old worker so that it lingers "shutting down" across a reload.
    port = free_port()
    m.create_config("default-slow", server_conf(port, "x"))
    m.reload()
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")             # an unfinished request keeps it busy
        wait_until(lambda: fetch_stub_status(m.paths.status_socket, timeout=5).connections_reading >= 1,
                   "the worker to accept the connection")
        m.create_config("default-slow", server_conf(port, "y"))
        m.reload()
        wait_until(lambda: count_worker_processes(parent_pid=pid).old == 1, "an old worker")
        assert count_worker_processes(parent_pid=pid).current == 1
    wait_until(lambda: count_worker_processes(parent_pid=pid).old == 0, "the old worker to finish")


def _self_signed(host_ip: str) -> bytes:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ingressctl-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host_ip))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM)
            + key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()))


def test_tls_from_a_0600_secret(env: Env) -> None:
    """The master reads certificates, so a 0600 secret works even when workers run as another user."""
    port, tls_port = free_port(), free_port()
    m = env.started(port)
    pem = _self_signed("127.0.0.1")
    path = m.create_secret("default-cafe-secret", pem)
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o600)
    m.create_config("default-cafe", (
        f"server {{\n    listen 127.0.0.1:{tls_port} ssl;\n    ssl_certificate {path};\n"
        f"    ssl_certificate_key {path};\n    location / {{ return 200 'tls\\n'; }}\n}}\n"))
    m.reload()
    ca = env.tmp_path / "ca.pem"
    ca.write_bytes(pem)
    resp = requests.get(f"https://127.0.0.1:{tls_port}/", verify=str(ca), timeout=10)
    assert resp.text == "tls\n"
    pid = m.master_pid
    if os.geteuid() == 0:
        # Root master, unprivileged workers (NGINX's default user): workers could not read the 0600 file.
        workers = [p for p in os.listdir("/proc") if p.isdigit() and _ppid(p) == pid]
        assert workers and all(_uid(p) != 0 for p in workers)


def _ppid(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _uid(pid: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Uid:"):
                return int(line.split()[1])
    raise AssertionError("no Uid line")


UNPRIVILEGED_SCRIPT = r'''
import os, socket, sys
import requests
from ingressctl.nginx.manager import Manager, ReloadError
from ingressctl.nginx.stub_status import fetch_stub_status

if len(sys.argv) > 2:
    # Started as root (whose interpreter may live where others cannot read): everything is imported, so
    # drop to the given user now. Leaving root this way also drops every capability.
    uid, gid = int(sys.argv[2]), int(sys.argv[3])
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    assert os.geteuid() == uid and os.getegid() == gid
    with open("/proc/self/status") as f:
        assert "CapEff:\t0000000000000000" in f.read()

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

base = sys.argv[1]
port, port2 = free_port(), free_port()
m = Manager(binary="nginx", conf_dir=os.path.join(base, "conf"), run_dir=os.path.join(base, "run"),
            reload_timeout_ms=30000)
p = m.paths
m.create_main_config(p.main_directives() + "worker_processes 1;\nevents {}\nhttp {\naccess_log off;\n"
                     + p.http_directives()
                     + "server { listen 127.0.0.1:%d; location / { return 200 'up\\n'; } }\n}\n" % port)
m.start()
try:
    assert requests.get("http://127.0.0.1:%d/" % port, timeout=10).text == "up\n"
    m.create_secret("s", b"secret")
    m.create_config("ns-a", "server { listen 127.0.0.1:%d; location / { return 200 'a\\n'; } }\n" % port2)
    m.reload()
    assert requests.get("http://127.0.0.1:%d/" % port2, timeout=10).text == "a\n"
    m.create_config("ns-a", "server { bogus; }\n")
    try:
        m.reload()
        raise AssertionError("reload should have failed")
    except ReloadError as e:
        assert "bogus" in str(e), str(e)
    assert requests.get("http://127.0.0.1:%d/" % port2, timeout=10).text == "a\n"
    assert m.test_config()[0] is False
    fetch_stub_status(p.status_socket, timeout=5)
finally:
    m.quit(timeout=10)
assert not os.path.exists(p.pid_file)
print("UNPRIVILEGED-OK uid=%d" % os.geteuid())
'''


def test_works_unprivileged(tmp_path: Path) -> None:
    """Start, reload, failed reload, stub_status and quit as a non-root user on high ports.

    Run as root, the child process drops to `nobody` (no capabilities) before it touches anything; run
    unprivileged, it runs as the current user.
    """
    base = tempfile.mkdtemp(prefix="ngx-u-")
    try:
        script = Path(base, "check.py")
        script.write_text(UNPRIVILEGED_SCRIPT)
        argv = [sys.executable, str(script), base]
        if os.geteuid() == 0:
            import pwd
            nobody = pwd.getpwnam("nobody")
            os.chown(base, nobody.pw_uid, nobody.pw_gid)
            os.chmod(script, 0o644)
            argv += [str(nobody.pw_uid), str(nobody.pw_gid)]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO_ROOT),
               "HOME": base}
        res = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=base, timeout=120,
                             check=False)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "UNPRIVILEGED-OK" in res.stdout
        assert "uid=0" not in res.stdout
    finally:
        shutil.rmtree(base, ignore_errors=True)
