"""ingress-nginx's TLS towards the backend (`proxy-ssl-*`) for one Ingress, on ingressctl's egressMTLS Policy
machinery: a `ProxySSLConfig` from the annotations (`combine`, in the translation) and the egressMTLS spec it
becomes (`egress_spec`; the controller's part, resolving the Secret, is `proxyssl_policy`).

Guarantees (ingress-nginx's `proxyssl` parser and its template):
- Nothing without `proxy-ssl-secret`; the other `proxy-ssl-*` keys are then ignored with a warning (as
  ingress-nginx, whose parser stops at the missing Secret).
- The defaults are ingress-nginx's: `proxy-ssl-verify` `off`, `proxy-ssl-verify-depth` 1 (also for `0`),
  `proxy-ssl-server-name` `off`, `proxy-ssl-protocols` `TLSv1.2`, `proxy-ssl-ciphers` `DEFAULT`, no
  `proxy-ssl-name` (NGINX's `$proxy_host`); `proxy_ssl_session_reuse on` (ingress-nginx's http level).
- The spec names the Secret for the client certificate (`tlsSecret`) and, when the Secret has `ca.crt`, for
  the trusted CA (`trustedCertSecret`); NGINX uses these lines only when it proxies over TLS
  (`backend-protocol: HTTPS`, and `GRPCS` through the `grpc_ssl_*` twins egressMTLS writes too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ingressctl.kinds.ingress import annotations_ingress_nginx as t
from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.ingress_nginx import proxyssl_values as psv

PROXY_SSL_SECRET = t.key("proxy-ssl-secret")
VERIFY = t.key("proxy-ssl-verify")
VERIFY_DEPTH = t.key("proxy-ssl-verify-depth")
SSL_NAME = t.key("proxy-ssl-name")
SERVER_NAME = t.key("proxy-ssl-server-name")
PROTOCOLS = t.key("proxy-ssl-protocols")
CIPHERS = t.key("proxy-ssl-ciphers")
OTHER_KEYS = (VERIFY, VERIFY_DEPTH, SSL_NAME, SERVER_NAME, PROTOCOLS, CIPHERS)


@dataclass(frozen=True)
class ProxySSLConfig:
    namespace: str
    name: str
    verify: str = "off"
    depth: int = psv.DEFAULT_VERIFY_DEPTH
    ssl_name: str = ""
    server_name: str = "off"
    protocols: str = psv.DEFAULT_PROTOCOLS
    ciphers: str = psv.DEFAULT_CIPHERS


def combine(parsed: Mapping[str, Any], mark: Callable[[str, Status, str], None]) -> ProxySSLConfig | None:
    """The ProxySSLConfig of the parsed annotations (None: no `proxy-ssl-secret`)."""
    if PROXY_SSL_SECRET not in parsed:
        for k in OTHER_KEYS:
            if k in parsed:
                mark(k, Status.IGNORED, f"{PROXY_SSL_SECRET} is not set (ingress-nginx ignores it too)")
        return None
    ns, name = parsed[PROXY_SSL_SECRET]
    return ProxySSLConfig(namespace=ns, name=name, verify=parsed.get(VERIFY, "off"),
                          depth=parsed.get(VERIFY_DEPTH) or psv.DEFAULT_VERIFY_DEPTH,
                          ssl_name=parsed.get(SSL_NAME, ""), server_name=parsed.get(SERVER_NAME, "off"),
                          protocols=parsed.get(PROTOCOLS, psv.DEFAULT_PROTOCOLS),
                          ciphers=parsed.get(CIPHERS, psv.DEFAULT_CIPHERS))


def egress_spec(c: ProxySSLConfig, *, trusted: bool) -> dict[str, Any]:
    """The egressMTLS spec of the annotations; `trusted`: the Secret's `ca.crt` is the trusted CA."""
    spec: dict[str, Any] = {"tlsSecret": c.name, "verifyServer": c.verify == "on", "verifyDepth": c.depth,
                            "serverName": c.server_name == "on", "protocols": c.protocols,
                            "ciphers": c.ciphers, "sessionReuse": True}
    if trusted:
        spec["trustedCertSecret"] = c.name
    if c.ssl_name:
        spec["sslName"] = c.ssl_name
    return spec
