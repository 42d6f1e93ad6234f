"""The `ca.crt` of `kubernetes.io/tls` Secrets as CA files of their own (ingress-nginx's `proxy-ssl-secret`
keeps the backend's trusted CA beside the client certificate), for the Secret store.

Guarantees:
- `reference(key, secret)` writes `<namespace>-<name>_ca.crt` (mode 0644: certificates only, never the key)
  on first use and returns its path; "" without error when the Secret has no `ca.crt`; an error (the
  `nginx.org/ca` rules: PEM certificates that parse) for an invalid one. The name cannot be another Secret's
  file (`_` is not allowed in Secret names).
- `refresh(key, secret)` (the store calls it on every change, `None` on delete or when the Secret turned
  invalid): a file written before is rewritten when its bytes change and removed when there is nothing (left)
  to write. A file never written stays unwritten until its first `reference`.
- Never raises for a bad Secret; a failed write is the reference's error and is retried on the next call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Protocol

from ingressctl.logging import get_logger
from ingressctl.policies.ca_secret import CA_CERT_KEY, ca_file
from ingressctl.secret_types import SECRET_TYPE_CA, SecretValidationError

log = get_logger(__name__)
SUFFIX = "_ca.crt"


class CAFileManager(Protocol):
    def create_secret(self, name: str, content: bytes, mode: int = 0o600) -> str: ...

    def delete_secret(self, name: str) -> None: ...


def ca_file_name(key: str) -> str:
    """"ns/name" -> "ns-name_ca.crt"."""
    return key.replace("/", "-", 1) + SUFFIX


def _content(secret: Mapping[str, Any]) -> bytes | None:
    """The CA file's bytes, None without `ca.crt`; raises SecretValidationError for an invalid one."""
    data = secret.get("data")
    if not isinstance(data, dict) or not data.get(CA_CERT_KEY):
        return None
    return ca_file({"type": SECRET_TYPE_CA, "data": {CA_CERT_KEY: data[CA_CERT_KEY]}})[0]


class TLSCAFiles:
    """The CA files written so far, by Secret key (path, digest of the bytes written)."""

    def __init__(self, manager: CAFileManager) -> None:
        self._manager = manager
        self._written: dict[str, tuple[str, bytes]] = {}

    def reference(self, key: str, secret: Mapping[str, Any]) -> tuple[str, str]:
        """(path, error) of the Secret's CA file; ("", "") without `ca.crt`."""
        try:
            content = _content(secret)
        except SecretValidationError as e:
            self.refresh(key, None)
            return "", str(e)
        if content is None:
            self.refresh(key, None)
            return "", ""
        return self._write(key, content)

    def refresh(self, key: str, secret: Mapping[str, Any] | None) -> None:
        if key not in self._written:
            return
        try:
            content = _content(secret) if secret is not None else None
        except SecretValidationError:
            content = None
        if content is not None:
            self._write(key, content)
            return
        self._written.pop(key)
        try:
            self._manager.delete_secret(ca_file_name(key))
        except OSError as e:
            log.warning("deleting CA file failed", secret=key, error=str(e))

    def _write(self, key: str, content: bytes) -> tuple[str, str]:
        digest = hashlib.blake2b(content, digest_size=16).digest()
        known = self._written.get(key)
        if known is not None and known[1] == digest:
            return known[0], ""
        try:
            path = self._manager.create_secret(ca_file_name(key), content, 0o644)
        except OSError as e:
            log.warning("writing CA file failed", secret=key, error=str(e))
            return "", f"failed to write the CA file of secret {key}: {e}"
        self._written[key] = (path, digest)
        return path, ""
