"""Names shared by every collector: NIC's metric namespaces and the `class` label.

Guarantees: `new_registry()` returns an empty `CollectorRegistry` (no process/platform/GC collectors, no
auto-describe, so registering a custom collector never scrapes). Every metric built in this package carries
the label `class` (prometheus_client has no const labels), always set to the ingress class.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

CONTROLLER_NAMESPACE = "nginx_ingress_controller"
"""Prefix of the controller's own metrics (NIC's `metricsNamespace`)."""

NGINX_NAMESPACE = "nginx_ingress_nginx"
"""Prefix of the stub_status metrics (nginx-prometheus-exporter's namespace as NIC sets it)."""

CLASS_LABEL = "class"


def controller_metric(name: str) -> str:
    """`nginx_ingress_controller_<name>`."""
    return f"{CONTROLLER_NAMESPACE}_{name}"


def new_registry() -> CollectorRegistry:
    """A dedicated registry: only what this package registers on it is exported."""
    return CollectorRegistry(auto_describe=False)


def check_ingress_class(ingress_class: str) -> str:
    """Reject an empty class: every series must say which controller it belongs to."""
    if not isinstance(ingress_class, str) or not ingress_class:
        raise ValueError(f"ingress class must be a non-empty string, got {ingress_class!r}")
    return ingress_class
