"""The resource-kind registry: one entry per configuration kind, read by the sync loop, the informer set-up,
the reporter and the metrics, so that adding a kind means adding an entry and its own modules.

Guarantees:
- A `ResourceKind` bundles what the controller needs to serve a kind: its API type (`ResourceType`, whose
  kind and apiVersion events name), informer transform, handler (the filter that enqueues `Task(name, key)`),
  its Configuration part (validator, reference extraction, resource builder; None for the kind the
  Configuration has built in), its model builder (resource -> renderer input, handed to the Configurator,
  whose renderer of the same name names and renders the file), its status writer, and its metric. A kind
  that only feeds other kinds (GlobalConfiguration) brings its own `sync` instead.
- Names are unique: registering a second entry with a taken name raises `ValueError`.
- The registry is built once, before the informers start, and is read-only afterwards (safe to read from any
  thread).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ingressctl.controller.configuration import (
    ConfigurationKind,
)
from ingressctl.controller.model import Resource
from ingressctl.controller.status import KindStatusWriter
from ingressctl.controller.task import Task
from ingressctl.k8s.reflector import Transform
from ingressctl.k8s.resource import ResourceType
from ingressctl.keys import ResourceKey

Enqueue = Callable[[Task], None]


class EventHandler(Protocol):
    """An informer event handler (see `handlers.py`)."""

    def on_add(self, obj: dict[str, Any], is_initial_list: bool = False) -> None: ...

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None: ...

    def on_delete(self, obj: Any) -> None: ...


@dataclass
class Applied:
    """The outcome of rendering one resource, for its events and status."""

    resource: Resource
    warnings: list[str]
    error: str = ""
    child_warnings: dict[str, list[str]] = field(default_factory=dict)  # child "namespace/name" -> warnings
    # child "namespace/name" -> why its part of the resource's file is not served (ReloadOutcome.failed_parts)
    child_errors: dict[str, str] = field(default_factory=dict)
    parts_served: bool = False  # the resource's error is its own: its children's parts are served


class KindBuilder(Protocol):
    """Builds a configured resource's renderer input from the caches and hands it to the Configurator."""

    def apply(self, resource: Resource) -> Applied:
        """Render the resource (its file is written if it changed); render errors come back with the next
        reload's outcome, exceptions propagate."""

    def forget(self, key: ResourceKey) -> None:
        """The resource is no longer configured: drop what the builder remembers about it."""


@dataclass(frozen=True)
class ResourceKind:
    """One kind's registry entry (see the module docstring)."""

    name: str                               # registry name: task kind, ResourceKey kind, renderer name
    rt: ResourceType                        # API type (events name its kind and apiVersion)
    handler: Callable[[Enqueue], EventHandler]
    builder: KindBuilder
    status: KindStatusWriter
    model: ConfigurationKind | None = None  # None: built into the Configuration (Ingress)
    transform: Transform | None = None
    metric_types: tuple[str, ...] = ()      # the `type` label values of its resource-count gauge
    # A kind outside the Configuration (GlobalConfiguration): its tasks go here ("namespace/name"), not to
    # the Configuration; such a kind has no model and configures nothing itself.
    sync: Callable[[str], None] | None = None
    # The admission webhook's validator of a kind without a Configuration part (Policy); kinds with one are
    # validated through it (`admission.registry_lookup`).
    admission: Callable[..., Any] | None = None


class KindRegistry:
    """The kinds this controller serves, in registration order."""

    def __init__(self, kinds: Sequence[ResourceKind] = ()) -> None:
        self._kinds: dict[str, ResourceKind] = {}
        for k in kinds:
            self.register(k)

    def register(self, kind: ResourceKind) -> None:
        if kind.name in self._kinds:
            raise ValueError(f"resource kind {kind.name!r} is registered twice")
        self._kinds[kind.name] = kind

    def get(self, name: str) -> ResourceKind | None:
        return self._kinds.get(name)

    def __getitem__(self, name: str) -> ResourceKind:
        return self._kinds[name]

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def __iter__(self) -> Iterator[ResourceKind]:
        return iter(self._kinds.values())

    def names(self) -> list[str]:
        return list(self._kinds)


class ConfigurationView(Protocol):
    """The read-only part of the Configuration the cross-object checks use."""

    ingress_class: str
    is_plus: bool
    snippets_enabled: bool
    ingress_nginx_compat: bool

    def has_correct_ingress_class(self, ing: Mapping[str, Any]) -> bool: ...

    def host_owner(self, host: str) -> ResourceKey | None: ...

    def shares_hosts(self, ing: Mapping[str, Any]) -> bool: ...

    def get_object(self, key: ResourceKey) -> dict[str, Any] | None: ...

    def api_kind(self, key: ResourceKey) -> str: ...


@dataclass
class Verdict:
    """A validator's answer: `message` empty means allowed; warnings are returned either way."""

    message: str = ""
    warnings: list[str] = field(default_factory=list)


# A validator gets the new object, the old one (UPDATE) or None, and the Configuration view.
Validator = Callable[[Mapping[str, Any], Mapping[str, Any] | None, ConfigurationView], Verdict]


@runtime_checkable
class PreparingBuilder(Protocol):
    """A kind builder that can build its renderer input ahead of `apply` (see `IngressBuilder.prepare`)."""

    def prepare(self, resource: Resource) -> tuple[ResourceKey, object]: ...
    def drop_prepared(self) -> None: ...


class NoBuilder:
    """The builder of a kind that only feeds other kinds (GlobalConfiguration, Pod, ingress-nginx's header
    ConfigMaps): it has no configuration resources of its own."""

    def __init__(self, api_kind: str = "GlobalConfiguration") -> None:
        self._api_kind = api_kind

    def apply(self, resource: Resource) -> Applied:
        raise TypeError(f"a {self._api_kind} is not a configuration resource")

    def forget(self, key: ResourceKey) -> None:
        pass


class NoStatus:
    """The status writer of a kind without status (GlobalConfigurations have none, NIC): `stateless`, so it
    gives the start-up status flush nothing to do."""

    writes = 0
    stateless = True

    def update_status(self, key: str) -> bool:
        return False

    def clear_status(self, key: str) -> bool:
        return False

    def safe_update(self, key: str, on_item: Callable[[str], None] | None = None) -> bool:
        return False
