"""`nginx.org/ca` Secrets, the trusted CAs of ingressMTLS, egressMTLS and externalAuth: `CA_SECRET`, a Secret
type of the Secret store.

Guarantees:
- A CA Secret needs `ca.crt` holding at least one PEM certificate, and every certificate in it must parse
  (NIC: "invalid data in ca.crt"); an optional `ca.crl` must hold PEM certificate revocation lists that
  parse. Otherwise the Secret is invalid with a message for users, and its users fail closed.
- Its file for NGINX (mode 0644, no private data) is `ca.crt`, followed by `ca.crl` when there is one. One
  file serves both `ssl_client_certificate` / `*_ssl_trusted_certificate` (NGINX reads the certificates of
  it) and `ssl_crl` (NGINX reads the lists of it), so a CRL change rewrites one file and re-renders the users
  like any Secret change.
- `ca_has_crl(secret)` says whether a valid CA Secret carries a CRL (then its users add `ssl_crl`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cryptography import x509

from ingressctl.secret_types import SECRET_TYPE_CA, SecretType, SecretValidationError, decoded_data

CA_CERT_KEY = "ca.crt"
CA_CRL_KEY = "ca.crl"
_PEM_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)
_PEM_CRL = re.compile(rb"-----BEGIN X509 CRL-----.+?-----END X509 CRL-----", re.S)


def _ca_data(secret: Mapping[str, Any]) -> tuple[bytes, bytes]:
    data = decoded_data(secret)
    ca = data.get(CA_CERT_KEY)
    if not ca:
        raise SecretValidationError(f"CA secret must have the data field {CA_CERT_KEY}")
    certs = _PEM_CERT.findall(ca)
    if not certs:
        raise SecretValidationError(f"invalid data in {CA_CERT_KEY}: no PEM certificate found")
    for pem in certs:
        try:
            x509.load_pem_x509_certificate(pem)
        except ValueError as e:
            raise SecretValidationError(f"invalid data in {CA_CERT_KEY}: {e}") from None
    crl = data.get(CA_CRL_KEY, b"")
    if crl:
        crls = _PEM_CRL.findall(crl)
        if not crls:
            raise SecretValidationError(f"invalid data in {CA_CRL_KEY}: no PEM certificate revocation list "
                                        "found")
        for pem in crls:
            try:
                x509.load_pem_x509_crl(pem)
            except ValueError as e:
                raise SecretValidationError(f"invalid data in {CA_CRL_KEY}: {e}") from None
    return ca, crl


def validate_ca_secret(secret: Mapping[str, Any]) -> None:
    if secret.get("type") != SECRET_TYPE_CA:
        raise SecretValidationError(f"CA secret must be of the type {SECRET_TYPE_CA}")
    _ca_data(secret)


def ca_file(secret: Mapping[str, Any]) -> tuple[bytes, int]:
    ca, crl = _ca_data(secret)
    content = ca.rstrip(b"\n") + b"\n"
    if crl:
        content += crl.rstrip(b"\n") + b"\n"
    return content, 0o644


def ca_has_crl(secret: Mapping[str, Any]) -> bool:
    """See the module docstring (False for anything that is not a valid CA Secret)."""
    try:
        return bool(_ca_data(secret)[1]) if secret.get("type") == SECRET_TYPE_CA else False
    except SecretValidationError:
        return False


CA_SECRET = SecretType(SECRET_TYPE_CA, validate_ca_secret, ca_file)
