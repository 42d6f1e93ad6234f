"""`nginx_ingress_controller_api_permission_denied_total{class,verb,group,resource,namespace}` (counter): the
API requests the cluster refused (403), by the RBAC permission they lacked, read from the client's
`PermissionDenials` on each scrape. No series until a request is refused."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from ingressctl.k8s.permissions import Permission
from ingressctl.metrics.common import CLASS_LABEL, check_ingress_class, controller_metric


class ApiPermissionCollector(Collector):
    def __init__(self, ingress_class: str, counts: Callable[[], Mapping[Permission, int]]) -> None:
        self.ingress_class = check_ingress_class(ingress_class)
        self._counts = counts

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            controller_metric("api_permission_denied"),
            "API requests the cluster refused (403 Forbidden), by the RBAC permission they lacked",
            labels=[CLASS_LABEL, "verb", "group", "resource", "namespace"])
        for p, n in sorted(self._counts().items()):
            family.add_metric([self.ingress_class, p.verb, p.group, p.resource, p.namespace], n)
        yield family
