"""What an Ingress points at: the one walk of its backends and the one walk of its Secret references.

Guarantees:
- `ingress_backends` lists (service name, port number or name) of every backend: `spec.defaultBackend` first,
  then each rule's paths in order, de-duplicated. Optional filters keep only the rules of hosts the Ingress
  owns and only the paths a minion won, as the config is rendered. Malformed parts are skipped, never raise.
- `ingress_secrets` lists the Secret names the Ingress references in its namespace (`spec.tls[].secretName`
  in order, then `nginx.org/basic-auth-secret`, then ingress-nginx's `auth-tls-secret` of this namespace,
  then with `ingress_nginx` ingress-nginx's `auth-secret` and `proxy-ssl-secret` when they are in the
  Ingress's namespace),
  de-duplicated, and whether a TLS entry has no secretName (it uses the wildcard Secret).
- Validation, the Configuration's indexes, the endpoint resolution and the model builder all read these, so
  they cannot disagree about what an Ingress references.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ingressctl.kinds.ingress.annotations_nginx_org import BASIC_AUTH_SECRET
from ingressctl.kinds.ingress.ingress_nginx.basic_auth import referenced_secret

AUTH_TLS_SECRET = "nginx.ingress.kubernetes.io/auth-tls-secret"  # ingress-nginx's client CA (same namespace)
PROXY_SSL_SECRET = "nginx.ingress.kubernetes.io/proxy-ssl-secret"  # its backend client certificate (same)

Backend = tuple[str, int | str]


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def backend_service(backend: Any) -> Backend | None:
    """(service name, port number or name) of an IngressBackend, or None when it has no service."""
    svc = backend.get("service") if isinstance(backend, dict) else None
    if not svc or not isinstance(svc, dict):
        return None
    port = svc.get("port")
    if not isinstance(port, dict):
        return str(svc.get("name", "")), ""
    number = port.get("number")
    if isinstance(number, int) and not isinstance(number, bool) and number != 0:
        return str(svc.get("name", "")), number
    return str(svc.get("name", "")), str(port.get("name", "") or "")


def _backend_objects(ing: Mapping[str, Any], valid_hosts: Mapping[str, bool] | None,
                     valid_paths: Mapping[str, bool] | None) -> list[Any]:
    """The walk: the raw IngressBackend objects, defaultBackend first, then each rule's paths in order
    (malformed rules and paths, which hold no backend, are left out)."""
    spec = ing.get("spec")
    if not isinstance(spec, dict):
        return [None]
    found = [spec.get("defaultBackend")]
    rules = spec.get("rules")
    if not isinstance(rules, list):
        return found
    for rule in rules:
        if not isinstance(rule, dict):
            continue
        if valid_hosts and not valid_hosts.get(str(rule.get("host") or ""), False):
            continue
        http = rule.get("http")
        paths = http.get("paths") if isinstance(http, dict) else None
        if not isinstance(paths, list):
            continue
        for p in paths:
            if not isinstance(p, dict):
                continue
            if valid_paths is not None and not valid_paths.get(str(p.get("path", "")), False):
                continue
            found.append(p.get("backend"))
    return found


def ingress_backends(ing: Mapping[str, Any], *, valid_hosts: Mapping[str, bool] | None = None,
                     valid_paths: Mapping[str, bool] | None = None) -> list[Backend]:
    """Every Service backend, defaultBackend first, de-duplicated. With `valid_hosts` (non-empty) only rules
    of hosts mapped to True count; with `valid_paths` only paths mapped to True."""
    found: dict[Backend, None] = {}
    for backend in _backend_objects(ing, valid_hosts, valid_paths):
        b = backend_service(backend)
        if b is not None:
            found[b] = None
    return list(found)


def service_names(ing: Mapping[str, Any]) -> set[str]:
    """Names of every Service the Ingress's spec references (rules and defaultBackend)."""
    names: set[str] = set()
    for backend in _backend_objects(ing, None, None):
        svc = backend.get("service") if isinstance(backend, dict) else None
        if svc and isinstance(svc, dict):
            names.add(str(svc.get("name", "")))
    return names


class IngressSecrets(NamedTuple):
    names: tuple[str, ...]          # in the Ingress's namespace, in order of reference, unique
    uses_default_tls: bool          # a spec.tls entry without secretName


def ingress_secrets(ing: Mapping[str, Any], *, ingress_nginx: bool = False) -> IngressSecrets:
    """See the module docstring; `ingress_nginx` (`--ingress-nginx-compat`): `auth-secret` too."""
    names: dict[str, None] = {}
    uses_default = False
    spec = ing.get("spec")
    tls_entries = spec.get("tls") if isinstance(spec, dict) else None
    if isinstance(tls_entries, list):
        for tls in tls_entries:
            name = tls.get("secretName") if isinstance(tls, dict) else None
            if name:
                names[str(name)] = None
            else:
                uses_default = True
    meta = ing.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    auth = annotations.get(BASIC_AUTH_SECRET) if isinstance(annotations, dict) else None
    if auth:
        names[str(auth)] = None
    client_ca = annotations.get(AUTH_TLS_SECRET) if isinstance(annotations, dict) else None
    if isinstance(client_ca, str) and client_ca.count("/") == 1:   # ingress-nginx's `[<namespace>]/<name>`
        ns, _, name = client_ca.replace(" ", "").partition("/")
        if name and ns in ("", meta.get("namespace") if isinstance(meta, dict) else None):
            names[name] = None
    if ingress_nginx and isinstance(annotations, dict):
        own = meta.get("namespace") if isinstance(meta, dict) else None
        basic = referenced_secret(annotations, str(own or ""))
        if basic:
            names[basic] = None
        backend = annotations.get(PROXY_SSL_SECRET)
        if isinstance(backend, str) and backend.count("/") == 1:   # `<namespace>/<name>`
            ns, _, name = backend.replace(" ", "").partition("/")
            if name and ns == own:
                names[name] = None
    return IngressSecrets(tuple(names), uses_default)
