"""devcluster driven by kubectl (the one on PATH, plus any listed in $KUBECTL_EXTRA, os.pathsep-separated).

kubectl runs as a subprocess with --kubeconfig and a private --cache-dir, with default validation: discovery,
OpenAPI download, create/get/replace/patch/delete, client-side apply (three-way strategic merge) and get -w.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from ingressctl.devcluster import DevCluster

pytestmark = pytest.mark.integration

_counter = itertools.count(1)
KUBECTLS = [shutil.which("kubectl") or "kubectl"] + [
    p for p in os.environ.get("KUBECTL_EXTRA", "").split(os.pathsep) if p]


@pytest.fixture(scope="module")
def cluster() -> Iterator[DevCluster]:
    with DevCluster() as dc:
        yield dc


@pytest.fixture(scope="module", params=KUBECTLS)
def kubectl(request: pytest.FixtureRequest, cluster: DevCluster,
            tmp_path_factory: pytest.TempPathFactory) -> Any:
    binary: str = request.param
    tmp = tmp_path_factory.mktemp("kubectl")
    kubeconfig = cluster.write_kubeconfig(str(tmp / "kubeconfig"))

    class Kubectl:
        path = binary

        def run(self, *args: str, stdin: str | None = None,
                check: bool = True) -> subprocess.CompletedProcess[str]:
            proc = subprocess.run([binary, "--kubeconfig", kubeconfig, "--cache-dir", str(tmp / "cache"),
                                   *args],
                                  input=stdin, capture_output=True, text=True, timeout=60)
            if check and proc.returncode != 0:
                raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
            return proc

        def popen(self, *args: str) -> subprocess.Popen[str]:
            return subprocess.Popen([binary, "--kubeconfig", kubeconfig, "--cache-dir", str(tmp / "cache"),
                                     *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def get_json(self, *args: str) -> Any:
            return json.loads(self.run("get", "-o", "json", *args).stdout)

        def namespace(self) -> str:
            name = f"k{next(_counter)}"
            self.run("create", "namespace", name)
            return name

        def file(self, docs: list[dict[str, Any]]) -> str:
            path = tmp / f"m{next(_counter)}.yaml"
            path.write_text(yaml.safe_dump_all(docs))
            return str(path)

    return Kubectl()


def ingress(name: str, namespace: str, host: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": name}},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": host, "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": name,
                                                                            "port": {"number": 80}}}}]}}]}}


def service(name: str, namespace: str, ports: list[int]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"app": name}, "ports": [{"name": f"p{p}", "port": p} for p in ports]}}


def test_discovery(kubectl: Any) -> None:
    out = kubectl.run("api-resources").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line.strip()}
    assert rows["ingresses"][1:] == ["ing", "networking.k8s.io/v1", "true", "Ingress"]
    assert rows["services"][1:] == ["svc", "v1", "true", "Service"]
    assert rows["ingressclasses"][1:] == ["networking.k8s.io/v1", "false", "IngressClass"]
    assert "leases" in rows and "endpointslices" in rows and "events" in rows
    assert "Server Version" in kubectl.run("version").stdout


def test_create_get_replace_patch_delete(kubectl: Any) -> None:
    ns = kubectl.namespace()
    manifest = kubectl.file([ingress("web", ns, "a.example.com")])
    assert "created" in kubectl.run("create", "-f", manifest).stdout
    dup = kubectl.run("create", "-f", manifest, check=False)
    assert dup.returncode != 0 and "AlreadyExists" in dup.stderr
    obj = kubectl.get_json("ingress", "web", "-n", ns)
    assert obj["metadata"]["generation"] == 1 and obj["spec"]["rules"][0]["host"] == "a.example.com"

    replaced = kubectl.file([ingress("web", ns, "b.example.com")])
    kubectl.run("replace", "-f", replaced)
    obj2 = kubectl.get_json("ing", "web", "-n", ns)
    assert obj2["metadata"]["generation"] == 2 and obj2["spec"]["rules"][0]["host"] == "b.example.com"
    assert obj2["metadata"]["uid"] == obj["metadata"]["uid"]

    # Replacing with a stale resourceVersion is a conflict.
    stale = kubectl.file([obj])
    conflict = kubectl.run("replace", "-f", stale, check=False)
    assert conflict.returncode != 0 and "the object has been modified" in conflict.stderr

    kubectl.run("patch", "ingress", "web", "-n", ns, "--type=merge", "-p",
                '{"metadata":{"labels":{"tier":"x"}}}')
    obj3 = kubectl.get_json("ingress", "web", "-n", ns)
    assert obj3["metadata"]["labels"] == {"app": "web", "tier": "x"} and obj3["metadata"]["generation"] == 2

    kubectl.run("delete", "ingress", "web", "-n", ns)
    gone = kubectl.run("get", "ingress", "web", "-n", ns, check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_apply_create_or_update(kubectl: Any) -> None:
    ns = kubectl.namespace()
    first = kubectl.file([service("api", ns, [80, 443, 8080]), ingress("api", ns, "api.example.com")])
    out = kubectl.run("apply", "-f", first).stdout
    assert out.count("created") == 2
    svc = kubectl.get_json("service", "api", "-n", ns)
    assert [p["port"] for p in svc["spec"]["ports"]] == [80, 443, 8080]
    assert "kubectl.kubernetes.io/last-applied-configuration" in svc["metadata"]["annotations"]
    # A field added by someone else survives apply; what the last apply set and this one drops is removed.
    kubectl.run("patch", "service", "api", "-n", ns, "--type=merge", "-p",
                '{"metadata":{"labels":{"extra":"1"}}}')
    second = kubectl.file([service("api", ns, [443, 9090]),
                           ingress("api", ns, "api2.example.com", labels={"app": "api", "v": "2"})])
    out = kubectl.run("apply", "-f", second).stdout
    assert out.count("configured") == 2
    svc = kubectl.get_json("service", "api", "-n", ns)
    assert [p["port"] for p in svc["spec"]["ports"]] == [443, 9090]
    assert svc["metadata"]["labels"] == {"extra": "1"}
    ing = kubectl.get_json("ingress", "api", "-n", ns)
    assert ing["spec"]["rules"][0]["host"] == "api2.example.com" and ing["metadata"]["generation"] == 2
    assert ing["metadata"]["labels"] == {"app": "api", "v": "2"}
    out = kubectl.run("apply", "-f", second).stdout
    assert out.count("unchanged") == 2


def test_get_table_output(kubectl: Any) -> None:
    ns = kubectl.namespace()
    kubectl.run("apply", "-f", kubectl.file([ingress("shop", ns, "shop.example.com"),
                                             service("shop", ns, [80])]))
    lines = kubectl.run("get", "ingresses", "-A").stdout.splitlines()
    assert lines[0].split()[:4] == ["NAMESPACE", "NAME", "CLASS", "HOSTS"]
    row = next(line.split() for line in lines if line.split()[:2] == [ns, "shop"])
    assert row[2:4] == ["nginx", "shop.example.com"]
    svc_line = kubectl.run("get", "svc", "shop", "-n", ns).stdout.splitlines()[1].split()
    assert svc_line[0:2] == ["shop", "ClusterIP"] and svc_line[4] == "80/TCP"
    names = kubectl.run("get", "ing", "-n", ns, "-o", "name").stdout.split()
    assert names == ["ingress.networking.k8s.io/shop"]


def test_get_watch(kubectl: Any) -> None:
    ns = kubectl.namespace()
    kubectl.run("create", "-f", kubectl.file([ingress("first", ns, "first.example.com")]))
    proc = kubectl.popen("get", "ingresses", "-n", ns, "-w", "-o", "name")
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line.strip()) for line in proc.stdout or []],
                              daemon=True)
    reader.start()
    try:
        seen: list[str] = []

        def wait_for(name: str) -> None:
            deadline = time.monotonic() + 30
            while f"ingress.networking.k8s.io/{name}" not in seen:
                seen.append(lines.get(timeout=max(0.1, deadline - time.monotonic())))

        wait_for("first")
        kubectl.run("create", "-f", kubectl.file([ingress("second", ns, "second.example.com")]))
        wait_for("second")
        kubectl.run("delete", "ingress", "first", "-n", ns)
        seen.clear()
        wait_for("first")
    finally:
        proc.kill()
        proc.wait(timeout=30)
