"""The Ingress annotations and ConfigMap keys NIC added in 5.2-5.5: parsing (NIC's rules and messages),
rendering, the deprecated ssl-redirect, the master/minion lists, and what NGINX 1.22 cannot load
(sticky-cookie-services: accepted, not rendered, a warning naming what it needs)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingressctl.configs import directive_values as dv
from ingressctl.configs import parsing
from ingressctl.configs.configmaps import ConfigParams, generate_main_config, parse_config_map
from ingressctl.kinds.ingress.annotations import (
    MASTER_DENYLIST,
    MINION_DENYLIST,
    MINION_INHERITANCE_LIST,
    check_annotations,
    minion_annotations,
)
from ingressctl.kinds.ingress.config import AnnotationError, generate_nginx_config_for_mergeable
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.kinds.ingress.validation import validate_ingress
from ingressctl.nginx.capabilities import Capabilities, parse_version
from ingressctl.validation import aggregate_message
from tests.unit.test_configs_annotations import HOST, STATIC, TEMPLATES, cafe, render, valid
from tests.unit.test_configs_ingress import block, ingress, path, rule
from tests.unit.test_configs_quoting import nginx_tokens


def test_rewrite_target_plain_and_regex_paths() -> None:
    anns = {"nginx.org/rewrite-target": "/beverages"}
    valid(anns)
    text, warnings = render(cafe(anns))
    assert warnings == []
    assert '        rewrite "^/tea" "/beverages" break;\n' in block(text, "location /tea/")
    assert '        rewrite "^/tea" "/beverages" break;\n' in block(text, "location = /tea")
    anns = {"nginx.org/rewrite-target": "/v2/$1", "nginx.org/path-regex": "case_insensitive"}
    valid(anns, paths=[path("/api/(.*)", "tea", path_type="ImplementationSpecific")])
    text, _ = render(cafe(anns, paths=[path("/api/(.*)", "tea", path_type="ImplementationSpecific")]))
    assert '        rewrite "(?i)^/api/(.*)" "/v2/$1" break;\n' in text


def test_rewrite_target_yields_to_rewrites_with_a_warning() -> None:
    anns = {"nginx.org/rewrite-target": "/x", "nginx.org/rewrites": "serviceName=tea rewrite=/t"}
    text, warnings = render(cafe(anns))
    assert "rewrite " not in text and "proxy_pass http://default-cafe-cafe.example.com-tea-80/t" in text
    assert warnings == ["annotation nginx.org/rewrite-target is ignored: nginx.org/rewrites is set"]


@pytest.mark.parametrize("value", ["https://evil.example.com/", "//evil", "/a/../b", "/a;b", "/a b", "/a{1}",
                                   "/a|b", "/a<b", "/a,b", "/^a", "/~a", "/a`b", "x", "/a\nb", "/$host",
                                   "/a\\b"])
def test_rewrite_target_rejects(value: str) -> None:
    errors = check_annotations({"nginx.org/rewrite-target": value})
    assert len(errors) == 1 and errors[0].startswith("annotation nginx.org/rewrite-target: invalid value")


def test_ssl_redirect_new_name_wins_and_the_old_one_is_deprecated() -> None:
    text, warnings = render(cafe({"ingress.kubernetes.io/ssl-redirect": "false"}, tls=True))
    assert "if ($scheme = http)" not in text
    assert warnings == ["annotation ingress.kubernetes.io/ssl-redirect is deprecated: use "
                        "nginx.org/ssl-redirect instead"]
    text, warnings = render(cafe({"nginx.org/ssl-redirect": "false"}, tls=True))
    assert "if ($scheme = http)" not in text and warnings == []
    both = {"nginx.org/ssl-redirect": "true", "ingress.kubernetes.io/ssl-redirect": "false"}
    text, warnings = render(cafe(both, tls=True))
    assert "if ($scheme = http)" in text
    assert warnings == ["annotation ingress.kubernetes.io/ssl-redirect is ignored: nginx.org/ssl-redirect is "
                        "set"]
    bad = validate_ingress(cafe({"nginx.org/ssl-redirect": "yes"}).ingress)
    assert "nginx.org/ssl-redirect" in str(bad[0])


def test_http_redirect_code_in_both_redirects_from_annotation_and_config_map() -> None:
    anns = {"nginx.org/http-redirect-code": "308", "nginx.org/redirect-to-https": "true"}
    valid(anns, tls=True)
    text, _ = render(cafe(anns, tls=True))
    assert "return 308 https://$host:443$request_uri;" in text
    assert "return 308 https://$host$request_uri;" in text
    params, errors = parse_config_map({"http-redirect-code": "302"})
    assert errors == [] and params.http_redirect_code == 302
    text, _ = render(cafe({}, tls=True), params)
    assert "return 302 https://$host:443$request_uri;" in text
    text, _ = render(cafe({}, tls=True))
    assert "return 301 https://$host:443$request_uri;" in text  # NIC's default
    assert check_annotations({"nginx.org/http-redirect-code": "303"}) == [
        'annotation nginx.org/http-redirect-code: invalid value "303": must be one of 301, 302, 307, 308']


def test_add_header_server_level_and_values() -> None:
    anns = {"nginx.org/add-header": 'X-Frame-Options: DENY, X-Note: say \\"hi\\":always'}
    valid(anns)
    text, _ = render(cafe(anns))
    server = block(text, "\nserver")
    assert '    add_header X-Frame-Options "DENY";\n    add_header X-Note "say \\"hi\\"" always;\n' in server
    assert "add_header" not in block(text, "location = /tea")
    for bad, detail in (("X-A: $host", "must not contain any '$'"), ("X-A", "must have the format"),
                        ("X-A: a:b", "must have the format"), ('X-A: a"b', "must have all '\"' escaped"),
                        ("X A: b", "a valid HTTP header"), ("X-A:", "empty value")):
        errors = check_annotations({"nginx.org/add-header": bad})
        assert len(errors) == 1 and detail in errors[0], (bad, errors)


def test_app_root_redirects_only_the_root() -> None:
    valid({"nginx.org/app-root": "/coffee"})
    text, _ = render(cafe({"nginx.org/app-root": "/coffee"}))
    assert '    if ($uri = /) {\n        return 302 "$scheme://$http_host/coffee";\n    }\n' in text
    for bad, detail in (("/", "cannot be '/'"), ("/a/", "cannot end with '/'"), ("a", "must start with '/'"),
                        ("/~a", "RFC 1738"), ("/a b", "RFC 1738"), ("/$x", "RFC 1738"), ("//a", "'//'")):
        errors = check_annotations({"nginx.org/app-root": bad})
        assert len(errors) == 1 and detail in errors[0], (bad, errors)


def test_buffers_next_upstream_and_body_buffer_per_location() -> None:
    anns = {"nginx.org/client-body-buffer-size": "16k", "nginx.org/proxy-busy-buffers-size": "16k",
            "nginx.org/proxy-buffers": "8 8k", "nginx.org/proxy-next-upstream": "error timeout http_502",
            "nginx.org/proxy-next-upstream-timeout": "10s", "nginx.org/proxy-next-upstream-tries": "3"}
    valid(anns)
    text, warnings = render(cafe(anns))
    assert warnings == []
    loc = block(text, "location = /tea")
    for line in ("client_body_buffer_size 16k;", "proxy_busy_buffers_size 16k;",
                 "proxy_next_upstream error timeout http_502;", "proxy_next_upstream_timeout 10s;",
                 "proxy_next_upstream_tries 3;"):
        assert f"        {line}\n" in loc, line
    # NGINX would refuse a busy size above all buffers but one: the buffer settings are left out (a warning).
    text, warnings = render(cafe({"nginx.org/proxy-busy-buffers-size": "64k"}))
    assert "proxy_busy_buffers_size" not in text
    assert warnings == ["proxy buffer settings are ignored (NGINX would refuse them): "
                        "proxy-busy-buffers-size must be less than the size of all proxy buffers minus one "
                        "buffer"]
    assert parsing.buffers_problem("8 4k", "8k", "", proxy_busy_buffers_size="4k").startswith(
        "proxy-busy-buffers-size must be equal to or greater")


@pytest.mark.parametrize("value,detail", [
    ("error error", "duplicate value 'error'"), ("off timeout", "'off' cannot be combined"),
    ("denied", "only supported with NGINX Plus"), ("http_501", "invalid value 'http_501'"),
    ("", "at least one"),
])
def test_proxy_next_upstream_rejects(value: str, detail: str) -> None:
    errors = check_annotations({"nginx.org/proxy-next-upstream": value})
    assert len(errors) == 1 and detail in errors[0], errors


def test_proxy_redirect() -> None:
    anns = {"nginx.org/proxy-redirect-from": "~^http://([^/]+)/(.*)$",
            "nginx.org/proxy-redirect-to": "https://$1/$2"}
    valid(anns)
    text, _ = render(cafe(anns))
    assert '    proxy_redirect "~^http://([^/]+)/(.*)$" "https://$1/$2";\n' in block(text, "\nserver")
    text, _ = render(cafe({"nginx.org/proxy-redirect-from": "off"}))
    assert '    proxy_redirect "off";\n' in text
    text, _ = render(cafe({"nginx.org/proxy-redirect-from": "default"}))
    assert "proxy_redirect" not in text  # NGINX's default at server level: nothing to emit
    for anns_bad, detail in (
            ({"nginx.org/proxy-redirect-to": "/x"}, "requires nginx.org/proxy-redirect-from"),
            ({"nginx.org/proxy-redirect-from": "http://a/"}, "requires nginx.org/proxy-redirect-to"),
            ({"nginx.org/proxy-redirect-from": "off", "nginx.org/proxy-redirect-to": "/x"},
             "cannot be combined"),
            ({"nginx.org/proxy-redirect-from": "~(", "nginx.org/proxy-redirect-to": "/x"},
             "regular expression"),
            ({"nginx.org/proxy-redirect-from": "http://a/;", "nginx.org/proxy-redirect-to": "/x"},
             "must not"),
            ({"nginx.org/proxy-redirect-from": "http://a/", "nginx.org/proxy-redirect-to": "/$nope"},
             "unknown NGINX variable"),
            ({"nginx.org/proxy-redirect-from": "http://$host/", "nginx.org/proxy-redirect-to": "/"},
             "only in a regular expression")):
        errors = check_annotations(anns_bad)
        assert len(errors) == 1 and detail in errors[0], (anns_bad, errors)


def test_ssl_ciphers_only_on_ssl_servers() -> None:
    anns = {"nginx.org/ssl-ciphers": "HIGH:!aNULL", "nginx.org/ssl-prefer-server-ciphers": "true"}
    valid(anns, tls=True)
    text, _ = render(cafe(anns, tls=True))
    assert "    ssl_ciphers HIGH:!aNULL;\n    ssl_prefer_server_ciphers on;\n" in text
    text, _ = render(cafe(anns))
    assert "ssl_ciphers" not in text and "ssl_prefer_server_ciphers" not in text
    assert "selects at least one cipher" in check_annotations({"nginx.org/ssl-ciphers": "NOSUCHCIPHER"})[0]


def test_sticky_cookie_services_is_accepted_left_out_and_warned_about() -> None:
    anns = {"nginx.org/sticky-cookie-services": "serviceName=tea srv_id expires=1h path=/tea httponly"}
    valid(anns)
    old = dataclasses.replace(STATIC, capabilities=Capabilities(version=(1, 22, 1)))
    text, warnings = render(cafe(anns), static=old)
    assert "sticky" not in text
    assert warnings == ["annotation nginx.org/sticky-cookie-services is accepted but not applied: the "
                        "open-source `sticky cookie` directive needs NGINX 1.29.6 or newer, and this NGINX "
                        "is 1.22.1; the sticky directive is left out"]
    _, warnings = render(cafe(anns))
    assert "this NGINX is of an unknown version" in warnings[0]
    # An NGINX that has the directive gets it, in the upstreams of the named Service only.
    newer = dataclasses.replace(STATIC, capabilities=Capabilities(version=(1, 29, 6)))
    text, warnings = render(cafe(anns), static=newer)
    assert warnings == []
    assert "    sticky cookie srv_id expires=1h path=/tea httponly;\n" in block(
        text, "upstream default-cafe-cafe.example.com-tea-80")
    assert "sticky" not in block(text, "upstream default-cafe-cafe.example.com-coffee-80")
    assert parse_version("1.31.3") == (1, 31, 3) and parse_version("1.x") == ()
    for bad in ("tea srv_id", "serviceName=tea", "serviceName=tea id expires=soon", "serviceName=tea id;x"):
        assert len(check_annotations({"nginx.org/sticky-cookie-services": bad})) == 1, bad
    assert dv.parse_sticky_cookie_services("serviceName=a x; serviceName=b y secure") == (
        dv.StickyCookie("a", "x"), dv.StickyCookie("b", "y", ("secure",)))


def test_limit_req_key_is_variables_only() -> None:
    assert check_annotations({"nginx.org/limit-req-key": "${binary_remote_addr}$uri"}) == []
    errors = check_annotations({"nginx.org/limit-req-key": "$binary_remote_addr:$uri"})
    assert len(errors) == 1 and "must be NGINX variables only" in errors[0]


def test_mergeable_lists_have_the_5_5_entries() -> None:
    assert "nginx.org/sticky-cookie-services" in MASTER_DENYLIST
    assert {"nginx.org/ssl-redirect", "nginx.org/http-redirect-code", "nginx.org/ssl-ciphers",
            "nginx.org/ssl-prefer-server-ciphers", "nginx.org/app-root"} <= MINION_DENYLIST
    assert "nginx.org/proxy-busy-buffers-size" in MINION_INHERITANCE_LIST
    effective, removed = minion_annotations({"nginx.org/app-root": "/x"},
                                            {"nginx.org/proxy-busy-buffers-size": "16k"})
    assert effective == {"nginx.org/proxy-busy-buffers-size": "16k"} and removed == ["nginx.org/app-root"]


def test_minion_add_header_and_proxy_redirect_apply_to_its_locations() -> None:
    master = ingress("shop", annotations={"nginx.org/mergeable-ingress-type": "master",
                                          "nginx.org/add-header": "X-Master: m",
                                          "nginx.org/sticky-cookie-services": "serviceName=tea id"},
                     rules=[{"host": HOST}])
    minion = ingress("tea", annotations={"nginx.org/mergeable-ingress-type": "minion",
                                         "nginx.org/add-header": "X-Minion: t",
                                         "nginx.org/proxy-redirect-from": "default",
                                         "nginx.org/app-root": "/tea"},
                     rules=[rule(HOST, path("/tea", "tea"))])
    result = generate_nginx_config_for_mergeable(MergeableIngresses(
        IngressEx(master, {HOST: True}, {}),
        [IngressEx(minion, {HOST: True}, {backend_key("tea", 80): ["10.0.0.1:80"]},
                   valid_minion_paths={"/tea": True})]), STATIC, ConfigParams())
    text = TEMPLATES.execute_ingress_template(result.config)
    loc = block(text, "location /tea/")
    assert '        add_header X-Minion "t";\n' in loc and "        proxy_redirect \"default\";\n" in loc
    assert '    add_header X-Master "m";\n' in text
    assert "if ($uri = /)" not in text and "sticky" not in text
    assert result.warnings == ["a master Ingress cannot have the annotation(s) "
                               "nginx.org/sticky-cookie-services; ignored"]
    assert result.minion_warnings == {
        "default/tea": ["a minion Ingress cannot have the annotation(s) nginx.org/app-root; ignored"]}


def test_config_map_5_5_keys() -> None:
    params, errors = parse_config_map({"add-header": "X-Frame-Options: DENY:always",
                                       "client-body-buffer-size": "32k", "proxy-busy-buffers-size": "16k",
                                       "http-redirect-code": "307", "proxy-buffers": "4 16k",
                                       "proxy-buffer-size": "16k"})
    assert errors == []
    main = TEMPLATES.execute_main_template(generate_main_config(STATIC, params))
    assert '    add_header X-Frame-Options "DENY" always;\n' in main
    assert "    client_body_buffer_size 32k;\n" in main
    text, warnings = render(cafe({}), params)
    loc = block(text, "location = /tea")
    assert warnings == [] and "proxy_busy_buffers_size 16k;" in loc and "proxy_buffers 4 16k;" in loc
    # One bad add-header entry drops all of them; bad buffer values are reported and keep the default.
    params, errors = parse_config_map({"add-header": "X-A: 1, X-B: $host", "proxy-buffers": "4",
                                       "proxy-buffer-size": "16x", "http-redirect-code": "200",
                                       "client-body-buffer-size": "1g", "proxy-busy-buffers-size": "x"})
    assert params.http_add_headers == () and params.proxy_buffers == "" and params.proxy_buffer_size == ""
    assert [k for k, _ in errors] == ["add-header", "client-body-buffer-size", "http-redirect-code",
                                      "proxy-buffer-size", "proxy-buffers", "proxy-busy-buffers-size"]


def test_invalid_new_annotations_reject_the_ingress_through_validation() -> None:
    ing = cafe({"nginx.org/app-root": "/", "nginx.org/proxy-next-upstream-tries": "-1"}).ingress
    message = aggregate_message(validate_ingress(ing))
    assert "annotations.nginx.org/app-root: Invalid value: \"/\": path cannot be '/'" in message
    assert "annotations.nginx.org/proxy-next-upstream-tries" in message
    with pytest.raises(AnnotationError):
        render(cafe({"nginx.org/rewrite-target": "/../x"}))


@pytest.mark.parametrize(("path_value", "path_type", "detail"), [
    ("//evil.example.com/x", "ImplementationSpecific", "must not start with '//'"),
    ("/a/../b", "ImplementationSpecific", "must not contain '..' path segments"),
    ("/a/..", "ImplementationSpecific", "must not contain '..' path segments"),
    ("/a\\..\\b", "ImplementationSpecific", "must not contain '..' path segments"),
    ("/static/var/x", "Prefix", "must not contain invalid paths"),
    ("/home/root", "Exact", "must not contain invalid paths"),
])
def test_paths_rejected_as_nic_5_5_does(path_value: str, path_type: str, detail: str) -> None:
    ing = ingress("cafe", rules=[rule(HOST, path(path_value, "tea", path_type=path_type))])
    message = aggregate_message(validate_ingress(ing))
    assert "spec.rules[0].http.paths[0].path: Invalid value" in message and detail in message, message


def test_paths_nic_5_5_still_accepts() -> None:
    for p in ("/a..b/c", "/api/v1.2/", "/(..)/x", "/va"):
        ing = ingress("cafe", rules=[rule(HOST, path(p, "tea", path_type="ImplementationSpecific"))])
        assert validate_ingress(ing) == [], p
    # As in NIC 5.5.4 (not yet its main branch), /var and /root match anywhere, even inside a word.
    ing = ingress("cafe", rules=[rule(HOST, path("/variety", "tea", path_type="ImplementationSpecific"))])
    assert "must not contain invalid paths" in aggregate_message(validate_ingress(ing))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.builds(lambda v, inj, at: v[:at] + inj + v[at:],
              st.just("serviceName=tea srv_id expires=1h domain=.example.com path=/tea httponly secure "
                      "samesite=lax"),
              st.sampled_from(["; evil on;", "\n}", "}", "{", '"', "'", "#", "$host", "\\", " ", ";",
                               "\x00"]),
              st.integers(min_value=0, max_value=90)),
    st.text(alphabet=st.sampled_from(list(' \t\n;{}"\'\\#$/a=~*^()[],:0123456789sk')), max_size=40)))
def test_fuzzed_sticky_cookies_render_one_sticky_statement_or_are_rejected(value: str) -> None:
    """With an NGINX that has `sticky cookie`, a sticky-cookie-services value is rejected or renders exactly
    one `sticky cookie <name> <params>` statement in the tea upstream (no injected statement, block or
    comment)."""
    anns = {"nginx.org/sticky-cookie-services": value}
    if check_annotations(anns) or validate_ingress(cafe(anns).ingress):
        return
    text, _ = render(cafe(anns), static=dataclasses.replace(STATIC,
                                                            capabilities=Capabilities(version=(1, 31, 3))))
    upstream = block(text, "upstream default-cafe-cafe.example.com-tea-80")
    tokens = nginx_tokens(upstream)
    statements = [i for i, t in enumerate(tokens) if t == ("word", "sticky")]
    assert len(statements) <= 1
    syms = [t for t in tokens if t[0] == "sym"]
    assert syms.count(("sym", "{")) == 1 and syms.count(("sym", "}")) == 1
    if statements:
        end = tokens.index(("sym", ";"), statements[0])
        words = [w for _, w in tokens[statements[0]:end]]
        parsed = dv.parse_sticky_cookie_services(value)
        tea = next(c for c in parsed if c.service == "tea")
        assert words == ["sticky", "cookie", tea.name, *tea.params]


def test_rewrite_target_leaves_the_catch_all_location_alone() -> None:
    from ingressctl.kinds.ingress.config import generate_nginx_config

    cfg, _ = generate_nginx_config(cafe({"nginx.org/rewrite-target": "/beverages"}), STATIC, ConfigParams(),
                                   to_catch_all=True)
    text = TEMPLATES.execute_ingress_template(cfg)
    assert 'rewrite "^/tea" "/beverages" break;' in block(text, "location /tea/")
    catch_all = block(text, "location /")
    assert "proxy_pass http://$ingressctl_catch_all;" in catch_all and "rewrite" not in catch_all
