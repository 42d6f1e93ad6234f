"""TransportServers and the GlobalConfiguration end to end: devcluster serving NIC's CRDs, the real
controller, real NGINX with its stream module, and real TCP and UDP echo servers on 127.0.0.1."""

from __future__ import annotations

import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from ingressctl.k8s.resource import ResourceType
from ingressctl.kinds.transportserver.kind import GLOBALCONFIGURATIONS, TRANSPORTSERVERS
from tests.helpers import free_port, make_cert, wait_until
from tests.integration.harness import NS, Controller, Env, rule
from tests.integration.stream_servers import EchoServer, TLSEchoServer, tcp_echo, tls_echo, udp_echo
from tests.integration.test_metrics_controller import scrape

pytestmark = pytest.mark.integration

CRDS = Path(__file__).resolve().parents[2] / "charts" / "ingressctl" / "crds"
CRD_TYPE = ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
                        namespaced=False)
GC_NAME = "nginx-configuration"


@pytest.fixture
def stream_env(env: Env) -> Iterator[Env]:
    for f in ("k8s.nginx.org_transportservers.yaml", "k8s.nginx.org_globalconfigurations.yaml"):
        env.kube.create(CRD_TYPE, None, yaml.safe_load((CRDS / f).read_text()))
    yield env
    for s in SERVERS:
        s.stop()
    SERVERS.clear()


SERVERS: list[EchoServer] = []


def echo(env: Env, name: str, protocol: str = "TCP") -> EchoServer:
    """An echo server stopped at the end of the test (by the `stream_env` fixture)."""
    SERVERS.append(EchoServer(name, protocol).start())
    return SERVERS[-1]


def gc(env: Env, listeners: list[dict[str, Any]]) -> dict[str, Any]:
    body = {"apiVersion": "k8s.nginx.org/v1", "kind": "GlobalConfiguration",
            "metadata": {"name": GC_NAME, "namespace": NS}, "spec": {"listeners": listeners}}
    try:
        return dict(env.kube.create(GLOBALCONFIGURATIONS, NS, body))
    except Exception:
        cur = env.kube.get(GLOBALCONFIGURATIONS, NS, GC_NAME)
        cur["spec"] = body["spec"]
        return dict(env.kube.update(GLOBALCONFIGURATIONS, NS, GC_NAME, cur))


def ts(env: Env, name: str, listener: str, protocol: str, service: str, *, port: int = 7000,
       **spec: Any) -> dict[str, Any]:
    body = {"apiVersion": "k8s.nginx.org/v1", "kind": "TransportServer",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"listener": {"name": listener, "protocol": protocol},
                     "upstreams": [{"name": "app", "service": service, "port": port}],
                     "action": {"pass": "app"}, **spec}}
    return dict(env.kube.create(TRANSPORTSERVERS, NS, body))


def service(env: Env, name: str, servers: list[EchoServer]) -> None:
    env.service(name, port=7000, port_name="app", target_port=7000)
    env.endpoints(name, servers, port_name="app")  # type: ignore[arg-type]


def ts_status(env: Env, name: str) -> dict[str, Any]:
    return dict(env.kube.get(TRANSPORTSERVERS, NS, name).get("status") or {})


def controller(env: Env, **kw: Any) -> Controller:
    # Statuses written at start-up go through the core's flush, which `--report-ingress-status` gates.
    settings = env.settings(enable_custom_resources=True, global_configuration=f"{NS}/{GC_NAME}",
                            report_ingress_status=True, **kw)
    # The run dir is a private (0700) temporary directory: the controller lets NGINX's workers (another user
    # under root) reach the unix sockets of the TLS passthrough split in it.
    return env.controller(settings)


def test_tcp_and_udp_through_their_listeners_with_one_reload_at_startup(stream_env: Env) -> None:
    env = stream_env
    tcp_port, udp_port = free_port(), free_port()
    gc(env, [{"name": "tcp-echo", "port": tcp_port, "protocol": "TCP"},
             {"name": "udp-echo", "port": udp_port, "protocol": "UDP", "ipv4": "127.0.0.1"}])
    a, b = echo(env, "tcp-a"), echo(env, "tcp-b")
    u = echo(env, "udp-a", "UDP")
    service(env, "tcp-svc", [a])
    service(env, "udp-svc", [u])
    ts(env, "tcp", "tcp-echo", "TCP", "tcp-svc", upstreamParameters={"connectTimeout": "5s"},
       sessionParameters={"timeout": "30s"})
    ts(env, "udp", "udp-echo", "UDP", "udp-svc", upstreamParameters={"udpRequests": 1, "udpResponses": 1})
    c = controller(env, enable_prometheus_metrics=True, prometheus_metrics_listen_port=0)
    assert c.reloads == 1                              # the 5.5 start-up: every resource, one reload
    metric = "nginx_ingress_controller_transportserver_resources_total"
    c.wait_idle()   # the resource gauges are set after the task that made the controller ready
    samples = scrape(int(c.app.metrics.server.port))
    assert {lbls["type"]: v for lbls, v in samples[metric]} == {"passthrough": 0, "tcp": 1, "udp": 1}
    assert not any("globalconfiguration" in name for name in samples)
    assert tcp_echo(tcp_port) == "tcp-a: hello"
    assert wait_until(lambda: udp_echo(udp_port) == "udp-a: hello", "UDP echo through NGINX")
    conf = Path(c.manager.conf_dir) / "stream-conf.d" / f"ts_{NS}_tcp.conf"
    assert "upstream ts_demo_tcp_app" in conf.read_text() and "proxy_timeout 30s;" in conf.read_text()
    wait_until(lambda: ts_status(env, "tcp").get("state") == "Valid", "status Valid")
    assert ts_status(env, "tcp")["message"] == f"Configuration for {NS}/tcp was added or updated "
    env.wait_event("tcp", "AddedOrUpdated", kind="TransportServer")
    # `kubectl get ts` shows the status through the CRD's printer columns.
    out = subprocess.run(["kubectl", "--kubeconfig", env.kubeconfig, "get", "ts", "-n", NS, "--no-headers",
                          "-o", "custom-columns=NAME:.metadata.name,STATE:.status.state"],
                         capture_output=True, text=True, check=True, timeout=60).stdout.split()
    assert out[:2] == ["tcp", "Valid"]
    table = subprocess.run(["kubectl", "--kubeconfig", env.kubeconfig, "get", "ts", "tcp", "-n", NS],
                           capture_output=True, text=True, check=True, timeout=60).stdout.splitlines()
    assert table[0].split() == ["NAME", "STATE", "REASON", "AGE"]
    assert table[1].split()[:3] == ["tcp", "Valid", "AddedOrUpdated"]
    # Endpoint changes reach the stream upstream.
    env.endpoints("tcp-svc", [b], port_name="app")  # type: ignore[list-item]
    wait_until(lambda: tcp_echo(tcp_port) == "tcp-b: hello", "TCP echo reaches the new endpoint")
    # Deleting the TransportServer closes its listener.
    env.kube.delete(TRANSPORTSERVERS, NS, "tcp")
    wait_until(lambda: tcp_echo(tcp_port) == "", "listener closed")
    assert not conf.exists()
    assert udp_echo(udp_port) == "udp-a: hello"
    wait_until(lambda: {lbls["type"]: v for lbls, v in scrape(int(c.app.metrics.server.port))[metric]}
               == {"passthrough": 0, "tcp": 0, "udp": 1}, "the gauge follows the deletion")


@pytest.mark.parametrize("order", [("first", "second"), ("second", "first")])
def test_listener_conflicts_go_to_the_oldest_in_both_orders(stream_env: Env, order: tuple[str, str]) -> None:
    env = stream_env
    port = free_port()
    gc(env, [{"name": "tcp-echo", "port": port, "protocol": "TCP"}])
    service(env, "first", [echo(env, "first")])
    service(env, "second", [echo(env, "second")])
    c = controller(env)
    ts(env, order[0], "tcp-echo", "TCP", order[0])
    wait_until(lambda: tcp_echo(port) == f"{order[0]}: hello", "the first TransportServer serves")
    ts(env, order[1], "tcp-echo", "TCP", order[1])
    # Same-second creation: the greater UID wins (NIC); otherwise the older one.
    objs = {n: env.kube.get(TRANSPORTSERVERS, NS, n) for n in order}
    winner = max(order, key=lambda n: (objs[n]["metadata"]["creationTimestamp"] == min(
        o["metadata"]["creationTimestamp"] for o in objs.values()), objs[n]["metadata"]["uid"]))
    loser = order[1] if winner == order[0] else order[0]
    taken = "Listener tcp-echo with host empty host is taken by another resource"
    e = env.wait_event(loser, "Rejected", taken, kind="TransportServer")
    assert f"(TransportServer {NS}/{winner})" in e["message"]
    wait_until(lambda: tcp_echo(port) == f"{winner}: hello", "the winner serves")
    wait_until(lambda: ts_status(env, loser).get("state") == "Warning", "the loser's status")
    env.kube.delete(TRANSPORTSERVERS, NS, winner)
    wait_until(lambda: tcp_echo(port) == f"{loser}: hello", "the listener passes to the other one")
    assert c.lbc.stats.sync_errors == 0


def test_bad_transportservers_and_listeners_harm_nothing_else(stream_env: Env) -> None:
    env = stream_env
    good_port, late_port, bad_port = free_port(), free_port(), free_port()
    gc(env, [{"name": "good", "port": good_port, "protocol": "TCP"},
             {"name": "bad-ssl", "port": bad_port, "protocol": "TCP", "ssl": True}])
    service(env, "good", [echo(env, "good")])
    c = controller(env)
    env.wait_event(GC_NAME, "AddedOrUpdatedWithError", "spec.listeners[1].ssl: Forbidden",
                   kind="GlobalConfiguration")
    ts(env, "good", "good", "TCP", "good")
    wait_until(lambda: tcp_echo(good_port) == "good: hello", "good TransportServer")
    # A listener the GlobalConfiguration does not define, and one that fails validation.
    ts(env, "late", "late", "TCP", "good")
    env.wait_event("late", "Rejected", "Listener late doesn't exist", kind="TransportServer")
    wait_until(lambda: ts_status(env, "late").get("state") == "Warning", "Warning status")
    ts(env, "broken", "good", "TCP", "good", action={"pass": "nope"}, serverSnippets="deny all;")
    e = env.wait_event("broken", "Rejected", kind="TransportServer")
    assert "spec.action.pass: Unsupported value: \"nope\"" in e["message"]
    assert "snippet specified but snippets feature is not enabled" in e["message"]
    wait_until(lambda: ts_status(env, "broken").get("state") == "Invalid", "Invalid status")
    assert tcp_echo(good_port) == "good: hello"
    # The GlobalConfiguration gains the listener: the waiting TransportServer becomes active.
    gc(env, [{"name": "good", "port": good_port, "protocol": "TCP"},
             {"name": "late", "port": late_port, "protocol": "TCP"}])
    wait_until(lambda: tcp_echo(late_port) == "good: hello", "late TransportServer after the GC change")
    env.wait_event(GC_NAME, "Updated", kind="GlobalConfiguration")
    assert tcp_echo(good_port) == "good: hello"
    assert c.lbc.stats.sync_errors == 0


# ------------------------------------------------------------------------------------------ TLS passthrough


def passthrough_ts(env: Env, name: str, host: str, service: str) -> dict[str, Any]:
    return ts(env, name, "tls-passthrough", "TLS_PASSTHROUGH", service, host=host)


def test_tls_passthrough_splits_the_https_port_by_sni(stream_env: Env, tmp_path: Path) -> None:
    """The backend's own certificate reaches the client of a passthrough host, while an Ingress on the same
    port still terminates TLS for its host, and the client address survives the split (PROXY protocol)."""
    env = stream_env
    backend_cert, ing_cert = make_cert("pass.example.com"), make_cert("ing.example.com")
    server = TLSEchoServer("pass-backend", backend_cert.cert_pem, backend_cert.key_pem, str(tmp_path)).start()
    try:
        service(env, "pass-svc", [server])  # type: ignore[list-item]
        env.service("web")
        env.endpoints("web", [env.backend("web")])
        env.create(ing_cert.secret("ing-tls", NS))
        env.ingress("web", [rule("ing.example.com", ("/", "web"))],
                    tls=[{"hosts": ["ing.example.com"], "secretName": "ing-tls"}],
                    annotations={"nginx.org/location-snippets":
                                 "add_header X-Client-Addr $remote_addr always;"})
        passthrough_ts(env, "pass", "pass.example.com", "pass-svc")
        port = free_port()
        c = controller(env, enable_tls_passthrough=True, enable_snippets=True, https_port=port,
                       tls_passthrough_port=port)
        assert c.settings.controller.tls_passthrough_port == c.https_port   # the split owns the HTTPS port
        reply, der = tls_echo(c.https_port, "pass.example.com")
        assert reply == "pass-backend: hello" and der == backend_cert.der
        subject = x509.load_der_x509_certificate(der).subject.rfc4514_string()
        assert subject == "CN=pass.example.com"
        r = c.https("ing.example.com", "/")
        assert r.status == 200 and r.backend == "web" and r.peer_cert_der == ing_cert.der
        assert r.headers["x-client-addr"] == "127.0.0.1"       # not "unix:": the PROXY protocol carried it
        # Plain HTTP is untouched; an unknown SNI lands on the HTTPS default server, which (without a
        # default server certificate) refuses the handshake, as it does without passthrough.
        assert c.get("ing.example.com", "/").status == 301
        with pytest.raises(ssl.SSLError, match="UNRECOGNIZED_NAME"):
            c.https("unknown.example.com", "/")
        # Host ownership across kinds: a younger Ingress for the passthrough host loses it.
        env.ingress("grab", [rule("pass.example.com", ("/", "web"))],
                    tls=[{"hosts": ["pass.example.com"], "secretName": "ing-tls"}])
        # Host ownership across kinds: the older resource keeps the host (created in the same second: the
        # greater UID), the other one is rejected naming it.
        pass_md = env.kube.get(TRANSPORTSERVERS, NS, "pass")["metadata"]
        grab_md = env.get("ingresses", "grab")["metadata"]
        ts_wins = ((pass_md["creationTimestamp"], grab_md["uid"])
                   < (grab_md["creationTimestamp"], pass_md["uid"]))
        if ts_wins:
            env.wait_event("grab", "Rejected", "host pass.example.com by TransportServer demo/pass")
            assert tls_echo(c.https_port, "pass.example.com")[0] == "pass-backend: hello"
        else:
            env.wait_event("pass", "Rejected", "host pass.example.com by Ingress demo/grab",
                           kind="TransportServer")
            wait_until(lambda: c.https("pass.example.com", "/").backend == "web",
                       "the Ingress holds the host")
        # Deleting the passthrough TransportServer gives its SNI back to the HTTPS servers.
        env.kube.delete(TRANSPORTSERVERS, NS, "pass")
        wait_until(lambda: c.https("pass.example.com", "/").backend == "web", "the Ingress takes the host")
        assert c.lbc.stats.sync_errors == 0
    finally:
        server.stop()
