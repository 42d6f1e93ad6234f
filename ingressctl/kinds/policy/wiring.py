"""Start-up wiring of Policies (`k8s.nginx.org/v1` Policy) with `--enable-custom-resources`, and of what the
policy types and the Policies on Ingresses (`nginx.org/policies`) need from the controller.

Guarantees:
- `policy_kinds` returns the Policy store (which the VirtualServer kind resolves references with) and the
  Policy's registry entry factory, or no factory when the cluster does not serve Policies (no CRD or no
  RBAC to list them): then the controller says why, and every route that references a Policy answers 500
  with a warning (fail closed), as for a missing Policy.
- `wire_policy_users`: with `--enable-custom-resources`, the Ingress builder resolves `nginx.org/policies`
  through the Policy store, even when the cluster serves no Policies (every reference is then missing: the
  Ingress answers 500, never serves unprotected); without it, the annotation is ignored with a warning
  (NIC 5.5). A change of a Service (or its endpoints) that an externalAuth Policy names re-renders the
  resources that reference that Policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ingressctl.controller.kinds import ResourceKind
from ingressctl.k8s.errors import ApiError
from ingressctl.keys import INGRESS_KIND
from ingressctl.kinds.policy.kind import POLICIES, POLICY_KIND, PolicyStore, policy_kind_factory
from ingressctl.kinds.policy.refs import IngressPolicyResolver, policy_service_users
from ingressctl.logging import get_logger
from ingressctl.policies.base import PolicyValidationConfig

log = get_logger(__name__)


def policy_kinds(client: Any, namespace: str | None, *, enable_snippets: bool = False
                 ) -> tuple[PolicyStore, list[Callable[[Any], ResourceKind]]]:
    store = PolicyStore(config=PolicyValidationConfig(enable_snippets=enable_snippets))
    try:
        client.list(POLICIES, namespace, limit=1)
    except ApiError as e:
        log.error("custom resources are enabled, but Policies cannot be listed: not serving them (routes "
                  "that reference a Policy answer 500); install the k8s.nginx.org CRDs and the RBAC for "
                  "them", error=str(e))
        return store, []
    return store, [policy_kind_factory(client, store)]


def wire_policy_users(lbc: Any, store: PolicyStore | None) -> None:
    """See the module docstring; `store` is None when custom resources are disabled."""
    if store is None:
        return
    resolver = IngressPolicyResolver(store.resolve, lbc.get_object, lbc.endpoint_slices)
    lbc.kinds[INGRESS_KIND].builder.policies = resolver

    def users(namespace: str, name: str) -> list[Any]:
        if POLICY_KIND not in lbc.kinds:
            return []
        return policy_service_users(namespace, name, lbc.informers.list(POLICY_KIND), store.is_ours,
                                    lbc.configuration.find_resources_for_policy)

    lbc.service_users.append(users)
