"""The certificate-cache NGINX module on its own (a real NGINX 1.22, one worker, a hand-written config whose
default server loads `ssl_certificate $certificate` at handshakes, as the controller renders it): every SNI
host gets its own certificate; the second handshake of a host is served from the cache
($ingressctl_certificate_cache_status says HIT); a PEM replaced or rewritten on disk is served at the next
handshake; a missing or bad PEM fails that host's handshakes only; the cache holds at most `max` entries;
handshakes are not counted as requests; the directive's value is checked."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest
import requests_unixsocket

from ingressctl.nginx.manager import Manager
from ingressctl.nginx.modules import CERTIFICATE_CACHE, installed_module
from ingressctl.nginx.stub_status import unix_socket_url
from tests.helpers import Cert, TLSResponse, free_port, https_get, make_cert, scratch_dir

pytestmark = pytest.mark.integration

HOSTS = ("a.example.com", "b.example.com", "c.example.com")


def module() -> str:
    path = installed_module("nginx", CERTIFICATE_CACHE)
    assert path, "the certificate-cache module must be installed (scripts/build-nginx-module.sh)"
    return path


CACHE = "ingressctl_certificate_cache max=100;"


def main_config(m: Manager, port: int, pems: str, cache: str = CACHE) -> str:
    names = "".join(f"        {h} {pems}/{h}.pem;\n" for h in HOSTS)
    servers = "".join(f"""
    server {{
        listen 127.0.0.1:{port} ssl;
        server_name {h};
        return 200 "{h} $ingressctl_certificate_cache_status\\n";
    }}""" for h in HOSTS)
    return f"""load_module {module()};
{m.paths.main_directives()}worker_processes 1;
events {{}}
http {{
    access_log off;
    {m.paths.http_directives()}
    {cache}
    map $server_name $certificate {{
{names}        default "";
    }}
    server {{
        listen 127.0.0.1:{port} ssl default_server;
        server_name _;
        ssl_certificate $certificate;
        ssl_certificate_key $certificate;
        ssl_reject_handshake on;
        return 404;
    }}
{servers}
}}
"""


def write_pem(pems: str, host: str, cert: Cert, *, in_place: bool = False) -> None:
    """The certificate and key in one file: replaced by a rename (as Secrets are), or rewritten in place."""
    path = os.path.join(pems, f"{host}.pem")
    target = path if in_place else path + ".tmp"
    with open(target, "wb") as f:
        f.write(cert.cert_pem + cert.key_pem)
    os.chmod(target, 0o644)
    if not in_place:
        os.replace(target, path)


@pytest.fixture
def pems() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="ic-certs-", dir="/tmp")
    os.chmod(d, 0o711)  # NGINX's workers read the PEM files (as `nobody` under a root master)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def start(pems: str, cache: str = CACHE) -> tuple[Manager, int]:
    d = scratch_dir("ic-cc-")
    m = Manager(conf_dir=f"{d}/conf", run_dir=f"{d}/run", reload_timeout_ms=30000)
    port = free_port()
    m.create_main_config(main_config(m, port, pems, cache))
    m.start()
    return m, port


def get(port: int, host: str) -> tuple[bytes, str]:
    """(the certificate served, the handshake's cache status) over a new connection: a full handshake."""
    r: TLSResponse = https_get(port, host)
    assert r.status == 200, r
    served_host, _, status = r.body.strip().partition(" ")
    assert served_host == host
    return r.peer_cert_der, status


@pytest.fixture
def certs(pems: str) -> dict[str, Cert]:
    cs = {h: make_cert(h) for h in HOSTS}
    for h, c in cs.items():
        write_pem(pems, h, c)
    return cs


def test_each_host_gets_its_own_certificate_parsed_once(pems: str, certs: dict[str, Cert]) -> None:
    m, port = start(pems)
    try:
        for h in HOSTS:
            assert get(port, h) == (certs[h].der, "MISS")
        for _ in range(2):
            for h in HOSTS:
                assert get(port, h) == (certs[h].der, "HIT")
    finally:
        m.quit()


def test_without_the_directive_nothing_is_cached(pems: str, certs: dict[str, Cert]) -> None:
    m, port = start(pems, cache="")
    try:
        for _ in range(2):
            assert get(port, "a.example.com") == (certs["a.example.com"].der, "")
    finally:
        m.quit()


@pytest.mark.parametrize("in_place", [False, True], ids=["renamed", "rewritten"])
def test_a_certificate_replaced_on_disk_is_served_at_the_next_handshake(
        pems: str, certs: dict[str, Cert], in_place: bool) -> None:
    m, port = start(pems)
    try:
        assert get(port, "a.example.com") == (certs["a.example.com"].der, "MISS")
        assert get(port, "a.example.com") == (certs["a.example.com"].der, "HIT")
        renewed = make_cert("a.example.com")
        write_pem(pems, "a.example.com", renewed, in_place=in_place)
        assert get(port, "a.example.com") == (renewed.der, "EXPIRED")
        assert get(port, "a.example.com") == (renewed.der, "HIT")
        assert get(port, "b.example.com") == (certs["b.example.com"].der, "MISS")
    finally:
        m.quit()


@pytest.mark.parametrize("damage", ["missing", "not a PEM", "key of another certificate"])
def test_a_missing_or_bad_pem_fails_that_hosts_handshakes_only(
        pems: str, certs: dict[str, Cert], damage: str) -> None:
    m, port = start(pems)
    path = os.path.join(pems, "a.example.com.pem")
    try:
        assert get(port, "a.example.com") == (certs["a.example.com"].der, "MISS")   # cached, then damaged
        if damage == "missing":
            os.unlink(path)
        elif damage == "not a PEM":
            with open(path, "wb") as f:
                f.write(b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
        else:
            with open(path, "wb") as f:
                f.write(certs["a.example.com"].cert_pem + certs["b.example.com"].key_pem)
        for _ in range(2):
            with pytest.raises(OSError):
                https_get(port, "a.example.com")
            assert get(port, "b.example.com")[0] == certs["b.example.com"].der
        write_pem(pems, "a.example.com", certs["a.example.com"])
        assert get(port, "a.example.com") == (certs["a.example.com"].der, "MISS")
    finally:
        m.quit()


def test_the_least_recently_used_entry_goes_first(pems: str, certs: dict[str, Cert]) -> None:
    m, port = start(pems, cache="ingressctl_certificate_cache max=2;")
    try:
        statuses = [get(port, h)[1] for h in ("a.example.com", "b.example.com", "a.example.com",
                                              "c.example.com", "a.example.com", "b.example.com")]
        # c evicts b (a was used after b); b then evicts c.
        assert statuses == ["MISS", "MISS", "HIT", "MISS", "HIT", "MISS"]
        assert [get(port, h)[0] for h in HOSTS[:2]] == [certs[h].der for h in HOSTS[:2]]
    finally:
        m.quit()


def test_handshakes_are_not_counted_as_requests(pems: str, certs: dict[str, Cert]) -> None:
    m, port = start(pems)
    try:
        for h in HOSTS * 2:
            get(port, h)
        with requests_unixsocket.Session() as s:
            text = s.get(unix_socket_url(m.paths.status_socket, "/stub_status"), timeout=10).text
        accepts, handled, requests = (int(x) for x in text.splitlines()[2].split())
        # One request per connection (6 TLS ones, this one, the Manager's own probes): no handshake counted.
        assert accepts >= 7 and requests == handled == accepts
    finally:
        m.quit()


@pytest.mark.parametrize("directive", ["ingressctl_certificate_cache max=0;",
                                       "ingressctl_certificate_cache 100;",
                                       "ingressctl_certificate_cache max=1;\n"
                                       "    ingressctl_certificate_cache max=2;"])
def test_the_directive_is_checked(pems: str, directive: str) -> None:
    m, port = start(pems)
    try:
        assert m.test_config() == (True, m.test_config()[1])
        bad = os.path.join(m.conf_dir, "bad.conf")   # next to nginx.conf: its includes resolve the same
        text = main_config(m, port, pems, directive)
        with open(bad, "w") as f:
            f.write(text)
        ok, out = m.test_config(bad)
        # refused at the (last) ingressctl_certificate_cache line
        line = max(i for i, ln in enumerate(text.splitlines(), 1)
                   if ln.strip().startswith("ingressctl_certificate_cache "))
        assert not ok and f"bad.conf:{line}\n" in out, out
    finally:
        m.quit()
