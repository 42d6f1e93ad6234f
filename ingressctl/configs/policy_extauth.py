"""NGINX directives of the `externalAuth` Policy type (NIC 5.5.2+'s OSS rendering, `auth_request`).

Guarantees:
- `exauth_upstream_name(...)`: NIC's names, `vs_<ns>_<vs>_vs_exauth_<polNs>_<pol>` for a VirtualServer (and
  its VirtualServerRoutes) and `ing_<ns>_<ing>_exauth_<polNs>_<pol>` for an Ingress (5.5.2's per-Ingress
  name: two Ingresses never share, or collide on, an auth upstream).
- `exauth_upstream_lines(name, servers, error_server)`: the http-level `upstream` block of the auth Service's
  ready endpoints; without any, the built-in 502 server (the protected requests then fail with 500, never
  pass unauthenticated).
- `exauth_internal_location(spec, upstream, ...)`: the location argument and the lines of
  `location = /_external_auth<authURI>` (internal) that
  proxies a body-less copy of the request headers to `<scheme>://<upstream><authURI>` with `Host`,
  `X-Original-URI`, `X-Original-Method` and `X-Scheme`, `client_max_body_size 0`, TLS to the auth Service
  (`sslEnabled`: SNI `sniName` or `<svc>.<ns>.svc`; `sslVerify`: depth and the trusted CA, or the system
  bundle) and the `authSnippets` (present only when snippets are enabled, as validation requires).
- `exauth_auth_lines(spec)`: the `auth_request /_external_auth<authURI>;` of the protected server or
  location. `exauth_signin(...)`: with `authSigninURI`, the server's `error_page 401 "<signin>";` (no `=`,
  as NIC 5.5.4) and the `authSigninRedirectBasePath` location (default `/oauth2`, `auth_request off`,
  `X-Auth-Request-Redirect $request_uri`) proxying to the auth upstream.
- Every value passes a quoting filter: no input can add a directive (snippets are raw by design).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ingressctl.configs.quoting import arg, quote_regex, quote_vars, token

INTERNAL_PREFIX = "/_external_auth"
DEFAULT_SIGNIN_BASE = "/oauth2"
SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def exauth_upstream_name(owner_kind: str, owner_ns: str, owner: str, policy_ns: str, policy: str) -> str:
    """See the module docstring (`owner_kind` is "vs" or "ing")."""
    if owner_kind == "ing":
        return f"ing_{owner_ns}_{owner}_exauth_{policy_ns}_{policy}"
    return f"vs_{owner_ns}_{owner}_vs_exauth_{policy_ns}_{policy}"


def auth_service(spec: Mapping[str, Any], policy_ns: str) -> tuple[str, str]:
    """(namespace, name) of the auth Service: `ns/svc`, or `svc` in the Policy's namespace."""
    value = str(spec.get("authServiceName") or "")
    if "/" in value:
        ns, _, name = value.partition("/")
        return ns, name
    return policy_ns, value


def auth_service_port(spec: Mapping[str, Any]) -> int:
    """The first `authServicePorts` entry; otherwise 443 with `sslEnabled`, else 80."""
    ports = spec.get("authServicePorts")
    if isinstance(ports, list) and ports and isinstance(ports[0], int):
        return int(ports[0])
    return 443 if spec.get("sslEnabled") is True else 80


def internal_path(spec: Mapping[str, Any]) -> str:
    return INTERNAL_PREFIX + str(spec.get("authURI") or "/")


def exauth_upstream_lines(name: str, servers: Sequence[str], error_server: str) -> list[str]:
    """See the module docstring."""
    lines = [f"upstream {token(name)} {{"]
    lines += [f"    server {arg(s)};" for s in sorted(servers)] or [f"    server {arg(error_server)};"]
    lines.append("}")
    return lines


def exauth_internal_location(spec: Mapping[str, Any], upstream: str, service: tuple[str, str],
                             trusted_path: str = "", *, enable_snippets: bool = False
                             ) -> tuple[str, list[str]]:
    """See the module docstring."""
    ssl = spec.get("sslEnabled") is True
    uri = str(spec.get("authURI") or "/")
    lines = ["internal;",
             "proxy_pass_request_body off;",
             'proxy_set_header Content-Length "";',
             "proxy_set_header Host $host;",
             "proxy_set_header X-Original-URI $request_uri;",
             "proxy_set_header X-Original-Method $request_method;",
             "proxy_set_header X-Scheme $scheme;",
             "client_max_body_size 0;"]
    if ssl:
        sni = str(spec.get("sniName") or f"{service[1]}.{service[0]}.svc")
        lines += ["proxy_ssl_server_name on;", f"proxy_ssl_name {arg(sni)};"]
        if spec.get("sslVerify") is True:
            depth = spec.get("sslVerifyDepth")
            depth = depth if isinstance(depth, int) and not isinstance(depth, bool) else 1
            lines += ["proxy_ssl_verify on;", f"proxy_ssl_verify_depth {depth};",
                      f"proxy_ssl_trusted_certificate {arg(trusted_path or SYSTEM_CA_BUNDLE)};"]
    if enable_snippets and spec.get("authSnippets"):
        lines += [ln.strip() for ln in str(spec["authSnippets"]).splitlines() if ln.strip()]
    lines.append(f"proxy_pass {quote_vars(('https' if ssl else 'http') + '://' + token(upstream) + uri)};")
    return f"= {quote_regex(internal_path(spec))}", lines


def exauth_auth_lines(spec: Mapping[str, Any]) -> list[str]:
    """See the module docstring."""
    return [f"auth_request {quote_regex(internal_path(spec))};"]


def exauth_signin(spec: Mapping[str, Any], upstream: str) -> tuple[list[str], str, list[str]]:
    """(the context's lines, the sign-in location's path and lines), all empty without `authSigninURI`."""
    signin = str(spec.get("authSigninURI") or "")
    if not signin:
        return [], "", []
    base = str(spec.get("authSigninRedirectBasePath") or DEFAULT_SIGNIN_BASE)
    scheme = "https" if spec.get("sslEnabled") is True else "http"
    location = ["auth_request off;",
                "proxy_set_header Host $host;",
                "proxy_set_header X-Auth-Request-Redirect $request_uri;",
                f"proxy_pass {quote_vars(scheme + '://' + token(upstream))};"]
    return [f"error_page 401 {quote_vars(signin)};"], quote_regex(base), location
