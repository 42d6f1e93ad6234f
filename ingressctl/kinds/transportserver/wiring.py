"""Start-up wiring of the stream (layer 4) resources: TransportServers and the GlobalConfiguration.

Guarantees:
- `with_stream` turns on the main template's `stream {}` block and loads NGINX's stream module when it is
  dynamic (and with TLS passthrough, moves TLS termination behind the SNI split); a missing module raises
  `StreamSetupError` naming the package to install.
- `stream_kinds` returns the registry entry factories (TransportServer, and the GlobalConfiguration when
  `--global-configuration` names one); a custom TransportServer template that cannot be loaded raises
  `StreamSetupError`. GlobalConfiguration listeners may not use the controller's own ports.
- With TLS passthrough, the Ingress builder gets the TransportServers' passthrough host table, so that
  ingress-nginx's `ssl-passthrough` Ingresses (`--ingress-nginx-compat`) route their hosts through it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ingressctl.configs.configmaps import StaticConfigParams
from ingressctl.configs.templates import TemplateError
from ingressctl.controller.kinds import ResourceKind
from ingressctl.keys import INGRESS_KIND
from ingressctl.kinds.ingress.ingress_nginx.passthrough import IngressPassthroughRenderer, IngressPassthroughs
from ingressctl.kinds.ingress.kind import IngressBuilder
from ingressctl.kinds.passthrough import PassthroughRenderer
from ingressctl.kinds.transportserver.config import TransportServerRenderer, TransportServerTemplate
from ingressctl.kinds.transportserver.kind import (
    GLOBALCONFIGURATION_KIND,
    ListenerSource,
    globalconfiguration_kind,
    transportserver_kind,
)
from ingressctl.nginx.modules import StreamModuleError, stream_module
from ingressctl.settings import Settings


class StreamSetupError(Exception):
    pass


def with_stream(static: StaticConfigParams, binary: str, *,
                tls_passthrough: bool = False) -> StaticConfigParams:
    try:
        path = stream_module(binary)
    except StreamModuleError as e:
        raise StreamSetupError(str(e)) from e
    return dataclasses.replace(static, stream=True, stream_module_path=path, tls_passthrough=tls_passthrough)


def forbidden_ports(settings: Settings) -> set[int]:
    """The ports GlobalConfiguration listeners may not use: the controller's own."""
    n, s = settings.nginx, settings.serving
    ports = {n.http_port, n.https_port}
    if n.status:
        ports.add(n.status_port)
    if s.enable_prometheus_metrics:
        ports.add(s.prometheus_metrics_listen_port)
    if s.ready_status and s.ready_status_port:
        ports.add(s.ready_status_port)
    if settings.controller.enable_tls_passthrough:
        ports.add(settings.controller.tls_passthrough_port)
    return ports


KindFactory = Callable[[Any], ResourceKind]


def stream_kinds(settings: Settings, client: Any, is_leader: Callable[[], bool], *,
                 stream_server_name: bool = False) -> list[KindFactory]:
    """The registry entry factories of the stream resources (see the module docstring).
    `stream_server_name`: TransportServers with a `host` share a TCP listener, selected by SNI."""
    try:
        template = TransportServerTemplate(settings.nginx.transportserver_template_path)
    except TemplateError as e:
        raise StreamSetupError(f"invalid TransportServer template: {e}") from e
    gc_key = settings.controller.global_configuration or ""
    bound: list[Any] = []  # the controller, once the first factory runs

    def cached(key: str) -> dict[str, Any] | None:
        return bound[0].get_object(GLOBALCONFIGURATION_KIND, key) if bound else None

    listeners = ListenerSource(gc_key, cached, forbidden_ports(settings))

    def ts(lbc: Any) -> ResourceKind:
        bound[:] = [lbc]
        lbc.configurator.register_renderer(TransportServerRenderer(template))
        c = settings.controller
        if c.enable_tls_passthrough:
            lbc.configurator.register_renderer(PassthroughRenderer())
        entry = transportserver_kind(lbc, client, ingress_class=c.ingress_class, listeners=listeners,
                                     snippets_enabled=c.enable_snippets, is_leader=is_leader,
                                     stream_server_name=stream_server_name,
                                     tls_passthrough_port=c.tls_passthrough_port if c.enable_tls_passthrough
                                     else None)
        table = getattr(entry.builder, "passthrough", None)
        ingress_builder = lbc.kinds[INGRESS_KIND].builder if INGRESS_KIND in lbc.kinds else None
        if table is not None and isinstance(ingress_builder, IngressBuilder):
            # ingress-nginx's ssl-passthrough Ingresses route their hosts through the same table.
            lbc.configurator.register_renderer(IngressPassthroughRenderer())
            ingress_builder.passthrough = IngressPassthroughs(table, lbc.configurator)
        return entry

    factories: list[KindFactory] = [ts]
    if gc_key:
        factories.append(lambda lbc: globalconfiguration_kind(lbc, listeners))
    return factories
