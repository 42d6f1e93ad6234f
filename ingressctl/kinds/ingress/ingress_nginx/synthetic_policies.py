"""What the Policies synthesized from ingress-nginx's annotations share (auth-tls-*'s ingressMTLS in
`authtls_policy.py`, proxy-ssl-*'s egressMTLS in `proxyssl_policy.py`): reading the annotations' settings off
the Ingress, and `nginx.org/policies` winning over them.

Guarantees:
- `annotation_settings(...)` is (the Ingress's namespace, the settings, warnings); the settings are None
  when nothing is to be added: the Ingress has no `secret_annotation`, its ingress-nginx annotations are
  invalid (the Ingress is rejected anyway), or a Policy of `policy_type` of `nginx.org/policies` is on it,
  which wins (the one warning says so).
- `cross_namespace(...)` is the Secret's error and warning for a Secret outside the Ingress's namespace
  (ingress-nginx's default refuses them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ingressctl.kinds.ingress.ingress_nginx.translate import Translation, translate
from ingressctl.policies import policy_type_of
from ingressctl.policies.base import PolicySecret, ResolvedPolicy

T = TypeVar("T")
CROSS_NAMESPACE = "cross namespace secrets are not supported"


def annotation_settings(ing: Mapping[str, Any], policies: tuple[ResolvedPolicy, ...] | None,
                        secret_annotation: str, policy_type: str, settings: Callable[[Translation], T | None],
                        ) -> tuple[str, T | None, list[str]]:
    """See the module docstring."""
    meta = ing.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    annotations = meta.get("annotations")
    annotations = annotations if isinstance(annotations, dict) else {}
    namespace = str(meta.get("namespace") or "")
    if secret_annotation not in annotations:
        return namespace, None, []
    tr = translate(annotations)
    found = settings(tr)
    if found is None or tr.problems:
        return namespace, None, []
    own = next((r.key for r in policies or () if r.policy is not None and not r.error
                and policy_type_of(r.policy) == policy_type), "")
    if own:
        label = policy_type[0].upper() + policy_type[1:]
        return namespace, None, [f"annotation nginx.org/policies ({label} Policy {own}) wins over "
                                 f"{secret_annotation}; {secret_annotation} is ignored"]
    return namespace, found, []


def cross_namespace(secret_annotation: str, key: str) -> tuple[PolicySecret, str]:
    """The unusable Secret `key` of another namespace, and its warning."""
    return PolicySecret(key, error=CROSS_NAMESPACE), (
        f"annotation {secret_annotation}: the Secret {key} is not in the Ingress's namespace "
        f"({CROSS_NAMESPACE}, as ingress-nginx's default)")
