"""The demo's run dir: one demo per run dir at a time, and the NGINX a killed demo left running.

Guarantees:
- `RunDirLock.acquire()` takes an exclusive `flock` on `<run_dir>/demo.lock` (creating the directory and the
  file, and nothing else) before the demo touches anything in the run dir: a second demo with the same run
  dir is refused with `DemoBusyError` naming the holder's pid, having changed nothing. The kernel drops the
  lock when its holder dies, however it dies, so a killed demo never blocks the next one.
- Holding the lock proves that no live demo uses the run dir, so whatever NGINX the previous one started
  and left behind (its pid file and config in the run dir) is an orphan: `stop_leftover_nginx()` stops it,
  freeing its ports before the new demo picks its own. The NGINX run dir may live outside the run dir (unix
  socket paths are short); `remember_nginx_run_dir` notes where.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

from ingressctl.nginx.manager import Manager
from ingressctl.nginx.paths import MAIN_CONFIG_FILE, PID_FILE_NAME

LOCK_FILE = "demo.lock"
NGINX_RUN_DIR_FILE = "nginx-run-dir"


class DemoBusyError(Exception):
    """Another demo holds the run dir."""


class RunDirLock:
    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        self._fd: int | None = None

    def acquire(self) -> None:
        os.makedirs(self.run_dir, exist_ok=True)
        path = os.path.join(self.run_dir, LOCK_FILE)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise DemoBusyError(
                f"another demo (pid {holder}) is running with the run dir {os.path.abspath(self.run_dir)}; "
                "stop it first, or pass --run-dir with another directory") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)   # closing drops the flock
            self._fd = None


def remember_nginx_run_dir(run_dir: str, nginx_run_dir: str) -> None:
    with open(os.path.join(run_dir, NGINX_RUN_DIR_FILE), "w") as f:
        f.write(nginx_run_dir + "\n")


def stop_leftover_nginx(run_dir: str, conf_dir: str, nginx_run_dir: str) -> list[int]:
    """Stop an NGINX a previous demo with this run dir left running; call with the lock held. Returns the
    pids stopped."""
    candidates = [nginx_run_dir]
    with contextlib.suppress(OSError), open(os.path.join(run_dir, NGINX_RUN_DIR_FILE)) as f:
        candidates.append(f.read().strip())
    stopped: list[int] = []
    for candidate in dict.fromkeys(c for c in candidates if c):
        if not (os.path.exists(os.path.join(candidate, PID_FILE_NAME))
                and os.path.exists(os.path.join(conf_dir, MAIN_CONFIG_FILE))):
            continue
        pid = Manager(conf_dir=conf_dir, run_dir=candidate, reload_timeout_ms=10000).stop_leftover()
        if pid is not None:
            stopped.append(pid)
    return stopped
