"""ingress-nginx's TLS towards the backend (`proxy-ssl-*`) through the real controller
(`--ingress-nginx-compat`), devcluster, kubectl and a real NGINX, against a real HTTPS backend on 127.0.0.1
that requires a client certificate and reports the SNI it was sent: the manifest is written as users write
it (one multi-document YAML file, the Secrets with `stringData`)."""

from __future__ import annotations

import os
import ssl
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import yaml

from ingressctl.http_serving import BackgroundServer
from tests.helpers import scratch_dir, wait_until
from tests.integration.harness import NS, Env
from tests.integration.ingress_nginx_helpers import N, compat_controller, request
from tests.pki import CA, Issued
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration


class SNIBackend(BackgroundServer):
    """HTTPS on 127.0.0.1 with `server_cert`, completing the handshake only with a client certificate signed
    by `client_ca`; answers `sni=<the SNI sent, or None> cn=<client CN>`."""

    host = "127.0.0.1"

    def __init__(self, name: str, server_cert: Issued, client_ca: CA) -> None:
        self.name = name
        d = scratch_dir("proxy-ssl-")
        cert, key, ca = (os.path.join(d, n) for n in ("server.crt", "server.key", "client-ca.crt"))
        server_cert.write(cert, key)
        with open(ca, "wb") as f:
            f.write(client_ca.cert_pem)
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.ctx.verify_mode = ssl.CERT_REQUIRED
        self.ctx.load_verify_locations(ca)

        def remember(sock: Any, server_name: str | None, _ctx: Any) -> None:
            sock.sni = server_name

        self.ctx.sni_callback = remember

    def start(self) -> SNIBackend:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                peer = self.connection.getpeercert() or {}   # type: ignore[attr-defined]
                cn = dict(x[0] for x in peer.get("subject", ())).get("commonName", "?")
                body = f"sni={getattr(self.connection, 'sni', None)} cn={cn}\n".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.socket = self.ctx.wrap_socket(server.socket, server_side=True)
        self._serve(server, f"backend-{self.name}")
        return self


def tls_secret(name: str, client: Issued, ca: CA | None) -> dict[str, Any]:
    data = {"tls.crt": client.cert_pem.decode(), "tls.key": client.key_pem.decode()}
    if ca is not None:
        data["ca.crt"] = ca.cert_pem.decode()
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": NS}, "stringData": data}


def ingress(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": NS,
                         "annotations": {N + "backend-protocol": "HTTPS", **annotations}},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": f"{name}.example.com", "http": {
                "paths": [{"path": "/", "pathType": "Prefix",
                           "backend": {"service": {"name": "secure", "port": {"number": 80}}}}]}}]}}


def apply(env: Env, kubectl: Kubectl, docs: list[dict[str, Any]]) -> None:
    path = os.path.join(env.tmp, f"proxy-ssl-{len(os.listdir(env.tmp))}.yaml")
    with open(path, "w") as f:
        f.write("# ingress-nginx's backend certificate authentication, as its users write it\n")
        yaml.safe_dump_all(docs, f, explicit_start=True, sort_keys=False)
    done = kubectl.run("apply", "-f", path)
    assert done.returncode == 0, done.stderr


def test_client_certificates_verification_and_sni_towards_an_https_backend(env: Env,
                                                                            kubectl: Kubectl) -> None:
    backend_ca, client_ca, other_ca = CA("backend-ca"), CA("client-ca"), CA("other-ca")
    client = client_ca.issue("ingress-client")
    backend = SNIBackend("secure", backend_ca.issue("backend.internal", server=True,
                                                     dns=("backend.internal", "secure.backend.svc")),
                         client_ca).start()
    env.backends.append(backend)   # type: ignore[arg-type]
    env.service("secure")
    env.endpoints("secure", [backend])   # type: ignore[list-item]
    # ingress-nginx's `nginx` class replaces the harness's; ingressctl gets a class of its own
    env.delete("ingressclasses", "nginx", None)
    env.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                "metadata": {"name": "ingressctl"}, "spec": {"controller": "nginx.org/ingress-controller"}})
    secret = N + "proxy-ssl-secret"
    apply(env, kubectl, [
        {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx"},
         "spec": {"controller": "k8s.io/ingress-nginx"}},
        tls_secret("backend-client", client, backend_ca),
        tls_secret("backend-client-other-ca", client, other_ca),
        tls_secret("backend-client-no-ca", client, None),
        {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
         "metadata": {"name": "ca-only", "namespace": NS},
         "stringData": {"ca.crt": backend_ca.cert_pem.decode()}},
        ingress("plain", {}),
        ingress("mtls", {secret: f"{NS}/backend-client"}),
        ingress("verified", {secret: f"{NS}/backend-client", N + "proxy-ssl-verify": "on",
                             N + "proxy-ssl-verify-depth": "1", N + "proxy-ssl-name": "backend.internal",
                             N + "proxy-ssl-protocols": "TLSv1.2 TLSv1.3",
                             N + "proxy-ssl-ciphers": "HIGH:!aNULL"}),
        ingress("untrusted", {secret: f"{NS}/backend-client-other-ca", N + "proxy-ssl-verify": "on",
                              N + "proxy-ssl-name": "backend.internal"}),
        ingress("sni", {secret: f"{NS}/backend-client-no-ca", N + "proxy-ssl-name": "secure.backend.svc",
                        N + "proxy-ssl-server-name": "on"}),
        ingress("missing", {secret: f"{NS}/not-there"}),
        ingress("no-crt", {secret: f"{NS}/ca-only"}),
    ])
    c = compat_controller(env)
    port = c.http_port
    r = wait_until(lambda: (x := request(port, "mtls.example.com")).status == 200 and x, "mtls served")

    # (1) the backend requires a client certificate: HTTPS alone fails, with proxy-ssl-secret it is sent
    assert r.body == "sni=None cn=ingress-client\n"   # SNI off: ingress-nginx's default
    assert request(port, "plain.example.com").status == 502
    # (2) verified against the Secret's ca.crt with the name given: served; a CA that did not sign it: 502
    assert request(port, "verified.example.com").body == "sni=None cn=ingress-client\n"
    assert request(port, "untrusted.example.com").status == 502
    # (3) proxy-ssl-name with proxy-ssl-server-name on: the SNI the backend sees (no ca.crt: not verified)
    assert request(port, "sni.example.com").body == "sni=secure.backend.svc cn=ingress-client\n"
    # (4) a missing Secret, or one without tls.crt/tls.key: 500 with a Warning, the others served
    assert request(port, "missing.example.com").status == 500
    assert request(port, "no-crt.example.com").status == 500
    env.wait_event("missing", "AddedOrUpdatedWithWarning",
                   f"the Secret {NS}/not-there must exist and be of the type kubernetes.io/tls")
    env.wait_event("no-crt", "AddedOrUpdatedWithWarning",
                   f"the Secret {NS}/ca-only must exist and be of the type kubernetes.io/tls")
    assert request(port, "mtls.example.com").status == 200

    # the Secret is watched: created, the Ingress is served; its ca.crt changed to another CA, it fails
    apply(env, kubectl, [tls_secret("not-there", client, None)])
    wait_until(lambda: request(port, "missing.example.com").status == 200, "missing Secret created")
    apply(env, kubectl, [tls_secret("backend-client", client, other_ca)])
    wait_until(lambda: request(port, "verified.example.com").status == 502, "ca.crt replaced")
    assert request(port, "mtls.example.com").status == 200   # verify off: the CA does not matter
    # an invalid value rejects that Ingress only, nothing of it reaches NGINX
    apply(env, kubectl, [ingress("bad", {secret: f"{NS}/backend-client",
                                         N + "proxy-ssl-name": "x;proxy_pass http://evil"})])
    env.wait_event("bad", "Rejected", f"{N}proxy-ssl-name")
    assert request(port, "bad.example.com").status == 404
    assert request(port, "sni.example.com").status == 200
