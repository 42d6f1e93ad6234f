"""ReadAhead: reads started together, taken later with their result or their exception."""

from __future__ import annotations

import threading

import pytest

from ingressctl.k8s.readahead import ReadAhead


def test_started_reads_run_concurrently_and_are_taken_once() -> None:
    reads = ReadAhead()
    both_running = threading.Barrier(2, timeout=10)   # breaks (raises) unless both calls run at once
    calls: list[str] = []

    def call(name: str) -> str:
        calls.append(name)
        both_running.wait()
        return name.upper()

    reads.start("a", lambda: call("a"))
    reads.start("b", lambda: call("b"))
    assert reads.take("b", lambda: "direct") == "B"
    assert reads.take("a", lambda: "direct") == "A"
    assert sorted(calls) == ["a", "b"]
    assert reads.pending() == []
    assert reads.take("a", lambda: "direct") == "direct"   # taken already: the caller's own call


def test_an_error_is_raised_in_the_taking_thread() -> None:
    reads = ReadAhead()

    def fail() -> None:
        raise LookupError("not found")

    reads.start("x", fail)
    with pytest.raises(LookupError, match="not found"):
        reads.take("x", lambda: None)


def test_without_a_started_read_take_calls_and_a_key_starts_once() -> None:
    reads = ReadAhead()
    assert reads.take("y", lambda: 7) == 7
    reads.start("z", lambda: 1)
    with pytest.raises(ValueError, match="already started"):
        reads.start("z", lambda: 2)
    assert reads.take("z", lambda: 0) == 1
