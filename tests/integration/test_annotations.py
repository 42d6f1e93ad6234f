"""Each nginx.org/* annotation family observed through real requests through a real NGINX (the Manager and the
Configurator, real backends on 127.0.0.1, ephemeral ports): timeouts (504), body size (413), redirects (301
and Location), HSTS, basic auth (401/200 with a real {SHA} htpasswd, 403 without the file), rewrites (the
backend sees the rewritten path), WebSocket upgrade (101 and an echoed frame), rate limiting (429), proxy
headers, server tokens, lb-method, keepalive, max-conns, max-fails, listen-ports, path-regex, TLS to the
backend, a ConfigMap change (one reload) and a ConfigMap ingress-template."""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import shutil
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams, parse_config_map
from ingressctl.configs.configurator import Configurator, ReloadOutcome
from ingressctl.configs.templates import TEMPLATES_DIR, TemplateExecutor
from ingressctl.http_serving import serve_in_background
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.nginx.manager import Manager
from ingressctl.secret_types import SecretReference
from tests.helpers import free_port, make_cert, wait_until

pytestmark = [pytest.mark.integration,  # DH parameters for ssl-dhparam-file are FFDH, deprecated there
              pytest.mark.filterwarnings("ignore:Diffie-Hellman over finite fields")]

TIMEOUT = 15.0  # per request: a guard against hanging, not a speed assertion
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


# ------------------------------------------------------------------------------------------------ backends

@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body_length: int
    peer_port: int


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep connections open, so upstream keepalive is observable

    server: _BackendServer

    def _answer(self) -> None:
        srv = self.server
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        srv.record(Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, length,
                        self.client_address[1]))
        if self.headers.get("Upgrade", "").lower() == "websocket":
            self._websocket()
            return
        delay = srv.delay
        query = parse_qs(urlsplit(self.path).query)
        if "sleep" in query:
            delay = float(query["sleep"][0])
        if delay:
            time.sleep(delay)  # a slow backend (what a timeout test needs), not a test waiting
        body = f"{srv.name} {self.path}\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Backend", srv.name)
        self.send_header("X-Secret", "s3cr3t")
        self.send_header("X-Accel-Buffering", "yes")  # NGINX hides X-Accel-* by default
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def _websocket(self) -> None:
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        data = self.connection.recv(4096)  # echo one message back, byte for byte
        self.connection.sendall(data)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _BackendServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, name: str, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.name = name
        self.delay = 0.0
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True)

    def record(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"

    def requests(self) -> list[Seen]:
        with self._lock:
            return list(self.seen)


@pytest.fixture
def backends() -> Iterator[dict[str, _BackendServer]]:
    servers: dict[str, _BackendServer] = {}
    for name in ("tea", "coffee", "slow", "juice"):
        servers[name] = _BackendServer(name)
    cert = make_cert("localhost")
    cert_dir = tempfile.mkdtemp(prefix="bk-")
    with open(f"{cert_dir}/c.pem", "wb") as f:
        f.write(cert.cert_pem + cert.key_pem)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(f"{cert_dir}/c.pem")
    servers["secure"] = _BackendServer("secure", tls=ctx)
    for s in servers.values():
        serve_in_background(s, f"backend-{s.name}")
    yield servers
    for s in servers.values():
        s.shutdown()
        s.server_close()
    shutil.rmtree(cert_dir, ignore_errors=True)


# ------------------------------------------------------------------------------------------------- NGINX

@dataclass
class Response:
    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Env:
    manager: Manager
    configurator: Configurator
    http_port: int
    https_port: int

    def apply(self, *exes: IngressEx) -> ReloadOutcome:
        self.configurator.add_or_update_ingresses(list(exes))
        outcome = self.configurator.reload_if_needed()
        assert outcome.failed == {} and outcome.error == "", outcome
        return outcome

    def request(self, host: str, path: str = "/", *, method: str = "GET", body: bytes | None = None,
                headers: dict[str, str] | None = None, port: int | None = None,
                tls: bool = False) -> Response:
        port = port or (self.https_port if tls else self.http_port)
        if tls:
            ctx = ssl._create_unverified_context()
            conn: http.client.HTTPConnection = http.client.HTTPSConnection("127.0.0.1", port, timeout=TIMEOUT,
                                                                           context=ctx)
            sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
            conn.sock = ctx.wrap_socket(sock, server_hostname=host)
        else:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
        try:
            conn.request(method, path, body=body,
                         headers={"Host": host, "Connection": "close", **(headers or {})})
            r = conn.getresponse()
            return Response(r.status, r.read().decode(errors="replace"),
                            {k.lower(): v for k, v in r.getheaders()})
        finally:
            conn.close()


def make_env(*, config: ConfigParams | None = None) -> Iterator[Env]:
    base = tempfile.mkdtemp(prefix="ia-")  # short: unix socket paths must fit in 107 bytes
    manager = Manager(binary="nginx", conf_dir=f"{base}/conf", run_dir=f"{base}/run", reload_timeout_ms=30000)
    http_port, https_port = free_port(), free_port()
    # Workers must read htpasswd files in the (0700) secrets dir: run them as the user that owns it.
    worker_user = "root" if os.geteuid() == 0 else ""
    static = StaticConfigParams(http_port=http_port, https_port=https_port, nginx_status=False,
                                worker_user=worker_user)
    configurator = Configurator(manager, static, config or ConfigParams(), TemplateExecutor())
    manager.start()
    try:
        yield Env(manager, configurator, http_port, https_port)
    finally:
        manager.quit(timeout=10)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def env() -> Iterator[Env]:
    yield from make_env()


def ingress(name: str, host: str, paths: list[tuple[str, str, str]], bk: dict[str, _BackendServer], *,
            annotations: dict[str, str] | None = None, tls: SecretReference | None = None,
            endpoints: dict[str, list[str]] | None = None,
            refs: dict[str, SecretReference] | None = None) -> IngressEx:
    """paths: (path, pathType, service); each service on port 80 with its backend as the endpoint."""
    spec: dict[str, Any] = {"rules": [{"host": host, "http": {"paths": [
        {"path": p, "pathType": t, "backend": {"service": {"name": svc, "port": {"number": 80}}}}
        for p, t, svc in paths]}}]}
    secret_refs = dict(refs or {})
    if tls is not None:
        spec["tls"] = [{"hosts": [host], "secretName": "tls"}]
        secret_refs["tls"] = tls
    obj = {"metadata": {"namespace": "default", "name": name, "annotations": annotations or {}}, "spec": spec}
    eps = endpoints if endpoints is not None else {
        backend_key(svc, 80): [bk[svc].address] for _, _, svc in paths}
    return IngressEx(obj, {host: True}, eps, secret_refs=secret_refs)


def tls_ref(env: Env, host: str) -> SecretReference:
    cert = make_cert(host)
    pem = env.manager.create_secret(f"default-{host}", cert.cert_pem + b"\n" + cert.key_pem)
    return SecretReference(f"default/{host}", pem, secret_type="kubernetes.io/tls")


# ------------------------------------------------------------------------------------------------- tests

def test_proxy_read_timeout_gives_504_and_a_longer_one_waits(env: Env,
                                                             backends: dict[str, _BackendServer]) -> None:
    env.apply(
        ingress("impatient", "impatient.example.com", [("/", "Prefix", "slow")], backends,
                annotations={"nginx.org/proxy-read-timeout": "1s"}),
        ingress("patient", "patient.example.com", [("/", "Prefix", "slow")], backends,
                annotations={"nginx.org/proxy-read-timeout": "30s", "nginx.org/proxy-connect-timeout": "5s"}),
    )
    assert env.request("impatient.example.com", "/x?sleep=3").status == 504
    r = env.request("patient.example.com", "/x?sleep=1.5")
    assert r.status == 200 and r.body == "slow /x?sleep=1.5\n"


def test_client_max_body_size_gives_413(env: Env, backends: dict[str, _BackendServer]) -> None:
    env.apply(ingress("upload", "upload.example.com", [("/", "Prefix", "tea")], backends,
                      annotations={"nginx.org/client-max-body-size": "1k"}))
    assert env.request("upload.example.com", "/up", method="POST", body=b"x" * 2000).status == 413
    assert env.request("upload.example.com", "/up", method="POST", body=b"x" * 500).status == 200
    assert [s.body_length for s in backends["tea"].requests()] == [500]


def test_redirects(env: Env, backends: dict[str, _BackendServer]) -> None:
    secure = tls_ref(env, "secure.example.com")
    env.apply(
        ingress("behind-lb", "behind-lb.example.com", [("/", "Prefix", "tea")], backends,
                annotations={"nginx.org/redirect-to-https": "true"}),
        ingress("secure", "secure.example.com", [("/", "Prefix", "coffee")], backends, tls=secure),
        ingress("lenient", "lenient.example.com", [("/", "Prefix", "juice")], backends,
                tls=tls_ref(env, "lenient.example.com"),
                annotations={"ingress.kubernetes.io/ssl-redirect": "false"}),
    )
    # redirect-to-https: by X-Forwarded-Proto (a TLS-terminating load balancer in front).
    r = env.request("behind-lb.example.com", "/cart?id=1", headers={"X-Forwarded-Proto": "http"})
    assert r.status == 301 and r.headers["location"] == "https://behind-lb.example.com/cart?id=1"
    r = env.request("behind-lb.example.com", "/cart", headers={"X-Forwarded-Proto": "https"})
    assert r.status == 200 and backends["tea"].requests()[-1].headers["x-forwarded-proto"] == "https"
    # ssl-redirect (default true): plain HTTP to a TLS host goes to https with the TLS port.
    r = env.request("secure.example.com", "/pay?x=2")
    assert r.status == 301 and r.headers["location"] == f"https://secure.example.com:{env.https_port}/pay?x=2"
    r = env.request("secure.example.com", "/pay", tls=True)
    assert r.status == 200 and r.body == "coffee /pay\n"
    # ingress.kubernetes.io/ssl-redirect: "false" serves plain HTTP.
    assert env.request("lenient.example.com", "/x").status == 200


def test_hsts(env: Env, backends: dict[str, _BackendServer]) -> None:
    env.apply(
        ingress("strict", "strict.example.com", [("/", "Prefix", "tea")], backends,
                tls=tls_ref(env, "strict.example.com"),
                annotations={"nginx.org/hsts": "true", "nginx.org/hsts-max-age": "100",
                             "nginx.org/hsts-include-subdomains": "true",
                             "ingress.kubernetes.io/ssl-redirect": "false"}),
        ingress("proxied", "proxied.example.com", [("/", "Prefix", "coffee")], backends,
                annotations={"nginx.org/hsts": "true", "nginx.org/hsts-behind-proxy": "true"}),
    )
    r = env.request("strict.example.com", "/", tls=True)
    assert r.status == 200
    assert r.headers["strict-transport-security"] == "max-age=100; includeSubDomains; preload"
    assert "strict-transport-security" not in env.request("strict.example.com", "/").headers  # plain HTTP
    r = env.request("proxied.example.com", "/", headers={"X-Forwarded-Proto": "https"})
    assert r.headers["strict-transport-security"] == "max-age=2592000; preload"
    assert "strict-transport-security" not in env.request("proxied.example.com", "/").headers


def test_basic_auth(env: Env, backends: dict[str, _BackendServer]) -> None:
    digest = base64.b64encode(hashlib.sha1(b"s3cret").digest()).decode()
    path = env.manager.create_secret("default-users", f"alice:{{SHA}}{digest}\n".encode(), 0o644)
    users = SecretReference("default/users", path, secret_type="nginx.org/htpasswd")
    anns = {"nginx.org/basic-auth-secret": "users", "nginx.org/basic-auth-realm": "Cafe staff"}
    env.configurator.add_or_update_ingress(ingress("private", "private.example.com", [("/", "Prefix", "tea")],
                                                   backends, annotations=anns, refs={"users": users}))
    warnings = env.configurator.add_or_update_ingress(
        ingress("nosecret", "nosecret.example.com", [("/", "Prefix", "tea")], backends,
                annotations={"nginx.org/basic-auth-secret": "missing"}))
    assert warnings == [
        "Basic auth secret missing is invalid: secret doesn't exist or of an unsupported type"]
    assert env.configurator.reload_if_needed().reloaded

    def auth(user: str, password: str) -> dict[str, str]:
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}

    r = env.request("private.example.com", "/menu")
    assert r.status == 401 and r.headers["www-authenticate"] == 'Basic realm="Cafe staff"'
    assert env.request("private.example.com", "/menu", headers=auth("alice", "wrong")).status == 401
    assert env.request("private.example.com", "/menu", headers=auth("bob", "s3cret")).status == 401
    r = env.request("private.example.com", "/menu", headers=auth("alice", "s3cret"))
    assert r.status == 200 and r.body == "tea /menu\n"
    # A missing Secret fails closed: NGINX cannot open the file (403), and nothing is served.
    assert env.request("nosecret.example.com", "/menu", headers=auth("alice", "s3cret")).status == 403
    assert all(s.path == "/menu" for s in backends["tea"].requests()) and len(backends["tea"].requests()) == 1


def test_rewrites_reach_the_backend(env: Env, backends: dict[str, _BackendServer]) -> None:
    env.apply(ingress("rw", "rw.example.com", [("/app", "Prefix", "tea"), ("/shop", "Prefix", "coffee")],
                      backends, annotations={"nginx.org/rewrites": "serviceName=tea rewrite=/v2;"
                                                                   "serviceName=coffee rewrite=/"}))
    assert env.request("rw.example.com", "/app/orders/1?x=y").body == "tea /v2/orders/1?x=y\n"
    assert env.request("rw.example.com", "/app").body == "tea /v2\n"
    assert env.request("rw.example.com", "/shop/cart").body == "coffee /cart\n"


def test_websocket_upgrade(env: Env, backends: dict[str, _BackendServer]) -> None:
    env.apply(ingress("chat", "chat.example.com", [("/ws", "Prefix", "juice")], backends,
                      annotations={"nginx.org/websocket-services": "juice"}))
    key = base64.b64encode(os.urandom(16)).decode()
    with socket.create_connection(("127.0.0.1", env.http_port), timeout=TIMEOUT) as s:
        s.sendall((f"GET /ws/room HTTP/1.1\r\nHost: chat.example.com\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            assert chunk, head
            head += chunk
        lines = head.split(b"\r\n\r\n")[0].decode().split("\r\n")
        assert lines[0].startswith("HTTP/1.1 101")
        headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        expected = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        assert headers["sec-websocket-accept"] == expected and headers["upgrade"].lower() == "websocket"
        # A masked text frame "hello" goes through the tunnel and comes back unchanged.
        mask = os.urandom(4)
        frame = bytes([0x81, 0x80 | 5]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(b"hello"))
        s.sendall(frame)
        echoed = b""
        while len(echoed) < len(frame):
            chunk = s.recv(4096)
            assert chunk
            echoed += chunk
        assert echoed == frame
    seen = backends["juice"].requests()[-1]
    assert seen.headers["upgrade"] == "websocket" and seen.headers["connection"].lower() == "upgrade"


def test_rate_limiting(env: Env, backends: dict[str, _BackendServer]) -> None:
    env.apply(
        ingress("limited", "limited.example.com", [("/", "Prefix", "tea")], backends,
                annotations={"nginx.org/limit-req-rate": "1r/m"}),
        ingress("custom", "custom.example.com", [("/", "Prefix", "tea")], backends,
                annotations={"nginx.org/limit-req-rate": "1r/m", "nginx.org/limit-req-reject-code": "503"}),
        ingress("dry", "dry.example.com", [("/", "Prefix", "tea")], backends,
                annotations={"nginx.org/limit-req-rate": "1r/m", "nginx.org/limit-req-dry-run": "true"}),
    )
    assert [env.request("limited.example.com", "/").status for _ in range(3)] == [200, 429, 429]
    assert [env.request("custom.example.com", "/").status for _ in range(2)] == [200, 503]
    assert [env.request("dry.example.com", "/").status for _ in range(3)] == [200, 200, 200]


def test_proxy_headers_and_server_tokens(env: Env, backends: dict[str, _BackendServer]) -> None:
    env.apply(
        ingress("hdr", "hdr.example.com", [("/", "Prefix", "tea")], backends, annotations={
            "nginx.org/proxy-set-headers": "X-Const: hello; {world}, X-Client",
            "nginx.org/proxy-hide-headers": "X-Secret", "nginx.org/proxy-pass-headers": "X-Accel-Buffering",
            "nginx.org/server-tokens": "false"}),
        ingress("plain", "plain.example.com", [("/", "Prefix", "coffee")], backends),
    )
    r = env.request("hdr.example.com", "/", headers={"X-Client": "from-client"})
    seen = backends["tea"].requests()[-1].headers
    assert seen["x-const"] == "hello; {world}" and seen["x-client"] == "from-client"
    assert "x-secret" not in r.headers and r.headers["x-accel-buffering"] == "yes"
    assert r.headers["server"] == "nginx"
    r = env.request("plain.example.com", "/")
    assert r.headers["x-secret"] == "s3cr3t" and "x-accel-buffering" not in r.headers  # NGINX's defaults
    assert r.headers["server"].startswith("nginx/")


def test_lb_method(env: Env, backends: dict[str, _BackendServer]) -> None:
    both = [backends["tea"].address, backends["coffee"].address]
    env.apply(
        ingress("rr", "rr.example.com", [("/", "Prefix", "tea")], backends,
                annotations={"nginx.org/lb-method": "round_robin"}, endpoints={backend_key("tea", 80): both}),
        ingress("sticky", "sticky.example.com", [("/", "Prefix", "tea")], backends,
                annotations={"nginx.org/lb-method": "hash $request_uri consistent"},
                endpoints={backend_key("tea", 80): both}),
    )
    rr = {env.request("rr.example.com", "/same").headers["x-backend"] for _ in range(6)}
    assert rr == {"tea", "coffee"}
    for uri in ("/a", "/b", "/c", "/d"):
        assert len({env.request("sticky.example.com", uri).headers["x-backend"] for _ in range(5)}) == 1


def test_keepalive_reuses_upstream_connections(env: Env, backends: dict[str, _BackendServer]) -> None:
    env.apply(
        ingress("ka", "ka.example.com", [("/", "Prefix", "tea")], backends,
                annotations={"nginx.org/keepalive": "8"}),
        ingress("noka", "noka.example.com", [("/", "Prefix", "coffee")], backends),
    )
    for _ in range(10):
        assert env.request("ka.example.com", "/").status == 200
        assert env.request("noka.example.com", "/").status == 200
    # Without keepalive every request opens a new upstream connection; with it, each NGINX worker reuses one.
    assert len({s.peer_port for s in backends["coffee"].requests()}) == 10
    workers = os.cpu_count() or 1  # worker_processes auto
    assert len({s.peer_port for s in backends["tea"].requests()}) <= min(workers, 9)
    assert backends["tea"].requests()[-1].headers.get("connection", "") != "close"


def test_max_conns(env: Env, backends: dict[str, _BackendServer]) -> None:
    env.apply(ingress("narrow", "narrow.example.com", [("/", "Prefix", "slow")], backends,
                      annotations={"nginx.org/max-conns": "1"}))
    results: list[int] = []
    t = threading.Thread(target=lambda: results.append(env.request("narrow.example.com", "/?sleep=2").status))
    t.start()
    wait_until(lambda: backends["slow"].requests(), "the first request reached the backend")
    # The only server is at its limit: NGINX has no live upstream for a second request.
    assert env.request("narrow.example.com", "/second").status == 502
    t.join(TIMEOUT)
    assert results == [200]


def test_max_fails_takes_a_failing_server_out(env: Env, backends: dict[str, _BackendServer]) -> None:
    backends["slow"].delay = 5.0  # every request to it times out (proxy-read-timeout 1s)
    servers = [backends["slow"].address, backends["tea"].address]
    common = {"nginx.org/lb-method": "round_robin", "nginx.org/proxy-read-timeout": "1s"}
    env.apply(
        ingress("guarded", "guarded.example.com", [("/", "Prefix", "tea")], backends,
                annotations={**common, "nginx.org/max-fails": "1", "nginx.org/fail-timeout": "60s"},
                endpoints={backend_key("tea", 80): servers}),
    )
    # Each request is answered by tea (NGINX retries a timed-out server on the next one); after its first
    # failure the slow server is out of rotation for fail-timeout.
    for _ in range(6):
        assert env.request("guarded.example.com", "/").headers["x-backend"] == "tea"
    assert len(backends["slow"].requests()) == 1
    # max-fails 0: never taken out, so round robin keeps sending it requests.
    env.apply(ingress("guarded", "guarded.example.com", [("/", "Prefix", "tea")], backends,
                      annotations={**common, "nginx.org/max-fails": "0"},
                      endpoints={backend_key("tea", 80): servers}))
    before = len(backends["slow"].requests())
    for _ in range(4):
        assert env.request("guarded.example.com", "/").headers["x-backend"] == "tea"
    assert len(backends["slow"].requests()) - before >= 2


def test_listen_ports(env: Env, backends: dict[str, _BackendServer]) -> None:
    extra = free_port()
    env.apply(ingress("alt", "alt.example.com", [("/", "Prefix", "juice")], backends,
                      annotations={"nginx.org/listen-ports": str(extra)}))
    r = env.request("alt.example.com", "/x", port=extra)
    assert r.status == 200 and r.body == "juice /x\n"
    r = env.request("alt.example.com", "/x")  # the default port: the default server, not this Ingress
    assert r.status == 404 and "juice" not in r.body


def test_path_regex(env: Env, backends: dict[str, _BackendServer]) -> None:
    env.apply(ingress("re", "re.example.com", [("/API/[0-9]+$", "ImplementationSpecific", "tea")], backends,
                      annotations={"nginx.org/path-regex": "case_insensitive"}))
    assert env.request("re.example.com", "/api/42").body == "tea /api/42\n"
    assert env.request("re.example.com", "/API/7").status == 200
    assert env.request("re.example.com", "/api/x").status == 404


def test_ssl_services(env: Env, backends: dict[str, _BackendServer]) -> None:
    env.apply(ingress("tls-backend", "tlsb.example.com", [("/", "Prefix", "secure")], backends,
                      annotations={"nginx.org/ssl-services": "secure"}))
    r = env.request("tlsb.example.com", "/enc")
    assert r.status == 200 and r.body == "secure /enc\n"


def test_config_map_change_rerenders_everything_with_one_reload(env: Env,
                                                                backends: dict[str, _BackendServer]) -> None:
    a = ingress("a", "a.example.com", [("/", "Prefix", "tea")], backends)
    b = ingress("b", "b.example.com", [("/", "Prefix", "coffee")], backends,
                annotations={"nginx.org/client-max-body-size": "10k"})
    env.apply(a, b)
    assert env.request("a.example.com", "/", method="POST", body=b"x" * 2000).status == 200
    params, errors = parse_config_map({"client-max-body-size": "1k", "server-tokens": "false",
                                       "proxy-read-timeout": "soon"})
    assert [k for k, _ in errors] == ["proxy-read-timeout"]
    count = env.manager.reload_count
    env.configurator.update_config(params, [a, b])
    assert env.configurator.reload_if_needed() == ReloadOutcome(reloaded=True)
    assert env.manager.reload_count == count + 1
    assert env.request("a.example.com", "/", method="POST", body=b"x" * 2000).status == 413
    assert env.request("b.example.com", "/", method="POST", body=b"x" * 2000).status == 200  # its annotation
    assert env.request("a.example.com", "/").headers["server"] == "nginx"
    assert env.request("unknown.example.com", "/").headers["server"] == "nginx"  # the main config too


def test_config_map_ingress_template(env: Env, backends: dict[str, _BackendServer]) -> None:
    a = ingress("a", "a.example.com", [("/", "Prefix", "tea")], backends)
    env.apply(a)
    with open(os.path.join(TEMPLATES_DIR, "ingress.conf.j2")) as f:
        builtin = f.read()
    custom = builtin.replace("    server_tokens {{",
                             "    add_header X-Template custom always;\n    server_tokens {{")
    assert custom != builtin
    warnings = env.configurator.update_config(ConfigParams(ingress_template=custom), [a])
    assert warnings == [] and env.configurator.reload_if_needed().reloaded
    assert env.request("a.example.com", "/").headers["x-template"] == "custom"
    # A template that does not compile: the built-in one is used, with a warning; NGINX keeps serving.
    warnings = env.configurator.update_config(ConfigParams(ingress_template="{% if %}"), [a])
    assert len(warnings) == 1 and warnings[0].startswith("ingress-template: ")
    env.configurator.reload_if_needed()
    r = env.request("a.example.com", "/")
    assert r.status == 200 and "x-template" not in r.headers


def test_config_map_ssl_dhparam_file(env: Env, backends: dict[str, _BackendServer]) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import dh

    from tests.integration.test_annotations_fuzz_nginx import ffdhe2048_prime

    pem = dh.DHParameterNumbers(ffdhe2048_prime(), 2).parameters().parameter_bytes(
        serialization.Encoding.PEM, serialization.ParameterFormat.PKCS3).decode()
    a = ingress("a", "a.example.com", [("/", "Prefix", "tea")], backends, tls=tls_ref(env, "a.example.com"))
    env.apply(a)
    params, errors = parse_config_map({"ssl-dhparam-file": pem, "ssl-ciphers": "HIGH:!aNULL"})
    assert errors == []
    env.configurator.update_config(params, [a])
    assert env.configurator.reload_if_needed() == ReloadOutcome(reloaded=True)
    path = os.path.join(env.manager.secrets_dir, "dhparam.pem")
    with open(path) as f:
        assert f.read() == pem if pem.endswith("\n") else pem + "\n"
    with open(env.manager.main_config_path) as f:
        assert f"ssl_dhparam {path};" in f.read()
    assert env.request("a.example.com", "/", tls=True).status == 200
