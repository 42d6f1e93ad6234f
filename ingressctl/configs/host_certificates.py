"""Certificates loaded at TLS handshakes instead of at reloads: one file per host, a copy of its Secret's PEM.

NGINX builds an SSL context and reads every `ssl_certificate` of every server at each start and reload
(about 1 ms per certificate on a small machine: 5,000 TLS hosts add ~5 s to every reload). With
`--load-certificates-per-handshake` a TLS server of an Ingress has no SSL context of its own: the default
server's context carries `ssl_certificate <dir>/$server_name`, which NGINX evaluates at each full handshake
for the server the client's SNI selected, so the certificate served is still the host's own. This module
keeps `<dir>/<host>` holding that host's PEM (certificate and key in one file).

Guarantees:
- The files are read by NGINX's workers, not by its master: each is a 0600 copy owned by the worker user
  (`worker_uid`, when the controller runs as root; else the controller's own user, which the workers share).
  The directory is 0711 like the secrets dir: a known name opens, nothing lists.
- `set(owner, {host: pem})` makes each host's file hold its PEM's current bytes (replaced atomically, so a
  handshake reads the old or the new certificate, never a missing one; rewritten only when the bytes
  change); `remove(owner)` drops the owner's claims; `refresh(pem)` after a PEM file changed (a Secret's
  update) rewrites the copies of it.
- While two owners claim a host (a host moving from one Ingress to another), the last `set` wins; when one
  lets go, the other's PEM is copied.
- A file no owner claims any more stays until the next start: a host's file is read only for a server
  rendered with `certificate_per_handshake`, so it serves nothing unless the file engine restores an older
  version of a conf.d file after a failed reload, and then it serves that host's last certificate.
- `_` is the default server's own name: `set_default(pem)` copies the default server's certificate (no
  SNI, or a name no server has); without one the default server rejects those handshakes.
- The directory is emptied at construction: files of a previous run never serve.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pwd
import shutil
from collections.abc import Mapping

from ingressctl.keys import ResourceKey
from ingressctl.logging import get_logger

log = get_logger(__name__)

DEFAULT_SERVER_NAME = "_"
"""The default server's `server_name`, the file its own certificate is read from."""
NGINX_DEFAULT_WORKER_USER = "nobody"
"""The user NGINX's workers run as when a root master has no `user` directive."""


def worker_uid(worker_user: str, directory: str) -> int | None:
    """The uid the certificate files under `directory` must belong to: None when the controller is not root
    (the workers run as its own user); the worker user's uid when it is. ValueError when that user does not
    exist or cannot reach `directory` (a parent it may not traverse)."""
    if os.geteuid() != 0:
        return None
    name = worker_user or NGINX_DEFAULT_WORKER_USER
    try:
        user = pwd.getpwnam(name)
    except KeyError:
        raise ValueError(f"NGINX's worker user {name!r} does not exist") from None
    path = os.path.dirname(os.path.abspath(directory))
    while True:
        st = os.stat(path)
        bit = 0o100 if st.st_uid == user.pw_uid else 0o010 if st.st_gid == user.pw_gid else 0o001
        if not st.st_mode & bit:
            raise ValueError(f"NGINX's worker user {name!r} cannot traverse {path}")
        parent = os.path.dirname(path)
        if parent == path:
            return user.pw_uid
        path = parent


class HostCertificates:
    """The per-host certificate files under one directory (see the module docstring). Not thread-safe: the
    Configurator's thread owns it."""

    def __init__(self, directory: str, owner_uid: int | None = None) -> None:
        self.directory = directory
        self._uid = owner_uid
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory, exist_ok=True)
        os.chmod(directory, 0o711)
        self._claims: dict[ResourceKey, dict[str, str]] = {}  # owner -> host -> PEM path
        self._owners: dict[str, set[ResourceKey]] = {}  # host -> owners claiming it
        self._copied: dict[str, tuple[str, bytes]] = {}  # host -> (PEM path, digest) of its file
        self._by_source: dict[str, set[str]] = {}  # PEM path -> hosts whose file is a copy of it

    def path(self, host: str) -> str:
        return os.path.join(self.directory, host)

    def sources(self) -> dict[str, str]:
        """host -> the PEM path its file was copied from."""
        return {host: pem for host, (pem, _) in self._copied.items()}

    def set_default(self, pem: str) -> None:
        """The default server's certificate ("" when it has none and rejects handshakes)."""
        if pem:
            self._copy(DEFAULT_SERVER_NAME, pem)
        else:
            self._forget(DEFAULT_SERVER_NAME)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path(DEFAULT_SERVER_NAME))

    def refresh(self, pem: str) -> None:
        """A PEM file changed (a Secret's update): the hosts' copies of it follow."""
        for host in sorted(self._by_source.get(pem, ())):
            self._copy(host, pem)

    def set(self, owner: ResourceKey, certificates: Mapping[str, str]) -> None:
        """The hosts `owner` serves with a per-handshake certificate now, each with its PEM path."""
        old = self._claims.pop(owner, {})
        if certificates:
            self._claims[owner] = dict(certificates)
        for host in old.keys() - certificates.keys():
            self._release(owner, host)
        for host, pem in certificates.items():
            self._owners.setdefault(host, set()).add(owner)
            self._copy(host, pem)

    def remove(self, owner: ResourceKey) -> None:
        for host in self._claims.pop(owner, {}):
            self._release(owner, host)

    def _release(self, owner: ResourceKey, host: str) -> None:
        owners = self._owners.get(host)
        if owners is None:
            return
        owners.discard(owner)
        if owners:  # another owner claims it (a host moving between Ingresses): its PEM serves
            self._copy(host, self._claims[min(owners)][host])
        else:
            del self._owners[host]

    def _copy(self, host: str, pem: str) -> None:
        if host in ("", ".", "..") or "/" in host:
            raise ValueError(f"host {host!r} cannot name a certificate file")
        try:
            with open(pem, "rb") as f:
                data = f.read()
        except OSError as e:
            log.error("reading a host's certificate failed", host=host, path=pem, error=str(e))
            return
        digest = hashlib.blake2b(data, digest_size=16).digest()
        if self._copied.get(host) == (pem, digest):
            return
        path = self.path(host)
        tmp = os.path.join(self.directory, f".{host}.tmp")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                if self._uid is not None:
                    os.fchown(fd, self._uid, -1)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            log.error("writing a host's certificate failed", host=host, error=str(e))
            return
        self._forget(host)
        self._copied[host] = (pem, digest)
        self._by_source.setdefault(pem, set()).add(host)

    def _forget(self, host: str) -> None:
        old = self._copied.pop(host, None)
        if old is not None:
            hosts = self._by_source.get(old[0], set())
            hosts.discard(host)
            if not hosts:
                self._by_source.pop(old[0], None)
