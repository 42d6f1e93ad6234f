"""The NGINX master as our child process: its output, its stop, and the master a previous run left behind.

Guarantees:
- `NginxInstance.forward_output` forwards every line NGINX prints to our log at its level ([error] and
  worse as errors, [warn] as warnings) and keeps the last lines, numbered, in `NginxOutput` for error
  messages and reload-failure detection; a dying pipe ends the forwarding with a warning, never silently.
- `NginxInstance.stop` is a graceful SIGQUIT, then SIGKILL of the whole process group after the timeout; it
  returns only once the master has exited (workers of a master that died abnormally are killed too).
- `leftover_master` names a running master only when the pid file's process is titled
  `nginx: master process` and runs this config or run dir, so a recycled pid is never signalled.
  `clean_run_dir` removes only the pid file and unix sockets (never the controller's syslog socket).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import subprocess
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from ingressctl.logging import get_logger
from ingressctl.nginx.paths import SYSLOG_SOCKET_NAME, RuntimePaths

log = get_logger(__name__)

_NGINX_LEVEL = re.compile(r"\[(debug|info|notice|warn|error|crit|alert|emerg)\]")
_OUTPUT_TAIL = 400


class NginxOutput:
    """Recent lines NGINX printed, numbered, for error messages and reload failure detection."""

    def __init__(self, maxlen: int = _OUTPUT_TAIL) -> None:
        self._lock = threading.Condition()
        self._lines: deque[tuple[int, str]] = deque(maxlen=maxlen)
        self._seq = 0

    def append(self, line: str) -> None:
        with self._lock:
            self._seq += 1
            self._lines.append((self._seq, line))
            self._lock.notify_all()

    def wait(self, seq: int, timeout: float) -> int:
        """Block until a line after `seq` arrives or `timeout` passes; the current seq."""
        with self._lock:
            self._lock.wait_for(lambda: self._seq > seq, timeout)
            return self._seq

    @property
    def seq(self) -> int:
        with self._lock:
            return self._seq

    def since(self, seq: int) -> list[str]:
        with self._lock:
            return [line for n, line in self._lines if n > seq]


@dataclass(eq=False)
class NginxInstance:
    """One NGINX master we started, and the threads that read its output and wait for its exit."""

    proc: subprocess.Popen[bytes]
    output_start: int
    stopping: bool = False
    serving: bool = False  # set once start() saw the config version; on_exit is only called after that
    exited: threading.Event = field(default_factory=threading.Event)
    reader: threading.Thread | None = None
    waiter: threading.Thread | None = None

    def forward_output(self, output: NginxOutput) -> None:
        """Read NGINX's output until it closes: into `output` and our log (the `nginx-output` thread)."""
        stream = self.proc.stdout
        assert stream is not None
        try:
            for raw in iter(stream.readline, b""):
                line = raw.decode(errors="replace").rstrip("\r\n")
                if not line:
                    continue
                output.append(line)
                level = nginx_level(line)
                if level == "error":
                    log.error("nginx", output=line)
                elif level == "warning":
                    log.warning("nginx", output=line)
                else:
                    log.info("nginx", output=line)
        except Exception as e:  # a dying pipe must not kill the thread silently
            log.warning("reading nginx output failed", error=str(e))
        finally:
            with contextlib.suppress(OSError):
                stream.close()

    def kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def stop(self, timeout: float) -> None:
        """SIGQUIT, wait up to `timeout`, then SIGKILL the whole group; waits until it is gone."""
        self.stopping = True
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGQUIT)
            if not self.exited.wait(timeout) and self.proc.poll() is None:
                log.warning("nginx did not quit in time; killing it", pid=self.proc.pid, timeout_s=timeout)
                self.kill_group()
        self.exited.wait()
        if self.reader is not None and self.reader is not threading.current_thread():
            self.reader.join(timeout=5.0)


def nginx_level(line: str) -> str:
    m = _NGINX_LEVEL.search(line)
    level = m.group(1) if m else "notice"
    if level in ("error", "crit", "alert", "emerg"):
        return "error"
    return "warning" if level == "warn" else "info"


def leftover_master(paths: RuntimePaths, proc_root: str) -> int | None:
    """The pid of a running NGINX master of this run dir or config, from the pid file; None if none."""
    try:
        with open(paths.pid_file) as f:
            pid = int(f.read().strip() or "0")
    except (OSError, ValueError):
        return None
    try:
        with open(os.path.join(proc_root, str(pid), "cmdline"), "rb") as f:
            title = f.read().split(b"\0", 1)[0]
    except OSError:
        return None
    ours = (os.fsencode(paths.main_config) in title or os.fsencode(paths.run_dir) in title)
    if pid <= 0 or not title.startswith(b"nginx: master process") or not ours:
        return None
    return pid


def parent_pid(proc_root: str, pid: int) -> int | None:
    try:
        with open(os.path.join(proc_root, str(pid), "stat"), "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name in field 2 may contain spaces; the fields after its closing ")" are fixed.
    fields = stat[stat.rfind(b")") + 2:].split()
    return int(fields[1]) if len(fields) > 1 else None


def stop_orphan(proc_root: str, pid: int, timeout: float) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGQUIT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and os.path.exists(os.path.join(proc_root, str(pid))):
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def clean_run_dir(paths: RuntimePaths, socket_dirs: Iterable[str] = ()) -> None:
    """Remove a stale pid file and unix sockets left by an NGINX that was killed (bind would fail): those
    directly in the run dir, and those in `socket_dirs` (the modules' private API sockets)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(paths.pid_file)
    with os.scandir(paths.run_dir) as it:
        stale = [e.path for e in it
                 if e.name.endswith(".sock") and e.name != SYSLOG_SOCKET_NAME and is_socket(e.path)]
    for directory in socket_dirs:
        with contextlib.suppress(OSError), os.scandir(directory) as it:
            stale += [e.path for e in it if e.name.endswith(".sock") and is_socket(e.path)]
    for path in stale:
        with contextlib.suppress(OSError):
            os.unlink(path)


def is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False
