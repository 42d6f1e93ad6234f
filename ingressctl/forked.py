"""Work done in a child process forked at start-up, its result sent back pickled through a pipe.

Start-up work in Python runs on one core at a time; a forked child runs on another, sharing this process's
memory copy-on-write (its inputs are not copied). `configs.prerender` renders in such children, and the
Secret store writes its files in one (`controller.secrets`).

Guarantees:
- `ForkedCall.start(fn)` forks a child that runs `fn()` with its garbage collector disabled, sends what `fn`
  returned (pickled) and leaves with `os._exit`: no atexit handlers, no flush of this process's buffers.
  `fn` runs in a copy of a process whose other threads may have held locks at the fork: it must take none
  (nor log). Its effects on memory are lost; what it does outside memory (files) is not.
- `result(deadline)` is what `fn` returned, or None with the reason: the fork failed, `fn` raised, the child
  died or was killed, sent something that cannot be unpickled, or was not done by `deadline` (it is then
  killed). The child is always reaped: by `result`, or by `close` (which kills it if it is still running).
- The objects alive at a fork move to the collector's permanent generation (`gc.freeze`, as the informers do
  when they sync, and never undone: `gc.unfreeze` would also thaw the informer caches): a full collection in
  this process would otherwise touch every one of them while a child shares their pages. They are still
  freed by reference counting; only garbage cycles that exist at that moment are kept.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import select
import signal
import time
from collections.abc import Callable
from typing import Generic, TypeVar

R = TypeVar("R")

_READ_CHUNK = 1 << 20


class ForkedCall(Generic[R]):
    """One child running one call; see the module docstring."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self._fd = fd
        self._reaped = False
        self.unpickle_seconds = 0.0  # of `result`'s time, spent unpickling

    @classmethod
    def start(cls, fn: Callable[[], R]) -> ForkedCall[R] | None:
        """Fork a child that runs `fn`; None if this platform or the kernel refused the fork."""
        if not hasattr(os, "fork"):
            return None
        read_fd, write_fd = os.pipe()
        gc.freeze()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            return None
        if pid == 0:
            os.close(read_fd)
            _run_child(fn, write_fd)
        os.close(write_fd)
        return cls(pid, read_fd)

    def result(self, deadline: float) -> tuple[R | None, str]:
        """(what `fn` returned, "") or (None, why not); waits until `deadline` (time.monotonic) at most."""
        if self._reaped:
            return None, "already taken"
        payload = _read_all(self._fd, deadline)
        if payload is None:  # not done in time (stuck, e.g. on a lock taken at the fork)
            _kill(self.pid)
        status = self._reap()
        if payload is None:
            return None, "not done in time: killed"
        if status != 0:
            return None, f"exit status {status}"
        t0 = time.monotonic()
        try:
            return pickle.loads(payload), ""
        except Exception as e:
            return None, f"results unreadable ({len(payload)} bytes): {type(e).__name__}: {e}"
        finally:
            self.unpickle_seconds = time.monotonic() - t0

    def close(self) -> None:
        """Kill the child if it still runs, and reap it (no-op once done)."""
        if not self._reaped:
            _kill(self.pid)
            self._reap()

    def _reap(self) -> int | None:
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._reaped = True
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return None
        return os.waitstatus_to_exitcode(status)


def _run_child(fn: Callable[[], R], write_fd: int) -> None:
    """The child's side: run, send, leave (never returns)."""
    code = 1
    try:
        gc.disable()
        data = pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(write_fd, view):]
        code = 0
    finally:
        os._exit(code)


def _read_all(fd: int, deadline: float) -> bytes | None:
    """Everything the child sends until it closes the pipe; None if that takes past `deadline`."""
    chunks: list[bytes] = []
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, _READ_CHUNK)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    except OSError:
        return b""


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def private_bytes() -> int:
    """The memory of this process that no other process shares (Private_Clean + Private_Dirty of
    /proc/self/smaps_rollup), 0 if unknown."""
    total = 0
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    total += int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return 0
    return total
