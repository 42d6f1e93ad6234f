"""Renderers of the policy types ingressMTLS, egressMTLS, cache, cors and externalAuth (see
`configs/policy.py` for the contract), registered on import. The directives themselves come from
`policy_mtls`, `policy_cache`, `policy_cors` and `policy_extauth`.

Guarantees (for validated policies):
- ingressMTLS: only in a server context (VirtualServer spec, Ingress server) of a server that terminates TLS,
  otherwise the context fails closed (500) with NIC's message; the CA Secret (`nginx.org/ca`) gives
  `ssl_client_certificate`, its `ca.crl` (or `crlFileName`, a file in the Secrets directory, which wins
  with a warning when both are given) `ssl_crl`. One per context: later ones are ignored with a warning.
- egressMTLS: the client certificate (`kubernetes.io/tls`) and trusted CA (`nginx.org/ca`) towards the
  upstream, `proxy_ssl_*` and `grpc_ssl_*` alike (the location's upstream type is not known here and NGINX
  uses only the kind it proxies with). First per context wins (warning).
- cache: the zone `proxy_cache_path` at http level (one per owner and zone name), `proxy_cache...` in the
  context. First per context wins (warning).
- cors: the origin map at http level when needed (one http item, so that the owner's de-duplication of
  http items never merges two maps' lines); the `add_header` and preflight lines always go in the
  locations (NIC copies a spec-level CORS policy onto every route without one: `PolicyResult.inherited`).
  First per context wins (warning).
- externalAuth: the auth upstream at http level (the auth Service's endpoints from the context, the 502
  server when none), the internal `/_external_auth<authURI>` location, `auth_request` in the context, and
  with `authSigninURI` the `error_page 401` and the sign-in location. One per context (warning).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ingressctl.configs.policy import (
    LEVEL_SUBROUTE,
    PolicyContext,
    PolicyLocation,
    PolicyResult,
    register_policy_renderer,
)
from ingressctl.configs.policy_cache import NIC_CACHE_DIR, cache_lines, cache_path_line, cache_zone_name
from ingressctl.configs.policy_cors import cors_lines, cors_origin, cors_origin_variable
from ingressctl.configs.policy_extauth import (
    auth_service,
    auth_service_port,
    exauth_auth_lines,
    exauth_internal_location,
    exauth_signin,
    exauth_upstream_lines,
    exauth_upstream_name,
)
from ingressctl.configs.policy_mtls import egress_mtls_lines, ingress_mtls_lines

if TYPE_CHECKING:
    from ingressctl.configs.configmaps import StaticConfigParams

SECRET_TYPE_CA = "nginx.org/ca"
SECRET_TYPE_TLS = "kubernetes.io/tls"
INGRESS_OWNER = "ingress"


ERROR_SERVER_SOCKET = "nginx-502-server.sock"


def policy_context_params(static: StaticConfigParams,
                          endpoints: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """The `PolicyContext` fields these types read, from the static configuration and the auth Services'
    endpoints."""
    return {"cache_dir": static.cache_dir or os.path.join(static.run_dir, "cache"),
            "secrets_dir": static.secrets_dir or os.path.join(static.conf_dir, "secrets"),
            "enable_snippets": static.enable_snippets,
            "error_server": f"unix:{os.path.join(static.run_dir, ERROR_SERVER_SOCKET)}",
            "endpoints": dict(endpoints)}


def _key(ctx: PolicyContext) -> str:
    return f"{ctx.policy_namespace}/{ctx.policy_name}"


def _vsr(ctx: PolicyContext) -> tuple[str, str] | None:
    return (ctx.vsr_namespace, ctx.vsr_name) if ctx.level == LEVEL_SUBROUTE and ctx.vsr_name else None


def _at_level(result: PolicyResult, ctx: PolicyContext) -> PolicyResult:
    if ctx.is_server_level:
        result.server, result.location = result.location, []
    return result


def _ignored(label: str, ctx: PolicyContext) -> PolicyResult:
    return PolicyResult(warnings=[f"Multiple {label} policies in the same context is not valid. {label} "
                                  f"policy {_key(ctx)} will be ignored"])


def render_ingress_mtls(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if not ctx.is_server_level:
        msg = f"IngressMTLS policy {_key(ctx)} is not allowed in the {ctx.level} context"
        return PolicyResult(warnings=[msg], error=msg)
    if not ctx.tls:
        owner = "Ingress" if ctx.owner_kind == INGRESS_OWNER else "VirtualServer"
        msg = f"TLS must be enabled in {owner} for IngressMTLS policy {_key(ctx)}"
        return PolicyResult(warnings=[msg], error=msg)
    if ctx.index > 0:
        return _ignored("IngressMTLS", ctx)
    secret = ctx.secrets.get("clientCertSecret")
    result = PolicyResult()
    crl = secret.crl_path if secret else ""
    if spec.get("crlFileName"):
        if crl:
            result.warnings.append(f"Both ca.crl in the Secret and ingressMTLS.crlFileName fields cannot be "
                                   f"used. ca.crl in {secret.key if secret else ''} will be ignored and "
                                   f"{spec['crlFileName']} will be applied")
        crl = os.path.join(ctx.secrets_dir, str(spec["crlFileName"]))
    result.server = ingress_mtls_lines(spec, secret.path if secret else "", crl)
    return result


def render_egress_mtls(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        return _ignored("EgressMTLS", ctx)
    tls, trusted = ctx.secrets.get("tlsSecret"), ctx.secrets.get("trustedCertSecret")
    cert_path = tls.path if tls else ""
    trusted_path = trusted.path if trusted else ""
    lines = [*egress_mtls_lines(spec, cert_path, trusted_path, "proxy"),
             *egress_mtls_lines(spec, cert_path, trusted_path, "grpc")]
    return _at_level(PolicyResult(location=lines), ctx)


def render_cache(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        return _ignored("Cache", ctx)
    zone = cache_zone_name(ctx.owner_namespace, ctx.owner_name, str(spec.get("cacheZoneName")), _vsr(ctx))
    root = ctx.cache_dir or NIC_CACHE_DIR
    result = PolicyResult(http=[cache_path_line(spec, zone, root)], location=cache_lines(spec, zone))
    return _at_level(result, ctx)


def render_cors(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        return _ignored("CORS", ctx)
    owner_type = "ing" if ctx.owner_kind == INGRESS_OWNER else "vs"
    variable = cors_origin_variable(ctx.owner_namespace, ctx.owner_name, owner_type, ctx.policy_namespace,
                                    ctx.policy_name, _vsr(ctx))
    origin, map_lines = cors_origin(spec, variable)
    # The map is one http-level item: owners deduplicate http items, and two maps share lines (`}`).
    http = ["\n".join(map_lines)] if map_lines else []
    lines = cors_lines(spec, origin)
    if ctx.is_server_level:
        return PolicyResult(http=http, inherited={"cors": lines})
    return PolicyResult(http=http, location=lines)


def render_external_auth(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        return _ignored("ExternalAuth", ctx)
    kind = "ing" if ctx.owner_kind == INGRESS_OWNER else "vs"
    upstream = exauth_upstream_name(kind, ctx.owner_namespace, ctx.owner_name, ctx.policy_namespace,
                                    ctx.policy_name)
    svc_ns, svc = auth_service(spec, ctx.policy_namespace)
    servers = ctx.endpoints.get(f"{svc_ns}/{svc}:{auth_service_port(spec)}", ())
    trusted = ctx.secrets.get("trustedCertSecret")
    result = PolicyResult(http=["\n".join(exauth_upstream_lines(upstream, servers, ctx.error_server))])
    path, internal = exauth_internal_location(spec, upstream, (svc_ns, svc), trusted.path if trusted else "",
                                              enable_snippets=ctx.enable_snippets)
    result.locations.append(PolicyLocation(path, tuple(internal)))
    signin_lines, signin_path, signin_location = exauth_signin(spec, upstream)
    if signin_location:
        result.locations.append(PolicyLocation(signin_path, tuple(signin_location)))
    result.location = [*exauth_auth_lines(spec), *signin_lines]
    return _at_level(result, ctx)


register_policy_renderer("ingressMTLS", render_ingress_mtls, {"clientCertSecret": SECRET_TYPE_CA})
register_policy_renderer("egressMTLS", render_egress_mtls,
                         {"tlsSecret": SECRET_TYPE_TLS, "trustedCertSecret": SECRET_TYPE_CA})
register_policy_renderer("cache", render_cache)
register_policy_renderer("cors", render_cors)
register_policy_renderer("externalAuth", render_external_auth, {"trustedCertSecret": SECRET_TYPE_CA})
