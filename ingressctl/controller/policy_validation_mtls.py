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
from ingressctl.controller.policy_validation_fields import (
    boolean,
    optional_secret_name,
    optional_subdomain,
    positive_int_or_zero,
)
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
