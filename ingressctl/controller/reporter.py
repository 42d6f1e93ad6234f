"""The reporter: events, status and problems of configuration resources of every kind (NIC's
`updateResourcesStatusAndEvents` and `processProblems`), and the status bookkeeping.

Guarantees:
- Events follow NIC's reasons and messages, name the object by its kind and
  apiVersion from the registry, and never raise (a failing recorder is logged). Normal events are logged at
  debug, warnings at warning level.
- A kind's status writer with an `observe_event(obj, type, reason, message)` method sees every event on
  that kind's resources before the status write that follows it (custom resources report their outcome).
- Status goes to the resource's kind's writer through `StatusWriters`: written only when it changes, only
  with `--report-ingress-status`, only by the leader; during start-up it is deferred to the flush (returned by
  `take_deferred()`). A failed write is logged, never raised.
- `status_keys()` holds every configured resource of every kind (parents and their children), keyed by
  `ResourceKey`: the became-leader callback and the flush write exactly these. Thread-safe.
- A reload outcome marks exactly the resources it blames (by `ResourceKey`); a resource blamed but rendered
  earlier in a batch gets its error event here too. A child blamed for its part of its parent's file (a
  shared host's member, `ReloadOutcome.failed_parts`) gets the error event and no status; its parent and
  the other children are reported as configured. A parent whose own change is refused while its children's
  are served (`ReloadOutcome.parts_served`) gets the error alone.
- `HeldReports` keeps a batch's outcomes until the batch's one reload, so that an event or a Valid status is
  never written before the configuration it describes is live.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ingressctl.configs.files import ReloadOutcome
from ingressctl.controller.configuration import ConfigurationProblem, ResourceChange
from ingressctl.controller.kinds import Applied, KindRegistry
from ingressctl.controller.model import Resource
from ingressctl.controller.status import StatusWriters
from ingressctl.k8s.resource import ResourceType
from ingressctl.keys import ResourceKey, object_key
from ingressctl.logging import get_logger

log = get_logger(__name__)

EVENT_NORMAL = "Normal"
EVENT_WARNING = "Warning"
REASON_ADDED_OR_UPDATED = "AddedOrUpdated"
REASON_ADDED_OR_UPDATED_WITH_WARNING = "AddedOrUpdatedWithWarning"
REASON_ADDED_OR_UPDATED_WITH_ERROR = "AddedOrUpdatedWithError"
REASON_REJECTED = "Rejected"


class EventSink(Protocol):
    def event(self, obj: dict[str, Any], event_type: str, reason: str, message: str, *,
              kind: str | None = None, api_version: str | None = None) -> None: ...


def added_event(key: str, warnings: list[str], error: str) -> tuple[str, str, str]:
    """NIC's event for an added or updated resource: (type, reason, message)."""
    msg = f"Configuration for {key} was added or updated"
    if warnings:
        msg += " with warning(s): " + "; ".join(warnings)
    if error:
        return EVENT_WARNING, REASON_ADDED_OR_UPDATED_WITH_ERROR, f"{msg}; but was not applied: {error}"
    if warnings:
        return EVENT_WARNING, REASON_ADDED_OR_UPDATED_WITH_WARNING, msg
    return EVENT_NORMAL, REASON_ADDED_OR_UPDATED, msg


def custom_resource_added_event(key: str, resource_warnings: list[str], other_warnings: list[str],
                                error: str) -> tuple[str, str, str]:
    """NIC's event for an added or updated custom resource (VirtualServer, VirtualServerRoute,
    TransportServer): the resource's own warnings
    ("with warning(s): w1; w2"), then the configurator's ("; with warning(s): ..."), then an apply error
    ("; but was not applied: ..."); NIC's text keeps its trailing space when there is nothing to add."""
    detail = ""
    event_type, reason = EVENT_NORMAL, REASON_ADDED_OR_UPDATED
    if resource_warnings:
        detail = "with warning(s): " + "; ".join(resource_warnings)
    if other_warnings:
        detail = f"{detail}; with warning(s): " + "; ".join(other_warnings)
    if resource_warnings or other_warnings:
        event_type, reason = EVENT_WARNING, REASON_ADDED_OR_UPDATED_WITH_WARNING
    if error:
        detail = f"{detail}; but was not applied: {error}"
        event_type, reason = EVENT_WARNING, REASON_ADDED_OR_UPDATED_WITH_ERROR
    return event_type, reason, f"Configuration for {key} was added or updated {detail}"


class MessageStyle(Protocol):
    """A kind whose events use NIC's custom-resource wording (its Configuration model implements it)."""

    def rejected_message(self, key: str, detail: str) -> str:
        """The Rejected text for `detail` ("with error: ..." or "with warning(s): ...")."""


def child_error(applied: Applied, child: ResourceKey) -> str:
    """Why a child's part of the applied resource's file is not served ("" when it is)."""
    own = applied.child_errors.get(child.ns_name, "")
    return own or ("" if applied.parts_served else applied.error)


def keys_of(resource: Resource) -> list[ResourceKey]:
    """The resource's key and its children's."""
    return [resource.key_with_kind, *(k for k, _ in resource.children())]


class Reporter:
    """See the module docstring."""

    def __init__(self, kinds: KindRegistry, status: StatusWriters, recorder: EventSink | None,
                 get_object: Callable[[ResourceKey], dict[str, Any] | None],
                 is_ready: Callable[[], bool]) -> None:
        self._kinds = kinds
        self.status = status
        self._recorder = recorder
        self._get_object = get_object
        self._is_ready = is_ready
        self._lock = threading.Lock()
        self._status_keys: set[ResourceKey] = set()     # configured resources (parents and children)
        self._deferred: list[ResourceKey] = []          # start-up statuses for the flush

    # ------------------------------------------------------------------------------------------ bookkeeping

    def status_keys(self) -> list[ResourceKey]:
        with self._lock:
            return sorted(self._status_keys)

    def forget(self, resource: Resource) -> None:
        with self._lock:
            self._status_keys.difference_update(keys_of(resource))

    def track_status(self, key: ResourceKey, *, defer: bool) -> None:
        """A resource outside the Configuration (a Policy) whose outcome was just reported: its status is
        written now (ready), or deferred to the start-up flush; the became-leader writes include it."""
        with self._lock:
            self._status_keys.add(key)
        if defer:
            self._deferred.append(key)
        elif self._is_ready():
            self._safe_status(self.status.update, key)

    def untrack_status(self, key: ResourceKey) -> None:
        with self._lock:
            self._status_keys.discard(key)

    def take_deferred(self) -> list[ResourceKey]:
        """The statuses deferred during start-up (each once)."""
        keys, self._deferred = self._deferred, []
        return keys

    # ------------------------------------------------------------------------------------------ outcomes

    def mark_failed(self, applied: list[Applied], outcome: ReloadOutcome | None) -> None:
        """Attach the outcome's errors to the applied resources; report those blamed but not in `applied`."""
        if outcome is None:
            return
        failed = outcome.failed
        if outcome.batch_failed and not failed:
            for a in applied:
                a.error = outcome.error
            return
        known: set[ResourceKey] = set()
        parts = outcome.failed_parts
        for a in applied:
            keys = keys_of(a.resource)
            known.update(keys)
            for k in keys:
                if k in failed:
                    a.error = failed[k]
                    break
            a.child_errors.update((p.ns_name, e) for p, e in parts.get(a.resource.key_with_kind, {}).items())
            a.parts_served = a.resource.key_with_kind in outcome.parts_served
        refused = [(k, err) for k, err in failed.items() if k not in known]
        refused += [(p, err) for k, errs in parts.items() if k not in known for p, err in errs.items()]
        for k, err in refused:
            # A resource rendered earlier in a batch (or its part of another's file): report it now.
            obj = self._get_object(k)
            if obj is not None:
                self.event(obj, k.kind, *self._added(k.kind, k.ns_name, [], [], err))

    def report(self, applied: list[Applied], *, defer_status: bool) -> None:
        """Events for each applied resource (NIC 2.5), then status (now, or deferred to the start-up
        flush). A custom resource NGINX refused gets its Invalid status too (NIC's
        AddedOrUpdatedWithError state); an Ingress keeps its last status."""
        for a in applied:
            res = a.resource
            keys = keys_of(res)
            with self._lock:
                self._status_keys.update(keys)
            kind = res.key_with_kind.kind
            self.event(res.obj, kind, *self._added_event(a))
            for ck, child in res.children():
                child_ws = a.child_warnings.get(ck.ns_name, [])
                error = child_error(a, ck)
                self.event(child, ck.kind, *self._added(ck.kind, ck.ns_name, child_ws, [], error))
            if self._style(kind) is None:  # NIC writes no Ingress status for a configuration NGINX refused
                keys = [k for k in keys if not (a.error if k == res.key_with_kind else child_error(a, k))]
            if defer_status:
                self._deferred.extend(keys)
            elif self._is_ready():
                for k in keys:
                    self._safe_status(self.status.update, k)

    def report_errors(self, applied: list[Applied]) -> None:
        """Only the error events (endpoint changes report nothing else, as NIC)."""
        for a in applied:
            res = a.resource
            if a.error:
                self.event(res.obj, res.key_with_kind.kind, *self._added_event(a))
            for ck, child in res.children():
                if ck.ns_name in a.child_errors:
                    self.event(child, ck.kind, *self._added(ck.kind, ck.ns_name, [], [],
                                                            a.child_errors[ck.ns_name]))

    def report_delete(self, ch: ResourceChange) -> None:
        """NIC's UpdateIngressStatusAndEventsOnDelete: only for a resource that still exists."""
        res = ch.resource
        key = res.key_with_kind
        obj = self._get_object(key)
        if obj is None:
            return
        if ch.error:
            msg = f"with error: {ch.error}"
        elif res.warnings:
            msg = "with warning(s): " + "; ".join(res.warnings)
        else:
            return  # a class change: no event, no status change (NIC)
        style = self._style(key.kind)
        text = style.rejected_message(res.key, msg) if style is not None else f"{res.key} was rejected: {msg}"
        self.event(obj, key.kind, EVENT_WARNING, REASON_REJECTED, text)
        if self._is_ready() and self.status.report_status_enabled_for(key):
            self._safe_status(self.status.clear, key)

    def report_problems(self, problems: Sequence[ConfigurationProblem]) -> None:
        """NIC's processProblems: a Warning event per problem; clear the resource's status."""
        for p in problems:
            self.event(p.obj, p.key.kind, EVENT_WARNING, p.reason, p.message)
            self._safe_status(self.status.clear, p.key)

    def _style(self, kind: str) -> MessageStyle | None:
        entry = self._kinds.get(kind)
        model = entry.model if entry is not None else None
        return model if callable(getattr(model, "rejected_message", None)) else None  # type: ignore[return-value]

    def _added(self, kind: str, key: str, own: list[str], others: list[str],
               error: str) -> tuple[str, str, str]:
        """The added-or-updated event in the kind's wording (the Ingress's joins all warnings)."""
        if self._style(kind) is None:
            return added_event(key, own + others, error)
        return custom_resource_added_event(key, own, others, error)

    def _added_event(self, a: Applied) -> tuple[str, str, str]:
        res = a.resource
        own = list(res.warnings)
        # The builders list the resource's own warnings first, then the configurator's.
        others = a.warnings[len(own):] if a.warnings[:len(own)] == own else \
            [w for w in a.warnings if w not in own]
        if self._style(res.key_with_kind.kind) is None:
            own, others = list(a.warnings), []
        return self._added(res.key_with_kind.kind, res.key, own, others, a.error)

    def _safe_status(self, fn: Callable[[ResourceKey], bool], key: ResourceKey) -> None:
        try:
            fn(key)
        except Exception as e:
            log.warning("error updating status", resource=str(key), error=str(e))

    # ------------------------------------------------------------------------------------------ events

    def event(self, obj: dict[str, Any], kind: str, event_type: str, reason: str, message: str) -> None:
        """An event on a resource of a registered kind."""
        entry = self._kinds.get(kind)
        if entry is None:
            raise KeyError(f"unknown resource kind {kind!r}")
        # A kind whose status reports the outcome (custom resources: state, reason, message) sees each event.
        observe = getattr(entry.status, "observe_event", None)
        if callable(observe):
            observe(obj, event_type, reason, message)
        self.event_for(obj, entry.rt, event_type, reason, message)

    def event_for(self, obj: dict[str, Any], rt: ResourceType, event_type: str, reason: str,
                  message: str) -> None:
        """An event on any object (Secrets and the ConfigMap too)."""
        # Normal events are logged at debug: one per resource at start-up would cost ~50 us each on the
        # critical path, and the Event object carries them anyway.
        level = log.debug if event_type == EVENT_NORMAL else log.warning
        level("event", object=object_key(obj), type=event_type, reason=reason, message=message)
        if self._recorder is None:
            return
        try:
            self._recorder.event(obj, event_type, reason, message, kind=rt.kind,
                                 api_version=rt.api_version)
        except Exception as e:  # the recorder promises not to raise; be safe anyway
            log.warning("error recording event", error=str(e))


class HeldReports:
    """The outcomes of a batch's changes, held until the batch's reload. Per resource only its last change
    in the batch is kept (an apply replaces an earlier apply or delete, a delete an earlier apply), in the
    order of those last changes. Used by the sync thread only."""

    def __init__(self) -> None:
        self._applied: dict[ResourceKey, Applied] = {}
        self._deleted: dict[ResourceKey, ResourceChange] = {}

    def hold(self, applied: Sequence[Applied], deleted: Sequence[ResourceChange]) -> None:
        for ch in deleted:
            key = ch.resource.key_with_kind
            self._applied.pop(key, None)
            self._deleted[key] = ch
        for a in applied:
            key = a.resource.key_with_kind
            self._deleted.pop(key, None)
            self._applied.pop(key, None)
            self._applied[key] = a

    def take(self) -> tuple[list[Applied], list[ResourceChange]]:
        """The held outcomes (each once): applied resources, deletes."""
        out = list(self._applied.values()), list(self._deleted.values())
        self._applied, self._deleted = {}, {}
        return out
