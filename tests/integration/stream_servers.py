"""Real TCP and UDP echo servers on 127.0.0.1 for the TransportServer tests: each answers with its name and
what it received, so a test sees which backend a connection reached."""

from __future__ import annotations

import socket
import socketserver
import threading
from typing import Any


class _TCPHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        data = self.request.recv(4096)
        self.request.sendall(f"{self.server.name}: ".encode() + data)  # type: ignore[attr-defined]


class _UDPHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        data, sock = self.request
        sock.sendto(f"{self.server.name}: ".encode() + data, self.client_address)  # type: ignore[attr-defined]


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Served:
    """A socketserver served by a daemon thread until `stop()`."""

    _server: Any
    _thread: threading.Thread

    def _serve(self, server: Any) -> None:
        self._server = server
        self.host = "127.0.0.1"
        self.port = int(server.server_address[1])
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def start(self) -> Any:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class EchoServer(_Served):
    """A TCP or UDP echo server on 127.0.0.1 (an ephemeral port); `name` tells it apart."""

    def __init__(self, name: str, protocol: str = "TCP") -> None:
        self.name = name
        self.protocol = protocol
        server: Any = (_TCPServer(("127.0.0.1", 0), _TCPHandler) if protocol == "TCP"
                       else socketserver.ThreadingUDPServer(("127.0.0.1", 0), _UDPHandler))
        server.name = name
        self._serve(server)

    def start(self) -> EchoServer:
        super().start()
        return self


def tcp_echo(port: int, message: bytes = b"hello", timeout: float = 5.0) -> str:
    """Send `message` over TCP to 127.0.0.1:port and return the reply ("" when the connection fails)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            # No half-close: NGINX's stream proxy ends the session on it (proxy_half_close off).
            s.sendall(message)
            chunks = []
            while chunk := s.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode()
    except OSError:
        return ""


def udp_echo(port: int, message: bytes = b"hello", timeout: float = 1.0) -> str:
    """Send one datagram to 127.0.0.1:port and return the reply ("" on timeout or error)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        try:
            s.sendto(message, ("127.0.0.1", port))
            return s.recv(4096).decode()
        except OSError:
            return ""


class TLSEchoServer(_Served):
    """A TLS server on 127.0.0.1 with its own certificate: it answers `<name>: <what it received>`."""

    def __init__(self, name: str, cert_pem: bytes, key_pem: bytes, tmp: str) -> None:
        import os
        import ssl

        self.name = name
        cert_file, key_file = os.path.join(tmp, f"{name}.crt"), os.path.join(tmp, f"{name}.key")
        with open(cert_file, "wb") as f:
            f.write(cert_pem)
        with open(key_file, "wb") as f:
            f.write(key_pem)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert_file, key_file)
        ctx_ = ctx

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                try:
                    with ctx_.wrap_socket(self.request, server_side=True) as tls:
                        data = tls.recv(4096)
                        tls.sendall(f"{name}: ".encode() + data)
                except (OSError, ssl.SSLError):
                    pass

        self._serve(_TCPServer(("127.0.0.1", 0), Handler))

    def start(self) -> TLSEchoServer:
        super().start()
        return self


def tls_echo(port: int, sni: str, message: bytes = b"hello", timeout: float = 5.0) -> tuple[str, bytes]:
    """Connect over TLS with SNI `sni` (no verification); the reply and the server certificate (DER)."""
    import ssl

    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw, \
                ctx.wrap_socket(raw, server_hostname=sni) as tls:
            der = tls.getpeercert(binary_form=True) or b""
            tls.sendall(message)
            chunks = []
            while chunk := tls.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode(), der
    except (OSError, ssl.SSLError):
        return "", b""
