"""gRPC upstreams (`type: grpc`) end to end: a real gRPC server (grpcio) on 127.0.0.1 behind a real NGINX
terminating TLS with HTTP/2 (`listen ... ssl http2`, NGINX 1.22's form), as NIC renders it: `grpc_pass`, and
NGINX's own errors turned into gRPC statuses."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc  # a test dependency (pyproject's `test` extra)
import pytest

from tests.helpers import make_cert, wait_until
from tests.integration.harness import NS, Controller, Env
from tests.integration.vs_helpers import apply_vs, install_crds, virtual_server, wait_vs_state

pytestmark = pytest.mark.integration

HOST = "grpc.example.com"
METHOD = "/helloworld.Greeter/SayHello"


class GreeterServer:
    """A gRPC server with one unary method (raw bytes, no generated code): answers `<name>: <request>` and
    echoes the `:authority` and the `x-user` metadata it received; with `cert` (its `key_pem`, `cert_pem`),
    over TLS only."""

    def __init__(self, name: str, cert: Any = None) -> None:
        self.name = name
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))

        def say(request: bytes, context: Any) -> bytes:
            md = dict(context.invocation_metadata())
            return f"{name}: {request.decode()} user={md.get('x-user', '')}".encode()

        handler = grpc.method_handlers_generic_handler("helloworld.Greeter", {
            "SayHello": grpc.unary_unary_rpc_method_handler(say)})
        self.server.add_generic_rpc_handlers((handler,))
        if cert is None:
            self.port = self.server.add_insecure_port("127.0.0.1:0")
        else:
            creds = grpc.ssl_server_credentials([(cert.key_pem, cert.cert_pem)])
            self.port = self.server.add_secure_port("127.0.0.1:0", creds)
        self.server.start()

    def stop(self) -> None:
        self.server.stop(None)


@pytest.fixture
def greeter() -> Iterator[GreeterServer]:
    s = GreeterServer("greeter")
    yield s
    s.stop()


def _call(c: Controller, cert_pem: bytes, request: bytes) -> tuple[Any, str]:
    """One call through NGINX over TLS (SNI and :authority are the VirtualServer's host)."""
    creds = grpc.ssl_channel_credentials(root_certificates=cert_pem)
    with grpc.secure_channel(f"127.0.0.1:{c.https_port}", creds,
                             options=[("grpc.ssl_target_name_override", HOST),
                                      ("grpc.default_authority", HOST)]) as ch:
        try:
            reply = ch.unary_unary(METHOD)(request, timeout=10, metadata=[("x-user", "alice")])
        except grpc.RpcError as e:
            return e.code(), str(e.details())
        return grpc.StatusCode.OK, reply.decode()


def _setup(env: Env, greeter: GreeterServer, http2: bool) -> bytes:
    install_crds(env)
    cert = make_cert(HOST)
    env.apply(cert.secret("grpc-tls", NS))
    env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nginx-config", "namespace": NS},
               "data": {"http2": "true" if http2 else "false"}})
    env.service("greeter", target_port=greeter.port)

    class _Grpc:
        name, host, port = "greeter", "127.0.0.1", greeter.port

    env.endpoints("greeter", [_Grpc()])  # type: ignore[list-item]
    apply_vs(env, virtual_server("grpc", HOST, tls={"secret": "grpc-tls"},
                                 upstreams=[{"name": "greeter", "service": "greeter", "port": 80,
                                             "type": "grpc"}],
                                 routes=[{"path": "/helloworld.Greeter", "action": {"pass": "greeter"}}]))
    return cert.cert_pem


def test_grpc_through_nginx_with_tls_and_http2(env: Env, greeter: GreeterServer) -> None:
    cert_pem = _setup(env, greeter, http2=True)
    c = env.controller(nginx_configmaps=f"{NS}/nginx-config")
    ok = (grpc.StatusCode.OK, "greeter: hello user=alice")
    assert wait_until(lambda: _call(c, cert_pem, b"hello") == ok, "a gRPC call through NGINX")
    st = wait_vs_state(env, "grpc", "Valid", "AddedOrUpdated")
    assert st["message"] == f"Configuration for {NS}/grpc was added or updated "
    text = Path(c.manager.conf_dir, "conf.d", f"vs_{NS}_grpc.conf").read_text()
    assert 'grpc_pass "grpc://vs_demo_grpc_greeter";' in text
    assert f"listen {c.https_port} ssl http2;" in text        # NGINX 1.22 has no `http2 on;`
    # No endpoints: NGINX's 502 reaches the client as gRPC's UNAVAILABLE (NIC's @grpc_unavailable).
    env.endpoints("greeter", [])
    assert wait_until(lambda: _call(c, cert_pem, b"x") == (grpc.StatusCode.UNAVAILABLE, "unavailable"),
                      "UNAVAILABLE without endpoints")


def test_grpc_error_pages_for_mapped_codes_are_a_warning(env: Env, greeter: GreeterServer) -> None:
    cert_pem = _setup(env, greeter, http2=True)
    apply_vs(env, virtual_server("grpc", HOST, tls={"secret": "grpc-tls"},
                                 upstreams=[{"name": "greeter", "service": "greeter", "port": 80,
                                             "type": "grpc"}],
                                 routes=[{"path": "/helloworld.Greeter", "action": {"pass": "greeter"},
                                          "errorPages": [{"codes": [502, 418],
                                                          "return": {"code": 200, "body": "sorry"}}]}]))
    c = env.controller(nginx_configmaps=f"{NS}/nginx-config")
    st = wait_vs_state(env, "grpc", "Warning", "AddedOrUpdatedWithWarning")
    assert st["message"].endswith(
        f"; with warning(s): The error page configuration for the upstream vs_{NS}_grpc_greeter is ignored "
        "for status code(s) [502], which cannot be used for GRPC upstreams.")
    env.endpoints("greeter", [])
    assert wait_until(lambda: _call(c, cert_pem, b"x") == (grpc.StatusCode.UNAVAILABLE, "unavailable"),
                      "the gRPC mapping wins over the error page")


def test_grpc_without_http2_is_a_warning(env: Env, greeter: GreeterServer) -> None:
    _setup(env, greeter, http2=False)
    env.controller(nginx_configmaps=f"{NS}/nginx-config")
    st = wait_vs_state(env, "grpc", "Warning", "AddedOrUpdatedWithWarning")
    assert st["message"] == (f"Configuration for {NS}/grpc was added or updated ; with warning(s): gRPC "
                             f"cannot be configured for upstream vs_{NS}_grpc_greeter. gRPC requires enabled "
                             "HTTP/2 and TLS termination.")
