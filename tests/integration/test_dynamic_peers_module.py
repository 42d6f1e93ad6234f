"""The dynamic-peers NGINX module on its own (a real NGINX with 2 workers and a hand-written config): every
built-in balancer sends traffic only to the addresses pushed, over keep-alive connections to the upstream
too; a bad body (unknown or non-dynamic upstream, bad address, more addresses than slots) answers 4xx and
changes nothing; the directive refuses an upstream without a zone."""

from __future__ import annotations

import http.client
import os

import pytest
import requests
import requests_unixsocket

from ingressctl.demo.backend import Backend
from ingressctl.nginx.dynamic_peers import API_PATH, DynamicUpdateError, dynamic_peers_module
from ingressctl.nginx.manager import Manager
from ingressctl.nginx.stub_status import unix_socket_url
from tests.helpers import free_port, scratch_dir

pytestmark = pytest.mark.integration

LB_METHODS = ["", "least_conn;", "ip_hash;", "hash $request_uri consistent;", "hash $arg_k;",
              "random two least_conn;"]


def main_config(m: Manager, port: int, lb: str, extra_upstream: str = "") -> str:
    module = dynamic_peers_module("nginx")
    assert module, "the dynamic-peers module must be installed (scripts/install-system-deps.sh)"
    spare = f"unix:{m.run_dir}/nginx-502-server.sock"
    slots = "".join(f"        server {spare} max_fails=1 fail_timeout=10s down;\n" for _ in range(4))
    return f"""load_module {module};
{m.paths.main_directives()}worker_processes 2;
events {{}}
http {{
    access_log off;
    {m.paths.http_directives(stub_status=False)}
    server {{ listen unix:{m.run_dir}/nginx-502-server.sock; return 502; }}
    upstream zone-holder {{ zone upstreams 1m; server {spare}; }}
    upstream web {{
        zone upstreams;
        {lb}
{slots}        ingressctl_dynamic_peers;
        keepalive 8;
    }}
    {extra_upstream}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://web;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_next_upstream error timeout;
        }}
    }}
    server {{
        listen unix:{m.dynamic_peers_socket};
        client_body_buffer_size 1m;
        location = {API_PATH} {{ ingressctl_dynamic_peers_api; }}
    }}
}}
"""


def start(lb: str, extra_upstream: str = "") -> tuple[Manager, int]:
    d = scratch_dir("ic-dyn-")
    m = Manager(conf_dir=f"{d}/conf", run_dir=f"{d}/run", reload_timeout_ms=30000)
    port = free_port()
    m.create_main_config(main_config(m, port, lb, extra_upstream))
    m.start()
    return m, port


def spread(port: int, n: int) -> dict[str, int]:
    """Where `n` requests over one keep-alive connection (varying the hash keys) went."""
    seen: dict[str, int] = {}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for i in range(n):
            c.request("GET", f"/p{i}?k={i}", headers={"Host": "x"})
            r = c.getresponse()
            r.read()
            key = r.getheader("X-Backend") or f"HTTP {r.status}"
            seen[key] = seen.get(key, 0) + 1
    finally:
        c.close()
    return seen


def post(m: Manager, body: str) -> requests.Response:
    with requests_unixsocket.Session() as s:
        return s.post(unix_socket_url(m.dynamic_peers_socket, API_PATH), data=body.encode(), timeout=10)


@pytest.mark.parametrize("lb", LB_METHODS, ids=lambda lb: lb.rstrip(";") or "round-robin")
def test_traffic_goes_only_to_the_pushed_addresses(backends: list[Backend], lb: str) -> None:
    a, b, c = backends
    m, port = start(lb)
    try:
        assert spread(port, 4) == {"HTTP 502": 4}  # every slot down
        m.update_upstreams({"web": [a.address, b.address]})
        # ip_hash sends one client (127.0.0.1) to one server; the others spread the requests.
        expect = (lambda seen: len(seen) == 1) if lb == "ip_hash;" else (lambda seen: len(seen) == 2)
        seen = set(spread(port, 40))
        assert seen <= {"b0", "b1"} and expect(seen), seen
        m.update_upstreams({"web": [b.address, c.address]})
        hits = a.hits
        seen = set(spread(port, 60))
        assert seen <= {"b1", "b2"} and expect(seen), seen
        assert a.hits == hits, "a removed address got traffic"
        slots, live = m.served_upstreams()["web"]
        assert slots == 4 and set(live) == {b.address, c.address}
        assert m.dynamic_update_count == 2 and m.reload_count == 0
    finally:
        m.quit()


def test_a_bad_body_changes_nothing(backends: list[Backend]) -> None:
    a, b, _ = backends
    m, port = start("", extra_upstream="upstream static { zone upstreams; server 127.0.0.1:1; }")
    try:
        m.update_upstreams({"web": [a.address]})
        cases = [
            (f"web {b.address}\nnope 127.0.0.1:1\n", 404, 'unknown upstream "nope"'),
            (f"web {b.address}\nstatic 127.0.0.1:1\n", 409, 'upstream "static" is not dynamic'),
            (f"web {b.address} 127.0.0.1\n", 400, 'invalid address "127.0.0.1"'),
            (f"web {b.address} backend:80\n", 400, 'invalid address "backend:80"'),
            ("web " + " ".join(f"127.0.0.1:{p}" for p in range(1000, 1005)) + "\n", 409,
             'upstream "web" has 4 slots, 5 addresses given'),
        ]
        for body, status, message in cases:
            r = post(m, body)
            assert (r.status_code, message in r.text) == (status, True), (body, r.status_code, r.text)
            assert m.served_upstreams()["web"][1] == (a.address,)
        assert set(spread(port, 10)) == {"b0"}
        with pytest.raises(DynamicUpdateError, match="not dynamic"):
            m.update_upstreams({"static": ["127.0.0.1:1"]})
        assert m.dynamic_update_errors == 1
        # Duplicates are served once; an empty list takes every address out.
        m.update_upstreams({"web": [a.address, a.address, b.address]})
        assert sorted(m.served_upstreams()["web"][1]) == sorted([a.address, b.address])
        m.update_upstreams({"web": []})
        assert spread(port, 3) == {"HTTP 502": 3}
    finally:
        m.quit()


def test_a_reload_starts_again_from_the_configuration(backends: list[Backend]) -> None:
    a, _, _ = backends
    m, port = start("")
    try:
        m.update_upstreams({"web": [a.address]})
        assert set(spread(port, 5)) == {"b0"}
        m.reload()
        assert spread(port, 3) == {"HTTP 502": 3}  # the file still has every slot down
        m.update_upstreams({"web": [a.address]})
        assert set(spread(port, 5)) == {"b0"}
    finally:
        m.quit()


def test_the_directive_needs_a_zone() -> None:
    d = scratch_dir("ic-dyn-")
    m = Manager(conf_dir=f"{d}/conf", run_dir=f"{d}/run")
    text = main_config(m, free_port(), "").replace("        zone upstreams;\n", "", 1)
    m.create_main_config(text)
    m._write_config_version(1)  # what start() writes first; the main config includes it
    ok, out = m.test_config()
    assert not ok and 'ingressctl_dynamic_peers in upstream "web"' in out and 'needs a "zone"' in out
    assert os.path.isdir(os.path.dirname(m.dynamic_peers_socket))
    assert os.stat(os.path.dirname(m.dynamic_peers_socket)).st_mode & 0o777 == 0o700
