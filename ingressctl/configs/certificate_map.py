"""Certificates loaded at TLS handshakes instead of at reloads: a map from server name to PEM file.

NGINX builds an SSL context and reads every `ssl_certificate` of every server at each start and reload
(about 1 ms per certificate on a small machine: 5,000 TLS hosts add ~5 s to every reload). With
`--load-certificates-per-handshake` a TLS server of an Ingress has no SSL context of its own: the default
server's context carries `ssl_certificate $ingressctl_certificate`, which NGINX evaluates at each full
handshake for the server the client's SNI selected, through the map this module renders
(`map $server_name $ingressctl_certificate`), so the certificate served is still that host's own.

Guarantees:
- `set(owner, {host: pem})` makes the owner's hosts map to their PEM files; `remove(owner)` drops them.
  While two owners claim a host (a host moving from one Ingress to another) the last `set` wins; when one
  lets go, the other's PEM is mapped again. Keys are the servers' names as NGINX keeps them (lower case).
- `default` maps the default server's own name and every name without an entry: the default server's
  certificate, or "" when it has none (it then rejects those handshakes before any certificate is read).
- `text()` is a complete `map` block for the http level, valid for NGINX whatever the hosts (each key once,
  every value quoted); `changed` tells whether it differs from the last `text()` taken.
- The PEM files are read by NGINX's workers at handshakes, so they must be readable by the worker user:
  `worker_uid` says which uid must own them when the controller runs as root.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping

from ingressctl.configs.quoting import quote
from ingressctl.keys import ResourceKey

VARIABLE = "$ingressctl_certificate"
"""The variable the default server's `ssl_certificate` and `ssl_certificate_key` name."""
NGINX_DEFAULT_WORKER_USER = "nobody"
"""The user NGINX's workers run as when a root master has no `user` directive."""


def worker_uid(worker_user: str, directory: str) -> int | None:
    """The uid the PEM files under `directory` must belong to: None when the controller is not root (the
    workers run as its own user); the worker user's uid when it is. ValueError when that user does not exist
    or cannot reach `directory` (a parent it may not traverse)."""
    if os.geteuid() != 0:
        return None
    name = worker_user or NGINX_DEFAULT_WORKER_USER
    try:
        user = pwd.getpwnam(name)
    except KeyError:
        raise ValueError(f"NGINX's worker user {name!r} does not exist") from None
    path = os.path.abspath(directory)
    while True:
        try:
            st = os.stat(path)
        except OSError as e:
            raise ValueError(f"cannot check that NGINX's worker user {name!r} reaches {path}: {e}") from None
        bit = 0o100 if st.st_uid == user.pw_uid else 0o010 if st.st_gid == user.pw_gid else 0o001
        if not st.st_mode & bit:
            raise ValueError(f"NGINX's worker user {name!r} cannot traverse {path}")
        parent = os.path.dirname(path)
        if parent == path:
            return user.pw_uid
        path = parent


class CertificateMap:
    """Server name -> PEM file of the servers whose certificate is loaded at handshakes (see the module
    docstring). Not thread-safe: the Configurator's thread owns it."""

    def __init__(self, default: str = "") -> None:
        self._default = default
        self._claims: dict[ResourceKey, dict[str, str]] = {}  # owner -> host -> PEM path
        self._owners: dict[str, list[ResourceKey]] = {}  # host -> owners claiming it, the latest last
        self._entries: dict[str, str] = {}  # host -> PEM path NGINX maps it to
        self._default_variable = ""  # maps the names without an entry instead of `default` (configs.routes)
        self.changed = True

    @property
    def default_variable(self) -> str:
        return self._default_variable

    @default_variable.setter
    def default_variable(self, variable: str) -> None:
        """A variable (`$name`) the names without an entry map to instead of the default PEM ("": the PEM)."""
        if variable != self._default_variable:
            self._default_variable, self.changed = variable, True

    @property
    def default(self) -> str:
        return self._default

    @default.setter
    def default(self, pem: str) -> None:
        if pem != self._default:
            self._default, self.changed = pem, True

    def entries(self) -> dict[str, str]:
        return dict(self._entries)

    def set(self, owner: ResourceKey, certificates: Mapping[str, str]) -> None:
        """The hosts `owner` serves with a per-handshake certificate now, each with its PEM path."""
        new = {host.lower(): pem for host, pem in certificates.items()}
        old = self._claims.pop(owner, {})
        if new == old:
            if new:
                self._claims[owner] = old
            return
        if new:
            self._claims[owner] = new
        for host in old.keys() - new.keys():
            self._release(owner, host)
        for host, pem in new.items():
            owners = self._owners.setdefault(host, [])
            if owner in owners:
                owners.remove(owner)
            owners.append(owner)
            self._map(host, pem)

    def remove(self, owner: ResourceKey) -> None:
        for host in self._claims.pop(owner, {}):
            self._release(owner, host)

    def _release(self, owner: ResourceKey, host: str) -> None:
        owners = self._owners.get(host, [])
        if owner in owners:
            owners.remove(owner)
        if owners:  # another owner claims it (a host moving between Ingresses): its PEM serves
            self._map(host, self._claims[owners[-1]][host])
            return
        self._owners.pop(host, None)
        if self._entries.pop(host, None) is not None:
            self.changed = True

    def _map(self, host: str, pem: str) -> None:
        if self._entries.get(host) != pem:
            self._entries[host] = pem
            self.changed = True

    def text(self) -> str:
        """The `map` block (and `changed` becomes False)."""
        self.changed = False
        lines = ["# Each server's certificate, loaded at TLS handshakes by the default server's context.",
                 f"map $server_name {VARIABLE} {{",
                 f"    default {self._default_variable or quote(self._default)};"]
        # A leading backslash makes every key literal (a host named `default` or `include` is no keyword).
        lines.extend(f"    {quote(chr(92) + host)} {quote(pem)};"
                     for host, pem in sorted(self._entries.items()))
        lines.append("}")
        return "\n".join(lines) + "\n"
