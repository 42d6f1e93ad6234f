"""ingress-nginx's canary Ingresses (`--ingress-nginx-compat`): a canary is a child of the regular Ingress
owning its host, never a host collision; its paths turn the primary's locations into a header -> cookie ->
weight choice of upstream (NGINX `map`s and `split_clients`), with ingress-nginx's values and precedence; a
canary without a primary is a `Rejected` problem and changes nothing."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.controller.configuration import Configuration
from ingressctl.controller.ingress_class import IngressClasses
from ingressctl.kinds.ingress.annotations_ingress_nginx import PREFIX
from ingressctl.kinds.ingress.config import generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.kinds.ingress.ingress_nginx import canary
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.kinds.ingress.model import IngressConfiguration
from tests.unit.test_ingress_nginx_annotations import STATIC

N = PREFIX
HOST = "app.example.com"
TEMPLATES = TemplateExecutor()
ENDPOINTS = {backend_key("web", 80): ["10.0.0.1:80"], backend_key("web-v2", 80): ["10.0.0.2:80"]}
PRIMARY_UPSTREAM = "shop-app-app.example.com-web-80"
CANARY_UPSTREAM = "shop-app-canary-app.example.com-web-v2-80"


def ingress(name: str, annotations: dict[str, str], service: str, *, path: str = "/",
            path_type: str = "Prefix", host: str = HOST,
            created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "shop", "uid": name, "creationTimestamp": created,
                         "annotations": {"kubernetes.io/ingress.class": "nginx", **annotations}},
            "spec": {"rules": [{"host": host, "http": {"paths": [
                {"path": path, "pathType": path_type,
                 "backend": {"service": {"name": service, "port": {"number": 80}}}}]}}]}}


def render(canary_annotations: dict[str, str], *, primary_annotations: dict[str, str] | None = None,
           **kw: Any) -> str:
    primary = ingress("app", primary_annotations or {}, "web")
    c = ingress("app-canary", {N + "canary": "true", **canary_annotations}, "web-v2", **kw)
    ex = IngressEx(primary, {HOST: True}, ENDPOINTS,
                   canaries=(IngressEx(c, {HOST: True}, ENDPOINTS),))
    cfg, warnings = generate_nginx_config(ex, STATIC, ConfigParams())
    assert warnings == []
    return TEMPLATES.execute_ingress_template(cfg)


def block(text: str, start: str) -> list[str]:
    lines = text[text.index(start):].splitlines()
    return [line.strip() for line in lines[:lines.index("}") + 1]]


def test_header_then_cookie_then_weight_as_ingress_nginx_s_balancer() -> None:
    text = render({N + "canary-weight": "30", N + "canary-by-header": "X-Canary",
                   N + "canary-by-cookie": "beta"})
    var = "$inn_canary_" + hashlib.sha1(b"shop/app/app.example.com/ /").hexdigest()[:16]
    assert f'proxy_pass "http://{var}_header";' in text
    assert block(text, "map $http_x_canary") == [
        f"map $http_x_canary {var}_header {{", f'"~^always$" "{CANARY_UPSTREAM}";',
        f'"~^never$" "{PRIMARY_UPSTREAM}";', f'default "{var}_cookie";', "}"]
    assert block(text, "map $cookie_beta") == [
        f"map $cookie_beta {var}_cookie {{", f'"~^always$" "{CANARY_UPSTREAM}";',
        f'"~^never$" "{PRIMARY_UPSTREAM}";', f'default "{var}_weight";', "}"]
    assert block(text, "split_clients") == [
        f"split_clients $request_id {var}_weight {{", f'30% "{CANARY_UPSTREAM}";',
        f'* "{PRIMARY_UPSTREAM}";', "}"]
    assert f"upstream {CANARY_UPSTREAM} {{" in text and f"upstream {PRIMARY_UPSTREAM} {{" in text


def test_header_value_is_an_exact_case_sensitive_match_and_pattern_a_pcre() -> None:
    text = render({N + "canary-by-header": "X-Version", N + "canary-by-header-value": "v2.1"})
    assert f'"~^v2[.]1$" "{CANARY_UPSTREAM}";' in text and "~^never$" not in text
    assert f'default "{PRIMARY_UPSTREAM}";' in text and "split_clients" not in text
    text = render({N + "canary-by-header": "X-Version", N + "canary-by-header-pattern": "^v(2|3)"})
    assert f'"~^$" "{PRIMARY_UPSTREAM}";' in text and f'"~^v(2|3)" "{CANARY_UPSTREAM}";' in text
    # the value wins over the pattern, as ingress-nginx
    text = render({N + "canary-by-header": "X-Version", N + "canary-by-header-value": "x",
                   N + "canary-by-header-pattern": "^v"})
    assert '"~^x$"' in text and "~^v" not in text


@pytest.mark.parametrize(("weight", "total", "percent"), [
    ("30", "", "30"), ("1", "3", "1"), ("1", "1000", "0.1"), ("250", "1000", "25"), ("1", "50", "1"),
    ("2", "30000", "0.01")])  # a total below 100 is ignored (1 of 100), as ingress-nginx
def test_weights_and_totals(weight: str, total: str, percent: str) -> None:
    anns = {N + "canary-weight": weight, **({N + "canary-weight-total": total} if total else {})}
    text = render(anns)
    assert f'{percent}% "{CANARY_UPSTREAM}";' in text


def test_weight_zero_and_full() -> None:
    assert "split_clients" not in render({N + "canary-weight": "0"})
    assert f"proxy_pass http://{PRIMARY_UPSTREAM};" in render({N + "canary-weight": "0"})
    full = render({N + "canary-weight": "100"})
    assert "split_clients" not in full and f"proxy_pass http://{CANARY_UPSTREAM};" in full


def test_only_paths_with_the_same_path_and_type_are_split() -> None:
    text = render({N + "canary-weight": "50"}, path="/other")
    assert "split_clients" not in text and CANARY_UPSTREAM not in text
    text = render({N + "canary-weight": "50"}, path_type="Exact")
    assert "split_clients" not in text
    warnings = canary.canary_warnings(ingress("app", {}, "web"),
                                      ingress("c", {N + "canary": "true", N + "affinity": "cookie"}, "w",
                                              path="/other"), {HOST: True, "b.example.com": False})
    assert warnings == [
        f"canary path /other (Prefix) of host {HOST} has no path with the same pathType in the primary "
        "Ingress; ignored",
        "canary host b.example.com is not served by the primary Ingress; ignored",
        f"annotation(s) {N}affinity of a canary Ingress are not applied: its requests take the primary "
        "Ingress's location settings (as ingress-nginx)"]


def test_the_request_keeps_the_primary_s_location_settings() -> None:
    text = render({N + "canary-weight": "50"},
                  primary_annotations={N + "proxy-read-timeout": "7", N + "use-regex": "true"})
    loc = block(text, 'location ~* "^/"')
    assert "proxy_read_timeout 7s;" in loc and any("$inn_canary_" in line for line in loc)


@pytest.mark.parametrize(("key", "value", "detail"), [
    ("canary-weight", "-1", "must be between 0 and"), ("canary-weight", "ten", "must be an integer"),
    ("canary-by-header", "X.Canary", "must be a header name"),
    ("canary-by-cookie", "my-cookie", "cookie name"),
    ("canary-by-header-value", "a b", "must hold only"), ("canary-by-header-pattern", "a(", "not a valid"),
    ("canary-by-header-pattern", 'a"b', "must hold only")])
def test_values_ingress_nginx_refuses_or_no_variable_can_name_are_refused(key: str, value: str,
                                                                          detail: str) -> None:
    errors = translate({N + "canary": "true", N + key: value}).errors
    assert len(errors) == 1 and N + key in errors[0] and detail in errors[0]
    c = ingress("c", {N + "canary": "true", N + key: value}, "w")
    assert canary.canary_warnings(ingress("app", {}, "web"), c, {HOST: True})[0].startswith(
        "the canary is not applied: annotation " + N + key)


def test_canary_annotations_without_canary_true_reject_the_ingress() -> None:
    (error,) = translate({N + "canary-weight": "10"}).errors
    assert "configured but not enabled" in error
    assert translate({N + "canary": "false"}).errors == ()


def configuration(compat: bool = True) -> Configuration:
    classes = IngressClasses("ours", ingress_nginx_compat=True) if compat else IngressClasses("nginx")
    cfg = Configuration(ingress_class=classes)
    cfg.set_startup_complete()
    return cfg


def test_a_canary_is_a_child_of_the_primary_not_a_host_collision() -> None:
    cfg = configuration()
    c = ingress("app-canary", {N + "canary": "true", N + "canary-weight": "10"}, "web-v2")
    _, problems = cfg.add_or_update_ingress(c)
    assert [(p.reason, p.message) for p in problems] == [(
        "Rejected", f"canary Ingress ({N}canary): no regular Ingress of the class serves host {HOST}; a "
                    "canary needs a primary Ingress with the same host and path")]
    changes, problems = cfg.add_or_update_ingress(ingress("app", {}, "web", created="2026-02-01T00:00:00Z"))
    (change,) = changes
    res = change.resource
    assert isinstance(res, IngressConfiguration) and res.key == "shop/app" and res.valid_hosts == {HOST: True}
    assert [m.key for m in res.canaries] == ["shop/app-canary"] and res.warnings == []
    # the canary's update re-renders the primary
    changes, _ = cfg.add_or_update_ingress({
        **c, "metadata": {**c["metadata"], "annotations": {**c["metadata"]["annotations"],
                                                          N + "canary-weight": "20"}}})
    assert [ch.resource.key_with_kind.ns_name for ch in changes] == ["shop/app"]
    # without --ingress-nginx-compat it is an Ingress like any other: a host collision
    plain = configuration(compat=False)
    plain.add_or_update_ingress(ingress("app", {}, "web", created="2026-02-01T00:00:00Z"))
    _, problems = plain.add_or_update_ingress(c)
    assert [p.reason for p in problems] == ["Rejected"] and "taken" in problems[0].message
