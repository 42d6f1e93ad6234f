"""The dynamic form of conf.d files (slots, spare servers, the directive) and the endpoint-only diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingressctl.configs.dynamic_upstreams import (
    DIRECTIVE,
    MIN_SLOTS,
    DynamicUpstreams,
    endpoint_changes,
    slots_for,
)
from ingressctl.nginx.dynamic_peers import MODULE_FILE, DynamicUpdateError, dynamic_peers_module, format_body

SPARE = "unix:/run/nginx-502-server.sock"
PARAMS = "max_fails=1 fail_timeout=10s max_conns=0"


def upstream(name: str, addresses: list[str], *, lb: str = "", keepalive: int = 0, zone: bool = True,
             extra: str = "") -> str:
    lines = [f"upstream {name} {{"]
    if zone:
        lines.append("    zone ingressctl-upstreams;")
    if lb:
        lines.append(f"    {lb};")
    lines += [f"    server {a} {PARAMS};" for a in addresses]
    if keepalive:
        lines.append(f"    keepalive {keepalive};")
    if extra:
        lines.append(f"    {extra}")
    return "\n".join(lines) + "\n}\n"


def config(*upstreams: str) -> str:
    return "# configuration for ns/ing\n" + "".join(upstreams) + "\nserver {\n    listen 80;\n}\n"


def servers(text: str, name: str) -> list[str]:
    block = text[text.index(f"upstream {name} {{"):]
    block = block[:block.index("\n}\n")]
    return [line.strip() for line in block.splitlines() if line.strip().startswith("server ")]


@pytest.mark.parametrize(("n", "slots"),
                         [(0, 2), (1, 2), (2, 4), (3, 4), (4, 8), (7, 8), (8, 16), (13, 16), (14, 32)])
def test_slots_leave_room(n: int, slots: int) -> None:
    assert slots_for(n) == slots
    assert slots_for(n) >= max(n + 1, MIN_SLOTS)


def test_slot_pads_with_spare_down_servers_and_keeps_the_upstream_parameters() -> None:
    d = DynamicUpstreams(SPARE)
    text = d.slot("f", config(upstream("u", ["10.0.0.1:80", "10.0.0.2:80"], lb="least_conn", keepalive=32)))
    assert servers(text, "u") == [f"server 10.0.0.1:80 {PARAMS};", f"server 10.0.0.2:80 {PARAMS};",
                                  f"server {SPARE} {PARAMS} down;", f"server {SPARE} {PARAMS} down;"]
    block = text[text.index("upstream u {"):]
    assert block.index("least_conn;") < block.index("server ") < block.index(f"{DIRECTIVE};") \
        < block.index("keepalive 32;")
    assert text.endswith("\nserver {\n    listen 80;\n}\n")
    assert d.spare_slots("f") == 2


def test_no_endpoints_means_every_slot_is_spare() -> None:
    d = DynamicUpstreams(SPARE)
    text = d.slot("f", config(upstream("u", [SPARE])))
    assert servers(text, "u") == [f"server {SPARE} {PARAMS} down;"] * 2


@pytest.mark.parametrize("block", [
    upstream("u", ["10.0.0.1:80"], zone=False),                       # no zone: NGINX cannot share it
    upstream("u", ["10.0.0.1:80"], extra="sticky cookie srv_id;"),    # anything unknown
    upstream("u", ["backend.example.com:80"]),                        # host names
    upstream("u", ["10.0.0.1:80"]).replace(PARAMS, "max_fails=1 fail_timeout=10s max_conns=0 backup", 1),
])
def test_ineligible_upstreams_stay_as_rendered(block: str) -> None:
    d = DynamicUpstreams(SPARE)
    assert d.slot("f", config(block)) == config(block)
    assert d.spare_slots("f") == 0


def test_slot_counts_change_only_when_endpoints_do_not_fit_or_leave_too_many_spares() -> None:
    d = DynamicUpstreams(SPARE)

    def count(n: int) -> int:
        return len(servers(d.slot("f", config(upstream("u", [f"10.0.0.{i}:80" for i in range(1, n + 1)]))),
                           "u"))

    assert count(1) == 2
    assert count(2) == 2   # still fits
    assert count(3) == 4   # grows
    assert count(1) == 4   # shrinks only past 4 times what is needed
    assert count(4) == 4
    assert count(5) == 8
    assert count(1) == 8   # 8 is at most 4 times the 2 that 1 endpoint needs
    assert count(9) == 16
    assert count(1) == 2
    d.forget("f")
    assert count(4) == 8   # a forgotten file starts again


def test_endpoint_only_changes_are_told_apart_from_other_changes() -> None:
    d = DynamicUpstreams(SPARE)
    old = d.slot("f", config(upstream("u", ["10.0.0.1:80", "10.0.0.2:80"]), upstream("v", ["10.0.1.1:80"])))
    new = d.slot("f", config(upstream("u", ["10.0.0.2:80", "10.0.0.3:80"]), upstream("v", ["10.0.1.1:80"])))
    assert endpoint_changes(old, new) == {"u": ("10.0.0.2:80", "10.0.0.3:80")}
    assert endpoint_changes(old, old) == {}
    none = d.slot("f", config(upstream("u", [SPARE]), upstream("v", ["10.0.1.1:80"])))
    assert endpoint_changes(old, none) == {"u": ()}
    grown = d.slot("f", config(upstream("u", [f"10.0.0.{i}:80" for i in range(1, 7)]),
                               upstream("v", ["10.0.1.1:80"])))
    assert endpoint_changes(none, grown) is None  # 8 slots now: NGINX needs the new config
    lb = d.slot("f", config(upstream("u", [f"10.0.0.{i}:80" for i in range(1, 7)], lb="ip_hash"),
                            upstream("v", ["10.0.1.1:80"])))
    assert endpoint_changes(grown, lb) is None
    assert endpoint_changes(grown, grown.replace("listen 80;", "listen 81;")) is None


def test_the_push_body_is_one_line_per_upstream() -> None:
    assert format_body({"a": ["10.0.0.1:80", "[::1]:80"], "b": []}) == "a 10.0.0.1:80 [::1]:80\nb\n"
    with pytest.raises(DynamicUpdateError):
        format_body({"a b": ["10.0.0.1:80"]})


def test_blocks_are_found_at_the_start_of_the_text_and_of_lines_only() -> None:
    d = DynamicUpstreams(SPARE)
    text = upstream("u", ["10.0.0.1:80"]) + "# upstream x {\n}\n" + "proxy_next_upstream v {\n}\n"
    out = d.slot("f", text)
    assert len(servers(out, "u")) == 2
    assert out.endswith("# upstream x {\n}\nproxy_next_upstream v {\n}\n")
    assert d.slot("g", "server {\n}\n") == "server {\n}\n"


@pytest.mark.parametrize(("version", "compat", "stamp", "found"), [
    ("1.22.1", True, "1.22.1 abc", True),
    ("1.27.4", True, "1.22.1 abc", False),  # built for another NGINX
    ("1.22.1", False, "1.22.1 abc", False),  # a binary that cannot load modules built --with-compat
    ("1.22.1", True, None, False),          # no stamp: not built by build-nginx-module.sh
])
def test_the_module_is_used_only_with_the_nginx_it_was_built_for(
        tmp_path: Path, version: str, compat: bool, stamp: str | None, found: bool) -> None:
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / MODULE_FILE).write_bytes(b"")
    if stamp is not None:
        (modules / MODULE_FILE.replace(".so", ".stamp")).write_text(stamp + "\n")
    flags = f"--modules-path={modules}" + (" --with-compat" if compat else "")
    binary = tmp_path / "nginx"
    binary.write_text(f"#!/bin/sh\necho 'nginx version: nginx/{version}' >&2\n"
                      f"echo 'configure arguments: {flags}' >&2\n")
    binary.chmod(0o755)
    assert dynamic_peers_module(str(binary)) == (str(modules / MODULE_FILE) if found else "")


def test_a_file_written_ahead_is_taken_over_with_its_slots(tmp_path: Path) -> None:
    """`ConfigFiles.write_ahead` (in a forked render process, here the same one on a copy of the slot state)
    writes the dynamic form; `write(..., ahead=)` takes the file over with the slot counts it was written
    with, as if it had slotted and written it here. Only a first write of an announced file is taken over."""
    import copy

    from ingressctl.configs.files import ConfigFiles
    from ingressctl.keys import ResourceKey
    from ingressctl.nginx.manager import Manager

    manager = Manager(binary="nginx", conf_dir=str(tmp_path / "conf"), run_dir=str(tmp_path / "run"))
    files = ConfigFiles(manager, DynamicUpstreams(SPARE))
    text = config(upstream("u", ["10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"]))
    files.expect_written_ahead(["a", "b"])
    child = copy.deepcopy(files.dynamic)  # what a forked process starts from
    forked = ConfigFiles(manager, child)
    written = forked.write_ahead("a", text)
    assert written.slots is not None and written.slots.counts == {"u": 4} and written.slots.spares == 1
    creates: list[str] = []
    real_create = manager.create_config
    manager.create_config = (  # type: ignore[method-assign]
        lambda name, *a, **kw: creates.append(name) or real_create(name, *a, **kw))
    files.write(ResourceKey("default", "a"), "a", text, written)
    assert creates == [], "taken over: neither written nor read here"
    assert files.dynamic is not None and files.dynamic.spare_slots("a") == 1
    assert manager.read_config("a") == DynamicUpstreams(SPARE).slot("a", text)
    # Written again (not a first write): the normal path, whatever `ahead` says.
    text2 = config(upstream("u", ["10.0.0.1:80"]))
    files.write(ResourceKey("default", "a"), "a", text2, written)
    here = DynamicUpstreams(SPARE)  # what slotting both texts here gives (the slots kept from the first)
    here.slot("a", text)
    assert creates == ["a"] and manager.read_config("a") == here.slot("a", text2)
    # Not announced before the fork: never taken over.
    other = forked.write_ahead("c", text)
    files.write(ResourceKey("default", "c"), "c", text, other)
    assert creates == ["a", "c"]


def test_a_file_written_ahead_here_and_not_taken_is_removed_with_its_slots(tmp_path: Path) -> None:
    """`write_ahead` run in the owning process (on the items it measures) leaves the file's slot counts:
    when no `write` takes the file over, `drop_written_ahead` removes the file and forgets them."""
    from ingressctl.configs.files import ConfigFiles
    from ingressctl.nginx.manager import Manager

    manager = Manager(binary="nginx", conf_dir=str(tmp_path / "conf"), run_dir=str(tmp_path / "run"))
    files = ConfigFiles(manager, DynamicUpstreams(SPARE))
    files.expect_written_ahead(["x"])
    files.write_ahead("x", config(upstream("u", ["10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"])))
    assert files.dynamic is not None and files.dynamic.spare_slots("x") == 1
    files.drop_written_ahead()
    assert manager.read_config("x") is None
    assert files.dynamic.slots_of("x") is None and files.dynamic.spare_slots("x") == 0
