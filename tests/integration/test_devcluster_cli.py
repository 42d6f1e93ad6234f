"""`python -m ingressctl.devcluster` as a user runs it: URL line, manifests, kubectl, TLS + token, SIGTERM."""

from __future__ import annotations

import base64
import json
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from kubernetes import client, config

from ingressctl.devcluster.manifests import read_manifests

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CRDS = ROOT / "charts" / "ingressctl" / "crds"   # examples/ holds a VirtualServer
KUBECTL = shutil.which("kubectl") or "kubectl"


class Server:
    def __init__(self, proc: subprocess.Popen[str], url: str, kubeconfig: Path) -> None:
        self.proc, self.url, self.kubeconfig = proc, url, kubeconfig

    def kubectl(self, *args: str, cache: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(cache),
                               *args],
                              capture_output=True, text=True, timeout=60)

    def terminate(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def start(tmp: Path, *extra: str) -> Server:
    kubeconfig = tmp / "kubeconfig"
    proc = subprocess.Popen([sys.executable, "-m", "ingressctl.devcluster", "--port", "0", "--kubeconfig-out",
                             str(kubeconfig), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True,
                            cwd=ROOT)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline() if proc.stdout else ""),
                     daemon=True).start()
    try:
        line = lines.get(timeout=60)
    except queue.Empty:
        proc.kill()
        raise AssertionError("devcluster printed no URL line") from None
    assert line, f"devcluster exited early: {proc.stderr.read() if proc.stderr else ''}"
    return Server(proc, line.split()[0], kubeconfig)


@pytest.fixture()
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait(timeout=30)


def test_cli_serves_manifests_to_kubectl_and_exits_0_on_sigterm(tmp_path: Path,
                                                                servers: list[Server]) -> None:
    server = start(tmp_path, "--manifests", str(EXAMPLES), str(CRDS))
    servers.append(server)
    assert server.url.startswith("http://127.0.0.1:")
    kubeconfig = yaml.safe_load(server.kubeconfig.read_text())
    assert kubeconfig["clusters"][0]["cluster"]["server"] == server.url
    expected = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in read_manifests([str(EXAMPLES)])
                if o["kind"] == "Ingress"}
    assert expected, "the examples should contain at least one Ingress"
    out = server.kubectl("get", "ingresses", "-A", "-o", "json", cache=tmp_path / "cache")
    assert out.returncode == 0, out.stderr
    seen = {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in json.loads(out.stdout)["items"]}
    assert seen == expected
    table = server.kubectl("get", "ingresses", "-A", cache=tmp_path / "cache").stdout
    assert all(name in table for _, name in expected)
    assert server.terminate() == 0


def test_cli_sigint_and_manifest_files(tmp_path: Path, servers: list[Server]) -> None:
    (tmp_path / "b.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "second", "namespace": "late"}}]))
    (tmp_path / "a.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "late"}},
        {"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "first", "namespace": "late"},
             "data": {"k": "v"}}]}]))
    server = start(tmp_path, "--manifests", str(tmp_path), "--history", "50", "--latency-ms", "1")
    servers.append(server)
    items = requests.get(server.url + "/api/v1/namespaces/late/configmaps", timeout=30).json()["items"]
    assert [(i["metadata"]["name"], int(i["metadata"]["resourceVersion"])) for i in items] == sorted(
        [(i["metadata"]["name"], int(i["metadata"]["resourceVersion"])) for i in items], key=lambda x: x[1])
    assert [i["metadata"]["name"] for i in items] == ["first", "second"]
    server.proc.send_signal(signal.SIGINT)
    assert server.proc.wait(timeout=30) == 0


def test_cli_rejects_bad_manifests(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("kind: [unclosed\n")
    for manifests in (str(tmp_path / "bad.yaml"), str(tmp_path / "missing.yaml")):
        proc = subprocess.run([sys.executable, "-m", "ingressctl.devcluster", "--port", "0",
                               "--kubeconfig-out",
                               str(tmp_path / "kc"), "--manifests", manifests], capture_output=True,
                              text=True,
                              timeout=60, cwd=ROOT)
        assert proc.returncode == 2 and proc.stdout == "" and "error:" in proc.stderr


def test_cli_tls_requires_the_token(tmp_path: Path, servers: list[Server]) -> None:
    server = start(tmp_path, "--tls", "--manifests", str(EXAMPLES), str(CRDS))
    servers.append(server)
    assert server.url.startswith("https://127.0.0.1:")
    kc: dict[str, Any] = yaml.safe_load(server.kubeconfig.read_text())
    ca = tmp_path / "ca.crt"
    ca.write_bytes(base64.b64decode(kc["clusters"][0]["cluster"]["certificate-authority-data"]))
    token = kc["users"][0]["user"]["token"]
    assert token
    no_token = requests.get(server.url + "/api/v1/namespaces", verify=str(ca), timeout=30)
    assert no_token.status_code == 401 and no_token.json()["reason"] == "Unauthorized"
    wrong = requests.get(server.url + "/api/v1/namespaces", verify=str(ca), timeout=30,
                         headers={"Authorization": "Bearer wrong"})
    assert wrong.status_code == 401
    ok = requests.get(server.url + "/api/v1/namespaces", verify=str(ca), timeout=30,
                      headers={"Authorization": f"Bearer {token}"})
    assert ok.status_code == 200
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(server.url + "/version", timeout=30)     # not trusted without the CA
    out = server.kubectl("get", "ingresses", "-A", "-o", "name", cache=tmp_path / "cache")
    assert out.returncode == 0, out.stderr
    assert "ingress.networking.k8s.io/" in out.stdout
    api = client.NetworkingV1Api(config.new_client_from_config(str(server.kubeconfig)))
    assert api.list_ingress_for_all_namespaces().items
    assert server.terminate() == 0
