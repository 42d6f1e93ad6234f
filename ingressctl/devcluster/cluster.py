"""`DevCluster`: the in-memory Kubernetes API server as a Python object (context manager) for tests,
benchmarks and the demo.

Guarantees: after `start()` (or entering the context) the server answers on `url`; the namespaces `default`,
`kube-system`, `kube-public` and `kube-node-lease` exist from the start; manifests given to the constructor
are loaded before the first request is served; `apiextensions.k8s.io/v1` CustomResourceDefinitions are served
whatever the kinds table holds, and the kinds they define join the table as they are established; writes are
sent to the validating admission webhooks the cluster holds (`ingressctl.devcluster.admission`); `stop()`
drops every watch and connection and joins the serving thread. A later `start()` serves the same URL,
certificate and token, with objects, resourceVersions and history intact (as when a real API server
restarts). `faults` and `stats` may be used from any thread while the server runs.

Started with `authorization_mode="RBAC"`, it serves HTTPS (Kubernetes clients send bearer tokens only over
TLS) with an admin token in its kubeconfig, and authorizes every other identity, such as a ServiceAccount
token from `create_token()`, against the stored RBAC objects; `access_log` records each decision per identity.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import threading
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

import yaml

from ingressctl.devcluster.admission import WebhookAdmission
from ingressctl.devcluster.auth import AccessControl, AccessLog
from ingressctl.devcluster.builtin import DEFAULT_KINDS
from ingressctl.devcluster.crd import CustomResourceDefinitions
from ingressctl.devcluster.faults import FaultInjector, RequestStats
from ingressctl.devcluster.manifests import read_manifests
from ingressctl.devcluster.objects import object_key
from ingressctl.devcluster.registry import Registry
from ingressctl.devcluster.resources import ResourceKind
from ingressctl.devcluster.server import DevHTTPServer
from ingressctl.devcluster.serving import ServerConfig
from ingressctl.devcluster.store import Store
from ingressctl.devcluster.tlsutil import ServingCertificate, generate
from ingressctl.logging import get_logger

log = get_logger(__name__)

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class DevCluster:
    """An in-memory Kubernetes API server serving HTTP (or HTTPS with a bearer token) on `host:port`."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, tls: bool = False, latency_ms: float = 0,
                 history: int = 10000, manifests: Sequence[str] = (), bookmark_interval: float = 2.0,
                 min_request_timeout: float = 1800.0, kinds: Sequence[ResourceKind] = DEFAULT_KINDS,
                 token: str | None = None, seed: int | None = None,
                 authorization_mode: str = "AlwaysAllow",
                 webhook_services: Mapping[str, str] | None = None) -> None:
        """`webhook_services` routes the Services of webhooks' `clientConfig.service`
        (`namespace/name[:port]`) to `host:port` (see `ingressctl.devcluster.admission`)."""
        self.host = host
        self.port = port
        self.tls = tls or authorization_mode == "RBAC"
        self.registry = Registry(kinds)
        self.store = Store(self.registry, history=history)
        CustomResourceDefinitions(self.store).install()
        self.faults = FaultInjector(self.store, seed=seed)
        self.stats = RequestStats()
        self.admission = WebhookAdmission(self.store, services=webhook_services)
        self.token = (token or secrets.token_hex(24)) if self.tls else (token or "")
        self.access = AccessControl(self.store, admin_token=self.token, mode=authorization_mode)
        self.config = ServerConfig(bookmark_interval=bookmark_interval,
                                   min_request_timeout=min_request_timeout,
                                   token=self.token)
        self.certificate: ServingCertificate | None = None
        self.url = ""
        self._manifests = tuple(manifests)
        self._server: DevHTTPServer | None = None
        self._thread: threading.Thread | None = None
        if latency_ms:
            self.faults.set_latency(latency_ms)
        self.store.load({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                        for n in INITIAL_NAMESPACES)

    # ------------------------------------------------------------------------------------------- lifecycle
    def start(self) -> None:
        if self._server is not None:
            return
        if self._manifests:
            self.load(read_manifests(self._manifests))
            self._manifests = ()
        ctx = None
        if self.tls:
            if self.certificate is None:
                self.certificate = generate(self.host)
            ctx = self.certificate.ssl_context()
        server = DevHTTPServer((self.host, self.port), store=self.store, faults=self.faults, stats=self.stats,
                               config=self.config, ssl_context=ctx, access=self.access,
                               answer_handlers={
                                   "serviceaccounts/token": self.access.token_request,
                                   "selfsubjectaccessreviews": self.access.self_subject_access_review})
        server.admission = self.admission
        self._server = server
        port = server.server_address[1]
        self.port = port    # a later start() (after stop()) serves the same URL
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"{'https' if self.tls else 'http'}://{host}:{port}"
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="devcluster", daemon=True)
        self._thread.start()
        log.info("devcluster serving", url=self.url)

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.close_all_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> DevCluster:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._server is not None

    # ------------------------------------------------------------------------------------------- clients
    def create_token(self, namespace: str, service_account: str, *, expiration_seconds: int = 3600) -> str:
        """A bearer token for a stored ServiceAccount, as TokenRequest issues it."""
        return self.access.create_token(namespace, service_account, expiration_seconds=expiration_seconds)[0]

    @property
    def access_log(self) -> AccessLog:
        """Every authorization decision about a non-admin identity's resource requests."""
        return self.access.log

    def kubeconfig(self, token: str | None = None) -> dict[str, Any]:
        """A kubeconfig (as a dict) for this cluster: CA data when TLS is on, and the admin bearer token (when
        the cluster has one) or `token` (e.g. a ServiceAccount's)."""
        if not self.url:
            raise RuntimeError("the devcluster is not started")
        cluster: dict[str, Any] = {"server": self.url}
        user: dict[str, Any] = {}
        if self.certificate is not None:
            cluster["certificate-authority-data"] = base64.b64encode(self.certificate.ca_pem).decode()
        if token or self.token:
            user["token"] = token or self.token
        return {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": "devcluster", "cluster": cluster}],
            "users": [{"name": "devcluster", "user": user}],
            "contexts": [{"name": "devcluster", "context": {"cluster": "devcluster", "user": "devcluster",
                                                             "namespace": "default"}}],
            "current-context": "devcluster",
        }

    def write_kubeconfig(self, path: str, token: str | None = None) -> str:
        """Write the kubeconfig (mode 0600; with `token` instead of the admin token) and return its path."""
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        tmp = f"{path}.tmp.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yaml.safe_dump(self.kubeconfig(token), f, sort_keys=False)
        os.replace(tmp, path)
        return path

    # ------------------------------------------------------------------------------------------- data
    def load(self, objects: Iterable[dict[str, Any]]) -> None:
        """Bulk create-or-replace objects with full metadata; status is kept as given; namespaces that do not
        exist are created. Every object gets its own resourceVersion and watch event."""
        self.store.load(objects)

    @property
    def resource_version(self) -> str:
        """The current global resourceVersion."""
        return str(self.store.resource_version)

    def objects(self, plural: str, namespace: str | None = None,
                group: str | None = None) -> list[dict[str, Any]]:
        """A snapshot of the stored objects of one resource (for assertions and debugging)."""
        kinds = [k for k in self.registry.kinds if k.plural == plural and (group is None or k.group == group)
                 and not k.storage]
        if not kinds:
            raise KeyError(f"unknown resource {plural!r}")
        bucket = self.store.bucket(kinds[0])
        with self.store.lock:
            stored = [bucket.objects[k] for k in bucket.keys
                      if namespace is None or k.startswith(object_key(namespace, ""))]
        return [json.loads(s.body) for s in stored]
