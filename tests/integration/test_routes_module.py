"""The routes NGINX module on its own (a real NGINX, hand-written configuration, real backends): the table
routes by Host and URI as locations would, TLS hosts get their own certificate through the routes server's
context even while it rejects unknown names, the API replaces hosts all or nothing, and what the module
refuses at load names the file and line."""

from __future__ import annotations

import http.client
import os

import pytest

from ingressctl.demo.backend import Backend
from ingressctl.nginx.manager import Manager
from ingressctl.nginx.modules import ROUTES, installed_module
from ingressctl.nginx.routes import RoutesClient, RoutesUpdateError
from tests.helpers import free_port, http_get, https_get, make_cert, scratch_dir

pytestmark = pytest.mark.integration


def module() -> str:
    path = installed_module("nginx", ROUTES)
    assert path, "the routes module must be installed (scripts/install-system-deps.sh)"
    return path


class Nginx:
    def __init__(self, backends: list[Backend], extra: str = "") -> None:
        d = scratch_dir("ic-routes-")
        os.chmod(d, 0o711)
        self.m = Manager(conf_dir=f"{d}/conf", run_dir=f"{d}/run", reload_timeout_ms=30000)
        self.port, self.tls_port = free_port(), free_port()
        self.pem = os.path.join(d, "a.pem")
        cert = make_cert("a.example.com")
        with open(self.pem, "wb") as f:
            f.write(cert.cert_pem + cert.key_pem)
        os.chmod(self.pem, 0o644)
        self.der = cert.der
        self.socket = os.path.join(self.m.run_dir, "private", "routes.sock")
        web, api = backends[0].address, backends[1].address
        self.m.create_config("hosts", f"""
upstream web {{ server {web}; }}
upstream api {{ server {api}; }}
ingressctl_route_host a.example.com team-a web {self.pem} 301 {self.tls_port} {{
    exact /api r1m api api 1048576;
    prefix /api/ r1m api api 1048576;
    prefix / r1m web web 1048576;
}}
ingressctl_route_host b.example.com team-b b - 0 {self.tls_port} {{
    prefix /x r10 api api 10;
    exact /sp%20ace r1m web web 0;
}}
{extra}""")
        self.m.create_main_config(f"""load_module {module()};
{self.m.paths.main_directives()}events {{}}
http {{
    access_log off;
    {self.m.paths.http_directives(stub_status=False)}
    ingressctl_routes;
    upstream ingressctl-routed {{ ingressctl_routes_upstream; server 127.0.0.1:1; }}
    server {{
        listen 127.0.0.1:{self.port} default_server;
        listen 127.0.0.1:{self.tls_port} ssl default_server;
        ssl_certificate $ingressctl_route_certificate;
        ssl_certificate_key $ingressctl_route_certificate;
        ssl_reject_handshake on;
        server_name _;
        ingressctl_routes_serve;
        location @r1m {{ client_max_body_size 1m; proxy_pass http://ingressctl-routed;
                         add_header X-Route "$resource_namespace/$resource_name $service"; }}
        location @r10 {{ client_max_body_size 10; proxy_pass http://ingressctl-routed; }}
        location / {{ return 404; }}
    }}
    server {{ listen unix:{self.socket}; location = /routes {{ ingressctl_routes_api; }} }}
}}
""")
        self.m._write_config_version(1)  # what start() writes first; the main config includes it
        self.api = RoutesClient(self.socket)

    def get(self, host: str, path: str) -> tuple[int, str, str]:
        r = http_get(self.port, host, path)
        return r.status, r.backend, r.headers.get("location", "") or r.headers.get("x-route", "")

    def post(self, host: str, path: str, size: int) -> int:
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            c.request("POST", path, body=b"x" * size, headers={"Host": host})
            r = c.getresponse()
            r.read()
            return r.status
        finally:
            c.close()


@pytest.fixture
def nginx(backends: list[Backend]) -> Nginx:
    n = Nginx(backends)
    n.m.start()
    yield n  # type: ignore[misc]
    n.m.quit()


def test_the_table_routes_as_locations_would(nginx: Nginx) -> None:
    tls = nginx.tls_port
    assert nginx.get("a.example.com", "/") == (301, "", f"https://a.example.com:{tls}/")
    assert nginx.get("b.example.com", "/x/y") == (200, "b1", "")
    assert nginx.get("B.Example.com", "/x") == (200, "b1", "")  # host names compare as NGINX's do
    assert nginx.get("b.example.com", "/") == (404, "", "")  # the host, no route
    assert nginx.get("b.example.com", "/sp%20ace") == (200, "b0", "team-b/b web")  # the decoded URI
    assert nginx.get("c.example.com", "/x") == (404, "", "")  # not a host of the table
    assert nginx.post("b.example.com", "/x", 11) == 413 and nginx.post("b.example.com", "/x", 10) == 200
    r = https_get(tls, "a.example.com", "/api")
    assert (r.backend, r.peer_cert_der, r.headers["x-route"]) == ("b1", nginx.der, "team-a/web api")
    assert https_get(tls, "a.example.com", "/apix").backend == "b0"
    assert https_get(tls, "a.example.com", "/api/v").backend == "b1"
    for sni in ("b.example.com", "c.example.com"):  # no TLS for a plain host, nor for an unknown one
        with pytest.raises(OSError):
            https_get(tls, sni, "/")


def test_the_api_replaces_hosts_all_or_nothing(nginx: Nginx) -> None:
    nginx.api.push(f"host c.example.com team-c c - 0 {nginx.tls_port}\nroute prefix / r1m web web 0\n"
                   f"host b.example.com team-b b - 0 {nginx.tls_port}\nroute exact /y r1m web web 0\n")
    assert nginx.get("c.example.com", "/any") == (200, "b0", "team-c/c web")
    assert nginx.get("b.example.com", "/x") == (404, "", "") and nginx.get("b.example.com", "/y")[1] == "b0"
    before = nginx.api.listed()
    for body, error in [
        ("host d.example.com d d - 0 1\nroute prefix / r1m nosuch web 0\n", 'no upstream block "nosuch"'),
        ("host d.example.com d d - 0 1\nroute prefix / r2m web web 0\n", 'no named location "@r2m"'),
        ("host d.example.com d d - 0 1\nroute prefix x r1m web web 0\n", 'does not start with "/"'),
        ("host d.example.com d d - 301 1\n", "redirects to https without a certificate"),
        ("host d.example.com d d - 0 1\nhost d.example.com d d - 0 1\n", "is given twice"),
        ("route prefix / r1m web web 0\n", "a route line needs a host line before it"),
        ("host d.example.com d d - 0 1\ndelete c.example.com\nbogus\n", "line 3:"),
    ]:
        with pytest.raises(RoutesUpdateError, match=error):
            nginx.api.push(body)
        assert nginx.api.listed() == before, body  # nothing of it applied
    nginx.api.push("delete c.example.com\ndelete nothere.example.com\n")
    assert nginx.get("c.example.com", "/any") == (404, "", "")
    nginx.m.reload()  # a reload serves the configuration again
    assert nginx.get("b.example.com", "/x")[:2] == (200, "b1")


@pytest.mark.parametrize(("extra", "error"), [
    ("ingressctl_route_host a.example.com x y - 0 1 { prefix / r1m web web 0; }",
     'duplicate route host "a.example.com" in '),
    ("ingressctl_route_host d.example.com x y - 0 1 { prefix / r1m nowhere web 0; }",
     'route "/" of host "d.example.com": no upstream block "nowhere" in '),
    ("ingressctl_route_host d_.example.com/ x y - 0 1 { prefix / r1m web web 0; }", "invalid host name"),
    ("ingressctl_route_host d.example.com x y - 0 1 { sideways / r1m web web 0; }", "invalid route type"),
])
def test_what_the_load_refuses_names_its_place(backends: list[Backend], extra: str, error: str) -> None:
    n = Nginx(backends, extra)
    ok, out = n.m.test_config()
    assert not ok and error in out and "hosts.conf:" in out, out
