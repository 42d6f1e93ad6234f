"""Chart test fixtures: the Go renderer, built once per session (see chartlib.py)."""

from __future__ import annotations

import pytest

from tests.chart.chartlib import Renderer, build_renderer


@pytest.fixture(scope="session")
def renderer(tmp_path_factory: pytest.TempPathFactory) -> Renderer:
    tmp = tmp_path_factory.mktemp("chart")
    binary = tmp / "render"
    build_renderer(binary)
    return Renderer(binary, tmp)
