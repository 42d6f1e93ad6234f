"""Start-up wiring of Policies (`k8s.nginx.org/v1` Policy) with `--enable-custom-resources`.

Guarantees:
- `policy_kinds` returns the Policy store (which the VirtualServer kind resolves references with) and the
  Policy's registry entry factory, or no factory when the cluster does not serve Policies (no CRD or no
  RBAC to list them): then the controller says why, and every route that references a Policy answers 500
  with a warning (fail closed), as for a missing Policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ingressctl.controller.kinds import ResourceKind
from ingressctl.controller.policy_kind import POLICIES, PolicyStore, policy_kind_factory
from ingressctl.controller.policy_validation import PolicyValidationConfig
from ingressctl.k8s.errors import ApiError
from ingressctl.logging import get_logger

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
