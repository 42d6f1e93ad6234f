"""ingress-nginx's canaries of a regular Ingress applied onto its servers: each location of a path a canary
shares with the primary proxies to the choice `canary.choice` makes (see `canary.py` for the rules).

Guarantees:
- Only the primary's hosts (those it owns) and the canary paths `canary.matching_paths` keeps (the paths of
  the members of a shared host count as the primary's: the canary splits their locations); the locations
  are found with the primary's own location rules (`location_keys`: its pathTypes, `nginx.org/path-regex`,
  ingress-nginx's regex mode), so the canary path maps onto exactly the primary's locations of that path.
- One canary per location: the first (by key) wins, as ingress-nginx takes one alternative backend.
- A location that appends a URI to `proxy_pass` (`nginx.org/rewrites`) and the catch-all's are left alone.
- Canary upstreams are built by the primary's settings with the canary's name and endpoints.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ingressctl.configs.config import CanarySplit, Server, Upstream, ValueMap, derive
from ingressctl.kinds.ingress.ingress_ex import IngressEx
from ingressctl.kinds.ingress.ingress_nginx import canary
from ingressctl.kinds.ingress.locations import (
    PATH_TYPE_IMPLEMENTATION_SPECIFIC,
    ServiceBackend,
    service_backend,
)


class UpstreamBuilder(Protocol):
    upstreams: dict[str, Upstream]

    def upstream(self, host: str, backend: ServiceBackend) -> str: ...


class PrimaryBuilder(Protocol):
    ing_ex: IngressEx
    namespace: str
    name: str

    def location_keys(self, path: str, path_type: str) -> list[tuple[str, str]]: ...


class CanaryLocations:
    """See the module docstring."""

    def __init__(self, b: PrimaryBuilder, canary_builder: Callable[[IngressEx], UpstreamBuilder]) -> None:
        self.b = b
        self.upstreams: dict[str, Upstream] = {}
        self.maps: list[ValueMap] = []
        self.splits: list[CanarySplit] = []
        self.used: set[str] = set()  # the canary upstreams a location chooses from
        self.by_location: dict[tuple[str, str, str], tuple[str, canary.Rules]] = {}
        for cex in sorted(b.ing_ex.canaries, key=lambda c: c.key):
            parsed = canary.parsed(cex.ingress)
            if parsed is None:
                continue  # invalid values: the canary's own warnings say so
            rules = canary.rules(parsed)
            cb = canary_builder(cex)
            for host, owned in b.ing_ex.valid_hosts.items():
                if not owned:
                    continue
                matched, _ = canary.matching_paths(b.ing_ex.ingress, cex.ingress, host,
                                                   [m.ingress for m in b.ing_ex.members])
                for p in matched:
                    self._add(cb, host, p, rules)
            self.upstreams.update(cb.upstreams)

    def _add(self, cb: UpstreamBuilder, host: str, p: Mapping[str, Any], rules: canary.Rules) -> None:
        backend, _ = service_backend(p.get("backend"))
        if backend is None:
            return
        path = str(p.get("path") or "/")
        path_type = str(p.get("pathType") or PATH_TYPE_IMPLEMENTATION_SPECIFIC)
        for modifier, location in self.b.location_keys(path, path_type):
            if (host, modifier, location) not in self.by_location:
                self.by_location[(host, modifier, location)] = (cb.upstream(host, backend), rules)

    def apply(self, server: Server) -> Server:
        changed = False
        locations = []
        for loc in server.locations:
            hit = self.by_location.get((server.name, loc.modifier, loc.path))
            if hit is not None and not loc.catch_all and not loc.rewrite:
                upstream, rules = hit
                chosen, maps, splits = canary.choice(rules, self.b.namespace, self.b.name, server.name,
                                                     f"{loc.modifier} {loc.path}", loc.upstream, upstream)
                self.maps.extend(maps)
                self.splits.extend(splits)
                self.used.add(upstream)
                if chosen.startswith("$"):
                    loc = derive(loc, upstream_var=chosen)
                elif chosen != loc.upstream:
                    loc = derive(loc, upstream=chosen)
                changed = True
            locations.append(loc)
        return derive(server, locations=tuple(locations)) if changed else server
