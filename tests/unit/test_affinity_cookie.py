"""ingress-nginx's session affinity (`affinity: cookie`, `session-cookie-*`) as NGINX's `sticky cookie`:
ingress-nginx's values and fallbacks, the cookie's attributes and path, nginx.org's annotation winning, and
an NGINX without `sticky` (a warning, nothing rendered)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from ingressctl.configs.configmaps import ConfigParams
from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.annotations_ingress_nginx import PREFIX
from ingressctl.kinds.ingress.config import generate_nginx_config_for_mergeable
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.nginx.capabilities import Capabilities
from tests.unit.test_ingress_nginx_annotations import STATIC, TEMPLATES, render

N = PREFIX
NEWER = dataclasses.replace(STATIC, capabilities=Capabilities(version=(1, 29, 6)))
OLD = dataclasses.replace(STATIC, capabilities=Capabilities(version=(1, 22, 1)))
COOKIE = {N + "affinity": "cookie"}


def sticky_lines(text: str) -> dict[str, str]:
    """upstream name -> its `sticky` line."""
    found = re.findall(r"upstream (\S+) \{\n(?:    [^\n]*\n)*?    (sticky [^\n]*);\n", text)
    return dict(found)


def statuses(annotations: dict[str, str]) -> dict[str, Status]:
    return {e.key.removeprefix(N): e.status for e in translate(annotations).report}


def test_defaults_cookie_per_upstream_with_the_path_that_uses_it() -> None:
    text, warnings = render(COOKIE, static=NEWER)
    assert warnings == []
    lines = sticky_lines(text)
    assert sorted(lines.values()) == ["sticky cookie INGRESSCOOKIE httponly path=/",
                                      "sticky cookie INGRESSCOOKIE httponly path=/api"]
    assert lines[next(u for u in lines if u.endswith("-api-80"))].endswith("path=/api")


def test_every_attribute_in_nginx_form() -> None:
    anns = {N + "session-cookie-name": "route", N + "session-cookie-expires": "172800",
            N + "session-cookie-max-age": "3600", N + "session-cookie-path": "/",
            N + "session-cookie-domain": ".example.com", N + "session-cookie-samesite": "Lax",
            N + "session-cookie-secure": "true", N + "affinity-mode": "persistent"}
    text, warnings = render({**COOKIE, **anns}, static=NEWER)
    assert set(sticky_lines(text).values()) == {
        "sticky cookie route expires=3600s domain=.example.com httponly samesite=lax secure path=/"}
    assert len(warnings) == 1 and "session-cookie-expires ignored (" + N + "session-cookie-max-age is set" \
        in warnings[0]


def test_expires_alone_and_a_session_cookie_without_either() -> None:
    text, _ = render({**COOKIE, N + "session-cookie-expires": "60"}, static=NEWER)
    assert all(" expires=60s " in line for line in sticky_lines(text).values())
    text, _ = render(COOKIE, static=NEWER)
    assert not any("expires=" in line for line in sticky_lines(text).values())


@pytest.mark.parametrize(("key", "value"), [
    ("session-cookie-name", "a b"), ("session-cookie-name", "a;b"), ("session-cookie-name", "a/b"),
    ("session-cookie-expires", "-1"), ("session-cookie-expires", "1h"), ("session-cookie-max-age", "0"),
    ("session-cookie-path", "/a b"), ("session-cookie-path", "app"), ("session-cookie-path", "/a;evil"),
    ("session-cookie-domain", "a;b"), ("session-cookie-domain", "a b"), ("session-cookie-samesite", "Nonee"),
    ("session-cookie-secure", "yes"), ("affinity-mode", "Balanced"), ("affinity-canary-behavior", "x"),
    ("session-cookie-change-on-failure", "maybe"), ("session-cookie-conditional-samesite-none", "2"),
])
def test_a_value_ingress_nginx_refuses_falls_back_to_its_default_with_a_warning(key: str, value: str) -> None:
    tr = translate({**COOKIE, N + key: value})
    assert tr.problems == () and statuses({**COOKIE, N + key: value})[key] is Status.IGNORED
    assert f"{N}{key} ignored (invalid value" in tr.warnings[0]
    text, _ = render({**COOKIE, N + key: value}, static=NEWER)
    lines = set(sticky_lines(text).values())
    assert lines == {"sticky cookie INGRESSCOOKIE httponly path=/",
                     "sticky cookie INGRESSCOOKIE httponly path=/api"}


def test_without_affinity_cookie_the_others_are_ignored_and_nothing_is_sticky() -> None:
    for anns in ({N + "session-cookie-name": "route"}, {N + "affinity": "ip"},
                 {N + "affinity": "Cookie", N + "session-cookie-name": "r"}):
        tr = translate(anns)
        assert tr.problems == () and all(e.status is Status.IGNORED for e in tr.report), anns
        text, warnings = render(anns, static=NEWER)
        assert "sticky" not in text and len(warnings) == 1
    assert statuses({N + "affinity": " cookie "})["affinity"] is Status.TRANSLATED  # spaces trimmed


def test_approximations_are_reported_for_their_values_only() -> None:
    assert statuses({**COOKIE, N + "affinity-mode": "balanced", N + "affinity-canary-behavior": "sticky",
                     N + "session-cookie-change-on-failure": "false"}) == {
        "affinity": Status.TRANSLATED, "affinity-mode": Status.APPROXIMATED,
        "affinity-canary-behavior": Status.APPROXIMATED,
        "session-cookie-change-on-failure": Status.APPROXIMATED}
    assert statuses({**COOKIE, N + "affinity-mode": "persistent", N + "affinity-canary-behavior": "legacy",
                     N + "session-cookie-change-on-failure": "true",
                     N + "session-cookie-conditional-samesite-none": "true"}) == {
        "affinity": Status.TRANSLATED, "affinity-mode": Status.SERVED,
        "affinity-canary-behavior": Status.SERVED, "session-cookie-change-on-failure": Status.SERVED,
        "session-cookie-conditional-samesite-none": Status.SERVED}
    assert statuses({**COOKIE, N + "session-cookie-samesite": "None",
                     N + "session-cookie-conditional-samesite-none": "true"})[
        "session-cookie-conditional-samesite-none"] is Status.APPROXIMATED


def test_nginx_org_sticky_cookie_services_wins() -> None:
    text, warnings = render({**COOKIE, "nginx.org/sticky-cookie-services": "serviceName=web srv_id path=/"},
                            static=NEWER)
    assert set(sticky_lines(text).values()) == {"sticky cookie srv_id path=/"}
    assert (f"annotation nginx.org/sticky-cookie-services wins over {N}affinity (both set the upstreams' "
            f"sticky cookie); {N}affinity is ignored") in warnings


def test_an_nginx_without_sticky_serves_the_ingress_without_it_and_says_so() -> None:
    text, warnings = render(COOKIE, static=OLD)
    assert "sticky" not in text
    assert warnings == [f"annotation {N}affinity is accepted but not applied: the open-source "
                        "`sticky cookie` directive needs NGINX 1.29.6 or newer, and this NGINX is 1.22.1; "
                        "the sticky directive is left out"]


def test_regex_paths_use_slash_unless_session_cookie_path_is_set() -> None:
    text, _ = render({**COOKIE, N + "use-regex": "true"}, static=NEWER)
    assert set(sticky_lines(text).values()) == {"sticky cookie INGRESSCOOKIE httponly path=/"}
    text, _ = render({**COOKIE, N + "use-regex": "true", N + "session-cookie-path": "/api"}, static=NEWER)
    assert set(sticky_lines(text).values()) == {"sticky cookie INGRESSCOOKIE httponly path=/api"}


def test_a_minion_s_affinity_is_on_its_own_upstreams_only() -> None:
    from tests.unit.test_configs_ingress import ingress, path, rule

    host = "shop.example.com"
    master = ingress("shop", annotations={"nginx.org/mergeable-ingress-type": "master"},
                     rules=[{"host": host}])
    tea = ingress("tea", annotations={"nginx.org/mergeable-ingress-type": "minion", **COOKIE},
                  rules=[rule(host, path("/tea", "tea"))])
    coffee = ingress("coffee", annotations={"nginx.org/mergeable-ingress-type": "minion"},
                     rules=[rule(host, path("/coffee", "coffee"))])
    result = generate_nginx_config_for_mergeable(MergeableIngresses(
        IngressEx(master, {host: True}, {}),
        [IngressEx(tea, {host: True}, {backend_key("tea", 80): ["10.0.0.1:80"]},
                   valid_minion_paths={"/tea": True}),
         IngressEx(coffee, {host: True}, {backend_key("coffee", 80): ["10.0.0.2:80"]},
                   valid_minion_paths={"/coffee": True})]), NEWER, ConfigParams())
    lines = sticky_lines(TEMPLATES.execute_ingress_template(result.config))
    assert list(lines.values()) == ["sticky cookie INGRESSCOOKIE httponly path=/tea"]
    assert "tea" in next(iter(lines)) and "coffee" not in next(iter(lines))
