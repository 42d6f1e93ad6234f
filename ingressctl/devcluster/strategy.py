"""Write semantics of built-in kinds that kube-apiserver implements in their conversion and strategies
(`pkg/apis/core/v1` conversion, `pkg/registry/*/strategy.go`), where a user, kubectl, Helm or the controller
can observe them.

- Secret `stringData` is write-only: on every write (create, update, each patch type, server-side apply) its
  entries are merged into `data` (base64, `stringData` winning per key) and `stringData` itself is never
  stored or returned; `data` values must be base64 (400 otherwise, as the decoder answers).
- Immutable fields refuse an update with 422 naming the field, worded as kube-apiserver's validation:
  a Secret's or ConfigMap's data once `immutable: true` (and the flag itself), a Service's cluster IPs
  once allocated (`spec.clusterIPs[0]: ... may not change once set`, after kube-apiserver's normalisation of
  `clusterIP`/`clusterIPs`), an IngressClass's `spec.controller`.
- A Service's type and ports are validated as kube-apiserver does (names required with several ports, DNS-1123
  label names, unique names and (protocol, port) pairs, port numbers, protocols, target port names).
- Service node ports are allocated (`allocate_node_ports`) as kube-apiserver's allocator does, and the
  defaults kubectl and Helm see are set (`allocateLoadBalancerNodePorts: true` for LoadBalancer).
"""

from __future__ import annotations

import base64
import binascii
import random
from collections.abc import Callable
from typing import Any

from ingressctl.devcluster import errors
from ingressctl.devcluster.metavalidation import name_messages
from ingressctl.devcluster.schema import FieldError, go_value
from ingressctl.devcluster.validation import port_name_errors, validate_secret

Obj = dict[str, Any]


def _decode_error(kind: str, detail: str) -> errors.StatusError:
    return errors.bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: {detail}')


def secret_to_storage(obj: Obj) -> Obj:
    """A Secret in its stored form: `stringData` merged into `data`, `data` checked to be base64."""
    data = obj.get("data")
    if data is not None and not isinstance(data, dict):
        raise _decode_error("Secret", "json: cannot unmarshal into Go struct field Secret.data of type "
                            "map[string][]uint8")
    for value in (data or {}).values():
        if value is None:
            continue
        if not isinstance(value, str):
            raise _decode_error("Secret", "json: cannot unmarshal into Go struct field Secret.data of type "
                                "[]uint8")
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as e:
            raise _decode_error("Secret", f"illegal base64 data: {e}") from None
    if "stringData" not in obj:
        return obj
    out = dict(obj)
    string_data = out.pop("stringData")
    if string_data is None:
        return out
    if not isinstance(string_data, dict) or not all(isinstance(v, str) for v in string_data.values()):
        raise _decode_error("Secret", "json: cannot unmarshal into Go struct field Secret.stringData of type "
                            "map[string]string")
    if string_data:
        merged = dict(data or {})
        merged.update((k, base64.b64encode(v.encode()).decode()) for k, v in string_data.items())
        out["data"] = merged
    return out


def _immutable(path: str, value: Any) -> FieldError:
    return (path, "FieldValueInvalid", f"Invalid value: {go_value(value)}: field is immutable")


def immutable_data_errors(obj: Obj, old: Obj | None, data_fields: tuple[str, ...]) -> list[FieldError]:
    """A Secret's or ConfigMap's `immutable: true`: its data and the flag cannot change any more."""
    if old is None or old.get("immutable") is not True:
        return []
    forbidden = "Forbidden: field is immutable when `immutable` is set"
    errs: list[FieldError] = []
    if obj.get("immutable") is not True:
        errs.append(("immutable", "FieldValueForbidden", forbidden))
    for name in data_fields:
        if (obj.get(name) or {}) != (old.get(name) or {}):
            errs.append((name, "FieldValueForbidden", forbidden))
    return errs


def validate_secret_update(obj: Obj, old: Obj | None, subresource: str) -> list[FieldError]:
    return validate_secret(obj, old, subresource) + immutable_data_errors(obj, old, ("data",))


def validate_configmap(obj: Obj, old: Obj | None, subresource: str) -> list[FieldError]:
    return immutable_data_errors(obj, old, ("data", "binaryData"))


def normalize_cluster_ips(spec: Obj, old_spec: Obj) -> None:
    """What an update meant with the linked `clusterIP` and `clusterIPs` (kube-apiserver's
    normalizeClusterIPs): an old client that left `clusterIPs` out keeps them; a changed `clusterIP` with
    unchanged `clusterIPs` moves them along (and validation then refuses the change)."""
    old_ip, new_ip = old_spec.get("clusterIP") or "", spec.get("clusterIP") or ""
    old_ips = old_spec.get("clusterIPs") or []
    if old_ips and not spec.get("clusterIPs") and old_ip == new_ip:
        spec["clusterIPs"] = list(old_ips)
    if old_ip != new_ip:
        same = (spec.get("clusterIPs") or []) == old_ips
        if old_ip and not new_ip:
            if same:
                spec.pop("clusterIPs", None)
        elif same:
            spec["clusterIPs"] = [new_ip]


def _ips(value: list[Any]) -> str:
    return "[]string{" + ", ".join(go_value(str(ip)) for ip in value) + "}"


_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_PROTOCOLS = ("SCTP", "TCP", "UDP")


def _supported(path: str, value: Any, supported: tuple[str, ...]) -> FieldError:
    return (path, "FieldValueNotSupported", f"Unsupported value: {go_value(value)}: supported values: "
            + ", ".join(f'"{s}"' for s in supported))


def _port_number_errors(path: str, value: Any) -> list[FieldError]:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535:
        return []
    return [(path, "FieldValueInvalid", f"Invalid value: {go_value(value)}: must be between 1 and 65535, "
             "inclusive")]


def _service_port_errors(spec: Obj) -> list[FieldError]:
    """kube-apiserver's validateServicePort for each port, then the (protocol, port) duplicates."""
    errs: list[FieldError] = []
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and spec.get("type") != "ExternalName":
        errs.append(("spec.ports", "FieldValueRequired", "Required value"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        here = f"spec.ports[{i}]"
        name = port.get("name") or ""
        if not name and len(ports) > 1:
            errs.append((f"{here}.name", "FieldValueRequired", "Required value"))
        elif name:
            errs.extend((f"{here}.name", "FieldValueInvalid", f"Invalid value: {go_value(name)}: {m}")
                        for m in name_messages("/namespaces", str(name)))
            if name in names:
                errs.append((f"{here}.name", "FieldValueDuplicate", f"Duplicate value: {go_value(name)}"))
            names.add(str(name))
        errs.extend(_port_number_errors(f"{here}.port", port.get("port")))
        protocol = port.get("protocol")
        if protocol not in _PROTOCOLS:
            errs.append(_supported(f"{here}.protocol", protocol, _PROTOCOLS))
        target = port.get("targetPort")
        if isinstance(target, str):
            errs.extend((f"{here}.targetPort", "FieldValueInvalid", f"Invalid value: {go_value(target)}: {m}")
                        for m in port_name_errors(target))
        elif target is not None:
            errs.extend(_port_number_errors(f"{here}.targetPort", target))
    seen: set[tuple[Any, Any]] = set()
    for i, port in enumerate(ports):
        key = (port.get("protocol"), port.get("port"))
        if key in seen:
            errs.append((f"spec.ports[{i}]", "FieldValueDuplicate",
                         f'Duplicate value: core.ServicePort{{Name:"", Protocol:{go_value(key[0] or "")}, '
                         f"AppProtocol:(*string)(nil), Port:{key[1]}, TargetPort:intstr.IntOrString{{Type:0, "
                         'IntVal:0, StrVal:""}, NodePort:0}'))
        seen.add(key)
    return errs


def validate_service(obj: Obj, old: Obj | None, subresource: str) -> list[FieldError]:
    """A Service's type and ports, and its cluster IPs: `clusterIPs[0]` is `clusterIP`, and once allocated
    they may not change."""
    if subresource:
        return []
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    if spec.get("type") not in _SERVICE_TYPES:
        errs.append(_supported("spec.type", spec.get("type"), _SERVICE_TYPES))
    errs.extend(_service_port_errors(spec))
    if spec.get("type") == "ExternalName":
        return errs
    ips = [ip for ip in spec.get("clusterIPs") or [] if isinstance(ip, str)]
    old_spec = (old or {}).get("spec") or {}
    old_ips = [ip for ip in old_spec.get("clusterIPs") or [] if isinstance(ip, str)]
    headless = spec.get("clusterIP") == "None" and old_spec.get("clusterIP") == "None"
    if old is not None and old_spec.get("type") != "ExternalName" and not headless:
        if len(old_ips) == len(ips):
            errs.extend((f"spec.clusterIPs[{i}]", "FieldValueInvalid",
                         f"Invalid value: {_ips(ips)}: may not change once set")
                        for i, ip in enumerate(old_ips) if ip != ips[i])
        elif len(old_ips) > len(ips):
            if not ips:
                errs.append(("spec.clusterIPs[0]", "FieldValueInvalid",
                             f"Invalid value: {_ips(ips)}: primary clusterIP can not be unset"))
            elif ips[0] != old_ips[0]:
                errs.append(("spec.clusterIPs[0]", "FieldValueInvalid",
                             f"Invalid value: {_ips(ips)}: may not change once set"))
    cluster_ip = spec.get("clusterIP") or ""
    if cluster_ip and not ips:
        errs.append(("spec.clusterIPs", "FieldValueRequired", "Required value"))
    elif cluster_ip and ips[0] != cluster_ip:
        errs.append(("spec.clusterIPs", "FieldValueInvalid",
                     f"Invalid value: {_ips(ips)}: first value must match `clusterIP`"))
    return errs


def validate_ingressclass(obj: Obj, old: Obj | None, subresource: str) -> list[FieldError]:
    if old is None:
        return []
    new_ctrl = (obj.get("spec") or {}).get("controller")
    if new_ctrl != (old.get("spec") or {}).get("controller"):
        return [_immutable("spec.controller", new_ctrl)]
    return []


# ------------------------------------------------------------------------------------------- node ports
NODE_PORT_RANGE = (30000, 32767)


def _needs_node_ports(spec: Obj) -> bool:
    kind = spec.get("type")
    if kind == "LoadBalancer":
        return spec.get("allocateLoadBalancerNodePorts") is not False
    return kind == "NodePort"


def _node_ports(spec: Obj) -> list[int]:
    out = [p.get("nodePort") for p in spec.get("ports") or [] if isinstance(p, dict)]
    if spec.get("healthCheckNodePort"):
        out.append(spec["healthCheckNodePort"])
    return [p for p in out if isinstance(p, int) and p]


def allocate_node_ports(obj: Obj, old: Obj | None, services: Callable[[], list[Obj]],
                        rng: random.Random) -> None:
    """A Service's node ports as kube-apiserver's allocator gives them: each port of a NodePort (or
    LoadBalancer, unless `allocateLoadBalancerNodePorts: false`) Service gets a free port of 30000-32767, an
    update keeps the ports it leaves out (matched by port name), a type that needs none drops the ones kept
    from before, and a requested port that is taken or out of range refuses the write (422)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("ports"), list):
        return
    spec["ports"] = ports = [dict(p) if isinstance(p, dict) else p for p in spec["ports"]]
    old_spec = (old or {}).get("spec") or {}
    name = obj["metadata"].get("name", "")
    if not _needs_node_ports(spec):
        if old is not None and _needs_node_ports(old_spec) and sorted(_node_ports(spec)) == sorted(
                _node_ports(old_spec)):
            for port in ports:                  # the type changed and the ports kept theirs: released
                if isinstance(port, dict):
                    port.pop("nodePort", None)
        return
    if old is not None and _needs_node_ports(old_spec):
        by_name = {p.get("name", ""): p.get("nodePort") for p in old_spec.get("ports") or []
                   if isinstance(p, dict)}
        used_now = set(_node_ports(spec))
        for port in ports:
            if isinstance(port, dict) and not port.get("nodePort"):
                previous = by_name.get(port.get("name", ""))
                if previous and previous not in used_now:
                    port["nodePort"] = previous
    namespace = obj["metadata"].get("namespace", "")
    taken = {p for svc in services() for p in _node_ports(svc.get("spec") or {})
             if (svc["metadata"].get("namespace"), svc["metadata"].get("name")) != (namespace, name)}
    low, high = NODE_PORT_RANGE
    errs: list[FieldError] = []
    own = set(_node_ports(old_spec)) if old is not None else set()
    for i, port in enumerate(ports):
        wanted = port.get("nodePort") if isinstance(port, dict) else None
        if not isinstance(wanted, int) or not wanted:
            continue
        if not low <= wanted <= high:
            errs.append((f"spec.ports[{i}].nodePort", "FieldValueInvalid",
                         f"Invalid value: {wanted}: provided port is not in the valid range. The range of "
                         f"valid ports is {low}-{high}"))
        elif wanted in taken and wanted not in own:
            errs.append((f"spec.ports[{i}].nodePort", "FieldValueInvalid",
                         f"Invalid value: {wanted}: provided port is already allocated"))
        taken.add(wanted)
    if errs:
        raise errors.invalid("Service", "", name, errs)
    for port in ports:
        if isinstance(port, dict) and not port.get("nodePort"):
            port["nodePort"] = _free_port(taken, rng)
            taken.add(port["nodePort"])
    if spec.get("type") == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
        if spec.get("externalTrafficPolicy") == "Local" and not spec.get("healthCheckNodePort"):
            kept = old_spec.get("healthCheckNodePort")
            spec["healthCheckNodePort"] = kept if kept else _free_port(taken, rng)


def _free_port(taken: set[int], rng: random.Random) -> int:
    low, high = NODE_PORT_RANGE
    if len(taken) >= high - low + 1:
        raise errors.internal_error("range is full")
    while True:
        port = rng.randint(low, high)
        if port not in taken:
            return port
