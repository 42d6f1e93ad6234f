"""ingress-nginx's Secrets: the `Opaque` Secrets its annotations read (`auth-secret`'s key `auth`, later
`auth-tls-secret`'s `ca.crt`), kept by the Secret informer and store only with `--ingress-nginx-compat`.

Design (one path for every ingress-nginx annotation that reads a Secret):
- With the flag, the Secret informer keeps `Opaque` Secrets, and its transform reduces their data to the
  keys ingress-nginx's annotations read (`KEPT_KEYS`: `auth`, `ca.crt`); every other key of an Opaque
  Secret (an application's credentials, configuration files) is dropped as it arrives, so the cache holds
  a few hundred bytes per Opaque Secret at most and no unrelated secret. An Opaque Secret without one of
  those keys is kept without data (its name and version only: the dependency tracking needs its events).
- The Secret handler and store take Opaque Secrets like the supported types (`supported_types(True)`): an
  Ingress referencing one through an annotation is re-rendered when it is created, changed or deleted.
- The store validates an Opaque Secret (its kept data is base64) and writes, when it has the key `auth`,
  that key's bytes as its file (`<namespace>-<name>`, mode 0644: the htpasswd file NGINX's workers read).
  Without `auth` it has no file (the reference's path is ""), which its users report.
- Without the flag nothing changes: Opaque Secrets are dropped by the handler and keep no data in the
  cache, as before.
- `auth-secret-type: auth-map` (every key a user) needs every key of the Secret: the cache still keeps the
  reduced Secret (its identity and resourceVersion: its events drive the re-renders), and the store reads
  that one Secret in full from the API when an Ingress asks for it, once per resourceVersion
  (`auth_map_secrets.py`), keeping only the digest of the file it writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.secret_types import SecretType, SecretValidationError, data_field, decoded_data

OPAQUE = "Opaque"
AUTH_KEY = "auth"
CA_KEY = "ca.crt"
KEPT_KEYS = (AUTH_KEY, CA_KEY)


def reduce_data(data: Any) -> Any:
    """The kept part of an Opaque Secret's `data` (`KEPT_KEYS` only); None when none is there. A field of
    an unexpected shape is kept as it came (validation reports it)."""
    if not isinstance(data, dict):
        return data
    kept = {k: data[k] for k in KEPT_KEYS if k in data}
    return kept or None


def _validate(secret: Mapping[str, Any]) -> None:
    decoded_data(secret)  # raises SecretValidationError for data that is not base64


def _file(secret: Mapping[str, Any]) -> tuple[bytes, int] | None:
    data = secret.get("data")
    if not isinstance(data, dict) or AUTH_KEY not in data:
        return None
    return data_field(secret, AUTH_KEY), 0o644


OPAQUE_SECRET = SecretType(OPAQUE, _validate, _file)


def supported_types(base: frozenset[str], compat: bool) -> frozenset[str]:
    """The Secret types the informer, handler and store take: `base`, and Opaque with the flag."""
    return base | {OPAQUE} if compat else base


__all__ = ["AUTH_KEY", "CA_KEY", "KEPT_KEYS", "OPAQUE", "OPAQUE_SECRET", "SecretValidationError",
           "reduce_data", "supported_types"]
