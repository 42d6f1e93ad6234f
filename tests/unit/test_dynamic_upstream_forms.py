"""The rendered form of an upstream block is parsed by one pattern: it must give exactly what the
line-by-line rules give, for rendered files and for anything near them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingressctl.configs import dynamic_upstreams
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams, proxy_defaults
from ingressctl.configs.dynamic_upstreams import DynamicUpstreams, endpoint_changes
from ingressctl.configs.renderers import IngressRenderer, RenderContext
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.configs.upstream_front import front_upstreams
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key

SPARE = "unix:/run/ingressctl-502-server.sock"
PARAMS = "max_fails=1 fail_timeout=10s max_conns=0"


@contextmanager
def line_by_line() -> Iterator[None]:
    """Every block parsed by the line-by-line rules (the pattern never matches)."""
    with mock.patch.object(dynamic_upstreams, "_RENDERED", re.compile(r"(?!)")):
        yield


def rendered_ingress(endpoints: list[str], annotations: dict[str, str]) -> str:
    spec = {"rules": [{"host": "a.example.com", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
    ]}}]}
    ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"namespace": "ns", "name": "ing", "annotations": annotations}, "spec": spec}
    ex = IngressEx(ing, {"a.example.com": True}, {backend_key("web", 80): endpoints})
    params = ConfigParams()
    ctx = RenderContext(StaticConfigParams(), params, TemplateExecutor(),
                        proxy_defaults=proxy_defaults(params))
    return front_upstreams(IngressRenderer().render(ex, ctx).text)


def test_rendered_upstreams_take_the_one_pattern() -> None:
    """The templates' upstream blocks, fresh and in their dynamic form, are what the pattern describes (so
    the per-file cost stays one match per block), and slotting and parsing them give what the line-by-line
    rules give."""
    fast, slow = DynamicUpstreams(SPARE), DynamicUpstreams(SPARE)
    for endpoints, notes in [
            (["10.0.0.1:80", "10.0.0.2:80"], {}),
            (["[fd00::1]:8080"], {"nginx.org/lb-method": "least_conn", "nginx.org/keepalive": "32"}),
            (["10.0.0.1:80"], {"nginx.org/lb-method": "hash $remote_addr consistent",
                               "nginx.org/max-fails": "3", "nginx.org/fail-timeout": "5s",
                               "nginx.org/max-conns": "7"}),
            ([f"10.0.0.{i}:80" for i in range(1, 8)], {"nginx.org/lb-method": "ip_hash"}),
            (["10.0.0.1:80"], {"nginx.org/lb-method": "random two"})]:
        text = rendered_ingress(endpoints, notes)
        slotted = fast.slot("f", text)
        with line_by_line():
            assert slow.slot("f", text) == slotted
        assert fast.spare_slots("f") == slow.spare_slots("f")
        for form in (text, slotted):
            found = list(dynamic_upstreams._blocks(form))
            assert found
            for _, _, body, body_end in found:
                assert dynamic_upstreams._RENDERED.fullmatch(form, body, body_end), form[body:body_end]
            parsed = list(dynamic_upstreams._upstreams(form))
            with line_by_line():
                assert list(dynamic_upstreams._upstreams(form)) == parsed


# A block as the templates render it (fresh or in its dynamic form), or one near miss of it.
_ADDRESSES = ["10.0.0.1:80", "10.0.0.2:8080", "192.168.100.200:65535", "[fd00::1]:443", "[::1]:80"]
_PARAMS = [PARAMS, "max_fails=3 fail_timeout=5s max_conns=10"]
_ODD_ADDRESSES = ["1.2.3:80", "10.0.0_1:80", "10.0.0.1:80x", "10.0.0.1.2:80", "backend.example.com:80",
                  "unix:/run/o.sock", "10.0.0.1:\u0668\u0660", "10.0.0.1:", "[::1]:80;", "[fd::g]:80", SPARE]
_ODD_PARAMS = [f"{PARAMS} backup", "max_fails=1 fail_timeout=10s max_conns=\u0660",
               "max_fails=1  fail_timeout=10s max_conns=0", "max_fails=1 fail_timeout=10s max_conns=01",
               "max_fails=1 fail_timeout=10s", _PARAMS[1]]
_LB_METHODS = ["least_conn", "random two least_conn", "random two", "random", "ip_hash",
               "hash $remote_addr consistent", "hash $uri"]
_ODD_CHARS = ["\t", " ", "\r", "\x85", "\u2028", "\x1c", "\x0b", ";", "{", "\u00e9", "\n"]
_ODD_LINES = ["", "   ", "# comment", "    ingressctl_dynamic_peers;", "    ingressctl_upstream_front;",
              "    zone z;", "    keepalive 8;", "    least_conn;", f"    server 10.0.0.9:80 {PARAMS};",
              f"    server {SPARE} {PARAMS} down;", f"    server {SPARE} {PARAMS};", "    sticky cookie srv;",
              "    hash $a $b;", "    hash $a consistent x;", "    random two x;"]


@st.composite
def blocks(draw: st.DrawFn) -> str:
    params = draw(st.sampled_from(_PARAMS))
    lines: list[str] = []
    if draw(st.booleans()):
        lines.append("    ingressctl_upstream_front;")
    lines.append("    zone " + draw(st.sampled_from(["ingressctl-upstreams", "u 512k"])) + ";")
    if draw(st.booleans()):
        lines.append("    " + draw(st.sampled_from(_LB_METHODS)) + ";")
    if draw(st.integers(0, 4)):
        addresses = draw(st.lists(st.sampled_from(_ADDRESSES), min_size=1, max_size=4))
    else:
        addresses = [SPARE] if draw(st.booleans()) else []
    lines += [f"    server {a} {params};" for a in addresses]
    lines += [f"    server {SPARE} {params} down;"] * draw(st.integers(0, 3))
    if draw(st.booleans()):
        lines.append("    ingressctl_dynamic_peers;")
    if draw(st.booleans()):
        lines.append(f"    keepalive {draw(st.sampled_from([8, 32]))};")
    if draw(st.booleans()):  # one near miss
        at = draw(st.integers(0, len(lines) - 1))
        line = lines[at]
        change = draw(st.sampled_from(["insert", "repeat", "drop", "swap", "char", "address", "params"]))
        if change == "repeat":
            lines.insert(at, line)
        elif change == "insert":
            lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(_ODD_LINES)))
        elif change == "drop":
            del lines[at]
        elif change == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], line
        elif change == "char":
            i = draw(st.integers(0, len(line)))
            lines[at] = line[:i] + draw(st.sampled_from(_ODD_CHARS)) + line[i:]
        elif change == "address" and line.startswith("    server "):
            lines[at] = line.replace(line.split()[1], draw(st.sampled_from(_ODD_ADDRESSES)), 1)
        elif change == "params" and line.startswith("    server "):
            lines[at] = line.replace(params, draw(st.sampled_from(_ODD_PARAMS)), 1)
    name = draw(st.sampled_from(["ns-ing-a-80", "u", "ns-ing-b-8080", "v\tw", "x\ry", "a{b"]))
    return f"upstream {name} {{\n" + "".join(line + "\n" for line in lines) + "}\n"


@st.composite
def files(draw: st.DrawFn) -> str:
    parts = draw(st.lists(blocks(), max_size=4))
    return "# configuration for ns/ing\n\n" + "\n".join(parts) + "\nserver {\n    listen 80;\n}\n"


@settings(max_examples=500)
@given(st.lists(files(), min_size=1, max_size=4))
def test_the_pattern_and_the_line_rules_agree(texts: list[str]) -> None:
    """Upstream by upstream, slot by slot (with the slot counts a file keeps across versions), and for the
    endpoint-only diff: the same results with and without the pattern."""
    fast, slow = DynamicUpstreams(SPARE), DynamicUpstreams(SPARE)
    previous = None
    for text in texts:
        got = fast.slot("f", text)
        parsed = list(dynamic_upstreams._upstreams(got))
        with line_by_line():
            want = slow.slot("f", text)
            assert list(dynamic_upstreams._upstreams(got)) == parsed
            slow_changes = endpoint_changes(previous, want) if previous is not None else None
        assert got == want
        assert fast.spare_slots("f") == slow.spare_slots("f")
        if previous is not None:
            assert endpoint_changes(previous, got) == slow_changes
        previous = got


_BLOCK = ("upstream u {\n    ingressctl_upstream_front;\n    zone ingressctl-upstreams;\n    least_conn;\n"
          f"    server 10.0.0.1:80 {PARAMS};\n    server 10.0.0.2:80 {PARAMS};\n"
          f"    server {SPARE} {PARAMS} down;\n    keepalive 32;\n}}\n")


@pytest.mark.parametrize(("old", "new"), [
    ("", ""),
    ("    ingressctl_upstream_front;\n", "    ingressctl_upstream_front;\n" * 2),
    ("    keepalive 32;\n", "    keepalive 32;\n    keepalive 8;\n"),
    ("    keepalive 32;\n", "    keepalive 32;\n    ingressctl_dynamic_peers;\n"),
    ("    zone ingressctl-upstreams;\n", "    zone ingressctl\x85upstreams;\n"),
    ("    zone ingressctl-upstreams;\n", "    zone ingressctl-upstreams\r;\n"),
    ("    zone ingressctl-upstreams;\n", "    zone a;b;\n"),
    ("    zone ingressctl-upstreams;\n", ""),
    ("    least_conn;\n", "    hash $a $b;\n"),
    ("    least_conn;\n", "    hash $a consistent;\n"),
    ("    least_conn;\n", "    hash $a\u2028b;\n"),
    ("    least_conn;\n", "    random two\x0bleast_conn;\n"),
    ("10.0.0.2:80", "10.0.0_2:80"),
    ("10.0.0.2:80", "10.0.0.2:\u0668\u0660"),
    ("10.0.0.2:80", "[fd00::2]:80"),
    ("10.0.0.2:80", SPARE),
    (f"10.0.0.2:80 {PARAMS}", "10.0.0.2:80 max_fails=2 fail_timeout=10s max_conns=0"),
    (f"{SPARE} {PARAMS} down", f"{SPARE} max_fails=2 fail_timeout=10s max_conns=0 down"),
    (f"{SPARE} {PARAMS} down", f"{SPARE} {PARAMS}"),
    (f"    server 10.0.0.1:80 {PARAMS};\n    server 10.0.0.2:80 {PARAMS};\n",
     f"    server {SPARE} {PARAMS};\n"),
    ("fail_timeout=10s", "fail_timeout=1\x1cs"),
    ("    server 10.0.0.1:80", "\tserver 10.0.0.1:80"),
])
def test_near_misses_parse_as_the_line_rules_say(old: str, new: str) -> None:
    text = "# c\n" + _BLOCK.replace(old, new, 1) + "\n" + _BLOCK.replace("upstream u", "upstream v")
    fast, slow = DynamicUpstreams(SPARE), DynamicUpstreams(SPARE)
    got = fast.slot("f", text)
    with line_by_line():
        assert slow.slot("f", text) == got
        want = [list(dynamic_upstreams._upstreams(t)) for t in (text, got)]
    assert [list(dynamic_upstreams._upstreams(t)) for t in (text, got)] == want
