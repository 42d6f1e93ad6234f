"""ingress-nginx's external authentication annotations (`auth-url` and companions): ingress-nginx's value
syntax and validation, what is ignored without `auth-url`, the NGINX lines of the subrequest, the sign-in
redirect and the copied headers, `nginx.org/policies` winning, and mergeable Ingresses."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ingressctl.configs.config import IngressMeta, IngressNginxConfig, Location, Server
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.config import (
    AnnotationError,
    generate_nginx_config,
    generate_nginx_config_for_mergeable,
)
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.kinds.ingress.ingress_nginx import auth_request as authreq
from ingressctl.kinds.ingress.ingress_nginx.auth_render import apply_auth_requests
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.kinds.ingress.validation import validate_ingress

N = "nginx.ingress.kubernetes.io/"
STATIC = StaticConfigParams(run_dir="/run/ic", conf_dir="/etc/ic", ingress_nginx_compat=True)
TEMPLATES = TemplateExecutor()
ENDPOINTS = {backend_key("web", 80): ["10.0.0.1:8080"], backend_key("api", 80): ["10.0.0.2:8080"]}


def ingress(annotations: dict[str, str], *, name: str = "app", paths: tuple[tuple[str, str], ...] = (
        ("/", "web"), ("/api", "api"))) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "shop", "annotations": annotations},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": "app.example.com", "http": {"paths": [
                {"path": p, "pathType": "Prefix", "backend": {"service": {"name": s, "port": {"number": 80}}}}
                for p, s in paths]}}]}}


def render(annotations: dict[str, str], static: StaticConfigParams = STATIC) -> tuple[str, list[str]]:
    cfg, warnings = generate_nginx_config(IngressEx(ingress(annotations), {"app.example.com": True},
                                                    dict(ENDPOINTS)), static, ConfigParams())
    return TEMPLATES.execute_ingress_template(cfg), warnings


# ------------------------------------------------------------------------------------------------- values

@pytest.mark.parametrize(("value", "expected"), [
    ("http://oauth2-proxy.auth.svc.cluster.local/oauth2/auth",
     ("http", "oauth2-proxy.auth.svc.cluster.local", 80, "/oauth2/auth")),
    ("https://10.0.0.1:8443/check?uri=$request_uri&h=$host",
     ("https", "10.0.0.1", 8443, "/check?uri=$request_uri&h=$host")),
    ("HTTP://auth:9000", ("http", "auth", 9000, "")),
    ("http://auth?x=1", ("http", "auth", 80, "?x=1")),
])
def test_auth_url_takes_ingress_nginx_urls(value: str, expected: tuple[Any, ...]) -> None:
    u = authreq.auth_url(value)
    assert (u.scheme, u.host, u.port, u.path) == expected


@pytest.mark.parametrize(("value", "detail"), [
    ("ftp://auth/x", "the scheme must be http or https"),
    ("auth/x", "url scheme is empty"),
    ("http:///x", "url host is empty"),
    ("http://a..b/x", "invalid url host"),
    ("http://auth/x y", "must not contain whitespace"),
    ("http://auth/x;proxy_pass http://evil", "must not contain whitespace"),
    ("http://auth/x;evil", "must be a URL of letters"),
    ("http://auth/{x}", "must be a URL of letters"),
    ('http://auth/"', "must be a URL of letters"),
    ("http://auth/%2F", "must be a URL of letters"),          # ingress-nginx's class has no '%'
    ("http://auth/\nx", "must not contain whitespace"),
    ("http://auth/$no_such_variable", "unknown NGINX variable(s): $no_such_variable"),
    ("http://auth/$", "unknown NGINX variable(s): $"),
    ("https://$server_name/oauth2/auth", "NGINX variables in the host need a resolver"),
    ("https://auth.$host/oauth2/auth", "NGINX variables in the host need a resolver"),
    ("http://auth:0/", "the port must be between 1 and 65535"),
    ("http://auth:99999/", "the port must be between 1 and 65535"),
    ("http://auth:x/", "the port must be between 1 and 65535"),
])
def test_auth_url_refuses_what_ingress_nginx_or_nginx_would(value: str, detail: str) -> None:
    with pytest.raises(ValueError) as e:
        authreq.auth_url(value)
    assert detail in str(e.value)
    errors = [str(x) for x in validate_ingress(ingress({N + "auth-url": value}), ingress_nginx_compat=True)]
    assert errors and errors[0].startswith(f"annotations.{N}auth-url: Invalid value")


def test_method_headers_and_redirect_values() -> None:
    assert authreq.method("POST") == "POST" and authreq.method(" GET ") == "GET"
    for bad in ("get", "FOO", "GET;"):
        with pytest.raises(ValueError):
            authreq.method(bad)
    assert authreq.response_headers("X-User, X-Email,,X_Group") == ("X-User", "X-Email", "X_Group")
    for bad in ("X User", "X-User;", "X-User: 1"):
        with pytest.raises(ValueError):
            authreq.response_headers(bad)
    landing = "https://app.example.com/landing?x=1"
    assert authreq.request_redirect(landing) == landing
    for bad in ("https://a/$host", "https://a/ x", 'https://a/"'):
        with pytest.raises(ValueError):
            authreq.request_redirect(bad)


def test_signin_url_is_ingress_nginx_build_auth_sign_url() -> None:
    rd = authreq.ORIGINAL_URL
    assert authreq.signin_url("https://login/start", "rd") == f"https://login/start?rd={rd}"
    assert authreq.signin_url("https://login/start?client=web", "rd") == \
        f"https://login/start?client=web&rd={rd}"
    assert authreq.signin_url("https://login/start?rd=/home", "rd") == "https://login/start?rd=/home"
    assert authreq.signin_url("https://login/start?rd=", "rd") == f"https://login/start?rd=&rd={rd}"
    assert authreq.signin_url("https://login/start", "return_to") == f"https://login/start?return_to={rd}"


# ------------------------------------------------------------------------------------------- translation

def test_companions_without_auth_url_are_ignored_with_a_warning() -> None:
    tr = translate({N + "auth-method": "POST", N + "auth-signin": "https://login/"})
    assert tr.problems == () and authreq.EXTRA not in tr.extras
    assert {e.key: e.status for e in tr.report} == {N + "auth-method": Status.IGNORED,
                                                    N + "auth-signin": Status.IGNORED}
    assert "auth-url is not set" in tr.warnings[0]


def test_invalid_sign_in_values_are_ignored_as_ingress_nginx_does() -> None:
    tr = translate({N + "auth-url": "http://auth/", N + "auth-signin": "https://login/{x}",
                    N + "auth-signin-redirect-param": "a b"})
    assert tr.problems == ()
    assert tr.extras[authreq.EXTRA].signin == ""
    assert "auth-signin ignored (invalid value (ingress-nginx ignores it too)" in tr.warnings[0]
    conf, _ = render({N + "auth-url": "http://10.0.0.9/", N + "auth-signin": "https://login/{x}"})
    assert "auth_request" in conf and "error_page 401" not in conf
    tr = translate({N + "auth-url": "http://auth/", N + "auth-signin": "https://login/",
                    N + "auth-signin-redirect-param": "a b"})
    assert tr.extras[authreq.EXTRA].signin == f"https://login/?rd={authreq.ORIGINAL_URL}"


@pytest.mark.parametrize(("name", "value"), [("auth-method", "get"), ("auth-response-headers", "X User"),
                                             ("auth-request-redirect", "https://a/$host"),
                                             ("auth-always-set-cookie", "yes")])
def test_invalid_companions_reject_the_ingress(name: str, value: str) -> None:
    with pytest.raises(AnnotationError, match=f"{N}{name}: invalid value"):
        render({N + "auth-url": "http://10.0.0.9/", N + name: value})


def test_auth_snippet_needs_snippets() -> None:
    anns = {N + "auth-url": "http://10.0.0.9/", N + "auth-snippet": 'proxy_set_header X-Extra "1";'}
    with pytest.raises(AnnotationError, match="snippets are not enabled"):
        render(anns)
    conf, _ = render(anns, dataclasses.replace(STATIC, enable_snippets=True))
    internal = conf.split("location = /_external-auth-")[1].split("}")[0]
    assert 'proxy_set_header X-Extra "1";' in internal


# ---------------------------------------------------------------------------------------------- rendering

def test_every_location_asks_the_auth_service() -> None:
    conf, warnings = render({N + "auth-url": "https://10.0.0.9:8443/check?u=$request_uri",
                             N + "auth-method": "POST", N + "auth-signin": "https://login.example.com/start",
                             N + "auth-response-headers": "X-User", N + "auth-always-set-cookie": "true",
                             N + "auth-request-redirect": "https://app.example.com/landing"})
    upstream = "ing_shop_app_authreq_"
    assert conf.count(f"upstream {upstream}") == 1 and "    server 10.0.0.9:8443;\n" in conf
    assert conf.count("location = /_external-auth-") == 3   # `/`, `= /api` and `/api/`
    assert conf.count("location @external-auth-signin-") == 3
    internal = conf.split("location = /_external-auth-")[1].split("}")[0]
    for line in ("internal;", "proxy_pass_request_body off;", 'proxy_set_header Content-Length "";',
                 "proxy_method POST;", "proxy_set_header X-Original-URI $request_uri;",
                 'proxy_set_header Host "10.0.0.9";',
                 "proxy_set_header X-Original-URL $scheme://$http_host$request_uri;",
                 "proxy_set_header X-Original-Method $request_method;",
                 'proxy_set_header X-Sent-From "nginx-ingress-controller";',
                 'proxy_set_header X-Auth-Request-Redirect "https://app.example.com/landing";',
                 "proxy_ssl_server_name on;", "proxy_ssl_name 10.0.0.9;"):
        assert line in internal, line
    assert f'proxy_pass "https://{upstream}' in internal and '/check?u=$request_uri";' in internal
    root = conf.split("location / {")[1].split("}")[0]
    for line in ("auth_request /_external-auth-", "auth_request_set $auth_cookie $upstream_http_set_cookie;",
                 "add_header Set-Cookie $auth_cookie always;",
                 "auth_request_set $authHeader0 $upstream_http_x_user;",
                 "proxy_set_header X-User $authHeader0;", "error_page 401 = @external-auth-signin-"):
        assert line in root, line
    signin = conf.split("location @external-auth-signin-")[1].split("}")[0]
    assert ('return 302 "https://login.example.com/start?rd=$scheme://$http_host'
            '$ingressctl_escaped_request_uri";') in signin   # ingress-nginx's $escaped_request_uri
    assert not any("auth-signin approximated" in w for w in warnings)


def test_the_request_s_own_host_is_this_nginx_over_loopback() -> None:
    """ingress-nginx's docs' oauth2-proxy example: `https://$host/oauth2/auth` went back through the load
    balancer to the controller itself; here the subrequest goes to this NGINX directly."""
    for host in authreq.LOOPBACK_HOSTS:
        u = authreq.auth_url(f"https://{host}/oauth2/auth?rd=$escaped_request_uri")
        assert (u.loopback, u.host) == (True, "$host")
        assert u.path == "/oauth2/auth?rd=$ingressctl_escaped_request_uri"
    conf, warnings = render({N + "auth-url": "https://$host/oauth2/auth",
                             N + "auth-signin": "https://$host/oauth2/start?rd=$escaped_request_uri"})
    assert "    server 127.0.0.1:443;\n" in conf
    internal = conf.split("location = /_external-auth-")[1].split("}")[0]
    for line in ("proxy_set_header Host $host;", "proxy_ssl_server_name on;", "proxy_ssl_name $host;"):
        assert line in internal, line
    assert '/oauth2/auth";' in internal
    signin = conf.split("location @external-auth-signin-")[1].split("}")[0]
    assert 'return 302 "https://$host/oauth2/start?rd=$ingressctl_escaped_request_uri";' in signin  # kept
    assert not any("auth-signin ignored" in w for w in warnings)
    conf, _ = render({N + "auth-url": "http://$best_http_host/check"})
    assert "    server 127.0.0.1:80;\n" in conf and "proxy_ssl_name" not in conf


def test_a_location_repeats_the_server_add_header_lines() -> None:
    conf, _ = render({N + "auth-url": "http://10.0.0.9/", "nginx.org/add-header": "X-Frame-Options: DENY"})
    root = conf.split("location / {")[1].split("}")[0]
    assert 'add_header X-Frame-Options "DENY";' in root and "add_header Set-Cookie $auth_cookie;" in root


def test_nginx_org_external_auth_wins_over_auth_url() -> None:
    auth = translate({N + "auth-url": "http://10.0.0.9/"}).extras[authreq.EXTRA]
    policy = Location(path="/", modifier="", upstream="u", service_name="s",
                      policy_lines=("auth_request /_external_auth/check;",))
    plain = Location(path="/b", modifier="", upstream="u", service_name="s")
    server = Server(name="app.example.com", locations=(policy, plain))
    meta = IngressMeta(name="app", namespace="shop")
    cfg = IngressNginxConfig(upstreams=(), servers=(server,), ingress=meta)
    out, warnings = apply_auth_requests(cfg, {("shop", "app"): auth})
    first, second = out.servers[0].locations
    assert first.policy_lines == policy.policy_lines
    assert second.policy_lines[0].startswith("auth_request /_external-auth-")
    assert warnings == ["annotation nginx.org/policies (externalAuth) wins over "
                        "nginx.ingress.kubernetes.io/auth-url on location /; auth-url is ignored there"]


def test_mergeable_minions_get_their_own_or_the_masters_auth() -> None:
    def obj(name: str, annotations: dict[str, str], paths: tuple[tuple[str, str], ...]) -> dict[str, Any]:
        return ingress(annotations, name=name, paths=paths)

    master = obj("shop", {"nginx.org/mergeable-ingress-type": "master", N + "auth-url": "http://10.0.0.8/"},
                 ())
    master["spec"]["rules"][0].pop("http")
    own = obj("cart", {"nginx.org/mergeable-ingress-type": "minion", N + "auth-url": "http://10.0.0.9/"},
              (("/cart", "web"),))
    other = obj("api", {"nginx.org/mergeable-ingress-type": "minion"}, (("/api", "api"),))
    hosts = {"app.example.com": True}
    result = generate_nginx_config_for_mergeable(MergeableIngresses(
        IngressEx(master, hosts, dict(ENDPOINTS)),
        [IngressEx(own, hosts, dict(ENDPOINTS), valid_minion_paths={"/cart": True}),
         IngressEx(other, hosts, dict(ENDPOINTS), valid_minion_paths={"/api": True})]),
        STATIC, ConfigParams())
    conf = TEMPLATES.execute_ingress_template(result.config)
    assert "upstream ing_shop_cart_authreq_" in conf and "server 10.0.0.9:80;" in conf
    assert "upstream ing_shop_shop_authreq_" in conf and "server 10.0.0.8:80;" in conf
    cart = conf.split("location /cart/ {")[1].split("}")[0]
    api = conf.split("location /api/ {")[1].split("}")[0]
    assert "auth_request /_external-auth-" in cart and "auth_request /_external-auth-" in api
    blocks = conf.split("location = /_external-auth-")[1:]
    targets = {block.split("}")[0].split("proxy_pass ")[1] for block in blocks}
    assert any("ing_shop_cart_authreq_" in p for p in targets)
    assert any("ing_shop_shop_authreq_" in p for p in targets)


def test_without_compat_the_annotations_render_nothing() -> None:
    off = dataclasses.replace(STATIC, ingress_nginx_compat=False)
    conf, _ = render({N + "auth-url": "http://10.0.0.9/"}, off)
    assert "auth_request" not in conf and "_external-auth-" not in conf


# ------------------------------------------------------------------------------------------------ satisfy

def test_satisfy_is_written_in_every_location() -> None:
    conf, warnings = render({N + "whitelist-source-range": "10.0.0.0/8", N + "auth-url": "http://10.0.0.9/",
                             N + "satisfy": " any "})
    assert conf.count("satisfy any;") == 3 and warnings == []
    conf, _ = render({N + "satisfy": "all"})
    assert conf.count("satisfy all;") == 3


@pytest.mark.parametrize("value", ["ANY", "some", "any all"])
def test_an_invalid_satisfy_is_ignored_as_ingress_nginx_does(value: str) -> None:
    conf, warnings = render({N + "auth-url": "http://10.0.0.9/", N + "satisfy": value})
    assert "satisfy" not in conf.replace(N + "satisfy", "")
    assert f"{N}satisfy ignored (invalid value (ingress-nginx ignores it too)" in warnings[0]
