"""The validating admission webhook's HTTPS server (`--enable-admission-webhook`): `POST /validate`.

Guarantees:
- Answers `admission.k8s.io/v1` AdmissionReviews with `ingressctl.webhook.admission.review`: the
  controller's own validation, never NGINX. Nothing in a request is written to disk or passed to a
  process; a denial is logged with its message cut to 500 characters (as the controller logs a rejection);
  the only files read are the serving certificate and key.
- Bounded: a body over `max_body_bytes` is refused with 413 before it is read (and the connection closed);
  no or an invalid Content-Length, a chunked body, non-JSON and a malformed AdmissionReview get 400; a media
  type other than JSON 415; another path 404; another method 405. A validator bug answers 500 and costs that
  request only. No input can stop the server.
- Requests are served by a fixed pool of worker threads (`workers`) through `ingressctl.webhook.pooled_https`:
  idle keep-alive connections hold no worker, TLS handshakes run on the pool, every read has a timeout
  (`read_timeout`), connections are capped. The sync thread's locks are never taken.
- The certificate and key are re-read when either file changes (a rotated Secret mounted as files takes
  effect for new connections without a restart).
- `port=0` binds an ephemeral port, exposed as `.port`; `stop()` returns once the server is closed.
"""

from __future__ import annotations

import json
import os
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from ingressctl.controller.kinds import ConfigurationView, Validator
from ingressctl.http_serving import BackgroundServer
from ingressctl.logging import get_logger
from ingressctl.webhook.admission import MalformedReview, review, validator_for
from ingressctl.webhook.pooled_https import PooledHTTPSServer

log = get_logger(__name__)

VALIDATE_PATH = "/validate"
DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024   # the API server's object limit is 1.5 MiB; object + oldObject
DEFAULT_WORKERS = 16
DEFAULT_READ_TIMEOUT = 10.0                  # seconds; kube-apiserver's default webhook timeout


class _CertificateLoader:
    """A server SSLContext built from cert/key files, rebuilt when either file changes (mtime, size, inode:
    a Secret volume swaps its files by renaming a directory)."""

    def __init__(self, cert_file: str, key_file: str) -> None:
        self._files = (cert_file, key_file)
        self._stamp: tuple[tuple[int, int, int], ...] = ()
        self._context: ssl.SSLContext | None = None
        self._lock = threading.Lock()
        self.context()   # fail at start-up, not at the first request

    def _current_stamp(self) -> tuple[tuple[int, int, int], ...]:
        return tuple((st.st_mtime_ns, st.st_size, st.st_ino) for st in map(os.stat, self._files))

    def context(self) -> ssl.SSLContext:
        with self._lock:
            try:
                stamp = self._current_stamp()
            except OSError as e:
                if self._context is None:
                    raise
                log.warning("admission webhook certificate unreadable; keeping the loaded one", error=str(e))
                return self._context
            if stamp != self._stamp or self._context is None:
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                ctx.minimum_version = ssl.TLSVersion.TLSv1_2
                ctx.set_alpn_protocols(["http/1.1"])
                try:
                    ctx.load_cert_chain(*self._files)
                except (OSError, ssl.SSLError) as e:
                    if self._context is None:
                        raise
                    log.warning("admission webhook certificate invalid; keeping the loaded one", error=str(e))
                    return self._context
                if self._context is not None:
                    log.info("admission webhook certificate reloaded")
                self._context, self._stamp = ctx, stamp
            return self._context


class AdmissionWebhookServer(BackgroundServer):
    """Serves `POST /validate` over HTTPS (see the module docstring)."""

    def __init__(self, *, config: ConfigurationView, cert_file: str, key_file: str, host: str = "",
                 port: int = 8443, workers: int = DEFAULT_WORKERS,
                 max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, read_timeout: float = DEFAULT_READ_TIMEOUT,
                 lookup: Callable[[str, str], Validator | None] = validator_for) -> None:
        self._config = config
        self._certificates = _CertificateLoader(cert_file, key_file)
        self._host = host
        self._port = port
        self._workers = workers
        self._max_body = max_body_bytes
        self._read_timeout = read_timeout
        self._lookup = lookup

    def answer(self, body: bytes) -> tuple[int, bytes]:
        """The HTTP status and body for a request body (the server's whole logic past the framing)."""
        try:
            decoded = json.loads(body)
        except (ValueError, RecursionError) as e:
            return 400, _error_body(f"the body is not JSON: {str(e)[:200]}")
        try:
            response = review(decoded, self._config, self._lookup)
        except MalformedReview as e:
            return 400, _error_body(f"malformed AdmissionReview: {e}")
        except RecursionError:
            return 400, _error_body("malformed AdmissionReview: nested too deeply")
        except Exception as e:
            log.error("admission review failed", error=repr(e)[:500])
            return 500, _error_body("internal error while validating")
        answer = response["response"]
        if not answer["allowed"]:
            log.info("admission denied", uid=answer["uid"][:64], message=answer["status"]["message"][:500])
        return 200, json.dumps(response, separators=(",", ":")).encode()

    def start(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "ingressctl"
            timeout = outer._read_timeout

            def do_POST(self) -> None:
                if self.path.split("?", 1)[0] != VALIDATE_PATH:
                    self._refuse(404, "not found")
                    return
                if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                    self._refuse(400, "a chunked body is not accepted; send Content-Length")
                    return
                try:
                    length = int(self.headers.get("Content-Length", ""))
                    if length < 0:
                        raise ValueError
                except ValueError:
                    self._refuse(400, "a valid Content-Length is required")
                    return
                if length > outer._max_body:
                    self._refuse(413, f"the body exceeds {outer._max_body} bytes")
                    return
                body = self.rfile.read(length)
                if len(body) != length:
                    self.close_connection = True
                    return
                ctype = self.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()
                if ctype != "application/json":
                    self._reply(415, _error_body("the body must be application/json"))
                    return
                self._reply(*outer.answer(body))

            def _refuse(self, code: int, message: str) -> None:
                self.close_connection = True   # the body was not read: the framing is lost
                self._reply(code, _error_body(message))

            def _method_not_allowed(self) -> None:
                self.close_connection = True
                self._reply(405, _error_body("only POST is allowed"), allow="POST")

            do_GET = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _method_not_allowed

            def _reply(self, code: int, body: bytes, allow: str = "") -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if allow:
                    self.send_header("Allow", allow)
                if self.close_connection:
                    self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._serve(PooledHTTPSServer((self._host, self._port), Handler,
                                      ssl_context=self._certificates.context, workers=self._workers,
                                      read_timeout=self._read_timeout, name="admission-webhook"),
                    "admission-webhook")
        log.info("admission webhook listening", port=self.port, path=VALIDATE_PATH)


def _error_body(message: str) -> bytes:
    return json.dumps({"error": message}).encode()

