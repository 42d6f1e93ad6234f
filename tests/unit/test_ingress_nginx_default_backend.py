"""ingress-nginx's `default-backend` (`--ingress-nginx-compat`): a Service with ready endpoints answers for
the Ingress's backends without endpoints and takes its `custom-http-errors` (instead of
`spec.defaultBackend`); without ready endpoints it counts for nothing, as in ingress-nginx."""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.kinds.ingress.annotations_ingress_nginx import PREFIX
from ingressctl.kinds.ingress.config import AnnotationError, generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.kinds.ingress.ingress_nginx.default_backend import service_of, service_port
from tests.unit.test_ingress_nginx_annotations import OFF, STATIC

N = PREFIX
HOST = "app.example.com"
TEMPLATES = TemplateExecutor()
FALLBACK = "shop-app--fallback-8080"


def ingress(annotations: dict[str, str], *, default_backend: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"rules": [{"host": HOST, "http": {"paths": [
        {"path": "/down", "pathType": "Prefix",
         "backend": {"service": {"name": "down", "port": {"number": 80}}}},
        {"path": "/", "pathType": "Prefix",
         "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}
    if default_backend:
        spec["defaultBackend"] = {"service": {"name": "errors", "port": {"number": 80}}}
    return {"metadata": {"name": "app", "namespace": "shop", "annotations": annotations}, "spec": spec}


def render(annotations: dict[str, str], *, fallback: list[str] | None = None, static: Any = STATIC,
           default_backend: bool = False) -> tuple[str, list[str]]:
    endpoints = {backend_key("down", 80): [], backend_key("web", 80): ["10.0.0.1:80"],
                 backend_key("errors", 80): ["10.0.0.3:80"],
                 backend_key("fallback", 8080): ["10.0.0.9:8080"] if fallback is None else fallback}
    ex = IngressEx(ingress(annotations, default_backend=default_backend), {HOST: True}, endpoints,
                   default_backend=("fallback", 8080))
    cfg, warnings = generate_nginx_config(ex, static, ConfigParams())
    return TEMPLATES.execute_ingress_template(cfg), warnings


def test_a_backend_without_endpoints_proxies_to_the_default_backend() -> None:
    text, warnings = render({N + "default-backend": "fallback"})
    assert f"proxy_pass http://{FALLBACK};" in text and "shop-app-app.example.com-down-80" not in text
    assert "proxy_pass http://shop-app-app.example.com-web-80;" in text
    assert f"upstream {FALLBACK} {{" in text and "server 10.0.0.9:8080" in text and warnings == []


def test_custom_http_errors_go_to_it_instead_of_spec_default_backend() -> None:
    text, _ = render({N + "default-backend": "fallback", N + "custom-http-errors": "404,503"},
                     default_backend=True)
    assert "error_page 404 503 @custom_default_backend;" in text
    named = text[text.index("location @custom_default_backend"):]
    assert f"proxy_pass http://{FALLBACK};" in named.split("}")[0]


def test_without_ready_endpoints_it_counts_for_nothing() -> None:
    text, _ = render({N + "default-backend": "fallback"}, fallback=[])
    assert FALLBACK not in text and "proxy_pass http://shop-app-app.example.com-down-80;" in text


def test_without_the_annotation_or_the_flag_nothing_changes() -> None:
    assert FALLBACK not in render({})[0]
    assert FALLBACK not in render({N + "default-backend": "fallback"}, static=OFF)[0]


@pytest.mark.parametrize("value", ["Fallback", "ns/fallback", "a_b", "-x"])
def test_invalid_service_names_reject_the_ingress(value: str) -> None:
    with pytest.raises(AnnotationError, match=r"default-backend.*must be a Service name"):
        render({N + "default-backend": value})
    assert service_of(ingress({N + "default-backend": value})) == ""


def test_the_service_s_first_port() -> None:
    assert service_of(ingress({N + "default-backend": "fallback"})) == "fallback"
    assert service_port({"spec": {"ports": [{"port": 8080, "name": "http"}, {"port": 9090}]}}) == 8080
    assert service_port({"spec": {"ports": []}}) is None
