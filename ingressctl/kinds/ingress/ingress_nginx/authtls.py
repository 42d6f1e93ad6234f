"""ingress-nginx's client certificates (`auth-tls-*`) for one Ingress, on ingressctl's ingressMTLS Policy
machinery: an `AuthTLSConfig` from the annotations, the ingressMTLS Policy the controller synthesizes from it
(`authtls_policy.with_auth_tls`), and the lines ingressMTLS does not have (`apply_auth_tls`).

Guarantees (ingress-nginx's `authtls` parser and its template):
- Nothing without `auth-tls-secret`; the other `auth-tls-*` keys are then ignored with a warning.
- `auth-tls-secret: <namespace>/<name>` (`/<name>`: the Ingress's namespace) names a Secret of the Ingress's
  namespace (ingress-nginx's default refuses other namespaces: so does ingressctl) holding `ca.crt` (and an
  optional `ca.crl`), of the type `nginx.org/ca` (ingressctl's CA Secrets; the Secret store does not keep
  the data of other types). It becomes an ingressMTLS Policy of the Ingress's servers:
  `ssl_client_certificate`, `ssl_crl`, `ssl_verify_client` (`auth-tls-verify-client`, default `on`) and
  `ssl_verify_depth` (`auth-tls-verify-depth`, default and `0`: 1). With `on` NGINX answers 400 to a
  request without a valid certificate (and, unlike ingress-nginx, to plain HTTP requests of the server).
- Fail closed, with a warning naming the reason: a missing Secret or one of another type, a Secret of
  another namespace, a host without TLS or a minion: the server (or minion's locations) answers 500.
- An ingressMTLS Policy of `nginx.org/policies` on the Ingress wins, with a warning.
- Where the Policy applies: `auth-tls-error-page` is `error_page 495 496 = <page>;`;
  `auth-tls-match-cn` is `if ($ssl_client_s_dn !~ "<CN=regex>") { return 403 "client certificate
  unauthorized"; }` (ingress-nginx's own `if`, the value as one quoted regex); every location sends the
  backend `ssl-client-verify`, `ssl-client-subject-dn`, `ssl-client-issuer-dn` and, with
  `auth-tls-pass-certificate-to-upstream`, `ssl-client-cert` (`$ssl_client_escaped_cert`: the URL-escaped
  PEM), as ingress-nginx.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ingressctl.configs.config import IngressNginxConfig
from ingressctl.configs.quoting import arg, quote_regex
from ingressctl.kinds.ingress import annotations_ingress_nginx as t
from ingressctl.kinds.ingress.annotation_table import Status

AUTH_TLS_SECRET = t.key("auth-tls-secret")
VERIFY_CLIENT = t.key("auth-tls-verify-client")
VERIFY_DEPTH = t.key("auth-tls-verify-depth")
PASS_CERTIFICATE = t.key("auth-tls-pass-certificate-to-upstream")
ERROR_PAGE = t.key("auth-tls-error-page")
MATCH_CN = t.key("auth-tls-match-cn")
OTHER_KEYS = (VERIFY_CLIENT, VERIFY_DEPTH, PASS_CERTIFICATE, ERROR_PAGE, MATCH_CN)


@dataclass(frozen=True)
class AuthTLSConfig:
    namespace: str                 # "" = the Ingress's
    name: str
    verify_client: str = "on"
    depth: int = 1
    error_page: str = ""
    pass_certificate: bool = False
    match_cn: str = ""


def combine(parsed: Mapping[str, Any], mark: Callable[[str, Status, str], None]) -> AuthTLSConfig | None:
    """The AuthTLSConfig of the parsed annotations (None: no client certificates)."""
    if AUTH_TLS_SECRET not in parsed:
        for k in OTHER_KEYS:
            if k in parsed:
                mark(k, Status.IGNORED, f"{AUTH_TLS_SECRET} is not set (ingress-nginx ignores it too)")
        return None
    ns, name = parsed[AUTH_TLS_SECRET]
    return AuthTLSConfig(namespace=ns, name=name, verify_client=parsed.get(VERIFY_CLIENT, "on"),
                         depth=parsed.get(VERIFY_DEPTH) or 1, error_page=parsed.get(ERROR_PAGE, ""),
                         pass_certificate=parsed.get(PASS_CERTIFICATE, False),
                         match_cn=parsed.get(MATCH_CN, ""))


def apply_auth_tls(cfg: IngressNginxConfig, c: AuthTLSConfig | None) -> IngressNginxConfig:
    """The lines ingressMTLS has not, in each server whose client-certificate Policy applies."""
    if c is None:
        return cfg
    server_lines = [f"error_page 495 496 = {arg(c.error_page)};"] if c.error_page else []
    if c.match_cn:
        server_lines += [f"if ($ssl_client_s_dn !~ {quote_regex(c.match_cn)}) {{",
                         '    return 403 "client certificate unauthorized";', "}"]
    headers = [("ssl-client-cert", "$ssl_client_escaped_cert")] if c.pass_certificate else []
    headers += [("ssl-client-verify", "$ssl_client_verify"), ("ssl-client-subject-dn", "$ssl_client_s_dn"),
                ("ssl-client-issuer-dn", "$ssl_client_i_dn")]
    servers = []
    for server in cfg.servers:
        if server.policy_500 or not any(line.startswith("ssl_client_certificate ")
                                        for line in server.policy_lines):
            servers.append(server)
            continue
        locations = tuple(dataclasses.replace(loc, policy_lines=(*loc.policy_lines, *(
            f"{'grpc' if loc.grpc else 'proxy'}_set_header {name} {value};" for name, value in headers)))
            for loc in server.locations)
        servers.append(dataclasses.replace(server, policy_lines=(*server.policy_lines, *server_lines),
                                           locations=locations))
    return dataclasses.replace(cfg, servers=tuple(servers))


