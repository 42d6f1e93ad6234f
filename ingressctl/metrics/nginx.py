"""NGINX stub_status metrics, scraped on demand (the semantics of nginx-prometheus-exporter's NginxCollector,
which NIC registers with the namespace `nginx_ingress_nginx`).

On every `collect()` stub_status is fetched over `unix:<run_dir>/nginx-status.sock` (through
`ingressctl.nginx.stub_status.fetch_stub_status`, with a short timeout, one fetch at a time under a lock) and
these families are yielded, each with the label `class`:

- `nginx_ingress_nginx_connections_active`, `_connections_reading`, `_connections_writing`,
  `_connections_waiting` (gauges);
- `nginx_ingress_nginx_connections_accepted`, `_connections_handled` (counters, no `_total` suffix, as the
  exporter names them) and `nginx_ingress_nginx_http_requests_total` (counter);
- `nginx_ingress_nginx_up` = 1.

If the fetch fails for any reason (NGINX down, timeout, bad answer), ONLY `nginx_ingress_nginx_up` = 0 is
yielded and the error is logged. `collect()` never raises. `describe()` does not fetch, so registering
the collector before NGINX runs is fine.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from ingressctl.logging import get_logger
from ingressctl.metrics.common import CLASS_LABEL, NGINX_NAMESPACE, check_ingress_class
from ingressctl.nginx.stub_status import STATUS_SOCKET_NAME, StubStatus, fetch_stub_status

log = get_logger(__name__)

DEFAULT_TIMEOUT = 2.0

# (field of StubStatus, metric suffix, type, help)
_FIELDS: tuple[tuple[str, str, str, str], ...] = (
    ("connections_active", "connections_active", "gauge", "Active client connections"),
    ("connections_accepted", "connections_accepted", "counter", "Accepted client connections"),
    ("connections_handled", "connections_handled", "counter", "Handled client connections"),
    ("connections_reading", "connections_reading", "gauge",
     "Connections where NGINX is reading the request header"),
    ("connections_writing", "connections_writing", "gauge",
     "Connections where NGINX is writing the response back to the client"),
    ("connections_waiting", "connections_waiting", "gauge", "Idle client connections"),
    ("http_requests_total", "http_requests_total", "counter", "Total http requests"),
)
UP = f"{NGINX_NAMESPACE}_up"
_UP_HELP = "Status of the last metric scrape"


def status_socket_path(run_dir: str) -> str:
    """`<run_dir>/nginx-status.sock`, where the main config serves stub_status."""
    return os.path.join(run_dir, STATUS_SOCKET_NAME)


def _metric(name: str, typ: str, help_text: str) -> Metric:
    # A plain Metric whose samples are named exactly `name` (CounterMetricFamily would force `_total`). A
    # counter family's name is kept without `_total`, as prometheus_client's own families are.
    if typ == "counter" and name.endswith("_total"):
        name = name[:-len("_total")]
    return Metric(name, help_text, typ)


class NginxStubStatusCollector(Collector):
    """Fetches stub_status on each scrape and exposes it as nginx-prometheus-exporter does."""

    def __init__(self, ingress_class: str, socket_path: str, *, timeout: float = DEFAULT_TIMEOUT,
                 fetch: Callable[[], StubStatus] | None = None) -> None:
        """`fetch` replaces the unix-socket fetch (tests); it may raise anything."""
        self.ingress_class = check_ingress_class(ingress_class)
        self.socket_path = socket_path
        self.timeout = timeout
        self._fetch = fetch if fetch is not None else self._fetch_socket
        self._lock = threading.Lock()

    def _fetch_socket(self) -> StubStatus:
        return fetch_stub_status(self.socket_path, self.timeout)

    def describe(self) -> Iterator[Metric]:
        for _, suffix, typ, help_text in _FIELDS:
            yield _metric(f"{NGINX_NAMESPACE}_{suffix}", typ, help_text)
        yield _metric(UP, "gauge", _UP_HELP)

    def collect(self) -> Iterator[Metric]:
        labels = {CLASS_LABEL: self.ingress_class}
        with self._lock:
            try:
                status = self._fetch()
            except Exception as e:
                log.warning("error getting stub_status", socket=self.socket_path, error=str(e))
                status = None
        if status is None:
            up = _metric(UP, "gauge", _UP_HELP)
            up.add_sample(UP, labels, 0)
            yield up
            return
        for field, suffix, typ, help_text in _FIELDS:
            name = f"{NGINX_NAMESPACE}_{suffix}"
            m = _metric(name, typ, help_text)
            m.add_sample(name, labels, float(getattr(status, field)))
            yield m
        up = _metric(UP, "gauge", _UP_HELP)
        up.add_sample(UP, labels, 1)
        yield up
