"""The Configurator's side of routes (configs.routes): whether they are on, the shapes and capturing server
names of every resource, and the spare upstreams (conf.d/ingressctl-route-spares.conf).

Guarantees:
- `captures()` is the union of every resource's wildcard and regex server names (`set_captures` says when
  it changed: every resource must then be rendered again, since a host they capture keeps its server block).
- `context(...)` is the RouteContext of a render; `shapes()` the (named location, client_max_body_size)
  pairs nginx.conf declares: every shape a routed location uses, and the ConfigMap's.
- `spares(...)` renders the spares (the Ingress template's upstream blocks of the ConfigMap's settings, in
  the dynamic form) only when their count or the ConfigMap changed, and hands them to the file engine's
  RouteUpdates; it returns what they reserve in the shared upstream zone, or None when nothing changed.
- Not thread-safe: the Configurator's thread owns it.
"""

from __future__ import annotations

from ingressctl.configs.config import ZONE_BYTES_PER_SERVER, ProxyDefaults, error_server_address
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.dynamic_upstreams import DynamicUpstreams
from ingressctl.configs.route_updates import RouteUpdates
from ingressctl.configs.routes import RouteContext, RouteShapes, shape_of, spares_config
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.keys import ResourceKey


class RouteState:
    """See the module docstring."""

    def __init__(self) -> None:
        self.enabled = False  # nginx.conf serves the routes module's table
        self.updates: RouteUpdates | None = None
        self.route_shapes = RouteShapes()
        self._captures: dict[ResourceKey, frozenset[str]] = {}
        self._union: frozenset[str] = frozenset()
        self._spares: tuple[int, ConfigParams | None, str] = (0, None, "")

    def captures(self) -> frozenset[str]:
        return self._union

    def set_captures(self, key: ResourceKey, names: frozenset[str]) -> bool:
        """Record `key`'s capturing server names; True when the union changed while routes are on."""
        if self._captures.get(key, frozenset()) == names:
            return False
        if names:
            self._captures[key] = names
        else:
            self._captures.pop(key, None)
        union = frozenset().union(*self._captures.values()) if self._captures else frozenset()
        changed = union != self._union
        self._union = union
        return changed and self.enabled

    @staticmethod
    def context(static: StaticConfigParams, config: ConfigParams, defaults: ProxyDefaults,
                captures: frozenset[str]) -> RouteContext:
        return RouteContext(static.http_port, static.https_port, config.server_tokens, defaults.keepalive,
                            defaults.connect_timeout, defaults.read_timeout, defaults.send_timeout,
                            defaults.buffering, captures)

    def shapes(self, config: ConfigParams) -> tuple[tuple[str, str], ...]:
        if not self.enabled:
            return ()
        sizes = self.route_shapes.all() | {config.client_max_body_size}
        return tuple(sorted((s, size) for size in sizes if (s := shape_of(size))))

    @property
    def spares_text(self) -> str:
        return self._spares[2]

    def spares(self, count: int, config: ConfigParams, templates: TemplateExecutor,
               static: StaticConfigParams) -> int | None:
        """Render `count` spares if that or the ConfigMap changed (0: none); what they reserve in the
        shared zone, or None when nothing changed."""
        if (count, config) == self._spares[:2]:
            return None
        text, reserved = "", 0
        if count:
            cfg = spares_config(count, config)
            slotter = DynamicUpstreams(error_server_address(static.run_dir))
            body = templates.execute_ingress_template(cfg)
            text = slotter.slot("spares", body[body.index("\nupstream ") + 1:])
            reserved = (sum(u.zone_bytes() for u in cfg.upstreams)
                        + slotter.spare_slots("spares") * ZONE_BYTES_PER_SERVER)
        self._spares = (count, config, text)
        if self.updates is not None:
            self.updates.set_spares(text)
        return reserved
