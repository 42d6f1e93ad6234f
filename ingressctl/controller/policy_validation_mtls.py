"""Validation of the `ingressMTLS` and `egressMTLS` Policy types (NIC's `validateIngressMTLS`,
`validateEgressMTLS`), with NIC's field-error messages.

Guarantees:
- Each validator takes the field path of the type (`spec.ingressMTLS`) and the type's spec, and returns every
  error at once as apimachinery field errors; it never reads the cluster (a missing Secret is a render-time
  problem of the resources that use the Policy, not a validation error).
- ingressMTLS: `clientCertSecret` required, a DNS-1123 subdomain; `verifyClient` one of `on`, `off`,
  `optional`, `optional_no_ca`; `verifyDepth` >= 0; `crlFileName` a plain file name (no directory part).
- egressMTLS: `tlsSecret` and `trustedCertSecret` DNS-1123 subdomains, `trustedCertSecret` required when
  `verifyServer` is true; `verifyDepth` >= 0; `sslName` a DNS-1123 subdomain (NIC's rules). Unlike NIC, which
  leaves `protocols` and `ciphers` to fail at reload, both are checked here (the protocol names NGINX knows;
  an OpenSSL cipher list that selects at least one cipher), so a bad value is a clear Policy error.
- Together with the quoting of the renderer no field can add an NGINX directive.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingressctl.configs import parsing
from ingressctl.controller.validation import (
    FieldError,
    invalid,
    is_dns1123_subdomain,
    not_supported,
    required,
)

VERIFY_CLIENT_VALUES = ("on", "off", "optional", "optional_no_ca")
_CRL_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}")


def validate_secret_name(field: str, name: Any) -> list[FieldError]:
    """NIC's `validateSecretName`: empty is fine (the caller says when it is required), else a DNS-1123
    subdomain."""
    if name in (None, ""):
        return []
    if not isinstance(name, str):
        return [invalid(field, name, "must be a string")]
    return [invalid(field, name, m) for m in is_dns1123_subdomain(name)]


def validate_positive_int_or_zero(field: str, value: Any) -> list[FieldError]:
    """NIC's `validatePositiveIntOrZero` (absent is fine)."""
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return [invalid(field, value, "must be positive or zero")]
    return []


def validate_bool(field: str, value: Any) -> list[FieldError]:
    if value is None or isinstance(value, bool):
        return []
    return [invalid(field, value, "must be a boolean")]


def validate_ingress_mtls(field: str, spec: Mapping[str, Any]) -> list[FieldError]:
    """See the module docstring."""
    secret = spec.get("clientCertSecret")
    if not secret:
        return [required(f"{field}.clientCertSecret")]
    errs = validate_secret_name(f"{field}.clientCertSecret", secret)
    verify = spec.get("verifyClient")
    if verify not in (None, "") and verify not in VERIFY_CLIENT_VALUES:
        errs.append(not_supported(f"{field}.verifyClient", verify, VERIFY_CLIENT_VALUES))
    errs += validate_positive_int_or_zero(f"{field}.verifyDepth", spec.get("verifyDepth"))
    crl = spec.get("crlFileName")
    if crl not in (None, "") and (not isinstance(crl, str) or not _CRL_FILE_NAME.fullmatch(crl)
                                  or crl in (".", "..")):
        errs.append(invalid(f"{field}.crlFileName", crl,
                            "must be a file name (letters, digits, '_', '.' and '-'; no directory)"))
    return errs


def validate_egress_mtls(field: str, spec: Mapping[str, Any]) -> list[FieldError]:
    """See the module docstring."""
    errs = validate_secret_name(f"{field}.tlsSecret", spec.get("tlsSecret"))
    errs += validate_bool(f"{field}.verifyServer", spec.get("verifyServer"))
    if spec.get("verifyServer") is True and not spec.get("trustedCertSecret"):
        return [*errs, required(f"{field}.trustedCertSecret", "must be set when verifyServer is 'true'")]
    errs += validate_secret_name(f"{field}.trustedCertSecret", spec.get("trustedCertSecret"))
    errs += validate_positive_int_or_zero(f"{field}.verifyDepth", spec.get("verifyDepth"))
    for name in ("sessionReuse", "serverName"):
        errs += validate_bool(f"{field}.{name}", spec.get(name))
    ssl_name = spec.get("sslName")
    if ssl_name not in (None, ""):
        if not isinstance(ssl_name, str):
            errs.append(invalid(f"{field}.sslName", ssl_name, "must be a string"))
        else:
            errs += [invalid(f"{field}.sslName", ssl_name, m) for m in is_dns1123_subdomain(ssl_name)]
    for name, parse in (("protocols", parsing.parse_ssl_protocols), ("ciphers", parsing.parse_ssl_ciphers)):
        value = spec.get(name)
        if value in (None, ""):
            continue
        try:
            parse(value if isinstance(value, str) else "")
        except ValueError as e:
            errs.append(invalid(f"{field}.{name}", value, str(e)))
    return errs
