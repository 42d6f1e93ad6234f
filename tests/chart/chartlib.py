"""Chart test helpers: the Go renderer and a devcluster that serves the chart's kinds.

- `Renderer.render(values)` runs `tests/chart/render` (Go text/template and sprig, as Helm does) over
  charts/ingressctl with `values` deep-merged over values.yaml and returns the parsed documents;
  `Renderer.error(values)` returns the error text of a render that must fail. `build_renderer(path)` builds
  the renderer; the `renderer` fixture (conftest.py) does so once per session.
- `chart_cluster()`: a DevCluster that also serves the ServiceMonitor kind, via its `kinds` table.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ingressctl.devcluster import DEFAULT_KINDS, DevCluster, ResourceKind

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "ingressctl"
RENDER_SRC = ROOT / "tests" / "chart" / "render"
RELEASE = "ingressctl"
NAMESPACE = "ingressctl"

# The chart's optional ServiceMonitor: a CRD of the Prometheus operator in a real cluster.
CHART_KINDS: tuple[ResourceKind, ...] = (
    ResourceKind("monitoring.coreos.com", "v1", "servicemonitors", "ServiceMonitor",
                 singular="servicemonitor", generation=True),
)


def chart_cluster() -> DevCluster:
    """A DevCluster (not started) that also serves CHART_KINDS."""
    return DevCluster(kinds=(*DEFAULT_KINDS, *CHART_KINDS))


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True,
                          text=True, timeout=120)


def build_renderer(binary: Path) -> None:
    """Build tests/chart/render into `binary` (offline, against Debian's Go libraries)."""
    out = subprocess.run(["bash", str(RENDER_SRC / "build.sh"), str(binary)], capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"building the renderer failed:\n{out.stdout}\n{out.stderr}")


@dataclass
class Renderer:
    binary: Path
    tmp: Path

    def _run(self, values: dict[str, Any] | None, name: str, namespace: str,
             extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
        args = [str(self.binary), "--chart", str(CHART), "--name", name, "--namespace", namespace, *extra]
        if values is not None:
            fd, path = tempfile.mkstemp(suffix=".yaml", dir=self.tmp)
            with os.fdopen(fd, "w") as f:
                yaml.safe_dump(values, f)
            args += ["-f", path]
        return subprocess.run(args, capture_output=True, text=True, timeout=60)

    def text(self, values: dict[str, Any] | None = None, *, name: str = RELEASE,
             namespace: str = NAMESPACE) -> str:
        out = self._run(values, name, namespace)
        assert out.returncode == 0, f"render failed: {out.stderr}"
        return out.stdout

    def render(self, values: dict[str, Any] | None = None, *, name: str = RELEASE,
               namespace: str = NAMESPACE) -> list[dict[str, Any]]:
        docs = [d for d in yaml.safe_load_all(self.text(values, name=name, namespace=namespace)) if d]
        assert all(isinstance(d, dict) and d.get("kind") and d.get("apiVersion") for d in docs), docs
        return docs

    def notes(self, values: dict[str, Any] | None = None) -> str:
        out = self._run(values, RELEASE, NAMESPACE, ("--notes",))
        assert out.returncode == 0, out.stderr
        return out.stdout

    def error(self, values: dict[str, Any]) -> str:
        out = self._run(values, RELEASE, NAMESPACE)
        assert out.returncode != 0, f"render succeeded but should fail:\n{out.stdout[:2000]}"
        assert out.stdout == ""
        return out.stderr


def names(docs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(d["kind"], d["metadata"]["name"]) for d in docs]


def find(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    """The one document of `kind` (and `name`)."""
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"{len(found)} {kind} {name or ''} in {names(docs)}"
    return found[0]


def kinds(docs: list[dict[str, Any]]) -> list[str]:
    return [d["kind"] for d in docs]


def container(docs: list[dict[str, Any]], kind: str = "Deployment") -> dict[str, Any]:
    c: dict[str, Any] = find(docs, kind)["spec"]["template"]["spec"]["containers"][0]
    return c


def flags(args: list[str]) -> dict[str, str]:
    """`--name=value` arguments as a dict (every chart argument has that form)."""
    out: dict[str, str] = {}
    for a in args:
        assert a.startswith("--") and "=" in a, a
        key, _, value = a.partition("=")
        assert key not in out, f"{key} given twice"
        out[key] = value
    return out
