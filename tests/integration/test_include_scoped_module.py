"""The scoped-include NGINX module on its own (a real NGINX, hand-written files) and in the controller.

`ingressctl_include_scoped conf.d/*.conf` must serve exactly what `include conf.d/*.conf` serves: every
`proxy_pass` reaches the upstream its own file declares (before or after it), or one declared before the
directive; each host reaches its own server, on addresses shared by every file, and the default server stays
the default. What it refuses, it refuses loudly: an upstream block whose name another file also declares or
names (NGINX's "duplicate upstream", naming both places), and a duplicate `listen` in one server. The
controller includes conf.d through it when the module is installed, and the test of the whole configuration
(its bisection of a failed reload) still finds the file at fault.
"""

from __future__ import annotations

import http.client

import pytest

from ingressctl.demo.backend import Backend
from ingressctl.nginx.manager import Manager
from ingressctl.nginx.modules import INCLUDE_SCOPED, UPSTREAM_FRONT, installed_module
from tests.helpers import free_port, scratch_dir
from tests.integration.harness import NS, Env, rule

pytestmark = pytest.mark.integration

N = 40


def module(name: str = INCLUDE_SCOPED) -> str:
    path = installed_module("nginx", name)
    assert path, f"{name} must be installed (scripts/install-system-deps.sh)"
    return path


def resource(i: int, port: int, backends: list[Backend]) -> str:
    """What one controller file holds: its upstreams around its server (one before, one after its use)."""
    return f"""
upstream u{i} {{
    ingressctl_upstream_front;
    server {backends[i % len(backends)].address};
}}
server {{
    listen 127.0.0.1:{port};
    server_name h{i};
    location / {{ proxy_pass http://u{i}; }}
    location /late {{ proxy_pass http://late{i}; }}
    location /shared {{ proxy_pass http://shared; }}
}}
upstream late{i} {{
    server {backends[(i + 1) % len(backends)].address};
}}
"""


def manager(port: int, backends: list[Backend], *, scoped: bool = True, extra: dict[str, str] | None = None,
            front: bool = True) -> Manager:
    d = scratch_dir("ic-scoped-")
    m = Manager(conf_dir=f"{d}/conf", run_dir=f"{d}/run", reload_timeout_ms=30000)
    for i in range(N):
        m.create_config(f"r{i:03d}", resource(i, port, backends) if front
                        else resource(i, port, backends).replace("    ingressctl_upstream_front;\n", ""))
    for name, text in (extra or {}).items():
        m.create_config(name, text)
    loads = f"load_module {module()};\nload_module {module(UPSTREAM_FRONT)};\n" if scoped else (
        f"load_module {module(UPSTREAM_FRONT)};\n")
    include = "ingressctl_include_scoped conf.d/*.conf;" if scoped else "include conf.d/*.conf;"
    m.create_main_config(f"""{loads}{m.paths.main_directives()}events {{}}
http {{
    access_log off;
    {m.paths.http_directives(stub_status=False).replace("include conf.d/*.conf;", "")}
    upstream shared {{ server {backends[2].address}; }}
    server {{
        listen 127.0.0.1:{port} default_server;
        server_name _;
        return 404;
    }}
    {include}
}}
""")
    m._write_config_version(1)  # what start() writes first; the main config includes it
    return m


def backend_of(port: int, host: str, path: str) -> str:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path, headers={"Host": host})
        r = c.getresponse()
        r.read()
        return r.getheader("X-Backend") or f"HTTP {r.status}"
    finally:
        c.close()


def test_every_file_serves_what_include_serves(backends: list[Backend]) -> None:
    answers = {}
    for scoped in (False, True):
        port = free_port()
        m = manager(port, backends, scoped=scoped)
        m.start()
        try:
            got = {(h, p): backend_of(port, h, p) for i in range(N) for h in (f"h{i}",)
                   for p in ("/", "/late", "/shared")}
            got[("unknown", "/")] = backend_of(port, "unknown", "/")
            m.reload()  # a reload reads the files again through the directive
            assert backend_of(port, "h7", "/late") == got[("h7", "/late")]
        finally:
            m.quit()
        answers[scoped] = got
    assert answers[True] == answers[False]
    assert answers[True][("h4", "/")] == "b1" and answers[True][("h4", "/late")] == "b2"
    assert answers[True][("h4", "/shared")] == "b2" and answers[True][("unknown", "/")] == "HTTP 404"


@pytest.mark.parametrize(("extra", "errors"), [
    # Another file's upstream block of the same name: NGINX's own refusal, with both places named.
    ({"zz-dup": "upstream u3 { server 127.0.0.1:1; }\n"},
     ['duplicate upstream "u3" in ', "zz-dup.conf:1", "r003.conf:2"]),
    # A name another file's upstream block declares, referenced from here: refused, never a different one.
    ({"zz-ref": "server { listen 127.0.0.1:1; server_name zz; location / { proxy_pass http://u5; } }\n"},
     ['duplicate upstream "u5" in ', "zz-ref.conf:1", "r005.conf:2"]),
    # Case does not matter to NGINX's names, nor here.
    ({"zz-case": "upstream U9 { server 127.0.0.1:1; }\n"}, ['duplicate upstream "U9"', "r009.conf:2"]),
    # A duplicate listen in one server is still found.
    ({"zz-listen": "server { listen 127.0.0.1:1; listen 127.0.0.1:1; server_name zl; return 200; }\n"},
     ["a duplicate listen 127.0.0.1:1", "zz-listen.conf:1"]),
])
def test_what_it_refuses_it_refuses_loudly(backends: list[Backend], extra: dict[str, str],
                                           errors: list[str]) -> None:
    m = manager(free_port(), backends, extra=extra)
    ok, out = m.test_config()
    assert not ok, out
    for e in errors:
        assert e in out, out


def test_files_may_share_addresses_of_plain_upstreams(backends: list[Backend]) -> None:
    """Two files proxying to the same address (an upstream NGINX makes for it) both work."""
    port = free_port()
    text = "server {{ listen 127.0.0.1:{p}; server_name {h}; location / {{ proxy_pass http://{a}; }} }}\n"
    extra = {f"zz-{h}": text.format(p=port, h=h, a=backends[0].address) for h in ("a1", "a2")}
    m = manager(port, backends, extra=extra)
    m.start()
    try:
        assert backend_of(port, "a1", "/") == "b0" and backend_of(port, "a2", "/") == "b0"
    finally:
        m.quit()


def test_the_controller_includes_conf_d_through_it(env: Env) -> None:
    b = env.backend("web")
    env.service("web")
    env.endpoints("web", [b])
    env.ingress("scoped", [rule("scoped.example.com", ("/", "web"), ("/api", "web"))])
    env.ingress("other", [rule("other.example.com", ("/", "web"))])
    c = env.controller()
    c.wait_backend("scoped.example.com", "/api", "web")
    c.wait_backend("other.example.com", "/", "web")
    main = c.lbc.configurator.files.main_text
    assert main.count(f"load_module {module()};") == 1
    assert "\n    ingressctl_include_scoped conf.d/*.conf;\n" in main and "include conf.d/" not in main
    assert c.manager.read_config(f"{NS}-scoped") is not None
