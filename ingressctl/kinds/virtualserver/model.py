"""The VirtualServer's part of the Configuration (NIC's `VirtualServerConfiguration` and its class filter).

Guarantees:
- `VirtualServerModel` plugs VirtualServers into the kind-neutral Configuration: a VirtualServer is ours when
  its `spec.ingressClassName` is empty or equals `--ingress-class` (NIC's rule for custom resources); it is
  validated by `vs_validation` (all errors at once, NIC's field-error text); it claims its one host (shared
  with Ingresses: oldest wins, then the greater UID), its upstream Services and its TLS Secret.
- A configured VirtualServer (`VirtualServerConfiguration`) carries the host warnings from the Configuration
  plus the NGINX Plus fields it uses (accepted and ignored, so its state is Warning), the VirtualServerRoutes
  each route delegates to (by name, or by `routeSelector` labels among the VirtualServerRoutes of its host in
  every watched namespace; NIC 5.5's path rules and duplicate handling) and its `spec.listener` resolved
  against the GlobalConfiguration (NIC's warnings for a side that does not resolve).
- Upstream Services may live in another namespace (`namespace/name`): they are claimed there, so their
  changes re-render the VirtualServer.
- Events, problems and status use NIC's custom-resource wording (`CustomResourceMessages`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ingressctl.controller.model import Claims, ConfigurationProblem, CustomResourceMessages, Entry, Resource
from ingressctl.keys import ResourceKey
from ingressctl.kinds.transportserver.config import PROTOCOL_HTTP, Listener
from ingressctl.kinds.transportserver.globalconfiguration import Listeners
from ingressctl.kinds.virtualserver.config import service_ref
from ingressctl.kinds.virtualserver.paths import modifier_category, normalize_path, vsr_fit_errors
from ingressctl.kinds.virtualserver.policies import vs_policy_claims, vsr_policy_claims
from ingressctl.kinds.virtualserver.template_model import VS_KIND, VSR_KIND, CustomListeners
from ingressctl.kinds.virtualserver.validation import (
    plus_only_warnings,
    validate_virtual_server,
    validate_virtual_server_route,
)
from ingressctl.validation import aggregate_message, as_dict, as_list, as_str

_d, _l, _s = as_dict, as_list, as_str


def upstream_services(namespace: str, spec: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The Services the upstreams use, (namespace, name): a `namespace/name` reference (NIC 5.3+) is claimed
    in its own namespace, so its endpoint and Service changes re-render the resource (NIC 5.5.4 misses
    them)."""
    refs = {service_ref(namespace, str(_d(u).get("service"))) for u in _l(spec.get("upstreams"))
            if _d(u).get("service")}
    return tuple(sorted(refs))


def _labels_match(obj: Mapping[str, Any], match_labels: Mapping[str, Any]) -> bool:
    """`matchLabels` only (NIC ignores `matchExpressions`); an empty selector matches nothing."""
    labels = _d(_d(obj.get("metadata")).get("labels"))
    return bool(match_labels) and all(labels.get(k) == v for k, v in match_labels.items())


@dataclass
class VirtualServerConfiguration:
    """A configured VirtualServer (NIC's Resource interface)."""

    obj: dict[str, Any]
    key: str
    valid_hosts: dict[str, bool]
    warnings: list[str] = field(default_factory=list)
    vsrs: list[tuple[ResourceKey, dict[str, Any]]] = field(default_factory=list)  # delegated, valid, fitting
    route_vsrs: dict[int, list[str]] = field(default_factory=dict)   # route index -> its VSRs' "ns/name"
    listeners: CustomListeners | None = None    # None: no `spec.listener` (the default ports)

    @property
    def key_with_kind(self) -> ResourceKey:
        return ResourceKey(VS_KIND, self.key)

    def is_equal(self, other: Resource) -> bool:
        return (isinstance(other, VirtualServerConfiguration) and other.key == self.key
                and other.valid_hosts == self.valid_hosts and other.warnings == self.warnings
                and other.obj.get("spec") == self.obj.get("spec")
                and [(k, o.get("spec")) for k, o in other.vsrs] == [(k, o.get("spec")) for k, o in self.vsrs]
                and other.route_vsrs == self.route_vsrs and other.listeners == self.listeners)

    def children(self) -> list[tuple[ResourceKey, dict[str, Any]]]:
        return list(self.vsrs)

    def lost_all_hosts(self, obj: dict[str, Any], warnings: list[str]) -> VirtualServerConfiguration:
        return VirtualServerConfiguration(obj, self.key, {h: False for h in self.valid_hosts}, warnings)


def resolve_listeners(listener: Mapping[str, Any], gc: Listeners | None,
                      warnings: list[str]) -> CustomListeners:
    """NIC 3.x+'s `spec.listener`: each side names a GlobalConfiguration listener of protocol HTTP, `http` one
    without and `https` one with `ssl`. A side that does not resolve gets no listener, with NIC's warning."""
    if gc is None:
        warnings.append("Listeners defined, but no GlobalConfiguration is deployed")
        return CustomListeners()
    sides: dict[str, Listener | None] = {}
    for side, ssl in (("http", False), ("https", True)):
        name = _s(listener.get(side))
        sides[side] = None
        if not name:
            continue
        found = gc.find(name, PROTOCOL_HTTP)
        if found is None:
            warnings.append(f"Listener {name} is not defined in GlobalConfiguration")
        elif found.ssl != ssl:
            enabled = "enabled" if found.ssl else "disabled"
            warnings.append(f"Listener {name} can't be use in `listener.{side}` context as SSL is {enabled} "
                            "for that listener.")
        else:
            sides[side] = found
    return CustomListeners(sides["http"], sides["https"])


def vs_class_is_ours(obj: Mapping[str, Any], ingress_class: str) -> bool:
    """NIC's rule for custom resources: an empty class, or ours."""
    cls = _d(obj.get("spec")).get("ingressClassName") or ""
    return cls in ("", ingress_class)


class VirtualServerModel(CustomResourceMessages):
    """The VirtualServer's `ConfigurationKind` (see the module docstring)."""

    kind = VS_KIND
    api_kind = "VirtualServer"
    child_kinds = (VSR_KIND,)

    def __init__(self, ingress_class: str,
                 listeners: Callable[[], Listeners | None] = lambda: None) -> None:
        """`listeners`: the watched GlobalConfiguration's listeners (None: none is deployed)."""
        self._class = ingress_class
        self._listeners = listeners

    def is_ours(self, obj: Mapping[str, Any]) -> bool:
        return vs_class_is_ours(obj, self._class)

    def validate(self, obj: Mapping[str, Any]) -> str:
        return aggregate_message(validate_virtual_server(obj))

    def claims(self, obj: Mapping[str, Any]) -> Claims:
        meta, spec = _d(obj.get("metadata")), _d(obj.get("spec"))
        ns = str(meta.get("namespace") or "")
        services = upstream_services(ns, spec)
        secret = _d(spec.get("tls")).get("secret")
        secrets = ((ns, str(secret)),) if secret else ()
        uses_default = spec.get("tls") is not None and not secret
        return Claims(role="parent", hosts=(str(spec.get("host")),), services=services, secrets=secrets,
                      uses_default_tls_secret=uses_default, policies=vs_policy_claims(obj))

    def build(self, entry: Entry, valid_hosts: dict[str, bool], warnings: list[str],
              children: list[Entry]) -> VirtualServerConfiguration:
        """The VirtualServer with the VirtualServerRoutes its routes delegate to, by name (`route`) or by
        labels (`routeSelector`, NIC 5.4+; the candidates are the VirtualServerRoutes of its host in every
        watched namespace). NIC: a missing or unfit one is a warning on the VirtualServer and its path is not
        configured; a VirtualServerRoute reached twice is kept once; several routes share one only when they
        are all regex routes."""
        spec = _d(entry.obj.get("spec"))
        ns = entry.key.namespace
        ws = list(warnings) + plus_only_warnings(spec)
        by_key = {c.key.ns_name: c for c in children if c.key.kind == VSR_KIND}
        routes = [_d(r) for r in _l(spec.get("routes"))]
        # Which routes reference each VirtualServerRoute by name (regex routes may share one).
        referrers: dict[str, list[int]] = {}
        for i, route in enumerate(routes):
            ref = _s(route.get("route"))
            if ref:
                referrers.setdefault(ref if "/" in ref else f"{ns}/{ref}", []).append(i)
        vsrs: list[tuple[ResourceKey, dict[str, Any]]] = []
        route_vsrs: dict[int, list[str]] = {}
        attached: dict[str, int] = {}           # VSR key -> the route it is attached to first
        subroute_owner: dict[str, str] = {}     # normalised subroute path -> VSR key
        unfit: set[str] = set()
        vs_key = entry.key.ns_name
        for i, route in enumerate(routes):
            path = _s(route.get("path"))
            ref = _s(route.get("route"))
            candidates: list[tuple[str, list[str]]] = []
            if ref:
                key = ref if "/" in ref else f"{ns}/{ref}"
                shared = referrers[key]
                if modifier_category(path) == "regex":
                    candidates.append((key, [_s(routes[j].get("path")) for j in shared
                                             if modifier_category(_s(routes[j].get("path"))) == "regex"]))
                elif shared[0] == i:
                    candidates.append((key, [path]))
                else:
                    ws.append(f"VS {vs_key} has duplicate VirtualServerRoutes {key}")
                    continue
                if key not in by_key:
                    if key not in unfit:    # regex routes sharing it: said once
                        ws.append(f"VirtualServerRoute {key} doesn't exist or invalid")
                        unfit.add(key)
                    continue
            elif route.get("routeSelector"):
                labels = _d(_d(route.get("routeSelector")).get("matchLabels"))
                candidates.extend((k, [path]) for k, c in sorted(by_key.items())
                                  if _labels_match(c.obj, labels))
            else:
                continue
            for key, paths in candidates:
                if key in unfit:        # a regex VirtualServerRoute shared by several routes: said once
                    continue
                child = by_key[key]
                shared_regex = bool(ref) and modifier_category(path) == "regex"
                if key in attached and attached[key] != i and not shared_regex:
                    ws.append(f"VS {vs_key} has duplicate VirtualServerRoutes {key}")
                    continue
                fit = vsr_fit_errors(paths, child.obj)
                if fit:
                    ws.append(f"VirtualServerRoute {key} is invalid: {'; '.join(fit)}")
                    if shared_regex:
                        unfit.add(key)
                    continue
                if key not in attached:
                    clash = self._conflicting_subroute(child.obj, key, subroute_owner)
                    if clash:
                        ws.append(f"path {clash} has conflicting subroutes on VirtualServerRoute {key}")
                        continue
                    attached[key] = i
                    ws.extend(plus_only_warnings(_d(child.obj.get("spec")),
                                                 f"VirtualServerRoute {key}: spec"))
                    vsrs.append((child.key, child.obj))
                route_vsrs.setdefault(i, []).append(key)
        listeners = None
        if spec.get("listener") is not None:
            listeners = resolve_listeners(_d(spec.get("listener")), self._listeners(), ws)
        return VirtualServerConfiguration(entry.obj, entry.key.ns_name, valid_hosts, ws, vsrs, route_vsrs,
                                          listeners)

    @staticmethod
    def _conflicting_subroute(vsr: Mapping[str, Any], key: str, owner: dict[str, str]) -> str:
        """A subroute path of `vsr` that another attached VirtualServerRoute already serves ("" if none);
        otherwise its paths are recorded as `key`'s."""
        paths = [normalize_path(_s(_d(r).get("path"))) for r in _l(_d(vsr.get("spec")).get("subroutes"))]
        for p in paths:
            if owner.get(p, key) != key:
                return p
        for p in paths:
            owner[p] = key
        return ""

    def child_problem(self, entry: Entry) -> ConfigurationProblem:
        raise AssertionError("VirtualServers have no children")


class VirtualServerRouteModel(CustomResourceMessages):
    """The VirtualServerRoute's `ConfigurationKind`: validated on its own, a child of the VirtualServer that
    owns its host; with none, a `NoVirtualServerFound` problem (Warning)."""

    kind = VSR_KIND
    api_kind = "VirtualServerRoute"

    def __init__(self, ingress_class: str) -> None:
        self._class = ingress_class

    def is_ours(self, obj: Mapping[str, Any]) -> bool:
        return vs_class_is_ours(obj, self._class)

    def validate(self, obj: Mapping[str, Any]) -> str:
        return aggregate_message(validate_virtual_server_route(obj))

    def claims(self, obj: Mapping[str, Any]) -> Claims:
        meta, spec = _d(obj.get("metadata")), _d(obj.get("spec"))
        ns = str(meta.get("namespace") or "")
        services = upstream_services(ns, spec)
        return Claims(role="child", hosts=(str(spec.get("host")),), services=services,
                      policies=vsr_policy_claims(obj))

    def build(self, entry: Entry, valid_hosts: dict[str, bool], warnings: list[str],
              children: list[Entry]) -> Resource:
        raise AssertionError("a VirtualServerRoute is configured through its VirtualServer")

    def child_problem(self, entry: Entry) -> ConfigurationProblem:
        return ConfigurationProblem(entry.obj, False, "NoVirtualServerFound",
                                    "VirtualServer is invalid or doesn't exist", key=entry.key)
