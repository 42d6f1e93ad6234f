"""The injection fuzzer of tests/unit/test_injection_fuzz.py against the real `nginx -t`: every fuzzed
annotation (the ingress-nginx family's included), host, path or ConfigMap value that is not rejected renders
a configuration that NGINX accepts AND whose statement tree has exactly the expected directives (checked with
the tokenizer model as in the unit fuzzer; `nginx -t` confirms the model's reading is NGINX's: a config the
model thinks is fine but NGINX does not parse would fail here). Bounded: at most 200 examples; only the
rendered ones run `nginx -t`."""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dh, ec
from cryptography.x509.oid import NameOID
from hypothesis import HealthCheck, given, settings

from ingressctl.configs.configmaps import StaticConfigParams
from ingressctl.nginx.capabilities import detect
from tests.unit.test_injection_fuzz import (
    ANNOTATION_NAMES,
    CASES,
    CONFIG_MAP_NAMES,
    INGRESS_NGINX_RENDERED,
    VALID,
    Case,
    Rendered,
    check_rendered,
    render_case,
    static_params,
)

pytestmark = [pytest.mark.integration,  # DH parameters for ssl-dhparam-file are FFDH, deprecated there
              pytest.mark.filterwarnings("ignore:Diffie-Hellman over finite fields")]


def ffdhe2048_prime() -> int:
    """RFC 7919's ffdhe2048 group: p = 2^2048 - 2^1984 + (floor(2^1918 * e) + 560316) * 2^64 - 1 (generating
    2048-bit DH parameters would take seconds; older sizes are refused by OpenSSL 3)."""
    extra = 64
    term, total, k = 1 << (1918 + extra), 0, 0
    while term:  # e = sum of 1/k!
        total += term
        k += 1
        term //= k
    return int(2**2048 - 2**1984 + ((total >> extra) + 560316) * 2**64 - 1)


class Staging:
    """A conf dir NGINX can test: nginx.conf, config-version.conf, conf.d/, secrets/ with a certificate, a CA
    (also as the proxy-ssl-* cases' TLS Secret and its ca.crt) and DH parameters."""

    def __init__(self, base: str) -> None:
        self.conf_dir = os.path.join(base, "conf")
        self.run_dir = os.path.join(base, "run")
        for d in (self.conf_dir + "/conf.d", self.conf_dir + "/secrets", self.run_dir):
            os.makedirs(d, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fuzz.example.com")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(1).not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
        with open(self.conf_dir + "/secrets/default-tls", "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        with open(self.conf_dir + "/secrets/default-ca", "wb") as f:  # the CA of the auth-tls-* cases
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        shutil.copy(self.conf_dir + "/secrets/default-tls", self.conf_dir + "/secrets/default-backend")
        shutil.copy(self.conf_dir + "/secrets/default-ca",  # the client certificate and CA of proxy-ssl-*
                    self.conf_dir + "/secrets/default-backend_ca.crt")
        params = dh.DHParameterNumbers(ffdhe2048_prime(), 2).parameters()
        with open(self.conf_dir + "/secrets/dhparam.pem", "wb") as f:
            f.write(params.parameter_bytes(serialization.Encoding.PEM, serialization.ParameterFormat.PKCS3))
        with open(self.conf_dir + "/config-version.conf", "w") as f:
            f.write("")
        self.runs = 0

    @property
    def static(self) -> StaticConfigParams:
        # What this NGINX can load: directives it lacks are left out (with a warning) or refused.
        return static_params(run_dir=self.run_dir, conf_dir=self.conf_dir, capabilities=SYSTEM_NGINX)

    def nginx_t(self, r: Rendered) -> tuple[bool, str]:
        with open(self.conf_dir + "/nginx.conf", "w") as f:
            f.write(r.main)
        with open(self.conf_dir + "/conf.d/fuzz.conf", "w") as f:
            f.write(r.ingress)
        self.runs += 1
        p = subprocess.run([shutil.which("nginx") or "/usr/sbin/nginx", "-t", "-q", "-c",
                            self.conf_dir + "/nginx.conf"], capture_output=True, text=True, timeout=60)
        return p.returncode == 0, p.stderr


SYSTEM_NGINX = detect(shutil.which("nginx") or "/usr/sbin/nginx")


@pytest.fixture(scope="module")
def staging() -> Iterator[Staging]:
    base = tempfile.mkdtemp(prefix="fz-")
    try:
        yield Staging(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def check(staging: Staging, case: Case) -> bool:
    """Rejected (False), or rendered, structurally exact and accepted by nginx -t (True)."""
    r = render_case(case, staging.static)
    if isinstance(r, str):
        return False
    check_rendered(r)
    ok, out = staging.nginx_t(r)
    assert ok, f"nginx -t refused an accepted value {case}:\n{out}\n{r.ingress}"
    return True


def test_every_valid_sample_passes_nginx_t(staging: Staging) -> None:
    rendered = 0
    for name in ANNOTATION_NAMES:
        if "snippets" in name or name == "nginx.org/mergeable-ingress-type":
            continue
        for v in VALID.get(name, []):
            for kind in ("annotation", "minion-annotation"):
                rendered += check(staging, Case(kind, name, v))
    for name in CONFIG_MAP_NAMES:
        for v in VALID.get(name, []):
            rendered += check(staging, Case("configmap", name, v))
    for name in INGRESS_NGINX_RENDERED:  # ingress-nginx's annotations (--ingress-nginx-compat)
        for v in VALID[name]:
            assert check(staging, Case("ingress-nginx", name, v)), (name, v)
            rendered += 1
    for p, regex in (("/a{2}[0-9]+$", "case_sensitive"), ("/b/(x|y)", "case_insensitive"),
                     ("/c\\.d", "case_sensitive"), ('/e\\"f', "case_sensitive"), ("/plain", "exact")):
        rendered += check(staging, Case("path", "", p, regex))
    assert rendered > 100  # nearly all samples render (a few minion variants are removed by NIC's lists)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
@given(case=CASES)
def test_fuzzed_inputs_are_rejected_or_pass_nginx_t_with_the_expected_directives(staging: Staging,
                                                                               case: Case) -> None:
    check(staging, case)
