"""The admission webhook's HTTPS server under hostile input: HTTP framing errors get their status codes, and
random and hostile AdmissionReviews (huge bodies, wrong kinds, snippets, injection strings, non-JSON) are each
answered correctly, while an audit hook proves that no webhook thread opens a file for writing or starts a
process."""

from __future__ import annotations

import http.client
import json
import os
import ssl
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingressctl.controller.configuration import Configuration
from ingressctl.webhook.admission import review
from ingressctl.webhook.server import AdmissionWebhookServer
from tests.webhooks import WebhookCert, ingress, webhook_cert
from tests.webhooks import review as make_review

# ------------------------------------------------------------------------------------------ audit hook
# Events from threads of the webhook pool: a file opened for writing, or a process started in any way.
_FORBIDDEN: list[tuple[str, str]] = []
_PROCESS_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                   "os.forkpty", "pty.spawn", "ctypes.dlopen")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not threading.current_thread().name.startswith("admission-webhook"):
        return
    if event in _PROCESS_EVENTS:
        _FORBIDDEN.append((event, repr(args)[:200]))
    elif event == "open":
        mode, flags = args[1], args[2]
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int)
                                                                           and flags & _WRITE_FLAGS):
            _FORBIDDEN.append((event, repr(args)[:200]))


if not getattr(sys, "_ingressctl_webhook_audit", False):
    sys.addaudithook(_audit)
    sys._ingressctl_webhook_audit = True  # type: ignore[attr-defined]


def test_the_audit_hook_sees_a_webhook_thread_write(tmp_path: Any) -> None:
    """The positive control: the hook does catch what the other tests assert never happens."""
    before = len(_FORBIDDEN)

    def write() -> None:
        with open(tmp_path / "x", "w") as f:
            f.write("x")

    t = threading.Thread(target=write, name="admission-webhook-probe")
    t.start()
    t.join()
    assert len(_FORBIDDEN) == before + 1
    del _FORBIDDEN[before:]


# ------------------------------------------------------------------------------------------ server

MAX_BODY = 256 * 1024


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> WebhookCert:
    return webhook_cert(str(tmp_path_factory.mktemp("webhook-cert")), "127.0.0.1")


@pytest.fixture(scope="module")
def config() -> Configuration:
    c = Configuration(ingress_class="nginx")
    owner = ingress("owner", "taken.example.com")
    owner["metadata"].update(creationTimestamp="2020-01-01T00:00:00Z", uid="u-owner")
    c.add_or_update_ingress(owner)
    c.set_startup_complete()
    return c


@pytest.fixture(scope="module")
def server(cert: WebhookCert, config: Configuration) -> Iterator[AdmissionWebhookServer]:
    s = AdmissionWebhookServer(config=config, cert_file=cert.cert_file, key_file=cert.key_file,
                               host="127.0.0.1", port=0, max_body_bytes=MAX_BODY, workers=4)
    s.start()
    yield s
    s.stop()


class Client:
    def __init__(self, port: int, cert: WebhookCert) -> None:
        self.port = port
        self.ctx = ssl.create_default_context(cadata=cert.ca_pem.decode())
        self.conn: http.client.HTTPSConnection | None = None

    def send(self, body: bytes, *, method: str = "POST", path: str = "/validate",
             headers: dict[str, str] | None = None) -> tuple[int, Any]:
        for attempt in (1, 2):   # the server closes a connection after a refusal: reconnect once
            if self.conn is None:
                self.conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=30)
            try:
                self.conn.request(method, path, body, {"Content-Type": "application/json", **(headers or {})})
                resp = self.conn.getresponse()
                data = resp.read()
                if resp.getheader("Connection", "").lower() == "close":
                    self.close()
                return resp.status, json.loads(data) if data else None
            except (http.client.HTTPException, OSError):
                self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


@pytest.fixture
def client(server: AdmissionWebhookServer, cert: WebhookCert) -> Iterator[Client]:
    c = Client(server.port, cert)
    yield c
    c.close()


@pytest.fixture(autouse=True)
def no_writes_or_processes() -> Iterator[None]:
    before = len(_FORBIDDEN)
    yield
    assert _FORBIDDEN[before:] == [], "a webhook thread wrote a file or started a process"


def _raw(port: int, cert: WebhookCert, head: bytes) -> bytes:
    """Send raw bytes (a request head without its body) and return the first response bytes."""
    import socket

    ctx = ssl.create_default_context(cadata=cert.ca_pem.decode())
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(head)
        return tls.recv(4096)


def test_http_framing_errors(server: AdmissionWebhookServer, client: Client, cert: WebhookCert) -> None:
    good = json.dumps(make_review(ingress("web", "a.example.com"))).encode()
    assert client.send(good)[0] == 200
    assert client.send(good, path="/mutate")[0] == 404
    assert client.send(good, method="PUT")[0] == 405
    assert client.send(b"", method="GET")[0] == 405
    assert client.send(good, headers={"Content-Type": "application/yaml"})[0] == 415
    assert client.send(b"{")[0] == 400
    assert client.send(b"\xff\xfe")[0] == 400
    assert client.send(b"[" * 100000 + b"]" * 100000)[0] == 400
    head = b"POST /validate HTTP/1.1\r\nHost: x\r\n"
    too_big = _raw(server.port, cert, head + b"Content-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % (MAX_BODY + 1))
    assert too_big.startswith(b"HTTP/1.1 413")
    no_length = _raw(server.port, cert, head + b"\r\n")
    assert no_length.startswith(b"HTTP/1.1 400")
    chunked = _raw(server.port, cert, head + b"Transfer-Encoding: chunked\r\n\r\n")
    assert chunked.startswith(b"HTTP/1.1 400")
    # The server is unharmed.
    assert client.send(good)[0] == 200


def test_a_large_review_below_the_limit_is_answered(client: Client) -> None:
    big = ingress("web", "a.example.com", annotations={"nginx.org/server-snippets": "#" * (MAX_BODY - 2000)})
    code, answer = client.send(json.dumps(make_review(big)).encode())
    assert code == 200 and answer["response"]["allowed"] is False


# ------------------------------------------------------------------------------------------ fuzzing

HOSTILE = [
    "}\nload_module /tmp/evil.so;\nserver {", "ssl_engine ../../../../proc/self/fd/3;", "$(id)", "`reboot`",
    "'; DROP TABLE x; --", "${jndi:ldap://x}", "\x00", "\r\nX-Injected: 1", "a" * 5000, "../../etc/passwd",
    "${host}${request_uri};return 302 http://evil", "location / { proxy_pass http://evil; }",
    "\u202e\u0000\ufffd",
    "/*", "*", "{{ config }}", "%(x)s", "\\", "\"", "1e999", "-1", "NaN",
]
ANNOTATIONS = [
    "nginx.org/server-snippets", "nginx.org/location-snippets", "nginx.org/rewrites",
    "nginx.org/proxy-connect-timeout", "nginx.org/lb-method", "nginx.org/proxy-set-headers",
    "nginx.org/basic-auth-secret", "nginx.org/limit-req-rate",
    "nginx.org/mergeable-ingress-type", "nginx.org/server-tokens", "kubernetes.io/ingress.class", "x/y",
]
texts = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=60))
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
                           lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(texts, inner, max_size=4),
                           max_leaves=20)


@st.composite
def hostile_ingresses(draw: st.DrawFn) -> dict[str, Any]:
    obj = ingress(draw(st.sampled_from(["web", "x" * 300, "UPPER"])),
                  draw(st.one_of(st.sampled_from(["a.example.com", "taken.example.com"]), texts)),
                  annotations=draw(st.dictionaries(st.sampled_from(ANNOTATIONS), texts, max_size=4)))
    path = obj["spec"]["rules"][0]["http"]["paths"][0]
    path["path"] = draw(st.one_of(st.just("/"), texts))
    path["pathType"] = draw(st.sampled_from(["Prefix", "Exact", "ImplementationSpecific", "Regex"]))
    if draw(st.booleans()):
        obj["spec"][draw(texts)] = draw(json_values)
    if draw(st.booleans()):
        obj["spec"]["rules"].append(draw(json_values))
    return obj


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return draw(st.binary(max_size=200))
    if choice == 1:
        return json.dumps(draw(json_values)).encode()
    if choice == 2:   # the envelope with random parts
        body = make_review(draw(json_values),
                           operation=draw(st.sampled_from(["CREATE", "UPDATE", "DELETE", "X"])),
                           old=draw(json_values),
                           kind=draw(st.sampled_from(["Ingress", "Secret", "VirtualServer"])),
                           group=draw(st.sampled_from(["networking.k8s.io", "", "k8s.nginx.org"])))
        if draw(st.booleans()):
            body["request"][draw(st.sampled_from(["uid", "kind", "request", "object"]))] = draw(json_values)
        return json.dumps(body).encode()
    op = draw(st.sampled_from(["CREATE", "UPDATE"]))
    obj = draw(hostile_ingresses())
    return json.dumps(make_review(obj, operation=op, old=obj if op == "UPDATE" else None)).encode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(body=bodies())
def test_random_and_hostile_reviews_are_answered_correctly(client: Client, config: Configuration,
                                                           body: bytes) -> None:
    code, answer = client.send(body)
    try:
        decoded = json.loads(body)
        expected: dict[str, Any] | None = review(decoded, config)
    except Exception:
        expected = None
    if expected is None:
        assert code == 400 and "error" in answer
        return
    assert code == 200
    assert answer == expected
    response = answer["response"]
    assert response["uid"] == decoded["request"]["uid"]
    request = decoded["request"]
    obj = request.get("object")
    if (request["operation"] in ("CREATE", "UPDATE") and request["kind"].get("kind") == "Ingress"
            and request["kind"].get("group") == "networking.k8s.io" and isinstance(obj, dict)
            and config.has_correct_ingress_class(obj)):
        annotations = obj["metadata"].get("annotations") or {}
        # Snippets are disabled: any snippet annotation is refused, whatever it holds.
        if any(k.endswith("-snippets") for k in annotations):
            assert response["allowed"] is False
        if any(h in annotations.get("nginx.org/proxy-connect-timeout", "ok1s") for h in ("}", ";", "\n")):
            assert response["allowed"] is False
    else:
        assert response["allowed"] is True


def test_a_rotated_certificate_is_used_for_new_connections(tmp_path: Any, config: Configuration) -> None:
    first = webhook_cert(str(tmp_path), "127.0.0.1")
    s = AdmissionWebhookServer(config=config, cert_file=first.cert_file, key_file=first.key_file,
                               host="127.0.0.1", port=0, workers=2)
    s.start()
    try:
        good = json.dumps(make_review(ingress("web", "a.example.com"))).encode()
        old_client = Client(s.port, first)
        assert old_client.send(good)[0] == 200
        old_client.close()
        second = webhook_cert(str(tmp_path), "127.0.0.1")   # overwrites both files with another CA's pair
        new_client = Client(s.port, second)
        assert new_client.send(good)[0] == 200
        new_client.close()
        with pytest.raises(ssl.SSLCertVerificationError):
            Client(s.port, first).send(good)
    finally:
        s.stop()
