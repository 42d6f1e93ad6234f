"""NGINX worker process counts (NIC's NginxProcessesMetricsCollector, `collectors/processes.go`).

`nginx_ingress_controller_nginx_worker_processes_total{class,generation="current"|"old"}` (gauge) is computed
on every scrape from /proc (`ingressctl.nginx.processes.count_worker_processes`): `old` counts workers of a
previous configuration that are still draining after a reload.

Guarantees: `describe()` never scans, so registering does not touch /proc; `collect()` never raises (a
failed scan is logged and the family is left out of that scrape). With `master_pid`, only the workers of
that NGINX master are counted (several NGINX instances on one host, e.g. tests); when it returns None
(NGINX not running) both counts are 0. Without it, every NGINX worker on the host counts, as in NIC.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from ingressctl.logging import get_logger
from ingressctl.metrics.common import CLASS_LABEL, check_ingress_class, controller_metric
from ingressctl.nginx.processes import WorkerProcessCounts, count_worker_processes

log = get_logger(__name__)

WORKER_PROCESSES = controller_metric("nginx_worker_processes_total")
_HELP = "Number of NGINX worker processes"


class NginxProcessesMetricsCollector(Collector):
    """Counts NGINX workers by generation on each scrape."""

    def __init__(self, ingress_class: str, *, proc_root: str = "/proc",
                 master_pid: Callable[[], int | None] | None = None) -> None:
        self.ingress_class = check_ingress_class(ingress_class)
        self.proc_root = proc_root
        self._master_pid = master_pid

    def _family(self) -> GaugeMetricFamily:
        return GaugeMetricFamily(WORKER_PROCESSES, _HELP, labels=[CLASS_LABEL, "generation"])

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def counts(self) -> WorkerProcessCounts:
        """Scan now."""
        if self._master_pid is None:
            return count_worker_processes(self.proc_root)
        pid = self._master_pid()
        if pid is None:
            return WorkerProcessCounts()
        return count_worker_processes(self.proc_root, parent_pid=pid)

    def collect(self) -> Iterator[Metric]:
        try:
            counts = self.counts()
        except Exception as e:
            log.warning("counting nginx worker processes failed", error=str(e))
            return
        family = self._family()
        family.add_metric([self.ingress_class, "current"], counts.current)
        family.add_metric([self.ingress_class, "old"], counts.old)
        yield family
