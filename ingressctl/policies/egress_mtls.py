"""The `egressMTLS` Policy type (NIC's `validateEgressMTLS` and OSS rendering): TLS to the upstream with a
client certificate and a trusted CA.

Validation:
- egressMTLS: `tlsSecret` and `trustedCertSecret` DNS-1123 subdomains, `trustedCertSecret` required when
  `verifyServer` is true; `verifyDepth` >= 0; `sslName` a DNS-1123 subdomain (NIC's rules). Unlike NIC, which
  leaves `protocols` and `ciphers` to fail at reload, both are checked here (the protocol names NGINX knows;
  an OpenSSL cipher list that selects at least one cipher), so a bad value is a clear Policy error.
Rendering:
- `egress_mtls_lines(spec, cert_path, trusted_path, prefix)`: `<prefix>_ssl_certificate`/`_key` (the TLS
  Secret's PEM holds both), `_trusted_certificate`, `_verify`, `_verify_depth` (1), `_protocols`
  (`TLSv1 TLSv1.1 TLSv1.2`), `_ciphers` (`DEFAULT`), `_session_reuse` (on), `_server_name` (off) and `_name`
  (`$proxy_host`), with NIC's defaults; `prefix` is `proxy` or `grpc`.
- egressMTLS: the client certificate (`kubernetes.io/tls`) and trusted CA (`nginx.org/ca`) towards the
  upstream, `proxy_ssl_*` and `grpc_ssl_*` alike (the location's upstream type is not known here and NGINX
  uses only the kind it proxies with). First per context wins (warning).
- Every value passes a quoting filter: no input can add a directive.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.configs import parsing
from ingressctl.configs.quoting import arg, token
from ingressctl.policies.base import PolicyContext, PolicyResult, PolicyType, at_level, ignored
from ingressctl.policies.ca_secret import CA_SECRET
from ingressctl.policies.fields import boolean, optional_secret_name, optional_subdomain, positive_int_or_zero
from ingressctl.secret_types import SECRET_TYPE_CA, SECRET_TYPE_TLS
from ingressctl.validation import FieldError, invalid, required


def validate_egress_mtls(field: str, spec: Mapping[str, Any]) -> list[FieldError]:
    """See the module docstring."""
    errs = optional_secret_name(f"{field}.tlsSecret", spec.get("tlsSecret"))
    errs += boolean(f"{field}.verifyServer", spec.get("verifyServer"))
    if spec.get("verifyServer") is True and not spec.get("trustedCertSecret"):
        return [*errs, required(f"{field}.trustedCertSecret", "must be set when verifyServer is 'true'")]
    errs += optional_secret_name(f"{field}.trustedCertSecret", spec.get("trustedCertSecret"))
    errs += positive_int_or_zero(f"{field}.verifyDepth", spec.get("verifyDepth"))
    for name in ("sessionReuse", "serverName"):
        errs += boolean(f"{field}.{name}", spec.get(name))
    errs += optional_subdomain(f"{field}.sslName", spec.get("sslName"))
    for name, parse in (("protocols", parsing.parse_ssl_protocols), ("ciphers", parsing.parse_ssl_ciphers)):
        value = spec.get(name)
        if value in (None, ""):
            continue
        try:
            parse(value if isinstance(value, str) else "")
        except ValueError as e:
            errs.append(invalid(f"{field}.{name}", value, str(e)))
    return errs


DEFAULT_PROTOCOLS = "TLSv1 TLSv1.1 TLSv1.2"
DEFAULT_CIPHERS = "DEFAULT"
DEFAULT_SSL_NAME = "$proxy_host"


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def egress_mtls_lines(spec: Mapping[str, Any], cert_path: str, trusted_path: str,
                      prefix: str = "proxy") -> list[str]:
    """See the module docstring."""
    p = token(prefix)
    lines: list[str] = []
    if cert_path:
        lines += [f"{p}_ssl_certificate {arg(cert_path)};", f"{p}_ssl_certificate_key {arg(cert_path)};"]
    if trusted_path:
        lines.append(f"{p}_ssl_trusted_certificate {arg(trusted_path)};")
    protocols = parsing.parse_ssl_protocols(str(spec.get("protocols") or DEFAULT_PROTOCOLS))
    ciphers = parsing.parse_ssl_ciphers(str(spec.get("ciphers") or DEFAULT_CIPHERS))
    ssl_name = str(spec.get("sslName") or "")
    lines += [
        f"{p}_ssl_verify {'on' if spec.get('verifyServer') is True else 'off'};",
        f"{p}_ssl_verify_depth {_int(spec.get('verifyDepth'), 1)};",
        f"{p}_ssl_protocols {' '.join(token(w) for w in protocols.split())};",
        f"{p}_ssl_ciphers {token(ciphers)};",
        f"{p}_ssl_session_reuse {'off' if spec.get('sessionReuse') is False else 'on'};",
        f"{p}_ssl_server_name {'on' if spec.get('serverName') is True else 'off'};",
        f"{p}_ssl_name {arg(ssl_name) if ssl_name else DEFAULT_SSL_NAME};",
    ]
    return lines


def render_egress_mtls(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if ctx.index > 0:
        return ignored("EgressMTLS", ctx)
    tls, trusted = ctx.secrets.get("tlsSecret"), ctx.secrets.get("trustedCertSecret")
    cert_path = tls.path if tls else ""
    trusted_path = trusted.path if trusted else ""
    lines = [*egress_mtls_lines(spec, cert_path, trusted_path, "proxy"),
             *egress_mtls_lines(spec, cert_path, trusted_path, "grpc")]
    return at_level(PolicyResult(location=lines), ctx)


TYPE = PolicyType(
    key="egressMTLS",
    label="EgressMTLS",
    validate=lambda f, s, c: validate_egress_mtls(f, s),
    render=render_egress_mtls,
    secret_fields={"tlsSecret": SECRET_TYPE_TLS, "trustedCertSecret": SECRET_TYPE_CA},
    secret_types=(CA_SECRET,),
    fields_doc=("`tlsSecret` (type `kubernetes.io/tls`), `trustedCertSecret` (type `nginx.org/ca`, "
               "required with `verifyServer`), `verifyServer` (`false`), `verifyDepth` (`1`), "
               "`sessionReuse` (`true`), `serverName` (`false`), `sslName` (`$proxy_host`), `protocols` "
               "(`TLSv1 TLSv1.1 TLSv1.2`), `ciphers` (`DEFAULT`)"),
    nginx_doc="`proxy_ssl_*` and `grpc_ssl_*` in the server or location (see below)",
)
