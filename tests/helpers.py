"""Test helpers shared by the suites: free ports, polling with a deadline, self-signed certificates, HTTP(S)
through NGINX.

Everything binds 127.0.0.1, on ports outside the kernel's ephemeral range (see `free_ports`).
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import datetime
import functools
import http.client
import os
import random
import shutil
import socket
import ssl
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

DEADLINE = 60.0


EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
_LOWEST_PICKED = 10000  # below: well-known ports and the demo's defaults
_given: set[int] = set()
_pick = random.SystemRandom()


@functools.cache
def _candidate_ports() -> tuple[int, ...]:
    """The ports `free_ports` picks from: from _LOWEST_PICKED up, outside the ephemeral range (read once)."""
    low, high = _ephemeral_range()
    return tuple(p for p in range(_LOWEST_PICKED, 65536) if not low <= p <= high)


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open(EPHEMERAL_RANGE_FILE) as f:
            low, high = (int(x) for x in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_ports(n: int) -> list[int]:
    """`n` distinct ports that were free a moment ago, for processes that bind by number (NGINX, the
    controller's metrics and readiness servers).

    They are picked outside the kernel's ephemeral range: an outgoing connection takes its local port from
    that range, so a port from it (what binding port 0 returns) can be taken by any client connection before
    the process it was meant for binds it ("Address already in use"). Each port is handed out once per test
    process, and all `n` are held bound together while picked."""
    candidates = _candidate_ports()
    if len(candidates) - len(_given) < 1000:  # the ephemeral range covers (nearly) everything
        return _kernel_ports(n)
    ports: list[int] = []
    with contextlib.ExitStack() as stack:
        while len(ports) < n:
            port = _pick.choice(candidates)
            if port in ports or port in _given:
                continue
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            ports.append(port)
    _given.update(ports)
    return ports


def free_port() -> int:
    """One port as `free_ports` picks them."""
    return free_ports(1)[0]


def _kernel_ports(n: int) -> list[int]:
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]


def scratch_dir(prefix: str) -> str:
    """A new directory directly under /tmp (unix socket paths inside it stay short), removed with its
    contents when the test process exits."""
    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    atexit.register(shutil.rmtree, d, True)
    return d


def wait_until(cond: Callable[[], T], what: str, deadline: float = DEADLINE, interval: float = 0.05) -> T:
    """Poll `cond` until it returns something truthy; fail with `what` and the last value at the deadline."""
    end = time.monotonic() + deadline
    last: Any = None
    while True:
        try:
            last = cond()
        except Exception as e:  # a condition may race with start-up (connection refused, ...)
            last = e
        else:
            if last:
                return last
        if time.monotonic() >= end:
            raise AssertionError(f"timed out after {deadline}s waiting for: {what} (last: {last!r})")
        time.sleep(interval)


@dataclass
class Response:
    status: int
    body: str
    headers: dict[str, str]

    @property
    def backend(self) -> str:
        """The demo backend's name (first word of its answer), or "" for anything else."""
        return self.headers.get("x-backend", "")


def http_get(port: int, host: str, path: str = "/", timeout: float = 10.0, cookie: str = "", *,
             headers: dict[str, str] | None = None, source: str | None = None,
             method: str = "GET") -> Response:
    """GET (or `method`) from 127.0.0.1, or from the client address `source` (any 127.0.0.0/8 address
    reaches a server listening on loopback), with a Cookie and extra request headers."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                      source_address=(source, 0) if source else None)
    try:
        conn.request(method, path, headers={"Host": host, "Connection": "close",
                                           **({"Cookie": cookie} if cookie else {}), **(headers or {})})
        r = conn.getresponse()
        body = r.read().decode(errors="replace")
        return Response(r.status, body, {k.lower(): v for k, v in r.getheaders()})
    finally:
        conn.close()


@dataclass
class TLSResponse(Response):
    peer_cert_der: bytes = b""


def https_get(port: int, host: str, path: str = "/", timeout: float = 10.0) -> TLSResponse:
    """GET over TLS to 127.0.0.1 with SNI `host`; the server certificate is returned, not verified."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    with ctx.wrap_socket(raw, server_hostname=host) as tls:
        der = tls.getpeercert(binary_form=True) or b""
        tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        chunks = []
        while True:
            data = tls.recv(65536)
            if not data:
                break
            chunks.append(data)
    raw_resp = b"".join(chunks).decode(errors="replace")
    head, _, body = raw_resp.partition("\r\n\r\n")
    lines = head.split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return TLSResponse(status, body, headers, der)


@dataclass
class Cert:
    cert_pem: bytes
    key_pem: bytes
    der: bytes

    def secret(self, name: str, namespace: str) -> dict[str, Any]:
        return tls_secret(name, namespace, self.cert_pem, self.key_pem)


def make_cert(host: str, *also: str) -> Cert:
    """A self-signed certificate for `host` (CN and SAN; `also`: more SAN names) and its RSA key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in (host, *also)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Cert(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                  serialization.NoEncryption()),
        der=cert.public_bytes(serialization.Encoding.DER),
    )


def tls_secret(name: str, namespace: str, cert_pem: bytes, key_pem: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"tls.crt": base64.b64encode(cert_pem).decode(),
                 "tls.key": base64.b64encode(key_pem).decode()},
    }


def process_gone(pid: int) -> bool:
    """The process no longer exists, or is a zombie (exited, not yet reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # the name in () may contain spaces
    except OSError:
        return True


def contained(small: Any, big: Any) -> bool:
    """`small` is contained in `big`: every key of a dict (recursively), lists item by item, equal scalars."""
    if isinstance(small, dict):
        return isinstance(big, dict) and all(k in big and contained(v, big[k]) for k, v in small.items())
    if isinstance(small, list):
        return isinstance(big, list) and len(small) == len(big) and all(map(contained, small, big))
    return bool(small == big)
