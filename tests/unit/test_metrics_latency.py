"""Latency metrics: the syslog message parsing table (NIC's skip rules, multi-attempt values, malformed input
that is counted and never crashes), label mapping and series deletion, and the syslog listener on a real
unix datagram socket."""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingressctl.metrics import generate_text, new_registry
from ingressctl.metrics.latency import (
    LATENCY_BUCKETS,
    LATENCY_LOG_FORMAT,
    LatencyMessage,
    LatencyMetricsCollector,
    LatencyObservation,
    UpstreamServerLabels,
    latency_access_log,
    latency_observation,
    parse_syslog_message,
)
from ingressctl.metrics.syslog import SyslogListener
from tests.unit.test_metrics_collectors import Samples, parse_samples

METRIC = "nginx_ingress_controller_upstream_server_response_latency_ms"
MESSAGES = "nginx_ingress_controller_latency_syslog_messages_total"
UPSTREAM = "default-cafe-cafe.example.com-tea-svc-80"
LABELS = UpstreamServerLabels(service="tea-svc", resource_type="ingress", resource_name="cafe",
                              resource_namespace="default")


def syslog(addr: str, rtime: str, host: str = UPSTREAM, status: str = "200") -> str:
    body = json.dumps({"upstreamAddress": addr, "upstreamResponseTime": rtime, "proxyHost": host,
                       "upstreamStatus": status})
    return f"<190>Mar  4 10:00:00 nginx: {body}"


def eventually(pred: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


# -- parsing -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("message", "expected"), [
    (syslog("10.0.0.1:8080", "0.012"), LatencyObservation(UPSTREAM, "10.0.0.1:8080", "200", 12.0)),
    # several attempts in one upstream group: the last one counts
    (syslog("10.0.0.1:8080, 10.0.0.2:8080", "0.001, 0.250", status="502, 201"),
     LatencyObservation(UPSTREAM, "10.0.0.2:8080", "201", 250.0)),
    # across upstream groups (internal redirect)
    (syslog("10.0.0.1:8080 : 10.0.0.3:80", "0.002 : 0.004", status="404 : 200"),
     LatencyObservation(UPSTREAM, "10.0.0.3:80", "200", 4.0)),
    (syslog("[fd00::1]:8080", "1.5", status="503"),
     LatencyObservation(UPSTREAM, "[fd00::1]:8080", "503", 1500.0)),
    # with a hostname and another header layout: everything after the tag
    ('<190>1 2024-01-01T00:00:00Z myhost nginx: {"upstreamAddress":"10.0.0.1:80","upstreamResponseTime":'
     '"0.000","proxyHost":"u","upstreamStatus":"200"}', LatencyObservation("u", "10.0.0.1:80", "200", 0.0)),
])
def test_observation_table(message: str, expected: LatencyObservation) -> None:
    assert latency_observation(parse_syslog_message(message)) == expected


@pytest.mark.parametrize("message", [
    syslog(UPSTREAM, "0.000", status="502"),   # no live upstreams: address equals the proxy host
    syslog("", "", host="", status=""),        # not proxied (escape=json writes unset variables as "")
    syslog("-", "-", host="-", status="-"),    # not proxied (default escaping writes "-")
    syslog("-", "0.010", host="grpc-up"),      # gRPC
    syslog("10.0.0.1:8080", "-", status="502"),  # no response time
])
def test_skipped_messages(message: str) -> None:
    assert latency_observation(parse_syslog_message(message)) is None


@pytest.mark.parametrize("message", [
    "",
    "garbage",
    "<190>Mar  4 10:00:00 sshd: {}",
    "<190>Mar  4 10:00:00 nginx: not json",
    "<190>Mar  4 10:00:00 nginx: [1, 2]",
    '<190>Mar  4 10:00:00 nginx: {"upstreamAddress": "10.0.0.1:80"}',
    '<190>Mar  4 10:00:00 nginx: {"upstreamAddress": 5, "upstreamResponseTime": "1", "proxyHost": "u", '
    '"upstreamStatus": "200"}',
    '<190>Mar  4 10:00:00 nginx: {"upstreamAddress": "10.0.0.1:80", "upstreamResponseTime": "1", '
    '"proxyHost": "u", "upstreamStatus": "200"',   # truncated datagram
    "<190>Mar  4 10:00:00 nginx: " + "[" * 100000,   # deeply nested: must not blow the stack
])
def test_malformed_messages_raise_value_error(message: str) -> None:
    with pytest.raises(ValueError):
        parse_syslog_message(message)


@pytest.mark.parametrize("rtime", ["abc", "nan", "inf", "-1", "0.1.2"])
def test_bad_response_time_is_a_value_error(rtime: str) -> None:
    with pytest.raises(ValueError, match="response time"):
        latency_observation(LatencyMessage("10.0.0.1:80", rtime, UPSTREAM, "200"))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.binary(), st.builds(lambda s: "nginx: " + s, st.text())))
def test_record_latency_never_raises(message: str | bytes) -> None:
    collector = LatencyMetricsCollector(new_registry(), "nginx")
    assert collector.record_latency(message) in ("observed", "skipped", "unmapped", "malformed")


# -- the collector -----------------------------------------------------------------------------------------

class Fixture:
    def __init__(self) -> None:
        self.registry = new_registry()
        self.collector = LatencyMetricsCollector(self.registry, "nginx")

    def scrape(self) -> Samples:
        return parse_samples(generate_text(self.registry).decode())

    def series(self) -> set[frozenset[tuple[str, str]]]:
        return {labels - {("le", dict(labels).get("le", ""))} for name, labels in self.scrape()
                if name == METRIC + "_count"}

    def results(self) -> dict[str, float]:
        return {dict(labels)["result"]: v for (name, labels), v in self.scrape().items() if name == MESSAGES}


@pytest.fixture
def fx() -> Fixture:
    return Fixture()


def full_labels(server: str, pod: str, code: str = "200", labels: UpstreamServerLabels = LABELS,
                upstream: str = UPSTREAM) -> frozenset[tuple[str, str]]:
    return frozenset({"class": "nginx", "upstream": upstream, "server": server, "code": code,
                      "service": labels.service, "resource_type": labels.resource_type,
                      "resource_name": labels.resource_name, "resource_namespace": labels.resource_namespace,
                      "pod_name": pod}.items())


def test_mapped_observation_with_nic_buckets_and_labels(fx: Fixture) -> None:
    fx.collector.update_upstream_server_labels({UPSTREAM: LABELS})
    fx.collector.update_upstream_server_peer_labels({f"{UPSTREAM}/10.0.0.1:8080": "tea-7d9f-abcde"})
    assert fx.collector.record_latency(syslog("10.0.0.1:8080", "0.012")) == "observed"
    assert fx.collector.record_latency(syslog("10.0.0.1:8080", "0.003")).encode() == b"observed"
    s = fx.scrape()
    labels = full_labels("10.0.0.1:8080", "tea-7d9f-abcde")
    assert s[(METRIC + "_count", labels)] == 2
    assert s[(METRIC + "_sum", labels)] == pytest.approx(15.0)
    assert s[(METRIC + "_bucket", labels | {("le", "3.0")})] == 1
    assert s[(METRIC + "_bucket", labels | {("le", "20.0")})] == 2
    les = {dict(lab)["le"] for name, lab in s if name == METRIC + "_bucket"}
    assert les == {*(repr(float(b)) for b in LATENCY_BUCKETS), "+Inf"}
    assert fx.results() == {"observed": 2, "skipped": 0, "unmapped": 0, "malformed": 0}


def test_unmapped_and_skipped_and_malformed_are_counted_not_observed(fx: Fixture) -> None:
    c = fx.collector
    assert c.record_latency(syslog("10.0.0.1:8080", "0.012")) == "unmapped"     # no labels at all
    c.update_upstream_server_labels({UPSTREAM: LABELS})
    assert c.record_latency(syslog("10.0.0.1:8080", "0.012")) == "unmapped"     # no pod for the peer
    c.update_upstream_server_peer_labels({"other-upstream/10.0.0.1:8080": "p"})
    assert c.record_latency(syslog("10.0.0.1:8080", "0.012")) == "unmapped"
    assert c.record_latency(syslog(UPSTREAM, "0.0")) == "skipped"
    assert c.record_latency("nginx: {broken") == "malformed"
    assert c.record_latency(b"\xff\xfe nginx: \x00") == "malformed"
    assert fx.series() == set()
    assert fx.results() == {"observed": 0, "skipped": 1, "unmapped": 3, "malformed": 2}


def test_series_deleted_when_peers_disappear(fx: Fixture) -> None:
    c = fx.collector
    c.set_upstream_peers(UPSTREAM, LABELS, {"10.0.0.1:8080": "pod-a", "10.0.0.2:8080": "pod-b"})
    c.record_latency(syslog("10.0.0.1:8080", "0.010"))
    c.record_latency(syslog("10.0.0.1:8080", "0.010", status="500"))
    c.record_latency(syslog("10.0.0.2:8080", "0.010"))
    assert fx.series() == {full_labels("10.0.0.1:8080", "pod-a"),
                           full_labels("10.0.0.1:8080", "pod-a", "500"),
                           full_labels("10.0.0.2:8080", "pod-b")}

    # pod-a went away and a new pod took its place at another address
    c.set_upstream_peers(UPSTREAM, LABELS, {"10.0.0.2:8080": "pod-b", "10.0.0.3:8080": "pod-c"})
    assert fx.series() == {full_labels("10.0.0.2:8080", "pod-b")}
    assert c.record_latency(syslog("10.0.0.1:8080", "0.010")) == "unmapped"
    assert c.peers() == {f"{UPSTREAM}/10.0.0.2:8080": "pod-b", f"{UPSTREAM}/10.0.0.3:8080": "pod-c"}

    # the same address now belongs to another pod: the old pod's series goes
    c.set_upstream_peers(UPSTREAM, LABELS, {"10.0.0.2:8080": "pod-d"})
    assert fx.series() == set()
    c.record_latency(syslog("10.0.0.2:8080", "0.010"))
    assert fx.series() == {full_labels("10.0.0.2:8080", "pod-d")}

    # the upstream now serves another Service: its series go
    other = UpstreamServerLabels("coffee-svc", "ingress", "cafe", "default")
    c.set_upstream_peers(UPSTREAM, other, {"10.0.0.2:8080": "pod-d"})
    assert fx.series() == set()
    c.record_latency(syslog("10.0.0.2:8080", "0.010"))
    assert fx.series() == {full_labels("10.0.0.2:8080", "pod-d", labels=other)}

    c.delete_upstream_labels([UPSTREAM])
    assert fx.series() == set()
    assert c.upstreams() == {} and c.peers() == {}
    assert c.record_latency(syslog("10.0.0.2:8080", "0.010")) == "unmapped"


def test_nic_style_primitives(fx: Fixture) -> None:
    c = fx.collector
    peer = f"{UPSTREAM}/unix:/run/nginx/error.sock"  # a server address may contain '/'
    c.update_upstream_server_labels({UPSTREAM: LABELS})
    c.update_upstream_server_peer_labels({peer: ""})
    assert c.record_latency(syslog("unix:/run/nginx/error.sock", "0.001", status="502")) == "observed"
    assert fx.series() == {full_labels("unix:/run/nginx/error.sock", "", "502")}
    c.delete_metrics([peer])
    assert fx.series() == set()
    c.delete_upstream_server_peer_labels([peer])
    assert c.peers() == {}
    c.delete_upstream_server_labels([UPSTREAM])
    assert c.upstreams() == {}
    # bad input is a clear error and changes nothing
    with pytest.raises(ValueError, match="upstream/server"):
        c.update_upstream_server_peer_labels({"no-slash": "pod"})
    with pytest.raises(TypeError):
        c.update_upstream_server_labels({UPSTREAM: ("svc", "ingress", "cafe", "default")})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="upstream name"):
        c.update_upstream_server_labels({"a/b": LABELS})
    assert c.upstreams() == {} and c.peers() == {}


def test_directives_for_the_template() -> None:
    assert LATENCY_LOG_FORMAT.startswith("log_format response_time escape=json '{")
    for var in ("$upstream_addr", "$upstream_response_time", "$proxy_host", "$upstream_status"):
        assert var in LATENCY_LOG_FORMAT
    assert latency_access_log("/run/x/nginx-syslog.sock") == (
        "access_log syslog:server=unix:/run/x/nginx-syslog.sock,nohostname,tag=nginx response_time;")


# -- the syslog listener -----------------------------------------------------------------------------------

@pytest.fixture
def sock_dir() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="syslog-")  # short: unix socket paths are limited to 107 bytes
    yield d
    for name in os.listdir(d):
        os.unlink(os.path.join(d, name))
    os.rmdir(d)


def send(path: str, data: bytes) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(data, path)


def test_listener_delivers_datagrams_and_survives_handler_errors(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "nginx-syslog.sock")
    got: list[str] = []

    def handler(msg: str) -> None:
        if "boom" in msg:
            raise RuntimeError("handler failed")
        got.append(msg)

    listener = SyslogListener(path, handler, buffer_size=1024)
    listener.start()
    try:
        assert os.stat(path).st_mode & 0o777 == 0o622
        send(path, b"first")
        send(path, b"boom")
        send(path, b"x" * 3000)             # longer than the buffer: truncated, still delivered
        send(path, b"\xff\xfe last")        # undecodable bytes are replaced
        eventually(lambda: len(got) == 3, "three messages")
        assert got[0] == "first"
        assert got[1] == "x" * 1024
        assert got[2].endswith(" last")
        assert listener.handler_errors == 1
        assert listener.received == 4
    finally:
        listener.stop()
    assert not os.path.exists(path)
    listener.stop()  # idempotent


def test_listener_feeds_the_latency_collector(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "nginx-syslog.sock")
    fx = Fixture()
    fx.collector.set_upstream_peers(UPSTREAM, LABELS, {"10.0.0.1:8080": "pod-a"})
    listener = SyslogListener(path, fx.collector.record_latency)
    listener.start()
    try:
        send(path, syslog("10.0.0.1:8080", "0.042").encode())
        send(path, b"nginx: {not json")
        eventually(lambda: sum(fx.results().values()) == 2, "both messages handled")
        assert fx.scrape()[(METRIC + "_sum", full_labels("10.0.0.1:8080", "pod-a"))] == pytest.approx(42.0)
        assert fx.results()["malformed"] == 1
    finally:
        listener.stop()


def test_listener_replaces_a_stale_socket_but_not_a_file(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "nginx-syslog.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(path)
    stale.close()  # the file stays behind, as after a crash
    listener = SyslogListener(path, lambda m: None)
    listener.start()
    listener.stop()

    Path(path).write_text("not a socket")
    with pytest.raises(FileExistsError, match="not a socket"):
        SyslogListener(path, lambda m: None).start()
    assert Path(path).read_text() == "not a socket"
    with pytest.raises(ValueError, match="at least 1024"):
        SyslogListener(path, lambda m: None, buffer_size=512)


def test_deeply_nested_object_is_malformed() -> None:
    with pytest.raises(ValueError, match="not JSON"):
        parse_syslog_message('nginx: {"a":' + "[" * 100000)


def test_listener_binds_again_when_its_socket_file_is_removed(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "nginx-syslog.sock")
    got: list[str] = []
    listener = SyslogListener(path, got.append, rebind_interval=0.02)
    listener.start()
    try:
        send(path, b"before")
        eventually(lambda: got == ["before"], "the first message")
        os.unlink(path)  # as the Manager does when it (re)starts NGINX
        eventually(lambda: os.path.exists(path) and listener.rebinds == 1, "the socket to be bound again")
        send(path, b"after")
        eventually(lambda: got == ["before", "after"], "a message on the new socket")
        assert os.stat(path).st_mode & 0o777 == 0o622

        # A file someone else put at the path is left alone, even at stop.
        os.unlink(path)
        Path(path).write_text("someone else's")
        checks = listener.socket_checks
        eventually(lambda: listener.socket_checks >= checks + 3, "several more socket checks")
        assert Path(path).read_text() == "someone else's"
    finally:
        listener.stop()
    assert Path(path).read_text() == "someone else's"
