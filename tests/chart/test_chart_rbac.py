"""The chart's RBAC allows every API call the controller makes, and grants nothing it does not use.

The chart is rendered (with a default TLS Secret) and applied with kubectl to a devcluster. The controller
runs as `python -m ingressctl` with the Deployment's own arguments (ports, paths and the kubeconfig adapted
to a test machine) and the downward-API environment: it serves an Ingress, reports its status, records and
repeats events and holds the lease. Every call devcluster recorded is then checked against the ClusterRole
(any namespace) and the Role (the release namespace) bound to the Deployment's ServiceAccount, and every
granted permission against the calls seen (or a short list of paths the run cannot provoke).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ingressctl.devcluster import Call, DevCluster
from tests.chart.chartlib import NAMESPACE, ROOT, Helm, chart_cluster, container, find, kubectl
from tests.helpers import free_port, make_cert, tls_secret, wait_until

APP_NS = "shop"
DEFAULT_TLS = "default-server-secret"
# Granted permissions the run does not exercise, and when the controller uses them.
NOT_EXERCISED = {
    ("networking.k8s.io", "ingresses", "get"): "re-reads an Ingress after a status write conflict",
}
# Calls addressed to one object by name (RBAC resourceNames can restrict only these).
NAMED_VERBS = {"get", "update", "patch", "delete"}


def allowed(call: Call, group: str, rules: list[dict[str, Any]], lease_names: set[str]) -> bool:
    """Whether one rule of `rules` allows `call`. A rule with resourceNames allows only named verbs; the
    object's name is not in the call log, so the lease names are checked against resourceNames separately."""
    for rule in rules:
        if group not in rule["apiGroups"] and "*" not in rule["apiGroups"]:
            continue
        if call.resource not in rule["resources"] and "*" not in rule["resources"]:
            continue
        if call.verb not in rule["verbs"] and "*" not in rule["verbs"]:
            continue
        names = rule.get("resourceNames")
        if names and not (call.verb in NAMED_VERBS and lease_names and lease_names <= set(names)):
            continue
        return True
    return False


def uncovered(calls: list[Call], group_of: Any, cluster_rules: list[dict[str, Any]],
              role_rules: list[dict[str, Any]], role_namespace: str, lease_names: set[str]) -> list[Call]:
    out = []
    for call in sorted(set(calls)):
        group = group_of(call.resource)
        if allowed(call, group, cluster_rules, lease_names):
            continue
        if call.namespace == role_namespace and allowed(call, group, role_rules, lease_names):
            continue
        out.append(call)
    return out


def test_rule_matching_can_fail() -> None:
    rules = [{"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list", "watch"]},
             {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["lock"],
              "verbs": ["get", "update"]}]
    groups = {"services": "", "leases": "coordination.k8s.io"}.__getitem__
    calls = [Call("list", "services", "", ""), Call("create", "services", "a", ""),
             Call("update", "leases", "ns", ""), Call("list", "leases", "ns", "")]
    assert uncovered(calls, groups, rules, [], "ns", {"lock"}) == [Call("create", "services", "a", ""),
                                                                   Call("list", "leases", "ns", "")]
    assert uncovered([Call("update", "leases", "ns", "")], groups, rules, [], "ns", {"other"}) == [
        Call("update", "leases", "ns", "")]
    assert uncovered([Call("list", "services", "x", "")], groups, [], rules, "ns", set()) == [
        Call("list", "services", "x", "")]


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/nginx-ready", timeout=2) as r:
            return int(r.status) == 200
    except OSError:
        return False


def _replace_flags(args: list[str], values: dict[str, str]) -> list[str]:
    out = [a for a in args if a.split("=", 1)[0] not in values]
    return out + [f"{k}={v}" for k, v in values.items()]


def _app_objects() -> list[dict[str, Any]]:
    meta = {"namespace": APP_NS}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": APP_NS}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", **meta},
         "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}], "selector": {"app": "web"}}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "web-1", "labels": {"kubernetes.io/service-name": "web"}, **meta},
         "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
         "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]},
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web", **meta},
         "spec": {"ingressClassName": "nginx", "rules": [{"host": "web.example", "http": {"paths": [
             {"path": "/", "pathType": "Prefix",
              "backend": {"service": {"name": "web", "port": {"name": "http"}}}}]}}]}},
        # Rejected (a missing backend Service is fine; an invalid path type is not): a Warning event.
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "broken", **meta},
         "spec": {"ingressClassName": "nginx", "rules": [{"host": "broken.example", "http": {"paths": [
             {"path": "/", "pathType": "Sometimes",
              "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}},
    ]


@pytest.fixture
def short_tmp() -> Iterator[str]:
    """A short directory for NGINX's unix sockets (sun_path is limited to 108 bytes)."""
    d = tempfile.mkdtemp(prefix="ic-rbac-")
    yield d
    subprocess.run(["rm", "-rf", d], check=False)


@pytest.mark.integration
def test_cluster_role_covers_every_call_the_controller_makes(helm: Helm, tmp_path: Path,
                                                             short_tmp: str) -> None:
    text = helm.text({"controller": {"defaultTLS": {"secret": f"{NAMESPACE}/{DEFAULT_TLS}"}}})
    docs = [d for d in yaml.safe_load_all(text) if d]
    deployment = find(docs, "Deployment")
    sa = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    lock_name = next(a.split("=", 1)[1] for a in container(docs)["args"]
                     if a.startswith("--leader-election-lock-name="))
    cluster: DevCluster
    with chart_cluster() as cluster:
        kubeconfig = cluster.write_kubeconfig(str(tmp_path / "kubeconfig"))
        assert kubectl(kubeconfig, "create", "namespace", NAMESPACE).returncode == 0
        out = kubectl(kubeconfig, "apply", "--validate=false", "-f", "-", stdin=text)
        assert out.returncode == 0, out.stderr
        # The load balancer's address, as a cloud controller would set it (no API call from the controller).
        svc = next(o for o in cluster.objects("services", NAMESPACE)
                   if o["metadata"]["name"] == deployment["metadata"]["name"])
        svc.update(apiVersion="v1", kind="Service",
                   status={"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}})
        cert = make_cert("default.example")
        cluster.load([svc, tls_secret(DEFAULT_TLS, NAMESPACE, cert.cert_pem, cert.key_pem)])
        cluster.stats.reset()

        ready_port = free_port()
        args = _replace_flags(container(docs)["args"], {
            "--kubeconfig": kubeconfig,
            "--nginx-conf-dir": os.path.join(short_tmp, "conf"),
            "--nginx-run-dir": os.path.join(short_tmp, "run"),
            "--default-http-listener-port": str(free_port()),
            "--default-https-listener-port": str(free_port()),
            "--nginx-status-port": str(free_port()),
            "--ready-status-port": str(ready_port),
            "--prometheus-metrics-listen-port": str(free_port()),
        })
        env = {**os.environ, "POD_NAMESPACE": NAMESPACE, "POD_NAME": "ingressctl-controller-7d9f-abcde"}
        log_path = tmp_path / "controller.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", "ingressctl", *args], cwd=ROOT, env=env,
                                    stdout=log, stderr=subprocess.STDOUT)
        try:
            def alive_and(cond: Any) -> Any:
                def check() -> Any:
                    assert proc.poll() is None, f"controller exited:\n{log_path.read_text()[-4000:]}"
                    return cond()
                return check

            wait_until(alive_and(lambda: _ready(ready_port)), "controller ready")
            cluster.load(_app_objects())

            def web_status() -> Any:
                ing = next(o for o in cluster.objects("ingresses", APP_NS) if o["metadata"]["name"] == "web")
                return (ing.get("status") or {}).get("loadBalancer", {}).get("ingress")

            wait_until(alive_and(web_status), "Ingress status written")
            wait_until(alive_and(lambda: {e.get("reason") for e in cluster.objects("events", APP_NS)}
                                 >= {"AddedOrUpdated", "Rejected"}), "events recorded")
            # The same rejection again: the recorder patches the existing Event's count.
            broken = next(o for o in _app_objects() if o["metadata"]["name"] == "broken")
            broken["metadata"]["annotations"] = {"example.com/touched": "1"}
            cluster.load([broken])
            wait_until(alive_and(lambda: any(c.resource == "events" and c.verb == "patch"
                                             for c in cluster.stats.calls())), "event patched")
            # Leader election renews the lease (update) after a retry period.
            wait_until(alive_and(lambda: any(c.resource == "leases" and c.verb == "update"
                                             for c in cluster.stats.calls())), "lease renewed")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, log_path.read_text()[-4000:]

        calls = cluster.stats.calls()
        leases = {o["metadata"]["name"] for o in cluster.objects("leases", NAMESPACE)}
        assert leases == {lock_name}

    cluster_role, role = find(docs, "ClusterRole"), find(docs, "Role")
    for binding, target in ((find(docs, "ClusterRoleBinding"), cluster_role),
                            (find(docs, "RoleBinding"), role)):
        assert binding["roleRef"]["name"] == target["metadata"]["name"]
        assert {"kind": "ServiceAccount", "name": sa, "namespace": NAMESPACE} in binding["subjects"]
    seen = {(c.verb, c.resource) for c in calls}
    # The run exercised what the rules are for.
    assert {("list", "ingresses"), ("watch", "ingresses"), ("update", "ingresses/status"),
            ("create", "events"), ("get", "leases"), ("create", "leases"), ("update", "leases"),
            ("list", "endpointslices"), ("list", "secrets"), ("list", "configmaps"),
            ("get", "ingressclasses")} <= seen, sorted(seen)
    missing = uncovered(calls, cluster.stats.group_of, cluster_role["rules"], role["rules"], NAMESPACE,
                        leases)
    assert missing == [], f"API calls the chart's RBAC does not allow: {missing}"
    granted = {(g, r, v) for rule in cluster_role["rules"] + role["rules"] for g in rule["apiGroups"]
               for r in rule["resources"] for v in rule["verbs"]}
    used = {(cluster.stats.group_of(c.resource), c.resource, c.verb) for c in calls}
    assert granted - used - set(NOT_EXERCISED) == set(), "granted but never used"
