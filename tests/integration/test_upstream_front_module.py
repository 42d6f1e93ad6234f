"""The upstream-front NGINX module on its own (a real NGINX, a hand-written config): with
`ingressctl_upstream_front` in every upstream block, every `proxy_pass` still reaches the upstream it names,
whether that upstream was declared just before it, long before it, or only after it (the reordering must never
change which upstream a name finds); NGINX still refuses a duplicate upstream, and the directive outside an
upstream block. The controller puts the directive in the upstream blocks of its http {} files."""

from __future__ import annotations

import http.client

import pytest

from ingressctl.demo.backend import Backend
from ingressctl.nginx.manager import Manager
from ingressctl.nginx.modules import UPSTREAM_FRONT, installed_module
from tests.helpers import free_port, scratch_dir
from tests.integration.harness import NS, Env, rule

pytestmark = pytest.mark.integration

N = 60


def module() -> str:
    path = installed_module("nginx", UPSTREAM_FRONT)
    assert path, "the upstream-front module must be installed (scripts/install-system-deps.sh)"
    return path


def other(i: int) -> int:
    """The upstream server i's /other location names: declared long before it, or only after it."""
    return (i * 7 + 11) % N


def config(m: Manager, port: int, backends: list[Backend], extra: str = "") -> str:
    parts = []
    for i in range(N):
        parts.append(f"""
    upstream u{i} {{
        ingressctl_upstream_front;
        server {backends[i % len(backends)].address};
    }}
    server {{
        listen 127.0.0.1:{port};
        server_name h{i};
        location / {{ proxy_pass http://u{i}; }}
        location = /exact {{ proxy_pass http://u{i}; }}
        location /other {{ proxy_pass http://u{other(i)}; }}
    }}""")
    return f"""load_module {module()};
{m.paths.main_directives()}events {{}}
http {{
    access_log off;
    {m.paths.http_directives(stub_status=False)}
    server_names_hash_bucket_size 128;
{"".join(parts)}
{extra}
}}
"""


def manager() -> Manager:
    d = scratch_dir("ic-front-")
    return Manager(conf_dir=f"{d}/conf", run_dir=f"{d}/run", reload_timeout_ms=30000)


def backend_of(port: int, host: str, path: str) -> str:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path, headers={"Host": host})
        r = c.getresponse()
        r.read()
        return r.getheader("X-Backend") or f"HTTP {r.status}"
    finally:
        c.close()


def test_every_proxy_pass_reaches_the_upstream_it_names(backends: list[Backend]) -> None:
    m = manager()
    port = free_port()
    m.create_main_config(config(m, port, backends))
    m.start()
    try:
        for i in range(N):
            assert backend_of(port, f"h{i}", "/") == f"b{i % 3}", i
            assert backend_of(port, f"h{i}", "/exact") == f"b{i % 3}", i
            assert backend_of(port, f"h{i}", "/other") == f"b{other(i) % 3}", i
        m.reload()  # a reload builds the list again from the configuration
        assert backend_of(port, "h5", "/other") == f"b{other(5) % 3}"
    finally:
        m.quit()


@pytest.mark.parametrize(("extra", "error"), [
    ("upstream u3 { ingressctl_upstream_front; server 127.0.0.1:1; }", 'duplicate upstream "u3"'),
    ("server { listen 127.0.0.1:1; location / { ingressctl_upstream_front; } }",
     '"ingressctl_upstream_front" directive is not allowed here'),
])
def test_nginx_still_refuses_what_it_refused(backends: list[Backend], extra: str, error: str) -> None:
    m = manager()
    m.create_main_config(config(m, free_port(), backends, extra))
    m._write_config_version(1)  # what start() writes first; the main config includes it
    ok, out = m.test_config()
    assert not ok and error in out, out


def test_the_controller_fronts_the_upstreams_of_its_http_files(env: Env) -> None:
    b = env.backend("web")
    env.service("web")
    env.endpoints("web", [b])
    env.ingress("front", [rule("front.example.com", ("/", "web"), ("/api", "web"))])
    c = env.controller()
    c.wait_backend("front.example.com", "/api", "web")
    assert c.lbc.configurator.files.main_text.count(f"load_module {module()};") == 1
    text = c.manager.read_config(f"{NS}-front")
    assert text is not None
    blocks = text.count("\nupstream ")
    assert blocks >= 1 and text.count(" {\n    ingressctl_upstream_front;\n") == blocks, text
