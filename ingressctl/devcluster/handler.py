"""The HTTP plumbing of the devcluster's request handler: connection setup (TCP_NODELAY, TLS), framing of
bodies (Content-Length or chunked, within the server's size limit) and responses, and body decoding.

Guarantees: a body over the limit is refused with 413 and the connection closed (its framing is lost); a body
that cannot be decoded is a 400 (JSON, YAML) or 415 (an unknown media type, an unsupported protobuf message);
a failed request whose body was not read has it read and discarded, so the connection's next request is
framed right.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from http.server import BaseHTTPRequestHandler
from typing import Any

import yaml

from ingressctl.devcluster import errors, protobuf
from ingressctl.devcluster.decode import BodyIssues, loads_json, loads_yaml
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.objects import dumps
from ingressctl.devcluster.protobuf import ProtobufError
from ingressctl.devcluster.rbac import UserInfo
from ingressctl.devcluster.request import PATCH_TYPES
from ingressctl.devcluster.serving import Serving
from ingressctl.logging import get_logger

log = get_logger(__name__)

_REASONS = {200: "OK", 201: "Created", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized",
            403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
            409: "Conflict", 410: "Gone", 413: "Request Entity Too Large", 415: "Unsupported Media Type",
            422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error",
            502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}


class BaseHandler(BaseHTTPRequestHandler):
    """Connection plumbing, body framing and decoding; `server.Handler` adds routing and the verbs."""

    protocol_version = "HTTP/1.1"
    server: Serving
    server_version = "devcluster"
    user: UserInfo
    _warnings: list[str]
    _status: int
    _body_read: bool
    _body_issues: BodyIssues

    # ------------------------------------------------------------------------------------------- plumbing
    def setup(self) -> None:
        raw: socket.socket = self.request
        with contextlib.suppress(OSError):
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        raw.settimeout(self.server.config.idle_timeout)
        if self.server.ssl_context is not None:
            try:
                self.request = self.server.ssl_context.wrap_socket(raw, server_side=True)
            except (OSError, ssl.SSLError) as e:
                log.info("devcluster TLS handshake failed", client=str(self.client_address), error=str(e))
                with contextlib.suppress(OSError):
                    raw.close()
                raise
        self.connection = self.request
        self.server.track(self.connection, True)
        super().setup()

    def finish(self) -> None:
        self.server.track(self.connection, False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, code: int, body: bytes, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        lines = [f"HTTP/1.1 {code} {_REASONS.get(code, 'Status')}", f"Content-Type: {content_type}",
                 f"Content-Length: {len(body)}", "Cache-Control: no-cache, private"]
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        if self.close_connection:
            lines.append("Connection: close")
        self._status = code
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.wfile.write(head + body if self.command != "HEAD" else head)

    def _send_json(self, code: int, obj: Any) -> None:
        self._send(code, dumps(obj))

    def _send_error(self, err: StatusError) -> None:
        self._send(err.code, err.body(), headers=err.headers)

    def _read_body(self) -> bytes:
        limit = self.server.config.max_body_bytes
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            total = 0
            while True:
                line = self.rfile.readline(1024)
                try:
                    size = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    self.close_connection = True
                    raise errors.bad_request("malformed chunked request body") from None
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += size
                if total > limit:
                    self.close_connection = True
                    raise errors.entity_too_large(limit)
                parts.append(self.rfile.read(size))
                self.rfile.readline(1024)
            return b"".join(parts)
        length_header = self.headers.get("Content-Length")
        if not length_header:
            return b""
        try:
            length = int(length_header)
            if length < 0:
                raise ValueError
        except ValueError:
            self.close_connection = True
            raise errors.bad_request(f"invalid Content-Length {length_header!r}") from None
        if length > limit:
            self.close_connection = True
            raise errors.entity_too_large(limit)
        return self.rfile.read(length) if length else b""

    def _json_body(self, raw: bytes) -> Any:
        """The decoded body; what a strict decoder finds in it (duplicate fields) goes to `_body_issues`."""
        self._body_issues = BodyIssues()
        ctype = self.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()
        if ctype in ("application/yaml", "application/x-yaml", "text/yaml"):
            try:
                body, self._body_issues = loads_yaml(raw)
            except yaml.YAMLError as e:
                raise errors.bad_request(f"error decoding YAML: {e}") from None
            return body
        if ctype == protobuf.CONTENT_TYPE:
            try:
                return protobuf.decode(raw)
            except ProtobufError as e:
                raise StatusError(415, "UnsupportedMediaType", str(e), {}) from None
        if ctype not in ("application/json", "", "*/*") and ctype not in PATCH_TYPES:
            raise errors.unsupported_media_type(ctype)
        if not raw.strip():
            raise errors.bad_request("the request body is empty")
        try:
            body, self._body_issues = loads_json(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise errors.bad_request(f"couldn't get version/kind; json parse error: {e}") from None
        return body

    def _discard_body(self) -> None:
        """Keep the connection's framing intact when a request fails before its body was read."""
        if getattr(self, "_body_read", False) or self.close_connection:
            return
        try:
            self._read_body()
        except StatusError:
            self.close_connection = True
