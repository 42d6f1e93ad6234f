"""Work items of the controller's queue: a `Task` is a (kind, key) value.

Guarantees:
- A `Task` is an immutable, hashable value; two tasks are equal exactly when kind and key are equal, so the
  workqueue de-duplicates per (kind, key) as NIC's task queue does. An Ingress and another kind's resource
  with the same key are different tasks.
- `kind` is a configuration kind's registry name (`Kind.INGRESS`, or any kind registered in the controller's
  `KindRegistry`) or one of the controller's own kinds (Services, EndpointSlices, Secrets, the ConfigMap).
- `RELOAD_TASK` (kind RELOAD, empty key) asks the sync thread to retry a failed reload.
- Keys are client-go keys: "namespace/name". For `Kind.ENDPOINT_SLICE` the key names the *Service* the slices
  belong to ("namespace/service-name"), so every slice of one Service collapses into one task and a deleted
  slice still identifies the Service to re-render.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from ingressctl.keys import INGRESS_KIND


class Kind:
    """Task kinds the controller itself defines (configuration kinds add their registry names)."""

    INGRESS: Final = INGRESS_KIND
    ENDPOINT_SLICE: Final = "endpointslice"
    CONFIG_MAP: Final = "configmap"
    SECRET: Final = "secret"
    SERVICE: Final = "service"
    RELOAD: Final = "reload"       # retry a reload that failed without blaming a resource (key "")


class Task(NamedTuple):
    """One unit of work: sync the object of `kind` named by `key`. A named tuple: the queue hashes and
    compares each task about a dozen times, and a tuple does that in C (a frozen dataclass's hash and eq
    are Python calls, ~0.1 s over the 35,000 tasks of a 10,000-Ingress start-up)."""

    kind: str
    key: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.key}"


RELOAD_TASK = Task(Kind.RELOAD, "")
