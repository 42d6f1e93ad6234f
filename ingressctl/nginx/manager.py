"""The Manager: NGINX's config files on disk and the NGINX process (start, reload, verify, quit), after
NIC's `internal/nginx` LocalManager. It is a `ConfDir` (conf_dir.py: the files) that also runs NGINX; the
paths are `RuntimePaths` (paths.py), the child process is master.py, reload verification verify.py.

Guarantees:
- `reload()` sends SIGHUP to the master it owns (`nginx -s reload` would parse the whole config once more just
  to find the pid, doubling a multi-second load at scale), and succeeds only once NGINX's new workers serve
  the new config version over `<run_dir>/nginx-config-version.sock` AND the previous workers stopped
  accepting connections (read from /proc), so every connection opened after it returns gets the new config.
  Otherwise it raises ReloadError ("nginx reload failed: ..." with the master's [emerg] (or its own [crit])
  lines, or "could not get newest config version: ..."), and the old config keeps serving. As in NIC, the
  version counter is not rolled back after a failure.
- NGINX runs as our child in its own process group, with its output forwarded to our log. If it dies
  without `quit()`, its leftover workers are killed (so a restart can bind the ports again) and
  `on_exit(returncode)` is called from the waiter thread; `restart()` starts it again with the current files.
- Works as root and unprivileged: all paths are absolute, nginx gets `-p <run_dir>/`, and the socket, pid
  and temp paths all live under run_dir (created 0755). Certificates are read by the master process, so
  0600 secrets owned by the controller's user work even when workers run as `nobody`. Files workers read at
  request time (htpasswd, written 0644) work too: the secrets dir is 0711, traversable but not listable.
  The conf dir's own parents must be traversable by the worker user. Certificates loaded at handshakes
  (through a variable) are read by workers: `create_secret(owner=<the worker uid>)` gives them the file.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from ingressctl.logging import get_logger
from ingressctl.nginx.conf_dir import ConfDir
from ingressctl.nginx.dynamic_peers import SOCKET_DIR as DYNAMIC_PEERS_SOCKET_DIR
from ingressctl.nginx.dynamic_peers import SOCKET_NAME as DYNAMIC_PEERS_SOCKET_NAME
from ingressctl.nginx.dynamic_peers import DynamicPeersClient, DynamicUpdateError
from ingressctl.nginx.master import (
    NginxInstance,
    NginxOutput,
    clean_run_dir,
    leftover_master,
    parent_pid,
    stop_orphan,
)
from ingressctl.nginx.paths import (
    CONF_D_INCLUDE,
    CONFIG_DIRS,
    MAIN_CONFIG_FILE,
    MAX_UNIX_SOCKET_PATH,
    SECRETS_DIR,
    RuntimePaths,
    check_path,
    split_config_name,
)
from ingressctl.nginx.processes import current_workers
from ingressctl.nginx.verify import (
    EmergLogged,
    Exited,
    VersionClient,
    render_config_version,
    wait_old_workers,
)

log = get_logger(__name__)

_DAEMON_OFF = re.compile(rb"^[ \t]*daemon[ \t]+off[ \t]*;", re.MULTILINE)
_SEARCH_DIRS = ("/usr/sbin", "/usr/local/sbin", "/usr/local/nginx/sbin")


def find_binary(name: str) -> str | None:
    """The executable `name` names: a path as given, else found on PATH or in the usual sbin directories."""
    found = shutil.which(name)
    if found is None and os.sep not in name:
        for d in _SEARCH_DIRS:
            candidate = os.path.join(d, name)
            if os.access(candidate, os.X_OK):
                return candidate
    return found


class ReloadError(Exception):
    """A reload was refused by NGINX or could not be verified. `output` is NGINX's stderr (may be empty)."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class NginxStartError(Exception):
    """NGINX could not be started or did not serve its config version in time. `output` is what it printed."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class Manager(ConfDir):
    """Owns conf_dir (nginx.conf, conf.d/, config-version.conf, secrets/) and the NGINX process."""

    def __init__(self, binary: str = "nginx", conf_dir: str = "/etc/nginx", run_dir: str = "/var/lib/nginx",
                 reload_timeout_ms: int = 60000, *,
                 on_reload: Callable[[bool, int, bool], None] | None = None,
                 proc_root: str = "/proc", wait_for_old_workers: bool = True,
                 connectable_sockets: bool = False) -> None:
        """`connectable_sockets`: NGINX runs with umask 011, so that the unix sockets its master binds can be
        connected to by workers of another user (TLS passthrough hands connections over such sockets); the
        files NGINX creates keep the modes it asks for."""
        self._umask = 0o011 if connectable_sockets else -1
        if reload_timeout_ms <= 0:
            raise ValueError(f"reload timeout must be positive, got {reload_timeout_ms} ms")
        self.binary = binary
        paths = RuntimePaths(check_path("conf dir", conf_dir), check_path("run dir", run_dir))
        for sock in (paths.config_version_socket, paths.status_socket):
            if len(os.fsencode(sock)) > MAX_UNIX_SOCKET_PATH:
                raise ValueError(f"unix socket path {sock!r} is longer than {MAX_UNIX_SOCKET_PATH} bytes; "
                                 "use a shorter run dir")
        super().__init__(paths)
        self.run_dir = paths.run_dir
        self.reload_timeout_ms = reload_timeout_ms
        self.on_reload = on_reload
        self.proc_root = proc_root
        # After a verified reload, also wait until the old workers stop accepting (NGINX signals them
        # ~100 ms after starting the new ones).
        self.wait_for_old_workers = wait_for_old_workers

        self.config_version = 0
        self.reload_count = 0            # successful reloads
        self.endpoints_reload_count = 0  # of which for endpoint updates
        self.reload_errors = 0
        self.last_reload_ok: bool | None = None
        self.last_reload_ms = 0          # last successful reload, from the command through verification
        # Endpoint updates applied without a reload (the dynamic-peers module), and the failed ones.
        self.dynamic_update_count = 0
        self.dynamic_update_errors = 0
        self.on_dynamic_update: Callable[[bool], None] | None = None
        self._dynamic_peers = DynamicPeersClient(os.path.join(self.run_dir, DYNAMIC_PEERS_SOCKET_DIR,
                                                              DYNAMIC_PEERS_SOCKET_NAME))

        self._proc_lock = threading.RLock()
        self._instance: NginxInstance | None = None
        self._on_exit: Callable[[int], None] | None = None
        self._output = NginxOutput()
        self._versions = VersionClient(paths.config_version_socket)
        self._resolved_binary: str | None = None
        self._build_text: str | None = None

        if not os.path.isdir(self.run_dir):
            # Workers (possibly `nobody`) use the temp paths under it: traversable by everyone.
            os.makedirs(self.run_dir, mode=0o755, exist_ok=True)
            os.chmod(self.run_dir, 0o755)
        private = os.path.dirname(self._dynamic_peers.socket_path)
        os.makedirs(private, mode=0o700, exist_ok=True)
        os.chmod(private, 0o700)

    def _write_config_version(self, version: int) -> None:
        content = render_config_version(version, self.paths.config_version_socket)
        self._write_if_changed(self.paths.config_version_file, content.encode(), 0o644)

    # ------------------------------------------------------------------ commands

    def _binary(self) -> str:
        if self._resolved_binary is None:
            found = find_binary(self.binary)
            if found is None:
                raise FileNotFoundError(f"nginx binary {self.binary!r} not found (on PATH or in "
                                        f"{', '.join(_SEARCH_DIRS)})")
            self._resolved_binary = found
        return self._resolved_binary

    def _command(self, *args: str, conf: str | None = None) -> list[str]:
        return [self._binary(), *args, "-e", "stderr", "-c", conf or self.paths.main_config,
                "-p", self.run_dir + os.sep]

    def _build_info(self) -> str:
        """`nginx -V`'s output (version and configure arguments), read once: the binary does not change."""
        if self._build_text is None:
            res = subprocess.run([self._binary(), "-V"], capture_output=True, stdin=subprocess.DEVNULL,
                                 timeout=self.reload_timeout_ms / 1000, check=False)
            self._build_text = (res.stderr + res.stdout).decode(errors="replace")
        return self._build_text

    def version(self) -> str:
        """NGINX's version, from `nginx -V` (e.g. "1.22.1")."""
        text = self._build_info()
        m = re.search(r"nginx/(\S+)", text)
        if m is None:
            raise RuntimeError(f"unexpected `nginx -V` output: {text.strip()[:500]!r}")
        return m.group(1)

    def configure_arguments(self) -> list[str]:
        """The configure arguments of this NGINX, from `nginx -V` (e.g. `--with-http_stub_status_module`)."""
        text = self._build_info()
        line = next((ln for ln in text.splitlines() if ln.startswith("configure arguments:")), "")
        return line.removeprefix("configure arguments:").split()

    def test_config(self, main_conf_path: str | None = None) -> tuple[bool, str]:
        """`nginx -t` on the current (or the given) main config: (ok, NGINX's output)."""
        try:
            cmd = self._command("-t", conf=main_conf_path)
            res = subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL,
                                 timeout=self.reload_timeout_ms / 1000, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, f"nginx -t failed: {e}"
        return res.returncode == 0, (res.stderr + res.stdout).decode(errors="replace").strip()

    def test_configs(self, overrides: Mapping[str, str | None]) -> tuple[bool, str]:
        """`nginx -t` on a staging copy: the current files, with conf.d/<name>.conf replaced by the given
        content (None leaves it out). Needs the main config's includes to be relative (see module doc)."""
        for name in overrides:
            split_config_name(name)
        main = self._read(self.paths.main_config) or b""
        if os.fsencode(self.paths.conf_d + os.sep) in main:
            raise ValueError("test_configs needs the main config to include conf.d by a relative path "
                             f"({CONF_D_INCLUDE}), not {self.paths.conf_d}")
        staging = tempfile.mkdtemp(prefix="staging-", dir=self.run_dir)
        try:
            with os.scandir(self.conf_dir) as it:
                for entry in it:
                    if entry.name in (*CONFIG_DIRS, SECRETS_DIR) or entry.name.startswith("."):
                        continue
                    os.symlink(entry.path, os.path.join(staging, entry.name))
            for directory in CONFIG_DIRS:
                os.mkdir(os.path.join(staging, directory))

            def staged(name: str) -> str:
                directory, base = split_config_name(name)
                return os.path.join(staging, directory, base + ".conf")

            for name in self.list_configs():
                if name not in overrides:
                    os.symlink(self.config_path(name), staged(name))
            for name, content in overrides.items():
                if content is not None:
                    with open(staged(name), "w") as f:
                        f.write(content)
            return self.test_config(os.path.join(staging, MAIN_CONFIG_FILE))
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    # ------------------------------------------------------------------ process

    @property
    def master_pid(self) -> int | None:
        inst = self._instance
        return inst.proc.pid if inst is not None and inst.proc.poll() is None else None

    def is_running(self) -> bool:
        inst = self._instance
        return inst is not None and inst.proc.poll() is None

    def start(self, *, on_exit: Callable[[int], None] | None = None) -> None:
        """Start NGINX with config version 0 and wait until it serves it (deadline: the reload timeout).

        `on_exit(returncode)` is called from a waiter thread if NGINX exits without `quit()`.
        Raises NginxStartError (with NGINX's output) if it exits or times out; it is then stopped.
        """
        with self._proc_lock:
            if self.is_running():
                raise NginxStartError("nginx is already running")
            self._on_exit = on_exit
            self.config_version = 0
            self._start_locked()

    def restart(self) -> None:
        """Start NGINX again (after it died) with the current files and config version."""
        with self._proc_lock:
            if self.is_running():
                self.quit(timeout=self.reload_timeout_ms / 1000)
            self._start_locked()

    def _start_locked(self) -> None:
        main = self._read(self.paths.main_config)
        if main is None:
            raise NginxStartError(f"main config {self.paths.main_config} does not exist")
        if not _DAEMON_OFF.search(main):
            # Otherwise NGINX would fork into the background, out of our reach.
            raise NginxStartError(f"main config {self.paths.main_config} must contain 'daemon off;'")
        self._reap_previous()
        clean_run_dir(self.paths, (os.path.dirname(self._dynamic_peers.socket_path),))
        version = self.config_version
        self._write_config_version(version)
        try:
            cmd = self._command()
        except FileNotFoundError as e:
            raise NginxStartError(str(e)) from None
        output_start = self._output.seq
        started = time.monotonic()
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
                                    umask=self._umask)
        except OSError as e:
            raise NginxStartError(f"could not run {cmd[0]}: {e}") from e
        inst = NginxInstance(proc=proc, output_start=output_start)
        inst.reader = threading.Thread(target=inst.forward_output, args=(self._output,), name="nginx-output",
                                       daemon=True)
        inst.waiter = threading.Thread(target=self._wait_exit, args=(inst,), name="nginx-waiter", daemon=True)
        self._instance = inst
        inst.reader.start()
        inst.waiter.start()
        log.info("nginx started", pid=proc.pid, command=" ".join(cmd))
        try:
            self._versions.wait_for_version(proc, version, started + self.reload_timeout_ms / 1000,
                                            self._output, output_seq=output_start, fail_on_emerg=False)
        except Exited as e:
            inst.stop(0.0)
            out = "\n".join(self._output.since(output_start))
            msg = f"nginx exited with code {e.returncode} while starting: {out}"
            raise NginxStartError(msg, out) from None
        except TimeoutError as e:
            inst.stop(0.0)
            out = "\n".join(self._output.since(output_start))
            raise NginxStartError(
                f"nginx did not serve config version {version} within {self.reload_timeout_ms} ms ({e}); "
                f"output: {out}", out) from None
        inst.serving = True
        log.info("nginx is serving", pid=proc.pid, config_version=version,
                 ms=int((time.monotonic() - started) * 1000))

    def _reap_previous(self) -> None:
        """Make sure a previous instance and its leftover workers are gone before starting another."""
        inst = self._instance
        if inst is not None:
            inst.stop(0.0)
            self._instance = None
        pid = leftover_master(self.paths, self.proc_root)
        if pid is None:
            return
        if parent_pid(self.proc_root, pid) != 1:
            raise NginxStartError(f"an NGINX master process (pid {pid}, from {self.paths.pid_file}) is "
                                  "already running with this run dir; stop it first")
        # Its controller died without stopping it (SIGKILL): it was re-parented to init. Take over the run
        # dir: a graceful quit, then SIGKILL of its whole process group.
        log.warning("stopping an orphaned NGINX left by a previous controller", pid=pid)
        stop_orphan(self.proc_root, pid, timeout=self.reload_timeout_ms / 1000)

    def stop_leftover(self) -> int | None:
        """Stop the NGINX master named by this run dir's pid file and running this config, whoever its parent
        is, and return its pid (None: there is none). Only for a caller that knows the process which ran it
        is gone (it holds that process's lock); `start()` itself stops only masters re-parented to init."""
        if self.is_running():
            return None
        pid = leftover_master(self.paths, self.proc_root)
        if pid is not None:
            log.warning("stopping an NGINX left running by a previous run", pid=pid)
            stop_orphan(self.proc_root, pid, timeout=self.reload_timeout_ms / 1000)
        return pid

    def _wait_exit(self, inst: NginxInstance) -> None:
        rc = inst.proc.wait()
        if rc != 0:
            # The master died abnormally: its workers live on and hold the listening sockets.
            inst.kill_group()
        inst.exited.set()
        if inst.stopping or not inst.serving:
            log.info("nginx exited", pid=inst.proc.pid, code=rc)
            return
        tail = self._output.since(max(inst.output_start, self._output.seq - 20))
        log.error("nginx exited unexpectedly", pid=inst.proc.pid, code=rc, output="\n".join(tail))
        callback = self._on_exit
        if callback is not None:
            try:
                callback(rc)
            except Exception as e:
                log.exception("nginx on_exit callback failed", error=str(e))

    def quit(self, timeout: float = 30.0) -> None:
        """Graceful stop: SIGQUIT, wait up to `timeout` seconds, then SIGKILL. on_exit is not called."""
        with self._proc_lock:
            inst = self._instance
            if inst is None:
                return
            inst.stop(timeout)
            self._instance = None
            clean_run_dir(self.paths, (os.path.dirname(self._dynamic_peers.socket_path),))
            log.info("nginx stopped", pid=inst.proc.pid, code=inst.proc.returncode)

    # ------------------------------------------------------------------ dynamic upstreams

    @property
    def dynamic_peers_socket(self) -> str:
        """Where the main config serves the dynamic-peers module's API."""
        return self._dynamic_peers.socket_path

    def update_upstreams(self, servers: Mapping[str, Sequence[str]]) -> None:
        """Make each named upstream (declared dynamic in the running config) serve exactly these addresses,
        without a reload. Raises DynamicUpdateError (NGINX then applied none of it); counted either way."""
        with self._proc_lock:
            if not self.is_running():
                ok = False
                error: DynamicUpdateError | None = DynamicUpdateError("dynamic update failed: nginx is not "
                                                                      "running")
            else:
                try:
                    self._dynamic_peers.push(servers)
                    ok, error = True, None
                except DynamicUpdateError as e:
                    ok, error = False, e
            if ok:
                self.dynamic_update_count += 1
            else:
                self.dynamic_update_errors += 1
            callback = self.on_dynamic_update
            if callback is not None:
                try:
                    callback(ok)
                except Exception as e:
                    log.exception("on_dynamic_update callback failed", error=str(e))
            if error is not None:
                raise error
            log.info("nginx upstreams updated without a reload", upstreams=len(servers))

    def served_upstreams(self) -> dict[str, tuple[int, tuple[str, ...]]]:
        """The dynamic upstreams NGINX serves now: slot count and live addresses (DynamicUpdateError)."""
        return self._dynamic_peers.served()

    # ------------------------------------------------------------------ reload

    def reload(self, is_endpoints_update: bool = False) -> None:
        """Bump the config version, SIGHUP the master, and wait until the new workers serve the new version.

        Raises ReloadError; the old config keeps serving then.
        """
        with self._proc_lock:
            started = time.monotonic()
            timeout_s = self.reload_timeout_ms / 1000
            deadline = started + timeout_s
            try:
                self._reload_locked(deadline)
            except ReloadError as e:
                self._record(False, started, is_endpoints_update)
                log.error("nginx reload failed", error=str(e), config_version=self.config_version)
                raise
            self._record(True, started, is_endpoints_update)
            log.info("nginx reloaded", config_version=self.config_version, ms=self.last_reload_ms,
                     endpoints=is_endpoints_update)

    def _reload_locked(self, deadline: float) -> None:
        inst = self._instance
        if inst is None or inst.proc.poll() is not None:
            raise ReloadError("nginx reload failed: nginx is not running")
        self.config_version += 1
        version = self.config_version
        try:
            self._write_config_version(version)
        except OSError as e:
            raise ReloadError(f"nginx reload failed: writing {self.paths.config_version_file}: {e}") from None
        output_seq = self._output.seq
        old_workers = current_workers(inst.proc.pid, self.proc_root) if self.wait_for_old_workers else set()
        try:
            inst.proc.send_signal(signal.SIGHUP)
        except OSError as e:
            raise ReloadError(f"nginx reload failed: signalling the master {inst.proc.pid}: {e}") from None
        try:
            self._versions.wait_for_version(inst.proc, version, deadline, self._output, output_seq=output_seq,
                                            fail_on_emerg=True)
        except TimeoutError as e:
            raise ReloadError("could not get newest config version: could not get expected version: "
                              f"{version} after {self.reload_timeout_ms}ms ({e})") from None
        except EmergLogged as e:
            raise ReloadError(f"nginx reload failed: {e}", str(e)) from None
        except Exited as e:
            out = "\n".join(self._output.since(output_seq))
            msg = f"nginx reload failed: nginx exited with code {e.returncode}: {out}"
            raise ReloadError(msg, out) from None
        wait_old_workers(old_workers, deadline, self.proc_root)

    def _record(self, ok: bool, started: float, is_endpoints_update: bool) -> None:
        duration_ms = int((time.monotonic() - started) * 1000)
        self.last_reload_ok = ok
        if ok:
            self.reload_count += 1
            if is_endpoints_update:
                self.endpoints_reload_count += 1
            self.last_reload_ms = duration_ms
        else:
            self.reload_errors += 1
        callback = self.on_reload
        if callback is not None:
            try:
                callback(ok, duration_ms, is_endpoints_update)
            except Exception as e:
                log.exception("on_reload callback failed", error=str(e))

