"""The `externalAuth` Policy type: authentication by a subrequest to an auth Service (`auth_request`).

Validation (NIC 5.5's `validateExternalAuth`):
- `validate_external_auth(field, spec, enable_snippets=...)` returns every error at once; it never reads the
  cluster (a missing auth Service answers 502/500 at request time, it is not a validation error).
- `authURI` is required and is a path (`/...`, no whitespace, `{`, `}`, `;`, `\\`, quotes, no leading `//`, no
  `..` segment); so is `authSigninRedirectBasePath`. `authServiceName` is required: `svc` or `ns/svc` (a
  DNS-1035 label, with a DNS-1123 label namespace). `authServicePorts` are ports 1-65535. `authSigninURI` is a
  path or an http(s) URL, in which only `$scheme`, `$host`, `$http_host`, `$request_uri` and `$uri` may be
  used. `authSnippets` needs `--enable-snippets`. `sslVerify` needs `sslEnabled`; `trustedCertSecret`
  (`[ns/]name`) needs `sslVerify`; `sslVerifyDepth` >= 0; `sniName` is a DNS-1123 subdomain.
- No string can carry a control character, so no value can add an NGINX directive.
Rendering (NIC 5.5.2+'s OSS rendering, `auth_request`):
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
- externalAuth: the auth upstream at http level (the auth Service's endpoints from the context, the 502
  server when none), the internal `/_external_auth<authURI>` location, `auth_request` in the context, and
  with `authSigninURI` the `error_page 401` and the sign-in location. One per context (warning).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ingressctl.configs.config import PolicyLocation
from ingressctl.configs.quoting import arg, quote_regex, quote_vars, token
from ingressctl.policies.base import INGRESS_OWNER, PolicyContext, PolicyResult, PolicyType, at_level, ignored
from ingressctl.policies.ca_secret import CA_SECRET
from ingressctl.policies.fields import (
    DNS1123_LABEL,
    boolean,
    namespaced_name,
    optional_subdomain,
    positive_int_or_zero,
)
from ingressctl.secret_types import SECRET_TYPE_CA
from ingressctl.validation import FieldError, forbidden, invalid, is_dns1035_label, required

_PATH = re.compile(r"/[^\s{};\\\"'`#$\x00-\x1f\x7f]{0,2047}")
_SIGNIN = re.compile(r"(?:https?://[A-Za-z0-9.\-\[\]:]+|)(?:/[^\s{};\\\"'`#\x00-\x1f\x7f]{0,2047})?")
SIGNIN_VARIABLES = ("scheme", "host", "http_host", "request_uri", "uri")
_SIGNIN_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def validate_path(field: str, path: Any) -> list[FieldError]:
    """A location path of the policy: `/...` without characters that NGINX or a URI would misread."""
    if not isinstance(path, str) or not _PATH.fullmatch(path):
        return [invalid(field, path, "must start with / and must not include any whitespace character, "
                                     "'{', '}', ';', '#', '$', quotes or backslashes")]
    if path.startswith("//"):
        return [invalid(field, path, "must not start with '//' (a protocol-relative URL)")]
    if ".." in path.split("/"):
        return [invalid(field, path, "must not contain '..' path segments")]
    return []


def split_service_name(value: str) -> tuple[str, str]:
    """`ns/svc` -> ("ns", "svc"); `svc` -> ("", "svc")."""
    if "/" in value:
        ns, _, name = value.partition("/")
        return ns, name
    return "", value


def validate_service_name(field: str, value: Any) -> list[FieldError]:
    """NIC's `validateVirtualServerServiceName`: a DNS-1035 label, or `ns/name` with a DNS-1123 label
    namespace."""
    if not value:
        return [required(field)]
    if not isinstance(value, str):
        return [invalid(field, value, "must be a string")]
    ns, name = split_service_name(value)
    errs = [invalid(field, value, m) for m in is_dns1035_label(name)]
    if "/" in value and not DNS1123_LABEL.fullmatch(ns):
        errs.append(invalid(field, value, "the namespace must be a DNS-1123 label"))
    return errs


def _validate_signin(field: str, value: Any) -> list[FieldError]:
    if value in (None, ""):
        return []
    if not isinstance(value, str) or not _SIGNIN.fullmatch(_SIGNIN_VAR.sub("x", value)) \
            or not value.startswith(("/", "http://", "https://")):
        return [invalid(field, value, "must be a path or an http(s) URL without whitespace, quotes, "
                                      "backslashes, '{', '}', ';' or '#'")]
    rest = _SIGNIN_VAR.sub("", value)
    if "$" in rest:
        return [invalid(field, value, "a '$' must start a variable")]
    errs = []
    for braced, bare in _SIGNIN_VAR.findall(value):
        name = braced or bare
        if name not in SIGNIN_VARIABLES:
            errs.append(invalid(field, value, f"'{name}' is not a supported variable (supported: "
                                              f"{', '.join(SIGNIN_VARIABLES)})"))
    return errs


def validate_external_auth(field: str, spec: Mapping[str, Any], *, enable_snippets: bool) -> list[FieldError]:
    """See the module docstring."""
    errs: list[FieldError] = []
    uri = spec.get("authURI")
    if not uri:
        errs.append(required(f"{field}.authURI"))
    else:
        errs += validate_path(f"{field}.authURI", uri)
    errs += validate_service_name(f"{field}.authServiceName", spec.get("authServiceName"))
    ports = spec.get("authServicePorts")
    if ports is not None:
        if not isinstance(ports, list):
            errs.append(invalid(f"{field}.authServicePorts", ports, "must be a list of ports"))
        else:
            for i, p in enumerate(ports):
                if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 65535:
                    errs.append(invalid(f"{field}.authServicePorts[{i}]", p,
                                        "must be between 1 and 65535, inclusive"))
    errs += _validate_signin(f"{field}.authSigninURI", spec.get("authSigninURI"))
    base = spec.get("authSigninRedirectBasePath")
    if base not in (None, ""):
        errs += validate_path(f"{field}.authSigninRedirectBasePath", base)
    snippets = spec.get("authSnippets")
    if snippets not in (None, ""):
        if not enable_snippets:
            errs.append(forbidden(f"{field}.authSnippets", "snippets are not enabled (--enable-snippets)"))
        elif not isinstance(snippets, str):
            errs.append(invalid(f"{field}.authSnippets", snippets, "must be a string"))
    for name in ("sslEnabled", "sslVerify"):
        errs += boolean(f"{field}.{name}", spec.get(name))
    if spec.get("sslVerify") is True and spec.get("sslEnabled") is not True:
        errs.append(forbidden(f"{field}.sslVerify", "sslVerify requires sslEnabled to be true"))
    errs += positive_int_or_zero(f"{field}.sslVerifyDepth", spec.get("sslVerifyDepth"))
    trusted = spec.get("trustedCertSecret")
    if trusted not in (None, "") and spec.get("sslVerify") is not True:
        errs.append(forbidden(f"{field}.trustedCertSecret",
                              "trustedCertSecret requires sslVerify to be true"))
    errs += namespaced_name(f"{field}.trustedCertSecret", trusted)
    errs += optional_subdomain(f"{field}.sniName", spec.get("sniName"))
    return errs


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


def render_external_auth(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        return ignored("ExternalAuth", ctx)
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
    return at_level(result, ctx)


TYPE = PolicyType(
    key="externalAuth",
    label="ExternalAuth",
    validate=lambda f, s, c: validate_external_auth(f, s, enable_snippets=c.enable_snippets),
    render=render_external_auth,
    secret_fields={"trustedCertSecret": SECRET_TYPE_CA},
    secret_types=(CA_SECRET,),
    fields_doc=("`authURI`, `authServiceName` (`svc` or `ns/svc`), `authServicePorts`, `authSigninURI`, "
               "`authSigninRedirectBasePath` (`/oauth2`), `authSnippets`, `sslEnabled`, `sslVerify`, "
               "`sslVerifyDepth` (`1`), `trustedCertSecret` (`[ns/]name`, type `nginx.org/ca`), "
               "`sniName` (`<svc>.<ns>.svc`)"),
    nginx_doc="`auth_request` to an internal location that proxies to the auth Service (see below)",
)
