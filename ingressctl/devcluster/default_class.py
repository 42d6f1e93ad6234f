"""The mutating admission kube-apiserver applies on create, where a controller can tell the difference.

Guarantees:
- DefaultIngressClass: an Ingress created with neither `spec.ingressClassName` (absent or null; an empty
  string counts as set) nor the `kubernetes.io/ingress.class` annotation gets the name of the default
  IngressClass, the one annotated `ingressclass.kubernetes.io/is-default-class: "true"` (exactly that string).
  With several default classes the newest wins (latest creationTimestamp, then the smaller name), as
  kube-apiserver does since it stopped refusing such creates. Without a default class nothing changes.
  Updates are never touched (the plugin admits creates only).
- Pure functions over plain objects: the store calls `admit_create` under its lock with a reader of the
  objects of another kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from ingressctl.devcluster.resources import INGRESSCLASSES, INGRESSES, Obj

IS_DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"

# Reads the current objects of a stored kind (by storage id).
ObjectReader = Callable[[str], Iterable[Obj]]


def _created(obj: Obj) -> float:
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    if not isinstance(ts, str):
        return 0.0
    try:
        return datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return 0.0


def _annotations(obj: Obj) -> dict[str, Any]:
    annotations = (obj.get("metadata") or {}).get("annotations")
    return annotations if isinstance(annotations, dict) else {}


def default_ingress_class(classes: Iterable[Obj]) -> str | None:
    """The name of the default IngressClass among `classes` (the newest of several), or None."""
    defaults = [c for c in classes if _annotations(c).get(IS_DEFAULT_CLASS_ANNOTATION) == "true"]
    if not defaults:
        return None
    newest = min(defaults, key=lambda c: (-_created(c), str((c.get("metadata") or {}).get("name", ""))))
    return str(newest["metadata"]["name"])


def admit_ingress(ingress: Obj, read: ObjectReader) -> None:
    """DefaultIngressClass for one Ingress being created (changes `ingress` in place)."""
    spec = ingress.get("spec")
    if isinstance(spec, dict) and spec.get("ingressClassName") is not None:
        return
    if INGRESS_CLASS_ANNOTATION in _annotations(ingress):
        return
    name = default_ingress_class(read(INGRESSCLASSES.storage_id))
    if name is None:
        return
    ingress["spec"] = {**(spec if isinstance(spec, dict) else {}), "ingressClassName": name}


_ON_CREATE: dict[str, Callable[[Obj, ObjectReader], None]] = {INGRESSES.storage_id: admit_ingress}


def admit_create(storage_id: str, obj: Obj, read: ObjectReader) -> None:
    """Run the mutating admission of the kind stored under `storage_id` on an object being created."""
    plugin = _ON_CREATE.get(storage_id)
    if plugin is not None:
        plugin(obj, read)
