"""ingress-nginx's request mirroring annotations (`mirror-target`, `mirror-host`, `mirror-request-body`): the
strict validation of the High-risk values (hostile ones refuse the Ingress), what is ignored, and the NGINX
lines: `mirror` in every location, the internal location and its upstream, mergeable Ingresses."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams
from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.config import AnnotationError, generate_nginx_config_for_mergeable
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses
from ingressctl.kinds.ingress.ingress_nginx import mirror
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.kinds.ingress.validation import validate_ingress
from tests.unit.test_ingress_nginx_authreq import ENDPOINTS, STATIC, TEMPLATES, N, ingress, render

TARGET, HOST, BODY = N + "mirror-target", N + "mirror-host", N + "mirror-request-body"


# ------------------------------------------------------------------------------------------------- values

@pytest.mark.parametrize(("value", "expected"), [
    ("https://copies.example.com$request_uri", ("https", "copies.example.com", 443, "$request_uri")),
    ("http://10.0.0.5:8080$request_uri", ("http", "10.0.0.5", 8080, "$request_uri")),
    ("http://10.0.0.5:8080/copy?from=$host&u=$request_uri",
     ("http", "10.0.0.5", 8080, "/copy?from=$host&u=$request_uri")),
    ("HTTPS://copies.example.com", ("https", "copies.example.com", 443, "")),
    ("http://copies$uri", ("http", "copies", 80, "$uri")),
    ("http://copies$document_uri?x=1", ("http", "copies", 80, "$document_uri?x=1")),
    # ingress-nginx's template variables become NGINX's, as in auth-url
    ("http://copies$escaped_request_uri", ("http", "copies", 80, "$request_uri")),
])
def test_target_takes_ingress_nginx_urls(value: str, expected: tuple[Any, ...]) -> None:
    u = mirror.target(value)
    assert (u.scheme, u.host, u.port, u.path) == expected


@pytest.mark.parametrize(("value", "detail"), [
    ("https://$host$request_uri", "NGINX variables in the host need a resolver"),   # no loopback to itself
    ("http://$http_host/x", "name the mirror backend's host"),
    ("https://${host}/x", "must be a URL of letters"),
    ("https://copies.example.com$host", "only '/', '?', $request_uri"),       # would extend the host
    ("https://copies.example.com$request_uri_x", "unknown NGINX variable(s): $request_uri_x"),
    ("https://copies$uri_suffix/x", "unknown NGINX variable(s)"),
    ("https://copies.example.com/$no_such_variable", "unknown NGINX variable(s): $no_such_variable"),
    ("https://copies.example.com/$", "unknown NGINX variable(s): $"),
    ("https://copies.example.com:$server_port/", "the port must be between 1 and 65535"),
    ("https://copies.example.com:0/", "the port must be between 1 and 65535"),
    ("https://copies.example.com:65536/", "the port must be between 1 and 65535"),
    ("ftp://copies.example.com/", "the scheme must be http or https"),
    ("copies.example.com$request_uri", "url scheme is empty"),
    ("https:///x", "url host is empty"),
    ("https://a..b/x", "invalid url host"),
    ("https://[::1]/x", "must be a URL of letters"),
    (" https://copies.example.com$request_uri", "must not contain whitespace"),
    ("https://copies.example.com$request_uri ", "must not contain whitespace"),
    ("https://copies.example.com/x;proxy_pass http://evil", "must not contain whitespace"),
    ("https://copies.example.com/x;root", "must be a URL of letters"),
    ("https://copies.example.com/x\r\nHost: evil", "must not contain whitespace"),
    ("https://copies.example.com/x\n}", "must not contain whitespace"),
    ('https://copies.example.com/"', "must be a URL of letters"),
    ("https://copies.example.com/'", "must be a URL of letters"),
    ("https://copies.example.com/{x}", "must be a URL of letters"),
    ("https://copies.example.com/}", "must be a URL of letters"),
    ("https://copies.example.com/\\", "must be a URL of letters"),
    ("https://copies.example.com/#x", "must be a URL of letters"),
])
def test_target_refuses_hostile_values(value: str, detail: str) -> None:
    with pytest.raises(ValueError) as e:
        mirror.target(value)
    assert detail in str(e.value)
    errors = [str(x) for x in validate_ingress(ingress({TARGET: value}), ingress_nginx_compat=True)]
    assert errors and errors[0].startswith(f"annotations.{TARGET}: Invalid value"), errors
    with pytest.raises(AnnotationError, match="mirror-target"):
        render({TARGET: value})


@pytest.mark.parametrize("value", ["copies.example.com", "Copies-1.example.com:8443", "10.0.0.5", "a"])
def test_host_takes_host_names(value: str) -> None:
    assert mirror.host(value) == value


@pytest.mark.parametrize("value", ["copies.example.com;", "copies example.com", " copies.example.com",
                                   "copies.example.com\r\nX: 1", "$host", "${host}", "copies.$host",
                                   '"copies"', "'c'", "{c}", "c}", "-c.example.com", "c-.example.com",
                                   "c..example.com", "c.example.com:", "c.example.com:0",
                                   "c.example.com:70000", "c.example.com:80:80", "c_d.example.com",
                                   "c/x", "c\\", "[::1]", "a" * 64 + ".example.com", ""])
def test_host_refuses_what_is_not_a_host_name(value: str) -> None:
    with pytest.raises(ValueError):
        mirror.host(value)
    if value:
        anns = {TARGET: "http://10.0.0.5$request_uri", HOST: value}
        errors = [str(x) for x in validate_ingress(ingress(anns), ingress_nginx_compat=True)]
        assert errors and errors[0].startswith(f"annotations.{HOST}: Invalid value"), errors


# ------------------------------------------------------------------------------------------- translation

def test_companions_without_target_are_ignored_with_a_warning() -> None:
    tr = translate({HOST: "copies.example.com", BODY: "off"})
    assert tr.problems == () and mirror.EXTRA not in tr.extras
    assert {e.key: e.status for e in tr.report} == {HOST: Status.IGNORED, BODY: Status.IGNORED}
    assert "mirror-target is not set" in tr.warnings[0]


@pytest.mark.parametrize(("value", "body", "ignored"), [("on", True, False), ("off", False, False),
                                                        (" off ", False, False), ("OFF", True, True),
                                                        ("no", True, True), ("off;", True, True)])
def test_request_body_is_on_unless_off(value: str, body: bool, ignored: bool) -> None:
    tr = translate({TARGET: "http://10.0.0.5$request_uri", BODY: value})
    assert tr.problems == () and tr.extras[mirror.EXTRA].request_body is body
    status = {e.key: e.status for e in tr.report}[BODY]
    assert (status is Status.IGNORED) is ignored
    if ignored:
        reason = "invalid value (ingress-nginx ignores it too, the body is sent)"
        assert f"{BODY} ignored ({reason}" in tr.warnings[0]


def test_host_defaults_to_the_targets_host_without_port() -> None:
    m = translate({TARGET: "https://copies.example.com:8443/x$request_uri"}).extras[mirror.EXTRA]
    assert (m.host, m.target.port, m.request_body) == ("copies.example.com", 8443, True)
    m = translate({TARGET: "https://10.0.0.5$request_uri", HOST: "copies.example.com"}).extras[mirror.EXTRA]
    assert m.host == "copies.example.com"


# ---------------------------------------------------------------------------------------------- rendering

def _block(conf: str, start: str) -> str:
    return conf.split(start)[1].split("}")[0]


def test_every_location_sends_a_copy_to_the_internal_location() -> None:
    conf, warnings = render({TARGET: "https://10.0.0.5:8443$request_uri", HOST: "copies.example.com"})
    assert warnings == []
    upstream = mirror.upstream_name("shop", "app", translate({TARGET: "https://10.0.0.5:8443$request_uri"})
                                    .extras[mirror.EXTRA])
    source = mirror.source("shop", "app")
    assert source.startswith("/_mirror-") and source == mirror.source("shop", "app")
    assert conf.count(f"upstream {upstream} {{\n    server 10.0.0.5:8443;\n}}") == 1
    assert conf.count(f"location = {source} {{") == 1
    assert _block(conf, f"location = {source} {{").split("\n")[1:-1] == [
        "        internal;",
        "        proxy_http_version 1.1;",
        '        proxy_set_header Host "copies.example.com";',
        "        proxy_ssl_server_name on;",
        "        proxy_ssl_name copies.example.com;",
        f'        proxy_pass "https://{upstream}$request_uri";']
    for start in ("location / {", "location = /api {", "location /api/ {"):   # every location of the Ingress
        block = _block(conf, start)
        assert f"    mirror {source};\n" in block and "    mirror_request_body on;\n" in block, start
    assert conf.count("mirror_request_body") == 3
    again, _ = render({TARGET: "https://10.0.0.5:8443$request_uri", HOST: "copies.example.com"})
    assert again == conf


def test_without_body_the_copy_has_neither_body_nor_content_length() -> None:
    conf, _ = render({TARGET: "http://10.0.0.5/copy", BODY: "off"})
    internal = _block(conf, f"location = {mirror.source('shop', 'app')} {{")
    assert "proxy_pass_request_body off;" in internal and 'proxy_set_header Content-Length "";' in internal
    assert 'proxy_set_header Host "10.0.0.5";' in internal and "proxy_ssl" not in internal
    assert '/copy";' in internal
    assert conf.count("mirror_request_body off;") == 3


def test_an_invalid_host_rejects_the_ingress() -> None:
    with pytest.raises(AnnotationError, match=f"{HOST}: invalid value"):
        render({TARGET: "http://10.0.0.5$request_uri", HOST: "evil;"})


def test_mergeable_minions_get_their_own_or_the_masters_copies() -> None:
    master = ingress({"nginx.org/mergeable-ingress-type": "master", TARGET: "http://10.0.0.8$request_uri"},
                     name="shop", paths=())
    master["spec"]["rules"][0].pop("http")
    own = ingress({"nginx.org/mergeable-ingress-type": "minion", TARGET: "http://10.0.0.9$request_uri",
                   BODY: "off"}, name="cart", paths=(("/cart", "web"),))
    other = ingress({"nginx.org/mergeable-ingress-type": "minion"}, name="api", paths=(("/api", "api"),))
    hosts = {"app.example.com": True}
    result = generate_nginx_config_for_mergeable(MergeableIngresses(
        IngressEx(master, hosts, dict(ENDPOINTS)),
        [IngressEx(own, hosts, dict(ENDPOINTS), valid_minion_paths={"/cart": True}),
         IngressEx(other, hosts, dict(ENDPOINTS), valid_minion_paths={"/api": True})]),
        STATIC, ConfigParams())
    conf = TEMPLATES.execute_ingress_template(result.config)
    cart_source, shop_source = mirror.source("shop", "cart"), mirror.source("shop", "shop")
    assert "upstream ing_shop_cart_mirror_" in conf and "server 10.0.0.9:80;" in conf
    assert "upstream ing_shop_shop_mirror_" in conf and "server 10.0.0.8:80;" in conf
    cart, api = _block(conf, "location /cart/ {"), _block(conf, "location /api/ {")
    assert f"mirror {cart_source};" in cart and "mirror_request_body off;" in cart
    assert f"mirror {shop_source};" in api and "mirror_request_body on;" in api
    assert "ing_shop_cart_mirror_" in _block(conf, f"location = {cart_source} {{")
    assert "ing_shop_shop_mirror_" in _block(conf, f"location = {shop_source} {{")


def test_without_compat_the_annotations_render_nothing() -> None:
    off = dataclasses.replace(STATIC, ingress_nginx_compat=False)
    conf, _ = render({TARGET: "http://10.0.0.5$request_uri"}, off)
    assert "mirror" not in conf
