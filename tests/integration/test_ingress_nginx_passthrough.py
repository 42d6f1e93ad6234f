"""ingress-nginx's ssl-passthrough end to end: the manifest as its docs write it (kubectl apply), devcluster
with the TransportServer CRDs, the real controller with `--ingress-nginx-compat`, real NGINX and backends on
127.0.0.1 that terminate TLS with their own certificates."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ingressctl.k8s.resource import ResourceType
from ingressctl.kinds.transportserver.kind import TRANSPORTSERVERS
from tests.helpers import free_port, make_cert, wait_until
from tests.integration.harness import NS, Controller, Env
from tests.integration.ingress_nginx_helpers import apply_manifest, compat_controller, request, special
from tests.integration.stream_servers import TLSEchoServer, tls_echo
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration

CRDS = Path(__file__).resolve().parents[2] / "charts" / "ingressctl" / "crds"
CRD_TYPE = ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
                        namespaced=False)
HOST = "secure.example.com"


@pytest.fixture
def pt_env(env: Env) -> Iterator[Env]:
    for f in ("k8s.nginx.org_transportservers.yaml", "k8s.nginx.org_globalconfigurations.yaml"):
        env.kube.create(CRD_TYPE, None, yaml.safe_load((CRDS / f).read_text()))
    yield env


def backends(env: Env) -> tuple[Any, Any]:
    """The TLS backend of the passthrough host (its own certificate) and the plain `web` backend with its
    Ingress's TLS Secret; returns (the backend's certificate, web's)."""
    backend_cert, web_cert = make_cert(HOST), make_cert("web.example.com")
    env.service("secure-app", port=443)
    env.endpoints("secure-app", [special(env, "secure-app", cert=backend_cert)])
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.create(web_cert.secret("web-tls", NS))
    return backend_cert, web_cert


def passthrough_controller(env: Env, **kw: Any) -> Controller:
    port = free_port()
    c = compat_controller(env, enable_custom_resources=True, enable_tls_passthrough=True, https_port=port,
                          tls_passthrough_port=port, report_ingress_status=True, **kw)
    assert c.settings.controller.tls_passthrough_port == c.https_port   # the split owns the HTTPS port
    return c


def test_an_ssl_passthrough_ingress_gets_its_backends_tls_and_follows_endpoints(
        pt_env: Env, kubectl: Kubectl) -> None:
    env = pt_env
    backend_cert, web_cert = backends(env)
    apply_manifest(env, kubectl, "ssl-passthrough.yaml")
    c = passthrough_controller(env)
    # The client with the host's SNI gets the backend's own certificate and answer: NGINX did not terminate.
    r = wait_until(lambda: (x := c.https(HOST, "/x")).backend == "secure-app" and x, "passed through")
    assert r.status == 200 and r.body == f"secure-app GET {HOST}/x\n" and r.peer_cert_der == backend_cert.der
    # Another host on the same port still reaches ingressctl's HTTPS servers.
    w = c.https("web.example.com", "/")
    assert w.status == 200 and w.backend == "web" and w.peer_cert_der == web_cert.der
    # The Ingress's HTTP server is served as usual, speaking HTTPS to the TLS backend (as ingress-nginx).
    h = request(c.http_port, HOST, "/plain")
    assert h.status == 200 and h.body == f"secure-app GET {HOST}/plain\n"
    # A value that is not a boolean refuses that Ingress only.
    env.wait_event("bad-passthrough", "Rejected", "nginx.ingress.kubernetes.io/ssl-passthrough")
    assert request(c.http_port, "bad.example.com", "/").backend != "web"
    assert not env.events("secure-app", "AddedOrUpdatedWithWarning")
    # Endpoints scaling is followed: a second replica serves, then only it.
    first = next(b for b in env.backends if b.name == "secure-app")
    second = special(env, "secure-app-2", cert=backend_cert)
    env.endpoints("secure-app", [first, second])
    wait_until(lambda: c.https(HOST, "/").backend == "secure-app-2", "the new replica is passed through to")
    env.endpoints("secure-app", [second])
    wait_until(lambda: all(c.https(HOST, "/").backend == "secure-app-2" for _ in range(6)),
               "the removed replica no longer gets connections")
    # The annotation removed: NGINX terminates TLS for the host again (it has no TLS Secret: refused).
    done = kubectl.run("annotate", "ingress", "secure-app", "-n", NS,
                       "nginx.ingress.kubernetes.io/ssl-passthrough-")
    assert done.returncode == 0, done.stderr

    def terminated() -> bool:
        try:
            c.https(HOST, "/")
        except ssl.SSLError:
            return True
        return False

    wait_until(terminated, "NGINX terminates the host's TLS again")
    assert c.https("web.example.com", "/").backend == "web"
    assert c.lbc.stats.sync_errors == 0


def test_without_enable_tls_passthrough_the_annotation_is_ignored_with_a_warning(
        pt_env: Env, kubectl: Kubectl) -> None:
    env = pt_env
    backends(env)
    apply_manifest(env, kubectl, "ssl-passthrough.yaml")
    c = compat_controller(env)
    env.wait_event("secure-app", "AddedOrUpdatedWithWarning", "--enable-tls-passthrough")
    # Served normally: HTTP (to the backend over HTTPS, as ingress-nginx), and no passthrough on the HTTPS
    # port: NGINX's default server (without a certificate) refuses the handshake.
    r = wait_until(lambda: (x := request(c.http_port, HOST, "/y")).status == 200 and x, "HTTP served")
    assert r.body == f"secure-app GET {HOST}/y\n"
    with pytest.raises(ssl.SSLError):
        c.https(HOST, "/")
    assert c.https("web.example.com", "/").backend == "web"


def passthrough_ts(env: Env, name: str, service: str) -> dict[str, Any]:
    body = {"apiVersion": "k8s.nginx.org/v1", "kind": "TransportServer",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"listener": {"name": "tls-passthrough", "protocol": "TLS_PASSTHROUGH"}, "host": HOST,
                     "upstreams": [{"name": "app", "service": service, "port": 7000}],
                     "action": {"pass": "app"}}}
    return dict(env.kube.create(TRANSPORTSERVERS, NS, body))


def test_a_transportserver_for_the_same_host_goes_by_age_and_takes_the_host_over(
        pt_env: Env, kubectl: Kubectl, tmp_path: Path) -> None:
    """The older resource routes the host (NIC's host ownership across kinds; within one second the
    TransportServer, which does not share hosts as ingress-nginx's Ingresses do); the other gets a Rejected
    event naming it; when the Ingress goes, the TransportServer takes over. Nothing else is harmed."""
    env = pt_env
    backend_cert, _ = backends(env)
    ts_cert = make_cert(HOST)
    ts_backend = TLSEchoServer("ts-backend", ts_cert.cert_pem, ts_cert.key_pem, str(tmp_path)).start()
    try:
        env.service("ts-app", port=7000, port_name="app", target_port=7000)
        env.endpoints("ts-app", [ts_backend], port_name="app")  # type: ignore[list-item]
        apply_manifest(env, kubectl, "ssl-passthrough.yaml")
        c = passthrough_controller(env)
        wait_until(lambda: c.https(HOST, "/").backend == "secure-app", "the Ingress passes through")
        passthrough_ts(env, "grab", "ts-app")
        ing_md = env.get("ingresses", "secure-app")["metadata"]
        ts_md = env.kube.get(TRANSPORTSERVERS, NS, "grab")["metadata"]
        ts_wins = ts_md["creationTimestamp"] <= ing_md["creationTimestamp"]  # (created after the Ingress)
        if ts_wins:
            env.wait_event("secure-app", "Rejected", f"host {HOST} by TransportServer {NS}/grab")
            wait_until(lambda: tls_echo(c.https_port, HOST)[0] == "ts-backend: hello", "the TS holds it")
        else:
            env.wait_event("grab", "Rejected", f"host {HOST} by Ingress {NS}/secure-app",
                           kind="TransportServer")
            assert c.https(HOST, "/").peer_cert_der == backend_cert.der
            env.delete("ingresses", "secure-app")
            wait_until(lambda: tls_echo(c.https_port, HOST)[0] == "ts-backend: hello",
                       "the TransportServer takes the host over")
            _, der = tls_echo(c.https_port, HOST)
            assert der == ts_cert.der
        assert c.https("web.example.com", "/").backend == "web"
        assert c.lbc.stats.sync_errors == 0
    finally:
        ts_backend.stop()
