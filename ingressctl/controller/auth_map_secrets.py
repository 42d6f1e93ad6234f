"""ingress-nginx's `auth-secret-type: auth-map`: the htpasswd file of an Opaque Secret whose every key is a
user name and whose value is that user's password hash, read in full from the API on demand (the Secret
informer keeps Opaque Secrets reduced to a few keys: `opaque_secrets.py`).

Guarantees:
- `htpasswd_from_map(secret)`: one `user:hash` line per key, in sorted key order. ingress-nginx walks a Go
  map, whose order is random; sorted keeps the file's bytes stable, so an unchanged Secret never rewrites it.
  A key must be a Secret data key as the API server accepts it (`[-._a-zA-Z0-9]+`, at most 253 characters,
  not `.` or `..`; so never a `:`); a value must be valid base64 and, once one trailing line ending is dropped
  (a YAML block scalar leaves one), non-empty and free of CR, LF and NUL: nothing in a Secret can add a line
  or a user to the file. Anything else raises SecretValidationError naming the key, never the value. An empty
  Secret is an empty file: nobody gets in (as with ingress-nginx).
- `AuthMapFiles.reference(key, resource_version)` returns (path, error): the file
  `<namespace>-<name>_auth-map` (mode 0644; `_` is not allowed in Secret names, so it is never another
  Secret's file), written from one GET of the Secret through the API client the informers use. The full
  data is never kept: only the digest of the bytes written. The outcome is cached per key and
  resourceVersion: a render of the same version does not GET again (nor does the version the GET itself
  returned, when it was newer than the informer's). A failed read (403, 404, timeout, ...) or a Secret that
  is not Opaque or not a valid map is the error, and a file written before is removed (fail closed). It is
  read again when the version changes; a read that failed for another reason than NotFound (forbidden, a
  timeout, a server error) also `RETRY_SECONDS` later: `retry(key)` is called (the controller queues the
  Secret's sync then: `requeue_secret`), and `outdated` is true from then on, so the Ingresses using it are
  re-rendered and read it again (an RBAC fix or a recovered API server takes effect without a change to
  the Secret).
- `outdated(key, resource_version)`: the Secret was read at another version, or its failed read is due
  again; the store then reports the update as a change, so the Ingresses using it are re-rendered (the
  reduced data does not show it).
- `forget(key)`: the Secret was deleted or is no longer Opaque: its entry and its file are removed.
- Never raises for a bad Secret or a failed read. Single-threaded (the sync thread), like the Secret store.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ingressctl.controller.opaque_secrets import OPAQUE
from ingressctl.controller.task import Kind, Task
from ingressctl.k8s.errors import ApiError
from ingressctl.keys import resource_version
from ingressctl.logging import get_logger
from ingressctl.secret_types import SecretValidationError, data_field

log = get_logger(__name__)

SUFFIX = "_auth-map"
RETRY_SECONDS = 30.0
MAX_KEY_LENGTH = 253
_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_FORBIDDEN = (b"\r", b"\n", b"\0")

SecretReader = Callable[[str, str], Mapping[str, Any]]
"""(namespace, name) -> the Secret as the API returns it; raises (ApiError) when it cannot be read."""


class AuthMapFileManager(Protocol):
    def create_secret(self, name: str, content: bytes, mode: int = 0o600) -> str: ...

    def delete_secret(self, name: str) -> None: ...


class DelayingQueue(Protocol):
    def add_after(self, item: Task, delay: float) -> None: ...


def requeue_secret(queue: DelayingQueue) -> Callable[[str], None]:
    """`AuthMapFiles.retry` for the controller: the Secret's sync task again in `RETRY_SECONDS`."""
    return lambda key: queue.add_after(Task(Kind.SECRET, key), RETRY_SECONDS)


def auth_map_file_name(key: str) -> str:
    """"ns/name" -> "ns-name_auth-map"."""
    return key.replace("/", "-", 1) + SUFFIX


def _user(key: str) -> str:
    if len(key) > MAX_KEY_LENGTH or key in (".", "..") or not _KEY.fullmatch(key):
        raise SecretValidationError(f"the key {key!r} is not a valid user name (a Secret data key: "
                                    f"'[-._a-zA-Z0-9]+', at most {MAX_KEY_LENGTH} characters)")
    return key


def _hash(secret: Mapping[str, Any], user: str) -> bytes:
    value = data_field(secret, user)
    if value.endswith(b"\r\n"):
        value = value[:-2]
    elif value.endswith(b"\n"):
        value = value[:-1]
    if not value:
        raise SecretValidationError(f"the value of the key {user} is empty")
    if any(c in value for c in _FORBIDDEN):
        raise SecretValidationError(f"the value of the key {user} holds a line break or a NUL byte")
    return value


def htpasswd_from_map(secret: Mapping[str, Any]) -> bytes:
    """The htpasswd file of an auth-map Secret (see the module docstring); raises SecretValidationError."""
    data = secret.get("data")
    if data is None:
        return b""
    if not isinstance(data, dict):
        raise SecretValidationError("the data of the secret is not a map")
    users = sorted(_user(str(k)) for k in data)
    return b"".join(user.encode() + b":" + _hash(secret, user) + b"\n" for user in users)


@dataclass
class _Entry:
    versions: tuple[str, ...]  # the informer's resourceVersion asked for, and the one the read returned
    path: str = ""
    error: str = ""
    digest: bytes | None = None  # of the bytes written to `path`
    failed_at: float = 0.0
    transient: bool = False  # the read failed for another reason than NotFound: read again later


class AuthMapFiles:
    """See the module docstring."""

    def __init__(self, manager: AuthMapFileManager, read: SecretReader,
                 clock: Callable[[], float] | None = None) -> None:
        self._manager = manager
        self._read = read
        self._clock = clock if clock is not None else time.monotonic
        self._entries: dict[str, _Entry] = {}
        self.retry: Callable[[str], None] | None = None  # see the module docstring

    def reference(self, key: str, resource_version: str) -> tuple[str, str]:
        """(path, "") of the file of Secret `key` at `resource_version`, or ("", why not)."""
        entry = self._entries.get(key)
        if entry is not None and resource_version in entry.versions and not self._due(entry):
            return entry.path, entry.error
        if entry is None:
            entry = self._entries[key] = _Entry((resource_version,))
        read_version, content, error, transient = self._content(key)
        entry.versions = (resource_version, read_version) if read_version else (resource_version,)
        if content is not None:
            error = self._write(key, entry, content)
            transient = bool(error)  # a failed write is tried again too
        entry.error, entry.transient = error, transient
        if error:
            self._remove(key, entry)
            entry.failed_at = self._clock()
            if transient and self.retry is not None:
                self.retry(key)
        return entry.path, entry.error

    def outdated(self, key: str, resource_version: str) -> bool:
        entry = self._entries.get(key)
        return entry is not None and (resource_version not in entry.versions or self._due(entry))

    def _due(self, entry: _Entry) -> bool:
        return entry.transient and self._clock() - entry.failed_at >= RETRY_SECONDS

    def forget(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._remove(key, entry)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def _content(self, key: str) -> tuple[str, bytes | None, str, bool]:
        """(the version read, the file's bytes or None, the error, whether it is worth reading again)."""
        ns, _, name = key.partition("/")
        try:
            secret = self._read(ns, name)
        except ApiError as e:
            log.warning("reading an auth-map secret failed", secret=key, error=str(e))
            if e.is_not_found:
                return "", None, f"secret {key} does not exist", False
            return "", None, f"secret {key} could not be read: {e}", True
        except Exception as e:  # fail closed whatever the reader raises
            log.warning("reading an auth-map secret failed", secret=key, error=str(e))
            return "", None, f"secret {key} could not be read: {e}", True
        version = resource_version(secret)
        secret_type = secret.get("type") or OPAQUE
        if secret_type != OPAQUE:
            return version, None, f"secret {key} is of the type '{secret_type}', must be '{OPAQUE}'", False
        try:
            return version, htpasswd_from_map(secret), "", False
        except SecretValidationError as e:
            return version, None, f"secret {key} is not a valid auth-map: {e}", False

    def _write(self, key: str, entry: _Entry, content: bytes) -> str:
        digest = hashlib.blake2b(content, digest_size=16).digest()
        if entry.path and entry.digest == digest:
            return ""
        try:
            entry.path = self._manager.create_secret(auth_map_file_name(key), content, 0o644)
        except OSError as e:
            log.warning("writing an auth-map file failed", secret=key, error=str(e))
            return f"failed to write the file of secret {key}: {e}"
        entry.digest = digest
        return ""

    def _remove(self, key: str, entry: _Entry) -> None:
        if not entry.path:
            return
        try:
            self._manager.delete_secret(auth_map_file_name(key))
        except OSError as e:
            log.warning("deleting an auth-map file failed", secret=key, error=str(e))
        entry.path, entry.digest = "", None
