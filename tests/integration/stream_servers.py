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


class EchoServer:
    """A TCP or UDP echo server on 127.0.0.1 (an ephemeral port); `name` tells it apart."""

    def __init__(self, name: str, protocol: str = "TCP") -> None:
        self.name = name
        self.protocol = protocol
        server: Any = (_TCPServer(("127.0.0.1", 0), _TCPHandler) if protocol == "TCP"
                       else socketserver.ThreadingUDPServer(("127.0.0.1", 0), _UDPHandler))
        server.name = name
        self._server = server
        self.host = "127.0.0.1"
        self.port = int(server.server_address[1])
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def start(self) -> EchoServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


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
