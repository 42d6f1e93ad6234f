"""The TransportServer's and the GlobalConfiguration's registry entries (NIC's TransportServer path).

Guarantees:
- `TransportServerBuilder.apply` resolves each upstream's endpoints (and its backup Service's) from the
  informer caches and hands a `TransportServerEx` to the Configurator (its file:
  `stream-conf.d/ts_<ns>_<name>.conf`).
  A missing Service or port is a warning on the TransportServer and leaves that upstream without servers
  (connections to it fail at once); it never affects another resource. The Secret of `spec.tls.secret` (in
  the TransportServer's namespace) comes from the Secret store, which writes its PEM file on first use, as
  for Ingresses; the Configuration indexes that reference, so a change of the Secret re-renders the
  TransportServer and reloads NGINX.
- Its events and status carry all its warnings in NIC's TransportServer wording ("Configuration for ns/name
  was added or updated with warning(s): ..."): the resource's own and those of rendering (Service, Secret).
- `TransportServerStatus` writes NIC's status (`state` Valid / Warning / Invalid, `reason`, `message`) through
  the status subresource when it changes, only on the leader; the state is derived from the resource's
  current situation (configured, with warnings, rejected by validation, or a listener problem).
- `GlobalConfigurationSync` serves the one GlobalConfiguration named by `--global-configuration`: the
  TransportServers read its listeners from the informer cache (parsed once per resourceVersion), so their
  validation never depends on task order; each change of it gets NIC's event (`Updated`, or
  `AddedOrUpdatedWithError` listing the dropped listeners) and re-syncs every TransportServer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from typing import Any, Protocol

from ingressctl.controller.endpoints import BackendError, resolve_backend_endpoints
from ingressctl.controller.handlers import resource_version, tombstone_key, unwrap
from ingressctl.controller.kinds import Applied, Enqueue, EventHandler, NoBuilder, NoStatus, ResourceKind
from ingressctl.controller.model import Resource
from ingressctl.controller.reporter import custom_resource_added_event
from ingressctl.controller.status import safe_status_write
from ingressctl.controller.task import Task
from ingressctl.k8s.resource import ResourceType
from ingressctl.keys import ResourceKey, object_key, split_key
from ingressctl.kinds.passthrough import PassthroughTable
from ingressctl.kinds.transportserver.config import (
    PROTOCOL_TLS_PASSTHROUGH,
    TRANSPORTSERVER_KIND,
    TRANSPORTSERVER_TYPES,
    TransportServerEx,
    passthrough_socket_name,
)
from ingressctl.kinds.transportserver.globalconfiguration import Listeners, parse_listeners
from ingressctl.kinds.transportserver.model import TransportServerConfiguration, TransportServerModel
from ingressctl.kinds.transportserver.validation import tls_secret
from ingressctl.logging import get_logger
from ingressctl.secret_types import SecretReference
from ingressctl.validation import aggregate_message

log = get_logger(__name__)

GROUP, VERSION = "k8s.nginx.org", "v1"
TRANSPORTSERVERS = ResourceType(GROUP, VERSION, "transportservers", "TransportServer")
GLOBALCONFIGURATIONS = ResourceType(GROUP, VERSION, "globalconfigurations", "GlobalConfiguration")
GLOBALCONFIGURATION_KIND = "globalconfiguration"

STATE_VALID, STATE_WARNING, STATE_INVALID = "Valid", "Warning", "Invalid"


class Caches(Protocol):
    def get_object(self, name: str, key: str) -> dict[str, Any] | None: ...

    def endpoint_slices(self, namespace: str, service: str) -> list[dict[str, Any]]: ...


class StreamConfigurator(Protocol):
    def add_or_update(self, key: ResourceKey, resource: object) -> list[str]: ...


class SecretReferences(Protocol):
    def get_secret_reference(self, key: str) -> SecretReference: ...


class Controller(Protocol):
    """What the entries need from the controller."""

    configurator: Any
    configuration: Any
    status: Any
    secret_store: Any

    def get_object(self, name: str, key: str) -> dict[str, Any] | None: ...

    def endpoint_slices(self, namespace: str, service: str) -> list[dict[str, Any]]: ...

    def sync_resource(self, key: ResourceKey) -> None: ...

    @property
    def reporter(self) -> Any: ...

    @property
    def informers(self) -> Any: ...

    @property
    def kinds(self) -> Any: ...


# ------------------------------------------------------------------------------------------ listeners


class ListenerSource:
    """The watched GlobalConfiguration's listeners, from the informer cache, parsed once per version."""

    def __init__(self, key: str, cached: Callable[[str], dict[str, Any] | None],
                 forbidden_ports: Collection[int]) -> None:
        self.key = key
        self._cached = cached
        self._forbidden = tuple(forbidden_ports)
        self._version: str | None = None
        self._listeners = Listeners(key)
        self.errors: list[str] = []

    def __call__(self) -> Listeners:
        obj = self._cached(self.key) if self.key else None
        version = resource_version(obj) if obj is not None else None
        if version != self._version or obj is None:
            self._version = version
            listeners, errors = parse_listeners(obj or {}, self._forbidden)
            self._listeners = Listeners(self.key, listeners)
            self.errors = [str(e) for e in errors]
        return self._listeners


# ------------------------------------------------------------------------------------------ TransportServer


class TransportServerBuilder:
    """See the module docstring."""

    def __init__(self, caches: Caches, configurator: StreamConfigurator,
                 passthrough: PassthroughTable | None = None,
                 secrets: SecretReferences | None = None) -> None:
        self._caches = caches
        self._configurator = configurator
        self._passthrough = passthrough
        self._secrets = secrets
        self._warnings: dict[ResourceKey, list[str]] = {}  # of the last apply (read by the status writer)

    @property
    def passthrough(self) -> PassthroughTable | None:
        """The TLS passthrough host table (None: TLS passthrough is not enabled)."""
        return self._passthrough

    def _set_passthrough_host(self, key: ResourceKey, host: str | None) -> None:
        if self._passthrough is not None:
            socket = passthrough_socket_name(key.namespace, key.name)
            self._passthrough.set(key, {host: socket} if host else {})

    def forget(self, key: ResourceKey) -> None:
        self._set_passthrough_host(key, None)
        self._warnings.pop(key, None)

    def warnings(self, key: ResourceKey) -> list[str] | None:
        """The warnings of the resource's last apply; None if it was not applied (any thread)."""
        return self._warnings.get(key)

    def _endpoints(self, ns: str, service: str, port: int, warnings: list[str]) -> list[str]:
        svc = self._caches.get_object("services", f"{ns}/{service}")
        try:
            slices = self._caches.endpoint_slices(ns, service)
            return resolve_backend_endpoints(ns, service, port, svc, slices)
        except BackendError as e:
            warnings.append(str(e))
            return []

    def apply(self, resource: Resource) -> Applied:
        if not isinstance(resource, TransportServerConfiguration) or resource.listener is None:
            raise TypeError(f"not a configured TransportServer: {resource.key_with_kind}")
        ts = resource.obj
        ns = str(ts["metadata"].get("namespace") or "")
        warnings = list(resource.warnings)
        endpoints: dict[str, list[str]] = {}
        backups: dict[str, list[str]] = {}
        for u in ts["spec"].get("upstreams") or []:
            name = str(u["name"])
            endpoints[name] = self._endpoints(ns, str(u["service"]), int(u["port"]), warnings)
            if u.get("backup"):
                backups[name] = self._endpoints(ns, str(u["backup"]), int(u["backupPort"]), warnings)
        secret = tls_secret(ts["spec"])
        ref = (self._secrets.get_secret_reference(f"{ns}/{secret}")
               if secret and self._secrets is not None else None)
        ex = TransportServerEx(ts=ts, listener=resource.listener, endpoints=endpoints,
                               backup_endpoints=backups, tls_secret=ref)
        warnings += self._configurator.add_or_update(resource.key_with_kind, ex)
        if resource.listener.protocol == PROTOCOL_TLS_PASSTHROUGH:
            self._set_passthrough_host(resource.key_with_kind, str(ts["spec"]["host"]))
        self._warnings[resource.key_with_kind] = warnings
        # NIC's TransportServer event names every warning as the resource's own (no "; with warning(s)").
        return Applied(dataclasses.replace(resource, warnings=list(warnings)), warnings)


class TransportServerHandler:
    """Enqueues every TransportServer change (the Configuration filters the class)."""

    def __init__(self, enqueue: Enqueue) -> None:
        self._enqueue = enqueue

    def on_add(self, obj: dict[str, Any], is_initial_list: bool = False) -> None:
        self._enqueue(Task(TRANSPORTSERVER_KIND, object_key(obj)))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if resource_version(old) == resource_version(new):
            return
        if old.get("spec") == new.get("spec") and (old.get("metadata") or {}).get("generation") == \
                (new.get("metadata") or {}).get("generation"):
            return  # a status write
        self._enqueue(Task(TRANSPORTSERVER_KIND, object_key(new)))

    def on_delete(self, obj: Any) -> None:
        self._enqueue(Task(TRANSPORTSERVER_KIND, tombstone_key(obj) or object_key(unwrap(obj))))


class TransportServerStatus:
    """NIC's TransportServer status (see the module docstring)."""

    def __init__(self, client: Any, lbc: Controller, model: TransportServerModel,
                 is_leader: Callable[[], bool],
                 applied_warnings: Callable[[ResourceKey], list[str] | None] | None = None) -> None:
        self._client = client
        self._lbc = lbc
        self._model = model
        self._is_leader = is_leader
        self._applied_warnings = applied_warnings
        self.writes = 0

    def describe(self, key: str) -> tuple[str, str, str] | None:
        """(state, reason, message) of the TransportServer now; None when it does not exist."""
        obj = self._lbc.get_object(TRANSPORTSERVER_KIND, key)
        if obj is None:
            return None
        rkey = ResourceKey(TRANSPORTSERVER_KIND, key)
        res = self._lbc.configuration.get_resource(rkey)
        if res is not None:
            rejected = self._lbc.configurator.rejected.get(rkey) or ""
            applied = self._applied_warnings(rkey) if self._applied_warnings is not None else None
            warnings = list(res.warnings) if applied is None else list(applied)
            _, reason, message = custom_resource_added_event(key, warnings, [], rejected)
            state = STATE_INVALID if rejected else STATE_WARNING if warnings else STATE_VALID
            return state, reason, message
        problem = self._lbc.configuration.host_problems().get(rkey)
        if problem is not None:
            return STATE_WARNING, "Rejected", problem.message
        error = self._model.validate(obj)
        if error.startswith("Listener "):
            return STATE_WARNING, "Rejected", error
        if error:
            return STATE_INVALID, "Rejected", f"TransportServer {key} was rejected with error: {error}"
        return None

    def _write(self, key: str) -> bool:
        if not self._is_leader():
            return False
        desc = self.describe(key)
        if desc is None:
            return False
        obj = self._lbc.get_object(TRANSPORTSERVER_KIND, key) or {}
        status = dict(zip(("state", "reason", "message"), desc, strict=True))
        if {k: (obj.get("status") or {}).get(k) for k in status} == status:
            return False
        ns, name = split_key(key)
        self._client.patch(TRANSPORTSERVERS, ns, name, {"status": status}, subresource="status")
        self.writes += 1
        return True

    def update_status(self, key: str) -> bool:
        return self._write(key)

    def clear_status(self, key: str) -> bool:
        return self._write(key)

    def safe_update(self, key: str, on_item: Callable[[str], None] | None = None) -> bool:
        return safe_status_write(self._write, key, on_item, "TransportServer")


def transportserver_kind(lbc: Controller, client: Any, *, ingress_class: str, listeners: ListenerSource,
                         snippets_enabled: bool, is_leader: Callable[[], bool],
                         tls_passthrough_port: int | None = None,
                         stream_server_name: bool = False) -> ResourceKind:
    """The TransportServer's registry entry (`tls_passthrough_port`: TLS passthrough is enabled;
    `stream_server_name`: hosts on TCP listeners, selected by SNI)."""
    model = TransportServerModel(ingress_class, listeners, snippets_enabled=snippets_enabled,
                                 stream_server_name=stream_server_name,
                                 tls_passthrough=tls_passthrough_port is not None,
                                 tls_passthrough_port=tls_passthrough_port or 443)
    # The SNI split owns the port from the first reload on.
    passthrough = (PassthroughTable(tls_passthrough_port, lbc.configurator)
                   if tls_passthrough_port is not None else None)
    builder = TransportServerBuilder(lbc, lbc.configurator, passthrough, lbc.secret_store)
    return ResourceKind(name=TRANSPORTSERVER_KIND, rt=TRANSPORTSERVERS, handler=TransportServerHandler,
                        builder=builder, status=TransportServerStatus(client, lbc, model, is_leader,
                                                                      builder.warnings),
                        model=model, metric_types=TRANSPORTSERVER_TYPES)


# ---------------------------------------------------------------------------------------- GlobalConfiguration


class GlobalConfigurationHandler:
    """Enqueues changes of the one watched GlobalConfiguration."""

    def __init__(self, enqueue: Enqueue, key: str) -> None:
        self._enqueue = enqueue
        self._key = key

    def _maybe(self, key: str) -> None:
        if key == self._key:
            self._enqueue(Task(GLOBALCONFIGURATION_KIND, key))

    def on_add(self, obj: dict[str, Any], is_initial_list: bool = False) -> None:
        self._maybe(object_key(obj))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if resource_version(old) != resource_version(new):
            self._maybe(object_key(new))

    def on_delete(self, obj: Any) -> None:
        self._maybe(tombstone_key(obj) or object_key(unwrap(obj)))


class GlobalConfigurationSync:
    """See the module docstring."""

    def __init__(self, lbc: Controller, listeners: ListenerSource) -> None:
        self._lbc = lbc
        self._listeners = listeners

    def __call__(self, key: str) -> None:
        gc = self._lbc.get_object(GLOBALCONFIGURATION_KIND, key)
        self._listeners()  # re-parse now, so that its errors are current
        if gc is not None:
            errors = self._listeners.errors
            if errors:
                self._lbc.reporter.event(gc, GLOBALCONFIGURATION_KIND, "Warning", "AddedOrUpdatedWithError",
                                         f"GlobalConfiguration {key} is updated with errors: "
                                         f"{aggregate_message(errors)}")
            else:
                self._lbc.reporter.event(gc, GLOBALCONFIGURATION_KIND, "Normal", "Updated",
                                         f"GlobalConfiguration {key} was added or updated")
        for ts in self._lbc.informers.list(TRANSPORTSERVER_KIND):
            self._lbc.sync_resource(ResourceKey(TRANSPORTSERVER_KIND, object_key(ts)))
        # VirtualServers' `spec.listener` names its HTTP listeners.
        if "virtualserver" in self._lbc.kinds:
            for vs in self._lbc.informers.list("virtualserver"):
                self._lbc.sync_resource(ResourceKey("virtualserver", object_key(vs)))


def globalconfiguration_kind(lbc: Controller, listeners: ListenerSource) -> ResourceKind:
    """The GlobalConfiguration's registry entry: outside the Configuration, it feeds the TransportServers."""

    def handler(enqueue: Enqueue) -> EventHandler:
        return GlobalConfigurationHandler(enqueue, listeners.key)

    return ResourceKind(name=GLOBALCONFIGURATION_KIND, rt=GLOBALCONFIGURATIONS, handler=handler,
                        builder=NoBuilder(), status=NoStatus(),
                        sync=GlobalConfigurationSync(lbc, listeners))
