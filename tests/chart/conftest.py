"""Chart test fixtures: `helm` runs a test once with Helm 3 and once with Helm 4 (see chartlib.py)."""

from __future__ import annotations

import pytest

from tests.chart.chartlib import HELM_VERSIONS, Helm


@pytest.fixture(scope="session", params=sorted(HELM_VERSIONS))
def helm(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm.installed(request.param, tmp_path_factory.mktemp(f"helm-{request.param}"))
