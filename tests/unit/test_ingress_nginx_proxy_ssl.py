"""ingress-nginx's TLS towards the backend (`proxy-ssl-*`) with `--ingress-nginx-compat`: its validation, its
defaults, the egressMTLS Policy they become and its lines, failing closed on a Secret ingressctl cannot use,
an egressMTLS Policy of `nginx.org/policies` winning, and the CA files of the Secret store."""

from __future__ import annotations

import os
from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams
from ingressctl.controller.secrets import LocalSecretStore
from ingressctl.controller.tls_ca_files import ca_file_name
from ingressctl.kinds.ingress.config import generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.kinds.ingress.ingress_nginx.configmap import translate_config_map
from ingressctl.kinds.ingress.ingress_nginx.proxyssl_policy import with_proxy_ssl
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.kinds.ingress.refs import ingress_secrets
from ingressctl.kinds.ingress.validation import validate_ingress
from ingressctl.policies.base import ResolvedPolicy
from ingressctl.secret_types import SecretReference
from tests.pki import CA, b64, tls_secret
from tests.unit.test_ingress_nginx_annotations import STATIC, TEMPLATES, N, ingress

TLS_REF = SecretReference("shop/backend", path="/etc/ic/secrets/shop-backend",
                          secret_type="kubernetes.io/tls")
CA_PATH = "/etc/ic/secrets/shop-backend_ca.crt"
ON = {N + "proxy-ssl-secret": "shop/backend", N + "backend-protocol": "HTTPS"}


def render(annotations: dict[str, str], *, refs: dict[str, SecretReference] | None = None,
           ca: SecretReference | None = None, policies: tuple[ResolvedPolicy, ...] | None = None,
           ) -> tuple[str, list[str]]:
    ing = ingress(annotations)
    known = {"shop/backend": TLS_REF} if refs is None else refs
    ca_ref = SecretReference("shop/backend", path=CA_PATH) if ca is None else ca
    pols, warnings = with_proxy_ssl(ing, policies,
                                    lambda k: known.get(k, SecretReference(k, error="missing")),
                                    lambda k: ca_ref)
    ex = IngressEx(ing, {"app.example.com": True}, {backend_key("web", 80): ["10.0.0.1:8443"],
                                                    backend_key("api", 80): ["10.0.0.2:8443"]},
                   policies=pols)
    cfg, more = generate_nginx_config(ex, STATIC, ConfigParams())
    return TEMPLATES.execute_ingress_template(cfg), warnings + more


def test_proxy_ssl_secret_alone_renders_ingress_nginx_defaults() -> None:
    text, warnings = render(ON)
    assert warnings == []
    for line in ("proxy_ssl_certificate /etc/ic/secrets/shop-backend;",
                 "proxy_ssl_certificate_key /etc/ic/secrets/shop-backend;",
                 f"proxy_ssl_trusted_certificate {CA_PATH};", "proxy_ssl_verify off;",
                 "proxy_ssl_verify_depth 1;", "proxy_ssl_protocols TLSv1.2;", "proxy_ssl_ciphers DEFAULT;",
                 "proxy_ssl_session_reuse on;", "proxy_ssl_server_name off;", "proxy_ssl_name $proxy_host;"):
        assert text.count(line) == 1, line   # once, in the Ingress's server: its locations inherit it
    assert text.count("proxy_pass https://") == 3   # and no SNI of their own (ingress-nginx's default off)
    # without ca.crt: the client certificate, no trusted CA
    text, warnings = render(ON, ca=SecretReference("shop/backend"))
    assert warnings == [] and "proxy_ssl_certificate /etc/ic/secrets/shop-backend;" in text
    assert "proxy_ssl_trusted_certificate" not in text and "proxy_ssl_verify off;" in text


def test_every_proxy_ssl_annotation_renders_its_line() -> None:
    text, warnings = render({**ON, N + "proxy-ssl-verify": "on", N + "proxy-ssl-verify-depth": "3",
                             N + "proxy-ssl-name": "internal.backend.svc", N + "proxy-ssl-server-name": "on",
                             N + "proxy-ssl-protocols": "TLSv1.3  TLSv1.2 TLSv1.3",
                             N + "proxy-ssl-ciphers": "ECDHE-RSA-AES128-GCM-SHA256 HIGH:!aNULL"})
    assert warnings == []
    for line in ("proxy_ssl_verify on;", "proxy_ssl_verify_depth 3;", "proxy_ssl_name internal.backend.svc;",
                 "proxy_ssl_protocols TLSv1.2 TLSv1.3;",
                 "proxy_ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256:HIGH:!aNULL;",
                 "grpc_ssl_verify on;", "grpc_ssl_name internal.backend.svc;"):
        assert text.count(line) == 1, line
    assert text.count("proxy_ssl_server_name on;") == 4   # the server's, and each HTTPS location's as NIC
    assert "proxy_ssl_verify_depth 1;" in render({**ON, N + "proxy-ssl-verify-depth": "0"})[0]  # 0: default


@pytest.mark.parametrize(("name", "value"), [
    ("proxy-ssl-secret", "backend"), ("proxy-ssl-secret", "/backend"), ("proxy-ssl-secret", "a/b/c"),
    ("proxy-ssl-secret", "shop/Bad_Name"), ("proxy-ssl-secret", "shop/b;c"),
    ("proxy-ssl-verify", "true"), ("proxy-ssl-verify", "On"), ("proxy-ssl-server-name", "yes"),
    ("proxy-ssl-verify-depth", "-1"), ("proxy-ssl-verify-depth", "two"), ("proxy-ssl-verify-depth", " 2"),
    ("proxy-ssl-protocols", "TLSv1.1"), ("proxy-ssl-protocols", "TLSv1.2TLSv1.3"),
    ("proxy-ssl-protocols", "TLSv1.2;"), ("proxy-ssl-ciphers", "HIGH;return 200"),
    ("proxy-ssl-ciphers", "@SECLEVEL=0"), ("proxy-ssl-ciphers", "NO-SUCH-CIPHER"),
    ("proxy-ssl-name", "$host"), ("proxy-ssl-name", "a b"), ("proxy-ssl-name", "back.end;"),
    ("proxy-ssl-name", "-bad.example.com"), ("proxy-ssl-name", "x" * 64 + ".example.com"),
    ("proxy-ssl-name", "a\nproxy_pass http://evil"),
])
def test_values_ingress_nginx_refuses_reject_the_ingress(name: str, value: str) -> None:
    errors = [str(e) for e in validate_ingress(ingress({**ON, N + name: value}), ingress_nginx_compat=True)]
    assert len(errors) == 1 and f"annotations.{N}{name}: Invalid value" in errors[0], errors


def test_proxy_ssl_keys_without_the_secret_are_ignored_with_a_warning() -> None:
    tr = translate({N + "proxy-ssl-verify": "on", N + "proxy-ssl-name": "a.example.com"})
    assert tr.proxy_ssl is None and not tr.problems
    assert "proxy-ssl-name ignored" in tr.warnings[0] and "proxy-ssl-verify ignored" in tr.warnings[0]
    tr = translate({**ON, N + "proxy-ssl-location-only": "true"})
    assert tr.proxy_ssl is not None and "proxy-ssl-location-only ignored" in tr.warnings[0]


@pytest.mark.parametrize(("annotations", "refs", "ca", "warning"), [
    (ON, {}, None, "must exist and be of the type kubernetes.io/tls"),
    (ON, {"shop/backend": SecretReference("shop/backend", secret_type="Opaque")}, None,
     "must exist and be of the type kubernetes.io/tls"),
    (ON, {"shop/backend": SecretReference("shop/backend", secret_type="kubernetes.io/tls",
                                          error="failed to validate TLS cert and key")}, None,
     "is invalid: failed to validate TLS cert and key"),
    (ON, None, SecretReference("shop/backend", error="invalid data in ca.crt: no PEM certificate found"),
     "the ca.crt of the Secret shop/backend is invalid"),
    ({**ON, N + "proxy-ssl-verify": "on"}, None, SecretReference("shop/backend"),
     "proxy-ssl-verify is on but the Secret has no ca.crt"),
    ({**ON, N + "proxy-ssl-secret": "other/backend"}, None, None,
     "cross namespace secrets are not supported"),
])
def test_a_secret_ingressctl_cannot_use_fails_closed_with_a_warning(
        annotations: dict[str, str], refs: dict[str, SecretReference] | None, ca: SecretReference | None,
        warning: str) -> None:
    text, warnings = render(annotations, refs=refs, ca=ca)
    assert "\n    return 500;" in text and "proxy_ssl_certificate" not in text
    assert any(warning in w for w in warnings), warnings


def test_an_egress_mtls_policy_of_nginx_org_policies_wins_with_a_warning() -> None:
    egress = ResolvedPolicy("shop/egress", {"apiVersion": "k8s.nginx.org/v1", "kind": "Policy",
                                            "metadata": {"name": "egress", "namespace": "shop"},
                                            "spec": {"egressMTLS": {"verifyDepth": 5}}}, secrets={})
    text, warnings = render(ON, policies=(egress,))
    assert any("EgressMTLS Policy shop/egress) wins over nginx.ingress.kubernetes.io/proxy-ssl-secret" in w
               for w in warnings)
    assert "proxy_ssl_verify_depth 5;" in text and "shop-backend" not in text


def test_the_secret_is_referenced_so_its_changes_re_render_the_ingress() -> None:
    assert ingress_secrets(ingress(ON), ingress_nginx=True).names == ("backend",)
    assert ingress_secrets(ingress({N + "proxy-ssl-secret": "other/backend"}), ingress_nginx=True).names == ()
    assert ingress_secrets(ingress(ON)).names == ()   # without --ingress-nginx-compat


def test_the_location_only_config_map_key_is_ignored_with_its_reason() -> None:
    tr = translate_config_map({"proxy-ssl-location-only": "true"})
    assert tr.messages and "own locations" in tr.messages[0][1]


class Files:
    def __init__(self, directory: str) -> None:
        self.dir = directory

    def create_secret(self, name: str, content: bytes, mode: int = 0o600) -> str:
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(content)
        os.chmod(path, mode)
        return path

    def delete_secret(self, name: str) -> None:
        os.remove(os.path.join(self.dir, name))


def _with_ca(secret: dict[str, Any], ca_pem: bytes) -> dict[str, Any]:
    return {**secret, "data": {**secret["data"], "ca.crt": b64(ca_pem)}}


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def test_the_store_writes_a_tls_secrets_ca_crt_as_a_file_of_its_own(tmp_path: Any) -> None:
    store = LocalSecretStore(Files(str(tmp_path)))   # type: ignore[arg-type]
    ca, other = CA("backend-ca"), CA("other-ca")
    plain = tls_secret("backend", "shop", ca.issue("client"))
    store.add_or_update_secret(plain)
    assert store.get_ca_reference("shop/backend") == SecretReference("shop/backend",
                                                                     secret_type="kubernetes.io/tls")
    store.add_or_update_secret(_with_ca(plain, ca.cert_pem))
    ref = store.get_ca_reference("shop/backend")
    assert ref.path == str(tmp_path / ca_file_name("shop/backend")) and not ref.error
    assert _read(ref.path).strip() == ca.cert_pem.strip()
    assert os.stat(ref.path).st_mode & 0o777 == 0o644
    tls_file = store.get_secret_reference("shop/backend").path
    assert b"PRIVATE KEY" in _read(tls_file) and b"PRIVATE KEY" not in _read(ref.path)
    store.add_or_update_secret(_with_ca(plain, other.cert_pem))      # an update rewrites it
    assert _read(ref.path).strip() == other.cert_pem.strip()
    store.add_or_update_secret(_with_ca(plain, b"not a certificate"))  # an invalid one removes it
    assert not os.path.exists(ref.path)
    assert "invalid data in ca.crt" in store.get_ca_reference("shop/backend").error
    store.add_or_update_secret(_with_ca(plain, ca.cert_pem))
    assert store.get_ca_reference("shop/backend").path == ref.path and os.path.exists(ref.path)
    store.add_or_update_secret(plain)                                # ca.crt removed: the file goes
    assert not os.path.exists(ref.path)
    store.add_or_update_secret(_with_ca(plain, ca.cert_pem))
    store.get_ca_reference("shop/backend")
    store.delete_secret("shop/backend")                              # deleted: the file goes
    assert not os.path.exists(ref.path)
    assert store.get_ca_reference("shop/backend").error
    assert store.get_ca_reference("shop/none").error


def test_on_a_minion_the_settings_are_its_locations_own() -> None:
    from ingressctl.kinds.ingress.config import generate_nginx_config_for_mergeable
    from ingressctl.kinds.ingress.ingress_ex import MergeableIngresses

    master = ingress({"nginx.org/mergeable-ingress-type": "master"}, name="shop")
    master["spec"]["rules"][0]["http"] = {"paths": []}
    minion = ingress({"nginx.org/mergeable-ingress-type": "minion", **ON, N + "proxy-ssl-verify": "on"},
                     name="web")
    other = ingress({"nginx.org/mergeable-ingress-type": "minion"}, name="other")
    other["spec"]["rules"][0]["http"]["paths"] = [
        {"path": "/other", "pathType": "Prefix",
         "backend": {"service": {"name": "api", "port": {"number": 80}}}}]
    pols, warnings = with_proxy_ssl(minion, None, lambda k: TLS_REF,
                                    lambda k: SecretReference(k, path=CA_PATH))
    assert warnings == []
    endpoints = {backend_key("web", 80): ["10.0.0.1:1"], backend_key("api", 80): ["10.0.0.2:1"]}
    result = generate_nginx_config_for_mergeable(MergeableIngresses(
        IngressEx(master, {"app.example.com": True}, {}),
        [IngressEx(minion, {"app.example.com": True}, endpoints, policies=pols,
                   valid_minion_paths={"/": True, "/api": True}),
         IngressEx(other, {"app.example.com": True}, endpoints, valid_minion_paths={"/other": True})]),
        STATIC, ConfigParams())
    text = TEMPLATES.execute_ingress_template(result.config)
    assert text.count("        proxy_ssl_verify on;") == 3   # the minion's three locations, not /other
    assert text.count(f"proxy_ssl_trusted_certificate {CA_PATH};") == 3
    assert "\n    proxy_ssl_" not in text   # nothing at the server level
