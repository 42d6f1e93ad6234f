"""The TransportServer's part of the Configuration (NIC's TransportServerConfiguration and its validation).

Guarantees:
- `TransportServerModel.is_ours`: `spec.ingressClassName` is ours, or empty (NIC: the controller serves
  class-less TransportServers).
- `validate` returns NIC's aggregate of field errors, or, for a valid TransportServer whose listener the
  GlobalConfiguration does not define (by name AND protocol), NIC's problem message
  "Listener X doesn't exist".
  Both keep it out of the Configuration (a `Rejected` problem).
- A TCP/UDP TransportServer claims its listener and its host (NIC's listener table: on an NGINX that selects
  stream servers by SNI, TransportServers with different hosts share a TCP listener); the Configuration gives
  each claim to the oldest claimant, others get "Listener X with host H is taken by another resource" (H is
  "empty host" without a host).
  Its Service claims route endpoint changes to it, and its `tls.secret` claim (a Secret of its own namespace)
  routes that Secret's changes to it.
- `TransportServerConfiguration.is_equal` compares the object AND the listener it binds, so a
  GlobalConfiguration change that moves the listener re-renders the TransportServer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ingressctl.controller.model import (
    Claims,
    ConfigurationProblem,
    CustomResourceMessages,
    Entry,
    Resource,
    listener_with_host,
)
from ingressctl.keys import ResourceKey
from ingressctl.kinds.transportserver.config import TLS_PASSTHROUGH_LISTENER, TRANSPORTSERVER_KIND, Listener
from ingressctl.kinds.transportserver.globalconfiguration import Listeners
from ingressctl.kinds.transportserver.validation import (
    PROTOCOL_TLS_PASSTHROUGH,
    tls_secret,
    validate_transportserver,
)
from ingressctl.validation import aggregate_message


def listener_missing_message(name: str) -> str:
    """NIC's problem message for a listener the GlobalConfiguration does not define."""
    return f"Listener {name} doesn't exist"


@dataclass
class TransportServerConfiguration:
    """A configured TransportServer (NIC's Resource)."""

    obj: dict[str, Any]
    key: str
    listener: Listener | None
    valid_hosts: dict[str, bool] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def key_with_kind(self) -> ResourceKey:
        return ResourceKey(TRANSPORTSERVER_KIND, self.key)

    def is_equal(self, other: Resource) -> bool:
        return (isinstance(other, TransportServerConfiguration) and other.key == self.key
                and other.listener == self.listener and other.obj == self.obj
                and other.valid_hosts == self.valid_hosts)

    def children(self) -> list[tuple[ResourceKey, dict[str, Any]]]:
        return []

    def lost_all_hosts(self, obj: dict[str, Any], warnings: list[str]) -> TransportServerConfiguration:
        return TransportServerConfiguration(obj, self.key, self.listener,
                                            {h: False for h in self.valid_hosts}, warnings)


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    s = obj.get("spec")
    return s if isinstance(s, Mapping) else {}


def listener_ref(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(name, protocol) of the TransportServer's listener."""
    listener = _spec(obj).get("listener")
    listener = listener if isinstance(listener, Mapping) else {}
    return str(listener.get("name") or ""), str(listener.get("protocol") or "")


class TransportServerModel(CustomResourceMessages):
    """The TransportServer's `ConfigurationKind`."""

    kind = TRANSPORTSERVER_KIND
    api_kind = "TransportServer"

    def __init__(self, ingress_class: str, listeners: Callable[[], Listeners], *,
                 snippets_enabled: bool = False, tls_passthrough: bool = False,
                 tls_passthrough_port: int = 443, stream_server_name: bool = False) -> None:
        self._class = ingress_class
        self._listeners = listeners
        self._snippets = snippets_enabled
        self._sni = stream_server_name
        self._passthrough = tls_passthrough
        self._passthrough_listener = Listener(TLS_PASSTHROUGH_LISTENER, tls_passthrough_port,
                                              PROTOCOL_TLS_PASSTHROUGH)

    def is_ours(self, obj: Mapping[str, Any]) -> bool:
        return str(_spec(obj).get("ingressClassName") or "") in ("", self._class)

    def validate(self, obj: Mapping[str, Any]) -> str:
        errors = validate_transportserver(obj, snippets_enabled=self._snippets,
                                          tls_passthrough=self._passthrough, stream_server_name=self._sni)
        if errors:
            return aggregate_message(errors)
        name, protocol = listener_ref(obj)
        if protocol != PROTOCOL_TLS_PASSTHROUGH and self._listeners().find(name, protocol) is None:
            return listener_missing_message(name)
        return ""

    def claims(self, obj: Mapping[str, Any]) -> Claims:
        spec = _spec(obj)
        ns = str((obj.get("metadata") or {}).get("namespace") or "")
        services: dict[tuple[str, str], None] = {}
        for u in spec.get("upstreams") or []:
            services[(ns, str(u["service"]))] = None
            if u.get("backup"):
                services[(ns, str(u["backup"]))] = None
        name, protocol = listener_ref(obj)
        if protocol == PROTOCOL_TLS_PASSTHROUGH:
            return Claims(role="regular", hosts=(str(spec["host"]),), services=tuple(services))
        secret = tls_secret(spec)
        host = str(spec.get("host") or "")   # a TCP listener's TransportServers apart by SNI
        return Claims(role="regular", hosts=(), listeners=(listener_with_host(name, host),),
                      services=tuple(services),
                      secrets=((ns, secret),) if secret else ())

    def build(self, entry: Entry, valid_hosts: dict[str, bool], warnings: list[str],
              children: list[Entry]) -> TransportServerConfiguration:
        name, protocol = listener_ref(entry.obj)
        listener = (self._passthrough_listener if protocol == PROTOCOL_TLS_PASSTHROUGH
                    else self._listeners().find(name, protocol))
        return TransportServerConfiguration(entry.obj, entry.key.ns_name, listener, valid_hosts, warnings)

    def child_problem(self, entry: Entry) -> ConfigurationProblem:
        raise AssertionError("TransportServers have no children")

    def rejected_message(self, key: str, detail: str) -> str:
        """NIC: "TransportServer ns/name was rejected with error: ..."; a missing listener is its own problem
        ("Listener X doesn't exist")."""
        error = detail.removeprefix("with error: ")
        if error.startswith("Listener "):
            return error
        return super().rejected_message(key, detail)
