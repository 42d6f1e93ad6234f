"""The VirtualServer's part of the Configuration (NIC's `VirtualServerConfiguration` and its class filter).

Guarantees:
- `VirtualServerModel` plugs VirtualServers into the kind-neutral Configuration: a VirtualServer is ours when
  its `spec.ingressClassName` is empty or equals `--ingress-class` (NIC's rule for custom resources); it is
  validated by `vs_validation` (all errors at once, NIC's field-error text); it claims its one host (shared
  with Ingresses: oldest wins, then the greater UID), its upstream Services and its TLS Secret.
- A configured VirtualServer (`VirtualServerConfiguration`) carries the host warnings from the Configuration
  plus the NGINX Plus fields it uses (accepted and ignored, so its state is Warning).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ingressctl.configs.virtualserver import VS_KIND, VSR_KIND
from ingressctl.controller.model import Claims, ConfigurationProblem, Entry, Resource
from ingressctl.controller.policy_refs import vs_policy_claims, vsr_policy_claims
from ingressctl.controller.validation import aggregate_message
from ingressctl.controller.vs_validation import (
    plus_only_warnings,
    validate_virtual_server,
    validate_virtual_server_route,
    vsr_fit_errors,
)
from ingressctl.keys import ResourceKey


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


@dataclass
class VirtualServerConfiguration:
    """A configured VirtualServer (NIC's Resource interface)."""

    obj: dict[str, Any]
    key: str
    valid_hosts: dict[str, bool]
    warnings: list[str] = field(default_factory=list)
    vsrs: list[tuple[ResourceKey, dict[str, Any]]] = field(default_factory=list)  # delegated, valid, fitting

    @property
    def key_with_kind(self) -> ResourceKey:
        return ResourceKey(VS_KIND, self.key)

    def is_equal(self, other: Resource) -> bool:
        return (isinstance(other, VirtualServerConfiguration) and other.key == self.key
                and other.valid_hosts == self.valid_hosts and other.warnings == self.warnings
                and other.obj.get("spec") == self.obj.get("spec")
                and [(k, o.get("spec")) for k, o in other.vsrs] == [(k, o.get("spec")) for k, o in self.vsrs])

    def children(self) -> list[tuple[ResourceKey, dict[str, Any]]]:
        return list(self.vsrs)

    def lost_all_hosts(self, obj: dict[str, Any], warnings: list[str]) -> VirtualServerConfiguration:
        return VirtualServerConfiguration(obj, self.key, {h: False for h in self.valid_hosts}, warnings)


def vs_class_is_ours(obj: Mapping[str, Any], ingress_class: str) -> bool:
    """NIC's rule for custom resources: an empty class, or ours."""
    cls = _d(obj.get("spec")).get("ingressClassName") or ""
    return cls in ("", ingress_class)


class VirtualServerModel:
    """The VirtualServer's `ConfigurationKind` (see the module docstring)."""

    kind = VS_KIND
    api_kind = "VirtualServer"
    child_kinds = (VSR_KIND,)

    def __init__(self, ingress_class: str) -> None:
        self._class = ingress_class

    def is_ours(self, obj: Mapping[str, Any]) -> bool:
        return vs_class_is_ours(obj, self._class)

    def validate(self, obj: Mapping[str, Any]) -> str:
        return aggregate_message(validate_virtual_server(obj))

    def claims(self, obj: Mapping[str, Any]) -> Claims:
        meta, spec = _d(obj.get("metadata")), _d(obj.get("spec"))
        ns = str(meta.get("namespace") or "")
        services = tuple(sorted({(ns, str(_d(u).get("service"))) for u in spec.get("upstreams") or []
                                 if _d(u).get("service")}))
        secret = _d(spec.get("tls")).get("secret")
        secrets = ((ns, str(secret)),) if secret else ()
        uses_default = spec.get("tls") is not None and not secret
        return Claims(role="parent", hosts=(str(spec.get("host")),), services=services, secrets=secrets,
                      uses_default_tls_secret=uses_default, policies=vs_policy_claims(obj))

    def build(self, entry: Entry, valid_hosts: dict[str, bool], warnings: list[str],
              children: list[Entry]) -> VirtualServerConfiguration:
        """The VirtualServer with the VirtualServerRoutes its routes delegate to (NIC: a missing or unfit one
        is a warning on the VirtualServer and its path is not configured)."""
        spec = _d(entry.obj.get("spec"))
        ns = entry.key.namespace
        ws = list(warnings) + plus_only_warnings(spec)
        by_key = {c.key.ns_name: c for c in children if c.key.kind == VSR_KIND}
        vsrs: list[tuple[ResourceKey, dict[str, Any]]] = []
        for route in spec.get("routes") or []:
            ref = str(_d(route).get("route") or "")
            if not ref:
                continue
            key = ref if "/" in ref else f"{ns}/{ref}"
            child = by_key.get(key)
            if child is None:
                ws.append(f"VirtualServerRoute {key} doesn't exist or invalid")
                continue
            fit = vsr_fit_errors(str(_d(route).get("path") or ""), child.obj)
            if fit:
                ws.append(f"VirtualServerRoute {key} is invalid: {'; '.join(fit)}")
                continue
            ws.extend(plus_only_warnings(_d(child.obj.get("spec")), f"VirtualServerRoute {key}: spec"))
            if all(k != child.key for k, _ in vsrs):
                vsrs.append((child.key, child.obj))
        return VirtualServerConfiguration(entry.obj, entry.key.ns_name, valid_hosts, ws, vsrs)

    def child_problem(self, entry: Entry) -> ConfigurationProblem:
        raise AssertionError("VirtualServers have no children")


class VirtualServerRouteModel:
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
        services = tuple(sorted({(ns, str(_d(u).get("service"))) for u in spec.get("upstreams") or []
                                 if _d(u).get("service")}))
        return Claims(role="child", hosts=(str(spec.get("host")),), services=services,
                      policies=vsr_policy_claims(obj))

    def build(self, entry: Entry, valid_hosts: dict[str, bool], warnings: list[str],
              children: list[Entry]) -> Resource:
        raise AssertionError("a VirtualServerRoute is configured through its VirtualServer")

    def child_problem(self, entry: Entry) -> ConfigurationProblem:
        return ConfigurationProblem(entry.obj, False, "NoVirtualServerFound",
                                    "VirtualServer is invalid or doesn't exist", key=entry.key)
