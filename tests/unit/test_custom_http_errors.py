"""nginx.org/custom-http-errors: parsing (codes, 4xx/5xx, NGINX's refused 499), the server-level rendering
for a standalone or master Ingress, the per-location rendering for a minion, and the no-op warnings."""

from __future__ import annotations

import pytest

from ingressctl.configs import directive_values as dv
from ingressctl.configs.configmaps import ConfigParams
from ingressctl.kinds.ingress.config import generate_nginx_config_for_mergeable
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from tests.unit.test_configs_annotations import HOST, STATIC, TEMPLATES, cafe, render
from tests.unit.test_configs_annotations_nic55 import check_annotations
from tests.unit.test_configs_ingress import block, ingress, path, rule


def test_parse() -> None:
    assert dv.parse_custom_http_errors("500, 404, 404") == (404, 500)
    five = dv.parse_custom_http_errors("5XX,")
    assert five[0] == 500 and five[-1] == 599 and len(five) == 100
    four = dv.parse_custom_http_errors("4xx")
    assert 499 not in four and len(four) == 99
    assert len(dv.parse_custom_http_errors("4xx, 5xx, 300")) == 200
    for bad in ("", " , ", "abc", "200", "600", "499", "4xy", "-404", "4 04"):
        with pytest.raises(ValueError):
            dv.parse_custom_http_errors(bad)
    assert len(check_annotations({"nginx.org/custom-http-errors": "6xx"})) == 1


def test_server_level_with_a_default_backend() -> None:
    ex = cafe({"nginx.org/custom-http-errors": "404, 502"})
    ex.ingress["spec"]["defaultBackend"] = {"service": {"name": "sorry", "port": {"number": 80}}}
    ex.endpoints[backend_key("sorry", 80)] = ["10.0.0.9:80"]
    text, warnings = render(ex)
    assert warnings == []
    server = block(text, "server")
    assert "    proxy_intercept_errors on;\n    error_page 404 502 @custom_default_backend;\n" in server
    named = block(text, "location @custom_default_backend")
    assert "proxy_intercept_errors off;" in named and "proxy_pass http://default-cafe--sorry-80;" in named
    # Without a defaultBackend: nothing rendered, a warning.
    text, warnings = render(cafe({"nginx.org/custom-http-errors": "404"}))
    assert "error_page" not in text and "custom_default_backend" not in text
    assert warnings == ["annotation nginx.org/custom-http-errors is set but spec.defaultBackend is not; it "
                        "has no effect without a default backend to send the intercepted responses to"]


def test_minion_locations() -> None:
    master = ingress("shop", annotations={"nginx.org/mergeable-ingress-type": "master"},
                     rules=[{"host": HOST}])
    master["spec"]["defaultBackend"] = {"service": {"name": "sorry", "port": {"number": 80}}}
    minion = ingress("tea", annotations={"nginx.org/mergeable-ingress-type": "minion",
                                         "nginx.org/custom-http-errors": "503"},
                     rules=[rule(HOST, path("/tea", "tea"))])
    result = generate_nginx_config_for_mergeable(MergeableIngresses(
        IngressEx(master, {HOST: True}, {backend_key("sorry", 80): ["10.0.0.9:80"]}),
        [IngressEx(minion, {HOST: True}, {backend_key("tea", 80): ["10.0.0.1:80"]},
                   valid_minion_paths={"/tea": True})]), STATIC, ConfigParams())
    text = TEMPLATES.execute_ingress_template(result.config)
    assert "        error_page 503 @custom_default_backend;\n" in block(text, "location /tea/")
    assert "location @custom_default_backend" in text and not result.minion_warnings.get("default/tea")
    # A master without a defaultBackend: the minion's annotation does nothing, with a warning.
    del master["spec"]["defaultBackend"]
    result = generate_nginx_config_for_mergeable(MergeableIngresses(
        IngressEx(master, {HOST: True}, {}),
        [IngressEx(minion, {HOST: True}, {backend_key("tea", 80): ["10.0.0.1:80"]},
                   valid_minion_paths={"/tea": True})]), STATIC, ConfigParams())
    assert "custom_default_backend" not in TEMPLATES.execute_ingress_template(result.config)
    assert "the master has no spec.defaultBackend" in result.minion_warnings["default/tea"][0]
