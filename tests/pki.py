"""A small PKI for the mTLS tests: certificate authorities, certificates they issue (server or client), CRLs,
and the Secrets (`nginx.org/ca`, `kubernetes.io/tls`) and Policy objects that carry them."""

from __future__ import annotations

import base64
import datetime
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_NOW = datetime.datetime.now(datetime.UTC)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@dataclass
class Issued:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return _pem_key(self.key)

    def write(self, cert_path: str, key_path: str) -> None:
        with open(cert_path, "wb") as f:
            f.write(self.cert_pem)
        with open(key_path, "wb") as f:
            f.write(self.key_pem)


@dataclass
class CA:
    name: str
    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    cert: x509.Certificate = field(init=False)

    def __post_init__(self) -> None:
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, self.name)])
        self.cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(_NOW - datetime.timedelta(days=1))
                     .not_valid_after(_NOW + datetime.timedelta(days=30))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .sign(self.key, hashes.SHA256()))

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, cn: str, *, server: bool = False, dns: tuple[str, ...] = ()) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        b = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
             .issuer_name(self.cert.subject).public_key(key.public_key())
             .serial_number(x509.random_serial_number())
             .not_valid_before(_NOW - datetime.timedelta(days=1))
             .not_valid_after(_NOW + datetime.timedelta(days=30))
             .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if dns:
            b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]), critical=False)
        return Issued(b.sign(self.key, hashes.SHA256()), key)

    def crl_pem(self, *revoked: Issued) -> bytes:
        b = (x509.CertificateRevocationListBuilder().issuer_name(self.cert.subject)
             .last_update(_NOW - datetime.timedelta(hours=1)).next_update(_NOW + datetime.timedelta(days=7)))
        for r in revoked:
            b = b.add_revoked_certificate(x509.RevokedCertificateBuilder().serial_number(r.cert.serial_number)
                                          .revocation_date(_NOW - datetime.timedelta(minutes=5)).build())
        return b.sign(self.key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def ca_secret(name: str, namespace: str, ca: CA, crl: bytes = b"") -> dict[str, Any]:
    data = {"ca.crt": b64(ca.cert_pem)}
    if crl:
        data["ca.crl"] = b64(crl)
    return {"apiVersion": "v1", "kind": "Secret", "type": "nginx.org/ca",
            "metadata": {"name": name, "namespace": namespace}, "data": data}


def tls_secret(name: str, namespace: str, issued: Issued) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": namespace},
            "data": {"tls.crt": b64(issued.cert_pem), "tls.key": b64(issued.key_pem)}}


def policy(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "k8s.nginx.org/v1", "kind": "Policy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}
