"""Fixtures for every suite (helpers to import live in tests/helpers.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _garbage_collector_left_enabled() -> Iterator[None]:
    """Each test leaves the cyclic GC as it found it: informers pause it during lists and must end it."""
    enabled = gc.isenabled()
    yield
    if enabled and not gc.isenabled():
        gc.enable()
        raise AssertionError("the test left the garbage collector disabled (a GC pause was never released)")
