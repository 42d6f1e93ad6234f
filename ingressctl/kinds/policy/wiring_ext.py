"""Start-up wiring of what the policy types ingressMTLS, egressMTLS, cache, cors and externalAuth and the
Policies on Ingresses (`nginx.org/policies`) need from the controller.

Guarantees:
- With `--enable-custom-resources`, the Ingress builder resolves `nginx.org/policies` through the Policy
  store, even when the cluster serves no Policies (every reference is then missing: the Ingress answers
  500, never serves unprotected). Without it, the annotation is ignored with a warning (NIC 5.5).
- A change of a Service (or its endpoints) that an externalAuth Policy names re-renders the resources that
  reference that Policy.
"""

from __future__ import annotations

from typing import Any

from ingressctl.keys import INGRESS_KIND
from ingressctl.kinds.policy.kind import POLICY_KIND, PolicyStore
from ingressctl.kinds.policy.refs import IngressPolicyResolver, policy_service_users


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
