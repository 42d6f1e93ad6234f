"""scripts/install-helm.sh: installs the pinned Helm 3 and Helm 4 quietly, keeps them on a second run, and
replaces a binary that does not report its pinned version."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.chart.chartlib import HELM_VERSIONS, ROOT

pytestmark = pytest.mark.integration
SCRIPT = ROOT / "scripts" / "install-helm.sh"


def install(tools: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), str(tools)], capture_output=True, text=True, timeout=600)


def version(binary: Path) -> str:
    return subprocess.run([str(binary), "version", "--template", "{{.Version}}"], capture_output=True,
                          text=True, timeout=60).stdout.strip()


def test_install_is_quiet_checked_and_kept(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    first = install(tools)
    assert first.returncode == 0, first.stderr
    assert (first.stdout, first.stderr) == ("", "")
    binaries = {major: tools / "helm" / major / "helm" for major in HELM_VERSIONS}
    assert {major: version(b) for major, b in binaries.items()} == HELM_VERSIONS
    stamps = {major: os.stat(b).st_mtime_ns for major, b in binaries.items()}
    again = install(tools)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    assert {major: os.stat(b).st_mtime_ns for major, b in binaries.items()} == stamps   # kept, not refetched
    # A binary that is not the pinned Helm is replaced.
    binaries["v3"].write_text("#!/bin/sh\necho broken\n")
    fixed = install(tools)
    assert fixed.returncode == 0, fixed.stderr
    assert version(binaries["v3"]) == HELM_VERSIONS["v3"]
    assert os.stat(binaries["v4"]).st_mtime_ns == stamps["v4"]
