"""Per-kind renderers: a configuration resource's model -> the text of its conf.d file, and its file name.

Guarantees:
- A `Renderer` serves one kind (its registry name, e.g. "ingress"), names that kind's files (NIC's names:
  Ingress `<ns>-<name>`; a VirtualServer would be `vs_<ns>_<name>`), renders one resource, and counts its
  resources for the `ingress_resources_total{type}`-style metrics. It never writes a file: the Configurator
  hands the text to the file engine.
- With `RenderContext.routes` (nginx.conf serves the routes module's table) and the built-in Ingress
  template, the servers configs.routes finds routable are rendered as route blocks after the template's
  output, and carry no certificate map entry (the module serves their certificates).
- `IngressRenderer` renders a regular Ingress (`IngressEx`) or a master with its minions
  (`MergeableIngresses`) into one file named after the Ingress (the master); minions have no file. With a
  class-wide catch-all (`RenderContext.catch_all`) the other servers send their unmatched paths and hosts
  to it. A render
  error (invalid annotation, unsafe value, broken custom template) raises `ValueError` or
  `TemplateRenderError`.
- A `PartSplitter` (the `IngressRenderer`: the members of an Ingress's shared hosts) names the parts other
  resources have in a file and renders the file with some of them swapped for other versions or left out,
  so that one NGINX refuses can be kept at its last served version alone (configs.part_isolation).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ingressctl.configs.config import (
    ProxyDefaults,
    Server,
)
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.routes import RouteContext, render_routes, shapes_of, split_routed
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.keys import INGRESS_KIND, ResourceKey, resource_version
from ingressctl.kinds.ingress.catch_all import catch_all_upstream
from ingressctl.kinds.ingress.config import (
    generate_nginx_config_for_mergeable,
    generate_regular_config,
)
from ingressctl.kinds.ingress.ingress_ex import INGRESS_TYPES, IngressEx, MergeableIngresses
from ingressctl.kinds.ingress.model import claimed_hosts


@dataclass(frozen=True)
class RenderContext:
    """What every renderer reads: the static and ConfigMap params, the templates, the replica count."""

    static: StaticConfigParams
    config: ConfigParams
    templates: TemplateExecutor
    replicas: int = 1
    catch_all: str = ""     # the class-wide catch-all's upstream ("" without one)
    # What nginx.conf declares at the http level (None: a custom main template, which may not)
    proxy_defaults: ProxyDefaults | None = None
    # nginx.conf serves the routes module's table: routable servers become routes (configs.routes)
    routes: RouteContext | None = None


@dataclass
class Rendered:
    """One resource rendered: its file text, warnings, what its upstreams reserve in the shared zone, and
    warnings that belong to child resources (a minion's, by its "namespace/name")."""

    text: str
    warnings: list[str]
    zone_bytes: int = 0
    child_warnings: dict[str, list[str]] = field(default_factory=dict)
    # host -> PEM path of the servers whose certificate is loaded at handshakes (configs.certificate_map)
    certificates: dict[str, str] = field(default_factory=dict)
    route_shapes: frozenset[str] = frozenset()  # client_max_body_size of its routed hosts' locations


class Renderer(Protocol):
    """One kind's renderer (see the module docstring)."""

    kind: str

    def file_name(self, key: ResourceKey) -> str: ...

    def render(self, resource: object, ctx: RenderContext) -> Rendered: ...

    def catch_all(self, resource: object) -> str:
        """The upstream of the class-wide catch-all this resource is ("" when it is not the catch-all)."""

    def counts(self, resources: Iterable[object]) -> dict[str, int]: ...


@dataclass(frozen=True)
class Parts:
    """A resource's version and the versions of the parts other resources have in its file, in render
    order."""

    version: str
    versions: dict[ResourceKey, str]


@runtime_checkable
class PartSplitter(Protocol):
    """A renderer whose files carry parts of other resources (an Ingress the members of its shared hosts),
    which it can render with some of them swapped for other versions or left out (configs.part_isolation)."""

    def parts(self, resource: object) -> Parts: ...

    def part_objects(self, resource: object) -> dict[ResourceKey, object]:
        """The parts of `resource`, as `with_parts` takes them (asked at every render: cheap)."""

    def with_parts(self, resource: object, replace: Mapping[ResourceKey, object | None]) -> object:
        """`resource` with each part named in `replace` swapped for the object given (None: left out)."""

    def with_parts_of(self, resource: object, donor: object) -> object:
        """`resource` (one version of a resource) with the parts of `donor` (another version of it)."""


@runtime_checkable
class ChildCounter(Protocol):
    """A renderer whose resources carry another kind's objects (a VirtualServer its VirtualServerRoutes),
    counted for that kind's `<kind>_resources_total{type}`."""

    def child_counts(self, resources: Iterable[object]) -> dict[str, dict[str, int]]: ...


class IngressRenderer:
    """Ingresses: regular ones and masters with their minions (NIC's `ingress.tmpl`)."""

    kind = INGRESS_KIND

    def file_name(self, key: ResourceKey) -> str:
        return key.ns_name.replace("/", "-")  # NIC's <namespace>-<name>

    def render(self, resource: object, ctx: RenderContext) -> Rendered:
        if isinstance(resource, MergeableIngresses):
            result = generate_nginx_config_for_mergeable(
                resource, ctx.static, ctx.config, replicas=ctx.replicas, to_catch_all=bool(ctx.catch_all),
                proxy_defaults=ctx.proxy_defaults)
            warnings = list(result.warnings)
            for minion_key, ws in result.minion_warnings.items():
                warnings.extend(f"minion {minion_key}: {w}" for w in ws)
            cfg = result.config
            child = {k: list(v) for k, v in result.minion_warnings.items()}
        elif isinstance(resource, IngressEx):  # (with the members of its shared hosts: their own warnings)
            result = generate_regular_config(resource, ctx.static, ctx.config, replicas=ctx.replicas,
                                             to_catch_all=bool(ctx.catch_all),
                                             proxy_defaults=ctx.proxy_defaults)
            cfg, warnings = result.config, result.warnings
            child = {k: list(v) for k, v in result.minion_warnings.items()}
        else:
            raise TypeError(f"not an Ingress resource: {type(resource).__name__}")
        routed: list[Server] = []
        if ctx.routes is not None and ctx.templates.is_ingress_builtin:
            cfg, routed = split_routed(cfg, ctx.routes)
        text = ctx.templates.execute_ingress_template(cfg)
        if routed:
            assert ctx.routes is not None
            text += "".join(render_routes(cfg, s, ctx.routes) for s in routed)
        certificates = {s.name: s.ssl_certificate for s in cfg.servers if s.certificate_per_handshake}
        return Rendered(text, warnings, sum(u.zone_bytes() for u in cfg.upstreams), child, certificates,
                        shapes_of(routed))

    def parts(self, resource: object) -> Parts:
        """The members of a regular Ingress's shared hosts, by resourceVersion, oldest first. A master's
        minions are not parts: as NIC, a minion NGINX refuses takes its master's file."""
        if not isinstance(resource, IngressEx):
            return Parts("", {})
        return Parts(resource_version(resource.ingress),
                     {m.key_with_kind: resource_version(m.ingress) for m in resource.members})

    def part_objects(self, resource: object) -> dict[ResourceKey, object]:
        members = resource.members if isinstance(resource, IngressEx) else ()
        return {m.key_with_kind: m for m in members} if members else {}

    def with_parts(self, resource: object, replace: Mapping[ResourceKey, object | None]) -> object:
        if not isinstance(resource, IngressEx):
            return resource
        members = (replace.get(m.key_with_kind, m) for m in resource.members)
        return dataclasses.replace(resource, members=tuple(m for m in members if isinstance(m, IngressEx)))

    def with_parts_of(self, resource: object, donor: object) -> object:
        if not isinstance(resource, IngressEx) or not isinstance(donor, IngressEx):
            return resource
        return dataclasses.replace(resource, members=donor.members)

    def catch_all(self, resource: object) -> str:
        """A regular Ingress without rules that owns the catch-all names its defaultBackend's upstream."""
        return catch_all_upstream(resource) if isinstance(resource, IngressEx) else ""

    def counts(self, resources: Iterable[object]) -> dict[str, int]:
        """regular, master and minion Ingresses; the members of a shared host count as regular ones here when
        they share every host they name (else their own resource counts them)."""
        out = dict.fromkeys(INGRESS_TYPES, 0)
        for r in resources:
            if isinstance(r, MergeableIngresses):
                out["master"] += 1
                out["minion"] += len(r.minions)
            else:
                out["regular"] += 1
                if isinstance(r, IngressEx) and r.members:
                    out["regular"] += sum(1 for m in r.members if m.valid_hosts.keys() >= set(
                        claimed_hosts(m.ingress.get("spec") or {})))
        return out

