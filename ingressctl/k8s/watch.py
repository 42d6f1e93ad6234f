"""One watch response as a stream of events, after client-go's `watch.StreamWatcher`.

Guarantees:
- `WatchStream` reads the response line by line at the byte level (chunk boundaries need not align with
  events), decodes complete lines only, and ends cleanly on EOF, a read timeout or a reset connection. A line
  that is not a valid event becomes one synthetic `ERROR` event (Status InternalError) and ends the stream, as
  client-go's stream watcher does; a stream that closes in the middle of an event is logged and ends cleanly.
- `close()` may be called from any thread and unblocks a blocked read; a stream that ended normally gives its
  connection back to the pool.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import urllib3

from ingressctl.k8s.codec import raw_loads
from ingressctl.logging import get_logger

log = get_logger(__name__)


class WatchStream:
    """Iterator over one watch response's events; a context manager; `close()` may be called from any thread.

    Yields `{"type": ..., "object": {...}}` dicts. Ends (StopIteration) on EOF, read timeout, reset connection
    or `close()`. A malformed line yields one synthetic ERROR event and ends the stream.
    """

    _READ_SIZE = 256 * 1024

    def __init__(self, response: urllib3.BaseHTTPResponse, description: str, *,
                 max_line_bytes: int = 64 * 1024 * 1024) -> None:
        self._resp = response
        self._description = description
        self._max_line = max_line_bytes
        self._buf = bytearray()
        self._scan_from = 0
        self._done = False
        self._closed = False
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __next__(self) -> dict[str, Any]:
        while True:
            nl = self._buf.find(b"\n", self._scan_from)
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[:nl + 1]
                self._scan_from = 0
                if not line.strip():
                    continue
                return self._decode(line)
            self._scan_from = len(self._buf)
            if self._done:
                raise StopIteration
            if len(self._buf) > self._max_line:
                return self._fail(f"watch event larger than {self._max_line} bytes")
            chunk = self._read()
            if chunk:
                self._buf += chunk
                continue
            self._done = True
            self._finish()
            rest = bytes(self._buf).strip()
            self._buf.clear()
            self._scan_from = 0
            if rest:
                # The server may omit the final newline; anything that does not parse is a torn event.
                try:
                    event = raw_loads(rest)
                except ValueError:
                    log.warning("watch stream closed in the middle of an event; discarding the partial event",
                                watch=self._description, partial_bytes=len(rest))
                    raise StopIteration from None
                if _valid_event(event):
                    return event  # type: ignore[no-any-return]
                return self._fail(f"invalid watch event at end of stream: {rest[:200]!r}")
            raise StopIteration

    def _read(self) -> bytes:
        if self._closed:
            return b""
        try:
            return self._resp.read1(self._READ_SIZE)
        except (urllib3.exceptions.ReadTimeoutError, TimeoutError) as e:
            if not self._closed:
                log.info("watch read timed out; ending the stream", watch=self._description, error=str(e))
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as e:
            # Connection reset, protocol error, or the socket was shut down by close() from another thread.
            if not self._closed:
                log.info("watch connection ended", watch=self._description, error=str(e))
        return b""

    def _decode(self, line: bytes) -> dict[str, Any]:
        try:
            event = raw_loads(line)
        except ValueError as e:
            return self._fail(f"unable to decode an event from the watch stream: {e}; line: {line[:200]!r}")
        if not _valid_event(event):
            return self._fail(f"invalid watch event (want an object with type and object): {line[:200]!r}")
        return event  # type: ignore[no-any-return]

    def _fail(self, message: str) -> dict[str, Any]:
        self._done = True
        self._buf.clear()
        self._scan_from = 0
        self.close()
        return {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                            "status": "Failure", "reason": "InternalError", "code": 500,
                                            "message": message}}

    def _finish(self) -> None:
        """Normal end of body: give the connection back to the pool."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with contextlib.suppress(Exception):
            self._resp.release_conn()

    def close(self) -> None:
        """Stop reading; safe from another thread (unblocks a blocked read)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._done = True
        for step in (self._resp.shutdown, self._resp.close, self._resp.release_conn):
            try:
                step()
            except Exception:
                continue


def _valid_event(event: Any) -> bool:
    return (isinstance(event, dict) and isinstance(event.get("type"), str)
            and isinstance(event.get("object"), dict))

