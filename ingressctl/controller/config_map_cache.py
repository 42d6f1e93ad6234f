"""The cache of ingress-nginx's header ConfigMaps (`controller/ingress_nginx_configmaps.py` has the design):
the informer's transform and event handler, without the controller's imports (the Ingress renderers read
its marks).

Guarantees:
- `config_map_transform` keeps a ConfigMap's identity (name, namespace, uid, resourceVersion) and its `data`
  when its keys and values add up to at most `MAX_DATA_BYTES`; a larger one keeps no data and carries
  `DROPPED` (why); everything else (`binaryData`, labels, annotations, owner references) is dropped.
- `ConfigMapHandler` enqueues `Task(CONFIGMAP_KIND, key)` on an add after the initial list, an update that
  changes what the transform kept, and every delete (tombstones included); it never raises.
"""

from __future__ import annotations

from typing import Any

from ingressctl.controller.handlers import Enqueue, _safe, resource_version, tombstone_key, unwrap
from ingressctl.controller.task import Task
from ingressctl.keys import object_key

CONFIGMAP_KIND = "ingress-nginx-configmap"
MAX_DATA_BYTES = 64 * 1024
DROPPED = "ingressctl.config-map-dropped"   # the transform's mark: why no data was kept
_META_KEPT = ("name", "namespace", "uid", "resourceVersion")


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def config_map_transform(obj: dict[str, Any]) -> dict[str, Any]:
    """See the module docstring."""
    meta = _d(obj.get("metadata"))
    out: dict[str, Any] = {"metadata": {k: meta[k] for k in _META_KEPT if k in meta}}
    data = obj.get("data")
    if not isinstance(data, dict):
        return out
    size = 0
    for k, v in data.items():
        size += len(str(k)) + (len(v) if isinstance(v, str) else MAX_DATA_BYTES + 1)
        if size > MAX_DATA_BYTES:
            out[DROPPED] = f"more than {MAX_DATA_BYTES} bytes of data"
            return out
    out["data"] = dict(data)
    return out


def _kept(obj: dict[str, Any]) -> tuple[Any, Any]:
    return obj.get("data"), obj.get(DROPPED)


class ConfigMapHandler:
    """See the module docstring."""

    def __init__(self, enqueue: Enqueue) -> None:
        self._enqueue = enqueue

    @_safe
    def on_add(self, obj: dict[str, Any], is_initial_list: bool = False) -> None:
        if not is_initial_list:
            self._enqueue(Task(CONFIGMAP_KIND, object_key(obj)))

    @_safe
    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if resource_version(old) != resource_version(new) and _kept(old) != _kept(new):
            self._enqueue(Task(CONFIGMAP_KIND, object_key(new)))

    @_safe
    def on_delete(self, obj: Any) -> None:
        self._enqueue(Task(CONFIGMAP_KIND, tombstone_key(obj) or object_key(unwrap(obj))))
