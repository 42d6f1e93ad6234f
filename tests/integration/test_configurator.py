"""The Configurator with the real Manager and a real NGINX, and real HTTP backends on 127.0.0.1: routing,
pathType semantics, the default server, TLS termination with SNI, the 502 server, no needless reloads, and
failed-reload isolation (the good resources are served, the bad one is reported, later reloads work)."""

from __future__ import annotations

import datetime
import http.client
import shutil
import socket
import ssl
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ingressctl.configs import prerender
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.configurator import Configurator, ReloadOutcome
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.http_serving import POLL_INTERVAL
from ingressctl.keys import INGRESS_KIND, ResourceKey
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.nginx.manager import Manager
from ingressctl.secret_types import SecretReference
from tests.helpers import free_port

pytestmark = pytest.mark.integration

TIMEOUT = 10.0  # per request: a guard against hanging, not a speed assertion


def ikey(ns_name: str) -> ResourceKey:
    return ResourceKey(INGRESS_KIND, ns_name)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        name = self.server.name  # type: ignore[attr-defined]
        body = (f"{name} {self.path} host={self.headers.get('Host')} "
                f"xfh={self.headers.get('X-Forwarded-Host')} xff={self.headers.get('X-Forwarded-For')}\n")
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class Backend:
    name: str
    server: ThreadingHTTPServer

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def backends() -> Iterator[dict[str, Backend]]:
    started: dict[str, Backend] = {}
    threads = []
    for name in ("runner", "cron", "admin", "web", "other"):
        srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        srv.daemon_threads = True
        srv.name = name  # type: ignore[attr-defined]
        t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": POLL_INTERVAL},
                             name=f"backend-{name}", daemon=True)
        t.start()
        threads.append(t)
        started[name] = Backend(name, srv)
    yield started
    for b in started.values():
        b.server.shutdown()
        b.server.server_close()


@dataclass
class Env:
    manager: Manager
    configurator: Configurator
    http_port: int
    https_port: int

    def get(self, host: str, path: str) -> requests.Response:
        return requests.get(f"http://127.0.0.1:{self.http_port}{path}", headers={"Host": host},
                            timeout=TIMEOUT, allow_redirects=False)

    def apply(self, *exes: IngressEx) -> ReloadOutcome:
        self.configurator.add_or_update_ingresses(list(exes))
        return self.configurator.reload_if_needed()


def make_env(*, enable_snippets: bool = False) -> Iterator[Env]:
    base = tempfile.mkdtemp(prefix="ic-")  # short: unix socket paths must fit in 107 bytes
    manager = Manager(binary="nginx", conf_dir=f"{base}/conf", run_dir=f"{base}/run", reload_timeout_ms=30000)
    http_port, https_port = free_port(), free_port()
    static = StaticConfigParams(http_port=http_port, https_port=https_port, nginx_status=False,
                                health_status=True, enable_snippets=enable_snippets)
    configurator = Configurator(manager, static, ConfigParams(), TemplateExecutor())
    manager.start()
    try:
        yield Env(manager, configurator, http_port, https_port)
    finally:
        manager.quit(timeout=10)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def env() -> Iterator[Env]:
    yield from make_env()


@pytest.fixture
def snippets_env() -> Iterator[Env]:
    yield from make_env(enable_snippets=True)


def ingress_ex(name: str, host: str, paths: list[tuple[str, str, str]], backends: dict[str, Backend], *,
               ready: tuple[str, ...] | None = None, tls_secret: str | None = None,
               secret_refs: dict[str, SecretReference] | None = None,
               annotations: dict[str, str] | None = None) -> IngressEx:
    """paths: (path, pathType, service); every service on port 80, with its backend as the endpoint."""
    spec: dict[str, Any] = {"rules": [{"host": host, "http": {"paths": [
        {"path": p, "pathType": t, "backend": {"service": {"name": svc, "port": {"number": 80}}}}
        for p, t, svc in paths]}}]}
    if tls_secret is not None:
        spec["tls"] = [{"hosts": [host], "secretName": tls_secret}]
    ing = {"metadata": {"namespace": "default", "name": name, "annotations": annotations or {}}, "spec": spec}
    services = {svc for _, _, svc in paths}
    endpoints = {backend_key(svc, 80): [backends[svc].address] for svc in services
                 if ready is None or svc in ready}
    return IngressEx(ing, {host: True}, endpoints, secret_refs=secret_refs or {})


def reports(backends: dict[str, Backend], **kw: Any) -> IngressEx:
    return ingress_ex("reports", "reports.example.com", [
        ("/reports-runner", "Prefix", "runner"), ("/reports-cron", "Prefix", "cron"),
        ("/reports-admin", "Prefix", "admin")], backends, **kw)


def test_reports_example_routes_to_three_backends(env: Env, backends: dict[str, Backend]) -> None:
    assert env.apply(reports(backends)) == ReloadOutcome(reloaded=True)
    for svc in ("runner", "cron", "admin"):
        r = env.get("reports.example.com", f"/reports-{svc}")
        assert r.status_code == 200 and r.text.startswith(f"{svc} /reports-{svc} ")
        r = env.get("reports.example.com", f"/reports-{svc}/job/1?x=1")
        assert r.status_code == 200 and r.text.startswith(f"{svc} /reports-{svc}/job/1?x=1 ")
    r = env.get("reports.example.com", "/reports-admin")
    assert "host=reports.example.com" in r.text and "xfh=reports.example.com" in r.text
    assert "xff=127.0.0.1" in r.text
    assert env.get("reports.example.com", "/other").status_code == 404
    # A host no Ingress owns: the default server's 404. Its health location answers too.
    r = env.get("unknown.example.com", "/reports-runner")
    assert r.status_code == 404 and "runner" not in r.text
    assert env.get("unknown.example.com", "/nginx-health").text == "healthy\n"


def test_path_types_through_real_requests(env: Env, backends: dict[str, Backend]) -> None:
    ex = ingress_ex("paths", "paths.example.com", [
        ("/foo", "Prefix", "runner"), ("/exact", "Exact", "cron"),
        ("/impl", "ImplementationSpecific", "admin"),
        ("/both", "Prefix", "runner"), ("/both", "Exact", "web"), ("/dir/", "Prefix", "other"),
    ], backends)
    assert env.apply(ex).reloaded

    def who(path: str) -> str:
        r = env.get("paths.example.com", path)
        return r.text.split(" ", 1)[0] if r.status_code == 200 else str(r.status_code)

    assert [who(p) for p in ("/foo", "/foo/", "/foo/bar", "/foobar")] == ["runner", "runner", "runner", "404"]
    assert [who(p) for p in ("/exact", "/exact/", "/exact/x", "/exactly")] == ["cron", "404", "404", "404"]
    assert [who(p) for p in ("/impl", "/impl/x", "/implx")] == ["admin", "admin", "admin"]
    assert [who(p) for p in ("/both", "/both/x")] == ["web", "runner"]  # Exact beats Prefix
    assert [who(p) for p in ("/dir", "/dir/", "/dir/a", "/directory")] == ["other", "other", "other", "404"]


def test_no_endpoints_answers_502(env: Env, backends: dict[str, Backend]) -> None:
    assert env.apply(reports(backends, ready=("runner",))).reloaded
    assert env.get("reports.example.com", "/reports-runner").status_code == 200
    assert env.get("reports.example.com", "/reports-cron").status_code == 502
    assert env.get("reports.example.com", "/reports-admin/x").status_code == 502
    # Endpoints appear: one reload, and the backend answers.
    env.configurator.update_endpoints([reports(backends)])
    assert env.configurator.reload_if_needed("endpoints").reloaded
    assert env.get("reports.example.com", "/reports-cron").status_code == 200


def test_identical_rerender_does_not_reload(env: Env, backends: dict[str, Backend]) -> None:
    assert env.apply(reports(backends)).reloaded
    count, version = env.manager.reload_count, env.manager.config_version
    assert env.apply(reports(backends)) == ReloadOutcome(reloaded=False)
    env.configurator.update_endpoints([reports(backends)])
    assert env.configurator.reload_if_needed("endpoints") == ReloadOutcome(reloaded=False)
    env.configurator.update_config(ConfigParams(), [reports(backends)])
    assert env.configurator.reload_if_needed() == ReloadOutcome(reloaded=False)
    assert (env.manager.reload_count, env.manager.config_version) == (count, version)
    # A real change does reload.
    env.configurator.update_config(ConfigParams(proxy_read_timeout="30s"), [reports(backends)])
    assert env.configurator.reload_if_needed().reloaded and env.manager.reload_count == count + 1


def self_signed(host: str, directory: Path) -> tuple[bytes, str]:
    """(cert + key PEM, path of the CA file to trust)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    ca = directory / f"{host}-ca.pem"
    ca.write_bytes(cert_pem)
    return cert_pem + key_pem, str(ca)


def https_get(port: int, host: str, path: str, cafile: str | None) -> tuple[int, str]:
    ctx = ssl.create_default_context(cafile=cafile) if cafile else ssl._create_unverified_context()
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=TIMEOUT, context=ctx)
    # Connect to 127.0.0.1 but send SNI and Host for `host`, and verify the certificate against it.
    conn.host = host
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    conn.sock = ctx.wrap_socket(sock, server_hostname=host)
    try:
        conn.request("GET", path, headers={"Host": host})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def test_tls_termination(env: Env, backends: dict[str, Backend], tmp_path: Path) -> None:
    pem, ca = self_signed("secure.example.com", tmp_path)
    pem_path = env.manager.create_secret("default-tls", pem)
    ref = SecretReference("default/tls", pem_path, secret_type="kubernetes.io/tls")
    good = ingress_ex("secure", "secure.example.com", [("/", "Prefix", "web")], backends, tls_secret="tls",
                      secret_refs={"tls": ref})
    broken = ingress_ex("broken", "broken.example.com", [("/", "Prefix", "other")], backends,
                        tls_secret="missing")
    env.configurator.add_or_update_ingress(good)
    warnings = env.configurator.add_or_update_ingress(broken)
    assert warnings == ["TLS secret missing is invalid: secret doesn't exist or of an unsupported type"]
    assert env.configurator.reload_if_needed().reloaded

    status, body = https_get(env.https_port, "secure.example.com", "/page", ca)
    assert status == 200 and body.startswith("web /page host=secure.example.com")
    # HTTP on a TLS host redirects to HTTPS (ssl-redirect defaults to true), with the port.
    r = env.get("secure.example.com", "/page")
    assert r.status_code == 301
    assert r.headers["Location"] == f"https://secure.example.com:{env.https_port}/page"
    # The missing secret: TLS handshakes are rejected, HTTP still works.
    with pytest.raises(ssl.SSLError):
        https_get(env.https_port, "broken.example.com", "/", None)
    assert env.get("broken.example.com", "/x").text.startswith("other /x ")
    # No default certificate: the default server rejects handshakes for unknown names.
    with pytest.raises(ssl.SSLError):
        https_get(env.https_port, "unknown.example.com", "/", None)


def test_failed_reload_isolation(snippets_env: Env, backends: dict[str, Backend]) -> None:
    env = snippets_env
    existing = ingress_ex("existing", "existing.example.com", [("/", "Prefix", "admin")], backends)
    assert env.apply(existing).reloaded
    bad_snippet = {"nginx.org/location-snippets": "bogus_directive on;"}
    env.configurator.disable_reloads()
    env.configurator.add_or_update_ingresses([
        reports(backends),
        ingress_ex("bad", "bad.example.com", [("/", "Prefix", "other")], backends, annotations=bad_snippet),
        ingress_ex("existing", "existing.example.com", [("/", "Prefix", "web")], backends,
                   annotations=bad_snippet),
    ])
    env.configurator.enable_reloads()
    count = env.manager.reload_count
    outcome = env.configurator.reload_if_needed()
    assert outcome.reloaded and outcome.error == ""
    assert set(outcome.failed) == {ikey("default/bad"), ikey("default/existing")}
    for key in outcome.failed:
        name = key.ns_name.replace("/", "-")
        assert 'unknown directive "bogus_directive"' in outcome.failed[key]
        assert f"{env.manager.conf_dir}/conf.d/{name}.conf" in outcome.failed[key]  # not the staging copy
    assert env.manager.reload_count == count + 1
    # The good resource is served; the new bad one is not; the updated bad one keeps its last good version.
    assert env.get("reports.example.com", "/reports-cron").text.startswith("cron ")
    assert env.get("bad.example.com", "/").status_code == 404
    assert env.get("existing.example.com", "/").text.startswith("admin ")
    assert env.manager.read_config("default-bad") is None
    assert env.manager.test_config()[0]
    # No poisoning: the next change reloads, and fixing the bad resource serves it.
    assert env.apply(ingress_ex("later", "later.example.com", [("/", "Prefix", "web")], backends)).reloaded
    assert env.get("later.example.com", "/").text.startswith("web ")
    assert env.apply(ingress_ex("bad", "bad.example.com", [("/", "Prefix", "other")], backends)) == \
        ReloadOutcome(reloaded=True)
    assert env.get("bad.example.com", "/").text.startswith("other ")
    assert env.configurator.rejected == {ikey("default/existing"): outcome.failed[ikey("default/existing")]}


def test_port_nginx_cannot_bind_is_isolated_by_reloads(snippets_env: Env,
                                                       backends: dict[str, Backend]) -> None:
    env = snippets_env
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        grabby = ingress_ex("grabby", "grabby.example.com", [("/", "Prefix", "other")], backends,
                            annotations={"nginx.org/server-snippets": f"listen 127.0.0.1:{port};"})
        outcome = env.apply(reports(backends), grabby)
        assert outcome.reloaded and list(outcome.failed) == [ikey("default/grabby")]
        assert "Address already in use" in outcome.failed[ikey("default/grabby")]
        assert env.get("reports.example.com", "/reports-runner").text.startswith("runner ")
        assert env.apply(ingress_ex("next", "next.example.com", [("/", "Prefix", "web")], backends)).reloaded
        assert env.get("next.example.com", "/").text.startswith("web ")


def test_files_written_ahead_by_other_processes_are_kept_served_and_cleaned_up(
        env: Env, backends: dict[str, Backend], monkeypatch: pytest.MonkeyPatch) -> None:
    """`render_ahead` (start-up): a forked process renders its share and writes those files; the writes here
    find them in place (same inode, not rewritten); NGINX serves every host after one reload; a file written
    ahead for a resource that was not written here afterwards is removed."""
    # At 40 Ingresses this process could take nearly all of the child's share back before the child starts:
    # here the child keeps its whole share.
    monkeypatch.setattr(prerender, "_take_back", lambda *args: 0)
    exes = [ingress_ex(f"app-{i}", f"app-{i}.example.com", [("/", "Prefix", "web")], backends)
            for i in range(40)]
    c = env.configurator
    # The last Ingress first: the other process renders the first share.
    items = [(e.key_with_kind, e) for e in [exes[-1], *exes[:-1]]]
    stats = c.render_ahead(items, len(items), processes=2, min_items=1, measure=0)
    [share] = stats.child_ranges
    child_share = [39, *range(share.stop - 1)]
    assert share.start == 0 and stats.by_children == len(share) > 1 and stats.lost_shares == 0
    conf_d = Path(env.manager.config_path("x")).parent
    ahead = {p.name: p.stat().st_ino for p in conf_d.glob("default-app-*.conf")}
    assert sorted(ahead) == sorted(f"default-app-{i}.conf" for i in child_share), "the other process's share"
    for e in exes[:-1]:  # the last one (the other process's) is never written here
        c.add_or_update_ingress(e)
    assert {p.name: p.stat().st_ino for p in conf_d.glob("default-app-*.conf") if p.name in ahead} == ahead
    c.drop_rendered_ahead()
    assert not (conf_d / "default-app-39.conf").exists()
    assert len(list(conf_d.glob("default-app-*.conf"))) == 39
    assert c.reload_if_needed().reloaded
    for i in (0, 1, 37, 38):
        r = env.get(f"app-{i}.example.com", "/")
        assert r.status_code == 200 and r.text.startswith("web / "), (i, r.text)
    assert env.get("app-39.example.com", "/").status_code == 404
