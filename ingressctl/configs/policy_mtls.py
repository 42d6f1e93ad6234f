"""NGINX directives of the `ingressMTLS` and `egressMTLS` Policy types (NIC's OSS rendering).

Guarantees:
- `ingress_mtls_lines(spec, ca_path, crl_path)`: the server-level `ssl_client_certificate`, optional
  `ssl_crl`, `ssl_verify_client` (default `on`) and `ssl_verify_depth` (default 1) of a validated spec.
  With `verifyClient: on` NGINX itself refuses a request without a client certificate or with one the CA did
  not sign (400); `optional`/`optional_no_ca` let it through with `$ssl_client_verify` set. Unlike NIC,
  `on` also answers 400 to requests on the server's plain-HTTP listener (they carry no certificate), so
  the policy cannot be bypassed over HTTP.
- `egress_mtls_lines(spec, cert_path, trusted_path, prefix)`: `<prefix>_ssl_certificate`/`_key` (the TLS
  Secret's PEM holds both), `_trusted_certificate`, `_verify`, `_verify_depth` (1), `_protocols`
  (`TLSv1 TLSv1.1 TLSv1.2`), `_ciphers` (`DEFAULT`), `_session_reuse` (on), `_server_name` (off) and `_name`
  (`$proxy_host`), with NIC's defaults; `prefix` is `proxy` or `grpc`.
- Every value passes a quoting filter: no input can add a directive. The caller decides where the lines go
  and reports missing Secrets (see `configs.policy_ext`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.configs import parsing
from ingressctl.configs.quoting import arg, token

DEFAULT_PROTOCOLS = "TLSv1 TLSv1.1 TLSv1.2"
DEFAULT_CIPHERS = "DEFAULT"
DEFAULT_SSL_NAME = "$proxy_host"


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def ingress_mtls_lines(spec: Mapping[str, Any], ca_path: str, crl_path: str = "") -> list[str]:
    """See the module docstring."""
    lines = [f"ssl_client_certificate {arg(ca_path)};"]
    if crl_path:
        lines.append(f"ssl_crl {arg(crl_path)};")
    verify = str(spec.get("verifyClient") or "on")
    lines.append(f"ssl_verify_client {token(verify)};")
    lines.append(f"ssl_verify_depth {_int(spec.get('verifyDepth'), 1)};")
    if verify == "on":   # the server's plain-HTTP listener must not serve what HTTPS protects
        lines.append("if ($ssl_client_verify != SUCCESS) { return 400; }")
    return lines


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
