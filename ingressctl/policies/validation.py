"""Policy validation (NIC's `ValidatePolicy`), with NIC's field-error messages.

Guarantees:
- `validate_policy(obj, config=PolicyValidationConfig())` returns every error of a `k8s.nginx.org/v1`
  Policy at once as apimachinery field errors. It first checks NIC's "exactly one type" rule
  (`spec: Invalid value: "": must specify exactly one of: ...`, listing the types in NIC's order,
  `POLICY_TYPES`), then calls the type's validator with the path of the type's spec (`spec.rateLimit`) and
  its mapping (`{}` when the field is not a mapping).
- `PolicyValidationConfig` carries the switches that change the rules (NGINX Plus, snippets, OIDC).
- Every string that reaches the NGINX configuration is checked by the type's validator (no control
  characters; type-specific grammars); together with the renderers' quoting no field can add an NGINX
  directive.
- Secrets are not looked at here (a missing or wrong Secret is a render-time problem of the resources that
  use the policy, never a validation error of the Policy), nor are other cross-object checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.policies import POLICY_TYPES
from ingressctl.policies.base import PolicyValidationConfig
from ingressctl.validation import FieldError, invalid


def validate_policy(obj: Mapping[str, Any],
                    config: PolicyValidationConfig | None = None) -> list[FieldError]:
    """Every validation error of the Policy `obj` (see the module docstring)."""
    config = config or PolicyValidationConfig()
    spec = obj.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    present = [t for t in POLICY_TYPES if spec.get(t.key) is not None]
    if len(present) != 1:
        listed = ", ".join(f"`{t.key}`" for t in POLICY_TYPES)
        return [invalid("spec", "", f"must specify exactly one of: {listed}")]
    value = spec[present[0].key]
    return present[0].validate(f"spec.{present[0].key}", value if isinstance(value, Mapping) else {}, config)
