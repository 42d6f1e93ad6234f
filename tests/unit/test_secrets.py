"""Secret validation (real certificates made with cryptography) and the LocalSecretStore's files."""

from __future__ import annotations

import base64
import datetime
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from ingressctl.controller.secrets import ERROR_SECRET_MISSING, LocalSecretStore, validate_secret
from ingressctl.secret_types import SecretValidationError

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


def make_key(kind: str) -> PrivateKey:
    if kind == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if kind == "ec":
        return ec.generate_private_key(ec.SECP256R1())
    return ed25519.Ed25519PrivateKey.generate()


def make_cert(key: PrivateKey, cn: str = "example.com") -> bytes:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=365))
    )
    algo = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    return builder.sign(key, algo).public_bytes(serialization.Encoding.PEM)


def key_pem(key: PrivateKey, fmt: serialization.PrivateFormat = serialization.PrivateFormat.PKCS8) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption())


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def tls_secret(
    cert: bytes, key: bytes, *, name: str = "cafe", ns: str = "default", type_: str = "kubernetes.io/tls"
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "resourceVersion": "1"},
        "type": type_,
        "data": {"tls.crt": b64(cert), "tls.key": b64(key)},
    }


@pytest.fixture(scope="module")
def rsa_pair() -> tuple[bytes, bytes]:
    key = make_key("rsa")
    return make_cert(key), key_pem(key, serialization.PrivateFormat.TraditionalOpenSSL)


@pytest.fixture(scope="module")
def ec_pair() -> tuple[bytes, bytes]:
    key = make_key("ec")
    return make_cert(key), key_pem(key)


def failure(secret: dict[str, Any]) -> str:
    with pytest.raises(SecretValidationError) as exc:
        validate_secret(secret)
    return str(exc.value)


def test_valid_rsa_ec_and_ed25519(rsa_pair: tuple[bytes, bytes], ec_pair: tuple[bytes, bytes]) -> None:
    validate_secret(tls_secret(*rsa_pair))
    validate_secret(tls_secret(*ec_pair))
    key = make_key("ed25519")
    validate_secret(tls_secret(make_cert(key), key_pem(key)))


def test_chain_with_intermediate_is_valid(
    rsa_pair: tuple[bytes, bytes], ec_pair: tuple[bytes, bytes]
) -> None:
    cert, key = rsa_pair
    validate_secret(tls_secret(cert + ec_pair[0], key))


def test_mismatched_key(rsa_pair: tuple[bytes, bytes], ec_pair: tuple[bytes, bytes]) -> None:
    other = key_pem(make_key("rsa"))
    assert (
        failure(tls_secret(rsa_pair[0], other))
        == "failed to validate TLS cert and key: private key does not match public key"
    )
    assert (
        failure(tls_secret(rsa_pair[0], ec_pair[1]))
        == "failed to validate TLS cert and key: private key does not match public key"
    )


def test_broken_pem(rsa_pair: tuple[bytes, bytes]) -> None:
    cert, key = rsa_pair
    assert (
        failure(tls_secret(b"not a pem", key))
        == "failed to validate TLS cert and key: failed to find any PEM data in certificate input"
    )
    assert (
        failure(tls_secret(cert, b"garbage"))
        == "failed to validate TLS cert and key: failed to find any PEM data in key input"
    )
    assert "PEM inputs may have been switched" in failure(tls_secret(key, cert))
    lines = cert.splitlines()
    corrupt = b"\n".join([*lines[:4], lines[-1]]) + b"\n"  # a truncated DER body
    assert failure(tls_secret(corrupt, key)).startswith(
        "failed to validate TLS cert and key: failed to parse certificate 1 of the chain"
    )
    bad_key = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
    assert failure(tls_secret(cert, bad_key)).startswith(
        "failed to validate TLS cert and key: failed to parse private key"
    )


def test_missing_and_undecodable_fields(rsa_pair: tuple[bytes, bytes]) -> None:
    s = tls_secret(*rsa_pair)
    del s["data"]["tls.key"]
    assert failure(s) == "failed to validate TLS cert and key: the data field tls.key is missing"
    s = tls_secret(*rsa_pair)
    s["data"]["tls.crt"] = "%%%not-base64"
    assert failure(s) == "failed to validate TLS cert and key: the data field tls.crt is not valid base64"
    assert (
        failure({"metadata": {}, "type": "kubernetes.io/tls"})
        == "failed to validate TLS cert and key: the data field tls.crt is missing"
    )


def test_wrong_and_unsupported_types(rsa_pair: tuple[bytes, bytes]) -> None:
    assert failure(tls_secret(*rsa_pair, type_="Opaque")) == "secret is of the unsupported type Opaque"
    assert failure({"metadata": {}}) == "secret is of the unsupported type "
    htpasswd = {"metadata": {}, "type": "nginx.org/htpasswd", "data": {}}
    assert failure(htpasswd) == "htpasswd secret is invalid: the data field htpasswd is missing"
    htpasswd["data"] = {"htpasswd": b64(b"user:$apr1$x$y\n")}
    validate_secret(htpasswd)


class DirManager:
    """The two Manager methods the store uses, over a temporary directory, counting writes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.writes = 0
        self.fail = False

    def create_secret(self, name: str, content: bytes, mode: int = 0o600) -> str:
        if self.fail:
            raise OSError("disk full")
        self.writes += 1
        path = self.root / name
        tmp = self.root / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        return str(path)

    def delete_secret(self, name: str) -> None:
        (self.root / name).unlink(missing_ok=True)


def test_store_writes_one_pem_file_with_mode_0600(tmp_path: Path, rsa_pair: tuple[bytes, bytes]) -> None:
    mgr = DirManager(tmp_path)
    store = LocalSecretStore(mgr)
    assert store.add_or_update_secret(tls_secret(*rsa_pair)) is True
    assert mgr.writes == 0  # lazily, as NIC: written on first use
    ref = store.get_secret_reference("default/cafe")
    assert ref.error == "" and ref.secret_type == "kubernetes.io/tls" and ref.key == "default/cafe"
    path = Path(ref.path)
    assert path == tmp_path / "default-cafe"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes() == rsa_pair[0] + b"\n" + rsa_pair[1]
    assert store.get_secret_reference("default/cafe") == ref
    assert mgr.writes == 1


def test_unchanged_update_is_detected_and_not_rewritten(
    tmp_path: Path, rsa_pair: tuple[bytes, bytes], ec_pair: tuple[bytes, bytes]
) -> None:
    mgr = DirManager(tmp_path)
    store = LocalSecretStore(mgr)
    store.add_or_update_secret(tls_secret(*rsa_pair))
    store.get_secret_reference("default/cafe")
    same = tls_secret(*rsa_pair)
    same["metadata"]["resourceVersion"] = "2"
    same["metadata"]["labels"] = {"a": "b"}
    assert store.add_or_update_secret(same) is False
    assert mgr.writes == 1
    assert store.add_or_update_secret(tls_secret(*ec_pair)) is True  # new bytes: rewritten at once
    assert mgr.writes == 2
    assert (tmp_path / "default-cafe").read_bytes() == ec_pair[0] + b"\n" + ec_pair[1]


def test_secret_turning_invalid_loses_its_file(tmp_path: Path, rsa_pair: tuple[bytes, bytes]) -> None:
    store = LocalSecretStore(DirManager(tmp_path))
    store.add_or_update_secret(tls_secret(*rsa_pair))
    store.get_secret_reference("default/cafe")
    store.add_or_update_secret(tls_secret(rsa_pair[0], key_pem(make_key("ec"))))
    ref = store.get_secret_reference("default/cafe")
    assert ref.path == "" and "does not match" in ref.error
    assert not (tmp_path / "default-cafe").exists()
    store.add_or_update_secret(tls_secret(*rsa_pair))  # fixed again
    assert Path(store.get_secret_reference("default/cafe").path).exists()


def test_delete_removes_file_and_entry(tmp_path: Path, rsa_pair: tuple[bytes, bytes]) -> None:
    store = LocalSecretStore(DirManager(tmp_path))
    store.add_or_update_secret(tls_secret(*rsa_pair))
    store.get_secret_reference("default/cafe")
    assert store.delete_secret("default/cafe") is True
    assert not (tmp_path / "default-cafe").exists()
    assert store.get_secret_reference("default/cafe").error == ERROR_SECRET_MISSING
    assert store.delete_secret("default/cafe") is False


def test_unknown_and_invalid_references(tmp_path: Path, rsa_pair: tuple[bytes, bytes]) -> None:
    store = LocalSecretStore(DirManager(tmp_path))
    assert (
        store.get_secret_reference("default/nope").error == "secret doesn't exist or of an unsupported type"
    )
    store.add_or_update_secret(tls_secret(*rsa_pair, type_="Opaque", name="op"))
    ref = store.get_secret_reference("default/op")
    assert ref.path == "" and ref.error == "secret is of the unsupported type Opaque"
    assert list(tmp_path.iterdir()) == []


def test_write_failure_is_an_error_and_retried(tmp_path: Path, rsa_pair: tuple[bytes, bytes]) -> None:
    mgr = DirManager(tmp_path)
    store = LocalSecretStore(mgr)
    store.add_or_update_secret(tls_secret(*rsa_pair))
    mgr.fail = True
    ref = store.get_secret_reference("default/cafe")
    assert ref.path == "" and "disk full" in ref.error
    mgr.fail = False
    ref = store.get_secret_reference("default/cafe")
    assert ref.error == "" and Path(ref.path).exists()


def test_htpasswd_file_is_world_readable(tmp_path: Path) -> None:
    store = LocalSecretStore(DirManager(tmp_path))
    store.add_or_update_secret(
        {
            "metadata": {"name": "auth", "namespace": "ns"},
            "type": "nginx.org/htpasswd",
            "data": {"htpasswd": b64(b"user:hash\n")},
        }
    )
    path = Path(store.get_secret_reference("ns/auth").path)
    assert path.read_bytes() == b"user:hash\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def counting_validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the key of every validate_secret call the store makes."""
    from ingressctl.controller import secrets

    calls: list[str] = []
    real = secrets.validate_secret

    def counted(secret: Any) -> None:
        calls.append(f"{secret['metadata']['namespace']}/{secret['metadata']['name']}")
        real(secret)

    monkeypatch.setattr(secrets, "validate_secret", counted)
    return calls


def test_prevalidated_secret_is_not_validated_again(
    tmp_path: Path, rsa_pair: tuple[bytes, bytes], ec_pair: tuple[bytes, bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = counting_validations(monkeypatch)
    store = LocalSecretStore(DirManager(tmp_path))
    bad = tls_secret(rsa_pair[0], ec_pair[1], name="bad")
    for s in (tls_secret(*rsa_pair), bad):
        store.prevalidate(s)
    assert calls == ["default/cafe", "default/bad"]
    store.add_or_update_secret(tls_secret(*rsa_pair))
    store.add_or_update_secret(bad)
    assert calls == ["default/cafe", "default/bad"]  # the results computed ahead were used
    assert store.get_secret_reference("default/cafe").error == ""
    assert store.get_secret_reference("default/bad").error == failure(bad)


def test_prevalidation_of_other_data_is_not_used(
    tmp_path: Path, rsa_pair: tuple[bytes, bytes], ec_pair: tuple[bytes, bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = counting_validations(monkeypatch)
    store = LocalSecretStore(DirManager(tmp_path))
    store.prevalidate(tls_secret(*rsa_pair))
    mismatched = tls_secret(rsa_pair[0], ec_pair[1])   # the Secret changed after it was validated ahead
    store.add_or_update_secret(mismatched)
    assert calls == ["default/cafe", "default/cafe"]
    assert "does not match" in store.get_secret_reference("default/cafe").error
    # A result is used once: a later update to the prevalidated data validates again.
    store.prevalidate(tls_secret(*ec_pair))
    store.delete_secret("default/cafe")   # a delete drops it too
    store.add_or_update_secret(tls_secret(*ec_pair))
    assert calls == ["default/cafe"] * 4
    assert store.get_secret_reference("default/cafe").error == ""


def test_prevalidate_ignores_unsupported_types_and_never_raises(
    tmp_path: Path, rsa_pair: tuple[bytes, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = counting_validations(monkeypatch)
    store = LocalSecretStore(DirManager(tmp_path))
    store.prevalidate(tls_secret(*rsa_pair, type_="Opaque"))
    assert calls == []
    store.prevalidate({"type": "kubernetes.io/tls", "data": {"tls.crt": 5}})  # no metadata: no error raised
    store.add_or_update_secret(tls_secret(*rsa_pair, type_="Opaque", name="op"))
    assert store.get_secret_reference("default/op").error == "secret is of the unsupported type Opaque"


def test_a_relisted_secret_the_store_holds_is_not_validated_again(
    tmp_path: Path, rsa_pair: tuple[bytes, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = counting_validations(monkeypatch)
    store = LocalSecretStore(DirManager(tmp_path))
    store.add_or_update_secret(tls_secret(*rsa_pair))
    store.prevalidate(tls_secret(*rsa_pair))
    assert calls == ["default/cafe"]
    assert store.add_or_update_secret(tls_secret(*rsa_pair)) is False
    assert calls == ["default/cafe"]
