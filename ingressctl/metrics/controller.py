"""Controller metrics (NIC's ControllerMetricsCollector, `collectors/controller.go`).

`nginx_ingress_controller_ingress_resources_total{class,type="regular"|"master"|"minion"}` (gauge): the
number of Ingress resources of each type in the running configuration. All three series exist from the start
at 0. Set after each ingress task from the Configurator's counts. Thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Gauge

from ingressctl.metrics.common import CLASS_LABEL, check_ingress_class, controller_metric

INGRESS_TYPES = ("regular", "master", "minion")


class ControllerMetricsCollector:
    """Holds `ingress_resources_total{type}`."""

    def __init__(self, registry: CollectorRegistry, ingress_class: str) -> None:
        self.ingress_class = check_ingress_class(ingress_class)
        self._ingresses = Gauge(controller_metric("ingress_resources_total"),
                                "Number of handled ingress resources", [CLASS_LABEL, "type"],
                                registry=registry)
        for t in INGRESS_TYPES:
            self._ingresses.labels(self.ingress_class, t).set(0)

    def set_ingress_resources(self, counts: Mapping[str, int]) -> None:
        """Set every type's count; a type missing from `counts` is set to 0.

        Raises ValueError (and changes nothing) for an unknown type or a negative count.
        """
        unknown = sorted(set(counts) - set(INGRESS_TYPES))
        if unknown:
            raise ValueError(f"unknown ingress resource types {unknown}; expected {list(INGRESS_TYPES)}")
        for t, n in counts.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ValueError(f"ingress resource count for {t!r} must be a non-negative int, got {n!r}")
        for t in INGRESS_TYPES:
            self._ingresses.labels(self.ingress_class, t).set(counts.get(t, 0))
