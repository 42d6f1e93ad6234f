"""Pods for VirtualServer upstream `subselector`s (NIC's `getEndpointsForSubselector`).

Guarantees:
- `subselected_slices(slices, namespace, subselector, get_pod)` keeps only the EndpointSlice endpoints whose
  `targetRef` is a Pod of the namespace whose labels include every subselector label; the Service selector
  already chose the slices, so the result is the Service's endpoints on Pods matching both selectors, as NIC
  computes them. An endpoint without a Pod reference, or whose Pod is not (yet) known, is left out.
- The Pod kind (`pod_kind_factory`) is served with the VirtualServers: an informer of Pods reduced to their
  name, namespace, labels and resourceVersion (the rest is never read), and a handler that enqueues a Pod
  when it appears, goes or changes its labels. Its sync re-renders the configured VirtualServers that have a
  subselector upstream on a Service of that namespace, so a Pod label change takes effect at once (NIC sees
  it only when the endpoints change).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from ingressctl.controller.handlers import _safe, resource_version, tombstone_key, unwrap
from ingressctl.controller.kinds import Enqueue, EventHandler, NoBuilder, NoStatus, ResourceKind
from ingressctl.controller.task import Task
from ingressctl.k8s.resource import PODS
from ingressctl.keys import object_key, split_key
from ingressctl.kinds.virtualserver.config import service_ref
from ingressctl.kinds.virtualserver.template_model import VS_KIND

POD_KIND = "pod"

GetPod = Callable[[str], "dict[str, Any] | None"]


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _labels(obj: Mapping[str, Any]) -> dict[str, Any]:
    return _d(_d(obj.get("metadata")).get("labels"))


def subselected_slices(slices: Iterable[Mapping[str, Any]], namespace: str, subselector: Mapping[str, Any],
                       get_pod: GetPod) -> list[dict[str, Any]]:
    """The slices with only the endpoints on Pods matching `subselector` (see the module docstring)."""
    out: list[dict[str, Any]] = []
    for sl in slices:
        kept = []
        for ep in sl.get("endpoints") or []:
            ref = _d(_d(ep).get("targetRef"))
            if ref.get("kind") != "Pod" or not ref.get("name"):
                continue
            pod = get_pod(f"{ref.get('namespace') or namespace}/{ref['name']}")
            labels = _labels(pod) if pod is not None else None
            if labels is not None and all(labels.get(k) == v for k, v in subselector.items()):
                kept.append(ep)
        out.append({**sl, "endpoints": kept})
    return out


def pod_transform(obj: dict[str, Any]) -> dict[str, Any]:
    """Keep what subselectors read: identity and labels."""
    meta = _d(obj.get("metadata"))
    return {"metadata": {k: meta[k] for k in ("name", "namespace", "labels", "resourceVersion", "uid")
                         if k in meta}}


class PodHandler:
    """See the module docstring."""

    def __init__(self, enqueue: Enqueue) -> None:
        self._enqueue = enqueue

    @_safe
    def on_add(self, obj: dict[str, Any], is_initial_list: bool = False) -> None:
        if not is_initial_list:     # at start-up every VirtualServer is rendered after the caches sync
            self._enqueue(Task(POD_KIND, object_key(obj)))

    @_safe
    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if resource_version(old) != resource_version(new) and _labels(old) != _labels(new):
            self._enqueue(Task(POD_KIND, object_key(new)))

    @_safe
    def on_delete(self, obj: Any) -> None:
        self._enqueue(Task(POD_KIND, tombstone_key(obj) or object_key(unwrap(obj))))


class Controller(Protocol):
    configuration: Any

    def sync_endpoint_slice(self, service_key: str) -> None: ...


def subselected_services(resources: Iterable[Any], namespace: str) -> list[str]:
    """The Services ("namespace/name") of `namespace` that subselector upstreams of `resources` (configured
    VirtualServers, with their VirtualServerRoutes) use."""
    found: set[str] = set()
    for res in resources:
        objs = [getattr(res, "obj", {})] + [o for _, o in getattr(res, "vsrs", [])]
        for obj in objs:
            ns = str(_d(obj.get("metadata")).get("namespace") or "")
            for up in _d(obj.get("spec")).get("upstreams") or []:
                u = _d(up)
                if not u.get("subselector") or u.get("use-cluster-ip"):
                    continue
                svc_ns, svc = service_ref(ns, str(u.get("service") or ""))
                if svc_ns == namespace:
                    found.add(f"{svc_ns}/{svc}")
    return sorted(found)


def pod_kind_factory() -> Callable[[Controller], ResourceKind]:
    """The Pod's registry entry: it feeds the VirtualServers (no Configuration part, no status)."""

    def factory(lbc: Controller) -> ResourceKind:
        def sync(key: str) -> None:
            namespace = split_key(key)[0]
            # Only VirtualServers carry subselectors: no sort and no scan of every Ingress per Pod event.
            for service_key in subselected_services(lbc.configuration.resources_of_kind(VS_KIND), namespace):
                lbc.sync_endpoint_slice(service_key)

        def handler(enqueue: Enqueue) -> EventHandler:
            return PodHandler(enqueue)

        return ResourceKind(name=POD_KIND, rt=PODS, handler=handler, builder=NoBuilder("Pod"),
                            status=NoStatus(), transform=pod_transform, sync=sync)

    return factory
