"""The number of controller replicas (NIC's `updateNumberOfIngressControllerReplicas`), for rates that are
divided among the replicas (`nginx.org/limit-req-scale`, rateLimit policies with `scale`).

Guarantees:
- `ControllerReplicas.update(slices)` counts the distinct ready endpoints of the controller's own Service
  (`--external-service`), at least 1, hands a changed count to the Configurator (used from the next render
  on) and returns whether it changed; `users()` lists the configured resources whose configuration
  depends on it (each registered source once, sorted by key), so only they are rendered again.
- `ingresses_with_scale(resources)`: the Ingresses (or masters of minions) with `nginx.org/limit-req-scale`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ingressctl.controller.endpoints import count_ready_endpoints
from ingressctl.controller.model import Resource
from ingressctl.keys import INGRESS_KIND
from ingressctl.validation import parse_go_bool


class ControllerReplicas:
    """See the module docstring. Used from the sync thread only."""

    def __init__(self, set_replicas: Callable[[int], None]) -> None:
        self._set = set_replicas
        self.count = 1
        self.sources: list[Callable[[], list[Resource]]] = []
        self._set(1)

    def update(self, slices: Iterable[Mapping[str, Any]]) -> bool:
        count = max(1, count_ready_endpoints(slices))
        if count == self.count:
            return False
        self.count = count
        self._set(count)
        return True

    def users(self) -> list[Resource]:
        found = {r.key_with_kind: r for source in self.sources for r in source()}
        return [found[k] for k in sorted(found)]


def _scales(obj: Mapping[str, Any]) -> bool:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get("nginx.org/limit-req-scale")
    return value is not None and parse_go_bool(str(value)) is True


def ingresses_with_scale(resources: Iterable[Resource]) -> list[Resource]:
    return [r for r in resources if r.key_with_kind.kind == INGRESS_KIND
            and (_scales(r.obj) or any(_scales(child) for _, child in r.children()))]
