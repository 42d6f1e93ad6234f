"""EventRecorder against a devcluster over HTTP with the real KubeClient: fields, aggregation, outage and
recovery."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from ingressctl.devcluster import DevCluster
from ingressctl.k8s.client import KubeClient
from ingressctl.k8s.events import EventRecorder
from ingressctl.k8s.resource import EVENTS, INGRESSES
from tests.helpers import wait_until

pytestmark = pytest.mark.integration

NS = "default"


@pytest.fixture
def cluster() -> Iterator[DevCluster]:
    with DevCluster(seed=11) as dc:
        yield dc


@pytest.fixture
def client(cluster: DevCluster) -> KubeClient:
    # No client-side retries: the recorder's own retry policy is what is under test.
    return KubeClient.for_host(cluster.url, max_retries=0, read_timeout=5.0)


@pytest.fixture
def ingress(client: KubeClient) -> dict[str, Any]:
    return client.create(INGRESSES, NS, {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "cafe", "namespace": NS},
        "spec": {"rules": [{"host": "cafe.example.com"}]},
    })


def events_for(client: KubeClient, name: str) -> list[dict[str, Any]]:
    items = client.list(EVENTS, NS)["items"]
    return [e for e in items if e["involvedObject"]["name"] == name]


def test_events_have_client_go_fields_and_repeats_aggregate(client: KubeClient,
                                                            ingress: dict[str, Any]) -> None:
    rec = EventRecorder(client, host="node-a")
    rec.start()
    try:
        rec.event(ingress, "Normal", "AddedOrUpdated", "Configuration for default/cafe was added or updated ")
        [ev] = wait_until(lambda: events_for(client, "cafe"), "the event")
        assert re.fullmatch(r"cafe\.[0-9a-f]{16}", ev["metadata"]["name"])
        assert ev["metadata"]["namespace"] == NS
        io = ev["involvedObject"]
        assert (io["apiVersion"], io["kind"], io["name"], io["namespace"]) == (
            "networking.k8s.io/v1", "Ingress", "cafe", NS)
        assert io["uid"] == ingress["metadata"]["uid"]
        assert io["resourceVersion"] == ingress["metadata"]["resourceVersion"]
        assert (ev["type"], ev["reason"], ev["count"]) == ("Normal", "AddedOrUpdated", 1)
        assert ev["message"] == "Configuration for default/cafe was added or updated "
        assert ev["source"] == {"component": "nginx-ingress-controller", "host": "node-a"}
        assert ev["reportingComponent"] == "nginx-ingress-controller"
        assert ev["reportingInstance"] == "node-a"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", ev["firstTimestamp"])
        assert ev["lastTimestamp"] >= ev["firstTimestamp"]

        for _ in range(9):
            rec.event(ingress, "Normal", "AddedOrUpdated",
                      "Configuration for default/cafe was added or updated ")
        wait_until(lambda: events_for(client, "cafe")[0]["count"] == 10, "count 10 on the same Event")
        assert len(events_for(client, "cafe")) == 1
        rec.event(ingress, "Warning", "Rejected", "spec.rules[0].host: Invalid value")
        wait_until(lambda: len(events_for(client, "cafe")) == 2, "a different event is another Event")
        assert rec.stats.failed == 0 and rec.dropped == 0
    finally:
        rec.stop()


def test_api_outage_drops_without_blocking_then_recovers(cluster: DevCluster, client: KubeClient,
                                                         ingress: dict[str, Any]) -> None:
    for verb in ("create", "patch"):  # the API fails every write (reads stay up for the assertions)
        cluster.faults.set_error_rate(500, 1.0, verb=verb, resource="events")
    rec = EventRecorder(client, buffer_size=50, retry_interval=0.2, max_tries=10_000, drop_log_interval=1.0)
    rec.start()
    try:
        done = threading.Event()

        def burst() -> None:
            for i in range(2000):
                rec.event(ingress, "Warning", "Burst", f"problem {i}")
            done.set()

        threading.Thread(target=burst, daemon=True).start()
        assert done.wait(120), "event() blocked while the API was failing"
        assert rec.pending() <= 50
        # One event is with the writer (failing and retrying); the buffer holds 50; the rest were dropped.
        assert rec.dropped >= 2000 - 51
        assert rec.stats.recorded == 2000
        wait_until(lambda: cluster.stats.count("create", "events") >= 3, "the writer keeps retrying")
        assert events_for(client, "cafe") == []

        for verb in ("create", "patch"):
            cluster.faults.set_error_rate(500, 0.0, verb=verb, resource="events")
        wait_until(lambda: rec.pending() == 0, "the buffered events are written after recovery")
        rec.event(ingress, "Normal", "Recovered", "the API is back")
        wait_until(lambda: any(e["reason"] == "Recovered" for e in events_for(client, "cafe")),
                   "new events are written again")
        written = events_for(client, "cafe")
        assert len(written) == 2000 - rec.dropped + 1
        assert rec.stats.failed == 0
    finally:
        rec.stop()


def test_stop_flushes_buffered_events(client: KubeClient, ingress: dict[str, Any]) -> None:
    rec = EventRecorder(client)
    for i in range(30):
        rec.event(ingress, "Normal", "Flush", f"m{i}")
    rec.start()
    rec.stop(timeout=30)
    assert len(events_for(client, "cafe")) == 30
    assert rec.dropped == 0
