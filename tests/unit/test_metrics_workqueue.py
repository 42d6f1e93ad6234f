"""The Prometheus workqueue provider driven by a real RateLimitingQueue on a fake clock: depth, adds, queue
and work durations (NIC's buckets), retries, and the unfinished-work gauges, labelled with class and name."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from ingressctl.k8s.clock import FakeClock
from ingressctl.k8s.ratelimit import ItemExponentialFailureRateLimiter
from ingressctl.k8s.workqueue import UNFINISHED_WORK_UPDATE_PERIOD, MetricsProvider, RateLimitingQueue
from ingressctl.metrics import generate_text, new_registry
from ingressctl.metrics.workqueue import WORKQUEUE_BUCKETS, WorkqueueMetricsProvider
from tests.unit.test_metrics_collectors import Samples, parse_samples

P = "nginx_ingress_controller_workqueue_"
LABELS = {"class": "nginx", "name": "taskQueue"}


def eventually(pred: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


class Fixture:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.registry = new_registry()
        self.provider = WorkqueueMetricsProvider(self.registry, "nginx")
        limiter = ItemExponentialFailureRateLimiter(base=1.0, max_delay=100.0)
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(limiter, name="taskQueue", clock=self.clock,
                                                               metrics_provider=self.provider)

    def scrape(self) -> Samples:
        return parse_samples(generate_text(self.registry).decode())

    def value(self, name: str, **extra: str) -> float:
        return self.scrape()[(P + name, frozenset({**LABELS, **extra}.items()))]


@pytest.fixture
def fx() -> Iterator[Fixture]:
    f = Fixture()
    yield f
    f.queue.shut_down()
    f.queue.join(10)


def test_provider_satisfies_the_protocol() -> None:
    provider: MetricsProvider = WorkqueueMetricsProvider(new_registry(), "nginx")
    assert provider is not None


def test_series_exist_at_zero_once_the_queue_exists(fx: Fixture) -> None:
    s = fx.scrape()
    for name in ("depth", "adds_total", "retries_total", "unfinished_work_seconds",
                 "longest_running_processor_seconds", "queue_duration_seconds_count",
                 "work_duration_seconds_count"):
        assert s[(P + name, frozenset(LABELS.items()))] == 0, name
    buckets = {dict(labels)["le"] for name, labels in s if name == P + "queue_duration_seconds_bucket"}
    assert buckets == {*(repr(b) for b in WORKQUEUE_BUCKETS), "+Inf"}


def test_depth_adds_and_durations_move(fx: Fixture) -> None:
    q = fx.queue
    q.add("ingress/a")
    q.add("ingress/b")
    q.add("ingress/a")  # already waiting: de-duplicated, not an add
    assert fx.value("depth") == 2
    assert fx.value("adds_total") == 2

    fx.clock.step(0.3)
    item, _ = q.get(timeout=0)
    assert item == "ingress/a"
    assert fx.value("depth") == 1
    assert fx.value("queue_duration_seconds_count") == 1
    assert fx.value("queue_duration_seconds_sum") == pytest.approx(0.3)
    assert fx.value("queue_duration_seconds_bucket", le="0.1") == 0
    assert fx.value("queue_duration_seconds_bucket", le="0.5") == 1

    fx.clock.step(7)
    q.done("ingress/a")
    assert fx.value("work_duration_seconds_count") == 1
    assert fx.value("work_duration_seconds_sum") == pytest.approx(7)
    assert fx.value("work_duration_seconds_bucket", le="5.0") == 0
    assert fx.value("work_duration_seconds_bucket", le="10.0") == 1

    item, _ = q.get(timeout=0)
    assert item == "ingress/b"
    assert fx.value("depth") == 0
    assert fx.value("queue_duration_seconds_count") == 2
    assert fx.value("queue_duration_seconds_sum") == pytest.approx(0.3 + 7.3)
    q.done("ingress/b")


def test_retries_count_rate_limited_adds(fx: Fixture) -> None:
    q = fx.queue
    q.add_rate_limited("ingress/a")  # base delay 1 s on the fake clock
    assert fx.value("retries_total") == 1
    assert fx.value("depth") == 0  # still waiting for its delay
    fx.clock.step(1.0)
    eventually(lambda: fx.value("depth") == 1, "the delayed item to be added")
    assert fx.value("adds_total") == 1


def test_unfinished_work_and_longest_running(fx: Fixture) -> None:
    q = fx.queue
    q.add("ingress/slow")
    item, _ = q.get(timeout=0)
    assert item == "ingress/slow"
    assert fx.clock.block_until_waiters(1)
    fx.clock.step(3.0)  # past several update periods: the updater refreshes once
    assert UNFINISHED_WORK_UPDATE_PERIOD < 3.0
    eventually(lambda: fx.value("longest_running_processor_seconds") == pytest.approx(3.0),
               "the unfinished-work updater to run")
    assert fx.value("unfinished_work_seconds") == pytest.approx(3.0)
    q.done("ingress/slow")


def test_two_queues_share_the_provider_by_name() -> None:
    reg = new_registry()
    provider = WorkqueueMetricsProvider(reg, "nginx")
    clock = FakeClock()
    a: RateLimitingQueue[str] = RateLimitingQueue(name="taskQueue", clock=clock, metrics_provider=provider)
    b: RateLimitingQueue[str] = RateLimitingQueue(name="other", clock=clock, metrics_provider=provider)
    try:
        a.add("x")
        b.add("y")
        b.add("z")
        s = parse_samples(generate_text(reg).decode())
        assert s[(P + "depth", frozenset({"class": "nginx", "name": "taskQueue"}.items()))] == 1
        assert s[(P + "depth", frozenset({"class": "nginx", "name": "other"}.items()))] == 2
    finally:
        for q in (a, b):
            q.shut_down()
            q.join(10)
