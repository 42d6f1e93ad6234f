"""ingress-nginx's client-certificate annotations (`auth-tls-*`) with `--ingress-nginx-compat`: its
validation, its defaults, the ingressMTLS Policy they become (CRL included), the lines beside it, failing
closed on a Secret ingressctl cannot use, and an ingressMTLS Policy of `nginx.org/policies` winning."""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams
from ingressctl.kinds.ingress.config import generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.kinds.ingress.ingress_nginx.authtls_policy import with_auth_tls
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.kinds.ingress.refs import ingress_secrets
from ingressctl.kinds.ingress.validation import validate_ingress
from ingressctl.policies.base import ResolvedPolicy
from ingressctl.secret_types import SecretReference
from tests.pki import CA, ca_secret
from tests.unit.test_ingress_nginx_annotations import STATIC, TEMPLATES, N, ingress

CA_REF = SecretReference("shop/ca", path="/etc/ic/secrets/shop-ca", secret_type="nginx.org/ca")
ON = {N + "auth-tls-secret": "shop/ca"}


def render(annotations: dict[str, str], *, tls: bool = True, refs: dict[str, SecretReference] | None = None,
           secret: dict[str, Any] | None = None, policies: tuple[ResolvedPolicy, ...] | None = None,
           ) -> tuple[str, list[str]]:
    ing = ingress(annotations, tls=tls)
    known = {"shop/ca": CA_REF} if refs is None else refs
    pols, warnings = with_auth_tls(ing, policies, lambda k: known.get(k, SecretReference(k, error="missing")),
                                   lambda k: secret)
    ex = IngressEx(ing, {"app.example.com": True}, {backend_key("web", 80): ["10.0.0.1:8080"],
                                                    backend_key("api", 80): ["10.0.0.2:8080"]},
                   secret_refs={"app-tls": SecretReference("shop/app-tls", secret_type="kubernetes.io/tls",
                                                           path="/etc/ic/secrets/tls")}, policies=pols)
    cfg, more = generate_nginx_config(ex, STATIC, ConfigParams())
    return TEMPLATES.execute_ingress_template(cfg), warnings + more


def test_auth_tls_secret_alone_verifies_client_certificates_with_ingress_nginx_defaults() -> None:
    text, warnings = render(ON)
    assert warnings == []
    for line in ("ssl_client_certificate /etc/ic/secrets/shop-ca;", "ssl_verify_client on;",
                 "ssl_verify_depth 1;", "if ($ssl_client_verify != SUCCESS) { return 400; }"):
        assert text.count(line) == 1, line
    for line in ("proxy_set_header ssl-client-verify $ssl_client_verify;",
                 "proxy_set_header ssl-client-subject-dn $ssl_client_s_dn;",
                 "proxy_set_header ssl-client-issuer-dn $ssl_client_i_dn;"):
        assert text.count(line) == 3, line   # every location
    assert "ssl-client-cert " not in text and "error_page 495" not in text and "ssl_crl" not in text


def test_every_auth_tls_annotation_renders_what_ingress_nginx_rendered() -> None:
    text, _ = render({**ON, N + "auth-tls-verify-client": "optional_no_ca", N + "auth-tls-verify-depth": "3",
                      N + "auth-tls-pass-certificate-to-upstream": "true",
                      N + "auth-tls-error-page": "https://errors.example.com/cert",
                      N + "auth-tls-match-cn": "CN=(client|admin)$"},
                     secret=ca_secret("ca", "shop", CA("x"), crl=CA("x").crl_pem()))
    for line in ("ssl_verify_client optional_no_ca;", "ssl_verify_depth 3;",
                 "ssl_crl /etc/ic/secrets/shop-ca;", "error_page 495 496 = https://errors.example.com/cert;",
                 'if ($ssl_client_s_dn !~ "CN=(client|admin)$") {',
                 'return 403 "client certificate unauthorized";',
                 "proxy_set_header ssl-client-cert $ssl_client_escaped_cert;"):
        assert line in text, line
    assert "return 400" not in text
    assert "ssl_verify_depth 1;" in render({**ON, N + "auth-tls-verify-depth": "0"})[0]  # 0: the default
    assert "ssl_client_certificate /etc/ic/secrets/shop-ca;" in render({N + "auth-tls-secret": "/ca"})[0]


@pytest.mark.parametrize(("name", "value"), [
    ("auth-tls-secret", "ca"), ("auth-tls-secret", "a/b/c"), ("auth-tls-secret", "shop/CA_Bad"),
    ("auth-tls-secret", "shop/ca;"), ("auth-tls-verify-client", "required"), ("auth-tls-verify-depth", "-1"),
    ("auth-tls-verify-depth", "one"), ("auth-tls-pass-certificate-to-upstream", "yes"),
    ("auth-tls-error-page", "https://e.example.com/a b?x=$host"), ("auth-tls-error-page", "/a;b"),
    ("auth-tls-match-cn", "client"), ("auth-tls-match-cn", "CN=("), ("auth-tls-match-cn", "CN=a\nb"),
])
def test_values_ingress_nginx_refuses_reject_the_ingress(name: str, value: str) -> None:
    errors = [str(e) for e in validate_ingress(ingress({**ON, N + name: value}), ingress_nginx_compat=True)]
    assert len(errors) == 1 and f"annotations.{N}{name}: Invalid value" in errors[0], errors


def test_auth_tls_keys_without_the_secret_are_ignored_with_a_warning() -> None:
    tr = translate({N + "auth-tls-verify-client": "on"})
    assert tr.auth_tls is None and "auth-tls-verify-client ignored" in tr.warnings[0]


@pytest.mark.parametrize(("annotations", "refs", "tls", "warning"), [
    (ON, {}, True, "must exist and be of the type nginx.org/ca"),
    (ON, {"shop/ca": SecretReference("shop/ca", path="/x", secret_type="kubernetes.io/tls")}, True,
     "must exist and be of the type nginx.org/ca"),
    ({N + "auth-tls-secret": "other/ca"}, None, True, "cross namespace secrets are not supported"),
    (ON, None, False, "TLS must be enabled in Ingress for IngressMTLS policy shop/auth-tls-secret=ca"),
])
def test_a_client_ca_ingressctl_cannot_use_fails_closed_with_a_warning(
        annotations: dict[str, str], refs: dict[str, SecretReference] | None, tls: bool,
        warning: str) -> None:
    text, warnings = render(annotations, refs=refs, tls=tls)
    assert "\n    return 500;" in text and "ssl_client_certificate" not in text
    assert any(warning in w for w in warnings), warnings


def test_an_ingress_mtls_policy_of_nginx_org_policies_wins_with_a_warning() -> None:
    mtls = ResolvedPolicy("shop/mtls", {"apiVersion": "k8s.nginx.org/v1", "kind": "Policy",
                                        "metadata": {"name": "mtls", "namespace": "shop"},
                                        "spec": {"ingressMTLS": {"clientCertSecret": "policy-ca"}}},
                          secrets={})
    _, warnings = render(ON, policies=(mtls,))
    assert any("IngressMTLS Policy shop/mtls) wins over nginx.ingress.kubernetes.io/auth-tls-secret" in w
               for w in warnings)


def test_the_secret_is_referenced_so_its_changes_re_render_the_ingress() -> None:
    assert ingress_secrets(ingress(ON)).names == ("ca",)
    assert ingress_secrets(ingress({N + "auth-tls-secret": "/ca"}, tls=True)).names == ("app-tls", "ca")
    assert ingress_secrets(ingress({N + "auth-tls-secret": "other/ca"})).names == ()


def test_auth_tls_on_a_minion_fails_its_locations_closed() -> None:
    from ingressctl.kinds.ingress.config import generate_nginx_config_for_mergeable
    from ingressctl.kinds.ingress.ingress_ex import MergeableIngresses

    master = ingress({"nginx.org/mergeable-ingress-type": "master"}, name="shop", tls=True)
    master["spec"]["rules"][0]["http"] = {"paths": []}
    minion = ingress({"nginx.org/mergeable-ingress-type": "minion", **ON}, name="web")
    pols, _ = with_auth_tls(minion, None, lambda k: CA_REF, lambda k: None)
    endpoints = {backend_key("web", 80): ["10.0.0.1:1"], backend_key("api", 80): ["10.0.0.2:1"]}
    result = generate_nginx_config_for_mergeable(MergeableIngresses(
        IngressEx(master, {"app.example.com": True}, {}, secret_refs={"app-tls": SecretReference(
            "shop/app-tls", secret_type="kubernetes.io/tls", path="/etc/ic/secrets/tls")}),
        [IngressEx(minion, {"app.example.com": True}, endpoints, policies=pols,
                   valid_minion_paths={"/": True, "/api": True})]), STATIC, ConfigParams())
    text = TEMPLATES.execute_ingress_template(result.config)
    assert text.count("        return 500;") == 3 and "ssl_client_certificate" not in text
    assert any("not allowed on a minion" in w for w in result.minion_warnings["shop/web"])
