"""`make run` and `make test` install the Python packages quietly: one line, and pip's output only when the
install fails. Run against a stand-in venv whose python prints what pip would and exits as told."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOISE = "WARNING: Location 'file:///somewhere/simple/pip/' is ignored: it is neither a file nor a directory."


def _make_deps(tmp_path: Path, pip_status: int) -> subprocess.CompletedProcess[str]:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text("#!/bin/sh\n"
                      f"for i in $(seq 100); do echo \"{NOISE}\"; done\n"
                      f"exit {pip_status}\n")
    python.chmod(0o755)
    # Only the Python install step: the system packages are another target.
    stamp = subprocess.run(["make", "-s", "-C", str(ROOT), "--no-print-directory", f"VENV={venv}",
                            "-p", "-n", "deps"], capture_output=True, text=True, check=False).stdout
    target = next(line.split(":")[0] for line in stamp.splitlines()
                  if line.startswith(f"{venv}/.installed-") and line.rstrip().endswith("pyproject.toml"))
    return subprocess.run(["make", "-s", "-C", str(ROOT), "--no-print-directory", f"VENV={venv}", target],
                          capture_output=True, text=True, env={**os.environ, "MAKEFLAGS": ""}, check=False)


def test_a_successful_install_prints_one_line(tmp_path: Path) -> None:
    p = _make_deps(tmp_path, 0)
    assert p.returncode == 0, p.stdout + p.stderr
    assert NOISE not in p.stdout + p.stderr
    assert p.stdout.strip().splitlines() == [
        f"installing Python packages into {tmp_path / 'venv'} (pip's output only if it fails)"]


@pytest.mark.parametrize("status", [1, 2])
def test_a_failed_install_shows_pips_output(tmp_path: Path, status: int) -> None:
    p = _make_deps(tmp_path, status)
    assert p.returncode != 0
    assert p.stderr.count(NOISE) == 100
    assert f"failed ({status})" in p.stderr
