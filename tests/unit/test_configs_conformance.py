"""The rendered config for the Ingress spec's semantics: the catch-all server, wildcard hosts matching one
label, Exact paths ending in a slash, Exact and Prefix of one path."""

from __future__ import annotations

import dataclasses
import re

from ingressctl.configs.config import EXACT, PREFIX, REGEX
from ingressctl.configs.configmaps import ConfigParams
from ingressctl.controller.model import CATCH_ALL_HOST
from ingressctl.kinds.ingress.config import catch_all_upstream, generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.kinds.ingress.locations import location_keys, one_label_host_regex
from ingressctl.secret_types import SecretReference
from tests.unit.test_configs_ingress import STATIC, TEMPLATES, backend, block, ingress, path, render, rule


def catch_all_ex(**kw: object) -> IngressEx:
    ing = ingress("fallback", default_backend=backend("echo", 8080), **kw)  # type: ignore[arg-type]
    return IngressEx(ing, {CATCH_ALL_HOST: True}, {backend_key("echo", 8080): ["10.0.0.1:8080"]},
                     secret_refs={"own": SecretReference("default/own", "/etc/ic/secrets/default-own",
                                                         secret_type="kubernetes.io/tls")})


def test_the_catch_all_is_a_server_for_every_host_no_other_server_names() -> None:
    cfg, warnings = generate_nginx_config(catch_all_ex(), STATIC, ConfigParams())
    assert warnings == []
    [server] = cfg.servers
    assert server.catch_all and server.name == CATCH_ALL_HOST and server.host_regex == ""
    assert [(loc.modifier, loc.path, loc.upstream) for loc in server.locations] == [
        (PREFIX, "/", "default-fallback--echo-8080")]
    # HTTPS without a certificate: handshakes are refused, as the default server refuses them.
    assert server.ssl and server.ssl_reject_handshake and not server.ssl_redirect
    text, _ = render(catch_all_ex())
    assert 'server_name ~^ "";' in text and "listen 443 ssl;" in text and "ssl_reject_handshake on;" in text
    assert "proxy_pass http://default-fallback--echo-8080;" in block(text, "location /")


def test_catch_all_certificate_its_own_else_the_default_servers() -> None:
    with_default = dataclasses.replace(STATIC, default_server_tls_path="/etc/ic/secrets/default")
    cfg, _ = generate_nginx_config(catch_all_ex(), with_default, ConfigParams())
    server = cfg.servers[0]
    assert server.ssl_certificate == "/etc/ic/secrets/default" and not server.ssl_redirect
    cfg, _ = generate_nginx_config(catch_all_ex(tls=[{"secretName": "own"}]), with_default, ConfigParams())
    server = cfg.servers[0]
    assert server.ssl_certificate == "/etc/ic/secrets/default-own" and server.ssl_redirect
    # A missing Secret: refused handshakes and a warning, HTTP keeps working.
    cfg, warnings = generate_nginx_config(catch_all_ex(tls=[{"secretName": "gone"}]), STATIC, ConfigParams())
    assert cfg.servers[0].ssl_reject_handshake and any("TLS secret gone is invalid" in w for w in warnings)


def test_catch_all_keeps_the_health_endpoint_of_the_default_server() -> None:
    health = dataclasses.replace(STATIC, health_status=True, health_status_uri="/healthz")
    cfg, _ = generate_nginx_config(catch_all_ex(), health, ConfigParams())
    text, _ = render(catch_all_ex(), static=health)
    assert cfg.servers[0].health_status_uri == "/healthz"
    assert 'return 200 "healthy\\n";' in block(text, "location /healthz")


def test_a_catch_all_that_does_not_own_the_catch_all_host_renders_no_server() -> None:
    ex = catch_all_ex()
    ex.valid_hosts = {CATCH_ALL_HOST: False}
    cfg, _ = generate_nginx_config(ex, STATIC, ConfigParams())
    assert cfg.servers == ()


def test_wildcard_hosts_match_one_label() -> None:
    assert one_label_host_regex("example.com") == ""
    rx = re.compile(one_label_host_regex("*.foo.com"))
    assert rx.match("bar.foo.com") and rx.match("b-1.foo.com")
    for host in ("baz.bar.foo.com", "foo.com", ".foo.com", "barxfoo.com", "bar.foo.com.evil"):
        assert not rx.match(host), host
    ex = IngressEx(ingress(rules=[rule("*.foo.com", path("/", "w")), rule("exact.foo.com", path("/", "e"))]),
                   {"*.foo.com": True, "exact.foo.com": True}, {})
    text, _ = render(ex, ConfigParams(default_server_return="444"))
    wildcard = block(text[text.index("server_name *.foo.com;") - 200:], "server")
    assert 'if ($host !~ "^[^.]+\\\\.foo\\\\.com$") {' in wildcard and "return 444;" in wildcard
    exact = text[text.index("server_name exact.foo.com;"):]
    assert "$host !~" not in exact


def test_exact_path_with_a_trailing_slash_is_an_anchored_regex_listed_first() -> None:
    assert location_keys("/foo/", "Exact") == [(REGEX, "^/foo/$")]
    assert location_keys("/a.b+/", "Exact") == [(REGEX, "^/a\\.b\\+/$")]
    assert location_keys("/", "Exact") == [(EXACT, "/")]
    assert location_keys("/foo/", "Exact", "exact") == [(EXACT, "/foo/")]
    assert location_keys("/aaa/bbb/", "Prefix") == [(EXACT, "/aaa/bbb"), (PREFIX, "/aaa/bbb/")]
    ex = IngressEx(ingress(rules=[rule("h.example.com", path("/aaa/bbb/", "p"),
                                       path("/foo/", "x", path_type="Exact"))]),
                   {"h.example.com": True}, {})
    cfg, warnings = generate_nginx_config(ex, STATIC, ConfigParams())
    assert warnings == []
    assert [(loc.modifier, loc.path) for loc in cfg.servers[0].locations] == [
        (REGEX, "^/foo/$"), (EXACT, "/aaa/bbb"), (PREFIX, "/aaa/bbb/")]
    text, _ = render(ex)
    assert "location = /foo/" not in text and 'location ~ "^/foo/$" {' in text


def test_exact_and_prefix_of_one_path_render_both_exact_winning() -> None:
    ex = IngressEx(ingress(rules=[rule("mixed.example.com", path("/foo", "p"),
                                       path("/foo", "e", path_type="Exact"))]),
                   {"mixed.example.com": True}, {})
    text, warnings = render(ex)
    assert warnings == []
    assert "-e-80;" in block(text, "location = /foo") and "-p-80;" in block(text, "location /foo/")


def test_with_path_regex_the_locations_of_exact_paths_come_first() -> None:
    ex = IngressEx(ingress(rules=[rule("h.example.com", path("/foo", "p"),
                                       path("/foo/bar", "e", path_type="Exact"),
                                       path("/x", "i", path_type="ImplementationSpecific"))],
                           annotations={"nginx.org/path-regex": "case_sensitive"}),
                   {"h.example.com": True}, {})
    cfg, _ = generate_nginx_config(ex, STATIC, ConfigParams())
    assert [(loc.path, loc.exact_regex) for loc in cfg.servers[0].locations] == [
        ("^/foo/bar$", True), ("^/foo", False), ("^/x", False)]


def test_while_a_catch_all_exists_unmatched_paths_and_hosts_go_to_it() -> None:
    ex = IngressEx(ingress(rules=[rule("api.example.com", path("/api", "a")),
                                  rule("*.wild.example.com", path("/x", "w")),
                                  rule("root.example.com", path("/", "r"))]),
                   {"api.example.com": True, "*.wild.example.com": True, "root.example.com": True}, {})
    cfg, warnings = generate_nginx_config(ex, STATIC, ConfigParams(), to_catch_all=True)
    assert warnings == []
    api, wild, root = cfg.servers
    assert [(loc.path, loc.catch_all) for loc in api.locations] == [("/api", False), ("/api/", False),
                                                                   ("/", True)]
    assert [(loc.path, loc.catch_all) for loc in wild.locations][-2:] == [("/", True),
                                                                         ("@ingressctl_catch_all", True)]
    assert not any(loc.catch_all for loc in root.locations)  # its own "/" serves its unmatched paths
    assert api.fallback_status == 0 and wild.to_catch_all
    assert {u.name for u in cfg.upstreams} == {"default-reports-api.example.com-a-80",
                                               "default-reports-*.wild.example.com-w-80",
                                               "default-reports-root.example.com-r-80"}
    text = TEMPLATES.execute_ingress_template(cfg)
    assert "proxy_pass http://$ingressctl_catch_all;" in block(text, "location @ingressctl_catch_all")
    start, end = text.index("server_name *.wild.example.com;"), text.index("server_name root.example.com;")
    wild_text = text[start:end]
    assert "error_page 418 = @ingressctl_catch_all;" in wild_text and "return 418;" in wild_text
    # Without a catch-all: 404 as before, and no reference to it.
    text, _ = render(ex)
    assert "ingressctl_catch_all" not in text


def test_catch_all_upstream_names_the_catch_alls_default_backend() -> None:
    assert catch_all_upstream(catch_all_ex()) == "default-fallback--echo-8080"
    not_owner = catch_all_ex()
    not_owner.valid_hosts = {CATCH_ALL_HOST: False}
    assert catch_all_upstream(not_owner) == ""
    with_rules = IngressEx(ingress(rules=[rule("a.example.com", path("/", "a"))],
                                   default_backend=backend("d", 80)), {"a.example.com": True}, {})
    assert catch_all_upstream(with_rules) == ""
