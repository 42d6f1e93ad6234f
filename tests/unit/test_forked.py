"""ForkedCall: a call run in a forked child, its result sent back pickled."""

from __future__ import annotations

import os
import time

from ingressctl.forked import ForkedCall


def test_the_result_is_what_the_call_returned_in_the_child() -> None:
    parent = os.getpid()
    call = ForkedCall.start(lambda: (os.getpid(), [1, "two"]))
    assert call is not None
    (pid, value), why = call.result(time.monotonic() + 60)
    assert why == "" and value == [1, "two"]
    assert pid == call.pid != parent


def test_a_call_that_raises_comes_back_none_with_the_exit_status() -> None:
    def broken() -> int:
        raise RuntimeError("a bug in the child")

    call = ForkedCall.start(broken)
    assert call is not None
    assert call.result(time.monotonic() + 60) == (None, "exit status 1")
    assert call.result(time.monotonic() + 60) == (None, "already taken")


def test_a_child_not_done_by_the_deadline_is_killed_and_reaped() -> None:
    call = ForkedCall.start(lambda: time.sleep(3600))
    assert call is not None
    assert call.result(time.monotonic() + 0.2) == (None, "not done in time: killed")
    try:
        os.kill(call.pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError("the child still exists (not reaped)")


def test_close_kills_and_reaps_a_running_child() -> None:
    call = ForkedCall.start(lambda: time.sleep(3600))
    assert call is not None
    call.close()
    call.close()
    assert call.result(time.monotonic() + 1) == (None, "already taken")
