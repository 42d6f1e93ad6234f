"""EndpointSlices to NGINX upstream servers.

Guarantees:
- `endpoints_for_port` merges ALL slices of a Service, keeps only ready endpoints (`conditions.ready` missing
  counts as ready, as the EndpointSlice API defines), de-duplicates, and returns "ip:port" strings sorted by
  address (IPv4 before IPv6, numerically) then port; IPv6 addresses are bracketed ("[fd00::1]:8080").
- The Service port is matched by number when the backend names a number and by name when it names a name
  (deliberately not NIC's first-unnamed-port rule). The target port is resolved per slice through the slice
  port carrying the Service port's name, so named target ports and pods with differing container ports work.
- Failures are typed `BackendError`s with a clear message (missing Service, missing port, ExternalName); an
  existing Service without ready endpoints is not an error: the result is just empty.
- Pure functions over plain dicts: malformed slices (null endpoints, null ports, FQDN address type) are
  skipped.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from ingressctl.k8s.store import SERVICE_NAME_LABEL


class BackendError(Exception):
    """A backend's endpoints cannot be resolved; `str(err)` is a message for users."""


class ServiceNotFoundError(BackendError):
    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(f"service {namespace}/{name} doesn't exist")
        self.namespace = namespace
        self.name = name


class ServicePortNotFoundError(BackendError):
    def __init__(self, namespace: str, name: str, port: int | str) -> None:
        what = f"number {port}" if isinstance(port, int) else f'name "{port}"'
        super().__init__(f"no port with {what} in service {namespace}/{name}")
        self.namespace = namespace
        self.name = name
        self.port = port


class ExternalNameServiceError(BackendError):
    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(f"service {namespace}/{name} is of type ExternalName: type ExternalName Services "
                         "feature is only available in NGINX Plus")
        self.namespace = namespace
        self.name = name


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def find_service_port(service: Mapping[str, Any], port: int | str) -> dict[str, Any] | None:
    """The Service port with that number (an int) or that name (a str)."""
    for sp in _list(_dict(service.get("spec")).get("ports")):
        sp = _dict(sp)
        if isinstance(port, int) and not isinstance(port, bool):
            if sp.get("port") == port:
                return sp
        elif sp.get("name", "") == port:
            return sp
    return None


def _slice_port(slc: Mapping[str, Any], port_name: str, target: int | str) -> int | None:
    """The port number endpoints of this slice serve for the Service port `port_name` (None: not served)."""
    ports = [_dict(p) for p in _list(slc.get("ports"))]
    for p in ports:
        if (p.get("name") or "") == port_name:
            num = p.get("port")
            if isinstance(num, int):
                return num
            # A nil port means "all ports": only a numeric target can say which.
            return target if isinstance(target, int) else None
    if isinstance(target, int):
        for p in ports:
            if p.get("port") == target:
                return target
    return None


def _is_ready(endpoint: Mapping[str, Any]) -> bool:
    return _dict(endpoint.get("conditions")).get("ready") is not False


def _ipv4_int(address: str) -> int | None:
    """The value of a dotted-quad IPv4 address in `ipaddress`'s canonical form (four decimal octets 0-255,
    no leading zeros, ASCII digits only), else None. Every string it accepts, `ipaddress` accepts with the
    same value and prints unchanged; the others are left to `ipaddress`."""
    parts = address.split(".")
    if len(parts) != 4:
        return None
    value = 0
    for part in parts:
        if not (0 < len(part) <= 3 and part.isascii() and part.isdigit()):
            return None
        if part[0] == "0" and len(part) > 1:
            return None
        octet = int(part)
        if octet > 255:
            return None
        value = value << 8 | octet
    return value


def _join_host_port(address: str, port: int) -> tuple[tuple[int, int, int], str] | None:
    """(sort key, "host:port"); None for something that is not an IP address. The same results as
    `ipaddress`; a canonical IPv4 address (nearly every endpoint) is read without it."""
    v4 = _ipv4_int(address)
    if v4 is not None:
        return (4, v4, port), f"{address}:{port}"
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    text = f"[{ip.compressed}]:{port}" if ip.version == 6 else f"{ip.compressed}:{port}"
    return (ip.version, int(ip), port), text


def endpoints_for_port(service: Mapping[str, Any], port: int | str,
                       slices: Iterable[Mapping[str, Any]]) -> list[str]:
    """Ready "ip:port" servers of `service`'s port `port` (number or name) from the Service's EndpointSlices.

    Slices of other Services (by the `kubernetes.io/service-name` label and namespace) are ignored, so callers
    may pass a whole namespace's slices. Raises `ExternalNameServiceError` or `ServicePortNotFoundError`.
    """
    meta = _meta(service)
    ns, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    spec = _dict(service.get("spec"))
    if spec.get("type") == "ExternalName":
        raise ExternalNameServiceError(ns, name)
    sp = find_service_port(service, port)
    if sp is None:
        raise ServicePortNotFoundError(ns, name, port)
    target = sp.get("targetPort")
    if target is None or target == "" or target == 0:
        target = sp.get("port")
    if not isinstance(target, (int, str)) or isinstance(target, bool):
        return []
    port_name = str(sp.get("name") or "")
    found: dict[str, tuple[int, int, int]] = {}
    for slc in slices:
        slc_meta = slc.get("metadata")
        if not isinstance(slc_meta, dict):
            continue   # no labels: not the Service's slice
        labels = slc_meta.get("labels")
        if not isinstance(labels, dict) or labels.get(SERVICE_NAME_LABEL) != name \
                or slc_meta.get("namespace", ns) != ns:
            continue
        if slc.get("addressType", "IPv4") not in ("IPv4", "IPv6"):
            continue
        num = _slice_port(slc, port_name, target)
        if num is None:
            continue
        endpoints = slc.get("endpoints")
        if not isinstance(endpoints, list):
            continue
        for ep in endpoints:
            if not isinstance(ep, dict):
                continue
            addresses = ep.get("addresses")
            if not addresses or not isinstance(addresses, list) or not _is_ready(ep):
                continue
            joined = _join_host_port(str(addresses[0]), num)
            if joined is not None:
                found[joined[1]] = joined[0]
    if len(found) <= 1:
        return list(found)
    return sorted(found, key=found.__getitem__)


def resolve_backend_endpoints(namespace: str, service_name: str, port: int | str,
                              service: Mapping[str, Any] | None,
                              slices: Iterable[Mapping[str, Any]]) -> list[str]:
    """`endpoints_for_port` for a backend whose Service may be missing (raises `ServiceNotFoundError`)."""
    if service is None:
        raise ServiceNotFoundError(namespace, service_name)
    return endpoints_for_port(service, port, slices)


def cluster_ip_endpoint(service: Mapping[str, Any], port: int | str) -> list[str]:
    """`nginx.org/use-cluster-ip`: the single server "<clusterIP>:<service port>"."""
    meta = _meta(service)
    ns, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    spec = _dict(service.get("spec"))
    if spec.get("type") == "ExternalName":
        raise ExternalNameServiceError(ns, name)
    sp = find_service_port(service, port)
    if sp is None:
        raise ServicePortNotFoundError(ns, name, port)
    cluster_ip = spec.get("clusterIP")
    if not isinstance(cluster_ip, str) or cluster_ip in ("", "None"):
        raise BackendError(f"service {ns}/{name} has no cluster IP")
    joined = _join_host_port(cluster_ip, int(sp.get("port", 0)))
    if joined is None:
        raise BackendError(f"service {ns}/{name} has an invalid cluster IP {cluster_ip!r}")
    return [joined[1]]


def count_ready_endpoints(slices: Iterable[Mapping[str, Any]]) -> int:
    """The number of distinct ready endpoints (by first address) across a Service's EndpointSlices: NIC's
    count of controller replicas from its own Service."""
    seen: set[str] = set()
    for slc in slices:
        for ep in _list(slc.get("endpoints")):
            addresses = _list(_dict(ep).get("addresses"))
            if addresses and _is_ready(_dict(ep)):
                seen.add(str(addresses[0]))
    return len(seen)
