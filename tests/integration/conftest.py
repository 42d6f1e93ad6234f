"""Integration fixtures: `env` (a fresh devcluster, backends and controllers, cleaned up at teardown) and
`running` (a controller serving one good Ingress). The harness they build is tests/integration/harness.py."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest

from tests.integration.harness import GOOD, Controller, Env, rule


@pytest.fixture
def env() -> Iterator[Env]:
    tmp = tempfile.mkdtemp(prefix="ic-env-", dir="/tmp")
    e = Env(tmp)
    try:
        yield e
    finally:
        e.close()
        for d in [*e.cleanup_dirs, tmp]:
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def running(env: Env) -> Controller:
    """A controller serving one good Ingress (GOOD -> backend "good"), plus a spare Service "web"."""
    for name in ("good", "web"):
        env.service(name)
        env.endpoints(name, [env.backend(name)])
    env.ingress("good", [rule(GOOD, ("/", "good"))])
    c = env.controller()
    c.wait_backend(GOOD, "/", "good")
    return c
