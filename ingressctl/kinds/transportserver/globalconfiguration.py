"""GlobalConfiguration (`--global-configuration ns/name`): its listeners, validated NIC's way.

Guarantees:
- `parse_listeners` is pure and never raises on malformed input. It returns the valid listeners (name ->
  `Listener`) and one field error per dropped listener: validation is partial, as NIC's is — an invalid,
  duplicate or conflicting listener is dropped and the others are used (the first claimant of a name or an
  address keeps it).
- A listener needs a name (an RFC 1035 label, not `tls-passthrough`), a port in 1..65535 that is not
  forbidden (the controller's own ports: HTTP, HTTPS, status, metrics, TLS passthrough), a protocol among TCP,
  UDP and HTTP, optional `ipv4` / `ipv6` bind addresses of the right family, and `ssl` only with HTTP.
- Conflicts are per bind address (IPv4 default 0.0.0.0, IPv6 default ::): UDP conflicts only with UDP; TCP and
  HTTP conflict with each other; so TCP and UDP may share a port.
- `Listeners` holds the current listeners for the TransportServer kind (read from the sync thread only).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from ingressctl.kinds.transportserver.config import PROTOCOL_HTTP, PROTOCOL_TCP, PROTOCOL_UDP, Listener
from ingressctl.validation import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    is_dns1035_label,
    not_supported,
    required,
)

TLS_PASSTHROUGH_LISTENER = "tls-passthrough"
PROTOCOLS = (PROTOCOL_TCP, PROTOCOL_UDP, PROTOCOL_HTTP)


def _address(value: Any, fld: str, version: int) -> tuple[str, list[FieldError]]:
    if value in (None, ""):
        return "", []
    try:
        ip = ipaddress.ip_address(str(value))
    except ValueError:
        return "", [invalid(fld, value, f"must be a valid IPv{version} address")]
    if ip.version != version:
        return "", [invalid(fld, value, f"must be a valid IPv{version} address")]
    return str(ip), []


def _listener(raw: Any, fld: str,
              forbidden_ports: Collection[int]) -> tuple[Listener | None, list[FieldError]]:
    if not isinstance(raw, Mapping):
        return None, [invalid(fld, str(raw), "must be an object")]
    errs: list[FieldError] = []
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        errs.append(required(f"{fld}.name"))
    elif name == TLS_PASSTHROUGH_LISTENER:
        errs.append(forbidden(f"{fld}.name", f"{TLS_PASSTHROUGH_LISTENER} is a reserved listener name"))
    else:
        errs += [invalid(f"{fld}.name", name, m) for m in is_dns1035_label(name)]
    port = raw.get("port")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        errs.append(invalid(f"{fld}.port", port, "must be between 1 and 65535, inclusive"))
    elif port in forbidden_ports:
        errs.append(forbidden(f"{fld}.port", f"port {port} is forbidden (the controller uses it)"))
    protocol = raw.get("protocol")
    if protocol not in PROTOCOLS:
        errs.append(not_supported(f"{fld}.protocol", protocol, PROTOCOLS))
    ssl = raw.get("ssl", False)
    if not isinstance(ssl, bool):
        errs.append(invalid(f"{fld}.ssl", ssl, "must be a boolean"))
    elif ssl and protocol != PROTOCOL_HTTP:
        errs.append(forbidden(f"{fld}.ssl", "ssl is supported only for HTTP listeners"))
    ipv4, e4 = _address(raw.get("ipv4"), f"{fld}.ipv4", 4)
    ipv6, e6 = _address(raw.get("ipv6"), f"{fld}.ipv6", 6)
    errs += e4 + e6
    if errs:
        return None, errs
    return Listener(name=str(name), port=int(port), protocol=str(protocol), ssl=bool(ssl),  # type: ignore[arg-type]
                    ipv4=ipv4, ipv6=ipv6), []


def _binds(listener: Listener) -> list[tuple[str, int, str]]:
    """The (address, port, family-of-protocols) a listener binds: UDP apart from TCP/HTTP."""
    family = "udp" if listener.protocol == PROTOCOL_UDP else "tcp"
    return [(listener.ipv4 or "0.0.0.0", listener.port, family),
            (listener.ipv6 or "::", listener.port, family)]


def parse_listeners(gc: Mapping[str, Any], forbidden_ports: Collection[int] = ()
                    ) -> tuple[dict[str, Listener], list[FieldError]]:
    """The valid listeners of a GlobalConfiguration and the errors of the dropped ones."""
    spec = gc.get("spec")
    raw = spec.get("listeners") if isinstance(spec, Mapping) else None
    if raw is None:
        return {}, []
    if not isinstance(raw, list):
        return {}, [invalid("spec.listeners", str(raw), "must be a list")]
    out: dict[str, Listener] = {}
    bound: dict[tuple[str, int, str], str] = {}
    errors: list[FieldError] = []
    for i, item in enumerate(raw):
        fld = f"spec.listeners[{i}]"
        listener, errs = _listener(item, fld, forbidden_ports)
        if listener is None:
            errors += errs
            continue
        if listener.name in out:
            errors.append(duplicate(f"{fld}.name", listener.name))
            continue
        taken = next((bound[b] for b in _binds(listener) if b in bound), None)
        if taken is not None:
            errors.append(invalid(f"{fld}.port", listener.port,
                                  f"conflicts with listener {taken} on the same address and protocol"))
            continue
        out[listener.name] = listener
        for b in _binds(listener):
            bound[b] = listener.name
    return out, errors


@dataclass
class Listeners:
    """The listeners of the watched GlobalConfiguration (empty without one)."""

    key: str = ""                        # "namespace/name" of the watched GlobalConfiguration
    by_name: dict[str, Listener] = field(default_factory=dict)

    def find(self, name: str, protocol: str) -> Listener | None:
        """The listener with this name AND protocol (NIC matches both)."""
        listener = self.by_name.get(name)
        return listener if listener is not None and listener.protocol == protocol else None
