"""The VirtualServer's registry entry: its API type, informer handler, model builder and status writer.

Guarantees:
- `VirtualServerHandler` enqueues VirtualServers of our class (empty class or `--ingress-class`); an update
  only when the spec or the class changed (NIC: status writes never retrigger a sync), or, for a
  VirtualServerRoute, its labels (`routeSelector`); deletes always.
- `VirtualServerBuilder.apply` resolves every upstream from the informer caches (ready EndpointSlice
  endpoints of the Service port, in the upstream's own namespace or the one `namespace/name` names, only
  those on Pods matching a `subselector`, or the cluster IP with `use-cluster-ip`), the TLS Secret from
  the LocalSecretStore, and hands the `VirtualServerEx` to the Configurator (`conf.d/vs_<ns>_<name>.conf`).
  An upstream whose Service or port is missing answers 502. Policy references of the VirtualServer and its
  VirtualServerRoutes are resolved by the Policy kind's store (without one, every reference is missing).
- `VirtualServerStatusWriter` writes `status.state/reason/message/externalEndpoints` (and a
  VirtualServerRoute's `referencedBy`, its VirtualServer) from the latest event the reporter recorded for
  it (NIC derives a CR's state from its event reason): only by the leader (custom-resource status does not
  depend on `--report-ingress-status`), only when something changed, with one retry after a fresh read on a
  failed write.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Collection, Iterable
from typing import Any, Protocol

from ingressctl.configs.renderers import Renderer
from ingressctl.controller.endpoints import BackendError, cluster_ip_endpoint, resolve_backend_endpoints
from ingressctl.controller.handlers import _safe, resource_version, tombstone_key, unwrap
from ingressctl.controller.kinds import Applied, Enqueue, EventHandler, ResourceKind
from ingressctl.controller.model import Resource
from ingressctl.controller.status import Address, safe_status_write
from ingressctl.controller.task import Task
from ingressctl.k8s.resource import ResourceType
from ingressctl.keys import ResourceKey, object_key, split_key
from ingressctl.kinds.policy.refs import with_extras
from ingressctl.kinds.transportserver.globalconfiguration import Listeners
from ingressctl.kinds.transportserver.kind import GLOBALCONFIGURATION_KIND, ListenerSource
from ingressctl.kinds.virtualserver.config import service_ref, vsr_endpoints_key
from ingressctl.kinds.virtualserver.model import (
    VirtualServerConfiguration,
    VirtualServerModel,
    VirtualServerRouteModel,
    vs_class_is_ours,
)
from ingressctl.kinds.virtualserver.pods import POD_KIND, subselected_slices
from ingressctl.kinds.virtualserver.policies import vs_policy_references
from ingressctl.kinds.virtualserver.renderer import VirtualServerRenderer
from ingressctl.kinds.virtualserver.template_model import (
    VS_KIND,
    VS_TYPES,
    VSR_KIND,
    CustomListeners,
    VirtualServerEx,
)
from ingressctl.logging import get_logger
from ingressctl.policies.base import ResolvedPolicy
from ingressctl.secret_types import SecretReference

log = get_logger(__name__)

VIRTUALSERVERS = ResourceType("k8s.nginx.org", "v1", "virtualservers", "VirtualServer")
VIRTUALSERVERROUTES = ResourceType("k8s.nginx.org", "v1", "virtualserverroutes", "VirtualServerRoute")

STATE_VALID, STATE_WARNING, STATE_INVALID = "Valid", "Warning", "Invalid"


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _labels(obj: dict[str, Any]) -> dict[str, Any]:
    return _d(_d(obj.get("metadata")).get("labels"))


class VirtualServerHandler:
    """See the module docstring (VirtualServers and VirtualServerRoutes alike)."""

    def __init__(self, enqueue: Enqueue, ingress_class: str, kind: str = VS_KIND) -> None:
        self._enqueue = enqueue
        self._class = ingress_class
        self._kind = kind

    @_safe
    def on_add(self, obj: dict[str, Any], is_initial_list: bool = False) -> None:
        if vs_class_is_ours(obj, self._class):
            self._enqueue(Task(self._kind, object_key(obj)))

    @_safe
    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if resource_version(old) == resource_version(new):
            return
        # A VirtualServerRoute's labels decide which `routeSelector`s attach it (NIC 5.4+).
        if old.get("spec") == new.get("spec") and (
                self._kind != VSR_KIND or _labels(old) == _labels(new)):
            return
        if vs_class_is_ours(old, self._class) or vs_class_is_ours(new, self._class):
            self._enqueue(Task(self._kind, object_key(new)))

    @_safe
    def on_delete(self, obj: Any) -> None:
        self._enqueue(Task(self._kind, tombstone_key(obj) or object_key(unwrap(obj))))


class Caches(Protocol):
    def get_object(self, name: str, key: str) -> dict[str, Any] | None: ...

    def endpoint_slices(self, namespace: str, service: str) -> list[dict[str, Any]]: ...


class SecretReferences(Protocol):
    def get_secret_reference(self, key: str) -> SecretReference: ...


class KindConfigurator(Protocol):
    def add_or_update(self, key: ResourceKey, resource: object) -> list[str]: ...

    def child_warnings(self, key: ResourceKey) -> dict[str, list[str]]: ...


class PolicyResolver(Protocol):
    def resolve_for(self, owners: Iterable[tuple[str, Iterable[Any]]]) -> dict[str, ResolvedPolicy]: ...


class VirtualServerBuilder:
    """See the module docstring."""

    def __init__(self, caches: Caches, secrets: SecretReferences, configurator: KindConfigurator,
                 policies: PolicyResolver | None = None) -> None:
        self._caches = caches
        self._secrets = secrets
        self._configurator = configurator
        self._policies = policies

    def forget(self, key: ResourceKey) -> None:
        pass

    def create_ex(self, vs: dict[str, Any], vsrs: list[dict[str, Any]] | None = None,
                  route_vsrs: dict[int, list[str]] | None = None,
                  listeners: CustomListeners | None = None) -> tuple[VirtualServerEx, list[str]]:
        meta, spec = _d(vs.get("metadata")), _d(vs.get("spec"))
        ns = str(meta.get("namespace") or "")
        warnings: list[str] = []
        endpoints: dict[str, list[str]] = {}
        self._resolve(ns, spec.get("upstreams") or [], lambda up: up, endpoints)
        for vsr in vsrs or []:
            vm = _d(vsr.get("metadata"))
            vns, vname = str(vm.get("namespace") or ""), str(vm.get("name") or "")
            self._resolve(vns, _d(vsr.get("spec")).get("upstreams") or [],
                          functools.partial(vsr_endpoints_key, vns, vname), endpoints)
        secret = _d(spec.get("tls")).get("secret")
        ref = self._secrets.get_secret_reference(f"{ns}/{secret}") if secret else None
        policies = (self._policies.resolve_for(vs_policy_references(vs, vsrs or []))
                    if self._policies is not None else {})
        policies, policy_endpoints = with_extras(policies, self._caches.get_object,
                                                 self._caches.endpoint_slices)
        return VirtualServerEx(vs=vs, endpoints=endpoints, tls_secret=ref, vsrs=list(vsrs or []),
                               route_vsrs=dict(route_vsrs or {}), listeners=listeners,
                               policies=policies, policy_endpoints=policy_endpoints), warnings

    def _resolve(self, ns: str, upstreams: list[Any], key: Callable[[str], str],
                 endpoints: dict[str, list[str]]) -> None:
        """Each upstream's endpoints, into `endpoints[key(name)]`."""
        for up in upstreams:
            u = _d(up)
            name, port = str(u.get("name")), u.get("port")
            svc_ns, svc_name = service_ref(ns, str(u.get("service")))   # NIC 5.3+: `namespace/name`
            svc = self._caches.get_object("services", f"{svc_ns}/{svc_name}")
            try:
                if u.get("use-cluster-ip") and svc is not None:
                    endpoints[key(name)] = cluster_ip_endpoint(svc, int(port or 0))
                else:
                    slices = self._caches.endpoint_slices(svc_ns, svc_name)
                    if u.get("subselector"):    # NIC: only the endpoints on Pods with these labels too
                        slices = subselected_slices(slices, svc_ns, _d(u["subselector"]), self._pod)
                    endpoints[key(name)] = resolve_backend_endpoints(svc_ns, svc_name, int(port or 0), svc,
                                                                     slices)
            except BackendError as e:
                log.debug("virtualserver upstream without endpoints", upstream=name, error=str(e))
                endpoints[key(name)] = []

    def _pod(self, key: str) -> dict[str, Any] | None:
        return self._caches.get_object(POD_KIND, key)

    def apply(self, resource: Resource) -> Applied:
        if not isinstance(resource, VirtualServerConfiguration):
            raise TypeError(f"not a VirtualServer: {resource.key_with_kind}")
        ex, warnings = self.create_ex(resource.obj, [obj for _, obj in resource.vsrs], resource.route_vsrs,
                                      resource.listeners)
        rendered = self._configurator.add_or_update(resource.key_with_kind, ex)
        return Applied(resource, list(resource.warnings) + warnings + list(rendered),
                       child_warnings=self._configurator.child_warnings(resource.key_with_kind))


def state_of(event_type: str, reason: str, message: str) -> str:
    """NIC's state for an event reason."""
    if reason == "AddedOrUpdated":
        return STATE_VALID
    if reason.endswith("WithWarning") or reason in ("NoVirtualServerFound", "Ignored"):
        return STATE_WARNING
    if reason == "Rejected" and event_type == "Warning" and (
            "with warning(s)" in message or "taken by" in message):
        return STATE_WARNING
    return STATE_INVALID


class StatusClient(Protocol):
    def get(self, rt: Any, namespace: str | None, name: str) -> dict[str, Any]: ...

    def update_status(self, rt: Any, namespace: str | None, name: str,
                      body: dict[str, Any]) -> dict[str, Any]: ...


class VirtualServerStatusWriter:
    """See the module docstring. Thread-safe."""

    def __init__(self, client: StatusClient, *, get_cached: Callable[[str], dict[str, Any] | None],
                 is_leader: Callable[[], bool], addresses: Callable[[], list[Address]],
                 rt: ResourceType = VIRTUALSERVERS,
                 referenced_by: Callable[[str], str] | None = None) -> None:
        """`referenced_by` (VirtualServerRoutes): the VirtualServer ("namespace/name") a VirtualServerRoute is
        configured in now, "" for none; read when an event is observed (on the sync thread)."""
        self._rt = rt
        self._client = client
        self._get_cached = get_cached
        self._is_leader = is_leader
        self._addresses = addresses
        self._lock = threading.Lock()
        self._outcomes: dict[str, tuple[str, str, str, str]] = {}   # key -> (state, reason, message, by)
        self._referenced_by = referenced_by
        self._writes = 0

    @property
    def writes(self) -> int:
        with self._lock:
            return self._writes

    def observe_event(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        """The reporter's latest event on a VirtualServer: the state the next status write reports."""
        key = object_key(obj)
        by = self._referenced_by(key) if self._referenced_by is not None else ""
        with self._lock:
            self._outcomes[key] = (state_of(event_type, reason, message), reason, message, by)

    def update_status(self, key: str) -> bool:
        return self._write(key)

    def clear_status(self, key: str) -> bool:
        return self._write(key)

    def safe_update(self, key: str, on_item: Callable[[str], None] | None = None) -> bool:
        return safe_status_write(self._write, key, on_item, "VirtualServer")

    def _desired(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            outcome = self._outcomes.get(key)
        if outcome is None:
            return None
        state, reason, message, by = outcome
        desired = {"state": state, "reason": reason, "message": message,
                   "externalEndpoints": [dict(a) for a in self._addresses()]}
        if self._referenced_by is not None:     # NIC: a VirtualServerRoute names its VirtualServer
            desired["referencedBy"] = by
        return desired

    def _current(self, obj: dict[str, Any]) -> dict[str, Any]:
        st = _d(obj.get("status"))
        current = {"state": st.get("state", ""), "reason": st.get("reason", ""),
                   "message": st.get("message", ""), "externalEndpoints": st.get("externalEndpoints") or []}
        if self._referenced_by is not None:
            current["referencedBy"] = st.get("referencedBy", "")
        return current

    def _write(self, key: str) -> bool:
        if not self._is_leader():
            return False
        desired = self._desired(key)
        cached = self._get_cached(key)
        if desired is None or cached is None or self._current(cached) == desired:
            return False
        ns, name = split_key(key)
        try:
            self._client.update_status(self._rt, ns, name, {**cached, "status": desired})
        except Exception as first:
            log.debug("virtualserver status update failed, retrying with a fresh read", virtualserver=key,
                      error=str(first))
            try:
                fresh = self._client.get(self._rt, ns, name)
            except Exception as e:
                if getattr(e, "is_not_found", False):
                    return False
                raise
            if self._current(fresh) == desired:
                return False
            self._client.update_status(self._rt, ns, name, {**fresh, "status": desired})
        with self._lock:
            self._writes += 1
        return True


class VirtualServerRouteBuilder:
    """A VirtualServerRoute has no file of its own: it is rendered inside its VirtualServer's."""

    def apply(self, resource: Resource) -> Applied:
        raise TypeError(f"{resource.key_with_kind} is configured through its VirtualServer")

    def forget(self, key: ResourceKey) -> None:
        pass


class ControllerLike(Protocol):
    """What the VirtualServer kind needs from the LoadBalancerController."""

    configurator: Any   # the Configurator (register_renderer, add_or_update)
    configuration: Any  # the Configuration (host owners, configured resources)
    secret_store: Any
    status: Any
    options: Any

    def get_object(self, name: str, key: str) -> dict[str, Any] | None: ...

    def endpoint_slices(self, namespace: str, service: str) -> list[dict[str, Any]]: ...


def _status_writer(client: StatusClient, lbc: ControllerLike, kind: str, rt: ResourceType,
                   referenced_by: Callable[[str], str] | None = None) -> VirtualServerStatusWriter:
    return VirtualServerStatusWriter(client, get_cached=lambda key: lbc.get_object(kind, key),
                                     is_leader=lbc.status.is_leader, addresses=lbc.status.external_endpoints,
                                     rt=rt, referenced_by=referenced_by)


def vsr_referenced_by(lbc: ControllerLike, key: str) -> str:
    """The VirtualServer ("namespace/name") the VirtualServerRoute `key` is configured in, "" for none."""
    vsr = lbc.get_object(VSR_KIND, key)
    owner = lbc.configuration.host_owner(str(_d(_d(vsr).get("spec")).get("host"))) if vsr else None
    if owner is None or owner.kind != VS_KIND:
        return ""
    res = lbc.configuration.get_resource(owner)
    attached = res is not None and any(k.ns_name == key for k, _ in res.children())
    return owner.ns_name if attached else ""


def virtualserver_kind_factory(client: StatusClient, *, template_path: str | None = None,
                               policies: PolicyResolver | None = None, global_configuration: str = "",
                               forbidden_ports: Collection[int] = ()
                               ) -> Callable[[ControllerLike], ResourceKind]:
    """The VirtualServer's registry entry's factory (the controller calls it with itself). The template is
    compiled here, so a broken `--virtualserver-template-path` fails before anything starts
    (`TemplateError`). `global_configuration` ("namespace/name", `--global-configuration`) holds the HTTP
    listeners `spec.listener` names; `forbidden_ports` are the ports its listeners may not use."""
    renderer: Renderer = VirtualServerRenderer(template_path)   # checked against the Configurator's protocol

    def factory(lbc: ControllerLike) -> ResourceKind:
        ingress_class = lbc.options.ingress_class
        lbc.configurator.register_renderer(renderer)

        def cached_gc(key: str) -> dict[str, Any] | None:
            return lbc.get_object(GLOBALCONFIGURATION_KIND, key)

        source = ListenerSource(global_configuration, cached_gc, forbidden_ports)

        def listeners() -> Listeners | None:
            """None when no GlobalConfiguration is deployed (NIC's warning)."""
            if not global_configuration or cached_gc(global_configuration) is None:
                return None
            return source()

        def handler(enqueue: Enqueue) -> EventHandler:
            return VirtualServerHandler(enqueue, ingress_class)

        return ResourceKind(name=VS_KIND, rt=VIRTUALSERVERS, handler=handler,
                            builder=VirtualServerBuilder(lbc, lbc.secret_store, lbc.configurator, policies),
                            status=_status_writer(client, lbc, VS_KIND, VIRTUALSERVERS),
                            model=VirtualServerModel(ingress_class, listeners), metric_types=VS_TYPES)

    return factory


def virtualserverroute_kind_factory(client: StatusClient) -> Callable[[ControllerLike], ResourceKind]:
    """The VirtualServerRoute's registry entry's factory."""

    def factory(lbc: ControllerLike) -> ResourceKind:
        ingress_class = lbc.options.ingress_class

        def handler(enqueue: Enqueue) -> EventHandler:
            return VirtualServerHandler(enqueue, ingress_class, VSR_KIND)

        return ResourceKind(name=VSR_KIND, rt=VIRTUALSERVERROUTES, handler=handler,
                            builder=VirtualServerRouteBuilder(),
                            status=_status_writer(client, lbc, VSR_KIND, VIRTUALSERVERROUTES,
                                                  functools.partial(vsr_referenced_by, lbc)),
                            model=VirtualServerRouteModel(ingress_class), metric_types=VS_TYPES)

    return factory
