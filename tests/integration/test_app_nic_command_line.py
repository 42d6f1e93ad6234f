"""The controller started as a new user would: with the container arguments of NIC's own Deployment
manifest (single-dash flags), unprivileged with the default paths and ports (each failure names the flag to
change), and against an empty cluster (a Service without endpoints is reported on the Ingress, once)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest

from tests.helpers import free_port, http_get, make_cert, wait_until
from tests.integration.harness import NS, Env, rule

pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# NIC's deployments/deployment/nginx-ingress.yaml container args (the commented-out ones switched on), as the
# kubelet hands them over after expanding $(POD_NAMESPACE), plus the glog verbosity of its older manifests.
NIC_DEPLOYMENT_ARGS = [
    "-nginx-configmaps=nginx-ingress/nginx-config",
    "-report-ingress-status",
    "-external-service=nginx-ingress",
    "-enable-leader-election",
    "-log-level=debug",
    "-log-format=glog",
    "-enable-prometheus-metrics",
    "-ingress-class=nginx",
    "-v=3",
]


@pytest.fixture
def scratch() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="ic-nic-", dir="/tmp")
    os.chmod(d, 0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _run(argv: list[str], *, user: int | None = None, wait: bool = True,
         env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "ingressctl", *argv]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env={**os.environ, "POD_NAMESPACE": "nginx-ingress", "POD_NAME": "nginx-ingress-0",
                              **(env or {})})
    if wait:
        p.wait(120)
    return p


def test_nics_deployment_arguments_reach_ready(env: Env, scratch: str) -> None:
    env.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nginx-ingress"}})
    env.create({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "nginx-config", "namespace": "nginx-ingress"},
                "data": {"external-status-address": "192.0.2.7"}})
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("app", [rule("app.example.com", ("/", "web"))])
    http, https, ready, metrics, status = (free_port() for _ in range(5))
    # The ports and paths a non-root process on a developer machine needs, in the same single-dash syntax.
    local = [f"-kubeconfig={env.kubeconfig}", f"-nginx-conf-dir={scratch}/conf",
             f"-nginx-run-dir={scratch}/run",
             f"-default-http-listener-port={http}", f"-default-https-listener-port={https}",
             f"-ready-status-port={ready}", f"-prometheus-metrics-listen-port={metrics}",
             f"-nginx-status-port={status}", "-leader-election-lease-duration", "8",
             "-leader-election-renew-deadline=6", "-leader-election-retry-period=1"]
    p = _run(NIC_DEPLOYMENT_ARGS + local, wait=False)
    try:
        wait_until(lambda: http_get(ready, "localhost", "/nginx-ready").status == 200, "/nginx-ready 200",
                   deadline=90)
        assert http_get(http, "app.example.com", "/").backend == "web"
        # -report-ingress-status with the external-status-address of -nginx-configmaps, by the leader.
        wait_until(lambda: (env.get("ingresses", "app").get("status") or {}).get("loadBalancer", {})
                   .get("ingress") == [{"ip": "192.0.2.7"}], "Ingress status written")
        assert http_get(metrics, "localhost", "/metrics").status == 200   # -enable-prometheus-metrics
    finally:
        p.terminate()
        out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, out
    # -log-format=glog with -v=3 (debug): glog's header on every line, debug lines included.
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert any(ln.startswith("I") and "] controller ready" in ln for ln in lines), out[-3000:]
    assert any("] event " in ln and "reason=AddedOrUpdated" in ln for ln in lines)   # a debug-level line
    assert "error:" not in out


def test_unprivileged_default_paths_and_ports_fail_naming_the_flag(env: Env, scratch: str) -> None:
    """As a user without root: each default that needs root fails with NGINX's or Python's words AND the
    flag that changes it; fixing one flag at a time leads to the next, then to a running controller."""
    user = None if os.getuid() != 0 else 65534   # nobody
    kubeconfig = os.path.join(scratch, "kubeconfig")
    shutil.copy(env.kubeconfig, kubeconfig)
    os.chmod(kubeconfig, 0o644)
    for d in ("conf", "run"):
        os.mkdir(os.path.join(scratch, d))
        if user is not None:
            os.chown(os.path.join(scratch, d), user, user)
    base = [f"--kubeconfig={kubeconfig}", "--enable-leader-election=false",
            f"--ready-status-port={free_port()}", "--nginx-status=false"]
    steps = [
        ([], "--nginx-conf-dir", "/etc/nginx"),
        ([f"--nginx-conf-dir={scratch}/conf"], "--nginx-run-dir", "/var/lib/nginx"),
        ([f"--nginx-conf-dir={scratch}/conf", f"--nginx-run-dir={scratch}/run"],
         "--default-http-listener-port", "bind() to 0.0.0.0:80 failed (13: Permission denied)"),
    ]
    for extra, flag, words in steps:
        p = _run(base + extra, user=user)
        out = p.stdout.read() if p.stdout else ""
        assert p.returncode == 1, out
        assert words in out and f"pass {flag} with" in out, out[-2000:]


def _no_endpoints_events(env: Env) -> list[tuple[str, int]]:
    return sorted((e["message"], e.get("count", 1)) for e in env.events("app", "NoEndpoints"))


def test_a_service_without_endpoints_is_reported_once_per_change(env: Env) -> None:
    """Developer flow against an empty cluster: the Ingress gets one Warning event (and a log line) saying why
    its route answers 502, not one per sync; a new reason is reported again, a fixed Service stops it."""
    env.service("empty")
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("app", [rule("app.example.com", ("/", "empty"))])
    c = env.controller()
    no_slices = f"Service {NS}/empty has no EndpointSlices: requests routed to it get 502"
    env.wait_event("app", "NoEndpoints", no_slices)
    assert c.get("app.example.com", "/").status == 502

    # More syncs of the same Ingress (an added path, another Service's endpoints): no repeat.
    env.ingress("app", [rule("app.example.com", ("/", "empty"), ("/web", "web"))])
    c.wait_backend("app.example.com", "/web", "web")
    env.endpoints("web", [env.backend("web"), env.backend("web")])
    c.wait_idle()
    assert _no_endpoints_events(env) == [(no_slices + " until it has ready endpoints", 1)]

    # A slice whose endpoint is not ready: a new reason, reported once.
    env.endpoints("empty", [], not_ready=[env.backend("empty")])
    env.wait_event("app", "NoEndpoints", f"Service {NS}/empty has no ready endpoints for port 80 (1 endpoint")
    # Ready: routed, and nothing more to say.
    ready = env.backend("empty")
    env.endpoints("empty", [ready])
    c.wait_backend("app.example.com", "/", "empty")
    assert len(_no_endpoints_events(env)) == 2
    # Gone again: said again.
    env.endpoints("empty", [])
    wait_until(lambda: dict(_no_endpoints_events(env)).get(no_slices + " until it has ready endpoints") == 2,
               "the no-EndpointSlices warning given a second time")


def test_watch_secret_namespace_limits_the_secrets_seen(env: Env) -> None:
    """-watch-secret-namespace: Secrets are watched only there (NIC's meaning); by default where the other
    resources are watched."""
    host = "tls.example.com"
    cert = make_cert(host)
    env.create(cert.secret("tls", NS))
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("tls", [rule(host, ("/", "web"))], tls=[{"hosts": [host], "secretName": "tls"}])
    elsewhere = env.controller(watch_namespaces=(NS,), watch_secret_namespaces=("kube-system",))
    assert elsewhere.lbc.informers.namespaces("secrets") == {"kube-system"}
    env.wait_event("tls", "AddedOrUpdatedWithWarning", f"{NS}/tls")
    with pytest.raises(OSError):
        elsewhere.https(host, "/")              # the Secret is not seen: TLS for the host is rejected
    elsewhere.stop()

    here = env.controller(watch_namespaces=(NS,))   # default: the watched namespaces
    assert here.lbc.informers.namespaces("secrets") == {NS}
    assert here.https(host, "/").peer_cert_der == cert.der
