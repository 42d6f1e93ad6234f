"""The devcluster's HTTP front end: the Kubernetes REST API over HTTP/1.1 (optionally TLS + bearer token).

Guarantees:
- One thread per connection (daemon threads), keep-alive, TCP_NODELAY; a watch stream occupies only its own
  connection, so any number of watches and requests run at once.
- Every error is a Kubernetes `Status` with the code and reason a real API server gives; a bad request never
  harms the connection's successors or any other client (the connection is closed only when its framing is
  lost, e.g. after a 413 whose body was not read).
- Responses are built from cached object bytes: no object is re-serialised to answer get, list or watch.
- Watch streams are chunked, one JSON event per line; they end cleanly at `timeoutSeconds`, abruptly when
  faults drop them or the server stops, and with one ERROR event (HTTP 200) for a too-old resourceVersion.
- Fault rules (latency, error rates) and statistics apply to resource requests, keyed by (verb, resource).
- Every request is authenticated and every resource request authorized by the server's `AccessControl`
  (auth.py) before it touches the store. Requests that are answered rather than stored (the
  serviceaccounts/token subresource, SelfSubjectAccessReview creates) go to the handler registered for their
  resource in `answer_handlers`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import select
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ingressctl.devcluster import apply, errors, openapi, printing, protobuf
from ingressctl.devcluster.admission import AdmissionAttributes, WebhookAdmission
from ingressctl.devcluster.auth import ADMIN, AccessControl
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.faults import Call, FaultInjector, RequestStats
from ingressctl.devcluster.protobuf import ProtobufError
from ingressctl.devcluster.rbac import Attributes, UserInfo
from ingressctl.devcluster.resources import Obj, Registry, ResourceKind
from ingressctl.devcluster.selectors import SelectorError, parse_field_selector, parse_label_selector
from ingressctl.devcluster.store import (
    ADDED,
    DELETED,
    MODIFIED,
    Event,
    Matcher,
    Store,
    Stored,
    Watcher,
    WriteResult,
    dumps,
    parse_resource_version,
)
from ingressctl.logging import get_logger

log = get_logger(__name__)
_stdlog = logging.getLogger(__name__)

KUBE_VERSION = (1, 32, 0)
MAX_BODY_BYTES = 3 * 1024 * 1024
_REASONS = {200: "OK", 201: "Created", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized",
            403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
            409: "Conflict", 410: "Gone", 413: "Request Entity Too Large", 415: "Unsupported Media Type",
            422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error",
            502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}
_PATCH_TYPES = {"application/merge-patch+json": "merge", "application/json-patch+json": "json",
                "application/strategic-merge-patch+json": "strategic"}
_PROTO_OPENAPI = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_NON_RESOURCE_PUBLIC = ("/healthz", "/livez", "/readyz", "/version")
AnswerHandler = Callable[[UserInfo, str, str, Any], Obj]


@dataclass
class ServerConfig:
    bookmark_interval: float = 2.0          # seconds between BOOKMARK events on watches that allow them
    min_request_timeout: float = 1800.0     # watches without timeoutSeconds end after [x, 2x)
    write_timeout: float = 60.0             # a watch client that does not read for this long is dropped
    idle_timeout: float = 300.0             # keep-alive connections idle this long are closed
    max_body_bytes: int = MAX_BODY_BYTES
    token: str = ""                         # bearer token required when set


@dataclass
class ResourceRequest:
    kind: ResourceKind
    namespace: str
    name: str
    subresource: str
    verb: str
    query: dict[str, str]

    @property
    def resource(self) -> str:
        return f"{self.kind.plural}/{self.subresource}" if self.subresource else self.kind.plural


def _bool_param(query: dict[str, str], name: str) -> bool | None:
    value = query.get(name)
    if value is None:
        return None
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0", ""):
        return False
    raise errors.bad_request(f'invalid value for {name}: "{value}"')


_FIELD_VALIDATION = ("Ignore", "Strict", "Warn")


def _field_validation(query: dict[str, str]) -> str:
    """The fieldValidation directive of a write ("" when absent: like Ignore for custom resources)."""
    value = query.get("fieldValidation", "")
    if value and value not in _FIELD_VALIDATION:
        raise errors.bad_request(f'fieldValidation: Unsupported value: "{value}": supported values: '
                                 + ", ".join(f'"{v}"' for v in _FIELD_VALIDATION))
    return value


def _warning_headers(warnings: list[str]) -> dict[str, str] | None:
    """The warnings as one RFC 7234 Warning header (code 299 each), comma-separated as the RFC allows; clients
    (client-go, the kubernetes Python client) split the list."""
    if not warnings:
        return None
    printable = ("".join(c if " " <= c <= "~" else "?" for c in w) for w in warnings)  # a header is latin-1
    return {"Warning": ", ".join('299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"'
                                 for w in printable)}


def _int_param(query: dict[str, str], name: str) -> int:
    value = query.get(name, "")
    if value == "":
        return 0
    try:
        n = int(value)
        if n < 0:
            raise ValueError
        return n
    except ValueError:
        raise errors.bad_request(f'invalid value for {name}: "{value}": must be a non-negative '
                                 'integer') from None


class DevHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that owns the store, faults and stats, and can drop every connection on stop."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512

    def __init__(self, address: tuple[str, int], *, store: Store, faults: FaultInjector, stats: RequestStats,
                 config: ServerConfig, ssl_context: ssl.SSLContext | None = None,
                 access: AccessControl | None = None,
                 answer_handlers: dict[str, AnswerHandler] | None = None) -> None:
        self.store = store
        self.access = access or AccessControl(store, admin_token=config.token)
        # "<plural>[/<subresource>]" -> handler(user, namespace, name, request body) -> the response object.
        self.answer_handlers = dict(answer_handlers or {})
        self.registry: Registry = store.registry
        self.faults = faults
        self.stats = stats
        self.config = config
        self.ssl_context = ssl_context
        self.admission: WebhookAdmission | None = None   # validating webhooks (devcluster.admission)
        self.stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(address, Handler)

    def track(self, conn: socket.socket, add: bool) -> None:
        with self._conns_lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def close_all_connections(self) -> None:
        self.stopping.set()
        self.store.drop_watches()
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.warning("devcluster connection error", client=str(client_address), exc_info=True)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: DevHTTPServer
    server_version = "devcluster"

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
        ctype = self.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()
        if ctype in ("application/yaml", "application/x-yaml", "text/yaml"):
            import yaml
            try:
                return yaml.safe_load(raw)
            except yaml.YAMLError as e:
                raise errors.bad_request(f"error decoding YAML: {e}") from None
        if ctype == protobuf.CONTENT_TYPE:
            try:
                return protobuf.decode(raw)
            except ProtobufError as e:
                raise StatusError(415, "UnsupportedMediaType", str(e), {}) from None
        if ctype not in ("application/json", "", "*/*") and ctype not in _PATCH_TYPES:
            raise errors.unsupported_media_type(ctype)
        if not raw.strip():
            raise errors.bad_request("the request body is empty")
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise errors.bad_request(f"couldn't get version/kind; json parse error: {e}") from None

    # ------------------------------------------------------------------------------------------- dispatch
    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        self._body_read = False
        self.user: UserInfo = ADMIN
        self._warnings: list[str] = []
        self._status = 0
        if _stdlog.isEnabledFor(logging.DEBUG):
            started = time.monotonic()
            try:
                self._dispatch_request()
            finally:
                log.debug("devcluster request", method=self.command, path=self.path, code=self._status,
                          ms=round((time.monotonic() - started) * 1000, 1))
        else:
            self._dispatch_request()

    def _dispatch_request(self) -> None:
        try:
            url = urllib.parse.urlsplit(self.path)
            query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
            path = url.path.rstrip("/") or "/"
            self._authenticate(path)
            req = self._route(path, query)
            if req is not None:
                self._authorize(req)
                self._serve_resource(req)
        except StatusError as e:
            self._discard_body()
            self._send_error(e)
        except (BrokenPipeError, ConnectionError, TimeoutError, ssl.SSLError):
            self.close_connection = True
        except Exception as e:   # a bug must cost one request, never the server
            log.error("devcluster request failed", method=self.command, path=self.path, error=str(e),
                      exc_info=True)
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._send_error(errors.internal_error(str(e)))

    def _discard_body(self) -> None:
        """Keep the connection's framing intact when a request fails before its body was read."""
        if getattr(self, "_body_read", False) or self.close_connection:
            return
        try:
            self._read_body()
        except StatusError:
            self.close_connection = True

    def _authenticate(self, path: str) -> None:
        if path in _NON_RESOURCE_PUBLIC:
            return
        self.user = self.server.access.authenticate(self.headers.get("Authorization", ""))
        as_user = self.headers.get("Impersonate-User")
        if as_user:
            self.user = self.server.access.impersonate(self.user, as_user,
                                                       self.headers.get_all("Impersonate-Group") or [])

    def _authorize(self, req: ResourceRequest) -> None:
        name = req.name
        if not name and req.verb in ("list", "watch"):
            # A list or watch of one object by field selector is authorized for that name, as the API
            # server's request info does it.
            for term in req.query.get("fieldSelector", "").split(","):
                key, sep, value = term.partition("=")
                if sep and key.strip() == "metadata.name" and not value.startswith("="):
                    name = value.strip()
        kind = req.kind
        namespace = req.namespace
        if kind.storage_id == "/namespaces" and name:
            namespace = name   # a namespace is in itself, for RoleBindings (as the API server's request info)
        self.server.access.authorize(self.user, Attributes(
            req.verb, kind.group, kind.version, kind.plural, req.subresource, namespace, name))

    def _route(self, path: str, query: dict[str, str]) -> ResourceRequest | None:
        parts = [urllib.parse.unquote(p) for p in path.split("/") if p]
        if self.command not in ("GET", "HEAD") and (not parts or parts[0] not in ("api", "apis")):
            if not parts or parts[0] in ("version", "healthz", "livez", "readyz", "openapi"):
                raise errors.method_not_allowed(self.command)
            raise errors.resource_not_found()
        if not parts:
            self._send_json(200, {"paths": self._root_paths()})
            return None
        head = parts[0]
        if head in ("healthz", "livez", "readyz"):
            self._send(200, b"ok", "text/plain; charset=utf-8")
            return None
        if parts == ["version"]:
            self._send_json(200, self._version())
            return None
        if head == "openapi":
            self._openapi(parts)
            return None
        registry = self.server.registry
        if head == "api":
            if len(parts) == 1:
                self._send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                      "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": self._server_address()}]})
                return None
            if parts[1] != "v1":
                raise errors.resource_not_found()
            group, version, rest = "", "v1", parts[2:]
        elif head == "apis":
            if len(parts) == 1:
                self._send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                    self._group(g, vs) for g, vs in registry.groups().items()]})
                return None
            groups = registry.groups()
            if parts[1] not in groups:
                raise errors.resource_not_found()
            if len(parts) == 2:
                self._send_json(200, {"kind": "APIGroup", "apiVersion": "v1", **self._group(parts[1],
                                                                                            groups[parts[1]])})
                return None
            if parts[2] not in groups[parts[1]]:
                raise errors.resource_not_found()
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise errors.resource_not_found()
        if not rest:
            if self.command not in ("GET", "HEAD"):
                raise errors.method_not_allowed(self.command)
            self._send_json(200, self._resource_list(group, version))
            return None
        return self._resource_request(group, version, rest, query)

    def _resource_request(self, group: str, version: str, rest: list[str],
                          query: dict[str, str]) -> ResourceRequest:
        registry = self.server.registry
        legacy_watch = False
        if rest[0] == "watch":
            legacy_watch, rest = True, rest[1:]
        namespace = ""
        if (len(rest) >= 3 and rest[0] == "namespaces" and not (len(rest) == 3 and rest[2] in ("status",
                                                                                                "finalize"))):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise errors.resource_not_found()
        kind = registry.by_path(group, version, rest[0])
        if kind is None:
            raise errors.resource_not_found()
        name = rest[1] if len(rest) > 1 else ""
        subresource = rest[2] if len(rest) > 2 else ""
        if namespace and not kind.namespaced:
            raise errors.resource_not_found()
        if name and kind.namespaced and not namespace:
            raise errors.resource_not_found()
        extra = kind.subresource(subresource) if subresource else None
        if subresource and not (subresource == "status" and kind.has_status) and extra is None:
            raise errors.resource_not_found()
        method = self.command
        watch = legacy_watch or _bool_param(query, "watch") is True
        if method in ("GET", "HEAD"):
            verb = ("watch" if watch else "get") if name else ("watch" if watch else "list")
            if watch and name:
                # A watch on one object is a watch with a name field selector, as the API server does it.
                query = dict(query)
                query["fieldSelector"] = ",".join(x for x in (query.get("fieldSelector", ""),
                                                              f"metadata.name={name}") if x)
        elif method == "POST":
            if name and extra is None:
                raise errors.method_not_allowed(method)
            verb = "create"
        elif method == "PUT":
            verb = "update"
        elif method == "PATCH":
            verb = "patch"
        elif method == "DELETE":
            verb = "delete" if name else "deletecollection"
        else:
            raise errors.method_not_allowed(method)
        if verb in ("update", "patch") and not name:
            raise errors.method_not_allowed(method)
        if extra is not None:
            if verb not in extra.verbs or not name:
                raise errors.method_not_allowed(method)
        elif verb not in kind.verbs and not (subresource and verb in ("get", "update", "patch")):
            raise errors.method_not_allowed(method)
        return ResourceRequest(kind, namespace, name, subresource, verb, query)

    # ------------------------------------------------------------------------------------------- discovery
    def _server_address(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host!s}:{port}"

    def _root_paths(self) -> list[str]:
        paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/openapi/v2", "/readyz", "/version"]
        for g, vs in self.server.registry.groups().items():
            paths.append(f"/apis/{g}")
            paths.extend(f"/apis/{g}/{v}" for v in vs)
        return sorted(paths)

    @staticmethod
    def _version() -> dict[str, str]:
        major, minor, patch = KUBE_VERSION
        return {"major": str(major), "minor": str(minor),
                "gitVersion": f"v{major}.{minor}.{patch}-devcluster",
                "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.0", "compiler": "gc",
                "platform": "linux/amd64"}

    @staticmethod
    def _group(name: str, versions: list[str]) -> dict[str, Any]:
        vs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        return {"name": name, "versions": vs, "preferredVersion": vs[0]}

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        resources: list[dict[str, Any]] = []
        for k in self.server.registry.in_group_version(group, version):
            entry: dict[str, Any] = {"name": k.plural, "singularName": k.singular or k.kind.lower(),
                                     "namespaced": k.namespaced, "kind": k.kind, "verbs": list(k.verbs)}
            if k.short_names:
                entry["shortNames"] = list(k.short_names)
            if k.categories:
                entry["categories"] = list(k.categories)
            resources.append(entry)
            if k.has_status:
                resources.append({"name": f"{k.plural}/status", "singularName": "",
                                  "namespaced": k.namespaced,
                                  "kind": k.kind, "verbs": ["get", "patch", "update"]})
            for sub in k.subresources:
                entry = {"name": f"{k.plural}/{sub.name}", "singularName": "", "namespaced": k.namespaced,
                         "kind": sub.kind, "verbs": list(sub.verbs)}
                if sub.group or sub.version:
                    entry.update(group=sub.group, version=sub.version)
                resources.append(entry)
        gv = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}

    def _openapi(self, parts: list[str]) -> None:
        if parts == ["openapi", "v2"]:
            # No v2 schemas are published: kubectl then skips client-side validation for built-in kinds and
            # computes strategic merge patches from its compiled-in types. Custom resources have v3 documents.
            if "protobuf" in self.headers.get("Accept", ""):
                self._send(200, b"", _PROTO_OPENAPI)
            else:
                major, minor, patch = KUBE_VERSION
                self._send_json(200, {"swagger": "2.0", "info": {"title": "Kubernetes (devcluster)",
                                                                 "version": f"v{major}.{minor}.{patch}"},
                                      "paths": {}, "definitions": {}})
        elif parts == ["openapi", "v3"]:
            self._send_json(200, openapi.root_document(self.server.store))
        elif len(parts) == 5 and parts[:3] == ["openapi", "v3", "apis"]:
            doc = openapi.group_version_document(self.server.store, parts[3], parts[4])
            if doc is None:
                raise errors.resource_not_found()
            self._send_json(200, doc)
        else:
            raise errors.resource_not_found()

    # ------------------------------------------------------------------------------------------- resources
    def _view(self, kind: ResourceKind) -> Callable[[Stored], Obj] | None:
        if kind.from_storage is None:
            return None
        convert = kind.from_storage
        return lambda s: convert(s.parse())

    def _item_bytes(self, kind: ResourceKind, stored: Stored) -> bytes:
        """An object as a list item (no kind/apiVersion, like the API server)."""
        if kind.from_storage is not None:
            return dumps(kind.from_storage(stored.parse()))
        return stored.body

    def _object_bytes(self, kind: ResourceKind, stored: Stored) -> bytes:
        """A standalone object (kind and apiVersion first)."""
        body = self._item_bytes(kind, stored)
        prefix = b'{"kind":"%s","apiVersion":"%s"' % (kind.kind.encode(), kind.api_version.encode())
        return prefix + (b"," + body[1:] if len(body) > 2 else b"}")

    def _object_dict(self, kind: ResourceKind, stored: Stored) -> Obj:
        obj: Obj = json.loads(self._item_bytes(kind, stored))
        return obj

    def _serve_resource(self, req: ResourceRequest) -> None:
        srv = self.server
        raw = b""
        if req.verb in ("create", "update", "patch", "delete", "deletecollection"):
            raw = self._read_body()
            self._body_read = True
        end = srv.stats.begin(Call(req.verb, req.resource, req.namespace, req.subresource), req.kind.group)
        try:
            delay = srv.faults.latency_for(req.verb, req.resource)
            if delay:
                time.sleep(delay)
            fault = srv.faults.fault_for(req.verb, req.resource)
            if fault is not None:
                raise errors.server_fault(fault.status, fault.retry_after)
            answer = srv.answer_handlers.get(req.resource) if req.verb == "create" else None
            if answer is not None:
                self._send_json(201, answer(self.user, req.namespace, req.name, self._json_body(raw)))
            elif req.kind.subresource(req.subresource) is not None:
                raise errors.resource_not_found()   # a subresource nothing answers here
            else:
                getattr(self, "_verb_" + req.verb)(req, raw)
        finally:
            end()

    def _dry_run(self, req: ResourceRequest) -> bool:
        value = req.query.get("dryRun", "")
        if value and value != "All":
            raise errors.bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
        return value == "All"

    def _matcher(self, req: ResourceRequest) -> Matcher:
        try:
            labels = parse_label_selector(req.query.get("labelSelector"))
            fields = parse_field_selector(req.query.get("fieldSelector"), req.kind.all_field_getters())
        except SelectorError as e:
            raise errors.bad_request(str(e)) from None
        return Matcher(labels, fields, self._view(req.kind))

    def _respond_object(self, code: int, req: ResourceRequest, stored: Stored,
                        headers: dict[str, str] | None = None) -> None:
        version = printing.wants_table(self.headers.get("Accept", ""))
        if version:
            self._send(code, dumps(printing.table(req.kind, [self._object_dict(req.kind, stored)],
                                                  version=version,
                                                  include_object=req.query.get("includeObject", "Metadata"),
                                                  list_meta={"resourceVersion": str(stored.rv)})),
                       headers=headers)
            return
        self._send(code, self._object_bytes(req.kind, stored), headers=headers)

    def _verb_get(self, req: ResourceRequest, raw: bytes) -> None:
        stored = self.server.store.get(req.kind, req.namespace, req.name)
        self._respond_object(200, req, stored)

    def _verb_list(self, req: ResourceRequest, raw: bytes) -> None:
        result = self.server.store.list_page(
            req.kind, req.namespace, matcher=self._matcher(req), limit=_int_param(req.query, "limit"),
            continue_token=req.query.get("continue", ""),
            resource_version=req.query.get("resourceVersion", ""),
            resource_version_match=req.query.get("resourceVersionMatch", ""))
        meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
        if result.continue_token:
            meta["continue"] = result.continue_token
        if result.remaining is not None:
            meta["remainingItemCount"] = result.remaining
        version = printing.wants_table(self.headers.get("Accept", ""))
        if version:
            objs = [self._object_dict(req.kind, s) for s in result.items]
            self._send_json(200, printing.table(req.kind, objs, version=version, list_meta=meta,
                                                include_object=req.query.get("includeObject", "Metadata")))
            return
        kind = req.kind
        head = b'{"kind":"%s","apiVersion":"%s","metadata":%s,"items":[' % (
            kind.list_kind.encode(), kind.api_version.encode(), dumps(meta))
        body = b",".join(self._item_bytes(kind, s) for s in result.items)
        self._send(200, head + body + b"]}")

    # ------------------------------------------------------------------------------------------- admission
    def _admission(self, req: ResourceRequest, operation: str) -> WebhookAdmission | None:
        adm = self.server.admission
        return adm if adm is not None and adm.wanted(req.kind, req.subresource, operation) else None

    def _admit(self, adm: WebhookAdmission, req: ResourceRequest, operation: str, new: Stored | None,
               old: Stored | None, dry_run: bool) -> None:
        """Send the write's preview (and the current object) to the matching webhooks; raises on a denial."""
        def full(s: Stored | None) -> Obj | None:
            if s is None:
                return None
            kind = req.kind
            return {"apiVersion": kind.api_version, "kind": kind.kind, **self._object_dict(kind, s)}

        obj, old_obj = full(new), full(old)
        meta = (obj or old_obj or {}).get("metadata") or {}
        user = None if self.user is ADMIN else {"username": self.user.name, "uid": self.user.uid,
                                                 "groups": list(self.user.groups)}
        self._warnings.extend(adm.admit(AdmissionAttributes(
            req.kind, req.subresource, operation, str(meta.get("namespace") or req.namespace),
            str(meta.get("name") or req.name), obj, old_obj, dry_run, user)))

    def _warning_headers(self, warnings: list[str]) -> dict[str, str] | None:
        """The admission webhooks' warnings, then the store's, as one Warning header."""
        return _warning_headers([*self._warnings, *warnings])

    def _current(self, req: ResourceRequest) -> Stored | None:
        try:
            return self.server.store.get(req.kind, req.namespace, req.name)
        except StatusError:
            return None

    def _verb_create(self, req: ResourceRequest, raw: bytes) -> None:
        body = self._json_body(raw)
        dry_run = self._dry_run(req)
        validation = _field_validation(req.query)
        adm = self._admission(req, "CREATE")
        if adm is not None:
            preview = self.server.store.create(req.kind, req.namespace, body, dry_run=True,
                                               field_validation=validation).stored
            self._admit(adm, req, "CREATE", preview, None, dry_run)
            if isinstance(body, dict) and not (body.get("metadata") or {}).get("name"):
                # generateName: store the name the webhooks saw
                body = {**body, "metadata": {**(body.get("metadata") or {}), "name": preview.name}}
        result = self.server.store.create(req.kind, req.namespace, body, dry_run=dry_run,
                                          field_validation=validation)
        self._respond_object(201, req, result.stored, self._warning_headers(result.warnings))

    def _verb_update(self, req: ResourceRequest, raw: bytes) -> None:
        body = self._json_body(raw)
        adm = self._admission(req, "UPDATE") or self._admission(req, "CREATE")
        if adm is not None:
            old = self._current(req)
            preview = self.server.store.update(req.kind, req.namespace, req.name, body,
                                               subresource=req.subresource, dry_run=True,
                                               field_validation=_field_validation(req.query)).stored
            self._admit(adm, req, "UPDATE" if old is not None else "CREATE", preview, old, self._dry_run(req))
        result = self.server.store.update(req.kind, req.namespace, req.name, body,
                                          subresource=req.subresource,
                                          dry_run=self._dry_run(req),
                                          field_validation=_field_validation(req.query))
        self._respond_object(201 if result.created else 200, req, result.stored,
                             self._warning_headers(result.warnings))

    def _verb_patch(self, req: ResourceRequest, raw: bytes) -> None:
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        patch_type = _PATCH_TYPES.get(ctype)
        if ctype == apply.CONTENT_TYPE:
            self._server_side_apply(req, raw)
            return
        if patch_type is None:
            raise errors.unsupported_media_type(ctype)
        if patch_type == "strategic" and not req.kind.strategic_merge:
            raise StatusError(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                              "format - accepted media types include: application/json-patch+json, "
                              "application/merge-patch+json, application/apply-patch+yaml", {})
        try:
            patch = json.loads(raw) if raw.strip() else None
        except (ValueError, UnicodeDecodeError) as e:
            raise errors.bad_request(f"error decoding patch: {e}") from None
        if patch is None:
            raise errors.bad_request("the patch body is empty")
        adm = self._admission(req, "UPDATE")
        if adm is not None:
            old = self._current(req)
            preview = self.server.store.patch(req.kind, req.namespace, req.name, patch_type, patch,
                                              subresource=req.subresource, dry_run=True,
                                              view=self._view(req.kind),
                                              field_validation=_field_validation(req.query)).stored
            self._admit(adm, req, "UPDATE", preview, old, self._dry_run(req))
        result = self.server.store.patch(req.kind, req.namespace, req.name, patch_type, patch,
                                         subresource=req.subresource, dry_run=self._dry_run(req),
                                         view=self._view(req.kind),
                                         field_validation=_field_validation(req.query))
        self._respond_object(200, req, result.stored, self._warning_headers(result.warnings))

    def _server_side_apply(self, req: ResourceRequest, raw: bytes) -> None:
        def run(dry_run: bool) -> tuple[WriteResult, bool]:
            return apply.server_side_apply(
                self.server.store, req.kind, req.namespace, req.name, raw,
                manager=req.query.get("fieldManager", ""), force=_bool_param(req.query, "force") is True,
                subresource=req.subresource, dry_run=dry_run, view=self._view(req.kind))

        old = self._current(req)
        adm = self._admission(req, "CREATE" if old is None else "UPDATE")
        if adm is not None:   # admission webhooks see the applied result, as for any other write
            preview, created = run(True)
            self._admit(adm, req, "CREATE" if created else "UPDATE", preview.stored, old, self._dry_run(req))
        result, created = run(self._dry_run(req))
        self._respond_object(201 if created else 200, req, result.stored,
                             self._warning_headers(result.warnings))

    def _delete_options(self, req: ResourceRequest, raw: bytes) -> dict[str, Any]:
        if not raw.strip():
            return {}
        opts = self._json_body(raw)
        if not isinstance(opts, dict):
            raise errors.bad_request("DeleteOptions must be a JSON object")
        return opts

    def _verb_delete(self, req: ResourceRequest, raw: bytes) -> None:
        opts = self._delete_options(req, raw)
        pre = opts.get("preconditions") or {}
        if not isinstance(pre, dict):
            raise errors.bad_request("preconditions must be an object")
        dry_run = self._dry_run(req) or opts.get("dryRun") == ["All"]
        adm = self._admission(req, "DELETE")
        old = self._current(req) if adm is not None else None
        if adm is not None and old is not None:
            self._admit(adm, req, "DELETE", None, old, dry_run)
        result = self.server.store.delete(req.kind, req.namespace, req.name,
                                          precondition_uid=pre.get("uid") or "",
                                          precondition_rv=pre.get("resourceVersion") or "", dry_run=dry_run)
        kind = req.kind
        headers = self._warning_headers([])
        if kind.return_deleted_object or not result.deleted:
            self._respond_object(200, req, result.stored, headers)
            return
        details = {"name": req.name, "kind": kind.plural, "uid": result.stored.uid}
        if kind.group:
            details["group"] = kind.group
        self._send(200, dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                               "details": details}), headers=headers)

    def _verb_deletecollection(self, req: ResourceRequest, raw: bytes) -> None:
        self._delete_options(req, raw)
        deleted = self.server.store.delete_collection(req.kind, req.namespace, matcher=self._matcher(req),
                                                      dry_run=self._dry_run(req))
        kind = req.kind
        head = b'{"kind":"%s","apiVersion":"%s","metadata":{"resourceVersion":"%d"},"items":[' % (
            kind.list_kind.encode(), kind.api_version.encode(), self.server.store.resource_version)
        self._send(200, head + b",".join(self._item_bytes(kind, s) for s in deleted) + b"]}")

    # ------------------------------------------------------------------------------------------- watch
    def _verb_watch(self, req: ResourceRequest, raw: bytes) -> None:
        WatchStream(self, req).run()


class WatchStream:
    """One watch response: initial events, live events, bookmarks, timeout and abrupt drops."""

    def __init__(self, handler: Handler, req: ResourceRequest) -> None:
        self.h = handler
        self.req = req
        self.kind = req.kind
        q = req.query
        self.matcher = handler._matcher(req)
        self.filtered = not self.matcher.empty
        self.view = handler._view(req.kind)
        self.bookmarks = _bool_param(q, "allowWatchBookmarks") is True
        self.send_initial = _bool_param(q, "sendInitialEvents")
        rv_match = q.get("resourceVersionMatch", "")
        if self.send_initial is not None:
            if rv_match != "NotOlderThan":
                raise errors.bad_request("resourceVersionMatch: Forbidden: sendInitialEvents requires "
                                         "setting resourceVersionMatch to NotOlderThan")
            if self.send_initial and not self.bookmarks:
                raise errors.bad_request("allowWatchBookmarks: Forbidden: sendInitialEvents requires "
                                         "allowWatchBookmarks=true")
        elif rv_match:
            raise errors.bad_request("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for "
                                     "watch unless sendInitialEvents is provided")
        self.resource_version = q.get("resourceVersion", "")
        if self.resource_version not in ("", "0"):
            parse_resource_version(self.resource_version)
        timeout = _int_param(q, "timeoutSeconds")
        cfg = handler.server.config
        self.timeout = float(timeout) if timeout else cfg.min_request_timeout * (1 + random.random())
        self.table_version = printing.wants_table(handler.headers.get("Accept", ""))
        self.include_object = q.get("includeObject", "Metadata")
        self.chunked = handler.request_version != "HTTP/1.0"
        self.prefix = b'{"kind":"%s","apiVersion":"%s"' % (self.kind.kind.encode(),
                                                           self.kind.api_version.encode())
        self.cache_id = "" if (self.view is None and not self.table_version) else None

    # ---- encoding

    def _object(self, stored: Stored) -> bytes:
        if self.table_version:
            obj = self.h._object_dict(self.kind, stored)
            return dumps(printing.table(self.kind, [obj], version=self.table_version,
                                        include_object=self.include_object,
                                        list_meta={"resourceVersion": str(stored.rv)}))
        return self.h._object_bytes(self.kind, stored)

    def _line(self, etype: str, stored: Stored) -> bytes:
        return b'{"type":"%s","object":%s}\n' % (etype.encode(), self._object(stored))

    def encode(self, ev: Event) -> bytes | None:
        if self.req.namespace and ev.namespace != self.req.namespace:
            return None
        etype, stored = ev.type, ev.stored
        if self.filtered:
            now_match = self.matcher(stored)
            if etype == MODIFIED:
                was_match = ev.prev is not None and self.matcher(ev.prev)
                if now_match and not was_match:
                    etype = ADDED
                elif was_match and not now_match:
                    # An object that stops matching is seen as deleted: its previous state at the event's RV.
                    assert ev.prev is not None
                    old = ev.prev.parse()
                    old["metadata"]["resourceVersion"] = str(ev.rv)
                    return self._line(DELETED, Stored(dumps(old), ev.rv, old["metadata"]))
                elif not now_match:
                    return None
            elif not now_match:
                return None
        if self.cache_id is None or stored is not ev.stored:
            return self._line(etype, stored)
        line = ev.lines.get(etype)
        if line is None:
            line = ev.lines[etype] = self._line(etype, stored)
        return line

    def bookmark(self, rv: int, initial_end: bool = False) -> bytes:
        meta = b'{"resourceVersion":"%d"}' % rv
        if initial_end:
            meta = b'{"resourceVersion":"%d","annotations":{"k8s.io/initial-events-end":"true"}}' % rv
        return b'{"type":"BOOKMARK","object":%s,"metadata":%s}}\n' % (self.prefix, meta)

    # ---- output
    def write(self, data: bytes) -> None:
        if not data:
            return
        if self.chunked:
            data = b"%x\r\n%s\r\n" % (len(data), data)
        self.h.wfile.write(data)

    def send_headers(self) -> None:
        self.h._status = 200
        head = ["HTTP/1.1 200 OK", "Content-Type: application/json", "Cache-Control: no-cache, private"]
        if self.chunked:
            head.append("Transfer-Encoding: chunked")
        else:
            head.append("Connection: close")
            self.h.close_connection = True
        self.h.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode())

    def end(self) -> None:
        if self.chunked:
            self.h.wfile.write(b"0\r\n\r\n")

    def abort(self) -> None:
        self.h.close_connection = True
        with contextlib.suppress(OSError):
            self.h.connection.shutdown(socket.SHUT_RDWR)

    def write_events(self, events: list[Event]) -> None:
        out = []
        for ev in events:
            line = self.encode(ev)
            if line is not None:
                out.append(line)
            if len(out) >= 512:
                self.write(b"".join(out))
                out = []
        self.write(b"".join(out))

    def client_gone(self) -> bool:
        conn = self.h.connection
        try:
            readable, _, _ = select.select([conn], [], [], 0)
            if not readable:
                return False
            if isinstance(conn, ssl.SSLSocket):
                conn.settimeout(0.01)
                try:
                    return bool(conn.recv(1) == b"")
                except (TimeoutError, ssl.SSLWantReadError):
                    return False
                finally:
                    conn.settimeout(self.h.server.config.write_timeout)
            return bool(conn.recv(1, socket.MSG_PEEK) == b"")
        except (OSError, ValueError):
            return True

    def run(self) -> None:
        store = self.h.server.store
        try:
            watcher, initial = store.watch(self.kind, self.req.namespace,
                                           resource_version=self.resource_version,
                                           send_initial_events=self.send_initial)
        except StatusError as e:
            if e.code != 410:
                raise
            self.send_headers()
            self.write(b'{"type":"ERROR","object":%s}\n' % e.body())
            self.end()
            return
        try:
            self.h.connection.settimeout(self.h.server.config.write_timeout)
            self._stream(watcher, initial)
        except (OSError, ssl.SSLError):
            self.h.close_connection = True
        except Exception as e:   # the response has started: cut the stream, never write an error into it
            log.error("devcluster watch failed", resource=self.req.resource, error=str(e), exc_info=True)
            self.abort()
        finally:
            store.unregister(watcher)

    def _stream(self, watcher: Watcher, initial: list[Event]) -> None:
        srv = self.h.server
        store = srv.store
        watcher.closer = self.abort
        self.send_headers()
        self.write_events(initial)
        if self.send_initial and self.bookmarks:
            pending, rv = store.bookmark_point(watcher)
            self.write_events(pending)
            self.write(self.bookmark(rv, initial_end=True))
        now = time.monotonic()
        deadline = now + self.timeout
        interval = srv.config.bookmark_interval
        next_bookmark = now + interval if self.bookmarks else float("inf")
        while True:
            if watcher.dropped or srv.stopping.is_set():
                self.abort()
                return
            now = time.monotonic()
            if now >= deadline:
                if self.bookmarks:
                    pending, rv = store.bookmark_point(watcher)
                    self.write_events(pending)
                    self.write(self.bookmark(rv))
                else:
                    self.write_events(watcher.drain())
                self.end()
                return
            if now >= next_bookmark:
                pending, rv = store.bookmark_point(watcher)
                self.write_events(pending)
                self.write(self.bookmark(rv))
                next_bookmark = now + interval
                continue
            events = watcher.wait(min(deadline, next_bookmark, now + 1.0) - now)
            if watcher.dropped:
                continue
            if events:
                self.write_events(events)
            elif self.client_gone():
                self.h.close_connection = True
                return
            if watcher.ended:
                self.write_events(watcher.drain())
                self.end()
                return
            if watcher.overflowed:
                log.warning("devcluster closing a watch that fell behind", resource=self.req.resource)
                self.end()
                return
