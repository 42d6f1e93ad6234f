"""Controller metrics (NIC's ControllerMetricsCollector, `collectors/controller.go`).

`nginx_ingress_controller_ingress_resources_total{class,type="regular"|"master"|"minion"}` (gauge): the
number of Ingress resources of each type in the running configuration. All three series exist from the start
at 0. Set after each task from the Configurator's counts. Every other kind of the controller's registry gets
`..._<kind>_resources_total{class,type}` the same way. Thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from prometheus_client import CollectorRegistry, Gauge

from ingressctl.keys import INGRESS_KIND
from ingressctl.kinds.ingress.ingress_ex import INGRESS_TYPES
from ingressctl.metrics.common import CLASS_LABEL, check_ingress_class, controller_metric

__all__ = ["INGRESS_TYPES", "ControllerMetricsCollector"]


class ControllerMetricsCollector:
    """Holds `<kind>_resources_total{type}` for every resource kind (`ingress_resources_total` from the start;
    other kinds are added from the controller's kind registry with `add_kind`)."""

    def __init__(self, registry: CollectorRegistry, ingress_class: str) -> None:
        self.ingress_class = check_ingress_class(ingress_class)
        self._registry = registry
        self._gauges: dict[str, tuple[Gauge, tuple[str, ...]]] = {}
        self._lock = threading.Lock()
        self.add_kind(INGRESS_KIND, INGRESS_TYPES)

    def add_kind(self, kind: str, types: Sequence[str]) -> None:
        """Serve `<kind>_resources_total{type}`, every type at 0 (a kind already served is left as it is)."""
        with self._lock:
            if kind in self._gauges:
                return
            gauge = Gauge(controller_metric(f"{kind}_resources_total"), f"Number of handled {kind} resources",
                          [CLASS_LABEL, "type"], registry=self._registry)
            for t in types:
                gauge.labels(self.ingress_class, t).set(0)
            self._gauges[kind] = (gauge, tuple(types))

    def set_resources(self, kind: str, counts: Mapping[str, int]) -> None:
        """Set every type's count of `kind`; a type missing from `counts` is set to 0.

        Raises ValueError (and changes nothing) for an unknown kind or type, or a negative count.
        """
        with self._lock:
            entry = self._gauges.get(kind)
        if entry is None:
            raise ValueError(f"unknown resource kind {kind!r}")
        gauge, types = entry
        unknown = sorted(set(counts) - set(types))
        if unknown:
            raise ValueError(f"unknown {kind} resource types {unknown}; expected {list(types)}")
        for t, n in counts.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ValueError(f"{kind} resource count for {t!r} must be a non-negative int, got {n!r}")
        for t in types:
            gauge.labels(self.ingress_class, t).set(counts.get(t, 0))
