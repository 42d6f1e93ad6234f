"""Prometheus metrics for `ingressctl.k8s.workqueue` queues (NIC's `collectors/workqueue.go`, client-go's
workqueue metric set).

A `WorkqueueMetricsProvider` implements `ingressctl.k8s.workqueue.MetricsProvider`. Every metric has the
labels `class` and `name` (the queue's name; NIC's task queue is `taskQueue`):

- `nginx_ingress_controller_workqueue_depth` (gauge)
- `nginx_ingress_controller_workqueue_queue_duration_seconds` (histogram: first add to get)
- `nginx_ingress_controller_workqueue_work_duration_seconds` (histogram: get to done)
  both with NIC's buckets 0.1, 0.5, 1, 5, 10, 50
- `nginx_ingress_controller_workqueue_adds_total`, `..._retries_total` (counters),
  `..._unfinished_work_seconds`, `..._longest_running_processor_seconds` (gauges). NIC makes these four
  no-ops; ingressctl exposes them under the same prefix.

The queue calls these metrics with its lock held; prometheus_client's children are quick and take only
their own locks, so that is safe. A queue's series exist (at 0) as soon as the queue is created.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ingressctl.k8s.workqueue import CounterMetric, GaugeMetric, HistogramMetric, SettableGaugeMetric
from ingressctl.metrics.common import CLASS_LABEL, check_ingress_class, controller_metric

WORKQUEUE_BUCKETS = (0.1, 0.5, 1.0, 5.0, 10.0, 50.0)


class WorkqueueMetricsProvider:
    """Creates the Prometheus metrics of each named queue (an `ingressctl.k8s.workqueue.MetricsProvider`)."""

    def __init__(self, registry: CollectorRegistry, ingress_class: str,
                 buckets: tuple[float, ...] = WORKQUEUE_BUCKETS) -> None:
        self.ingress_class = check_ingress_class(ingress_class)
        labels = [CLASS_LABEL, "name"]

        def m(name: str) -> str:
            return controller_metric("workqueue_" + name)

        self._depth = Gauge(m("depth"), "Current depth of the workqueue", labels, registry=registry)
        self._adds = Counter(m("adds_total"), "Total number of adds handled by the workqueue", labels,
                             registry=registry)
        self._latency = Histogram(m("queue_duration_seconds"),
                                  "How long in seconds an item stays in the workqueue before being processed",
                                  labels, buckets=buckets, registry=registry)
        self._work_duration = Histogram(m("work_duration_seconds"),
                                        "How long in seconds processing an item from the workqueue takes",
                                        labels, buckets=buckets, registry=registry)
        self._unfinished = Gauge(m("unfinished_work_seconds"),
                                 "Seconds of work in progress not yet observed by work_duration; large "
                                 "values indicate stuck workers", labels, registry=registry)
        self._longest = Gauge(m("longest_running_processor_seconds"),
                              "Seconds the longest running worker has been processing its item", labels,
                              registry=registry)
        self._retries = Counter(m("retries_total"), "Total number of retries handled by the workqueue",
                                labels, registry=registry)

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return self._depth.labels(self.ingress_class, name)

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self._adds.labels(self.ingress_class, name)

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self._latency.labels(self.ingress_class, name)

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self._work_duration.labels(self.ingress_class, name)

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._unfinished.labels(self.ingress_class, name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._longest.labels(self.ingress_class, name)

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self._retries.labels(self.ingress_class, name)
