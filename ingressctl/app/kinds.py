"""The resource kinds this controller serves besides the built-in Ingress: the one list that wires them in.

Guarantees:
- `custom_resource_kinds(...)`: without `--enable-custom-resources`, none. With it, the registry entry
  factories of VirtualServer, VirtualServerRoute, the Pods of upstream `subselector`s and Policy, then (when
  the cluster serves TransportServers) TransportServer and GlobalConfiguration, with the Policy store the
  VirtualServer and Ingress kinds resolve references with. A kind whose CRD (or the RBAC to list it) the
  cluster lacks is left out with a log line saying why, rather than waiting for a cache that cannot sync;
  a custom template that cannot be loaded raises `KindSetupError`.
- `transportservers_served(...)`: whether the cluster serves TransportServers.

Adding a kind: its folder under `kinds/`, its factory in `custom_resource_kinds`, its CRD in the chart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ingressctl.controller.controller import KindFactory
from ingressctl.k8s.readahead import ReadAhead
from ingressctl.logging import get_logger
from ingressctl.settings import Settings

if TYPE_CHECKING:
    from ingressctl.kinds.policy.kind import PolicyStore

log = get_logger(__name__)


class KindSetupError(Exception):
    """A kind cannot be served as configured (the message says why)."""


def custom_resource_kinds(settings: Settings, client: Any, reads: ReadAhead, *, serve_transportservers: bool,
                          is_leader: Callable[[], bool] | None, stream_server_name: bool = False
                          ) -> tuple[list[KindFactory], PolicyStore | None]:
    """See the module docstring. `stream_server_name`: NGINX selects stream servers by SNI (1.25.5)."""
    s = settings
    if not s.controller.enable_custom_resources:
        return [], None
    # Imported here: a controller without custom resources never loads their modules.
    from ingressctl.configs.templates import TemplateError
    from ingressctl.k8s.errors import ApiError
    from ingressctl.kinds.policy.kind import PolicyStore
    from ingressctl.kinds.policy.wiring import policy_kinds
    from ingressctl.kinds.transportserver.wiring import StreamSetupError, forbidden_ports, stream_kinds
    from ingressctl.kinds.virtualserver.kind import (
        VIRTUALSERVERS,
        virtualserver_kind_factory,
        virtualserverroute_kind_factory,
    )
    from ingressctl.kinds.virtualserver.pods import pod_kind_factory

    namespace = s.kube.watch_namespaces[0] if s.kube.watch_namespaces else None
    policy_store = PolicyStore()    # unbound until Policies are served: every reference missing
    kinds: list[KindFactory] = []
    try:
        reads.take(("probe", VIRTUALSERVERS.plural), lambda: client.list(VIRTUALSERVERS, namespace, limit=1))
    except ApiError as e:
        log.error("custom resources are enabled, but VirtualServers cannot be listed: not serving them; "
                  "install the k8s.nginx.org CRDs (charts/ingressctl/crds) and the RBAC for them, "
                  "or pass --enable-custom-resources=false", error=str(e))
    else:
        policy_store, policy = policy_kinds(client, namespace, enable_snippets=s.controller.enable_snippets)
        # The GlobalConfiguration is watched with the TransportServers (its listeners serve both).
        gc = (s.controller.global_configuration or "") if serve_transportservers else ""
        try:
            vs = virtualserver_kind_factory(client, template_path=s.nginx.virtualserver_template_path,
                                            policies=policy_store, global_configuration=gc,
                                            forbidden_ports=forbidden_ports(s))
        except TemplateError as e:
            raise KindSetupError(f"invalid template: {e}") from e
        kinds = [vs, virtualserverroute_kind_factory(client), pod_kind_factory(), *policy]
    if not serve_transportservers:
        return kinds, policy_store
    try:
        return [*kinds, *stream_kinds(s, client, is_leader or (lambda: True),
                                      stream_server_name=stream_server_name)], policy_store
    except StreamSetupError as e:
        raise KindSetupError(str(e)) from e


def transportservers_served(settings: Settings, client: Any, reads: ReadAhead) -> bool:
    """Whether the cluster serves TransportServers (their CRD and the RBAC to list them)."""
    from ingressctl.k8s.errors import ApiError
    from ingressctl.kinds.transportserver.kind import TRANSPORTSERVERS

    s = settings
    namespace = s.kube.watch_namespaces[0] if s.kube.watch_namespaces else None
    try:
        reads.take(("probe", TRANSPORTSERVERS.plural),
                   lambda: client.list(TRANSPORTSERVERS, namespace, limit=1))
    except ApiError as e:
        log.error("custom resources are enabled, but TransportServers cannot be listed: not serving them; "
                  "install the k8s.nginx.org CRDs (charts/ingressctl/crds) and the RBAC for them",
                  error=str(e))
        return False
    return True
