"""ingress-nginx's header ConfigMaps (`custom-headers`, `auth-proxy-set-headers`), kept by an informer of
their own only with `--ingress-nginx-compat`: a registry entry (`config_map_kind_factory`) that feeds the
Ingresses (no Configuration part, no status), as the Pods of VirtualServer subselectors do.

Design (one informer, its cache kept small, changes mapped back through the Configuration's index):
- The informer lists and watches ConfigMaps where Ingresses are watched (every watched namespace, or the
  whole cluster): only a ConfigMap of the Ingress's own namespace is ever read. Its transform keeps the
  identity (name, namespace, uid, resourceVersion) and `data` when its keys and values add up to at most
  `MAX_DATA_BYTES` (a header map is small); a larger one keeps no data and is marked `DROPPED` with its
  size, which its users report; `binaryData`, labels, annotations and owner references are dropped always.
  So the cache costs a few hundred bytes per ConfigMap of the cluster at most (kube-root-ca.crt, ~1.3 KB,
  is kept), and no ConfigMap's large payload.
- The handler enqueues a ConfigMap when it is created (not in the initial list: the first render reads
  every reference), when its kept data changes, and when it is deleted; the sync re-renders exactly the
  configured Ingresses that reference it (`Configuration.find_resources_for_config_map`, indexed from the
  Ingresses' claims), with their events: a ConfigMap no Ingress references costs one dict lookup.
  The transform and the handler are in `config_map_cache.py`.
- Without the flag there is no such informer, and nothing reads ConfigMaps but the NGINX one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ingressctl.controller.config_map_cache import CONFIGMAP_KIND, ConfigMapHandler, config_map_transform
from ingressctl.controller.kinds import Enqueue, EventHandler, NoBuilder, NoStatus, ResourceKind
from ingressctl.controller.model import Resource
from ingressctl.k8s.resource import CONFIGMAPS
from ingressctl.keys import split_key


class Controller(Protocol):
    """What the sync needs from the LoadBalancerController."""

    configuration: Any      # find_resources_for_config_map

    def is_rendering(self) -> bool: ...

    def rerender(self, resources: list[Resource], reason: str) -> None: ...


def config_map_kind_factory() -> Callable[[Controller], ResourceKind]:
    """The registry entry of ingress-nginx's header ConfigMaps (served with `--ingress-nginx-compat`)."""

    def factory(lbc: Controller) -> ResourceKind:
        def sync(key: str) -> None:
            if not lbc.is_rendering():
                return
            resources = lbc.configuration.find_resources_for_config_map(*split_key(key))
            if resources:
                lbc.rerender(resources, "configmap")

        def handler(enqueue: Enqueue) -> EventHandler:
            return ConfigMapHandler(enqueue)

        return ResourceKind(name=CONFIGMAP_KIND, rt=CONFIGMAPS, handler=handler,
                            builder=NoBuilder("ConfigMap"), status=NoStatus(), transform=config_map_transform,
                            sync=sync)

    return factory
