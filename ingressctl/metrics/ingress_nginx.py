"""`nginx_ingress_controller_ingress_nginx_annotations{class,status,annotation}` (gauge): with
`--ingress-nginx-compat`, the number of Ingresses of the served classes that carry each
`nginx.ingress.kubernetes.io/*` annotation, by what ingressctl does with it there (`served`, `translated`,
`approximated`, `ignored`, `refused`).

Guarantees:
- Read from the Ingress cache on each scrape, so it follows adds, changes and deletes without any work on
  the sync thread; a series exists only while its count is above zero.
- The `annotation` label is a row of the ingress-nginx table, or `other` for every key under the prefix that
  is not one (so what an Ingress's author types cannot grow the number of series without bound).
- The status is the one the Ingress's annotations get (`translate`'s report, shared per annotation set).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ingressctl.kinds.ingress.annotations_ingress_nginx import INGRESS_NGINX
from ingressctl.kinds.ingress.ingress_nginx.translate import has_ingress_nginx, translate
from ingressctl.metrics.common import CLASS_LABEL, check_ingress_class, controller_metric

OTHER = "other"


class IngressNginxAnnotationsCollector(Collector):
    def __init__(self, ingress_class: str, ingresses: Callable[[], Iterable[Mapping[str, Any]]], *,
                 snippets_enabled: bool = False) -> None:
        self.ingress_class = check_ingress_class(ingress_class)
        self._ingresses = ingresses
        self._snippets = snippets_enabled

    def counts(self) -> Counter[tuple[str, str]]:
        """(status, annotation) -> Ingresses."""
        counts: Counter[tuple[str, str]] = Counter()
        rows = INGRESS_NGINX.by_key
        for ing in self._ingresses():
            meta = ing.get("metadata")
            annotations = meta.get("annotations") if isinstance(meta, dict) else None
            if not isinstance(annotations, dict) or not annotations or not has_ingress_nginx(annotations):
                continue
            for entry in translate(annotations, snippets_enabled=self._snippets).report:
                counts[(entry.status.value, entry.key if entry.key in rows else OTHER)] += 1
        return counts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            controller_metric("ingress_nginx_annotations"),
            "Ingresses carrying an ingress-nginx annotation, by what ingressctl does with it",
            labels=[CLASS_LABEL, "status", "annotation"])
        for (status, annotation), n in sorted(self.counts().items()):
            family.add_metric([self.ingress_class, status, annotation], n)
        yield family
