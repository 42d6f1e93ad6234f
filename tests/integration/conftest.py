"""Integration fixtures: `env` (a fresh devcluster, backends and controllers, cleaned up at teardown),
`running` (a controller serving one good Ingress) and `backends` (three demo backends); for the admission
webhook tests, `cert` (a serving certificate) and `kubectl`. The harness they build is
tests/integration/harness.py."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from ingressctl.demo.backend import Backend
from tests.integration.harness import GOOD, Controller, Env, rule
from tests.webhooks import Kubectl, WebhookCert, webhook_cert


@pytest.fixture
def env() -> Iterator[Env]:
    tmp = tempfile.mkdtemp(prefix="ic-env-", dir="/tmp")
    os.chmod(tmp, 0o711)  # NGINX's workers (`nobody` under root) read files under it, as in a deployment
    e = Env(tmp)
    try:
        yield e
    finally:
        e.close()
        for d in [*e.cleanup_dirs, tmp]:
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def backends() -> Iterator[list[Backend]]:
    """Three demo backends, b0, b1 and b2 (a module may define its own `backends`)."""
    bs = [Backend(f"b{i}").start() for i in range(3)]
    yield bs
    for b in bs:
        b.stop()


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


@pytest.fixture
def cert(tmp_path_factory: pytest.TempPathFactory) -> WebhookCert:
    """A serving certificate for the admission webhook Service."""
    return webhook_cert(str(tmp_path_factory.mktemp("webhook-cert")))


@pytest.fixture
def kubectl(env: Env) -> Kubectl:
    """The kubectl on PATH against the devcluster."""
    return Kubectl(env.kubeconfig, env.tmp)
