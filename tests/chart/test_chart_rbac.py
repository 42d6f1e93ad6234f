"""The user's path end to end, with RBAC enforced: Helm installs the chart into a devcluster that authorizes
every request as kube-apiserver does; the controller runs out of cluster (`python -m ingressctl` with the
Deployment's own arguments, ports and paths adapted to a test machine) with a token of the chart's
ServiceAccount; it routes a request through NGINX to a real backend, writes Ingress status and events and
holds the lease; `helm upgrade` with a changed ConfigMap value reaches NGINX; `helm uninstall` removes
everything.

Then the least-privilege report from devcluster's record of the ServiceAccount's requests: no request was
refused, the run exercised what the rules are for, and every verb the chart grants was used or is named, with
the flag that needs it, in the comment above its rule in rbac.yaml. A ServiceAccount missing one verb gets
kube-apiserver's 403, and the controller says which permission is missing (log and metric).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ingressctl.demo.backend import Backend
from ingressctl.devcluster import Access, DevCluster
from tests.chart.chartlib import (
    CHART,
    NAMESPACE,
    RELEASE,
    ROOT,
    Helm,
    chart_cluster,
    container,
    find,
    kubectl,
    released,
)
from tests.helpers import free_port, http_get, make_cert, tls_secret, wait_until

pytestmark = pytest.mark.integration

APP_NS = "shop"
DEFAULT_TLS = "default-server-secret"
VALUES = {"controller": {"defaultTLS": {"secret": f"{NAMESPACE}/{DEFAULT_TLS}"}}}


def _ready(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/nginx-ready", timeout=2) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except OSError:
        return 0


def _replace_flags(args: list[str], values: dict[str, str]) -> list[str]:
    out = [a for a in args if a.split("=", 1)[0] not in values]
    return out + [f"{k}={v}" for k, v in values.items()]


def _app_objects(backend_port: int) -> list[dict[str, Any]]:
    meta = {"namespace": APP_NS}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": APP_NS}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", **meta},
         "spec": {"ports": [{"name": "http", "port": 80, "targetPort": backend_port}],
                  "selector": {"app": "web"}}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "web-1", "labels": {"kubernetes.io/service-name": "web"}, **meta},
         "addressType": "IPv4", "ports": [{"name": "http", "port": backend_port, "protocol": "TCP"}],
         "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]},
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web", **meta},
         "spec": {"ingressClassName": "nginx", "rules": [{"host": "web.example", "http": {"paths": [
             {"path": "/", "pathType": "Prefix",
              "backend": {"service": {"name": "web", "port": {"name": "http"}}}}]}}]}},
        # Rejected (an invalid path type): a Warning event.
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "broken", **meta},
         "spec": {"ingressClassName": "nginx", "rules": [{"host": "broken.example", "http": {"paths": [
             {"path": "/", "pathType": "Sometimes",
              "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}},
    ]


@pytest.fixture
def short_tmp() -> Iterator[str]:
    """A short directory for NGINX's unix sockets (sun_path is limited to 108 bytes)."""
    d = tempfile.mkdtemp(prefix="ic-rbac-")
    os.chmod(d, 0o711)   # as /etc and /var/lib: NGINX's workers (another user under root) traverse it
    yield d
    subprocess.run(["rm", "-rf", d], check=False)


class Installed:
    """The chart installed by Helm into an RBAC-enforcing devcluster, and the controller run as its
    ServiceAccount."""

    def __init__(self, helm: Helm, cluster: DevCluster, tmp: Path, short_tmp: str,
                 values: dict[str, Any] = VALUES) -> None:
        self.helm, self.cluster, self.tmp, self.short_tmp = helm, cluster, tmp, short_tmp
        self.values = values
        self.admin = cluster.write_kubeconfig(str(tmp / "admin-kubeconfig"))
        self.docs = helm.render(values)
        self.service_account = find(self.docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"]
        self.user = f"system:serviceaccount:{NAMESPACE}:{self.service_account}"
        self.ports = {name: free_port() for name in ("http", "https", "status", "ready", "metrics")}
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = tmp / "controller.log"

    def install(self) -> None:
        self.helm.run("install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace",
                      *self.helm.values_files(self.values), kubeconfig=self.admin,
                      check=True)
        # The load balancer's address, as a cloud controller would set it, and the default server's Secret.
        svc = next(o for o in self.cluster.objects("services", NAMESPACE)
                   if o["metadata"]["name"] == find(self.docs, "Service")["metadata"]["name"])
        svc.update(apiVersion="v1", kind="Service",
                   status={"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}})
        cert = make_cert("default.example")
        self.cluster.load([svc, tls_secret(DEFAULT_TLS, NAMESPACE, cert.cert_pem, cert.key_pem)])

    def token_kubeconfig(self) -> str:
        """A kubeconfig with a token of the chart's ServiceAccount, made as a user makes it."""
        out = kubectl(self.admin, "create", "token", self.service_account, "--namespace", NAMESPACE,
                      "--duration", "1h")
        assert out.returncode == 0, out.stderr
        return self.cluster.write_kubeconfig(str(self.tmp / "sa-kubeconfig"), token=out.stdout.strip())

    def start_controller(self) -> None:
        args = _replace_flags(container(self.docs)["args"], {
            "--kubeconfig": self.token_kubeconfig(),
            "--nginx-conf-dir": os.path.join(self.short_tmp, "conf"),
            "--nginx-run-dir": os.path.join(self.short_tmp, "run"),
            "--default-http-listener-port": str(self.ports["http"]),
            "--default-https-listener-port": str(self.ports["https"]),
            "--nginx-status-port": str(self.ports["status"]),
            "--ready-status-port": str(self.ports["ready"]),
            "--prometheus-metrics-listen-port": str(self.ports["metrics"]),
        })
        env = {**os.environ, "POD_NAMESPACE": NAMESPACE, "POD_NAME": "ingressctl-controller-7d9f-abcde"}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "ingressctl", *args], cwd=ROOT, env=env,
                                         stdout=log, stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive_and(self, cond: Callable[[], Any]) -> Callable[[], Any]:
        def check() -> Any:
            running = self.proc is not None and self.proc.poll() is None
            assert running, f"controller exited:\n{self.log()[-4000:]}"
            return cond()
        return check

    def stop_controller(self) -> int:
        proc, self.proc = self.proc, None
        if proc is None:
            return 0
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()


@pytest.fixture
def installed(helm: Helm, tmp_path: Path, short_tmp: str) -> Iterator[Installed]:
    with chart_cluster(authorization_mode="RBAC") as cluster:
        inst = Installed(helm, cluster, tmp_path, short_tmp)
        try:
            yield inst
        finally:
            inst.stop_controller()


def rule_comments(rendered: str) -> dict[tuple[str, int], str]:
    """The comment above each rule of the rendered rbac.yaml, by (role kind, rule index)."""
    out: dict[tuple[str, int], str] = {}
    for doc in rendered.split("\n---"):
        kind = re.search(r"^kind: (\w+)", doc, re.M)
        if kind is None or kind.group(1) not in ("ClusterRole", "Role"):
            continue
        comment: list[str] = []
        index = 0
        for line in doc.splitlines():
            stripped = line.strip()
            if stripped.startswith("#") and line.startswith("  "):
                comment.append(stripped.lstrip("# "))
            elif stripped.startswith("- apiGroups:"):
                out[(kind.group(1), index)] = " ".join(comment)
                comment = []
                index += 1
            elif stripped and not line.startswith("    "):
                comment = []
    return out


def named_with_flag(comment: str, resource: str, verb: str) -> bool:
    """Whether the comment gives `verb` a use that names the resource and a flag: "get: the Ingress ...
    (--flag)". Each `;`-separated part of a comment starts with the verbs it is about."""
    singular = resource.split("/")[0]
    singular = singular[:-2] if singular.endswith("sses") else singular[:-1]
    for part in comment.split(";"):
        verbs, _, why = part.partition(":")
        if verb in [v.strip() for v in verbs.split(",")] and singular.lower() in why.lower() and "--" in why:
            return True
    return False


def test_comment_check_can_fail() -> None:
    comment = "list, watch: Ingresses; get: an Ingress re-read after a conflict (--report-ingress-status)."
    assert named_with_flag(comment, "ingresses", "get")
    assert not named_with_flag(comment, "ingresses", "list")          # no flag named for list
    assert not named_with_flag(comment, "secrets", "get")             # another resource
    assert not named_with_flag("get: the Ingress, always", "ingresses", "get")


def test_helm_installed_controller_runs_with_exactly_its_rbac(installed: Installed) -> None:
    cluster = installed.cluster
    installed.install()
    backend = Backend("web").start()
    try:
        installed.start_controller()
        wait_until(installed.alive_and(lambda: _ready(installed.ports["ready"]) == 200), "controller ready")
        cluster.load(_app_objects(backend.port))
        http = installed.ports["http"]
        first = wait_until(installed.alive_and(lambda: (r := http_get(http, "web.example")).backend == "web"
                                               and r), "a request routed to the backend")
        assert first.headers["server"].startswith("nginx/")     # server_tokens on: the version shows

        def web_status() -> Any:
            ing = next(o for o in cluster.objects("ingresses", APP_NS) if o["metadata"]["name"] == "web")
            return (ing.get("status") or {}).get("loadBalancer", {}).get("ingress")

        assert wait_until(installed.alive_and(web_status), "Ingress status written") == [{"ip": "192.0.2.1"}]
        wait_until(installed.alive_and(lambda: {e.get("reason") for e in cluster.objects("events", APP_NS)}
                                       >= {"AddedOrUpdated", "Rejected"}), "events recorded")
        # The same rejection again: the recorder patches the existing Event's count.
        broken = next(o for o in _app_objects(backend.port) if o["metadata"]["name"] == "broken")
        broken["metadata"]["annotations"] = {"example.com/touched": "1"}
        cluster.load([broken])

        def used(verb: str, resource: str) -> bool:
            return any(a.verb == verb and a.resource == resource and a.allowed
                       for a in cluster.access_log.decisions(installed.user))

        wait_until(installed.alive_and(lambda: used("patch", "events")), "event patched")
        wait_until(installed.alive_and(lambda: used("update", "leases")), "lease renewed")

        # helm upgrade with a changed ConfigMap value: NGINX follows.
        changed = {"controller": {"config": {"entries": {"server-tokens": "False"}}}}
        installed.helm.run("upgrade", RELEASE, str(CHART), "--namespace", NAMESPACE,
                           *installed.helm.values_files(VALUES, changed), kubeconfig=installed.admin,
                           check=True)
        wait_until(installed.alive_and(lambda: http_get(http, "web.example").headers.get("server")
                                       == "nginx"), "server-tokens off after helm upgrade")
        assert installed.stop_controller() == 0, installed.log()[-4000:]
    finally:
        backend.stop()

    report(installed)

    out = installed.helm.run("uninstall", RELEASE, "--namespace", NAMESPACE, kubeconfig=installed.admin,
                             check=True)
    assert f'release "{RELEASE}" uninstalled' in out.stdout
    assert released(cluster) == {}


def report(installed: Installed) -> None:
    """The least-privilege report: nothing refused, every grant used or documented with its flag."""
    log = installed.cluster.access_log
    decisions = log.decisions(installed.user)
    refused = [a for a in decisions if not a.allowed]
    assert refused == [], f"requests the chart's RBAC refused: {refused}"
    seen = {(a.verb, a.resource + (f"/{a.subresource}" if a.subresource else "")) for a in decisions}
    assert {("list", "ingresses"), ("watch", "ingresses"), ("update", "ingresses/status"),
            ("create", "events"), ("patch", "events"), ("get", "leases"), ("create", "leases"),
            ("update", "leases"), ("list", "endpointslices"), ("list", "secrets"), ("get", "secrets"),
            ("list", "configmaps"), ("get", "ingressclasses")} <= seen, sorted(seen)

    roles = {("ClusterRole", find(installed.docs, "ClusterRole")["metadata"]["name"]): "ClusterRole",
             ("Role", find(installed.docs, "Role")["metadata"]["name"]): "Role"}
    role_ids = {f"ClusterRole/{name}" if kind == "ClusterRole" else f"Role/{NAMESPACE}/{name}": kind
                for kind, name in roles}
    granted: set[tuple[str, int, str, str, str]] = set()
    for kind, name in roles:
        for index, rule in enumerate(find(installed.docs, kind, name)["rules"]):
            granted |= {(kind, index, g, r, v) for g in rule["apiGroups"] for r in rule["resources"]
                        for v in rule["verbs"]}
    used: set[tuple[str, int, str, str, str]] = set()
    for a in decisions:
        assert a.grant is not None and a.grant.role in role_ids, a   # only the chart's own roles allow
        resource = a.resource + (f"/{a.subresource}" if a.subresource else "")
        used.add((role_ids[a.grant.role], a.grant.rule, a.group, resource, a.verb))
    assert used <= granted
    comments = rule_comments(installed.helm.run("template", RELEASE, str(CHART), "--namespace", NAMESPACE,
                                                "--show-only", "templates/rbac.yaml",
                                                *installed.helm.values_files(VALUES), check=True).stdout)
    unused = sorted(granted - used)
    undocumented = [u for u in unused if not named_with_flag(comments.get((u[0], u[1]), ""), u[3], u[4])]
    assert undocumented == [], f"granted, never used, and not named with a flag in rbac.yaml: {undocumented}"


ALLOWED_HEADERS = {"global-allowed-response-headers": "X-Frame-Options"}   # the chart's ConfigMap
COMPAT_VALUES = {"controller": {**VALUES["controller"], "ingressNginxCompat": True,
                                "config": {"entries": ALLOWED_HEADERS}}}


@pytest.fixture
def installed_compat(helm: Helm, tmp_path: Path, short_tmp: str) -> Iterator[Installed]:
    with chart_cluster(authorization_mode="RBAC") as cluster:
        inst = Installed(helm, cluster, tmp_path, short_tmp, COMPAT_VALUES)
        try:
            yield inst
        finally:
            inst.stop_controller()


INGRESS_NGINX_CLASS = {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                       "metadata": {"name": "ingress-nginx"}, "spec": {"controller": "k8s.io/ingress-nginx"}}


def _compat_app(installed: Installed, backend: Backend, annotations: dict[str, str]) -> list[dict[str, Any]]:
    """Start the compat controller and wait until it is ready; the app's objects, its Ingress `web` of an
    ingress-nginx class with `annotations`, led by that IngressClass."""
    installed.start_controller()
    wait_until(installed.alive_and(lambda: _ready(installed.ports["ready"]) == 200), "controller ready")
    objects = _app_objects(backend.port)
    web = next(o for o in objects if o["metadata"]["name"] == "web" and o["kind"] == "Ingress")
    web["spec"]["ingressClassName"] = "ingress-nginx"
    web["metadata"]["annotations"] = annotations
    return [INGRESS_NGINX_CLASS, *objects]


def test_ingress_nginx_compat_reads_header_config_maps_cluster_wide_with_its_rbac(
        installed_compat: Installed) -> None:
    """controller.ingressNginxCompat: the controller lists and watches ConfigMaps in every namespace (the
    ones of custom-headers), granted by the chart's ClusterRole; no request is refused."""
    installed, cluster = installed_compat, installed_compat.cluster
    installed.install()
    backend = Backend("web").start()
    try:
        headers = {"nginx.ingress.kubernetes.io/custom-headers": "web-headers"}
        objects = _compat_app(installed, backend, headers)
        cluster.load([
            *objects,
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "web-headers", "namespace": APP_NS}, "data": {"X-Frame-Options": "DENY"}}])
        http = installed.ports["http"]
        # (the ConfigMap and the app's endpoints arrive together: wait for both, not for the header on a 502)
        r = wait_until(installed.alive_and(lambda: (x := http_get(http, "web.example")).headers.get(
            "x-frame-options") == "DENY" and x.backend == "web" and x), "the header on the app's answer")
        assert r.backend == "web"
    finally:
        backend.stop()
    assert installed.stop_controller() == 0, installed.log()[-4000:]
    decisions = cluster.access_log.decisions(installed.user)
    assert [a for a in decisions if not a.allowed] == []
    role = f"ClusterRole/{find(installed.docs, 'ClusterRole')['metadata']['name']}"
    cluster_wide = {a.verb for a in decisions if a.resource == "configmaps" and not a.namespace
                    and a.grant is not None and a.grant.role == role}
    assert cluster_wide == {"list", "watch"}


def test_ingress_nginx_compat_reads_an_auth_map_secret_with_its_rbac(installed_compat: Installed) -> None:
    """auth-secret-type: auth-map: the controller reads that one Secret in full with a `get` (the chart's
    ClusterRole grants it), once for its version however often the Ingress is rendered; the map's user gets
    in; no request is refused."""
    installed, cluster = installed_compat, installed_compat.cluster
    installed.install()
    backend = Backend("web").start()
    sha = "{SHA}" + base64.b64encode(hashlib.sha1(b"alice-pw").digest()).decode()
    alice = {"Authorization": "Basic " + base64.b64encode(b"alice:alice-pw").decode()}
    try:
        n = "nginx.ingress.kubernetes.io/"
        objects = _compat_app(installed, backend, {n + "auth-type": "basic", n + "auth-secret": "web-users",
                                                   n + "auth-secret-type": "auth-map"})
        cluster.load([
            *objects,
            {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
             "metadata": {"name": "web-users", "namespace": APP_NS},
             "data": {"alice": base64.b64encode(sha.encode()).decode()}}])
        http = installed.ports["http"]
        # Both answers in one wait: right after a reload the old workers still accept for a moment, with the
        # configuration before the Secret was read (503), so a 200 alone does not mean the next is new too.
        r = wait_until(installed.alive_and(lambda: (x := http_get(http, "web.example", headers=alice)).status
                                           == 200 and http_get(http, "web.example").status == 401 and x),
                       "the auth-map user let in, anybody else asked to authenticate")
        assert r.backend == "web"
    finally:
        backend.stop()
    assert installed.stop_controller() == 0, installed.log()[-4000:]
    decisions = cluster.access_log.decisions(installed.user)
    assert [a for a in decisions if not a.allowed] == []
    gets = [a for a in decisions if a.resource == "secrets" and a.verb == "get" and a.namespace == APP_NS]
    assert [a.name for a in gets] == ["web-users"]
    assert cluster.access_log.count(installed.user, gets[0]) == 1


def _metric(port: int, name: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text: str = r.read().decode()
    return "\n".join(line for line in text.splitlines() if line.startswith(name))


def test_a_missing_verb_is_refused_and_reported(installed: Installed) -> None:
    cluster = installed.cluster
    installed.install()
    role = find(installed.docs, "ClusterRole")["metadata"]["name"]
    # The ClusterRole without `list` on EndpointSlices.
    stored = next(o for o in cluster.objects("clusterroles") if o["metadata"]["name"] == role)
    rule = next(i for i, r in enumerate(stored["rules"]) if r["resources"] == ["endpointslices"])
    out = kubectl(installed.admin, "patch", "clusterrole", role, "--type", "json", "-p", yaml.safe_dump(
        [{"op": "replace", "path": f"/rules/{rule}/verbs", "value": ["watch"]}]))
    assert out.returncode == 0, out.stderr
    sa_kubeconfig = installed.token_kubeconfig()
    out = kubectl(sa_kubeconfig, "get", "endpointslices", "--all-namespaces")
    assert out.returncode == 1
    assert out.stderr.strip() == (
        'Error from server (Forbidden): endpointslices.discovery.k8s.io is forbidden: '
        f'User "{installed.user}" cannot list resource "endpointslices" in API group "discovery.k8s.io" '
        'at the cluster scope')

    installed.start_controller()
    missing = 'list endpointslices (API group "discovery.k8s.io") cluster-wide'
    wait_until(installed.alive_and(lambda: missing in installed.log()), "the missing permission logged")
    line = next(x for x in installed.log().splitlines() if missing in x)
    assert "[error" in line and "ServiceAccount lacks an RBAC permission" in line, line
    assert installed.user in line                                   # the server's message names the identity
    series = wait_until(installed.alive_and(lambda: _metric(
        installed.ports["metrics"], "nginx_ingress_controller_api_permission_denied_total")), "metric")
    assert ('{class="nginx",group="discovery.k8s.io",namespace="",resource="endpointslices",verb="list"}'
            in series), series
    assert _ready(installed.ports["ready"]) == 503                   # not ready without its endpoints
    denied = [a for a in cluster.access_log.denied(installed.user)]
    assert denied and all(a == Access("list", "discovery.k8s.io", "endpointslices", "", "", "", False)
                          for a in denied), denied
