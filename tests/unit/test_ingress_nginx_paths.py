"""ingress-nginx's `use-regex` and `rewrite-target` (`--ingress-nginx-compat`): regex mode decided for the
host (every path of the Ingresses served together for it becomes `location ~* "^<path>"`, ordered by length),
`rewrite "(?i)<path>" <target> break;` where the target differs from the path, ingress-nginx's validation of
the target and of the paths, and `nginx.org/*` winning over both."""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.kinds.ingress.annotations_ingress_nginx import PREFIX
from ingressctl.kinds.ingress.config import (
    AnnotationError,
    generate_nginx_config,
    generate_nginx_config_for_mergeable,
)
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from tests.unit.test_ingress_nginx_annotations import OFF, STATIC

N = PREFIX
HOST = "app.example.com"
TEMPLATES = TemplateExecutor()
ENDPOINTS = {backend_key("web", 80): ["10.0.0.1:8080"], backend_key("api", 80): ["10.0.0.2:8080"],
             backend_key("errors", 80): ["10.0.0.3:8080"]}
Path = tuple[str, str, str]  # path, pathType, service


def ingress(annotations: dict[str, str], paths: list[Path], *, name: str = "app",
            default_backend: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"ingressClassName": "nginx", "rules": [{"host": HOST, "http": {"paths": [
        {"path": p, "pathType": t, "backend": {"service": {"name": s, "port": {"number": 80}}}}
        for p, t, s in paths]}}]}
    if default_backend:
        spec["defaultBackend"] = {"service": {"name": "errors", "port": {"number": 80}}}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "shop", "annotations": annotations}, "spec": spec}


def render(annotations: dict[str, str], paths: list[Path], *, static: Any = STATIC,
           default_backend: bool = False) -> tuple[str, list[str]]:
    ex = IngressEx(ingress(annotations, paths, default_backend=default_backend), {HOST: True}, ENDPOINTS)
    cfg, warnings = generate_nginx_config(ex, static, ConfigParams())
    return TEMPLATES.execute_ingress_template(cfg), warnings


def routing(text: str) -> list[str]:
    """The location, rewrite and proxy_pass lines, stripped."""
    return [line.strip() for line in text.splitlines()
            if line.strip().startswith(("location ", "rewrite ", "proxy_pass ", "return "))]


DOCS_EXAMPLE: list[Path] = [("/something(/|$)(.*)", "ImplementationSpecific", "web")]


def test_the_docs_rewrite_example_renders_ingress_nginx_s_location_and_rewrite() -> None:
    text, warnings = render({N + "rewrite-target": "/$2"}, DOCS_EXAMPLE)
    assert routing(text) == ['location ~* "^/something(/|$)(.*)" {',
                             'rewrite "(?i)/something(/|$)(.*)" "/$2" break;',
                             "proxy_pass http://shop-app-app.example.com-web-80;",
                             "location / {"]  # (the 404 for other paths)
    assert warnings == []


def test_regex_mode_covers_every_path_of_the_ingress_whatever_its_path_type() -> None:
    paths: list[Path] = [("/", "Prefix", "web"), ("/api", "Prefix", "api"),
                         ("/v1/[a-z]+", "ImplementationSpecific", "api"), ("/exact", "Exact", "web")]
    text, warnings = render({N + "use-regex": "true"}, paths)
    # by descending length, then descending path (ingress-nginx's sorts); `^/` is the root: no 404 fallback
    assert [line for line in routing(text) if line.startswith("location")] == [
        'location ~* "^/v1/[a-z]+" {', 'location ~* "^/exact" {', 'location ~* "^/api" {',
        'location ~* "^/" {']
    assert "rewrite" not in text and warnings == []
    # without use-regex: Kubernetes' path types
    plain, _ = render({N + "use-regex": "false"}, paths[:2])
    assert [line for line in routing(plain) if line.startswith("location")] == [
        "location / {", "location = /api {", "location /api/ {"]


def test_a_target_equal_to_the_path_is_no_rewrite_and_no_regex_mode() -> None:
    text, _ = render({N + "rewrite-target": "/api"}, [("/api", "Prefix", "api")])
    assert "rewrite" not in text and "~*" not in text
    assert "location = /api {" in text and "location /api/ {" in text
    # one path differs: regex mode for all, a rewrite only where the target differs
    text, _ = render({N + "rewrite-target": "/api"}, [("/api", "Prefix", "api"), ("/old", "Prefix", "web")])
    assert routing(text)[:5] == ['location ~* "^/old" {', 'rewrite "(?i)/old" "/api" break;',
                                 "proxy_pass http://shop-app-app.example.com-web-80;",
                                 'location ~* "^/api" {', "proxy_pass http://shop-app-app.example.com-api-80;"]


def test_the_whole_uri_is_replaced_and_the_default_backend_root_is_a_path_too() -> None:
    text, _ = render({N + "rewrite-target": "/"}, [("/app", "Prefix", "web")], default_backend=True)
    assert routing(text) == ['location ~* "^/app" {', 'rewrite "(?i)/app" "/" break;',
                             "proxy_pass http://shop-app-app.example.com-web-80;",
                             "location / {", "proxy_pass http://shop-app--errors-80;"]  # `/` is the target
    text, _ = render({N + "rewrite-target": "/new"}, [("/app", "Prefix", "web")], default_backend=True)
    assert routing(text)[3:] == ["location / {", 'rewrite "(?i)/" "/new" break;',
                                 "proxy_pass http://shop-app--errors-80;"]


@pytest.mark.parametrize("target", ["/$1", "$1", "/new/$2/x", "/$host/a", "/a:b~c.d_e-f", "/",
                                    "https://other.example.com/x"])  # (NGINX: a redirect, as ingress-nginx)
def test_targets_ingress_nginx_accepts(target: str) -> None:
    tr = translate({N + "rewrite-target": target})
    assert tr.problems == () and tr.overrides["rewrite_target"] == target


@pytest.mark.parametrize(("target", "detail"), [
    ("/a b", "must be a URI of letters"), ("/a;b", "must be a URI"), ('/a"b', "must be a URI"),
    ("/a?b=1", "must be a URI"), ("/{x}", "must be a URI"),
    ("/$nosuchvar", "unknown NGINX variable(s): $nosuchvar"),
    ("/a/$", "unknown NGINX variable(s): $")])
def test_targets_ingress_nginx_refuses_reject_the_ingress(target: str, detail: str) -> None:
    with pytest.raises(AnnotationError) as e:
        render({N + "rewrite-target": target}, [("/", "Prefix", "web")])
    assert N + "rewrite-target" in str(e.value) and detail in str(e.value)


def test_use_regex_takes_go_booleans_and_refuses_others() -> None:
    assert translate({N + "use-regex": "True"}).overrides["ingress_nginx_use_regex"] is True
    assert translate({N + "use-regex": "0"}).overrides["ingress_nginx_use_regex"] is False
    with pytest.raises(AnnotationError, match="use-regex"):
        render({N + "use-regex": "yes"}, [("/", "Prefix", "web")])


def test_regex_paths_need_implementation_specific_and_must_compile() -> None:
    text, warnings = render({N + "use-regex": "true"}, [
        ("/a.*", "Prefix", "web"), ("/b(", "ImplementationSpecific", "web"),
        ("/ok/.+", "ImplementationSpecific", "api")])
    assert warnings == [
        "path '/a.*' of host app.example.com cannot be used with pathType Prefix (ingress-nginx's "
        "strict-validate-path-type: a regular expression needs pathType ImplementationSpecific); ignored",
        "path '/b(' of host app.example.com is not a valid regular expression (missing ), unterminated "
        "subpattern at position 2); ignored"]
    assert [line for line in routing(text) if line.startswith("location")] == [
        'location ~* "^/ok/.+" {', "location / {"]


def test_quotes_and_braces_in_regex_paths_stay_inside_the_argument() -> None:
    text, _ = render({N + "use-regex": "true"}, [('/a{2}"b', "ImplementationSpecific", "web")])
    assert 'location ~* "^/a{2}\\"b" {' in text


def test_nginx_org_annotations_win_with_a_warning() -> None:
    paths: list[Path] = [("/api", "ImplementationSpecific", "api")]
    text, warnings = render({N + "use-regex": "true", "nginx.org/path-regex": "case_sensitive"}, paths)
    assert 'location ~ "^/api" {' in text
    assert warnings == [f"annotation nginx.org/path-regex wins over {N}use-regex; {N}use-regex is ignored"]
    text, warnings = render({N + "rewrite-target": "/x", "nginx.org/rewrite-target": "/y"}, paths)
    assert 'rewrite "^/api" "/y" break;' in text and "~*" not in text
    assert any("nginx.org/rewrite-target wins over " + N + "rewrite-target" in w for w in warnings)
    text, warnings = render({N + "rewrite-target": "/x", "nginx.org/rewrites": "serviceName=api rewrite=/v2"},
                            paths)
    assert "rewrite " not in text and "~*" not in text
    assert "proxy_pass http://shop-app-app.example.com-api-80/v2;" in text
    assert f"annotation nginx.org/rewrites wins over {N}rewrite-target; {N}rewrite-target is ignored" \
        in warnings


def test_without_the_flag_the_annotations_change_nothing() -> None:
    paths: list[Path] = [("/api", "Prefix", "api")]
    assert render({N + "use-regex": "true", N + "rewrite-target": "/$1"}, paths, static=OFF)[0] == \
        render({}, paths, static=OFF)[0]


def test_regex_mode_is_host_wide_over_a_master_and_its_minions() -> None:
    master = ingress({"nginx.org/mergeable-ingress-type": "master"}, [], name="shop")
    master["spec"]["rules"][0].pop("http")
    regexes = ingress({"nginx.org/mergeable-ingress-type": "minion", N + "use-regex": "true"},
                      [("/v[0-9]+/", "ImplementationSpecific", "api")], name="api")
    plain = ingress({"nginx.org/mergeable-ingress-type": "minion"}, [("/web", "Prefix", "web")], name="web")
    result = generate_nginx_config_for_mergeable(MergeableIngresses(
        IngressEx(master, {HOST: True}, ENDPOINTS),
        [IngressEx(m, {HOST: True}, ENDPOINTS, valid_minion_paths={p["path"]: True
                                                                  for r in m["spec"]["rules"]
                                                                  for p in r["http"]["paths"]})
         for m in (plain, regexes)]), STATIC, ConfigParams())
    text = TEMPLATES.execute_ingress_template(result.config)
    assert [line for line in routing(text) if line.startswith("location")] == [
        'location ~* "^/v[0-9]+/" {', 'location ~* "^/web" {', "location / {"]
    assert result.warnings == [] and result.minion_warnings == {}
    # without the regex minion the plain one keeps Kubernetes' Prefix semantics
    alone = generate_nginx_config_for_mergeable(MergeableIngresses(
        IngressEx(master, {HOST: True}, ENDPOINTS),
        [IngressEx(plain, {HOST: True}, ENDPOINTS, valid_minion_paths={"/web": True})]),
        STATIC, ConfigParams())
    assert "location = /web {" in TEMPLATES.execute_ingress_template(alone.config)
