"""The integration harness: a devcluster, real HTTP backends, and the real controller (in-process threads,
real NGINX). The fixtures that build it (`env`, `running`) are in conftest.py.

- `Env`: a fresh DevCluster (HTTP on 127.0.0.1, ephemeral port) with the `nginx` IngressClass and namespace
  `demo`, a KubeClient for it, helpers to create Services/EndpointSlices/Ingresses/Secrets, named backends.
- `Env.controller(...)`: an `App` built from `Settings` as `python -m ingressctl` builds it, with NGINX
  on ephemeral ports and its conf/run dirs in a short temporary directory; stopped at teardown.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import replace
from typing import Any

from ingressctl.demo.backend import Backend
from ingressctl.settings import (
    ControllerSettings,
    KubeSettings,
    LeaderElectionSettings,
    NginxSettings,
    ServingSettings,
    Settings,
)
from tests.helpers import Response, TLSResponse, free_port, http_get, https_get, wait_until

NS = "demo"
# The host of the well-behaved Ingress that bad-input tests check keeps serving.
GOOD = "good.example.com"


class Controller:
    """The controller under test: an App (every part real) plus helpers to talk to its NGINX."""

    def __init__(self, env: Env, settings: Settings) -> None:
        from ingressctl.app.root import App

        self.env = env
        self.settings = settings
        self.app = App(settings, health_host="127.0.0.1")
        self.started = False

    @property
    def http_port(self) -> int:
        return self.settings.nginx.http_port

    @property
    def https_port(self) -> int:
        return self.settings.nginx.https_port

    @property
    def ready_port(self) -> int:
        return int(self.app.health.port)

    @property
    def manager(self) -> Any:
        return self.app.manager

    @property
    def lbc(self) -> Any:
        return self.app.controller

    @property
    def reloads(self) -> int:
        return int(self.app.manager.reload_count)

    def start(self, *, wait_ready: bool = True) -> Controller:
        self.app.start()
        self.started = True
        if wait_ready:
            assert self.app.controller.wait_ready(60), "controller did not become ready"
        return self

    def stop(self) -> None:
        if self.started:
            self.app.stop()
            self.started = False

    def get(self, host: str, path: str = "/") -> Response:
        return http_get(self.http_port, host, path)

    def https(self, host: str, path: str = "/") -> TLSResponse:
        return https_get(self.https_port, host, path)

    def wait_backend(self, host: str, path: str, backend: str, what: str = "") -> Response:
        """Poll until host+path reaches `backend` (by name)."""
        return wait_until(lambda: (r := self.get(host, path)).backend == backend and r,
                          what or f"{host}{path} -> {backend}")

    def wait_status(self, host: str, path: str, status: int) -> Response:
        return wait_until(lambda: (r := self.get(host, path)).status == status and r,
                          f"{host}{path} -> HTTP {status}")

    def wait_idle(self) -> None:
        """Until the queue is empty and nothing is being processed (no pending reload)."""
        last: list[int] = []

        def idle() -> bool:
            # Idle on two consecutive polls with no task started in between (closes the gap between the
            # queue handing out a task and the sync thread marking itself busy).
            now = self.lbc.stats.syncs if self.lbc.is_idle() else -1
            ok = now >= 0 and last == [now] and not self.lbc.configurator.has_pending_changes()
            last[:] = [now]
            return ok

        wait_until(idle, "controller idle")


class Env:
    """A devcluster and helpers around it."""

    def __init__(self, tmp: str) -> None:
        from ingressctl.devcluster import DevCluster
        from ingressctl.k8s.client import KubeClient

        self.tmp = tmp
        self.cluster = DevCluster()
        self.cluster.start()
        self.kubeconfig = self.cluster.write_kubeconfig(os.path.join(tmp, "kubeconfig"))
        self.kube = KubeClient.from_kubeconfig(self.kubeconfig)
        self.backends: list[Backend] = []
        self.controllers: list[Controller] = []
        self.cleanup_dirs: list[str] = []
        self.create(_namespace(NS))
        self.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                     "metadata": {"name": "nginx"}, "spec": {"controller": "nginx.org/ingress-controller"}})

    def close(self) -> None:
        for c in self.controllers:
            with contextlib.suppress(Exception):
                c.stop()
        for b in self.backends:
            b.stop()
        try:
            self.kube.close()
        finally:
            self.cluster.stop()

    # -------------------------------------------------------------------------------------- controller

    def settings(self, **kw: Any) -> Settings:
        """Settings for a test controller; keyword args replace fields of the sub-settings by name."""
        run_dir = tempfile.mkdtemp(prefix="ic-run-", dir="/tmp")
        conf_dir = os.path.join(self.tmp, f"conf-{len(self.controllers)}")
        self.cleanup_dirs.append(run_dir)
        s = Settings(
            kube=KubeSettings(kubeconfig=self.kubeconfig, pod_namespace="default",
                              pod_name="ingressctl-test"),
            nginx=NginxSettings(conf_dir=conf_dir, run_dir=run_dir, reload_timeout_ms=30000,
                                http_port=free_port(), https_port=free_port(), status=False),
            controller=ControllerSettings(ingress_class="nginx"),
            leader_election=LeaderElectionSettings(enabled=False),
            serving=ServingSettings(ready_status=True, ready_status_port=0),
        )
        parts = {"kube": s.kube, "nginx": s.nginx, "controller": s.controller,
                 "leader_election": s.leader_election, "serving": s.serving}
        for key, value in kw.items():
            for part_name, part in parts.items():
                if key in part.__dataclass_fields__:
                    parts[part_name] = replace(part, **{key: value})
                    break
            else:
                raise TypeError(f"unknown setting {key}")
        return Settings(**parts, log=s.log)  # type: ignore[arg-type]

    def controller(self, settings: Settings | None = None, *, start: bool = True, **kw: Any) -> Controller:
        c = Controller(self, settings or self.settings(**kw))
        self.controllers.append(c)
        if start:
            c.start()
        return c

    # -------------------------------------------------------------------------------------- objects

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        rt = _rt(obj)
        ns = obj["metadata"].get("namespace") if rt.namespaced else None
        return dict(self.kube.create(rt, ns, obj))

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create, or replace the existing object's spec/data/metadata labels+annotations."""
        from ingressctl.k8s.errors import ApiError

        rt = _rt(obj)
        md = obj["metadata"]
        ns = md.get("namespace") if rt.namespaced else None
        try:
            return dict(self.kube.create(rt, ns, obj))
        except ApiError as e:
            if not e.is_already_exists:
                raise
        cur = self.kube.get(rt, ns, md["name"])
        body = {**cur, **{k: v for k, v in obj.items() if k not in ("metadata", "status")}}
        keep = {k: v for k, v in md.items() if k in ("labels", "annotations")}
        body["metadata"] = {**cur["metadata"], **keep}
        return dict(self.kube.update(rt, ns, md["name"], body))

    def delete(self, kind: str, name: str, namespace: str | None = NS) -> None:
        from ingressctl.k8s.resource import by_plural

        self.kube.delete(by_plural(kind), namespace, name)

    def get(self, kind: str, name: str, namespace: str | None = NS) -> dict[str, Any]:
        from ingressctl.k8s.resource import by_plural

        return dict(self.kube.get(by_plural(kind), namespace, name))

    def backend(self, name: str) -> Backend:
        b = Backend(name).start()
        self.backends.append(b)
        return b

    def service(self, name: str, *, namespace: str = NS, port: int = 80, port_name: str = "http",
                target_port: int | str = 8080, **spec: Any) -> dict[str, Any]:
        body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
                "spec": {"ports": [{"name": port_name, "port": port, "targetPort": target_port}],
                         "selector": {"app": name}, **spec}}
        return self.apply(body)

    def endpoints(self, service: str, backends: list[Backend], *, namespace: str = NS,
                  port_name: str = "http", slice_name: str | None = None,
                  not_ready: list[Backend] | None = None) -> dict[str, Any]:
        """EndpointSlices for `service` whose endpoints are the given backends (all on 127.0.0.1, each on its
        own port: one slice per port, as Kubernetes does for pods with different container ports)."""
        by_port: dict[int, list[tuple[Backend, bool]]] = {}
        for b in backends:
            by_port.setdefault(b.port, []).append((b, True))
        for b in not_ready or []:
            by_port.setdefault(b.port, []).append((b, False))
        last: dict[str, Any] = {}
        wanted = set()
        for port, members in sorted(by_port.items()):
            name = f"{slice_name or service}-{port}"
            wanted.add(name)
            last = self.apply({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": name, "namespace": namespace,
                             "labels": {"kubernetes.io/service-name": service}},
                "addressType": "IPv4",
                "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
                "endpoints": [{"addresses": [b.host], "conditions": {"ready": ready},
                               "targetRef": {"kind": "Pod", "name": b.name, "namespace": namespace}}
                              for b, ready in members],
            })
        # Remove this Service's slices for ports no longer used (scale down).
        from ingressctl.k8s.resource import ENDPOINTSLICES

        existing = self.kube.list(ENDPOINTSLICES, namespace,
                                  label_selector=f"kubernetes.io/service-name={service}")["items"]
        for s in existing:
            n = s["metadata"]["name"]
            if n.startswith(f"{slice_name or service}-") and n not in wanted:
                self.kube.delete(ENDPOINTSLICES, namespace, n)
        return last

    def ingress(self, name: str, rules: list[dict[str, Any]] | None = None, *, namespace: str = NS,
                cls: str | None = "nginx", tls: list[dict[str, Any]] | None = None,
                annotations: dict[str, str] | None = None, default_backend: dict[str, Any] | None = None,
                apply: bool = True) -> dict[str, Any]:
        spec: dict[str, Any] = {"rules": rules or []}
        if cls is not None:
            spec["ingressClassName"] = cls
        if tls is not None:
            spec["tls"] = tls
        if default_backend is not None:
            spec["defaultBackend"] = default_backend
        md: dict[str, Any] = {"name": name, "namespace": namespace}
        if annotations:
            md["annotations"] = annotations
        body = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": md, "spec": spec}
        return self.apply(body) if apply else body

    def events(self, name: str | None = None, reason: str | None = None, namespace: str = NS,
               kind: str = "Ingress") -> list[dict[str, Any]]:
        from ingressctl.k8s.resource import EVENTS

        items = self.kube.list(EVENTS, namespace)["items"]
        out = []
        for e in items:
            io = e.get("involvedObject") or {}
            if kind and io.get("kind") != kind:
                continue
            if name is not None and io.get("name") != name:
                continue
            if reason is not None and e.get("reason") != reason:
                continue
            out.append(e)
        return out

    def wait_event(self, name: str, reason: str, contains: str = "", namespace: str = NS,
                   kind: str = "Ingress") -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            for e in self.events(name, reason, namespace, kind):
                if contains in (e.get("message") or ""):
                    return e
            return None

        what = f"event {reason} on {kind} {namespace}/{name} with {contains!r}"
        found: dict[str, Any] = wait_until(find, what)
        return found


def rule(host: str, *paths: tuple[Any, ...], path_type: str = "Prefix") -> dict[str, Any]:
    """A rule: rule("a.example.com", ("/x", "svc-x"), ("/y", "svc-y", "http"))."""
    out = []
    for p in paths:
        path, svc = p[0], p[1]
        port: int | str = p[2] if len(p) > 2 else 80
        port_spec = {"number": port} if isinstance(port, int) else {"name": port}
        out.append({"path": path, "pathType": path_type,
                    "backend": {"service": {"name": svc, "port": port_spec}}})
    return {"host": host, "http": {"paths": out}}


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _rt(obj: dict[str, Any]) -> Any:
    from ingressctl.k8s import resource

    table = {
        "Namespace": resource.NAMESPACES, "Service": resource.SERVICES, "Secret": resource.SECRETS,
        "ConfigMap": resource.CONFIGMAPS, "EndpointSlice": resource.ENDPOINTSLICES,
        "Ingress": resource.INGRESSES, "IngressClass": resource.INGRESSCLASSES, "Pod": resource.PODS,
    }
    return table[obj["kind"]]


def still_healthy(c: Controller) -> None:
    """The good Ingress still routes, and nothing crashed or failed a sync."""
    assert c.get(GOOD, "/").backend == "good"
    assert c.lbc.is_alive() and c.app.is_ready()
    assert c.lbc.stats.sync_errors == 0
