"""VirtualServer return bodies (action.return and errorPages[].return) keep NGINX's quoted-string escapes, as
NIC renders them (`\\n` is a newline, `\\\\` a backslash, `\\"` a quote), and no body can end the string, the
directive or the block: `quote_escaped` and the VirtualServer render checked against the tokenizer model of
test_configs_quoting, for hostile sequences (a backslash before the closing quote, `\\\\"`, `\\$`, raw
newlines, `;`, braces, variables NIC does not allow). tests/integration/test_vs_return_body_nginx.py serves
them through a real NGINX."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingressctl.configs.configmaps import ConfigParams
from ingressctl.configs.quoting import NginxValueError, quote_escaped
from ingressctl.configs.renderers import RenderContext
from ingressctl.configs.templates import TemplateExecutor, TemplateRenderError
from ingressctl.kinds.ingress.ingress_ex import SecretReference
from ingressctl.kinds.virtualserver.renderer import VirtualServerRenderer
from ingressctl.kinds.virtualserver.template_model import VirtualServerEx
from ingressctl.kinds.virtualserver.validation import validate_virtual_server
from tests.unit.test_configs_quoting import _unescape, nginx_tokens
from tests.unit.test_injection_fuzz import Stmt, parse_tree, static_params

# Pieces of hostile bodies: escapes NGINX knows and does not know, a backslash before a quote, a variable
# NIC allows and one it does not, NGINX syntax, raw whitespace and control characters.
PIECES = ["\\", '"', '\\"', "\\\\", '\\\\"', "\\n", "\\t", "\\r", "\\'", "\\d", "\\$", "\\${host}", "${host}",
          "$", "${x}", "${request_uri}", "\n", "\t", "\r", "\x00", "\x1b", "\\\n", "\\\t", ";", "{", "}", "#",
          "'", " ", "a", "return 500;", "} server {"]
BODIES = st.lists(st.sampled_from(PIECES), max_size=10).map("".join)
CONTROL = {chr(c) for c in range(0x20)} | {"\x7f"}


def well_formed(body: str) -> bool:
    """NIC's escaped string (every `"` escaped, no `\\` at the end) without a control character other than
    LF, TAB and CR, and no `\\` before a control character."""
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            if i + 1 == len(body) or body[i + 1] in CONTROL:
                return False
            i += 2
            continue
        if c == '"' or (c in CONTROL and c not in "\n\t\r"):
            return False
        i += 1
    return True


@settings(max_examples=1500)
@given(BODIES | st.text(max_size=20))
def test_quote_escaped_is_one_argument_read_with_nginx_escapes_or_rejected(body: str) -> None:
    try:
        out = quote_escaped(body)
    except NginxValueError:
        assert not well_formed(body), repr(body)
        return
    assert well_formed(body), repr(body)
    assert "\n" not in out and "\r" not in out
    assert nginx_tokens(f"return 200 {out};") == [
        ("word", "return"), ("word", "200"), ("word", _unescape(body)), ("sym", ";")], (body, out)


@pytest.mark.parametrize(("body", "reads"), [
    ("EXACT MATCH (=)\\nPath Directive: =/images/logo.jpg\\n",
     "EXACT MATCH (=)\nPath Directive: =/images/logo.jpg\n"),
    ("Path Directive: ~ \\\\.jpg", "Path Directive: ~ \\.jpg"),
    ("OK\n", "OK\n"),
    ('say \\"hi\\"\\t\\r', 'say "hi"\t\r'),
    ("\\$ and \\${host}", "\\$ and \\${host}"),
    ("\\\\", "\\"),
    ("a; } { b # c", "a; } { b # c"),
])
def test_quote_escaped_examples(body: str, reads: str) -> None:
    assert nginx_tokens(f"x {quote_escaped(body)};")[1] == ("word", reads)


@pytest.mark.parametrize("body", ["end\\", 'a"b', 'a\\\\"; return 500; "', "\\\\\\", "a\\\nb", "a\x00",
                                  '\\\\"'])
def test_quote_escaped_rejects_what_could_end_the_string(body: str) -> None:
    with pytest.raises(NginxValueError):
        quote_escaped(body)


def _spec(body: str) -> dict[str, Any]:
    return {"host": "body.example.com",
            "upstreams": [{"name": "up", "service": "svc", "port": 80}],
            "routes": [
                {"path": "=/ret", "action": {"return": {"code": 200, "type": "text/plain", "body": body}}},
                {"path": "/err", "action": {"pass": "up"},
                 "errorPages": [{"codes": [502], "return": {"code": 503, "body": body}}]}]}


def _render(spec: dict[str, Any]) -> list[Stmt] | None:
    vs = {"metadata": {"name": "body", "namespace": "default"}, "spec": spec}
    ex = VirtualServerEx(vs, {"up": ["10.0.0.1:80"]}, SecretReference("", ""))
    try:
        text = VirtualServerRenderer().render(ex, RenderContext(static_params(), ConfigParams(),
                                                                TemplateExecutor())).text
    except TemplateRenderError:
        return None
    return parse_tree(text)


def _returns(stmts: list[Stmt]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for s in stmts:
        if s.name == "return":
            out.append(s.args)
        out.extend(_returns(s.children or []))
    return out


def _shape(stmts: list[Stmt]) -> list[Any]:
    return [(s.name, len(s.args), _shape(s.children) if s.children is not None else None) for s in stmts]


REFERENCE = _render(_spec("plain"))


@settings(max_examples=400, deadline=None)
@given(BODIES)
def test_a_return_body_is_rejected_or_renders_one_argument_nginx_reads_as_nic_renders_it(body: str) -> None:
    spec = _spec(body)
    assert REFERENCE is not None
    errors = [str(e) for e in validate_virtual_server({"metadata": {"name": "body", "namespace": "default"},
                                                       "spec": spec})]
    stmts = _render(copy.deepcopy(spec))     # also without validation: the template alone is safe
    if stmts is not None:
        assert _shape(stmts) == _shape(REFERENCE), repr(body)
    if errors:
        assert any(".body" in e for e in errors), errors
        return
    assert stmts is not None, repr(body)
    assert _returns(stmts).count(("200", _unescape(body))) == 2, (repr(body), _returns(stmts))


@pytest.mark.parametrize(("body", "message"), [
    ("end\\", "escaped"), ('a\\\\"b', "escaped"), ("a\\\nb", "escaped"), ("${x}", "'x' is not a supported"),
    ("\\$x", "curly braces"), ("a\x00", "control characters"), ("\\${evil}", "'evil' is not a supported"),
])
def test_validation_names_the_body_field(body: str, message: str) -> None:
    errors = [str(e) for e in validate_virtual_server({"metadata": {"name": "b", "namespace": "default"},
                                                       "spec": _spec(body)})]
    assert any(e.startswith("spec.routes[0].action.return.body: Invalid value") and message in e
               for e in errors), errors
    assert any(e.startswith("spec.routes[1].errorPages[0].return.body: Invalid value")
               for e in errors), errors
