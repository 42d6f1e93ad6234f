"""The Secrets of policies: their types (registered with the Secret store) and their resolution for the
policy generator.

Guarantees:
- `nginx.org/apikey` Secrets are supported: every data value (a client's API key) must be valid UTF-8,
  non-empty, free of control characters and unique (NIC's rule); the file written for NGINX (mode 0600)
  holds the map entries of `configs.policy_renderers.apikey_map_entries`, so the keys never appear in a
  VirtualServer's configuration file.
- `resolve_policy_secrets(policy, lookup)` returns, for each Secret field the policy's type declares in
  `configs.policy.POLICY_SECRET_FIELDS`, the `PolicySecret` (type, file path or error) of the Secret of
  that name in the Policy's namespace; `policy_secret_keys(policy)` lists those Secret keys (for the
  reference tracking that re-renders users when a Secret changes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ingressctl.configs.policy import POLICY_SECRET_FIELDS, PolicySecret, policy_type_of
from ingressctl.configs.policy_renderers import apikey_map_entries
from ingressctl.controller.secrets import (
    SECRET_TYPE_APIKEY,
    SecretValidationError,
    decoded_data,
    register_secret_type,
)
from ingressctl.kinds.ingress.ingress_ex import SecretReference

_CONTROL = frozenset(chr(c) for c in (*range(0x20), 0x7F))


def _api_keys(secret: Mapping[str, Any]) -> dict[str, str]:
    keys: dict[str, str] = {}
    seen: set[str] = set()
    for client, raw in decoded_data(secret).items():
        try:
            key = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SecretValidationError(f"the API key of client {client} is not valid UTF-8") from None
        if not key:
            raise SecretValidationError(f"the API key of client {client} is empty")
        if any(ch in _CONTROL for ch in key):
            raise SecretValidationError(f"the API key of client {client} contains a control character")
        if key in seen:
            raise SecretValidationError("API Keys cannot be repeated")
        seen.add(key)
        keys[client] = key
    return keys


def validate_apikey_secret(secret: Mapping[str, Any]) -> None:
    if secret.get("type") != SECRET_TYPE_APIKEY:
        raise SecretValidationError(f"APIKey secret must be of the type {SECRET_TYPE_APIKEY}")
    _api_keys(secret)


def apikey_file(secret: Mapping[str, Any]) -> tuple[bytes, int]:
    return apikey_map_entries(_api_keys(secret)).encode(), 0o600


register_secret_type(SECRET_TYPE_APIKEY, validate_apikey_secret, apikey_file)


def _namespace(policy: Mapping[str, Any]) -> str:
    return str((policy.get("metadata") or {}).get("namespace") or "")


def policy_secret_fields(policy: Mapping[str, Any]) -> dict[str, str]:
    """The policy's Secret fields that are set: field name -> Secret key ("ns/name")."""
    type_key = policy_type_of(policy)
    spec = ((policy.get("spec") or {}).get(type_key)) or {}
    out: dict[str, str] = {}
    for fname in POLICY_SECRET_FIELDS.get(type_key, {}):
        name = spec.get(fname) if isinstance(spec, Mapping) else None
        if isinstance(name, str) and name:
            out[fname] = name if "/" in name else f"{_namespace(policy)}/{name}"
    return out


def policy_secret_keys(policy: Mapping[str, Any]) -> list[str]:
    return sorted(set(policy_secret_fields(policy).values()))


def resolve_policy_secrets(policy: Mapping[str, Any],
                           lookup: Callable[[str], SecretReference]) -> dict[str, PolicySecret]:
    """The policy's Secrets as the generator wants them (see the module docstring)."""
    out: dict[str, PolicySecret] = {}
    for fname, key in policy_secret_fields(policy).items():
        ref = lookup(key)
        out[fname] = PolicySecret(key=key, secret_type=ref.secret_type, path=ref.path, error=ref.error)
    return out
