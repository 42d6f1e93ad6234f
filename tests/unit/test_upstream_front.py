"""`ingressctl_upstream_front` in conf.d files: where the text transform puts it, and that the dynamic form
of a file (slots, endpoint-only diffs) keeps it."""

from __future__ import annotations

from pathlib import Path

from ingressctl.configs.dynamic_upstreams import DIRECTIVE as DYNAMIC
from ingressctl.configs.dynamic_upstreams import DynamicUpstreams, endpoint_changes
from ingressctl.configs.upstream_front import LINE, front_upstreams
from ingressctl.nginx.modules import UPSTREAM_FRONT, installed_module

PARAMS = "max_fails=1 fail_timeout=10s max_conns=0"
SPARE = "unix:/run/nginx-502-server.sock"


def conf(*addresses: str) -> str:
    servers = "".join(f"    server {a} {PARAMS};\n" for a in addresses)
    return ("# configuration for ns/ing\n\nupstream ns-ing-a-80 {\n    zone ingressctl-upstreams;\n"
            f"    least_conn;\n{servers}}}\n\nupstream ns-ing-b-80 {{\n    server b.example.com:80;\n}}\n\n"
            "server {\n    location / {\n        proxy_pass http://ns-ing-a-80;\n    }\n}\n")


def block(text: str, name: str) -> list[str]:
    start = text.index(f"upstream {name} {{\n")
    return text[start:text.index("\n}\n", start)].splitlines()[1:]


def test_every_upstream_block_starts_with_the_directive_once() -> None:
    text = front_upstreams(conf("10.0.0.1:80"))
    assert block(text, "ns-ing-a-80")[0] == LINE
    assert block(text, "ns-ing-b-80") == [LINE, "    server b.example.com:80;"]
    assert text.count(LINE) == 2
    assert front_upstreams(text) == text
    assert text.replace(LINE + "\n", "") == conf("10.0.0.1:80")


def test_only_blocks_that_start_a_line_are_touched() -> None:
    text = "server {\n    # upstream x {\n    set $upstream_x 1;\n}\n"
    assert front_upstreams(text) == text
    assert front_upstreams("") == ""
    odd = "upstream two words {\n}\nupstream {\n}\nupstream unterminated {"
    assert front_upstreams(odd) == odd
    assert front_upstreams("x\nupstream a {\n}\n") == f"x\nupstream a {{\n{LINE}\n}}\n"


def test_the_dynamic_form_keeps_the_directive_first_and_tells_endpoint_changes_apart() -> None:
    d = DynamicUpstreams(SPARE)
    one = d.slot("f", front_upstreams(conf("10.0.0.1:80")))
    lines = block(one, "ns-ing-a-80")
    assert lines[0] == LINE
    assert lines[1:3] == ["    zone ingressctl-upstreams;", "    least_conn;"]
    assert f"    {DYNAMIC};" in lines
    assert sum(line.strip().startswith("server ") for line in lines) == 2  # the endpoint and a spare slot
    two = d.slot("f", front_upstreams(conf("10.0.0.2:80")))
    assert endpoint_changes(one, two) == {"ns-ing-a-80": ("10.0.0.2:80",)}


def test_the_module_is_found_by_its_own_file_and_stamp(tmp_path: Path) -> None:
    modules = tmp_path / "modules"
    modules.mkdir()
    binary = tmp_path / "nginx"
    binary.write_text("#!/bin/sh\necho 'nginx version: nginx/1.22.1' >&2\n"
                      f"echo 'configure arguments: --modules-path={modules} --with-compat' >&2\n")
    binary.chmod(0o755)
    assert installed_module(str(binary), UPSTREAM_FRONT) == ""
    (modules / UPSTREAM_FRONT).write_bytes(b"")
    assert installed_module(str(binary), UPSTREAM_FRONT) == ""  # no stamp: not built by our script
    (modules / UPSTREAM_FRONT.replace(".so", ".stamp")).write_text("1.22.1 abc\n")
    assert installed_module(str(binary), UPSTREAM_FRONT) == str(modules / UPSTREAM_FRONT)
