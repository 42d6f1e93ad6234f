"""Chart test helpers: the upstream Helm binaries (Helm 3 and Helm 4) over charts/ingressctl.

- `Helm`: one Helm binary (scripts/install-helm.sh puts them in .tools/helm/v3 and .tools/helm/v4) with its
  own config/cache/data directories. `render(values)` runs `helm template` with `values` as a values file
  (several files are merged left to right, as `-f a -f b` does) and returns the parsed documents;
  `error(values)` returns the error text of a render that must fail; `run(...)` runs any Helm command.
- `HELM_VERSIONS`: the pinned majors; the `helm` fixture (conftest.py) runs a test once per version.
- `chart_cluster()`: a DevCluster that also serves the ServiceMonitor kind (a CRD of the Prometheus operator
  in a real cluster) for the chart's optional ServiceMonitor.
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
TOOLS = ROOT / ".tools" / "helm"
RELEASE = "ingressctl"
NAMESPACE = "ingressctl"
# Major -> the exact version scripts/install-helm.sh pins.
HELM_VERSIONS = {"v3": "v3.17.1", "v4": "v4.1.4"}

SERVICEMONITORS = ResourceKind("monitoring.coreos.com", "v1", "servicemonitors", "ServiceMonitor",
                               singular="servicemonitor", generation=True)


def chart_cluster(**kwargs: Any) -> DevCluster:
    """A DevCluster (not started) that also serves ServiceMonitors."""
    return DevCluster(kinds=(*DEFAULT_KINDS, SERVICEMONITORS), **kwargs)


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True,
                          text=True, timeout=120)


@dataclass(frozen=True)
class Helm:
    """One upstream Helm binary, isolated from the user's Helm configuration."""

    major: str
    binary: Path
    home: Path

    @classmethod
    def installed(cls, major: str, home: Path) -> Helm:
        binary = TOOLS / major / "helm"
        if not os.access(binary, os.X_OK):
            raise RuntimeError(f"{binary} is missing: run scripts/install-helm.sh (make deps does)")
        helm = cls(major, binary, home)
        version = helm.run("version", "--template", "{{.Version}}").stdout.strip()
        if version != HELM_VERSIONS[major]:
            raise RuntimeError(f"{binary} is Helm {version!r}, expected {HELM_VERSIONS[major]}")
        return helm

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "HELM_CONFIG_HOME": str(self.home / "config"),
                "HELM_CACHE_HOME": str(self.home / "cache"), "HELM_DATA_HOME": str(self.home / "data")}

    def run(self, *args: str, kubeconfig: str | None = None,
            check: bool = False) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.binary), *args]
        if kubeconfig is not None:
            cmd += ["--kubeconfig", kubeconfig]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=self.env)
        if check:
            assert out.returncode == 0, f"helm {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}"
        return out

    def values_files(self, *values: dict[str, Any] | None) -> list[str]:
        """`-f FILE` arguments for each values dict (None: none)."""
        args: list[str] = []
        for v in values:
            if v is None:
                continue
            fd, path = tempfile.mkstemp(suffix=".yaml", dir=self.home)
            with os.fdopen(fd, "w") as f:
                yaml.safe_dump(v, f)
            args += ["-f", path]
        return args

    def _template(self, values: tuple[dict[str, Any] | None, ...], name: str,
                  namespace: str) -> subprocess.CompletedProcess[str]:
        return self.run("template", name, str(CHART), "--namespace", namespace, *self.values_files(*values))

    def text(self, *values: dict[str, Any] | None, name: str = RELEASE, namespace: str = NAMESPACE) -> str:
        out = self._template(values, name, namespace)
        assert out.returncode == 0, f"helm template failed: {out.stderr}"
        return out.stdout

    def render(self, *values: dict[str, Any] | None, name: str = RELEASE,
               namespace: str = NAMESPACE) -> list[dict[str, Any]]:
        docs = [d for d in yaml.safe_load_all(self.text(*values, name=name, namespace=namespace)) if d]
        assert all(isinstance(d, dict) and d.get("kind") and d.get("apiVersion") for d in docs), docs
        return docs

    def error(self, *values: dict[str, Any] | None) -> str:
        out = self._template(values, RELEASE, NAMESPACE)
        assert out.returncode != 0, f"render succeeded but should fail:\n{out.stdout[:2000]}"
        assert out.stdout == ""
        return out.stderr

    def schema_path(self, dotted: str) -> str:
        """How this Helm names a value in a schema error: Helm 3 `a.b`, Helm 4 a JSON pointer `/a/b`."""
        return dotted.replace(".", "/") if self.major == "v4" else dotted


PLURALS = {"Namespace": "namespaces", "ServiceAccount": "serviceaccounts", "ConfigMap": "configmaps",
           "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings", "Role": "roles",
           "RoleBinding": "rolebindings", "Service": "services", "Deployment": "deployments",
           "DaemonSet": "daemonsets", "IngressClass": "ingressclasses",
           "PodDisruptionBudget": "poddisruptionbudgets", "ServiceMonitor": "servicemonitors"}


def subset(rendered: Any, stored: Any) -> bool:
    """`rendered` is contained in `stored` (which may carry fields the server defaulted)."""
    if isinstance(rendered, dict):
        return isinstance(stored, dict) and all(k in stored and subset(v, stored[k])
                                                for k, v in rendered.items())
    if isinstance(rendered, list):
        return isinstance(stored, list) and len(stored) == len(rendered) and all(
            subset(a, b) for a, b in zip(rendered, stored, strict=True))
    return bool(rendered == stored)


def assert_loaded(cluster: DevCluster, docs: list[dict[str, Any]]) -> None:
    """Each rendered document is stored in `cluster`, as rendered (plus what the server defaulted)."""
    for d in docs:
        md = d["metadata"]
        stored = [o for o in cluster.objects(PLURALS[d["kind"]], md.get("namespace"))
                  if o["metadata"]["name"] == md["name"]]
        assert len(stored) == 1, (d["kind"], md["name"])
        body = {k: v for k, v in d.items() if k not in ("metadata", "apiVersion", "kind")}  # stored bare
        assert subset(body, stored[0]), (d["kind"], md["name"], stored[0])
        assert subset(md.get("labels", {}), stored[0]["metadata"].get("labels", {}))


def released(dc: DevCluster, release: str = RELEASE) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Every stored object of the release (by its instance label), and Helm's release records."""
    out = {}
    for kind in dc.registry.kinds:
        if kind.storage:
            continue
        for obj in dc.objects(kind.plural, group=kind.group):
            labels = obj["metadata"].get("labels") or {}
            if labels.get("app.kubernetes.io/instance") == release or labels.get("owner") == "helm":
                out[(kind.kind, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = obj
    return out


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
