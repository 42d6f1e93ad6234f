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
import logging
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from ingressctl.devcluster import errors, openapi
from ingressctl.devcluster.admission import WebhookAdmission
from ingressctl.devcluster.auth import ADMIN, AccessControl
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.faults import FaultInjector, RequestStats
from ingressctl.devcluster.rbac import Attributes, UserInfo
from ingressctl.devcluster.registry import Registry
from ingressctl.devcluster.request import ResourceRequest, bool_param
from ingressctl.devcluster.resources import Obj
from ingressctl.devcluster.serving import ServerConfig, Serving
from ingressctl.devcluster.store import Store
from ingressctl.devcluster.verbs import ResourceHandler
from ingressctl.logging import get_logger

log = get_logger(__name__)
_stdlog = logging.getLogger(__name__)

KUBE_VERSION = (1, 32, 0)
_PROTO_OPENAPI = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_NON_RESOURCE_PUBLIC = ("/healthz", "/livez", "/readyz", "/version")
AnswerHandler = Callable[[UserInfo, str, str, Any], Obj]



class DevHTTPServer(Serving):
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

class Handler(ResourceHandler):

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
        watch = legacy_watch or bool_param(query, "watch") is True
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
        elif (len(parts) == 5 and parts[:3] == ["openapi", "v3", "apis"]) or (
                len(parts) == 4 and parts[:3] == ["openapi", "v3", "api"]):
            group, version = (parts[3], parts[4]) if len(parts) == 5 else ("", parts[3])
            doc = openapi.group_version_document(self.server.store, group, version)
            if doc is None:
                raise errors.resource_not_found()
            self._send_json(200, doc)
        else:
            raise errors.resource_not_found()
