"""Injection fuzzing of every VirtualServer string field against the real `nginx -t`.

A fuzzed value (a valid sample with NGINX syntax inserted, or hostile text) is either rejected (validation
or a render error: the resource is reported, nothing is written) or renders a file whose statement tree has
exactly the directives of the unfuzzed VirtualServer (no directive added, removed or moved) and which NGINX
accepts. Bounded: 300 examples, `nginx -t` only for the rendered ones.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams, generate_main_config
from ingressctl.configs.renderers import RenderContext
from ingressctl.configs.templates import TemplateExecutor, TemplateRenderError
from ingressctl.kinds.virtualserver.renderer import VirtualServerRenderer
from ingressctl.kinds.virtualserver.template_model import VirtualServerEx
from ingressctl.kinds.virtualserver.validation import validate_virtual_server
from ingressctl.secret_types import SecretReference
from tests.integration.test_annotations_fuzz_nginx import Staging
from tests.unit.test_injection_fuzz import HOSTILE, INJECTIONS, Rendered, Stmt, parse_tree

pytestmark = pytest.mark.integration

RENDERER = VirtualServerRenderer()
TEMPLATES = TemplateExecutor()


def base_spec() -> dict[str, Any]:
    return {
        "host": "fuzz.example.com",
        "tls": {"secret": "fuzz-tls", "redirect": {"enable": True}},
        "upstreams": [{"name": "up", "service": "svc", "port": 80, "lb-method": "least_conn",
                       "fail-timeout": "5s", "connect-timeout": "3s", "next-upstream": "error timeout",
                       "client-max-body-size": "2m", "buffer-size": "8k",
                       "buffers": {"number": 4, "size": "8k"}, "busy-buffers-size": "16k",
                       "client-body-buffer-size": "16k"}],
        "routes": [
            {"path": "/pass", "action": {"pass": "up"}},
            {"path": "=/exact", "action": {"return": {"code": 200, "type": "text/plain", "body": "body",
                                                      "headers": [{"name": "X-Ret", "value": "v"}]}}},
            {"path": "~ ^/re/(.*)", "action": {"proxy": {
                "upstream": "up", "rewritePath": "/x/$1",
                "requestHeaders": {"set": [{"name": "X-Set", "value": "v"}]},
                "responseHeaders": {"add": [{"name": "X-Add", "value": "v"}], "hide": ["X-Hide"]}}}},
            {"path": "/redirect", "action": {"redirect": {"url": "https://example.com/x"}}},
            {"path": "/match", "matches": [{"conditions": [{"header": "X-H", "value": "v"},
                                                           {"cookie": "c", "value": "v"},
                                                           {"argument": "a", "value": "v"}],
                                            "action": {"pass": "up"}}],
             "action": {"pass": "up"},
             "errorPages": [{"codes": [502], "return": {"body": "err", "type": "text/html",
                                                        "headers": [{"name": "X-Err", "value": "v"}]}},
                            {"codes": [404], "redirect": {"url": "https://example.com/404"}}]},
            # A route for "/": a fuzzed path that becomes "/" is then a duplicate (rejected) instead of
            # legitimately replacing the catch-all 404 location (one directive fewer).
            {"path": "/", "action": {"pass": "up"}},
            {"path": "^~ /lp", "action": {"pass": "up"}},
        ],
    }


Setter = Callable[[dict[str, Any], str], None]
BODY_FIELDS = {"return.body", "errorPage.body"}
# The path fields keep their kind (modifier) when fuzzed; a value of another kind renders another route.
PATH_KINDS = {"prefix path": "/", "exact path": "=", "regex path": "~", "longest-prefix path": "^~"}


def _route(i: int, *path: Any) -> Setter:
    def set_(spec: dict[str, Any], value: str) -> None:
        node: Any = spec["routes"][i]
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value
    return set_


def _up(key: str) -> Setter:
    def set_(spec: dict[str, Any], value: str) -> None:
        spec["upstreams"][0][key] = value
    return set_


FIELDS: dict[str, tuple[Setter, str]] = {
    "host": (lambda s, v: s.__setitem__("host", v), "fuzz.example.com"),
    "tls.secret": (lambda s, v: s["tls"].__setitem__("secret", v), "fuzz-tls"),
    "upstream.service": (_up("service"), "svc"),
    "upstream.lb-method": (_up("lb-method"), "least_conn"),
    "upstream.fail-timeout": (_up("fail-timeout"), "5s"),
    "upstream.connect-timeout": (_up("connect-timeout"), "3s"),
    "upstream.next-upstream": (_up("next-upstream"), "error timeout"),
    "upstream.client-max-body-size": (_up("client-max-body-size"), "2m"),
    "upstream.buffer-size": (_up("buffer-size"), "8k"),
    "upstream.busy-buffers-size": (_up("busy-buffers-size"), "16k"),
    "upstream.client-body-buffer-size": (_up("client-body-buffer-size"), "16k"),
    "longest-prefix path": (_route(6, "path"), "^~ /lp"),
    "prefix path": (_route(0, "path"), "/pass"),
    "exact path": (_route(1, "path"), "=/exact"),
    "regex path": (_route(2, "path"), "~ ^/re/(.*)"),
    "return.body": (_route(1, "action", "return", "body"), "body"),
    "return.type": (_route(1, "action", "return", "type"), "text/plain"),
    "return.header.name": (_route(1, "action", "return", "headers", 0, "name"), "X-Ret"),
    "return.header.value": (_route(1, "action", "return", "headers", 0, "value"), "v"),
    "proxy.rewritePath": (_route(2, "action", "proxy", "rewritePath"), "/x/$1"),
    "proxy.set.name": (_route(2, "action", "proxy", "requestHeaders", "set", 0, "name"), "X-Set"),
    "proxy.set.value": (_route(2, "action", "proxy", "requestHeaders", "set", 0, "value"), "v"),
    "proxy.add.name": (_route(2, "action", "proxy", "responseHeaders", "add", 0, "name"), "X-Add"),
    "proxy.add.value": (_route(2, "action", "proxy", "responseHeaders", "add", 0, "value"), "v"),
    "proxy.hide": (_route(2, "action", "proxy", "responseHeaders", "hide", 0), "X-Hide"),
    "redirect.url": (_route(3, "action", "redirect", "url"), "https://example.com/x"),
    "match.header": (_route(4, "matches", 0, "conditions", 0, "header"), "X-H"),
    "match.header.value": (_route(4, "matches", 0, "conditions", 0, "value"), "v"),
    "match.cookie": (_route(4, "matches", 0, "conditions", 1, "cookie"), "c"),
    "match.cookie.value": (_route(4, "matches", 0, "conditions", 1, "value"), "v"),
    "match.argument": (_route(4, "matches", 0, "conditions", 2, "argument"), "a"),
    "errorPage.body": (_route(4, "errorPages", 0, "return", "body"), "err"),
    "errorPage.type": (_route(4, "errorPages", 0, "return", "type"), "text/html"),
    "errorPage.header.value": (_route(4, "errorPages", 0, "return", "headers", 0, "value"), "v"),
    "errorPage.redirect.url": (_route(4, "errorPages", 1, "redirect", "url"), "https://example.com/404"),
}


def render(spec: dict[str, Any], static: StaticConfigParams) -> Rendered | str:
    vs = {"metadata": {"name": "fuzz", "namespace": "default"}, "spec": spec}
    errors = validate_virtual_server(vs)
    if errors:
        return f"validation: {errors[0]}"
    ref = SecretReference("default/fuzz-tls", path=f"{static.conf_dir}/secrets/default-tls")
    ex = VirtualServerEx(vs, {"up": ["10.0.0.1:80"]}, ref)
    try:
        rendered = RENDERER.render(ex, RenderContext(static, ConfigParams(), TEMPLATES))
    except TemplateRenderError as e:
        return f"template: {e}"
    refused = [w for w in rendered.warnings if "NGINX would refuse them" in w]
    if refused:     # left out with a warning on the resource, as a rejection is reported
        return f"warning: {refused[0]}"
    text = rendered.text
    main = TEMPLATES.execute_main_template(generate_main_config(static, ConfigParams()))
    return Rendered(text, main)


def shape(stmts: list[Stmt], parent: str = "") -> list[Any]:
    """The statement tree without argument values: directive names (map and split_clients entries are values,
    not directives), argument counts and blocks."""
    return [("*" if parent in ("map", "split_clients") else s.name, len(s.args),
             shape(s.children, s.name) if s.children is not None else None) for s in stmts]


@pytest.fixture(scope="module")
def staging() -> Iterator[Staging]:
    base = tempfile.mkdtemp(prefix="vsfz-")
    try:
        yield Staging(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def reference(staging: Staging) -> list[Any]:
    r = render(base_spec(), staging.static)
    assert isinstance(r, Rendered), r
    ok, out = staging.nginx_t(r)
    assert ok, out
    return shape(parse_tree(r.ingress))


def check(staging: Staging, reference: list[Any], field: str, value: str) -> bool:
    """False when rejected; True when rendered with the reference's shape and accepted by `nginx -t`."""
    if value == "":
        return False    # unsets an optional field (fewer directives by design); required ones are rejected
    if field in PATH_KINDS and not value.startswith(PATH_KINDS[field]):
        return False    # another kind of route (a regex route's rewrite becomes proxy_pass's URI)
    spec = copy.deepcopy(base_spec())
    FIELDS[field][0](spec, value)
    r = render(spec, staging.static)
    if isinstance(r, str):
        return False
    assert_same_shape_and_loads(staging, reference, r, f"{field}={value!r}")
    return True


def assert_same_shape_and_loads(staging: Staging, reference: list[Any], r: Rendered, what: str) -> None:
    """The rendered file has the reference's directives and `nginx -t` accepts it."""
    assert shape(parse_tree(r.ingress)) == reference, f"{what} changed the directives:\n{r.ingress}"
    ok, out = staging.nginx_t(r)
    assert ok, f"nginx -t refused {what}:\n{out}\n{r.ingress}"


def test_every_field_sample_renders_and_a_plain_injection_is_rejected(staging: Staging,
                                                                      reference: list[Any]) -> None:
    for field, (_, sample) in FIELDS.items():
        assert check(staging, reference, field, sample), field
        # A return body is text between quotes (NIC allows newlines, `;` and braces there): the same
        # directives, the text inside the string.
        assert check(staging, reference, field, sample + "\n}; evil on;") == (field in BODY_FIELDS), field


def fuzz_values(fields: dict[str, tuple[Any, str]]) -> st.SearchStrategy[tuple[str, str]]:
    """(field, value): a field's sample with an injection inserted somewhere, or hostile text."""
    return st.one_of(
        st.builds(lambda f, inj, at: (f, fields[f][1][:at] + inj + fields[f][1][at:]),
                  st.sampled_from(sorted(fields)), st.sampled_from(INJECTIONS), st.integers(0, 40)),
        st.tuples(st.sampled_from(sorted(fields)), HOSTILE),
    )


VALUES = fuzz_values(FIELDS)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
@given(case=VALUES)
def test_fuzzed_fields_are_rejected_or_pass_nginx_t_with_the_same_directives(
        staging: Staging, reference: list[Any], case: tuple[str, str]) -> None:
    check(staging, reference, *case)
