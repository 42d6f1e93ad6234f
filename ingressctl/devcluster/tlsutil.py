"""Certificates for `--tls`: a throw-away CA and a serving certificate it signs, made with `cryptography`.

The serving certificate names the bind host (IP or DNS name), 127.0.0.1, ::1 and localhost, so both Go
(kubectl) and Python clients verify it against the CA carried in the kubeconfig. Keys are ECDSA P-256 and
never leave memory except in the temporary files `ssl` needs to load them.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class ServingCertificate:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_alpn_protocols(["http/1.1"])
        fd, path = tempfile.mkstemp(prefix="devcluster-", suffix=".pem")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(self.cert_pem + self.ca_pem + self.key_pem)
            ctx.load_cert_chain(path)
        finally:
            os.unlink(path)
        return ctx


def generate(host: str = "127.0.0.1", days: int = 365) -> ServingCertificate:
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "devcluster-ca")])
    ca = (x509.CertificateBuilder()
          .subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False),
                         critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))

    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName("localhost"),
                                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                    x509.IPAddress(ipaddress.ip_address("::1"))]
    try:
        ip = ipaddress.ip_address(host)
        if x509.IPAddress(ip) not in sans:
            sans.append(x509.IPAddress(ip))
    except ValueError:
        if host and host != "localhost":
            sans.append(x509.DNSName(host))
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "devcluster")]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    return ServingCertificate(
        ca_pem=ca.public_bytes(serialization.Encoding.PEM),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()),
    )
