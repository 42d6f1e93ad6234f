"""NGINX reload metrics (NIC's ManagerMetricsCollector, `collectors/manager.go`).

Metrics (all with label `class`):
- `nginx_ingress_controller_nginx_reloads_total{reason="other"|"endpoints"}`: successful reloads; both series
  exist from the start at 0.
- `nginx_ingress_controller_nginx_reload_errors_total`: failed reloads.
- `nginx_ingress_controller_nginx_dynamic_updates_total`: endpoint changes NGINX took without a reload (the
  dynamic-peers module); `..._nginx_dynamic_update_errors_total`: pushes it did not take (each is followed
  by a reload, counted under its reason).
- `nginx_ingress_controller_nginx_last_reload_status`: 1 after a successful reload, 0 after a failed one;
  0 before the first reload.
- `nginx_ingress_controller_nginx_last_reload_milliseconds`: duration of the last successful reload, integer
  milliseconds (truncated), from the reload command through config-version verification.

Wiring: pass `on_reload` as the Manager's `on_reload` hook (`Manager(..., on_reload=...)` or
`manager.on_reload = collector.on_reload`); it is called once per `Manager.reload()`. Likewise
`manager.on_dynamic_update = collector.on_dynamic_update`. Thread-safe.
"""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry, Counter, Gauge

from ingressctl.metrics.common import CLASS_LABEL, check_ingress_class, controller_metric

REASON_OTHER = "other"
REASON_ENDPOINTS = "endpoints"


class ManagerMetricsCollector:
    """Counts reloads and records the last reload's outcome and duration."""

    def __init__(self, registry: CollectorRegistry, ingress_class: str) -> None:
        self.ingress_class = check_ingress_class(ingress_class)
        self._reloads = Counter(controller_metric("nginx_reloads_total"),
                                "Number of successful NGINX reloads", [CLASS_LABEL, "reason"],
                                registry=registry)
        self._reload_errors = Counter(controller_metric("nginx_reload_errors_total"),
                                      "Number of unsuccessful NGINX reloads", [CLASS_LABEL],
                                      registry=registry)
        self._last_status = Gauge(controller_metric("nginx_last_reload_status"),
                                  "Status of the last NGINX reload (1 success, 0 failure)", [CLASS_LABEL],
                                  registry=registry)
        self._last_ms = Gauge(controller_metric("nginx_last_reload_milliseconds"),
                              "Duration in milliseconds of the last NGINX reload", [CLASS_LABEL],
                              registry=registry)
        self._dynamic_updates = Counter(controller_metric("nginx_dynamic_updates_total"),
                                        "Number of endpoint updates applied to NGINX without a reload",
                                        [CLASS_LABEL], registry=registry)
        self._dynamic_errors = Counter(controller_metric("nginx_dynamic_update_errors_total"),
                                       "Number of endpoint updates NGINX did not take (then reloaded)",
                                       [CLASS_LABEL], registry=registry)
        self._dynamic_updates.labels(self.ingress_class)
        self._dynamic_errors.labels(self.ingress_class)
        for reason in (REASON_OTHER, REASON_ENDPOINTS):
            self._reloads.labels(self.ingress_class, reason)
        self._reload_errors.labels(self.ingress_class)
        self._last_status.labels(self.ingress_class).set(0)
        self._last_ms.labels(self.ingress_class).set(0)

    def inc_reload_count(self, is_endpoints_update: bool) -> None:
        """A successful reload: count it under its reason and set the last status to 1."""
        reason = REASON_ENDPOINTS if is_endpoints_update else REASON_OTHER
        self._reloads.labels(self.ingress_class, reason).inc()
        self._last_status.labels(self.ingress_class).set(1)

    def inc_reload_errors(self) -> None:
        """A failed reload: count it and set the last status to 0."""
        self._reload_errors.labels(self.ingress_class).inc()
        self._last_status.labels(self.ingress_class).set(0)

    def update_last_reload(self, success: bool, duration_ms: float) -> None:
        """Set the last status, and the duration (truncated to whole ms) when the reload succeeded."""
        self._last_status.labels(self.ingress_class).set(1 if success else 0)
        if success:
            if not math.isfinite(duration_ms) or duration_ms < 0:
                raise ValueError(f"reload duration must be finite and non-negative, got {duration_ms!r}")
            self._last_ms.labels(self.ingress_class).set(int(duration_ms))

    def on_reload(self, success: bool, duration_ms: int, is_endpoints_update: bool) -> None:
        """The Manager's `on_reload(ok, duration_ms, is_endpoints_update)` hook."""
        if success:
            self.inc_reload_count(is_endpoints_update)
        else:
            self.inc_reload_errors()
        self.update_last_reload(success, duration_ms)

    def on_dynamic_update(self, success: bool) -> None:
        """The Manager's `on_dynamic_update(ok)` hook: count a dynamic update or a failed one."""
        (self._dynamic_updates if success else self._dynamic_errors).labels(self.ingress_class).inc()
