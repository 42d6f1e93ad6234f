"""Work items of the controller's queue: a `Task` is a (kind, key) value.

Guarantees:
- A `Task` is an immutable, hashable value; two tasks are equal exactly when kind and key are equal, so the
  workqueue de-duplicates per (kind, key) as NIC's task queue does.
- `RELOAD_TASK` (kind RELOAD, empty key) asks the sync thread to retry a failed reload.
- Keys are client-go keys: "namespace/name". For `Kind.ENDPOINT_SLICE` the key names the *Service* the slices
  belong to ("namespace/service-name"), so every slice of one Service collapses into one task and a deleted
  slice still identifies the Service to re-render.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Kind(enum.Enum):
    """What a task refers to; the sync thread dispatches on it."""

    INGRESS = "ingress"
    ENDPOINT_SLICE = "endpointslice"
    CONFIG_MAP = "configmap"
    SECRET = "secret"
    SERVICE = "service"
    RELOAD = "reload"       # retry a reload that failed without blaming a resource (key "")


@dataclass(frozen=True, slots=True)
class Task:
    """One unit of work: sync the object of `kind` named by `key`."""

    kind: Kind
    key: str

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.key}"


RELOAD_TASK = Task(Kind.RELOAD, "")
