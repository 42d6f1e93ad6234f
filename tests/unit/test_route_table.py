"""Routes (configs.routes, configs.route_updates): which servers become routes, how their blocks are written,
and which changes are pushed without a reload (and exactly what is pushed)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from ingressctl.configs.config import EXACT, PREFIX, REGEX, IngressMeta, IngressNginxConfig, Location, Server
from ingressctl.configs.route_updates import RouteUpdates, api_lines, split_routes
from ingressctl.configs.routes import (
    RouteContext,
    RouteShapes,
    encode,
    render_routes,
    routable,
    shape_of,
    size_bytes,
    spare_count,
    split_routed,
)

CTX = RouteContext(http_port=80, https_port=443, server_tokens="on", proxy_keepalive=False,
                   proxy_connect_timeout="60s", proxy_read_timeout="60s", proxy_send_timeout="60s",
                   proxy_buffering=True)
PARAMS = "max_fails=1 fail_timeout=10s max_conns=0"


def loc(path: str, modifier: str = PREFIX, **kw: Any) -> Location:
    kw.setdefault("inherits_proxy_defaults", True)
    return Location(path=path, modifier=modifier, upstream="ns-web-a.example.com-web-80", service_name="web",
                    **kw)


def server(**kw: Any) -> Server:
    locations = kw.pop("locations", (loc("/"), loc("/api", EXACT), loc("/api/")))
    return Server(name=kw.pop("name", "a.example.com"), locations=locations, **kw)


TLS = {"ssl": True, "ssl_certificate": "/pem/ns-tls", "ssl_certificate_key": "/pem/ns-tls",
       "certificate_per_handshake": True, "ssl_redirect": True}


def test_plain_servers_are_routable_plain_tls_ones_too() -> None:
    assert routable(server(), CTX)
    assert routable(server(**TLS), CTX)
    assert routable(server(**{**TLS, "ssl_redirect": False}), CTX)
    # Without a `/` path the server answers the other paths 404, as the module does.
    assert routable(server(locations=(loc("/api", EXACT), loc("/api/")), fallback_status=404), CTX)
    assert not routable(server(fallback_status=404), CTX)


@pytest.mark.parametrize("change", [
    {"name": "*.example.com"}, {"name": "~^a"}, {"name": "A.example.com"}, {"locations": ()},
    {"ports": (8080,)}, {"ssl_ports": (8443,), **TLS}, {"server_tokens": "off"}, {"snippets": ("x;",)},
    {"hsts": True}, {"proxy_protocol": True}, {"app_root": "/app"}, {"fallback_status": 403},
    {"host_regex": "a"}, {"to_catch_all": True}, {"policy_lines": ("deny all;",)},
    {**TLS, "certificate_per_handshake": False}, {**TLS, "ssl_ciphers": "HIGH"},
    {"ssl_reject_handshake": True, "ssl": True}, {"redirect_to_https": True},
    {"locations": (loc("/", REGEX),)}, {"locations": (loc("/", rewrite="/x"),)},
    {"locations": (loc("/", proxy_read_timeout="5s"),)}, {"locations": (loc("/", websocket=True),)},
    {"locations": (loc("/", inherits_proxy_defaults=False),)}, {"locations": (loc("/", grpc=True),)},
    {"locations": (loc("/", snippets=("x;",)),)}, {"locations": (loc("/", catch_all=True),)},
    {"locations": (loc("/", client_max_body_size="1.5m"),)},
    # NGINX answers /foo with a 301 to /foo/ when only `location /foo/` exists: the module does not.
    {"locations": (loc("/foo/"),)},
])
def test_anything_the_module_does_not_reproduce_keeps_its_server_block(change: dict[str, Any]) -> None:
    assert not routable(server(**change), CTX)


def test_a_field_the_model_gains_later_keeps_servers_that_use_it_out() -> None:
    """The comparison is field for field: a server differing from the plain one anywhere is not routable."""
    allowed = {"name", "locations", "ssl", "ssl_certificate", "ssl_certificate_key",
               "certificate_per_handshake", "ssl_redirect", "http2", "http2_directive", "disable_ipv6",
               "http_redirect_code"}
    fields = {f.name for f in dataclasses.fields(Server)} - allowed
    plain = server()
    for name in fields:
        value = getattr(plain, name)
        other: Any = (not value if isinstance(value, bool) else value + 1 if isinstance(value, int)
                      else (*value, "x") if isinstance(value, tuple)
                      else value + "x" if isinstance(value, str) else object())
        assert not routable(dataclasses.replace(plain, **{name: other}), CTX), name


def test_the_route_block_of_a_server() -> None:
    cfg = IngressNginxConfig(upstreams=(), servers=(), ingress=IngressMeta(name="web", namespace="ns"))
    text = render_routes(cfg, server(**TLS, locations=(loc("/"), loc("/a b;", EXACT,
                                                                     client_max_body_size="8m"))), CTX)
    assert text == ("\ningressctl_route_host a.example.com ns web /pem/ns-tls 301 443 {\n"
                    "    prefix / ingressctl_route_1m ns-web-a.example.com-web-80 web 1048576;\n"
                    "    exact /a%20b%3B ingressctl_route_8m ns-web-a.example.com-web-80 web 8388608;\n}\n")
    plain = render_routes(cfg, server(), CTX)
    assert plain.startswith("\ningressctl_route_host a.example.com ns web - 0 443 {")


def test_encoding_sizes_and_shapes() -> None:
    assert encode("/plain-path_1.x") == "/plain-path_1.x"
    assert encode('/a %{}"#\\;\'é') == "/a%20%25%7B%7D%22%23%5C%3B%27%C3%A9"
    assert (size_bytes("0"), size_bytes("10"), size_bytes("2k"), size_bytes("3M"), size_bytes("1g")) == (
        0, 10, 2048, 3 * 1024 ** 2, 1024 ** 3)
    assert shape_of("8M") == "ingressctl_route_8m" and shape_of("1.5m") is None
    assert [spare_count(n) for n in (0, 2048, 2049, 10000, 50000)] == [64, 64, 64, 512, 2048]


def test_split_routed_keeps_the_others() -> None:
    a, b = server(), server(name="b.example.com", locations=(loc("/", REGEX),))
    cfg = IngressNginxConfig(upstreams=(), servers=(a, b), ingress=IngressMeta(name="web", namespace="ns"))
    rest, routed = split_routed(cfg, CTX)
    assert rest.servers == (b,) and routed == [a]


def test_route_shapes_announce_only_new_shapes() -> None:
    shapes = RouteShapes()
    assert shapes.set("a", frozenset({"1m"}))
    assert not shapes.set("b", frozenset({"1m"}))
    assert shapes.set("b", frozenset({"1m", "8m"}))
    assert not shapes.set("b", frozenset({"1m"})) and shapes.all() == {"1m"}
    assert not shapes.set("a", frozenset()) and shapes.all() == {"1m"}
    assert not shapes.set("b", frozenset()) and shapes.all() == frozenset()


# ------------------------------------------------------------------------------------ pushes


def upstream(name: str, *addresses: str, slots: int = 2, lb: str = "least_conn") -> str:
    servers = "".join(f"    server {a} {PARAMS};\n" for a in addresses)
    spares = f"    server unix:/run/nginx-502-server.sock {PARAMS} down;\n" * (slots - len(addresses))
    return (f"upstream {name} {{\n    ingressctl_upstream_front;\n    zone ingressctl-upstreams;\n"
            f"    {lb};\n{servers}{spares}    ingressctl_dynamic_peers;\n}}\n")


def route(host: str, *routes: tuple[str, str, str]) -> str:
    lines = "".join(f"    {kind} {path} ingressctl_route_1m {up} web 1048576;\n" for kind, path, up in routes)
    return f"\ningressctl_route_host {host} ns web - 0 443 {{\n{lines}}}\n"


def file(*parts: str) -> str:
    return "# configuration for ns/web\n\n" + "\n".join(parts)


SPARES = "\n".join(
    upstream(f"ingressctl-route-spare-{i}", "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", slots=4)
    for i in range(2))


class Recorder:
    def __init__(self, fail: bool = False) -> None:
        self.peers: list[dict[str, tuple[str, ...]]] = []
        self.routes: list[str] = []
        self.fail = fail
        self.reloads = 1

    def push(self, body: str) -> None:
        from ingressctl.nginx.routes import RoutesUpdateError

        if self.fail:
            raise RoutesUpdateError("refused")
        self.routes.append(body)

    def push_endpoints(self, servers: Mapping[str, tuple[str, ...]]) -> None:
        self.peers.append(dict(servers))


def updates(rec: Recorder) -> RouteUpdates:
    ru = RouteUpdates(rec, rec.push_endpoints, lambda: rec.reloads)  # type: ignore[arg-type]
    ru.set_spares(SPARES)
    return ru


A = upstream("ns-web-a-80", "10.0.0.1:80")
B = upstream("ns-web-b-80", "10.0.0.2:80")


def test_route_and_endpoint_changes_are_pushed_addresses_first() -> None:
    rec = Recorder()
    old = file(A, route("a.example.com", ("prefix", "/", "ns-web-a-80")))
    new = file(upstream("ns-web-a-80", "10.0.0.9:80"),
               route("a.example.com", ("prefix", "/", "ns-web-a-80"), ("exact", "/x", "ns-web-a-80")))
    assert updates(rec).push({"ns-web": (old, new)})
    assert rec.peers == [{"ns-web-a-80": ("10.0.0.9:80",)}]
    assert rec.routes == ["host a.example.com ns web - 0 443\nroute prefix / ingressctl_route_1m ns-web-a-80 "
                          "web 1048576\nroute exact /x ingressctl_route_1m ns-web-a-80 web 1048576\n"]


def test_a_new_upstream_borrows_a_spare_until_the_next_reload() -> None:
    rec = Recorder()
    ru = updates(rec)
    old = file(A, route("a.example.com", ("prefix", "/", "ns-web-a-80")))
    new = file(A, B, route("a.example.com", ("prefix", "/", "ns-web-b-80")))
    assert ru.push({"ns-web": (old, new)})
    assert rec.peers == [{"ingressctl-route-spare-0": ("10.0.0.2:80",)}]
    assert "route prefix / ingressctl_route_1m ingressctl-route-spare-0 web" in rec.routes[0]
    assert ru.free_spares == 1
    # Its endpoints move: to the spare that serves it.
    to_b = route("a.example.com", ("prefix", "/", "ns-web-b-80"))
    moved = file(A, upstream("ns-web-b-80", "10.0.0.3:80"), to_b)
    assert ru.push({"ns-web": (new, moved)})
    assert rec.peers[-1] == {"ingressctl-route-spare-0": ("10.0.0.3:80",)}
    # After a reload the file's own block serves it, and the spares are free again.
    rec.reloads += 1
    assert ru.free_spares == 2
    back = file(A, upstream("ns-web-b-80", "10.0.0.4:80"), to_b)
    assert ru.push({"ns-web": (moved, back)})
    assert rec.peers[-1] == {"ns-web-b-80": ("10.0.0.4:80",)}


def test_hosts_added_removed_and_moved() -> None:
    rec = Recorder()
    ru = updates(rec)
    added = file(B, route("b.example.com", ("prefix", "/", "ns-web-b-80")))
    assert ru.push({"ns-b": (None, added)})
    assert rec.routes[-1].startswith("host b.example.com")
    assert ru.push({"ns-b": (added, None)})
    assert rec.routes[-1] == "delete b.example.com\n"
    # A host leaving one file for another in one batch is set once, as the file that has it now says.
    gone = file(A)
    there = file(A, route("a.example.com", ("prefix", "/", "ns-web-a-80")))
    assert ru.push({"ns-x": (there, gone), "ns-y": (gone, there)})
    assert rec.routes[-1].startswith("host a.example.com") and "delete" not in rec.routes[-1]


@pytest.mark.parametrize(("old", "new"), [
    # A server block changed, appeared or went.
    (file(A, "server {\n    listen 80;\n}\n"), file(A, "server {\n    listen 81;\n}\n")),
    (None, file(A, "server {\n    listen 80;\n}\n")),
    (file(A, "server {\n    listen 80;\n}\n"), None),
    # An upstream changed beyond its addresses, or a new one that is not dynamic or not like the spares.
    (file(A), file(upstream("ns-web-a-80", "10.0.0.1:80", lb="ip_hash"))),
    (file(A), file(A, "upstream x {\n    server 10.0.0.1:80;\n}\n")),
    (file(A), file(A, upstream("ns-web-c-80", "10.0.0.1:80", lb="ip_hash"))),
    # More addresses than a spare has slots.
    (file(A), file(A, upstream("ns-web-c-80", *(f"10.0.0.{i}:80" for i in range(5)), slots=8))),
])
def test_anything_else_is_reloaded_and_nothing_is_pushed(old: str | None, new: str | None) -> None:
    rec = Recorder()
    assert not updates(rec).push({"ns-web": (old, new)})
    assert rec.peers == [] and rec.routes == []


def test_when_the_spares_run_out_the_batch_is_reloaded_and_no_spare_is_kept() -> None:
    rec = Recorder()
    ru = updates(rec)
    files = {f"f{i}": (None, file(upstream(f"ns-new{i}-80", "10.0.0.1:80"),
                                  route(f"h{i}.example.com", ("prefix", "/", f"ns-new{i}-80"))))
             for i in range(3)}
    assert not ru.push(files)
    assert rec.peers == [] and ru.free_spares == 2


def test_nothing_is_pushed_before_the_first_reload() -> None:
    rec = Recorder()
    rec.reloads = 0
    new = file(A, route("a.example.com", ("prefix", "/", "ns-web-a-80")))
    assert not updates(rec).push({"ns-web": (file(A), new)})
    assert rec.routes == []


def test_a_refused_push_falls_back_and_stream_files_are_never_pushed() -> None:
    rec = Recorder(fail=True)
    ru = updates(rec)
    assert not ru.push({"ns-web": (file(A), file(A, route("a.example.com", ("prefix", "/", "ns-web-a-80"))))})
    assert not updates(Recorder()).push({"stream-conf.d/ts": (file(A), file(A) + "\n")})


def test_split_and_api_lines() -> None:
    text = file(A, route("a.example.com", ("prefix", "/", "ns-web-a-80")), route("b.example.com"))
    blocks, rest = split_routes(text)
    assert list(blocks) == ["a.example.com", "b.example.com"] and "ingressctl_route_host" not in rest
    assert api_lines(blocks["a.example.com"], lambda u: u.upper()) == [
        "host a.example.com ns web - 0 443", "route prefix / ingressctl_route_1m NS-WEB-A-80 web 1048576"]
    assert split_routes("no routes here\n") == ({}, "no routes here\n")
    assert split_routes(route("c.example.com").lstrip())[0].keys() == {"c.example.com"}


def test_hosts_a_wildcard_or_regex_server_would_take_keep_their_server_blocks() -> None:
    from ingressctl.configs.routes import captured, capturing_names

    text = ('server {\n    server_name *.example.com;\n}\nserver {\n    server_name exact.example.com;\n}\n'
            'server {\n    server_name ~^ "";\n}\nserver {\n    server_name www.shop.*;\n}\n')
    names = capturing_names(text)
    assert names == {"*.example.com", "~^", "www.shop.*"}
    assert capturing_names("ingressctl_route_host a.example.com ns a - 0 443 {\n}\n") == frozenset()
    assert captured("a.example.com", frozenset({"*.example.com"}))
    assert not captured("example.com", frozenset({"*.example.com"}))
    assert captured("www.shop.de", frozenset({"www.shop.*"}))
    assert captured("anything.org", frozenset({"~^"}))
    assert not captured("other.org", frozenset({"*.example.com", "www.shop.*"}))
    ctx = dataclasses.replace(CTX, captures=frozenset({"*.example.com"}))
    assert not routable(server(), ctx) and routable(server(name="a.example.org"), ctx)
