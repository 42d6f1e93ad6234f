"""Upstream response latency from NGINX's access log (NIC's LatencyMetricsCollector, `collectors/latency.go`).

With `--enable-latency-metrics` NGINX logs one JSON line per proxied request (`LATENCY_LOG_FORMAT`) to syslog
on the unix datagram socket `<run_dir>/nginx-syslog.sock` (`latency_access_log()`); the `SyslogListener` hands
each datagram to `LatencyMetricsCollector.record_latency`, which observes
`nginx_ingress_controller_upstream_server_response_latency_ms` (histogram, NIC's buckets) with the labels
`class`, `upstream`, `server`, `code`, `service`, `resource_type`, `resource_name`, `resource_namespace`,
`pod_name`.

Rules (NIC's):
- The JSON follows the syslog tag `nginx:`; `upstreamAddress`, `upstreamResponseTime`, `proxyHost` and
  `upstreamStatus` must all be strings, else the message is malformed.
- A message whose upstream address equals the proxy host (no upstream server was reached, or the request was
  not proxied) or is `-` (gRPC) is skipped; so is one without a response time (`-`).
- With several attempts (`a, b` or `a : b` across upstream groups) the LAST part of the address, time and
  status is used. The value observed is the response time in milliseconds.
- Label values come from mappings the Configurator maintains: upstream name -> `UpstreamServerLabels`
  (service, resource type/name/namespace) and `upstream/server` peer -> pod name. A message with no mapping
  for its upstream or peer is dropped (not observed).
- When a peer (or a whole upstream) goes away its series are deleted, and so are series whose label values
  changed (another Service, another Pod behind the address).

Every message lands in `nginx_ingress_controller_latency_syslog_messages_total{class,result}` with result
`observed`, `skipped`, `unmapped` or `malformed`. `record_latency` never raises. Thread-safe: the listener
thread observes while the sync thread updates the mappings.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram

from ingressctl.logging import get_logger
from ingressctl.metrics.common import CLASS_LABEL, check_ingress_class, controller_metric

log = get_logger(__name__)

SYSLOG_TAG = "nginx"
LATENCY_LOG_FORMAT_NAME = "response_time"
LATENCY_LOG_FORMAT = (
    f"log_format {LATENCY_LOG_FORMAT_NAME} escape=json "
    "'{\"upstreamAddress\":\"$upstream_addr\",\"upstreamResponseTime\":\"$upstream_response_time\","
    "\"proxyHost\":\"$proxy_host\",\"upstreamStatus\":\"$upstream_status\"}';"
)
"""The http-context `log_format` directive the latency access log uses."""

LATENCY_BUCKETS = (1, 2, 3, 4, 5, 10, 20, 30, 40, 50, 100, 200, 300, 400, 500, 1000, 2000, 3000, 4000, 5000,
                   10000, 20000, 30000, 40000, 50000)
LATENCY_METRIC = controller_metric("upstream_server_response_latency_ms")
LATENCY_LABELS = (CLASS_LABEL, "upstream", "server", "code", "service", "resource_type", "resource_name",
                  "resource_namespace", "pod_name")

OBSERVED, SKIPPED, UNMAPPED, MALFORMED = "observed", "skipped", "unmapped", "malformed"
_RESULTS = (OBSERVED, SKIPPED, UNMAPPED, MALFORMED)
_WARN_INTERVAL = 60.0


def latency_access_log(socket_path: str) -> str:
    """The `access_log` directive sending `LATENCY_LOG_FORMAT` lines to the listener's socket.

    It may sit next to another `access_log` in the same context (NGINX writes both); an `access_log` in an
    inner context replaces the inherited ones, so a server or location with its own must repeat this one.
    """
    return (f"access_log syslog:server=unix:{socket_path},nohostname,tag={SYSLOG_TAG} "
            f"{LATENCY_LOG_FORMAT_NAME};")


@dataclass(frozen=True)
class LatencyMessage:
    """The four fields of one `LATENCY_LOG_FORMAT` line, as NGINX wrote them."""

    upstream_address: str
    upstream_response_time: str
    proxy_host: str
    upstream_status: str


@dataclass(frozen=True)
class LatencyObservation:
    upstream: str
    server: str
    code: str
    milliseconds: float


@dataclass(frozen=True)
class UpstreamServerLabels:
    """What an upstream belongs to: NIC's upstream server labels."""

    service: str
    resource_type: str        # "ingress"
    resource_name: str
    resource_namespace: str

    def __post_init__(self) -> None:
        for name in ("service", "resource_type", "resource_name", "resource_namespace"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"UpstreamServerLabels.{name} must be a str, got {getattr(self, name)!r}")


_FIELDS = {"upstreamAddress": "upstream_address", "upstreamResponseTime": "upstream_response_time",
           "proxyHost": "proxy_host", "upstreamStatus": "upstream_status"}


def parse_syslog_message(message: str) -> LatencyMessage:
    """The JSON after the `nginx:` tag of a syslog message. Raises ValueError when it is not one of ours."""
    tag = SYSLOG_TAG + ":"
    idx = message.find(tag)
    if idx < 0:
        raise ValueError(f"no {tag!r} tag in syslog message {message[:200]!r}")
    payload = message[idx + len(tag):].strip()
    if not payload.startswith("{"):
        raise ValueError(f"syslog message has no JSON object after {tag!r}: {payload[:200]!r}")
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError) as e:  # RecursionError: absurdly nested input
        detail = str(e)[:200]
        raise ValueError(f"syslog message is not JSON after {tag!r}: {detail}: {payload[:200]!r}") from None
    if not isinstance(data, dict):
        raise ValueError(f"syslog message JSON is not an object: {payload[:200]!r}")
    values: dict[str, str] = {}
    for key, attr in _FIELDS.items():
        value = data.get(key)
        if not isinstance(value, str):
            raise ValueError(f"syslog message field {key!r} must be a string, got {value!r}")
        values[attr] = value
    return LatencyMessage(**values)


def _last(value: str) -> str:
    """The last attempt: `a, b` (retries in one group) and `a : b` (across groups) both end with b."""
    return value.rsplit(",", 1)[-1].rsplit(" : ", 1)[-1].strip()


def latency_observation(msg: LatencyMessage) -> LatencyObservation | None:
    """What to observe for `msg`, or None if NIC's rules skip it. Raises ValueError on a bad response time."""
    if msg.upstream_address == msg.proxy_host:
        return None  # no upstream server reached (e.g. no live upstreams), or not proxied at all
    server = _last(msg.upstream_address)
    if server in ("", "-"):
        return None  # gRPC
    elapsed = _last(msg.upstream_response_time)
    if elapsed in ("", "-"):
        return None
    try:
        seconds = float(elapsed)
    except ValueError:
        raise ValueError(f"bad upstream response time {msg.upstream_response_time!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"bad upstream response time {msg.upstream_response_time!r}")
    return LatencyObservation(msg.proxy_host, server, _last(msg.upstream_status), seconds * 1000.0)


def _split_peer(peer: str) -> tuple[str, str]:
    """`upstream/server` -> (upstream, server). Upstream names have no '/'; a server may (`unix:/path`)."""
    if not isinstance(peer, str):
        raise TypeError(f"peer must be a str 'upstream/server', got {peer!r}")
    upstream, sep, server = peer.partition("/")
    if not sep or not upstream or not server:
        raise ValueError(f"peer must look like 'upstream/server', got {peer!r}")
    return upstream, server


class LatencyMetricsCollector:
    """Observes upstream latency from syslog messages, labelled through the Configurator's mappings."""

    def __init__(self, registry: CollectorRegistry, ingress_class: str) -> None:
        self.ingress_class = check_ingress_class(ingress_class)
        self._lock = threading.Lock()
        self._histogram = Histogram(
            LATENCY_METRIC,
            "Bucketed response times from when NGINX establishes a connection to an upstream server to when "
            "the last byte of the response body is received by NGINX",
            list(LATENCY_LABELS), buckets=LATENCY_BUCKETS, registry=registry)
        self._messages = Counter(controller_metric("latency_syslog_messages_total"),
                                 "Syslog messages received for latency metrics, by result",
                                 [CLASS_LABEL, "result"], registry=registry)
        for result in _RESULTS:
            self._messages.labels(self.ingress_class, result)
        self._upstreams: dict[str, UpstreamServerLabels] = {}
        self._peers: dict[str, dict[str, str]] = {}  # upstream -> server -> pod name
        # (upstream, server) -> the label values of every series observed for that peer
        self._published: dict[tuple[str, str], set[tuple[str, ...]]] = {}
        self._last_warning = -math.inf

    # -- observations ------------------------------------------------------------------------------------

    def record_latency(self, message: str | bytes) -> str:
        """Handle one syslog message; returns the result (`observed`, `skipped`, `unmapped`, `malformed`)."""
        try:
            result = self._record(message)
        except Exception as e:  # never let one message hurt the listener
            log.exception("recording latency failed", error=str(e))
            result = MALFORMED
        try:
            self._messages.labels(self.ingress_class, result).inc()
        except Exception as e:
            log.warning("counting a latency message failed", error=str(e))
        return result

    def _record(self, message: str | bytes) -> str:
        try:
            text = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
            obs = latency_observation(parse_syslog_message(text))
        except (ValueError, AttributeError) as e:
            self._warn("ignoring malformed latency syslog message", error=str(e))
            return MALFORMED
        if obs is None:
            return SKIPPED
        with self._lock:
            upstream_labels = self._upstreams.get(obs.upstream)
            pod = self._peers.get(obs.upstream, {}).get(obs.server)
            if upstream_labels is None or pod is None:
                log.debug("no metric labels for upstream server; latency dropped", upstream=obs.upstream,
                          server=obs.server)
                return UNMAPPED
            values = (self.ingress_class, obs.upstream, obs.server, obs.code, upstream_labels.service,
                      upstream_labels.resource_type, upstream_labels.resource_name,
                      upstream_labels.resource_namespace, pod)
            self._histogram.labels(*values).observe(obs.milliseconds)
            self._published.setdefault((obs.upstream, obs.server), set()).add(values)
        return OBSERVED

    def _warn(self, event: str, **kw: str) -> None:
        now = time.monotonic()
        if now - self._last_warning >= _WARN_INTERVAL:
            self._last_warning = now
            log.warning(event, **kw)
        else:
            log.debug(event, **kw)

    # -- label mappings (NIC's API) ----------------------------------------------------------------------

    def update_upstream_server_labels(self, labels: Mapping[str, UpstreamServerLabels]) -> None:
        """Set the labels of these upstreams; an upstream whose labels changed loses its old series."""
        for name, value in labels.items():
            if not isinstance(name, str) or not name or "/" in name:
                raise ValueError(f"invalid upstream name {name!r}")
            if not isinstance(value, UpstreamServerLabels):
                raise TypeError(f"labels of upstream {name!r} must be UpstreamServerLabels, got {value!r}")
        with self._lock:
            for name, value in labels.items():
                old = self._upstreams.get(name)
                if old is not None and old != value:
                    self._delete_series_locked(name, None)
                self._upstreams[name] = value

    def delete_upstream_server_labels(self, upstream_names: Iterable[str]) -> None:
        """Forget these upstreams' labels (their observations are dropped from now on)."""
        with self._lock:
            for name in list(upstream_names):
                self._upstreams.pop(name, None)

    def update_upstream_server_peer_labels(self, labels: Mapping[str, str]) -> None:
        """Set the pod name of `upstream/server` peers; a peer whose pod changed loses its old series."""
        parsed = []
        for peer, pod in labels.items():
            upstream, server = _split_peer(peer)
            if not isinstance(pod, str):
                raise TypeError(f"pod name of peer {peer!r} must be a str, got {pod!r}")
            parsed.append((upstream, server, pod))
        with self._lock:
            for upstream, server, pod in parsed:
                servers = self._peers.setdefault(upstream, {})
                old = servers.get(server)
                if old is not None and old != pod:
                    self._delete_series_locked(upstream, server)
                servers[server] = pod

    def delete_upstream_server_peer_labels(self, peers: Iterable[str]) -> None:
        """Forget these `upstream/server` peers' pod names."""
        parsed = [_split_peer(p) for p in list(peers)]
        with self._lock:
            for upstream, server in parsed:
                servers = self._peers.get(upstream)
                if servers is not None:
                    servers.pop(server, None)
                    if not servers:
                        del self._peers[upstream]

    def delete_metrics(self, peers: Iterable[str]) -> None:
        """Delete every series published for these `upstream/server` peers."""
        parsed = [_split_peer(p) for p in list(peers)]
        with self._lock:
            for upstream, server in parsed:
                self._delete_series_locked(upstream, server)

    # -- convenience for the Configurator ---------------------------------------------------------------

    def set_upstream_peers(self, upstream: str, labels: UpstreamServerLabels,
                           peers: Mapping[str, str]) -> None:
        """Make `upstream` carry `labels` and exactly these peers (server address -> pod name).

        Peers no longer present lose their labels and series; so does anything whose label values changed.
        """
        self.update_upstream_server_labels({upstream: labels})
        for server, pod in peers.items():
            if not isinstance(server, str) or not server or not isinstance(pod, str):
                raise TypeError(f"peers of {upstream!r} must map server address to pod name, got "
                                f"{server!r}: {pod!r}")
        with self._lock:
            old = self._peers.get(upstream, {})
            for server in set(old) - set(peers):
                self._delete_series_locked(upstream, server)
            for server, pod in peers.items():
                if server in old and old[server] != pod:
                    self._delete_series_locked(upstream, server)
            if peers:
                self._peers[upstream] = dict(peers)
            else:
                self._peers.pop(upstream, None)

    def delete_upstream_labels(self, upstream_names: Iterable[str]) -> None:
        """Forget these upstreams entirely: labels, peers, and every series they published."""
        with self._lock:
            for name in list(upstream_names):
                self._upstreams.pop(name, None)
                self._peers.pop(name, None)
                self._delete_series_locked(name, None)

    def upstreams(self) -> dict[str, UpstreamServerLabels]:
        """A copy of the upstream labels (for tests and debugging)."""
        with self._lock:
            return dict(self._upstreams)

    def peers(self) -> dict[str, str]:
        """A copy of the peer labels as `upstream/server` -> pod name."""
        with self._lock:
            return {f"{u}/{s}": pod for u, servers in self._peers.items() for s, pod in servers.items()}

    def _delete_series_locked(self, upstream: str, server: str | None) -> None:
        keys = [k for k in self._published if k[0] == upstream and (server is None or k[1] == server)]
        for key in keys:
            for values in self._published.pop(key):
                with contextlib.suppress(KeyError):  # older prometheus_client raises for a missing series
                    self._histogram.remove(*values)
