"""ingress-nginx's CORS annotations (`enable-cors`, `cors-*`) with `--ingress-nginx-compat`: its validation
(and its parser's skips and fallbacks), its defaults, the rendered lines, a CORS Policy winning, minions."""

from __future__ import annotations

import contextlib

import pytest

from ingressctl.configs.configmaps import ConfigParams
from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.config import generate_nginx_config_for_mergeable
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.kinds.ingress.ingress_nginx import cors_values as cv
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.kinds.ingress.validation import validate_ingress
from ingressctl.policies.base import ResolvedPolicy
from tests.unit.test_ingress_nginx_annotations import OFF, STATIC, TEMPLATES, N, ingress, render

ON = {N + "enable-cors": "true"}


def test_enable_cors_alone_gets_ingress_nginx_defaults_on_every_location() -> None:
    text, warnings = render(ON)
    assert warnings == []
    for line in ('add_header Access-Control-Allow-Origin "*" always;',
                 'add_header Access-Control-Allow-Credentials "true" always;',
                 'add_header Access-Control-Allow-Methods "GET, PUT, POST, DELETE, PATCH, OPTIONS" always;',
                 'add_header Access-Control-Allow-Headers "DNT,Keep-Alive,User-Agent,X-Requested-With,'
                 'If-Modified-Since,Cache-Control,Content-Type,Range,Authorization" always;',
                 'add_header Access-Control-Max-Age "1728000" always;',
                 "if ($request_method = OPTIONS) {", "return 204;",
                 "proxy_hide_header Access-Control-Allow-Origin;"):
        assert text.count(line) == 3, line   # `/`, `= /api`, `/api/`
    assert "add_header Access-Control-Expose-Headers" not in text and "map $http_origin" not in text
    assert "Vary" not in text
    assert render(ON, OFF)[0] == render({}, OFF)[0]   # without the flag: not read


LISTED = {**ON, N + "cors-allow-origin": "https://a.example.com, http://*.b.example.com:8080, null",
          N + "cors-expose-headers": "X-A", N + "cors-allow-credentials": "false", N + "cors-max-age": "60"}


def http_part(text: str) -> str:
    return text.split("\nserver {")[0].split("}\nmap", 1)[1]


def test_a_list_of_origins_is_one_anchored_case_insensitive_map_echoing_the_origin() -> None:
    text, _ = render(LISTED)
    assert ('    "~*^((https://a\\\\.example\\\\.com)|(http://[A-Za-z0-9\\\\-]+\\\\.b\\\\.example\\\\.com:8080)'
            '|(null))$" $http_origin;') in text
    assert text.count("map $http_origin $ingressctl_cors_") == 1   # one http item for the Ingress
    assert 'add_header Vary "Origin" always;' in text
    assert "_allow_credentials" not in text and '"~." "X-A";' in text and '"~." "60";' in text
    assert '"~^OPTIONS:." 1;' in text
    assert http_part(render(LISTED, name="other")[0]) == http_part(text)   # named by the settings only


@pytest.mark.parametrize(("name", "value"), [
    ("enable-cors", "yes"), ("cors-allow-credentials", "maybe"), ("cors-max-age", "1.5"),
    ("cors-allow-origin", "https://a.example.com/path"), ("cors-allow-origin", "https://a.example.com,*"),
    ("cors-allow-origin", "https://$host"), ("cors-allow-origin", 'https://a.com"; evil'),
    ("cors-allow-methods", "GET;POST"), ("cors-allow-methods", "GET\nPOST"), ("cors-allow-headers", "X-A; b"),
    ("cors-allow-headers", "X-A:1"), ("cors-expose-headers", "X-$a"), ("cors-expose-headers", "{"),
])
def test_values_ingress_nginx_refuses_reject_the_ingress(name: str, value: str) -> None:
    errors = [str(e) for e in validate_ingress(ingress({**ON, N + name: value}), ingress_nginx_compat=True)]
    assert len(errors) == 1 and f"annotations.{N}{name}: Invalid value" in errors[0], errors


def test_origins_its_parser_skips_are_skipped_with_a_warning() -> None:
    tr = translate({**ON, N + "cors-allow-origin": "https://a.example.com, a.example.com"})
    assert tr.problems == () and tr.cors is not None and tr.cors.origins == ("https://a.example.com",)
    entry = next(e for e in tr.report if e.key == N + "cors-allow-origin")
    assert entry.status is Status.APPROXIMATED and "a.example.com skipped" in entry.reason
    none_left = translate({**ON, N + "cors-allow-origin": "example.com"})
    assert none_left.cors is None and "no origin is left" in none_left.warnings[0]
    assert cv.origins(" * ") == cv.Origins(("*",), ())   # `*` in a list fails its validator (below)


def test_fallbacks_of_its_parser_are_defaults_with_a_warning() -> None:
    tr = translate({**ON, N + "cors-allow-methods": "GET,  POST", N + "cors-expose-headers": "X-A,  X-B"})
    assert tr.cors is not None and tr.cors.methods == cv.DEFAULT_METHODS and tr.cors.expose == ""
    assert {e.key: e.status for e in tr.report}[N + "cors-allow-methods"] is Status.APPROXIMATED


def test_cors_keys_without_enable_cors_are_ignored_with_a_warning() -> None:
    for anns in ({N + "cors-allow-origin": "https://a.example.com"},
                 {N + "enable-cors": "false", N + "cors-max-age": "5"}):
        tr = translate(anns)
        assert tr.cors is None and "ignored (nginx.ingress.kubernetes.io/enable-cors is not true)" in \
            tr.warnings[0]
        assert "Access-Control" not in render(anns)[0]


def test_the_validators_are_linear_on_hostile_input() -> None:
    """Exponential backtracking would hang here (hours for these lengths); linear parsers return at once."""
    for text in ("a," * 5000 + "!", "a:1" * 3000 + "!", ",," * 5000 + "!", "*" * 5000 + "!",
                 "GET" * 5000 + "!", "a, " * 5000 + "!"):
        for parse in (cv.origins, cv.methods, cv.headers, cv.expose_headers):
            with contextlib.suppress(ValueError):
                parse(text)


def test_server_headers_are_repeated_in_the_location() -> None:
    text, _ = render({**ON, "nginx.org/hsts": "true", "nginx.org/proxy-hide-headers": "X-Secret"}, tls=True)
    loc = text[text.index("location / {"):]
    loc = loc[:loc.index("proxy_pass")]
    assert 'add_header Strict-Transport-Security "$hsts_header_val" always;' in loc
    assert "proxy_hide_header X-Secret;" in loc


def test_a_cors_policy_of_nginx_org_policies_wins_with_a_warning() -> None:
    from ingressctl.kinds.ingress.config import generate_nginx_config

    ing = ingress({**ON, "nginx.org/policies": "cors-policy"})
    policy = {"apiVersion": "k8s.nginx.org/v1", "kind": "Policy",
              "metadata": {"name": "cors-policy", "namespace": "shop"},
              "spec": {"cors": {"allowOrigin": ["https://policy.example.com"]}}}
    ex = IngressEx(ing, {"app.example.com": True}, {backend_key("web", 80): ["10.0.0.1:8080"],
                                                    backend_key("api", 80): ["10.0.0.2:8080"]},
                   policies=(ResolvedPolicy("shop/cors-policy", policy),))
    cfg, warnings = generate_nginx_config(ex, STATIC, ConfigParams())
    text = TEMPLATES.execute_ingress_template(cfg)
    assert "https://policy.example.com" in text and '"1728000"' not in text
    assert any("CORS Policy shop/cors-policy) wins over nginx.ingress.kubernetes.io/enable-cors" in w
               for w in warnings)


def test_a_minions_own_cors_applies_to_its_locations_the_masters_to_the_others() -> None:
    master = ingress({**ON, "nginx.org/mergeable-ingress-type": "master"}, name="shop")
    master["spec"]["rules"][0]["http"] = {"paths": []}
    minions = []
    for name, path, anns in (("web", "/", {}), ("api", "/api", {N + "cors-allow-origin": "https://x.example"})):
        m = ingress({"nginx.org/mergeable-ingress-type": "minion", **({**ON, **anns} if anns else {})},
                    name=name)
        m["spec"]["rules"][0]["http"]["paths"] = [p for p in m["spec"]["rules"][0]["http"]["paths"]
                                                  if p["path"] == path]
        minions.append(IngressEx(m, {"app.example.com": True}, {backend_key("web", 80): ["10.0.0.1:1"],
                                                                backend_key("api", 80): ["10.0.0.2:1"]},
                                 valid_minion_paths={path: True}))
    result = generate_nginx_config_for_mergeable(
        MergeableIngresses(IngressEx(master, {"app.example.com": True}, {}), minions), STATIC, ConfigParams())
    text = TEMPLATES.execute_ingress_template(result.config)
    web = text[text.index("location / {"):text.index("location = /api")]
    api = text[text.index("location = /api"):]
    assert 'add_header Access-Control-Allow-Origin "*" always;' in web and "$ingressctl_cors_" not in web
    assert "add_header Access-Control-Allow-Origin $ingressctl_cors_" in api and '"*"' not in api
