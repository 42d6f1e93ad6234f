"""The latency metrics' wiring (`--enable-latency-metrics`): which Service, Ingress and Pod each upstream
and upstream server belongs to, kept in step with what is rendered.

Guarantees: every rendered Ingress updates the latency labels (upstream -> Service and Ingress, upstream
server -> Pod from the EndpointSlices' targetRefs, "" when none); a deleted Ingress's upstreams and their
series are dropped; the Configurator and templates are wrapped only when the metrics are on.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ingressctl.keys import INGRESS_KIND, ResourceKey
from ingressctl.logging import get_logger

if TYPE_CHECKING:
    from ingressctl.configs.config import IngressNginxConfig
    from ingressctl.metrics import LatencyMetricsCollector

log = get_logger(__name__)


class LatencyLabels:
    """Keeps the latency collector's label mappings in step with the rendered Ingress configs (NIC's
    `updateIngressMetricsLabels`): each upstream maps to its Service and Ingress (a minion's upstreams to the
    minion), each upstream server to the Pod behind it. Called on the sync thread only."""

    def __init__(self, latency: LatencyMetricsCollector,
                 endpoint_slices: Callable[[str, str], list[dict[str, Any]]]) -> None:
        self._latency = latency
        self._slices = endpoint_slices
        self._by_key: dict[str, set[str]] = {}   # Ingress key (master for mergeables) -> its upstreams
        self._owner: dict[str, str] = {}          # upstream -> Ingress key

    def rendered(self, cfg: IngressNginxConfig) -> None:
        """An Ingress (or a master with its minions) was rendered: set the labels of its upstreams."""
        from ingressctl.metrics import UpstreamServerLabels

        ns, name = cfg.ingress.namespace, cfg.ingress.name
        key = f"{ns}/{name}"
        owners: dict[str, tuple[str, str]] = {}   # upstream -> (service, resource name)
        for server in cfg.servers:
            for loc in server.locations:
                resource = loc.minion.name if loc.minion is not None else name
                owners.setdefault(loc.upstream, (loc.service_name, resource))
        pods: dict[str, dict[str, str]] = {}
        current: set[str] = set()
        for upstream in cfg.upstreams:
            owner = owners.get(upstream.name)
            if owner is None:
                continue  # no location proxies to it: NGINX never logs it
            service, resource = owner
            if service not in pods:
                pods[service] = self._pods(ns, service)
            peers = {srv.address: pods[service].get(srv.address, "") for srv in upstream.servers
                     if not srv.address.startswith("unix:")}
            self._latency.set_upstream_peers(upstream.name,
                                             UpstreamServerLabels(service, "ingress", resource, ns), peers)
            current.add(upstream.name)
            self._owner[upstream.name] = key
        self._forget(key, self._by_key.get(key, set()) - current)
        self._by_key[key] = current

    def deleted(self, key: str) -> None:
        """An Ingress (or a master) was removed from the configuration."""
        self._forget(key, self._by_key.pop(key, set()))

    def upstreams(self, key: str) -> set[str]:
        return set(self._by_key.get(key, set()))

    def _forget(self, key: str, upstreams: set[str]) -> None:
        # An upstream that moved to another resource (a minion to another master) stays with its new owner.
        gone = [u for u in upstreams if self._owner.get(u) == key]
        for u in gone:
            del self._owner[u]
        if gone:
            self._latency.delete_upstream_labels(gone)

    def _pods(self, namespace: str, service: str) -> dict[str, str]:
        """Upstream server address ("ip:port", "[ipv6]:port") -> Pod name, from the Service's slices."""
        out: dict[str, str] = {}
        for slc in self._slices(namespace, service):
            ports = [p["port"] for p in slc.get("ports") or []
                     if isinstance(p, dict) and isinstance(p.get("port"), int)]
            for ep in slc.get("endpoints") or []:
                ref = (ep or {}).get("targetRef") or {}
                pod = ref.get("name")
                if ref.get("kind") != "Pod" or not isinstance(pod, str):
                    continue
                for address in ep.get("addresses") or []:
                    try:
                        ip = ipaddress.ip_address(str(address))
                    except ValueError:
                        continue
                    host = f"[{ip.compressed}]" if ip.version == 6 else ip.compressed
                    for port in ports:
                        out[f"{host}:{port}"] = pod
        return out


def observed_templates(main_path: str | None, ingress_path: str | None,
                        on_ingress: Callable[[IngressNginxConfig], None]) -> Any:
    """A TemplateExecutor that also hands every rendered Ingress model to `on_ingress` (latency labels)."""
    from ingressctl.configs.templates import TemplateExecutor

    class ObservedTemplateExecutor(TemplateExecutor):
        def execute_ingress_template(self, cfg: IngressNginxConfig) -> str:
            text = super().execute_ingress_template(cfg)
            try:
                on_ingress(cfg)
            except Exception as e:  # metrics must never cost a config
                log.warning("updating latency metric labels failed",
                            ingress=f"{cfg.ingress.namespace}/{cfg.ingress.name}", error=str(e))
            return text

    return ObservedTemplateExecutor(main_path, ingress_path)


def observed_configurator(manager: Any, static: Any, params: Any, templates: Any, wildcard: bool,
                           on_delete: Callable[[str], None], special_secrets: dict[str, bytes],
                           certificates_per_handshake: bool) -> Any:
    """A Configurator that also reports every deleted Ingress to `on_delete` (latency labels)."""
    from ingressctl.configs.configurator import Configurator

    class ObservedConfigurator(Configurator):
        def delete(self, key: ResourceKey) -> None:
            super().delete(key)
            if key.kind != INGRESS_KIND:
                return
            try:
                on_delete(key.ns_name)
            except Exception as e:
                log.warning("removing latency metric labels failed", ingress=key.ns_name, error=str(e))

    return ObservedConfigurator(manager, static, params, templates, is_wildcard_enabled=wildcard,
                                special_secrets=special_secrets,
                                certificates_per_handshake=certificates_per_handshake)
