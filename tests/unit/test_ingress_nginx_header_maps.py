"""ingress-nginx's `custom-headers` and `auth-proxy-set-headers`: the reference syntax, the header checks
(ingress-nginx's for response headers, stricter for the auth subrequest's values, injection attempts
included), the rendered `add_header ... always` and `proxy_set_header` lines (a literal `$`, the server's
headers repeated, minions), the 503 of an unusable ConfigMap, the dependency tracking (claims, the
Configuration's index) and the ConfigMap informer's transform and handler."""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.controller.config_map_cache import (
    CONFIGMAP_KIND,
    DROPPED,
    MAX_DATA_BYTES,
    ConfigMapHandler,
    config_map_transform,
)
from ingressctl.controller.configuration import Configuration
from ingressctl.controller.ingress_class import IngressClasses
from ingressctl.controller.ingress_nginx_configmaps import config_map_kind_factory
from ingressctl.controller.status import StatusWriters
from ingressctl.controller.task import Task
from ingressctl.k8s.store import DeletedFinalStateUnknown
from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.config import generate_nginx_config, generate_nginx_config_for_mergeable
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.kinds.ingress.ingress_nginx import header_maps as hm
from ingressctl.kinds.ingress.ingress_nginx.configmap import translate_config_map, with_ingress_nginx_keys
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.kinds.ingress.model import IngressModel

N = "nginx.ingress.kubernetes.io/"
STATIC = StaticConfigParams(run_dir="/run/ic", conf_dir="/etc/ic", ingress_nginx_compat=True)
TEMPLATES = TemplateExecutor()
ENDPOINTS = {backend_key("web", 80): ["10.0.0.1:8080"]}
ALLOWED = ConfigParams(ingress_nginx_allowed_response_headers=("X-Frame-Options", "X-Price", "X-Empty"))
MAPS: dict[str, dict[str, Any] | None] = {
    "shop/headers": {"data": {"X-Frame-Options": "DENY", "X-Price": "$5 {net}"}},
    "shop/auth": {"data": {"X-Tenant": "shop", "X-Client": "$remote_addr", "X-Host": "${host}:1"}},
    "shop/gone": None,
}


def ingress(annotations: dict[str, str], name: str = "app", path: str = "/",
            host: str = "app.example.com") -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "shop", "annotations": annotations, "uid": name,
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": host, "http": {"paths": [
                {"path": path, "pathType": "Prefix",
                 "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}


def render(annotations: dict[str, str], maps: dict[str, dict[str, Any] | None] | None = None,
           params: ConfigParams = ALLOWED) -> tuple[str, list[str]]:
    ex = IngressEx(ingress(annotations), {"app.example.com": True}, dict(ENDPOINTS),
                   config_maps=dict(MAPS if maps is None else maps))
    cfg, warnings = generate_nginx_config(ex, STATIC, params)
    return TEMPLATES.execute_ingress_template(cfg), warnings


def location(text: str, path: str = "/") -> str:
    start = text.index(f"location {path} {{")
    return text[start:text.index("\n    }", start)]


# ------------------------------------------------------------------------------------------------- values

def test_references_are_checked_as_ingress_nginx_does() -> None:
    for good in ("headers", "shop/headers", "a.b-c_d~e:f"):
        assert hm.reference(good) == good
    for bad in ("", "a;b", "a\nb", "$x", 'a"b', "{x}", "a b\\"):
        with pytest.raises(ValueError, match="is invalid"):
            hm.reference(bad)
    assert hm.split_reference("headers", "shop") == ("shop", "headers")
    assert hm.split_reference("other/headers", "shop") == ("other", "headers")
    assert hm.split_reference("/headers", "shop") == ("shop", "headers")
    for bad in ("a/b/c", "shop/", ""):
        with pytest.raises(ValueError):
            hm.split_reference(bad, "shop")


@pytest.mark.parametrize(("name", "value", "problem"), [
    ("X-Frame-Options", "DENY", ""),
    ("X-Price", "$5 {net}; \"a\" \\ `b` #c", ""),    # ingress-nginx's value characters: literal
    ("X-Frame-Options", "a\r\nSet-Cookie: x=1", "invalid header value"),
    ("X-Frame-Options", "a\nb", "invalid header value"),
    ("X-Frame-Options", "a\x00b", "invalid header value"),
    ("X-Frame-Options", "", "invalid header value"),
    ("X-Frame-Options", "é", "invalid header value"),
    ("X Frame", "1", "invalid header name"),
    ("X-Frame:Options", "1", "invalid header name"),
    ('X"; add_header Y "1', "1", "invalid header name"),
    ("X-Other", "1", "header X-Other is not allowed"),
    ("x-frame-options", "1", "header x-frame-options is not allowed"),   # compared as written
])
def test_response_headers_as_ingress_nginx_checks_them(name: str, value: str, problem: str) -> None:
    got = hm.response_header_problem(name, value, ("X-Frame-Options", "X-Price"))
    assert (problem in got) if problem else got == "", got


@pytest.mark.parametrize(("value", "ok"), [
    ("shop", True), ("$remote_addr", True), ("${host}:8080", True), ("a b (c) [d] <e> f|g^h'i", True),
    ("", True),                                           # an empty value clears the header, as NGINX does
    ("a; proxy_pass http://evil", False), ('a"; b "c', False), ("a\r\nX-Injected: 1", False),
    ("a\nb", False), ("{x}", False), ("a}b", False), ("a\\b", False), ("`id`", False), ("$", False),
    ("$no_such_variable", False), ("${host", False), ("a#b", True), ("\x00", False), ("é", False),
])
def test_auth_headers_values_are_checked_strictly(value: str, ok: bool) -> None:
    assert (hm.auth_header_problem("X-Tenant", value) == "") is ok, value
    assert hm.auth_header_problem("X Tenant", "a") != ""


def test_global_allowed_response_headers_of_the_config_map() -> None:
    tr = translate_config_map({"global-allowed-response-headers": " X-A, X-B ,X-A"})
    assert tr.fields["ingress_nginx_allowed_response_headers"] == ("X-A", "X-B") and tr.messages == []
    bad = translate_config_map({"global-allowed-response-headers": "X-A, X B"})
    assert "ingress_nginx_allowed_response_headers" not in bad.fields
    assert bad.messages == [("global-allowed-response-headers", "invalid value 'X-A, X B': invalid header "
                                                                "name(s) X B")]
    params, errors = with_ingress_nginx_keys(lambda data: (ConfigParams(), []))(
        {"global-allowed-response-headers": "X-A"})
    assert params.ingress_nginx_allowed_response_headers == ("X-A",) and errors == []


# -------------------------------------------------------------------------------------------- translation

def test_rows_are_translated_and_auth_headers_need_auth_url() -> None:
    tr = translate({N + "custom-headers": "headers"})
    assert tr.extras[hm.EXTRA] == "headers" and tr.report[0].status is Status.TRANSLATED
    tr = translate({N + "auth-proxy-set-headers": "auth"})
    assert [(e.key, e.status) for e in tr.report] == [(N + "auth-proxy-set-headers", Status.IGNORED)]
    assert tr.extras == {}
    tr = translate({N + "auth-url": "http://10.0.0.9/check", N + "auth-proxy-set-headers": "auth"})
    assert tr.extras["auth-request"].proxy_set_headers == "auth"
    assert translate({N + "custom-headers": "a;b"}).problems


# -------------------------------------------------------------------------------------------- rendering

def test_custom_headers_on_every_answer_with_a_literal_dollar() -> None:
    text, warnings = render({N + "custom-headers": "headers"})
    assert warnings == []
    loc = location(text)
    assert 'proxy_hide_header "X-Frame-Options";' in loc and 'proxy_hide_header "X-Price";' in loc
    assert 'add_header "X-Frame-Options" "DENY" always;' in loc
    dollar = text.split("geo $", 1)[1].split(" ", 1)[0]
    assert f'add_header "X-Price" "${{{dollar}}}5 {{net}}" always;' in loc
    assert f'geo ${dollar} {{ default "$"; }}' in text and dollar.startswith("ingressctl_dollar_")
    assert "return 503;" not in text
    plain, _ = render({N + "custom-headers": "plain"}, {"shop/plain": {"data": {"X-Frame-Options": "1"}}})
    assert "geo $ingressctl_dollar" not in plain   # only where a value has a `$`


def test_the_servers_header_lines_are_repeated_in_the_locations() -> None:
    """NGINX drops the server's add_header and proxy_hide_header lines in a location with its own."""
    anns = {N + "custom-headers": "headers", "nginx.org/hsts": "true", "nginx.org/hsts-behind-proxy": "true",
            "nginx.org/proxy-hide-headers": "X-Powered-By", "nginx.org/add-header": "X-Served-By: edge"}
    text, warnings = render(anns)
    assert warnings == []
    loc = location(text)
    server_lines = [line.strip() for line in text.split("location", 1)[0].splitlines()
                    if line.strip().startswith(("add_header", "proxy_hide_header"))]
    assert len(server_lines) == 4, server_lines
    for line in server_lines:
        assert loc.count(line) == 1, line


def test_auth_proxy_set_headers_in_the_auth_location() -> None:
    text, warnings = render({N + "auth-url": "http://10.0.0.9/check", N + "auth-proxy-set-headers": "auth"})
    assert warnings == []
    auth = text[text.index("location = /_external-auth-"):]
    auth = auth[:auth.index("\n    }")]
    assert 'proxy_set_header X-Client "$remote_addr";' in auth
    assert 'proxy_set_header X-Host "${host}:1";' in auth
    assert 'proxy_set_header X-Tenant "shop";' in auth
    assert auth.index("X-Client") < auth.index("X-Host") < auth.index("X-Tenant")   # sorted: stable text
    assert "return 503;" not in text


@pytest.mark.parametrize(("annotations", "maps", "reason"), [
    ({N + "custom-headers": "gone"}, None, "unable to find configMap 'shop/gone'"),
    ({N + "custom-headers": "missing"}, None, "unable to find configMap 'shop/missing'"),
    ({N + "custom-headers": "other/headers"}, None, "cross namespace usage of configmaps is not allowed"),
    ({N + "custom-headers": "a/b/c"}, None, "error reading configmap name"),
    ({N + "custom-headers": "big"}, {"shop/big": {DROPPED: "more than 65536 bytes of data"}}, "too large"),
    ({N + "custom-headers": "h"}, {"shop/h": {"data": {"X-Other": "1"}}}, "header X-Other is not allowed"),
    ({N + "custom-headers": "h"}, {"shop/h": {"data": {"X-Price": "a\r\nSet-Cookie: s=1"}}},
     "invalid header value"),
    ({N + "auth-url": "http://10.0.0.9/check", N + "auth-proxy-set-headers": "h"},
     {"shop/h": {"data": {"X-Tenant": 'a"; proxy_pass http://evil; "'}}}, "invalid proxy-set-headers value"),
    ({N + "auth-url": "http://10.0.0.9/check", N + "auth-proxy-set-headers": "h"},
     {"shop/h": {"data": {"X-Tenant": "$secret_unknown"}}}, "unknown NGINX variable"),
    ({N + "auth-url": "http://10.0.0.9/check", N + "auth-proxy-set-headers": "gone"}, None,
     "unable to find configMap 'shop/gone'"),
    ({N + "auth-url": "http://10.0.0.9/check", N + "auth-proxy-set-headers": "kube-system/auth"}, None,
     "cross namespace usage of configmaps is not allowed"),
])
def test_an_unusable_config_map_denies_every_location_with_a_warning(
        annotations: dict[str, str], maps: dict[str, dict[str, Any] | None] | None, reason: str) -> None:
    text, warnings = render(annotations, maps)
    assert "return 503;" in location(text)
    assert "Set-Cookie: s=1" not in text and "evil" not in text and "add_header \"X-" not in text
    (warning,) = warnings
    assert reason in warning and warning.endswith("every location of the Ingress answers 503"), warning
    assert next(iter(annotations.keys() - {N + "auth-url"})) in warning


def test_minions_get_their_own_headers_or_the_denial() -> None:
    master = ingress({"nginx.org/mergeable-ingress-type": "master", N + "custom-headers": "headers"}, "shop")
    master["spec"]["rules"][0]["http"] = {}
    own = ingress({"nginx.org/mergeable-ingress-type": "minion", N + "custom-headers": "cart"}, "cart",
                  "/cart")
    bad = ingress({"nginx.org/mergeable-ingress-type": "minion", N + "custom-headers": "gone"}, "pay", "/pay")
    plain = ingress({"nginx.org/mergeable-ingress-type": "minion"}, "home", "/")
    maps = {**MAPS, "shop/cart": {"data": {"X-Frame-Options": "SAMEORIGIN"}}}
    minions = [IngressEx(m, {"app.example.com": True}, dict(ENDPOINTS), config_maps=dict(maps),
                         valid_minion_paths={p: True})
               for m, p in ((own, "/cart"), (bad, "/pay"), (plain, "/"))]
    result = generate_nginx_config_for_mergeable(MergeableIngresses(
        IngressEx(master, {"app.example.com": True}, {}, config_maps=dict(maps)), minions), STATIC, ALLOWED)
    text = TEMPLATES.execute_ingress_template(result.config)
    cart, pay, home = location(text, "/cart/"), location(text, "/pay/"), location(text, "/")
    assert '"SAMEORIGIN" always;' in cart and '"DENY"' not in cart
    assert "return 503;" in pay and "add_header" not in pay
    assert '"DENY" always;' in home and "return 503;" not in home    # the master's covers it
    assert any("unable to find configMap 'shop/gone'" in w for w in result.minion_warnings["shop/pay"])


# ------------------------------------------------------------------------------------ dependency tracking

def test_claims_and_the_index_map_a_config_map_to_its_ingresses() -> None:
    anns = {N + "custom-headers": "headers", N + "auth-proxy-set-headers": "shop/auth"}
    obj = ingress(anns)
    classes = IngressClasses("nginx", ingress_nginx_compat=True)
    assert IngressModel(classes).claims(obj).config_maps == (("shop", "headers"), ("shop", "auth"))
    assert IngressModel("nginx").claims(obj).config_maps == ()
    assert IngressModel(classes).claims(ingress({N + "custom-headers": "other/x"})).config_maps == ()
    conf = Configuration(ingress_class=classes)
    conf.set_startup_complete()
    conf.add_or_update_ingress(obj)
    conf.add_or_update_ingress(ingress({}, "plain", host="plain.example.com"))
    assert [r.key for r in conf.find_resources_for_config_map("shop", "auth")] == ["shop/app"]
    assert [r.key for r in conf.find_resources_for_config_map("shop", "headers")] == ["shop/app"]
    assert conf.find_resources_for_config_map("shop", "other") == []
    conf.add_or_update_ingress(ingress({N + "custom-headers": "new"}))   # the reference changed
    assert conf.find_resources_for_config_map("shop", "headers") == []
    assert [r.key for r in conf.find_resources_for_config_map("shop", "new")] == ["shop/app"]


def test_the_transform_keeps_identity_and_small_data_only() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "binaryData": {"b": "AAAA"},
          "metadata": {"name": "h", "namespace": "shop", "uid": "u", "resourceVersion": "7",
                       "labels": {"a": "b"}, "annotations": {"x": "y" * 1000}, "ownerReferences": [{}]},
          "data": {"X-Frame-Options": "DENY"}}
    assert config_map_transform(cm) == {"metadata": {"name": "h", "namespace": "shop", "uid": "u",
                                                     "resourceVersion": "7"},
                                        "data": {"X-Frame-Options": "DENY"}}
    big = {**cm, "data": {"k": "v" * MAX_DATA_BYTES}}
    out = config_map_transform(big)
    assert "data" not in out and "bytes" in out[DROPPED]
    exact = {**cm, "data": {"k": "v" * (MAX_DATA_BYTES - 1)}}
    assert config_map_transform(exact)["data"] == exact["data"]
    assert "data" not in config_map_transform({"metadata": {"name": "e"}})


def test_the_handler_enqueues_changes_of_kept_data_and_deletes() -> None:
    tasks: list[Task] = []
    h = ConfigMapHandler(tasks.append)
    cm = {"metadata": {"name": "h", "namespace": "shop", "resourceVersion": "1"}, "data": {"a": "1"}}
    h.on_add(cm, True)
    assert tasks == []      # the initial list: the first render reads every reference
    h.on_add(cm)
    h.on_update(cm, {**cm, "metadata": {**cm["metadata"], "resourceVersion": "2"}})   # same data
    h.on_update(cm, cm)
    assert tasks == [Task(CONFIGMAP_KIND, "shop/h")]
    h.on_update(cm, {**cm, "metadata": {**cm["metadata"], "resourceVersion": "3"}, "data": {"a": "2"}})
    h.on_delete(cm)
    h.on_delete(DeletedFinalStateUnknown("shop/gone", None))
    assert tasks[1:] == [Task(CONFIGMAP_KIND, "shop/h"), Task(CONFIGMAP_KIND, "shop/h"),
                         Task(CONFIGMAP_KIND, "shop/gone")]


class _Lbc:
    def __init__(self, rendering: bool) -> None:
        self.configuration = Configuration(ingress_class=IngressClasses("nginx", ingress_nginx_compat=True))
        self.configuration.set_startup_complete()
        self.rendering = rendering
        self.rerendered: list[tuple[list[str], str]] = []

    def is_rendering(self) -> bool:
        return self.rendering

    def rerender(self, resources: list[Any], reason: str) -> None:
        self.rerendered.append(([r.key for r in resources], reason))


def test_the_kinds_sync_rerenders_exactly_the_users() -> None:
    lbc = _Lbc(rendering=True)
    lbc.configuration.add_or_update_ingress(ingress({N + "custom-headers": "headers"}))
    lbc.configuration.add_or_update_ingress(ingress({}, "plain", host="plain.example.com"))
    kind = config_map_kind_factory()(lbc)
    assert (kind.name, kind.rt.plural) == (CONFIGMAP_KIND, "configmaps")
    assert kind.transform is config_map_transform
    assert kind.sync is not None
    kind.sync("shop/headers")
    kind.sync("shop/unused")
    assert lbc.rerendered == [(["shop/app"], "configmap")]
    idle = _Lbc(rendering=False)
    idle.configuration.add_or_update_ingress(ingress({N + "custom-headers": "headers"}))
    sync = config_map_kind_factory()(idle).sync
    assert sync is not None
    sync("shop/headers")
    assert idle.rerendered == []      # during start-up the first render reads every reference


def test_the_kind_has_no_status_and_starts_no_status_flush() -> None:
    class Base:
        report_ingress_status = False

    base: Any = Base()
    kind = config_map_kind_factory()(_Lbc(rendering=True))
    assert StatusWriters(base, {"ingress": base, CONFIGMAP_KIND: kind.status}).report_ingress_status is False
    other: Any = object()
    assert StatusWriters(base, {"ingress": base, "other": other}).report_ingress_status is True
    assert kind.status.update_status("shop/headers") is False and kind.status.writes == 0


def test_a_masters_denied_auth_headers_deny_the_minions_its_auth_covers() -> None:
    """A minion with custom headers of its own but no auth of its own is protected by the master's auth: a
    denied auth-proxy-set-headers of the master denies it too (never authenticated without its headers)."""
    master = ingress({"nginx.org/mergeable-ingress-type": "master", N + "auth-url": "http://10.0.0.9/check",
                      N + "auth-proxy-set-headers": "gone"}, "shop")
    master["spec"]["rules"][0]["http"] = {}
    own = ingress({"nginx.org/mergeable-ingress-type": "minion", N + "custom-headers": "headers"}, "cart",
                  "/cart")
    authed = ingress({"nginx.org/mergeable-ingress-type": "minion", N + "auth-url": "http://10.0.0.9/other"},
                     "pay", "/pay")
    minions = [IngressEx(m, {"app.example.com": True}, dict(ENDPOINTS), config_maps=dict(MAPS),
                         valid_minion_paths={p: True}) for m, p in ((own, "/cart"), (authed, "/pay"))]
    result = generate_nginx_config_for_mergeable(MergeableIngresses(
        IngressEx(master, {"app.example.com": True}, {}, config_maps=dict(MAPS)), minions), STATIC, ALLOWED)
    text = TEMPLATES.execute_ingress_template(result.config)
    assert "return 503;" in location(text, "/cart/")
    assert "return 503;" not in location(text, "/pay/")   # its own auth, without header ConfigMap
    assert any("unable to find configMap 'shop/gone'" in w for w in result.warnings)
