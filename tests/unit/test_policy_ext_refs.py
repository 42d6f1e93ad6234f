"""`nginx.org/ca` Secrets, the Ingress's Policy references and their resolution, and the users of a Service
through externalAuth Policies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from ingressctl.controller.secrets import SUPPORTED_SECRET_TYPES
from ingressctl.keys import ResourceKey
from ingressctl.kinds.ingress.policies import parse_policy_refs
from ingressctl.kinds.policy.refs import (
    CUSTOM_RESOURCES_DISABLED,
    IngressPolicyResolver,
    ingress_policy_claims,
    policy_service_users,
    with_crl,
)
from ingressctl.policies.base import PolicySecret, ResolvedPolicy
from ingressctl.policies.ca_secret import ca_file, ca_has_crl, validate_ca_secret
from ingressctl.secret_types import SecretValidationError
from tests.pki import CA, b64, ca_secret


def test_ca_secrets_are_supported_validated_and_written_with_their_crl() -> None:
    assert "nginx.org/ca" in SUPPORTED_SECRET_TYPES
    ca = CA("ca")
    plain, with_crl_ = ca_secret("ca", "ns", ca), ca_secret("ca", "ns", ca, crl=ca.crl_pem())
    validate_ca_secret(plain)
    validate_ca_secret(with_crl_)
    assert ca_file(plain) == (ca.cert_pem, 0o644)
    content, _ = ca_file(with_crl_)
    assert content.startswith(ca.cert_pem) and b"-----BEGIN X509 CRL-----" in content
    assert (ca_has_crl(plain), ca_has_crl(with_crl_)) == (False, True)


@pytest.mark.parametrize(("data", "message"), [
    ({}, "CA secret must have the data field ca.crt"),
    ({"ca.crt": b64(b"not a certificate")}, "invalid data in ca.crt: no PEM certificate found"),
    ({"ca.crt": b64(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")},
     "invalid data in ca.crt"),
    ({"ca.crt": b64(CA("x").cert_pem), "ca.crl": b64(b"nope")}, "invalid data in ca.crl"),
])
def test_bad_ca_secrets_are_invalid(data: dict[str, str], message: str) -> None:
    secret = {"type": "nginx.org/ca", "metadata": {"name": "ca", "namespace": "ns"}, "data": data}
    with pytest.raises(SecretValidationError, match=message):
        validate_ca_secret(secret)
    assert not ca_has_crl(secret)


def test_with_crl_marks_valid_ca_secrets_that_carry_a_crl() -> None:
    ca = CA("ca")
    secrets = {"clientCertSecret": PolicySecret("ns/ca", "nginx.org/ca", "/s/ns-ca"),
               "tlsSecret": PolicySecret("ns/tls", "kubernetes.io/tls", "/s/ns-tls"),
               "broken": PolicySecret("ns/bad", "nginx.org/ca", "", "invalid")}
    objects = {"ns/ca": ca_secret("ca", "ns", ca, crl=ca.crl_pem())}
    out = with_crl(secrets, objects.get)
    assert out["clientCertSecret"].crl_path == "/s/ns-ca"
    assert out["tlsSecret"] == secrets["tlsSecret"] and out["broken"] == secrets["broken"]
    assert with_crl(secrets, {"ns/ca": ca_secret("ca", "ns", ca)}.get)["clientCertSecret"].crl_path == ""


def ingress(annotation: str | None, namespace: str = "demo") -> dict[str, Any]:
    anns = {"nginx.org/policies": annotation} if annotation is not None else {}
    return {"metadata": {"name": "cafe", "namespace": namespace, "annotations": anns}}


def test_policy_references_of_an_ingress() -> None:
    assert parse_policy_refs("a, other/b,,a", "demo") == ["demo/a", "other/b"]
    assert ingress_policy_claims(ingress("b,other/a")) == (("demo", "b"), ("other", "a"))
    assert ingress_policy_claims(ingress(None)) == ()


def pol(name: str, spec: dict[str, Any], namespace: str = "demo") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def test_the_resolver_reports_rejected_references_and_resolves_auth_endpoints() -> None:
    policies = {
        "demo/ac": ResolvedPolicy("demo/ac", pol("ac", {"accessControl": {"allow": ["10.0.0.1"]}})),
        "demo/rl": ResolvedPolicy("demo/rl", pol("rl", {"rateLimit": {"rate": "1r/s"}})),
        "demo/bad": ResolvedPolicy("demo/bad", pol("bad", {"cors": {}}), error="spec.cors: bad"),
        "demo/auth": ResolvedPolicy("demo/auth", pol("auth", {"externalAuth": {
            "authURI": "/a", "authServiceName": "auth-ns/auth", "authServicePorts": [8080]}})),
    }
    service = {"metadata": {"name": "auth", "namespace": "auth-ns"},
               "spec": {"ports": [{"name": "http", "port": 8080, "targetPort": 9000}]}}
    slices = [{"metadata": {"labels": {"kubernetes.io/service-name": "auth"}},
               "ports": [{"name": "http", "port": 9000}],
               "endpoints": [{"addresses": ["10.1.1.1"], "conditions": {"ready": True}}]}]
    resolver = IngressPolicyResolver(lambda k: policies.get(k) or ResolvedPolicy(k),
                                     lambda kind, key: service if key == "auth-ns/auth" else None,
                                     lambda ns, name: slices if (ns, name) == ("auth-ns", "auth") else [])
    refs, endpoints, warnings, rejected = resolver.resolve(ingress("ac,rl,bad,missing,auth"))
    assert refs is not None and [r.key for r in refs] == ["demo/ac", "demo/rl", "demo/bad", "demo/missing",
                                                          "demo/auth"]
    assert warnings == []
    assert rejected == ["Policy demo/rl of type rateLimit is not supported on Ingress resources",
                        "Policy demo/bad is missing or invalid", "Policy demo/missing is missing or invalid"]
    assert endpoints == {"auth-ns/auth:8080": ("10.1.1.1:9000",)}
    assert resolver.resolve(ingress(None)) == (None, {}, [], [])
    disabled = IngressPolicyResolver(None, lambda kind, key: None, lambda ns, name: [])
    assert disabled.resolve(ingress("ac")) == (None, {}, [CUSTOM_RESOURCES_DISABLED], [])


@dataclass
class _Res:
    key: str

    @property
    def key_with_kind(self) -> ResourceKey:
        return ResourceKey("virtualserver", self.key)


def test_the_users_of_a_service_through_external_auth_policies() -> None:
    objs = [pol("a", {"externalAuth": {"authURI": "/", "authServiceName": "auth"}}),
            pol("b", {"externalAuth": {"authURI": "/", "authServiceName": "demo/auth"}}, "other"),
            pol("c", {"externalAuth": {"authURI": "/", "authServiceName": "elsewhere"}}),
            pol("d", {"accessControl": {"allow": ["10.0.0.1"]}})]
    users = {("demo", "a"): [_Res("demo/x")], ("other", "b"): [_Res("other/y"), _Res("demo/x")],
             ("demo", "c"): [_Res("demo/z")]}
    found = policy_service_users("demo", "auth", objs, lambda o: True,
                                 lambda ns, name: users.get((ns, name), []))   # type: ignore[arg-type, return-value]
    assert [r.key_with_kind.ns_name for r in found] == ["demo/x", "other/y"]
    assert policy_service_users("demo", "auth", objs, lambda o: False, lambda ns, name: []) == []
