"""ingress-nginx's annotations through the real controller (`--ingress-nginx-compat`), devcluster, kubectl and
a real NGINX, with the manifests in the form users publish (tests/integration/data/ingress-nginx/): each
annotation answers real requests as it did under ingress-nginx (body limits, timeouts, buffers, the upstream
Host, retries, redirect codes and targets, allow and deny lists, rate and connection limits answering 503)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import make_cert, wait_until
from tests.integration.harness import NS, Env
from tests.integration.ingress_nginx_helpers import (
    apply_manifest,
    compat_controller,
    concurrently,
    request,
    special,
)
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration


def web(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])


def test_proxying_annotations(env: Env, kubectl: Kubectl) -> None:
    web(env)
    env.service("special")
    env.endpoints("special", [special(env, "special")])
    env.service("flaky")
    env.endpoints("flaky", [env.backend("good"), special(env, "bad", fail=True)])
    apply_manifest(env, kubectl, "proxying.yaml")
    c = compat_controller(env)
    port = c.http_port
    for host in ("upload", "slow", "buffers", "plain", "vhost", "retry", "noretry"):
        wait_until(lambda h=host: request(port, f"{h}.example.com").status in (200, 502), f"{host} served")

    # proxy-body-size: "1k" (client_max_body_size), with request buffering off
    assert request(port, "upload.example.com", method="POST", body=b"x" * 1000).status == 200
    assert request(port, "upload.example.com", method="POST", body=b"x" * 2000).status == 413
    conf = Path(c.manager.conf_dir, "conf.d", f"{NS}-upload.conf").read_text()
    assert "proxy_request_buffering off;" in conf and "client_body_buffer_size 2k;" in conf
    # proxy-read-timeout: "1" (seconds): a 2 s answer times out, the plain Ingress waits 60 s
    assert request(port, "slow.example.com", "/slow").status == 504
    assert request(port, "plain.example.com", "/slow").status == 200
    # upstream-vhost and proxy-redirect-from/-to
    r = request(port, "vhost.example.com", "/page")
    assert r.body == "special GET internal.example.com/page\n"
    r = request(port, "vhost.example.com", "/redirect")
    assert r.status == 302 and r.headers["location"] == "https://vhost.example.com/next"
    assert request(port, "plain.example.com", "/redirect").headers["location"] == \
        "http://internal.example.com/next"
    # proxy-next-upstream: a 502 of one endpoint is retried on the other
    assert {request(port, "retry.example.com").status for _ in range(30)} == {200}
    assert {request(port, "noretry.example.com").status for _ in range(30)} == {200, 502}
    # proxy-buffer-size: "16k" takes a 12 KiB header NGINX's default buffer refuses (last: the refused
    # header counts as a failure of the plain Ingress's upstream server)
    big = request(port, "buffers.example.com", "/big-header")
    assert big.status == 200 and len(big.headers["x-big"]) == 12000
    assert request(port, "plain.example.com", "/big-header").status == 502


def test_redirect_annotations(env: Env, kubectl: Kubectl) -> None:
    web(env)
    for name in ("secure", "both"):
        env.create(make_cert(f"{name}.example.com").secret(f"{name}-tls", NS))
    apply_manifest(env, kubectl, "redirects.yaml")
    c = compat_controller(env)
    port, https = c.http_port, c.https_port
    wait_until(lambda: c.https("secure.example.com").status == 200, "secure served over TLS")
    # ssl-redirect: 308 (ingress-nginx's http-redirect-code), to the TLS port, keeping the URI
    r = request(port, "secure.example.com", "/a/b?c=1")
    assert (r.status, r.headers["location"]) == (308, f"https://secure.example.com:{https}/a/b?c=1")
    assert request(port, "both.example.com").status == 200
    # force-ssl-redirect: also without a certificate of the host
    r = wait_until(lambda: (x := request(port, "forced.example.com", "/x")).status == 308 and x, "forced")
    assert r.headers["location"] == f"https://forced.example.com:{https}/x"
    # app-root: `/` (only `/`) answers 302 to the root
    r = request(port, "approot.example.com", "/")
    assert (r.status, r.headers["location"]) == (302, "http://approot.example.com/app1")
    assert request(port, "approot.example.com", "/app1").status == 200
    # permanent-redirect (301, with NGINX variables), its code, and temporal-redirect winning over it
    r = request(port, "moved.example.com", "/old?x=1")
    assert (r.status, r.headers["location"]) == (301, "https://www.example.org/old?x=1")
    r = request(port, "moved308.example.com", "/anything")
    assert (r.status, r.headers["location"]) == (308, "https://www.example.org/new")
    r = request(port, "maintenance.example.com", "/")
    assert (r.status, r.headers["location"]) == (302, "https://status.example.org/")
    assert env.wait_event("maintenance", "AddedOrUpdatedWithWarning",
                          "permanent-redirect ignored (nginx.ingress.kubernetes.io/temporal-redirect is set")


def test_access_and_limit_annotations(env: Env, kubectl: Kubectl) -> None:
    web(env)
    env.service("special")
    env.endpoints("special", [special(env, "special")])
    apply_manifest(env, kubectl, "access-and-limits.yaml")
    c = compat_controller(env)
    port = c.http_port
    wait_until(lambda: request(port, "public.example.com").status == 200, "public served")
    # whitelist-source-range: only the listed clients; denylist-source-range: all but the listed
    assert request(port, "office.example.com", source="127.0.0.1").status == 403
    assert request(port, "office.example.com", source="127.0.0.2").status == 200
    assert request(port, "public.example.com", source="127.0.0.3").status == 403
    assert request(port, "public.example.com", source="127.0.0.1").status == 200
    # limit-rps: 2/s with a burst of 2 x limit-burst-multiplier (1), nodelay: the excess answers 503
    codes = [request(port, "api.example.com", source="127.0.0.5").status for _ in range(12)]
    assert codes[0] == 200 and 503 in codes and set(codes) == {200, 503}
    # limit-whitelist: that client is never limited
    assert {request(port, "api.example.com", source="127.0.0.4").status for _ in range(12)} == {200}
    # limit-rpm: one a minute, with a burst of 1 (1 x limit-burst-multiplier) on top
    codes = [request(port, "perminute.example.com", source="127.0.0.6").status for _ in range(4)]
    assert codes == [200, 200, 503, 503]
    # limit-connections: "1": a second concurrent connection of the client gets 503
    codes = concurrently(3, lambda: request(port, "downloads.example.com", "/slow",
    source="127.0.0.7").status)
    assert sorted(codes) == [200, 503, 503]
    assert request(port, "downloads.example.com", "/", source="127.0.0.7").status == 200

    # An invalid entry refuses the Ingress (ingress-nginx served 503 on its paths); the others keep serving.
    done = kubectl.run("annotate", "--overwrite", "-n", NS, "ingress", "office",
                       "nginx.ingress.kubernetes.io/whitelist-source-range=127.0.0.2/32, 10.20.0.0/33")
    assert done.returncode == 0, done.stderr
    env.wait_event("office", "Rejected", "annotations.nginx.ingress.kubernetes.io/whitelist-source-range: "
                                         'Invalid value: "127.0.0.2/32, 10.20.0.0/33"')
    c.wait_status("office.example.com", "/", 404)
    assert request(port, "public.example.com").status == 200



def tls_handshake(port: int, host: str, cipher: str) -> bool:
    """Whether a TLS 1.2 handshake offering only `cipher` succeeds."""
    import socket
    import ssl

    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(cipher)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname=host):
            return True
    except ssl.SSLError:
        return False


def test_backend_annotations(env: Env, kubectl: Kubectl) -> None:
    from tests.integration.test_virtualserver_grpc import GreeterServer, grpc

    web(env)
    backend_cert = make_cert("secure-app.demo.svc")
    env.service("secure-app", port=443)
    env.endpoints("secure-app", [special(env, "secure-app", cert=backend_cert)])
    env.service("special")
    env.endpoints("special", [special(env, "special")])
    env.service("error-pages")
    env.endpoints("error-pages", [env.backend("error-pages")])
    direct = env.backend("direct")
    env.service("direct", port=direct.port, clusterIP="127.0.0.1")  # no EndpointSlices: only the cluster IP
    replicas = [env.backend(f"replica-{i}") for i in range(3)]
    env.service("replicas")
    env.endpoints("replicas", replicas)
    greeter = GreeterServer("greeter")
    secure_greeter = GreeterServer("secure-greeter", cert=make_cert("greeter-tls.demo.svc"))
    try:
        env.service("greeter", target_port=greeter.port)
        env.service("greeter-tls", port=443, target_port=secure_greeter.port)

        class _Grpcs:
            name, host, port = "secure-greeter", "127.0.0.1", secure_greeter.port

        env.endpoints("greeter-tls", [_Grpcs()])  # type: ignore[list-item]

        class _Grpc:
            name, host, port = "greeter", "127.0.0.1", greeter.port

        env.endpoints("greeter", [_Grpc()])  # type: ignore[list-item]
        grpc_cert, grpcs_cert = make_cert("grpc.example.com"), make_cert("grpcs.example.com")
        env.create(grpc_cert.secret("grpc-tls", NS))
        env.create(grpcs_cert.secret("grpcs-tls", NS))
        env.create(make_cert("ciphers.example.com").secret("ciphers-tls", NS))
        env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nginx-config",
        "namespace": NS},
                   "data": {"http2": "true"}})
        apply_manifest(env, kubectl, "backends.yaml")
        c = compat_controller(env, nginx_configmaps=f"{NS}/nginx-config", enable_snippets=True)
        port = c.http_port

        # backend-protocol: HTTPS
        r = wait_until(lambda: (x := request(port, "tls-backend.example.com", "/x")).status == 200 and x,
                       "HTTPS to the backend")
        assert r.body == "secure-app GET tls-backend.example.com/x\n"
        # backend-protocol: GRPC (grpc_pass, with the TLS listener's HTTP/2)
        def call(host: str = "grpc.example.com") -> str:
            cert = grpc_cert if host == "grpc.example.com" else grpcs_cert
            creds = grpc.ssl_channel_credentials(root_certificates=cert.cert_pem)
            with grpc.secure_channel(f"127.0.0.1:{c.https_port}", creds,
                                     options=[("grpc.ssl_target_name_override", host),
                                              ("grpc.default_authority", host)]) as ch:
                try:
                    return str(ch.unary_unary("/helloworld.Greeter/SayHello")(b"hi", timeout=10).decode())
                except grpc.RpcError as e:
                    return str(e.code())

        assert wait_until(lambda: call() == "greeter: hi user=", "a gRPC call")
        # backend-protocol: GRPCS (grpc_pass over TLS to a backend that speaks only TLS)
        assert wait_until(lambda: call("grpcs.example.com") == "secure-greeter: hi user=",
                          "a gRPC call over TLS to the backend")
        # custom-http-errors: the backend's 404 comes from spec.defaultBackend, with its status
        r = request(port, "errors.example.com", "/missing")
        assert (r.status, r.backend) == (404, "error-pages")
        assert request(port, "errors.example.com", "/found").backend == "special"
        # service-upstream: the Service's cluster IP
        assert request(port, "clusterip.example.com").backend == "direct"
        # upstream-hash-by: one URI, one replica; many URIs, several replicas
        for uri in ("/a", "/b", "/c"):
            assert len({request(port, "cache.example.com", uri).backend for _ in range(10)}) == 1
        assert len({request(port, "cache.example.com", f"/item/{i}").backend for i in range(30)}) >= 2
        # ssl-ciphers
        assert tls_handshake(c.https_port, "ciphers.example.com", "ECDHE-RSA-AES256-GCM-SHA384")
        assert not tls_handshake(c.https_port, "ciphers.example.com", "ECDHE-RSA-AES128-GCM-SHA256")
        # configuration-snippet and server-snippet (with --enable-snippets)
        r = request(port, "snippet.example.com")
        assert (r.backend, r.headers.get("x-snippet")) == ("web", "location")
        assert request(port, "snippet.example.com", "/from-server-snippet").body == "server snippet\n"
    finally:
        greeter.stop()
        secure_greeter.stop()


def test_snippets_are_refused_without_enable_snippets(env: Env, kubectl: Kubectl) -> None:
    web(env)
    apply_manifest(env, kubectl, "backends.yaml")
    c = compat_controller(env)
    env.wait_event("snippet", "Rejected", "annotations.nginx.ingress.kubernetes.io/configuration-snippet: "
                                          "Forbidden: not supported by ingressctl: snippets are not enabled")
    assert request(c.http_port, "snippet.example.com").status == 404


def test_ingress_nginx_configmap_keys(env: Env, kubectl: Kubectl) -> None:
    web(env)
    apply_manifest(env, kubectl, "configmap.yaml")
    c = compat_controller(env, nginx_configmaps=f"{NS}/ingress-nginx-controller")
    port = c.http_port
    # use-forwarded-headers: the allowlist sees the address in X-Forwarded-For
    forwarded = {"X-Forwarded-For": "10.1.2.3"}
    r = wait_until(lambda: (x := request(port, "office.example.com", headers=forwarded)).status == 200 and x,
                   "the forwarded client is allowed")
    assert r.backend == "web"
    assert request(port, "office.example.com").status == 403
    # proxy-body-size (as client-max-body-size), server-tokens
    big = request(port, "office.example.com", method="POST", body=b"x" * 2000, headers=forwarded)
    assert big.status == 413
    assert r.headers["server"] == "nginx"
    env.wait_event("ingress-nginx-controller", "InvalidValue",
                   "Invalid value for use-gzip: ingress-nginx key ignored", kind="ConfigMap")
