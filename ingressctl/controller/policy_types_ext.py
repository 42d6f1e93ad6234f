"""Registration of the validators of the policy types ingressMTLS, egressMTLS, cache, cors and externalAuth
(`policy_validation_mtls`, `_cache`, `_cors`, `_extauth`) in `policy_validation.POLICY_TYPE_VALIDATORS`, and
of the `nginx.org/ca` Secret type (`policy_secrets_ca`), on import.

Guarantee: importing `policy_validation` imports this module, so the registry always holds these types;
externalAuth's `authSnippets` follow `PolicyValidationConfig.enable_snippets`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.controller import policy_secrets_ca as _policy_secrets_ca  # noqa: F401  (registration)
from ingressctl.controller.policy_validation import PolicyValidationConfig, register_policy_type
from ingressctl.controller.policy_validation_cache import validate_cache
from ingressctl.controller.policy_validation_cors import validate_cors
from ingressctl.controller.policy_validation_extauth import validate_external_auth
from ingressctl.controller.policy_validation_mtls import validate_egress_mtls, validate_ingress_mtls
from ingressctl.validation import FieldError


def _external_auth(field: str, spec: Mapping[str, Any], config: PolicyValidationConfig) -> list[FieldError]:
    return validate_external_auth(field, spec, enable_snippets=config.enable_snippets)


register_policy_type("ingressMTLS", lambda f, s, c: validate_ingress_mtls(f, s))
register_policy_type("egressMTLS", lambda f, s, c: validate_egress_mtls(f, s))
register_policy_type("cache", lambda f, s, c: validate_cache(f, s))
register_policy_type("cors", lambda f, s, c: validate_cors(f, s))
register_policy_type("externalAuth", _external_auth)
