"""ingress-nginx's basic authentication (`auth-type`, `auth-secret`, `auth-secret-type`, `auth-realm`): its
validators, what is refused or ignored, the rendered `auth_basic` lines on the htpasswd file of an Opaque
Secret, the 503 of an unusable Secret, `nginx.org/basic-auth-secret` winning, mergeable Ingresses, the
Secret references (dependency tracking), and the Opaque Secret reduction (transform, handler, store)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.controller.handlers import SecretHandler
from ingressctl.controller.ingress_class import IngressClasses
from ingressctl.controller.opaque_secrets import OPAQUE, reduce_data, supported_types
from ingressctl.controller.secrets import SUPPORTED_SECRET_TYPES, LocalSecretStore
from ingressctl.controller.transforms import secret_transform
from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.config import generate_nginx_config, generate_nginx_config_for_mergeable
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.kinds.ingress.ingress_nginx import basic_auth as ba
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.kinds.ingress.model import IngressModel
from ingressctl.kinds.ingress.refs import ingress_secrets
from ingressctl.secret_types import SecretReference

N = "nginx.ingress.kubernetes.io/"
STATIC = StaticConfigParams(run_dir="/run/ic", conf_dir="/etc/ic", ingress_nginx_compat=True)
TEMPLATES = TemplateExecutor()
ENDPOINTS = {backend_key("web", 80): ["10.0.0.1:8080"]}
USERS = SecretReference("shop/users", "/etc/ic/secrets/shop-users", secret_type=OPAQUE)
REFS = {"users": USERS,
        "nokey": SecretReference("shop/nokey", "", secret_type=OPAQUE),
        "tls": SecretReference("shop/tls", "/etc/ic/secrets/shop-tls", secret_type="kubernetes.io/tls"),
        "gone": SecretReference("shop/gone", error="secret doesn't exist or of an unsupported type"),
        "htp": SecretReference("shop/htp", "/etc/ic/secrets/shop-htp", secret_type="nginx.org/htpasswd")}


def ingress(annotations: dict[str, str], name: str = "app", path: str = "/") -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "shop", "annotations": annotations},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": "app.example.com", "http": {"paths": [
                {"path": path, "pathType": "Prefix",
                 "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}


def render(annotations: dict[str, str]) -> tuple[str, list[str]]:
    cfg, warnings = generate_nginx_config(IngressEx(ingress(annotations), {"app.example.com": True},
                                                    dict(ENDPOINTS), secret_refs=dict(REFS)),
                                          STATIC, ConfigParams())
    return TEMPLATES.execute_ingress_template(cfg), warnings


def basic(secret: str = "users", **extra: str) -> dict[str, str]:
    return {N + "auth-type": "basic", N + "auth-secret": secret,
            **{N + k.replace("_", "-"): v for k, v in extra.items()}}


# ------------------------------------------------------------------------------------------------- values

@pytest.mark.parametrize(("parse", "good", "bad"), [
    (ba.auth_type, ["basic", "digest", "b asic"], ["", "Basic", "none"]),
    (ba.secret_type, ["auth-file", "auth-map", "xauth-filex"], ["file", "AUTH-FILE"]),
    (ba.secret, ["users", "shop/users", "a.b-c_d~e:f"], ["users;", "users\n", "$x", "a\"b", "{x}"]),
    (ba.realm, ["", "Protected Area", "a/b:c-d.e_f~g"], ["a\"b", "a;b", "$realm", "a\tb", "x\\"]),
])
def test_values_are_checked_as_ingress_nginx_does(parse: Any, good: list[str], bad: list[str]) -> None:
    for value in good:
        assert parse(value) == value
    for value in bad:
        with pytest.raises(ValueError, match="is invalid"):
            parse(value)


def test_split_secret_as_client_go() -> None:
    assert ba.split_secret("users", "shop") == ("shop", "users")
    assert ba.split_secret("other/users", "shop") == ("other", "users")
    assert ba.split_secret("/users", "shop") == ("shop", "users")
    with pytest.raises(ValueError):
        ba.split_secret("a/b/c", "shop")


# ------------------------------------------------------------------------------------------- translation

def test_translation_refuses_digest_and_ignores_orphans() -> None:
    t = translate(basic(realm="x"))
    assert t.extras[ba.EXTRA] == ba.BasicAuthSpec("users", "") and not t.problems
    assert translate(basic(auth_realm="Zone 1")).extras[ba.EXTRA].realm == "Zone 1"
    for anns, message, key in (
            ({**basic(), N + "auth-type": "digest"}, "NGINX has no digest authentication", "auth-type"),
            ({**basic(), N + "auth-type": "basicx"}, "NGINX has no digest authentication", "auth-type"),
            (basic(auth_realm='a"b'), "is invalid", "auth-realm"),
            ({**basic(), N + "auth-type": "none"}, "is invalid", "auth-type")):
        t = translate(anns)   # the Ingress is rejected (nothing of it reaches NGINX)
        assert any(message in e and e.startswith(f"annotation {N}{key}") for e in t.errors), (anns, t.errors)
    t = translate({N + "auth-secret": "users", N + "auth-realm": "r"})
    assert not t.errors and ba.EXTRA not in t.extras
    assert {e.key: e.status for e in t.report} == {N + "auth-secret": Status.IGNORED,
                                                   N + "auth-realm": Status.IGNORED}


# ---------------------------------------------------------------------------------------------- rendering

def test_basic_auth_renders_on_the_htpasswd_file_of_the_opaque_secret() -> None:
    text, warnings = render(basic(auth_realm="Protected Area"))
    assert 'auth_basic "Protected Area";\n    auth_basic_user_file /etc/ic/secrets/shop-users;' in text
    assert "return 503;" not in text and warnings == []
    text, _ = render(basic("shop/users", auth_secret_type="auth-file"))
    assert 'auth_basic "";' in text and "auth_basic_user_file /etc/ic/secrets/shop-users;" in text


@pytest.mark.parametrize(("annotations", "reason"), [
    (basic("missing"), "secret shop/missing does not exist"),
    (basic("gone"), "secret shop/gone does not exist"),
    (basic("other/users"), "cross namespace usage of secrets is not allowed"),
    (basic("a/b/c"), "error reading secret name from annotation"),
    (basic("nokey"), "the secret nokey does not contain a key with value auth"),
    (basic("tls"), "secret shop/tls is of the type 'kubernetes.io/tls', must be 'Opaque'"),
    ({N + "auth-type": "basic"}, "auth-secret is not set"),
    (basic(auth_secret_type="auth-filex"), "invalid auth-secret-type"),
])
def test_an_unusable_secret_denies_every_location_with_a_warning(annotations: dict[str, str],
                                                                 reason: str) -> None:
    text, warnings = render(annotations)
    assert "auth_basic" not in text
    assert text.count("return 503;") == 1 and "location / {" in text
    assert warnings == [ba.DENIED_MESSAGE.format(reason=warnings[0].split(": ", 1)[1].rsplit(";", 1)[0])]
    assert reason in warnings[0]


def test_nginx_org_basic_auth_wins() -> None:
    text, warnings = render({**basic(), "nginx.org/basic-auth-secret": "htp"})
    assert "auth_basic_user_file /etc/ic/secrets/shop-htp;" in text and "shop-users" not in text
    assert ba.WINS in warnings


def test_mergeable_minions_get_their_own_basic_auth_or_the_denial() -> None:
    master = ingress({"nginx.org/mergeable-ingress-type": "master"}, "shop")
    master["spec"]["rules"][0]["http"] = {}
    good = ingress({"nginx.org/mergeable-ingress-type": "minion", **basic(auth_realm="Cart")}, "cart",
                   "/cart")
    bad = ingress({"nginx.org/mergeable-ingress-type": "minion", **basic("missing")}, "pay", "/pay")
    plain = ingress({"nginx.org/mergeable-ingress-type": "minion"}, "home", "/")
    minions = [IngressEx(m, {"app.example.com": True}, dict(ENDPOINTS), secret_refs=dict(REFS),
                         valid_minion_paths={p: True})
               for m, p in ((good, "/cart"), (bad, "/pay"), (plain, "/"))]
    result = generate_nginx_config_for_mergeable(MergeableIngresses(
        IngressEx(master, {"app.example.com": True}, {}, secret_refs=dict(REFS)), minions), STATIC,
        ConfigParams())
    text = TEMPLATES.execute_ingress_template(result.config)
    cart = text[text.index("location /cart/"):]
    pay = text[text.index("location /pay/"):]
    home = text[text.index("location / {"):]
    assert 'auth_basic "Cart";' in cart[:cart.index("}")]
    assert "return 503;" in pay[:pay.index("}")] and "auth_basic" not in pay[:pay.index("}")]
    assert "return 503;" not in home[:home.index("}")] and "auth_basic" not in home[:home.index("}")]
    assert any("secret shop/missing does not exist" in w for w in result.minion_warnings["shop/pay"])


# ------------------------------------------------------------------------------------ dependency tracking

def test_the_auth_secret_is_referenced_with_the_flag_only() -> None:
    obj = ingress(basic("shop/users"))
    assert ingress_secrets(obj).names == ()
    assert ingress_secrets(obj, ingress_nginx=True).names == ("users",)
    assert ingress_secrets(ingress(basic("other/users")), ingress_nginx=True).names == ()
    assert ingress_secrets(ingress({N + "auth-secret": "users"}), ingress_nginx=True).names == ()
    claims = IngressModel(_compat_classes()).claims(obj)
    assert ("shop", "users") in claims.secrets
    assert ("shop", "users") not in IngressModel("nginx").claims(obj).secrets


def _compat_classes() -> IngressClasses:
    return IngressClasses("ingressctl", ingress_nginx_compat=True)


# ------------------------------------------------------------------------------- Opaque Secret reduction

def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def opaque(name: str = "users", **data: str) -> dict[str, Any]:
    return {"kind": "Secret", "apiVersion": "v1", "type": OPAQUE,
            "metadata": {"name": name, "namespace": "shop", "uid": "u", "resourceVersion": "1",
                         "labels": {"a": "b"}},
            "data": {k.replace("_", "."): b64(v) for k, v in data.items()}}


def test_the_transform_keeps_only_the_keys_ingress_nginx_reads_and_only_with_the_flag() -> None:
    secret = opaque(auth="carol:{SHA}x\n", ca_crt="PEM", password="app secret", config="x" * 10_000)
    kept = {"auth": b64("carol:{SHA}x\n"), "ca.crt": b64("PEM")}
    assert secret_transform(opaque=True)(secret)["data"] == kept
    assert "data" not in secret_transform()(secret)
    assert "data" not in secret_transform(opaque=True)(opaque(password="app secret"))
    assert reduce_data({"other": "x"}) is None and reduce_data("odd") == "odd"
    tls = {**secret, "type": "kubernetes.io/tls"}
    assert secret_transform(opaque=True)(tls) == secret_transform()(tls)


def test_the_handler_takes_opaque_secrets_with_the_flag_only() -> None:
    seen: list[Any] = []
    SecretHandler(seen.append).on_add(opaque(auth="x"))
    assert seen == []
    SecretHandler(seen.append, types=supported_types(SUPPORTED_SECRET_TYPES, True)).on_add(opaque(auth="x"))
    assert len(seen) == 1
    assert supported_types(SUPPORTED_SECRET_TYPES, False) is SUPPORTED_SECRET_TYPES


class DirManager:
    def __init__(self, root: Path) -> None:
        self.root = root

    def create_secret(self, name: str, content: bytes, mode: int = 0o600) -> str:
        path = self.root / name
        path.write_bytes(content)
        path.chmod(mode)
        return str(path)

    def delete_secret(self, name: str) -> None:
        (self.root / name).unlink(missing_ok=True)


def test_the_store_writes_the_auth_key_of_an_opaque_secret_with_the_flag(tmp_path: Path) -> None:
    store = LocalSecretStore(DirManager(tmp_path), ingress_nginx_compat=True)
    store.add_or_update_secret(opaque(auth="carol:{SHA}x\n"))
    ref = store.get_secret_reference("shop/users")
    assert (ref.secret_type, ref.error) == (OPAQUE, "")
    assert Path(ref.path).read_text() == "carol:{SHA}x\n" and Path(ref.path).stat().st_mode & 0o777 == 0o644
    store.add_or_update_secret(opaque("nokey"))
    assert store.get_secret_reference("shop/nokey") == SecretReference("shop/nokey", secret_type=OPAQUE)
    store.add_or_update_secret({**opaque("bad"), "data": {"auth": "not base64!"}})
    assert "not valid base64" in store.get_secret_reference("shop/bad").error
    assert store.delete_secret("shop/users") and not Path(ref.path).exists()
    plain = LocalSecretStore(DirManager(tmp_path))
    plain.add_or_update_secret(opaque(auth="carol:{SHA}x\n"))
    assert plain.get_secret_reference("shop/users").error == "secret is of the unsupported type Opaque"
