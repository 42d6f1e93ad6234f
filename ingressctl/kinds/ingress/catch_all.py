"""The class-wide catch-all of the Ingress config: which Ingress owns it, its TLS, the locations other servers
add to reach it, and its upstream (the pieces `config` uses; see that module's docstring for the rules).

Guarantees:
- Pure functions of their arguments; a builder is anything with `tls`, `static` and `location` as
  `config._Builder` has them.
- The catch-all locations carry none of their server's own path behaviour (rewrite, redirect, access rules):
  the catch-all's requests are not that Ingress's paths.
"""

from __future__ import annotations

from typing import Any, Protocol

from ingressctl.configs.config import PREFIX, Location, derive
from ingressctl.configs.configmaps import StaticConfigParams
from ingressctl.controller.model import CATCH_ALL_HOST
from ingressctl.kinds.ingress.ingress_ex import IngressEx
from ingressctl.kinds.ingress.locations import (
    has_root_location,
    one_label_host_regex,
    service_backend,
    upstream_name,
)
from ingressctl.validation import as_dict, as_list

CATCH_ALL_NAMED_LOCATION = "@ingressctl_catch_all"


class Builder(Protocol):
    static: StaticConfigParams

    def tls(self, host: str, tls_hosts: dict[str, str]) -> tuple[bool, str, bool]: ...

    def location(self, modifier: str, path: str, upstream: str, service: str, *,
                 trailing_slash: bool, ingress_path: str = "") -> Location: ...


def is_catch_all(ing_ex: IngressEx) -> bool:
    """An Ingress that owns the class-wide catch-all: one without rules, or (-allow-empty-ingress-host) one
    with a rule without a host."""
    return ing_ex.valid_hosts.get(CATCH_ALL_HOST, False)


def catch_all_tls(b: Builder, spec: dict[str, Any]) -> tuple[bool, str, bool, bool]:
    """(ssl, pem path, reject handshake, own certificate) of the catch-all server: the Secret of a `spec.tls`
    entry without hosts (the Ingress spec's "all hosts"), else the default server's certificate, else TLS
    handshakes are refused as the default server refuses them."""
    for tls in as_list(spec.get("tls")):
        if isinstance(tls, dict) and not as_list(tls.get("hosts")):
            secret = tls.get("secretName") or ""
            secret = secret if isinstance(secret, str) else ""
            ssl, pem, reject = b.tls(CATCH_ALL_HOST, {CATCH_ALL_HOST: secret})
            return ssl, pem, reject, not reject
    if b.static.default_server_tls_path:
        return True, b.static.default_server_tls_path, False, False
    return True, "", True, False


def catch_all_locations(b: Builder, locations: list[Location], host: str) -> list[Location]:
    """While a catch-all exists, what a server adds to reach it: `location /` when it has none (its unmatched
    paths), and for a wildcard host the named location its other hosts are sent to. Both use the server's own
    proxy settings and `$ingressctl_catch_all`, the upstream nginx.conf names, so no file refers to another
    file's upstream."""
    paths = []
    if not has_root_location(locations):
        paths.append("/")
    if one_label_host_regex(host):
        paths.append(CATCH_ALL_NAMED_LOCATION)
    return [derive(b.location(PREFIX, path, "", "", trailing_slash=False), catch_all=True,
                   rewrite_pattern="", rewrite_target="", return_redirect=(0, ""), access_rules=())
            for path in paths]


def catch_all_upstream(ing_ex: IngressEx) -> str:
    """The upstream of a catch-all Ingress (its defaultBackend's); "" when `ing_ex` is not the catch-all."""
    if not is_catch_all(ing_ex):
        return ""
    backend, _ = service_backend(as_dict(ing_ex.ingress.get("spec")).get("defaultBackend"))
    if backend is None:
        return ""
    return upstream_name(ing_ex.namespace, ing_ex.name, "", backend.service, backend.port)
