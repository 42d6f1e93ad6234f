"""A syslog listener on a unix datagram socket (NIC's SyslogListener, `collectors/syslog_listener.go`).

NGINX's `access_log syslog:server=unix:<path>,...` sends one datagram per log line; each is decoded (UTF-8,
bad bytes replaced) and passed to the handler (`LatencyMetricsCollector.record_latency`) on the listener's
own daemon thread.

Guarantees:
- `start()` binds the socket (a stale socket file at the path is replaced; any other kind of file is an
  error, never deleted), makes it writable by NGINX's workers (which may run as another user; as root it
  warns when a directory above the socket is not searchable by them), and starts the thread.
- If the socket file disappears while running (the Manager clears stale sockets from the run dir whenever it
  (re)starts NGINX), the listener notices within `rebind_interval` seconds and binds the path again. It
  never replaces a file someone else put there.
- `stop()` wakes the thread at once, joins it, and removes the socket file if it is still ours.
- The receive buffer (`buffer_size`, default 8 KiB, at least 1024) holds a whole NGINX syslog line (NGINX caps
  a line at 2 KiB); a longer datagram is truncated by the kernel and then fails to parse as JSON.
- A handler exception is logged and counted (`handler_errors`); a receive error is logged and the loop goes
  on. The thread never dies silently: anything unexpected is logged before it ends.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import stat
import threading
import time
from collections.abc import Callable

from ingressctl.logging import get_logger

log = get_logger(__name__)

DEFAULT_BUFFER_SIZE = 8192
MIN_BUFFER_SIZE = 1024
SOCKET_MODE = 0o622  # owner rw; group and others may only send (NGINX workers may run as `nobody`)
DEFAULT_REBIND_INTERVAL = 5.0


class SyslogListener:
    """Receives syslog datagrams on a unix socket and hands each to `handler`."""

    def __init__(self, socket_path: str, handler: Callable[[str], object], *,
                 buffer_size: int = DEFAULT_BUFFER_SIZE,
                 rebind_interval: float = DEFAULT_REBIND_INTERVAL) -> None:
        if buffer_size < MIN_BUFFER_SIZE:
            raise ValueError(f"buffer size must be at least {MIN_BUFFER_SIZE} bytes, got {buffer_size}")
        if len(os.fsencode(socket_path)) > 107:
            raise ValueError(f"unix socket path {socket_path!r} is longer than 107 bytes")
        self.socket_path = socket_path
        self.buffer_size = buffer_size
        self.rebind_interval = rebind_interval
        self._handler = handler
        self._ino: int | None = None  # inode of the socket file we bound
        self._foreign_ino: int | None = None  # a file someone else put at the path (warned about once)
        self._sock: socket.socket | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.received = 0
        self.handler_errors = 0
        self.rebinds = 0
        self.socket_checks = 0

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("syslog listener already started")
        self._remove_stale_socket()
        sock = self._bind()
        self._warn_if_unreachable()
        self._sock = sock
        self._wake_r, self._wake_w = socket.socketpair()
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="syslog-listener", daemon=True)
        self._thread.start()
        log.info("syslog listener started", socket=self.socket_path)

    def stop(self, timeout: float = 5.0) -> None:
        thread = self._thread
        if thread is None:
            return
        self._stopping.set()
        if self._wake_w is not None:
            with contextlib.suppress(OSError):
                self._wake_w.send(b"x")
        thread.join(timeout)
        if thread.is_alive():
            log.warning("syslog listener did not stop in time", socket=self.socket_path)
        for s in (self._sock, self._wake_r, self._wake_w):
            if s is not None:
                s.close()
        self._sock = self._wake_r = self._wake_w = None
        self._thread = None
        if self._ino is not None and self._current_ino() == self._ino:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.socket_path)
        self._ino = None

    def _bind(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.bind(self.socket_path)
            os.chmod(self.socket_path, SOCKET_MODE)
            sock.setblocking(False)
            self._ino = os.lstat(self.socket_path).st_ino
        except OSError:
            sock.close()
            raise
        return sock

    def _current_ino(self) -> int | None:
        try:
            return os.lstat(self.socket_path).st_ino
        except OSError:
            return None

    def _warn_if_unreachable(self) -> None:
        """As root, NGINX's workers usually run as another user: they need search permission on every
        directory above the socket, or their sends fail with EACCES."""
        if os.geteuid() != 0:
            return
        directory = os.path.dirname(os.path.abspath(self.socket_path))
        while True:
            try:
                mode = os.stat(directory).st_mode
            except OSError:
                return
            if not mode & stat.S_IXOTH:
                log.warning("NGINX workers running as another user cannot reach the syslog socket: a "
                            "directory above it is not searchable by others", socket=self.socket_path,
                            directory=directory)
                return
            parent = os.path.dirname(directory)
            if parent == directory:
                return
            directory = parent

    def _remove_stale_socket(self) -> None:
        try:
            st = os.lstat(self.socket_path)
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(st.st_mode):
            raise FileExistsError(f"{self.socket_path} exists and is not a socket; refusing to replace it")
        os.unlink(self.socket_path)

    def _run(self) -> None:
        sock, wake = self._sock, self._wake_r
        assert sock is not None and wake is not None
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(sock, selectors.EVENT_READ)
                sel.register(wake, selectors.EVENT_READ)
                next_check = time.monotonic() + self.rebind_interval
                while not self._stopping.is_set():
                    for key, _ in sel.select(timeout=max(0.0, next_check - time.monotonic())):
                        if key.fileobj is sock:
                            self._drain(sock)
                    if time.monotonic() >= next_check and not self._stopping.is_set():
                        next_check = time.monotonic() + self.rebind_interval
                        new = self._rebind_if_gone()
                        if new is not None:
                            sel.unregister(sock)
                            sock.close()
                            sock = self._sock = new
                            sel.register(sock, selectors.EVENT_READ)
        except Exception as e:
            log.exception("syslog listener crashed", socket=self.socket_path, error=str(e))
        finally:
            log.info("syslog listener stopped", socket=self.socket_path)

    def _rebind_if_gone(self) -> socket.socket | None:
        """A new socket if our file was removed; None if it is still there (or someone else's is)."""
        self.socket_checks += 1
        current = self._current_ino()
        if current == self._ino:
            return None
        if current is not None:
            if current != self._foreign_ino:
                self._foreign_ino = current
                log.warning("the syslog socket path now holds another file; not replacing it",
                            socket=self.socket_path)
            return None
        try:
            new = self._bind()
        except OSError as e:
            log.warning("could not bind the syslog socket again", socket=self.socket_path, error=str(e))
            return None
        self.rebinds += 1
        log.info("syslog socket was removed; bound it again", socket=self.socket_path)
        return new

    def _drain(self, sock: socket.socket) -> None:
        while not self._stopping.is_set():
            try:
                data = sock.recv(self.buffer_size)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                log.warning("error reading from syslog socket", socket=self.socket_path, error=str(e))
                self._stopping.wait(0.1)  # no hot loop if the error persists
                return
            self.received += 1
            try:
                self._handler(data.decode("utf-8", "replace"))
            except Exception as e:
                self.handler_errors += 1
                log.exception("syslog message handler failed", error=str(e))
