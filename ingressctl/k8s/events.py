"""An event recorder for core/v1 Events, after client-go's `tools/record`.

Guarantees:
- `event()` never blocks on the API: it validates, builds the involvedObject reference and puts the event
  into a bounded buffer that one background writer thread drains. When the buffer is full the event is
  dropped and counted (`dropped`); a warning is logged at most once per `drop_log_interval`. Memory never
  grows with an API outage.
- Repeats aggregate: events with the same involvedObject (apiVersion, kind, namespace, name, uid), type,
  reason, message and source are one Event whose `count` and `lastTimestamp` grow. Repeats still waiting in
  the buffer merge in place (no new slot); repeats of an Event already written PATCH it (merge patch of
  count, lastTimestamp, message). A bounded LRU cache (`cache_size`) remembers written Events; a PATCH that
  finds the Event gone re-creates it.
- Event objects follow client-go: name `<object name>.<16+ hex digits of the Unix time in ns>` (unique per
  recorder), the object's namespace ("default" for cluster-scoped objects), type Normal or Warning,
  source.component/host, reportingComponent/reportingInstance, firstTimestamp/lastTimestamp (RFC 3339
  seconds). Messages are cut to `max_message_bytes` (1024 by default, the API's limit for an events.k8s.io
  note) on a UTF-8 boundary.
- Network errors, 429 and 5xx are retried up to `max_tries` times, `retry_interval` apart (the first wait
  jittered); any other API error (the server rejected the Event) is logged and not retried, as client-go
  does.
- `stop(timeout)` writes what it can within `timeout` (one more try per event, no retry sleeps), counts the
  rest as dropped, and stops the writer. Events recorded after `stop()` are dropped and counted. Bad input
  (an unknown type, an object without a name or kind) is logged and dropped; it never raises into the
  caller.
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from ingressctl.k8s.clock import Clock, RealClock
from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.resource import EVENTS, ResourceType
from ingressctl.logging import get_logger

__all__ = [
    "EVENT_TYPE_NORMAL", "EVENT_TYPE_WARNING", "EventClient", "EventRecorder", "RecorderStats", "format_time",
]

log = get_logger(__name__)

EVENT_TYPE_NORMAL = "Normal"
EVENT_TYPE_WARNING = "Warning"
_EVENT_TYPES = frozenset({EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING})


class EventClient(Protocol):
    """The part of `KubeClient` the recorder uses."""

    def create(self, rt: ResourceType, namespace: str | None, body: dict[str, Any], /) -> dict[str, Any]: ...

    def patch(self, rt: ResourceType, namespace: str | None, name: str, patch: Any, /, *,
              patch_type: Any = ...) -> dict[str, Any]: ...


def format_time(dt: datetime) -> str:
    """metav1.Time: UTC, RFC 3339, whole seconds (`2026-11-21T03:00:00Z`)."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Pending:
    namespace: str
    ref: dict[str, str]
    event_type: str
    reason: str
    message: str
    first: datetime
    last: datetime
    count: int = 1


@dataclass
class _Known:
    name: str
    namespace: str
    count: int
    first: datetime


@dataclass
class RecorderStats:
    """Counters since the recorder was built."""

    recorded: int = 0     # accepted by event() (aggregated repeats included)
    dropped: int = 0      # buffer full, stopped, or left over at stop
    created: int = 0      # Events created
    patched: int = 0      # Events aggregated by PATCH
    failed: int = 0       # writes given up (rejected or out of retries)
    invalid: int = 0      # rejected by event() as bad input


class EventRecorder:
    """Records Events for objects (plain dicts) without ever blocking the caller."""

    def __init__(self, client: EventClient, *, component: str = "nginx-ingress-controller", host: str = "",
                 buffer_size: int = 1000, cache_size: int = 4096, max_tries: int = 12,
                 retry_interval: float = 10.0, drop_log_interval: float = 10.0, max_message_bytes: int = 1024,
                 clock: Clock | None = None, rng: random.Random | None = None) -> None:
        if buffer_size < 1 or cache_size < 1 or max_tries < 1 or max_message_bytes < 1:
            raise ValueError("buffer_size, cache_size, max_tries and max_message_bytes must be at least 1")
        if retry_interval < 0 or drop_log_interval < 0:
            raise ValueError("retry_interval and drop_log_interval must not be negative")
        if not component:
            raise ValueError("component must not be empty")
        self._client = client
        self.component = component
        self.host = host
        self.buffer_size = buffer_size
        self.cache_size = cache_size
        self.max_tries = max_tries
        self.retry_interval = retry_interval
        self.drop_log_interval = drop_log_interval
        self.max_message_bytes = max_message_bytes
        self._clock: Clock = clock if clock is not None else RealClock()
        self._rng = rng if rng is not None else random.Random()

        self._cond = threading.Condition()
        self._pending: OrderedDict[Hashable, _Pending] = OrderedDict()  # guarded by _cond
        self._started = False
        self._stopping = False
        self._stop_deadline = 0.0
        self._stats = RecorderStats()
        self._drops_since_log = 0
        self._last_drop_log: float | None = None
        self._last_nanos = 0
        # Written Events, most recently used last; touched by the writer thread only.
        self._known: OrderedDict[Hashable, _Known] = OrderedDict()
        self._thread: threading.Thread | None = None

    # -- public ----------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the writer thread."""
        with self._cond:
            if self._started:
                raise RuntimeError("EventRecorder.start() called twice")
            self._started = True
        self._thread = threading.Thread(target=self._writer, name=f"event-recorder-{self.component}",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Write what can be written within `timeout` seconds, then stop; the rest is counted as dropped."""
        with self._cond:
            if not self._stopping:
                self._stopping = True
                self._stop_deadline = self._clock.now() + max(0.0, timeout)
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(max(0.0, timeout) + 1.0)
            if thread.is_alive():
                log.warning("event writer did not stop in time", component=self.component)
        else:
            with self._cond:
                left = len(self._pending)
                self._pending.clear()
                self._stats.dropped += left

    def event(self, obj: dict[str, Any], event_type: str, reason: str, message: str, *,
              kind: str | None = None, api_version: str | None = None) -> None:
        """Record an event about `obj`. Never blocks on the API and never raises.

        `kind`/`api_version` fill in what `obj` lacks (items of a List response carry neither).
        """
        try:
            item = self._build(obj, event_type, reason, message, kind, api_version)
        except ValueError as e:
            with self._cond:
                self._stats.invalid += 1
            log.error("dropping invalid event", reason=reason, error=str(e))
            return
        key = self._key(item)
        log_drop: tuple[int, int] | None = None
        with self._cond:
            self._stats.recorded += 1
            pending = self._pending.get(key)
            if pending is not None and not self._stopping:
                pending.count += 1
                pending.last = item.last
                pending.ref = item.ref  # the latest resourceVersion
            elif self._stopping or len(self._pending) >= self.buffer_size:
                log_drop = self._count_drop_locked()
            else:
                self._pending[key] = item
                self._cond.notify_all()
        if log_drop is not None:
            since, total = log_drop
            log.warning("event buffer full or recorder stopped; dropping events", component=self.component,
                        dropped=since, dropped_total=total, buffer_size=self.buffer_size)

    @property
    def stats(self) -> RecorderStats:
        """A snapshot of the counters."""
        with self._cond:
            s = self._stats
            return RecorderStats(s.recorded, s.dropped, s.created, s.patched, s.failed, s.invalid)

    @property
    def dropped(self) -> int:
        with self._cond:
            return self._stats.dropped

    def pending(self) -> int:
        """Distinct events waiting in the buffer."""
        with self._cond:
            return len(self._pending)

    # -- building --------------------------------------------------------------------------------------------

    def _build(self, obj: dict[str, Any], event_type: str, reason: str, message: str,
               kind: str | None, api_version: str | None) -> _Pending:
        if event_type not in _EVENT_TYPES:
            raise ValueError(f"unsupported event type {event_type!r}; want Normal or Warning")
        if not isinstance(obj, dict):
            raise ValueError(f"object is not a dict: {type(obj).__name__}")
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
            raise ValueError("object has no metadata.name")
        kind = kind or obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise ValueError(f"object {meta['name']!r} has no kind; pass kind=")
        api_version = api_version or obj.get("apiVersion") or ""
        if not isinstance(reason, str) or not reason:
            raise ValueError("reason must be a non-empty string")
        if not isinstance(message, str):
            raise ValueError("message must be a string")
        ref: dict[str, str] = {"kind": kind, "name": meta["name"]}
        for key, value in (("apiVersion", api_version), ("namespace", meta.get("namespace")),
                           ("uid", meta.get("uid")), ("resourceVersion", meta.get("resourceVersion"))):
            if isinstance(value, str) and value:
                ref[key] = value
        now = self._clock.wall()
        return _Pending(namespace=ref.get("namespace") or "default", ref=ref, event_type=event_type,
                        reason=reason, message=_truncate(message, self.max_message_bytes),
                        first=now, last=now)

    def _key(self, item: _Pending) -> Hashable:
        ref = item.ref
        return (self.component, self.host, ref.get("apiVersion", ""), ref["kind"], ref.get("namespace", ""),
                ref["name"], ref.get("uid", ""), item.event_type, item.reason, item.message)

    def _count_drop_locked(self) -> tuple[int, int] | None:
        self._stats.dropped += 1
        self._drops_since_log += 1
        now = self._clock.now()
        if self._last_drop_log is None or now - self._last_drop_log >= self.drop_log_interval:
            self._last_drop_log = now
            since, self._drops_since_log = self._drops_since_log, 0
            return since, self._stats.dropped
        return None

    def _event_name(self, obj_name: str) -> str:
        wall = self._clock.wall()
        nanos = int(wall.timestamp()) * 1_000_000_000 + wall.microsecond * 1000
        nanos = max(nanos, self._last_nanos + 1)  # unique even within one microsecond
        self._last_nanos = nanos
        return f"{obj_name}.{nanos:016x}"

    # -- writer ----------------------------------------------------------------------------------------------

    def _writer(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if not self._pending:
                    return
                if self._stopping and self._clock.now() >= self._stop_deadline:
                    left = len(self._pending)
                    self._pending.clear()
                    self._stats.dropped += left
                    if left:
                        log.warning("event recorder stopped with unwritten events", dropped=left)
                    return
                key, item = self._pending.popitem(last=False)
            try:
                self._write(key, item)
            except Exception:
                log.exception("writing event failed", reason=item.reason, object=item.ref.get("name"))
                with self._cond:
                    self._stats.failed += 1

    def _write(self, key: Hashable, item: _Pending) -> None:
        tries = 0
        while True:
            tries += 1
            try:
                self._write_once(key, item)
                return
            except ApiError as e:
                retryable = e.is_network_error or e.is_too_many_requests or e.is_server_error
                if not retryable or tries >= self.max_tries or self._is_stopping():
                    with self._cond:
                        self._stats.failed += 1
                    level = log.warning if retryable else log.error
                    level("unable to write event", reason=item.reason, object=item.ref.get("name"),
                          namespace=item.namespace, tries=tries, retry=False, error=str(e))
                    return
                log.info("unable to write event; will retry", reason=item.reason, object=item.ref.get("name"),
                         tries=tries, error=str(e))
                delay = self.retry_interval
                if tries == 1:
                    delay *= self._rng.random()  # spread the first retry, as client-go does
                self._sleep(delay)

    def _write_once(self, key: Hashable, item: _Pending) -> None:
        known = self._known.get(key)
        if known is not None:
            count = known.count + item.count
            try:
                self._client.patch(EVENTS, known.namespace, known.name,
                                   {"count": count, "lastTimestamp": format_time(item.last),
                                    "message": item.message}, patch_type="merge")
            except ApiError as e:
                if not e.is_not_found:
                    raise
                # The Event expired or was deleted: create it again under the same name.
                self._create(key, item, known.name, count, known.first)
                return
            known.count = count
            self._known.move_to_end(key)
            with self._cond:
                self._stats.patched += 1
            return
        self._create(key, item, self._event_name(item.ref["name"]), item.count, item.first)

    def _create(self, key: Hashable, item: _Pending, name: str, count: int, first: datetime) -> None:
        body: dict[str, Any] = {
            "apiVersion": EVENTS.api_version, "kind": EVENTS.kind,
            "metadata": {"name": name, "namespace": item.namespace},
            "involvedObject": dict(item.ref),
            "reason": item.reason,
            "message": item.message,
            "type": item.event_type,
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "firstTimestamp": format_time(first),
            "lastTimestamp": format_time(item.last),
            "count": count,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
        try:
            self._client.create(EVENTS, item.namespace, body)
        except ApiError as e:
            if not e.is_already_exists:
                raise
            log.info("event already exists; not retrying", name=name, namespace=item.namespace)
        self._known[key] = _Known(name=name, namespace=item.namespace, count=count, first=first)
        self._known.move_to_end(key)
        while len(self._known) > self.cache_size:
            self._known.popitem(last=False)
        with self._cond:
            self._stats.created += 1

    def _sleep(self, seconds: float) -> None:
        """Sleep on the clock; cut short by stop()."""
        with self._cond:
            deadline = self._clock.now() + seconds
            while not self._stopping and (remaining := deadline - self._clock.now()) > 0:
                self._clock.wait(self._cond, remaining)

    def _is_stopping(self) -> bool:
        with self._cond:
            return self._stopping


def _truncate(message: str, limit: int) -> str:
    data = message.encode("utf-8")
    if len(data) <= limit:
        return message
    return data[:limit].decode("utf-8", "ignore")
