"""The `ingressMTLS` Policy type (NIC's `validateIngressMTLS` and OSS rendering): client certificates
verified against an `nginx.org/ca` Secret.

Validation:
- Each validator takes the field path of the type (`spec.ingressMTLS`) and the type's spec, and returns every
  error at once as apimachinery field errors; it never reads the cluster (a missing Secret is a render-time
  problem of the resources that use the Policy, not a validation error).
- ingressMTLS: `clientCertSecret` required, a DNS-1123 subdomain; `verifyClient` one of `on`, `off`,
  `optional`, `optional_no_ca`; `verifyDepth` >= 0; `crlFileName` a plain file name (no directory part).
Rendering:
- `ingress_mtls_lines(spec, ca_path, crl_path)`: the server-level `ssl_client_certificate`, optional
  `ssl_crl`, `ssl_verify_client` (default `on`) and `ssl_verify_depth` (default 1) of a validated spec.
  With `verifyClient: on` NGINX itself refuses a request without a client certificate or with one the CA did
  not sign (400); `optional`/`optional_no_ca` let it through with `$ssl_client_verify` set. Unlike NIC,
  `on` also answers 400 to requests on the server's plain-HTTP listener (they carry no certificate), so
  the policy cannot be bypassed over HTTP.
- ingressMTLS: only in a server context (VirtualServer spec, Ingress server) of a server that terminates TLS,
  otherwise the context fails closed (500) with NIC's message; the CA Secret (`nginx.org/ca`) gives
  `ssl_client_certificate`, its `ca.crl` (or `crlFileName`, a file in the Secrets directory, which wins
  with a warning when both are given) `ssl_crl`. One per context: later ones are ignored with a warning.
- Every value passes a quoting filter: no input can add a directive.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from ingressctl.configs.quoting import arg, token
from ingressctl.policies.base import (
    INGRESS_OWNER,
    PolicyContext,
    PolicyResult,
    PolicyType,
    ignored,
    policy_key,
)
from ingressctl.policies.ca_secret import CA_SECRET
from ingressctl.policies.fields import optional_secret_name, positive_int_or_zero
from ingressctl.secret_types import SECRET_TYPE_CA
from ingressctl.validation import FieldError, invalid, not_supported, required

VERIFY_CLIENT_VALUES = ("on", "off", "optional", "optional_no_ca")
_CRL_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}")


def validate_ingress_mtls(field: str, spec: Mapping[str, Any]) -> list[FieldError]:
    """See the module docstring."""
    secret = spec.get("clientCertSecret")
    if not secret:
        return [required(f"{field}.clientCertSecret")]
    errs = optional_secret_name(f"{field}.clientCertSecret", secret)
    verify = spec.get("verifyClient")
    if verify not in (None, "") and verify not in VERIFY_CLIENT_VALUES:
        errs.append(not_supported(f"{field}.verifyClient", verify, VERIFY_CLIENT_VALUES))
    errs += positive_int_or_zero(f"{field}.verifyDepth", spec.get("verifyDepth"))
    crl = spec.get("crlFileName")
    if crl not in (None, "") and (not isinstance(crl, str) or not _CRL_FILE_NAME.fullmatch(crl)
                                  or crl in (".", "..")):
        errs.append(invalid(f"{field}.crlFileName", crl,
                            "must be a file name (letters, digits, '_', '.' and '-'; no directory)"))
    return errs


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


def render_ingress_mtls(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
    if not ctx.is_server_level:
        msg = f"IngressMTLS policy {policy_key(ctx)} is not allowed in the {ctx.level} context"
        return PolicyResult(warnings=[msg], error=msg)
    if not ctx.tls:
        owner = "Ingress" if ctx.owner_kind == INGRESS_OWNER else "VirtualServer"
        msg = f"TLS must be enabled in {owner} for IngressMTLS policy {policy_key(ctx)}"
        return PolicyResult(warnings=[msg], error=msg)
    if ctx.index > 0:
        return ignored("IngressMTLS", ctx)
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


TYPE = PolicyType(
    key="ingressMTLS",
    label="IngressMTLS",
    validate=lambda f, s, c: validate_ingress_mtls(f, s),
    render=render_ingress_mtls,
    secret_fields={"clientCertSecret": SECRET_TYPE_CA},
    secret_types=(CA_SECRET,),
    fields_doc=("`clientCertSecret` (type `nginx.org/ca`), `verifyClient` "
               "`on`/`off`/`optional`/`optional_no_ca` (`on`), `verifyDepth` (`1`), `crlFileName`"),
    nginx_doc=("`ssl_client_certificate`, `ssl_crl`, `ssl_verify_client`, `ssl_verify_depth` in the "
              "server (see below)"),
)
