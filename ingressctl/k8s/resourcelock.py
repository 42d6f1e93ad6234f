"""The Lease lock of leader election, after client-go's `tools/leaderelection/resourcelock`: the
LeaderElectionRecord, how it maps onto a coordination.k8s.io/v1 Lease, and what the elector needs of the
API client and the event recorder.

Guarantees:
- `LeaderElectionRecord.from_lease` reads a Lease's spec or raises ValueError naming the malformed field;
  `apply_to` writes the record's fields and leaves the spec's other fields (strategy, ...) alone;
  `raw()` is canonical, so "the record changed" means this string changed.
- `with_record` copies the Lease (metadata.resourceVersion kept for the optimistic PUT) and never changes
  the Lease it was given.
- `format_micro_time` writes MicroTime as the API server does: UTC, RFC 3339, exactly six fractional
  digits; a naive datetime is refused.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from ingressctl.k8s.resource import ResourceType

# client-go's MicroTime layout: 2006-01-02T15:04:05.000000Z07:00, always six fractional digits.
_MICRO_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"


class LeaseClient(Protocol):
    """The part of `KubeClient` the elector uses."""

    def get(self, rt: ResourceType, namespace: str | None, name: str, /) -> dict[str, Any]: ...

    def create(self, rt: ResourceType, namespace: str | None, body: dict[str, Any], /) -> dict[str, Any]: ...

    def update(self, rt: ResourceType, namespace: str | None, name: str, body: dict[str, Any],
               /) -> dict[str, Any]: ...


class EventSink(Protocol):
    """The part of `EventRecorder` the elector uses (optional)."""

    def event(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None: ...


def format_micro_time(dt: datetime) -> str:
    """A MicroTime string: UTC, RFC 3339, exactly six fractional digits (`2026-11-21T03:00:00.000000Z`)."""
    if dt.tzinfo is None:
        raise ValueError("MicroTime needs a timezone-aware datetime")
    return dt.astimezone(UTC).strftime(_MICRO_TIME)


@dataclass(frozen=True)
class LeaderElectionRecord:
    """client-go's LeaderElectionRecord, mapped onto a Lease's spec."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    leader_transitions: int = 0

    @classmethod
    def from_lease(cls, lease: dict[str, Any]) -> LeaderElectionRecord:
        """Read the record from a Lease; raises ValueError on a malformed spec."""
        spec = lease.get("spec") or {}
        if not isinstance(spec, dict):
            raise ValueError(f"Lease spec is not an object: {spec!r:.100}")
        holder = spec.get("holderIdentity") or ""
        if not isinstance(holder, str):
            raise ValueError(f"Lease spec.holderIdentity is not a string: {holder!r:.100}")
        return cls(
            holder_identity=holder,
            lease_duration_seconds=_int_field(spec, "leaseDurationSeconds"),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            leader_transitions=_int_field(spec, "leaseTransitions"),
        )

    def apply_to(self, spec: dict[str, Any]) -> None:
        """Write the record's fields into a Lease spec, leaving other fields (strategy, ...) alone."""
        spec["holderIdentity"] = self.holder_identity
        spec["leaseDurationSeconds"] = self.lease_duration_seconds
        spec["acquireTime"] = self.acquire_time
        spec["renewTime"] = self.renew_time
        spec["leaseTransitions"] = self.leader_transitions

    def raw(self) -> str:
        """A canonical serialisation: "observed a change" means this string changed."""
        return json.dumps(asdict(self), sort_keys=True)


def _int_field(spec: dict[str, Any], key: str) -> int:
    value = spec.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"Lease spec.{key} is not an integer: {value!r:.100}")
    return value


def with_record(lease: dict[str, Any], record: LeaderElectionRecord) -> dict[str, Any]:
    """A copy of `lease` (metadata.resourceVersion kept for the optimistic PUT) with `record` in its spec."""
    body = copy.deepcopy(lease)
    spec = body.get("spec")
    if not isinstance(spec, dict):
        spec = body["spec"] = {}
    record.apply_to(spec)
    return body
