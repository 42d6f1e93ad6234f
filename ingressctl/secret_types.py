"""Secret types: their names, what the configuration sees of a Secret (`SecretReference`), and what a
supported type brings (`SecretType`: its validator and its file for NGINX).

Guarantees: kind-neutral and pure; `data_field` and `decoded_data` raise `SecretValidationError`, with a
message for users, for any malformed data (never another exception).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

SECRET_TYPE_TLS = "kubernetes.io/tls"
SECRET_TYPE_HTPASSWD = "nginx.org/htpasswd"
SECRET_TYPE_APIKEY = "nginx.org/apikey"
SECRET_TYPE_CA = "nginx.org/ca"


class SecretValidationError(Exception):
    """The Secret cannot be used; `str(err)` is the message for users."""


SecretValidator = Callable[[Mapping[str, Any]], None]
SecretFile = Callable[[Mapping[str, Any]], tuple[bytes, int] | None]  # None: no file for this Secret


@dataclass(frozen=True)
class SecretType:
    """A supported Secret type beyond the built-in TLS and htpasswd ones: its name, its validator (raises
    SecretValidationError) and the (content, mode) of its file for NGINX (None for a Secret without one), or
    None when the type has no file (its reference's path stays "")."""

    name: str
    validate: SecretValidator
    file: SecretFile | None


@dataclass(frozen=True)
class SecretReference:
    """A Secret as the config sees it: where its PEM file is, or why there is none."""

    key: str  # "namespace/name"
    path: str = ""  # PEM file (cert + key) on disk when valid, else ""
    error: str = ""  # non-empty when the Secret is missing, invalid or of an unsupported type
    secret_type: str = ""  # e.g. "kubernetes.io/tls"


def data_field(secret: Mapping[str, Any], name: str) -> bytes:
    """One data field of a Secret, base64-decoded."""
    data = secret.get("data")
    if not isinstance(data, dict) or name not in data or data[name] is None:
        raise SecretValidationError(f"the data field {name} is missing")
    value = data[name]
    if not isinstance(value, str):
        raise SecretValidationError(f"the data field {name} is not a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise SecretValidationError(f"the data field {name} is not valid base64") from None


def decoded_data(secret: Mapping[str, Any]) -> dict[str, bytes]:
    """Every data field of a Secret, base64-decoded."""
    data = secret.get("data")
    return {str(k): data_field(secret, str(k)) for k in (data if isinstance(data, dict) else {})}
