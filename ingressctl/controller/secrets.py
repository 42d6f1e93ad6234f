"""Secret validation and the LocalSecretStore (NIC's `secrets` package).

Guarantees:
- `validate_secret` accepts a `kubernetes.io/tls` Secret only when tls.crt and tls.key are present, valid
  base64, hold a PEM certificate chain and a PEM private key (RSA, EC or Ed25519), and the key matches the
  leaf certificate's public key; otherwise it raises `SecretValidationError` with a message for users
  (`failed to validate TLS cert and key: private key does not match public key`). An `nginx.org/htpasswd`
  Secret needs the `htpasswd` key. The Secret types the policy types need (`policies.POLICY_SECRET_TYPES`:
  `nginx.org/ca`, `nginx.org/apikey`) are validated and written by their own `SecretType`;
  `SUPPORTED_SECRET_TYPES`, read by the informer filters, holds all of them. A store made with
  `ingress_nginx_compat` takes `Opaque` Secrets too (`COMPAT_SECRET_TYPES`, `opaque_secrets.py`). Other
  types are `secret is of the unsupported type <t>`. Expiry is not checked (as NIC).
- `LocalSecretStore` keeps one `SecretReference` per supported Secret. Files are written lazily as NIC does:
  the first `get_secret_reference` of a valid Secret writes `<namespace>-<name>` through the manager (TLS:
  cert chain then key, mode 0600; htpasswd: mode 0644); later updates rewrite a written file only when its
  bytes change, and a Secret that turns invalid has its file removed. A failed write becomes the reference's
  error (and is retried on the next lookup); nothing raises out of the store for bad Secrets.
- `add_or_update_secret` returns whether anything that matters changed (type, data), so the controller can
  skip re-rendering on no-op updates (labels, resourceVersion).
- Validation can run ahead, off the sync thread: `prevalidate` (called by the Secret informer for every
  listed or watched Secret, as its pages arrive) records `validate_secret`'s result for the Secret's key
  and data; `add_or_update_secret` uses a recorded result only when it was computed for the very type and
  data it stores, and validates itself otherwise, so the outcome is the same either way. At most one
  recorded result per Secret key; a delete drops it. A Secret whose type and data the store holds already (a
  relist) is not validated again.
- Files can be written ahead, in parallel, at start-up: `write_files_ahead(keys)` forks a process
  (`forked.ForkedCall`) that writes the files of the valid TLS Secrets among `keys()` while this one drains
  its queue. Until `finish_files_ahead`, `get_secret_reference` of a valid TLS Secret that was stored at the
  fork and not changed since hands out its path without writing; `finish_files_ahead` then takes over each
  file the child wrote (by inode, size and mtime: without reading it), writes here every file handed out
  that the child did not write (a failed or killed child costs only the parallelism), and removes the files
  the child wrote that no reference asked for. So once it returns, the files on disk are exactly those the
  lazy writes would have made. Call it before anything reads the files (before the reload).
- `get_ca_reference` gives the `ca.crt` of a valid TLS Secret as a CA file of its own (`tls_ca_files`),
  written on first use, rewritten or removed with the Secret's changes.
- `get_auth_map_reference` gives an Opaque Secret as ingress-nginx's auth-map htpasswd file, read in full
  from the API (`read_secret`) once per resourceVersion (`auth_map_secrets.py`); an update of a Secret read
  so counts as a change even when its reduced data is the same, and so does the sync of one whose read
  failed and is due again (`retry_auth_maps`); a delete (or another type) removes the file.
- Single-threaded (the sync thread), except `prevalidate`, which any one thread may call concurrently.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from ingressctl.controller.auth_map_secrets import AuthMapFiles, SecretReader
from ingressctl.controller.opaque_secrets import OPAQUE, OPAQUE_SECRET, supported_types
from ingressctl.controller.tls_ca_files import TLSCAFiles
from ingressctl.forked import ForkedCall
from ingressctl.keys import object_key, resource_version
from ingressctl.logging import get_logger
from ingressctl.nginx.conf_dir import WrittenFile
from ingressctl.policies import POLICY_SECRET_TYPES
from ingressctl.secret_types import (
    SECRET_TYPE_HTPASSWD,
    SECRET_TYPE_TLS,
    SecretReference,
    SecretType,
    SecretValidationError,
    data_field,
)

log = get_logger(__name__)

SECRET_TYPES: Mapping[str, SecretType] = {t.name: t for t in POLICY_SECRET_TYPES}
SUPPORTED_SECRET_TYPES: frozenset[str] = frozenset({SECRET_TYPE_TLS, SECRET_TYPE_HTPASSWD, *SECRET_TYPES})
# Types a store made with `ingress_nginx_compat` validates and writes too (`opaque_secrets.py`); not in
# SUPPORTED_SECRET_TYPES, so never taken without --ingress-nginx-compat.
COMPAT_SECRET_TYPES: Mapping[str, SecretType] = {OPAQUE_SECRET.name: OPAQUE_SECRET}
_NO_TYPES: Mapping[str, SecretType] = {}

ERROR_SECRET_MISSING = "secret doesn't exist or of an unsupported type"
TLS_CERT_KEY = "tls.crt"
TLS_PRIVATE_KEY_KEY = "tls.key"
HTPASSWD_KEY = "htpasswd"
# How long `finish_files_ahead` waits for the writing process before it kills it and writes the files itself.
FILES_AHEAD_GRACE_SECONDS = 30.0


class SecretFileManager(Protocol):
    """What the store needs from the NGINX manager."""

    def create_secret(self, name: str, content: bytes, mode: int = 0o600) -> str: ...

    def delete_secret(self, name: str) -> None: ...


@runtime_checkable
class SecretFileWriterAhead(Protocol):
    """What `LocalSecretStore.write_files_ahead` needs from the manager as well (`nginx.Manager`)."""

    def secret_path(self, name: str) -> str: ...

    def write_secret_ahead(self, name: str, content: bytes, mode: int = 0o600) -> WrittenFile: ...

    def adopt_secret(self, name: str, written: WrittenFile) -> bool: ...

    def discard_secret_ahead(self, name: str, written: WrittenFile) -> bool: ...


def secret_file_name(key: str) -> str:
    """NIC's file name for a Secret key: "ns/name" -> "ns-name"."""
    return key.replace("/", "-", 1)


def supported_secret_types(ingress_nginx_compat: bool) -> frozenset[str]:
    """The types the informer, handler and store take: with --ingress-nginx-compat, Opaque too."""
    return supported_types(SUPPORTED_SECRET_TYPES, ingress_nginx_compat)


def is_supported_secret_type(secret_type: str) -> bool:
    return secret_type in SUPPORTED_SECRET_TYPES


_PEM_BLOCK_RE = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n.*?-----END \1-----", re.DOTALL)


def _pem_blocks(data: bytes) -> list[tuple[str, bytes]]:
    return [(m.group(1).decode(), m.group(0)) for m in _PEM_BLOCK_RE.finditer(data)]


def _is_key_block(kind: str) -> bool:
    return kind == "PRIVATE KEY" or kind.endswith(" PRIVATE KEY")


def _check_tls_pair(cert_pem: bytes, key_pem: bytes) -> None:
    """Go's tls.X509KeyPair checks in words a user can act on; raises SecretValidationError(detail)."""
    cert_blocks = _pem_blocks(cert_pem)
    certs = [b for kind, b in cert_blocks if kind == "CERTIFICATE"]
    if not certs:
        if any(_is_key_block(kind) for kind, _ in cert_blocks):
            raise SecretValidationError("failed to find certificate PEM data in certificate input, but did "
                                        "find a private key; PEM inputs may have been switched")
        raise SecretValidationError("failed to find any PEM data in certificate input")
    parsed: list[x509.Certificate] = []
    for i, block in enumerate(certs):
        try:
            parsed.append(x509.load_pem_x509_certificate(block))
        except ValueError as e:
            raise SecretValidationError(f"failed to parse certificate {i + 1} of the chain: {e}") from None
    key_blocks = _pem_blocks(key_pem)
    keys = [b for kind, b in key_blocks if _is_key_block(kind)]
    if not keys:
        if any(kind == "CERTIFICATE" for kind, _ in key_blocks):
            raise SecretValidationError("found a certificate rather than a key in the PEM for the private "
                                        "key")
        raise SecretValidationError("failed to find any PEM data in key input")
    try:
        # The RSA consistency check costs ~57 ms per 2048-bit key (minutes for thousands of Secrets);
        # the public-key match against the certificate below is the check that matters here.
        key = serialization.load_pem_private_key(keys[0], password=None, unsafe_skip_rsa_key_validation=True)
    except (ValueError, TypeError, NotImplementedError) as e:
        raise SecretValidationError(f"failed to parse private key: {e}") from None
    if not isinstance(key, (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey)):
        raise SecretValidationError(f"unsupported private key type {type(key).__name__}")
    fmt = serialization.PublicFormat.SubjectPublicKeyInfo
    enc = serialization.Encoding.DER
    if parsed[0].public_key().public_bytes(enc, fmt) != key.public_key().public_bytes(enc, fmt):
        raise SecretValidationError("private key does not match public key")


def validate_tls_secret(secret: Mapping[str, Any]) -> None:
    if secret.get("type") != SECRET_TYPE_TLS:
        raise SecretValidationError(f"TLS Secret must be of the type {SECRET_TYPE_TLS}")
    try:
        _check_tls_pair(data_field(secret, TLS_CERT_KEY), data_field(secret, TLS_PRIVATE_KEY_KEY))
    except SecretValidationError as e:
        raise SecretValidationError(f"failed to validate TLS cert and key: {e}") from None


def validate_htpasswd_secret(secret: Mapping[str, Any]) -> None:
    if secret.get("type") != SECRET_TYPE_HTPASSWD:
        raise SecretValidationError(f"htpasswd Secret must be of the type {SECRET_TYPE_HTPASSWD}")
    try:
        data_field(secret, HTPASSWD_KEY)
    except SecretValidationError as e:
        raise SecretValidationError(f"htpasswd secret is invalid: {e}") from None


def validate_secret(secret: Mapping[str, Any]) -> None:
    """Validate by type; raises SecretValidationError."""
    secret_type = str(secret.get("type") or "")
    if secret_type == SECRET_TYPE_TLS:
        validate_tls_secret(secret)
    elif secret_type == SECRET_TYPE_HTPASSWD:
        validate_htpasswd_secret(secret)
    elif secret_type in SECRET_TYPES:
        SECRET_TYPES[secret_type].validate(secret)
    else:
        raise SecretValidationError(f"secret is of the unsupported type {secret_type}")


def tls_file_content(secret: Mapping[str, Any]) -> bytes:
    """The PEM file NGINX reads for a valid TLS Secret: the cert chain, a newline, then the key."""
    return data_field(secret, TLS_CERT_KEY) + b"\n" + data_field(secret, TLS_PRIVATE_KEY_KEY)


def secret_file(secret: Mapping[str, Any], extra: Mapping[str, SecretType] = _NO_TYPES
                ) -> tuple[bytes, int] | None:
    """(content, mode) of the file for a VALID supported Secret; None for a type without a file."""
    if secret.get("type") == SECRET_TYPE_HTPASSWD:
        return data_field(secret, HTPASSWD_KEY), 0o644
    secret_type = str(secret.get("type") or "")
    registered = SECRET_TYPES.get(secret_type) or extra.get(secret_type)
    if registered is not None:
        return registered.file(secret) if registered.file is not None else None
    return tls_file_content(secret), 0o600


Fingerprint = tuple[str, tuple[tuple[str, str], ...]]  # a Secret's type and sorted data items


@dataclass
class _Stored:
    secret: Mapping[str, Any]
    secret_type: str
    fingerprint: Fingerprint
    error: str = ""
    path: str = ""
    written: bytes | None = None  # a digest of the bytes last written to `path` (not the bytes: memory)


def _fingerprint(secret: Mapping[str, Any]) -> Fingerprint:
    data = secret.get("data")
    items = tuple(sorted((str(k), str(v)) for k, v in data.items())) if isinstance(data, dict) else ()
    return str(secret.get("type") or ""), items


def _validation_error(secret: Mapping[str, Any], extra: Mapping[str, SecretType] = _NO_TYPES) -> str:
    try:
        compat = extra.get(str(secret.get("type") or "")) if extra else None
        if compat is not None:
            compat.validate(secret)
        else:
            validate_secret(secret)
    except SecretValidationError as e:
        return str(e)
    return ""


class _Prevalidated:
    """`validate_secret` results computed ahead of the store, by Secret key, with the fingerprint of the type
    and data they were computed for (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: dict[str, tuple[Fingerprint, str]] = {}

    def put(self, key: str, fp: Fingerprint, error: str) -> None:
        with self._lock:
            self._results[key] = (fp, error)

    def take(self, key: str, fp: Fingerprint) -> str | None:
        """The error recorded for exactly this fingerprint ("" = valid), or None; forgets the key's entry."""
        with self._lock:
            entry = self._results.pop(key, None)
        return entry[1] if entry is not None and entry[0] == fp else None

    def discard(self, key: str) -> None:
        with self._lock:
            self._results.pop(key, None)

    def __len__(self) -> int:
        return len(self._results)


@dataclass
class _FilesAhead:
    """A process writing files ahead (`LocalSecretStore.write_files_ahead`)."""

    call: ForkedCall[dict[str, WrittenFile]]
    writer: SecretFileWriterAhead
    forked: dict[str, _Stored]  # the store's TLS entries at the fork: the files the process may write
    claimed: dict[str, _Stored] = field(default_factory=dict)  # handed out with a path, not written here
    written: dict[str, WrittenFile] | None = None  # what the process wrote, once it is done
    waited: float = 0.0  # seconds `wait` waited for it

    def wait(self) -> dict[str, WrittenFile]:
        """What the process wrote (waiting for it to be done); after that it writes nothing."""
        if self.written is None:
            t0 = time.monotonic()
            written, why = self.call.result(t0 + FILES_AHEAD_GRACE_SECONDS)
            if why:
                log.warning("writing secret files ahead failed; writing them here", error=why)
            self.written = written or {}
            self.waited = time.monotonic() - t0
        return self.written


class LocalSecretStore:
    """Supported Secrets by key, with their validation result and (once needed) their file on disk."""

    def __init__(self, manager: SecretFileManager, *, ingress_nginx_compat: bool = False,
                 read_secret: SecretReader | None = None) -> None:
        """`ingress_nginx_compat`: Opaque Secrets are validated and written too (COMPAT_SECRET_TYPES).
        `read_secret` (namespace, name): a GET of the whole Secret, for `get_auth_map_reference`."""
        self._manager = manager
        self._auth_maps = AuthMapFiles(manager, read_secret) if read_secret is not None else None
        self._extra = COMPAT_SECRET_TYPES if ingress_nginx_compat else _NO_TYPES
        self._secrets: dict[str, _Stored] = {}
        self._prevalidated = _Prevalidated()
        self._ahead: _FilesAhead | None = None
        self._ca_files = TLSCAFiles(manager)

    def prevalidate(self, secret: Mapping[str, Any]) -> None:
        """Validate a supported Secret now (any thread) for a later `add_or_update_secret` of the same type
        and data; other types are ignored. Never raises."""
        if not is_supported_secret_type(str(secret.get("type") or "")):
            return
        try:
            key = object_key(secret)
            fp = _fingerprint(secret)
            stored = self._secrets.get(key)   # a relist repeats what the store holds: nothing to validate
            if stored is not None and stored.fingerprint == fp:
                return
            error = _validation_error(secret)
        except Exception as e:  # the sync validates it again and reports what is wrong
            log.debug("secret not validated ahead", error=str(e))
            return
        self._prevalidated.put(key, fp, error)

    def add_or_update_secret(self, secret: Mapping[str, Any]) -> bool:
        """Store and validate the Secret; True if its type or data changed (False for a no-op update)."""
        key = object_key(secret)
        fp = _fingerprint(secret)
        ahead = self._prevalidated.take(key, fp)
        stored = self._secrets.get(key)
        maps = self._auth_maps
        if maps is not None and key in maps and fp[0] != OPAQUE:
            maps.forget(key)
        if stored is not None and stored.fingerprint == fp:
            stored.secret = secret
            return maps is not None and maps.outdated(key, resource_version(secret))
        error = ahead if ahead is not None else _validation_error(secret, self._extra)
        new = _Stored(secret=secret, secret_type=fp[0], fingerprint=fp, error=error)
        if stored is not None:
            new.path, new.written = stored.path, stored.written
        self._secrets[key] = new
        self._ca_files.refresh(key, None if error or new.secret_type != SECRET_TYPE_TLS else secret)
        if new.path:
            if error:
                self._remove_file(key, new)
            else:
                self._write(key, new)
        return True

    def delete_secret(self, key: str) -> bool:
        """Forget the Secret and remove its file; True if it was stored."""
        self._prevalidated.discard(key)
        stored = self._secrets.pop(key, None)
        self._ca_files.refresh(key, None)
        if self._auth_maps is not None:
            self._auth_maps.forget(key)
        if stored is None:
            return False
        if stored.path:
            self._remove_file(key, stored)
        return True

    def secret_exists(self, key: str) -> bool:
        return key in self._secrets

    def keys(self) -> list[str]:
        return sorted(self._secrets)

    def get_secret_reference(self, key: str) -> SecretReference:
        """The reference for `key`; writes the file of a valid Secret on first use."""
        stored = self._secrets.get(key)
        if stored is None:
            return SecretReference(key=key, error=ERROR_SECRET_MISSING)
        error = stored.error
        if not error and not stored.path:
            ahead = self._ahead
            if ahead is not None and ahead.forked.get(key) is stored:
                stored.path = ahead.writer.secret_path(secret_file_name(key))  # see finish_files_ahead
                ahead.claimed[key] = stored
            else:
                error = self._write(key, stored)  # a failed write is retried on the next call
        return SecretReference(key=key, path=stored.path, error=error, secret_type=stored.secret_type)

    def get_ca_reference(self, key: str) -> SecretReference:
        """The `ca.crt` of a valid TLS Secret as a CA file (`tls_ca_files`): its path, "" without `ca.crt`,
        or the error (also for a missing, invalid or non-TLS Secret)."""
        stored = self._secrets.get(key)
        if stored is None or stored.error or stored.secret_type != SECRET_TYPE_TLS:
            return SecretReference(key=key, error=stored.error if stored else ERROR_SECRET_MISSING,
                                   secret_type=stored.secret_type if stored else "")
        path, error = self._ca_files.reference(key, stored.secret)
        return SecretReference(key=key, path=path, error=error, secret_type=SECRET_TYPE_TLS)

    def get_auth_map_reference(self, key: str) -> SecretReference:
        """An Opaque Secret as ingress-nginx's auth-map htpasswd file (`auth_map_secrets.py`): its path, or
        the error. A Secret of another type is its plain reference (its users report the type)."""
        stored = self._secrets.get(key)
        if stored is None or stored.secret_type != OPAQUE:
            return self.get_secret_reference(key)
        if self._auth_maps is None:
            return SecretReference(key=key, error="auth-map secrets cannot be read", secret_type=OPAQUE)
        path, error = self._auth_maps.reference(key, resource_version(stored.secret))
        return SecretReference(key=key, path=path, error=error, secret_type=OPAQUE)

    def retry_auth_maps(self, retry: Callable[[str], None]) -> None:
        """`retry(key)`: called when an auth-map read failed and is worth trying again (`requeue_secret`)."""
        if self._auth_maps is not None:
            self._auth_maps.retry = retry

    def write_files_ahead(self, keys: Callable[[], Iterable[str]]) -> bool:
        """See the module docstring. `keys` runs in the forked process: it must take no lock (it reads a
        snapshot). False (nothing started) if one is already running, the manager cannot write ahead, or the
        fork failed."""
        writer = self._manager
        if self._ahead is not None or not isinstance(writer, SecretFileWriterAhead):
            return False
        call = ForkedCall.start(lambda: self._write_ahead_here(writer, keys()))
        if call is None:
            return False
        tls = {k: v for k, v in self._secrets.items() if v.secret_type == SECRET_TYPE_TLS}
        self._ahead = _FilesAhead(call, writer, tls)
        return True

    def _write_ahead_here(self, writer: SecretFileWriterAhead, keys: Iterable[str]) -> dict[str, WrittenFile]:
        """The forked process's work: the file of every valid TLS Secret among `keys` that has none yet."""
        written: dict[str, WrittenFile] = {}
        for key in keys:
            stored = self._secrets.get(key)
            if (key in written or stored is None or stored.error or stored.path
                    or stored.secret_type != SECRET_TYPE_TLS):
                continue
            try:
                content = tls_file_content(stored.secret)
                written[key] = writer.write_secret_ahead(secret_file_name(key), content)
            except (OSError, SecretValidationError):
                continue  # finish_files_ahead writes it, and reports what fails
        return written

    def finish_files_ahead(self) -> None:
        """See the module docstring; a no-op without `write_files_ahead`."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return
        written = ahead.wait()
        adopted = rewritten = 0
        for key, stored in ahead.claimed.items():
            if self._secrets.get(key) is not stored or stored.written is not None:
                continue  # replaced, deleted or rewritten since: its own writes took care of its file
            file = written.get(key)
            if file is not None and ahead.writer.adopt_secret(secret_file_name(key), file):
                stored.written = file.digest
                adopted += 1
            else:
                stored.path = ""
                self._write(key, stored)  # a failure is logged; the reload then fails for its users
                rewritten += 1
        discarded = sum(ahead.writer.discard_secret_ahead(secret_file_name(key), file)
                        for key, file in written.items() if key not in ahead.claimed)
        log.info("secret files written ahead", written=len(written), adopted=adopted, rewritten=rewritten,
                 discarded=discarded, waited_seconds=round(ahead.waited, 3))

    def abandon_files_ahead(self) -> None:
        """On stop before `finish_files_ahead`: kill the writing process if it still runs, and reap it. Its
        files stay as they are (a next start writes what it needs over them). A no-op otherwise."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.call.close()

    def _wait_for_ahead(self, key: str) -> None:
        """Before this process writes or removes the file of `key`: if the forked process may write it too,
        wait until that one is done, so that its write can never land after ours."""
        ahead = self._ahead
        if ahead is not None and key in ahead.forked:
            ahead.wait()

    def _write(self, key: str, stored: _Stored) -> str:
        """Write (or rewrite) the file if its bytes differ; returns "" or the error."""
        self._wait_for_ahead(key)
        try:
            file = secret_file(stored.secret, self._extra)
            if file is None:
                return ""
            content, mode = file
            digest = hashlib.blake2b(content, digest_size=16).digest()
            if stored.path and stored.written == digest:
                return ""
            stored.path = self._manager.create_secret(secret_file_name(key), content, mode)
            stored.written = digest
            return ""
        except (OSError, SecretValidationError) as e:
            log.warning("writing secret file failed", secret=key, error=str(e))
            if stored.path:  # do not leave the previous version behind
                self._remove_file(key, stored)
            return f"failed to write the file of secret {key}: {e}"

    def _remove_file(self, key: str, stored: _Stored) -> None:
        self._wait_for_ahead(key)
        try:
            self._manager.delete_secret(secret_file_name(key))
        except OSError as e:
            log.warning("deleting secret file failed", secret=key, error=str(e))
        stored.path, stored.written = "", None


class SecretStoreLike(Protocol):
    def add_or_update_secret(self, secret: dict[str, Any]) -> bool: ...
    def delete_secret(self, key: str) -> bool: ...
    def get_secret_reference(self, key: str) -> SecretReference: ...
    def get_ca_reference(self, key: str) -> SecretReference: ...
    def get_auth_map_reference(self, key: str) -> SecretReference: ...


@runtime_checkable
class SecretFilesAhead(Protocol):
    """A Secret store that can write its files in a forked process at start-up (`LocalSecretStore`)."""

    def write_files_ahead(self, keys: Callable[[], Iterable[str]]) -> bool: ...
    def finish_files_ahead(self) -> None: ...
    def abandon_files_ahead(self) -> None: ...
