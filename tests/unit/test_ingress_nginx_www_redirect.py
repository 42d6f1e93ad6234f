"""ingress-nginx's `from-to-www-redirect` (`--ingress-nginx-compat`): the other name of a host is a weak claim
(owned only when no resource serves it as a host) and, while the Ingress owns it, a server redirecting to the
host with ingress-nginx's code, port and trailing-slash rule."""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.controller.configuration import Configuration
from ingressctl.controller.ingress_class import IngressClasses
from ingressctl.kinds.ingress.annotations_ingress_nginx import PREFIX
from ingressctl.kinds.ingress.config import generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.kinds.ingress.ingress_nginx.www_redirect import (
    certificate_names,
    certified_names,
    name_matches,
    other_name,
    www_redirect_names,
)
from ingressctl.kinds.ingress.model import IngressConfiguration
from ingressctl.secret_types import SecretReference
from tests.helpers import make_cert
from tests.unit.test_ingress_nginx_annotations import STATIC

N = PREFIX
TEMPLATES = TemplateExecutor()


def ingress(name: str, host: str, annotations: dict[str, str], created: str) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "shop", "uid": name, "creationTimestamp": created,
                         "annotations": {"kubernetes.io/ingress.class": "nginx", **annotations}},
            "spec": {"rules": [{"host": host, "http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}


WWW = {N + "from-to-www-redirect": "true"}
CLASS = "kubernetes.io/ingress.class"


@pytest.mark.parametrize(("host", "other"), [("a.example.com", "www.a.example.com"),
                                             ("www.a.example.com", "a.example.com"), ("*.example.com", ""),
                                             ("www.com", "com")])
def test_the_other_name(host: str, other: str) -> None:
    assert other_name(host) == other


def test_names_only_when_true_and_not_a_host_of_the_ingress() -> None:
    assert www_redirect_names(ingress("a", "a.example.com", WWW, "")) == ("www.a.example.com",)
    assert www_redirect_names(ingress("a", "a.example.com", {N + "from-to-www-redirect": "false"}, "")) == ()
    both = ingress("a", "a.example.com", WWW, "")
    both["spec"]["rules"].append({**both["spec"]["rules"][0], "host": "www.a.example.com"})
    assert www_redirect_names(both) == ()


def test_the_redirect_server() -> None:
    ex = IngressEx(ingress("app", "app.example.com", WWW, ""), {"app.example.com": True,
                                                                "www.app.example.com": True},
                   {backend_key("web", 80): ["10.0.0.1:80"]})
    cfg, _ = generate_nginx_config(ex, STATIC, ConfigParams())
    text = TEMPLATES.execute_ingress_template(cfg)
    (www,) = [s for s in cfg.servers if s.name == "www.app.example.com"]
    (m,) = cfg.value_maps
    assert (m.source, m.entries, m.default) == ("$request_uri", (("^(.*)/$", "$1"),), "$request_uri")
    assert f'return 308 "$scheme://app.example.com:$server_port{m.variable}";' in text
    assert not www.ssl and www.locations[0].path == "/"
    # the name lost to another resource: no server, a warning
    ex.valid_hosts["www.app.example.com"] = False
    cfg, warnings = generate_nginx_config(ex, STATIC, ConfigParams())
    assert [s.name for s in cfg.servers] == ["app.example.com"] and cfg.value_maps == ()
    assert f"annotation {N}from-to-www-redirect: host www.app.example.com is served by another resource; " \
           "no redirect from it to app.example.com" in warnings


@pytest.mark.parametrize(("name", "pattern", "covered"), [
    ("www.a.example.com", "www.a.example.com", True), ("WWW.a.example.com", "www.A.example.com", True),
    ("www.a.example.com", "*.a.example.com", True), ("a.example.com", "*.a.example.com", False),
    ("x.www.a.example.com", "*.a.example.com", False), ("www.a.example.com", "a.example.com", False)])
def test_certificate_names_cover_one_label_with_a_wildcard(name: str, pattern: str, covered: bool) -> None:
    assert name_matches(name, pattern) is covered


def with_tls(obj: dict[str, Any], host: str, secret: str) -> dict[str, Any]:
    obj["spec"]["tls"] = [{"hosts": [host], "secretName": secret}]
    return obj


def test_the_names_a_hosts_certificate_is_valid_for() -> None:
    both = make_cert("app.example.com", "www.app.example.com").secret("both", "shop")
    own = make_cert("app.example.com").secret("own", "shop")
    assert certificate_names(both) == ("app.example.com", "www.app.example.com")
    assert certificate_names(None) == () and certificate_names({"data": {"tls.crt": "not base64!"}}) == ()
    secrets = {"both": both, "own": own}
    assert certified_names(with_tls(ingress("a", "app.example.com", WWW, ""), "app.example.com", "both"),
                           secrets.get) == {"www.app.example.com"}
    assert certified_names(with_tls(ingress("a", "app.example.com", WWW, ""), "app.example.com", "own"),
                           secrets.get) == frozenset()
    assert certified_names(with_tls(ingress("a", "app.example.com", WWW, ""), "app.example.com", "gone"),
                           secrets.get) == frozenset()
    assert certified_names(with_tls(ingress("a", "app.example.com", {}, ""), "app.example.com", "both"),
                           secrets.get) == frozenset()


def test_the_redirect_server_over_tls_when_the_certificate_names_it() -> None:
    obj = with_tls(ingress("app", "app.example.com", WWW, ""), "app.example.com", "app-tls")
    ex = IngressEx(obj, {"app.example.com": True, "www.app.example.com": True},
                   {backend_key("web", 80): ["10.0.0.1:80"]},
                   secret_refs={"app-tls": SecretReference("shop/app-tls", "/secrets/shop-app-tls",
                                                           secret_type="kubernetes.io/tls")},
                   www_tls_names=frozenset({"www.app.example.com"}))
    cfg, warnings = generate_nginx_config(ex, STATIC, ConfigParams())
    (www,) = [s for s in cfg.servers if s.name == "www.app.example.com"]
    assert www.ssl and www.ssl_certificate == "/secrets/shop-app-tls" and not www.certificate_per_handshake
    assert not [w for w in warnings if "not valid for" in w]
    text = TEMPLATES.execute_ingress_template(cfg)
    assert text.count("ssl_certificate /secrets/shop-app-tls;") == 2
    # the certificate does not name it: plain HTTP only, and a warning
    ex.www_tls_names = frozenset()
    cfg, warnings = generate_nginx_config(ex, STATIC, ConfigParams())
    (www,) = [s for s in cfg.servers if s.name == "www.app.example.com"]
    assert not www.ssl
    assert f"annotation {N}from-to-www-redirect: the TLS certificate of host app.example.com is not valid " \
           "for www.app.example.com; HTTPS requests to www.app.example.com are not redirected" in warnings


def resource(changes: Any, key: str) -> IngressConfiguration:
    (res,) = [c.resource for c in changes if c.resource.key == key]
    assert isinstance(res, IngressConfiguration)
    return res


def test_a_weak_claim_loses_to_any_host_claim_and_never_configures_alone() -> None:
    cfg = Configuration(ingress_class=IngressClasses("ours", ingress_nginx_compat=True))
    cfg.set_startup_complete()
    changes, _ = cfg.add_or_update_ingress(ingress("a", "a.example.com", WWW, "2026-01-01T00:00:00Z"))
    assert resource(changes, "shop/a").valid_hosts == {"a.example.com": True, "www.a.example.com": True}
    # a newer Ingress serving the name takes it
    changes, problems = cfg.add_or_update_ingress(ingress("w", "www.a.example.com", {},
                                                          "2026-02-01T00:00:00Z"))
    assert resource(changes, "shop/a").valid_hosts == {"a.example.com": True, "www.a.example.com": False}
    assert resource(changes, "shop/w").valid_hosts == {"www.a.example.com": True} and problems == []
    # an Ingress that lost its host is not configured by its weak claim (one of ingressctl's own class: an
    # ingress-nginx one would share the host)
    changes, problems = cfg.add_or_update_ingress(ingress("b", "a.example.com", {**WWW, CLASS: "ours"},
                                                          "2026-03-01T00:00:00Z"))
    assert changes == [] and [p.key.ns_name for p in problems if p.key] == ["shop/b"]
    # when the serving Ingress goes, the weak claim takes the name again
    changes, _ = cfg.delete_ingress("shop/w")
    assert resource(changes, "shop/a").valid_hosts["www.a.example.com"] is True
