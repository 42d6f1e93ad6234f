"""One watch response of the devcluster: initial events, live events, bookmarks, the timeout and abrupt drops.

Guarantees: events are chunked JSON lines in commit order with no gap or duplicate; a filtered watch turns an
object that starts or stops matching into ADDED or DELETED, as kube-apiserver does; the stream ends cleanly at
`timeoutSeconds` (a bookmark first when allowed), abruptly when faults drop it or the server stops, with one
ERROR event (HTTP 200) for a too-old resourceVersion, and when the kind goes away after its last events; a
client that stops reading for `write_timeout` is dropped.
"""

from __future__ import annotations

import contextlib
import random
import select
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass

from ingressctl.devcluster import errors, printing
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.handler import BaseHandler
from ingressctl.devcluster.objects import (
    ADDED,
    DELETED,
    MODIFIED,
    Event,
    Matcher,
    Stored,
    Watcher,
    dumps,
    parse_resource_version,
)
from ingressctl.devcluster.request import ResourceRequest, bool_param, int_param
from ingressctl.devcluster.resources import Obj, ResourceKind
from ingressctl.logging import get_logger

log = get_logger(__name__)


@dataclass(frozen=True)
class WatchEncoding:
    """What a watch needs from the verbs: the request's selector, the kind's storage view and the encoders
    of one object (as a dict for tables, as bytes otherwise)."""

    matcher: Matcher
    view: Callable[[Stored], Obj] | None
    object_dict: Callable[[ResourceKind, Stored], Obj]
    object_bytes: Callable[[ResourceKind, Stored], bytes]


class WatchStream:
    """One watch response: initial events, live events, bookmarks, timeout and abrupt drops."""

    def __init__(self, handler: BaseHandler, req: ResourceRequest, encoding: WatchEncoding) -> None:
        self.h = handler
        self.req = req
        self.kind = req.kind
        q = req.query
        self.encoding = encoding
        self.matcher = encoding.matcher
        self.filtered = not self.matcher.empty
        self.view = encoding.view
        self.bookmarks = bool_param(q, "allowWatchBookmarks") is True
        self.send_initial = bool_param(q, "sendInitialEvents")
        rv_match = q.get("resourceVersionMatch", "")
        if self.send_initial is not None:
            if rv_match != "NotOlderThan":
                raise errors.bad_request("resourceVersionMatch: Forbidden: sendInitialEvents requires "
                                         "setting resourceVersionMatch to NotOlderThan")
            if self.send_initial and not self.bookmarks:
                raise errors.bad_request("allowWatchBookmarks: Forbidden: sendInitialEvents requires "
                                         "allowWatchBookmarks=true")
        elif rv_match:
            raise errors.bad_request("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for "
                                     "watch unless sendInitialEvents is provided")
        self.resource_version = q.get("resourceVersion", "")
        if self.resource_version not in ("", "0"):
            parse_resource_version(self.resource_version)
        timeout = int_param(q, "timeoutSeconds")
        cfg = handler.server.config
        self.timeout = float(timeout) if timeout else cfg.min_request_timeout * (1 + random.random())
        self.table_version = printing.wants_table(handler.headers.get("Accept", ""))
        self.include_object = q.get("includeObject", "Metadata")
        self.chunked = handler.request_version != "HTTP/1.0"
        self.prefix = b'{"kind":"%s","apiVersion":"%s"' % (self.kind.kind.encode(),
                                                           self.kind.api_version.encode())
        self.cache_id = "" if (self.view is None and not self.table_version) else None

    # ---- encoding

    def _object(self, stored: Stored) -> bytes:
        if self.table_version:
            obj = self.encoding.object_dict(self.kind, stored)
            return dumps(printing.table(self.kind, [obj], version=self.table_version,
                                        include_object=self.include_object,
                                        list_meta={"resourceVersion": str(stored.rv)}))
        return self.encoding.object_bytes(self.kind, stored)

    def _line(self, etype: str, stored: Stored) -> bytes:
        return b'{"type":"%s","object":%s}\n' % (etype.encode(), self._object(stored))

    def encode(self, ev: Event) -> bytes | None:
        if self.req.namespace and ev.namespace != self.req.namespace:
            return None
        etype, stored = ev.type, ev.stored
        if self.filtered:
            now_match = self.matcher(stored)
            if etype == MODIFIED:
                was_match = ev.prev is not None and self.matcher(ev.prev)
                if now_match and not was_match:
                    etype = ADDED
                elif was_match and not now_match:
                    # An object that stops matching is seen as deleted: its previous state at the event's RV.
                    assert ev.prev is not None
                    old = ev.prev.parse()
                    old["metadata"]["resourceVersion"] = str(ev.rv)
                    return self._line(DELETED, Stored(dumps(old), ev.rv, old["metadata"]))
                elif not now_match:
                    return None
            elif not now_match:
                return None
        if self.cache_id is None or stored is not ev.stored:
            return self._line(etype, stored)
        line = ev.lines.get(etype)
        if line is None:
            line = ev.lines[etype] = self._line(etype, stored)
        return line

    def bookmark(self, rv: int, initial_end: bool = False) -> bytes:
        meta = b'{"resourceVersion":"%d"}' % rv
        if initial_end:
            meta = b'{"resourceVersion":"%d","annotations":{"k8s.io/initial-events-end":"true"}}' % rv
        return b'{"type":"BOOKMARK","object":%s,"metadata":%s}}\n' % (self.prefix, meta)

    # ---- output
    def write(self, data: bytes) -> None:
        if not data:
            return
        if self.chunked:
            data = b"%x\r\n%s\r\n" % (len(data), data)
        self.h.wfile.write(data)

    def send_headers(self) -> None:
        self.h._status = 200
        head = ["HTTP/1.1 200 OK", "Content-Type: application/json", "Cache-Control: no-cache, private"]
        if self.chunked:
            head.append("Transfer-Encoding: chunked")
        else:
            head.append("Connection: close")
            self.h.close_connection = True
        self.h.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode())

    def end(self) -> None:
        if self.chunked:
            self.h.wfile.write(b"0\r\n\r\n")

    def abort(self) -> None:
        self.h.close_connection = True
        with contextlib.suppress(OSError):
            self.h.connection.shutdown(socket.SHUT_RDWR)

    def write_events(self, events: list[Event]) -> None:
        out = []
        for ev in events:
            line = self.encode(ev)
            if line is not None:
                out.append(line)
            if len(out) >= 512:
                self.write(b"".join(out))
                out = []
        self.write(b"".join(out))

    def client_gone(self) -> bool:
        conn = self.h.connection
        try:
            readable, _, _ = select.select([conn], [], [], 0)
            if not readable:
                return False
            if isinstance(conn, ssl.SSLSocket):
                conn.settimeout(0.01)
                try:
                    return bool(conn.recv(1) == b"")
                except (TimeoutError, ssl.SSLWantReadError):
                    return False
                finally:
                    conn.settimeout(self.h.server.config.write_timeout)
            return bool(conn.recv(1, socket.MSG_PEEK) == b"")
        except (OSError, ValueError):
            return True

    def run(self) -> None:
        store = self.h.server.store
        try:
            watcher, initial = store.watch(self.kind, self.req.namespace,
                                           resource_version=self.resource_version,
                                           send_initial_events=self.send_initial)
        except StatusError as e:
            if e.code != 410:
                raise
            self.send_headers()
            self.write(b'{"type":"ERROR","object":%s}\n' % e.body())
            self.end()
            return
        try:
            self.h.connection.settimeout(self.h.server.config.write_timeout)
            self._stream(watcher, initial)
        except (OSError, ssl.SSLError):
            self.h.close_connection = True
        except Exception as e:   # the response has started: cut the stream, never write an error into it
            log.error("devcluster watch failed", resource=self.req.resource, error=str(e), exc_info=True)
            self.abort()
        finally:
            store.unregister(watcher)

    def _stream(self, watcher: Watcher, initial: list[Event]) -> None:
        srv = self.h.server
        store = srv.store
        watcher.closer = self.abort
        self.send_headers()
        self.write_events(initial)
        if self.send_initial and self.bookmarks:
            pending, rv = store.bookmark_point(watcher)
            self.write_events(pending)
            self.write(self.bookmark(rv, initial_end=True))
        now = time.monotonic()
        deadline = now + self.timeout
        interval = srv.config.bookmark_interval
        next_bookmark = now + interval if self.bookmarks else float("inf")
        while True:
            if watcher.dropped or srv.stopping.is_set():
                self.abort()
                return
            now = time.monotonic()
            if now >= deadline:
                if self.bookmarks:
                    pending, rv = store.bookmark_point(watcher)
                    self.write_events(pending)
                    self.write(self.bookmark(rv))
                else:
                    self.write_events(watcher.drain())
                self.end()
                return
            if now >= next_bookmark:
                pending, rv = store.bookmark_point(watcher)
                self.write_events(pending)
                self.write(self.bookmark(rv))
                next_bookmark = now + interval
                continue
            events = watcher.wait(min(deadline, next_bookmark, now + 1.0) - now)
            if watcher.dropped:
                continue
            if events:
                self.write_events(events)
            elif self.client_gone():
                self.h.close_connection = True
                return
            if watcher.ended:
                self.write_events(watcher.drain())
                self.end()
                return
            if watcher.overflowed:
                log.warning("devcluster closing a watch that fell behind", resource=self.req.resource)
                self.end()
                return
