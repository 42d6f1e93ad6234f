"""Policies on Ingresses (`nginx.org/policies`, NIC 5.5): the annotation's references and their NGINX lines.

Guarantees:
- `parse_policy_refs(value, namespace)`: the comma-separated `name` / `namespace/name` list as "ns/name" keys
  (the Ingress's namespace by default; cross-namespace references allowed), in order, without repeats.
- `apply_ingress_policies(cfg, ex, static, minions)` adds the policies of a regular Ingress or master (server
  contexts: every server of the file) and of each minion (location contexts: the minion's locations) to the
  rendered model, through the shared generator (`policies.generator.generate_policies`), and returns warnings.
  Only accessControl, cors, egressMTLS, externalAuth and ingressMTLS are supported on Ingresses; any other
  type, a missing or invalid Policy, a bad Secret, or ingressMTLS on a minion or on an Ingress without
  `spec.tls` fail closed: `return 500;` for the whole server (regular Ingress or master) or for the
  minion's locations, with a warning naming the Policy. ingressMTLS on a host of the Ingress that has no TLS
  is ignored there with a warning (NIC 5.5).
- Extra locations of policies (externalAuth) are written once per path: a minion's location whose path
  the master or an earlier minion already uses for another policy is left out with a warning on the minion
  (NIC ignores a duplicate auth URI the same way).
- Server-level CORS (a master's or a regular Ingress's) goes into every location whose own context has no
  CORS policy (NIC copies the master's CORS to the minion locations that have none); the origin maps,
  the externalAuth upstreams and every other http-level line are written once per file. A location that
  gets CORS headers repeats the server's own `add_header` lines (HSTS, `nginx.org/add-header`), which NGINX
  would otherwise drop there (unlike NIC, where CORS silently removes them).
- Never reads the cluster: the controller resolves the Policies, their Secrets and the auth Services'
  endpoints into `IngressEx.policies` / `IngressEx.policy_endpoints` (None: no annotation, or custom
  resources are disabled and the annotation is ignored).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ingressctl.configs.config import IngressNginxConfig, Location, Server
from ingressctl.configs.configmaps import StaticConfigParams
from ingressctl.configs.quoting import quote, token
from ingressctl.kinds.ingress.annotations_nginx_org import POLICIES
from ingressctl.kinds.ingress.ingress_ex import IngressEx
from ingressctl.policies import policy_type_of
from ingressctl.policies.base import (
    LEVEL_LOCATION,
    LEVEL_SERVER,
    PolicyContext,
    PolicyResult,
    ResolvedPolicy,
    dedupe,
)
from ingressctl.policies.generator import generate_policies, policy_context_params

POLICIES_ANNOTATION = POLICIES
INGRESS_POLICY_TYPES = frozenset({"accessControl", "cors", "egressMTLS", "externalAuth", "ingressMTLS"})
INGRESS_OWNER = "ingress"


def parse_policy_refs(value: str, namespace: str) -> list[str]:
    """See the module docstring (empty items are skipped; validation rejects malformed ones)."""
    keys = []
    for item in value.split(","):
        ref = item.strip()
        if ref:
            keys.append(ref if "/" in ref else f"{namespace}/{ref}")
    return list(dict.fromkeys(keys))


def unsupported_on_ingress(key: str, type_key: str) -> str:
    return f"Policy {key} of type {type_key} is not supported on Ingress resources"


def _context(ex: IngressEx, static: StaticConfigParams, level: str, tls: bool) -> PolicyContext:
    return PolicyContext(owner_kind=INGRESS_OWNER, owner_namespace=ex.namespace, owner_name=ex.name,
                         level=level, tls=tls, **policy_context_params(static, ex.policy_endpoints))


def _generate(ex: IngressEx, static: StaticConfigParams, level: str, *, tls: bool,
              has_spec_tls: bool) -> PolicyResult:
    """One context's result; unsupported types fail it closed, ingressMTLS on a non-TLS host of a TLS
    Ingress is left out with a warning."""
    refs: list[ResolvedPolicy] = []
    warnings: list[str] = []
    errors: list[str] = []
    for ref in ex.policies or ():
        type_key = policy_type_of(ref.policy) if ref.policy is not None and not ref.error else ""
        if type_key and type_key not in INGRESS_POLICY_TYPES:
            msg = unsupported_on_ingress(ref.key, type_key)
            warnings.append(msg)
            errors.append(msg)
            continue
        if type_key == "ingressMTLS" and level == LEVEL_LOCATION:
            msg = f"IngressMTLS policy {ref.key} is not allowed on a minion Ingress"
            warnings.append(msg)
            errors.append(msg)
            continue
        if type_key == "ingressMTLS" and not tls and has_spec_tls:
            warnings.append(f"IngressMTLS policy {ref.key} is ignored for a host without TLS")
            continue
        refs.append(ref)
    result = generate_policies(refs, _context(ex, static, level, tls))
    result.warnings = list(dict.fromkeys([*warnings, *result.warnings]))
    if errors and not result.error:
        return PolicyResult(warnings=result.warnings, error=errors[0])
    return result


def server_headers(server: Server) -> list[str]:
    """The server's own `add_header` lines (HSTS, `nginx.org/add-header`) as the template writes them."""
    lines = []
    if server.hsts and (server.ssl or server.hsts_behind_proxy):
        lines.append('add_header Strict-Transport-Security "$hsts_header_val" always;')
    lines += [f"add_header {token(h.name)} {quote(h.value)}{' always' if h.always else ''};"
              for h in server.add_headers]
    return lines


def _with_lines(loc: Location, result: PolicyResult, defaults: Mapping[str, list[str]],
                inherited_headers: list[str]) -> Location:
    lines = list(result.location)
    for type_key, default in defaults.items():
        if type_key not in result.types:
            lines += default
    if not loc.add_headers and any(line.startswith("add_header ") for line in lines):
        # NGINX drops the server's add_header lines in a location with add_header lines of its own.
        lines = [*inherited_headers, *lines]
    return dataclasses.replace(loc, policy_500=loc.policy_500 or bool(result.error),
                               policy_lines=(*loc.policy_lines, *lines))


def apply_ingress_policies(cfg: IngressNginxConfig, ex: IngressEx, static: StaticConfigParams,
                           minions: Sequence[IngressEx] = ()) -> tuple[IngressNginxConfig, list[str],
                                                                       dict[str, list[str]]]:
    """(the model with the policies, the Ingress's warnings, each minion's warnings by key)."""
    if ex.policies is None and (not minions or all(m.policies is None for m in minions)):
        return cfg, [], {}
    has_spec_tls = bool((ex.ingress.get("spec") or {}).get("tls"))
    warnings: list[str] = []
    minion_warnings: dict[str, list[str]] = {}
    http: list[str] = []
    minion_results: dict[tuple[str, str], PolicyResult] = {}
    served = {(loc.minion.namespace, loc.minion.name)
              for server in cfg.servers for loc in server.locations if loc.minion}
    for m in minions:
        if m.policies is None or (m.namespace, m.name) not in served:
            continue    # no annotation, or the minion serves no location here (left out, or lost its paths)
        r = _generate(m, static, LEVEL_LOCATION, tls=False, has_spec_tls=has_spec_tls)
        minion_results[(m.namespace, m.name)] = r
        if r.warnings:
            minion_warnings[m.key] = list(r.warnings)
        if not r.error:
            http += r.http
    servers: list[Server] = []
    for server in cfg.servers:
        sr = (_generate(ex, static, LEVEL_SERVER, tls=server.ssl, has_spec_tls=has_spec_tls)
              if ex.policies is not None else PolicyResult())
        warnings += [w for w in sr.warnings if w not in warnings]
        if not sr.error:
            http += sr.http
        defaults = {} if sr.error else sr.inherited
        locations = []
        for loc in server.locations:
            own = minion_results.get((loc.minion.namespace, loc.minion.name)) if loc.minion else None
            locations.append(_with_lines(loc, own or PolicyResult(), defaults, server_headers(server)))
        unique = [] if sr.error else list(sr.locations)
        for m in minions:
            mr = minion_results.get((m.namespace, m.name))
            for pl in mr.locations if mr is not None and not mr.error else ():
                same = next((known for known in unique if known.path == pl.path), None)
                if same is None:
                    unique.append(pl)
                elif same != pl:   # one NGINX location per path: the master's (or first minion's) wins
                    minion_warnings.setdefault(m.key, []).append(
                        f"location {pl.path} of a policy is already defined by another policy of the "
                        "server; ignored")
        # SSL directives of a policy (IngressMTLS's ssl_client_certificate, ssl_verify_client) act only in
        # the server's own SSL context: such a server loads its certificate at reloads.
        own_context = any(line.startswith("ssl_") for line in sr.server)
        servers.append(dataclasses.replace(server, locations=tuple(locations), policy_500=bool(sr.error),
                                           policy_lines=tuple(sr.server), policy_locations=tuple(unique),
                                           certificate_per_handshake=(server.certificate_per_handshake
                                                                      and not own_context)))
    cfg = dataclasses.replace(cfg, servers=tuple(servers), policy_http=tuple(dedupe(http)))
    return cfg, warnings, minion_warnings
