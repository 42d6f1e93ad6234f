"""Annotations through the real controller and a real NGINX: invalid values are rejected up front (a
`Rejected` event naming the annotation and the value) while every other Ingress keeps serving; basic auth
with an htpasswd Secret as the controller runs by default (as root, workers as an unprivileged user);
redirect to HTTPS and HSTS; `nginx.org/use-cluster-ip` with Go's boolean syntax."""

from __future__ import annotations

import os
import stat
import tempfile

import pytest

from ingressctl.nginx.processes import current_workers
from tests.helpers import Response, http_get, make_cert, wait_until
from tests.integration.harness import NS, Controller, Env, rule, still_healthy
from tests.integration.policy_helpers import basic, htpasswd_secret

pytestmark = pytest.mark.integration


def get_with_headers(port: int, host: str, path: str, headers: dict[str, str]) -> Response:
    """A GET with extra headers (other test modules import it from here)."""
    return http_get(port, host, path, headers=headers)


def mode_of(path: str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# ------------------------------------------------------------------------------------------ invalid values

@pytest.mark.parametrize(("annotations", "named"), [
    ({"nginx.org/limit-req-rate": "ten"},
     'annotations.nginx.org/limit-req-rate: Invalid value: "ten": must be a rate'),
    ({"nginx.org/limit-req-rate": "10r/s", "nginx.org/limit-req-key": "${no_such_variable}"},
     'annotations.nginx.org/limit-req-key: Invalid value: "${no_such_variable}": unknown NGINX variable(s)'),
    ({"nginx.org/limit-req-rate": "10r/s", "nginx.org/limit-req-zone-size": "1k"},
     'annotations.nginx.org/limit-req-zone-size: Invalid value: "1k": must be a size of at least 32k'),
    ({"nginx.org/proxy-read-timeout": "soon"},
     'annotations.nginx.org/proxy-read-timeout: Invalid value: "soon": must be a time'),
])
def test_invalid_annotation_value_is_rejected_and_others_keep_serving(
        env: Env, running: Controller, annotations: dict[str, str], named: str) -> None:
    c = running
    env.ingress("bad", [rule("bad.example.com", ("/", "web"))], annotations=annotations)
    e = env.wait_event("bad", "Rejected", named)
    assert e["type"] == "Warning"
    assert c.get("bad.example.com", "/").status == 404
    # A working Ingress updated to the same bad value loses its config; fixing it brings it back.
    env.ingress("app", [rule("app.example.com", ("/", "web"))])
    c.wait_backend("app.example.com", "/", "web")
    env.ingress("app", [rule("app.example.com", ("/", "web"))], annotations=annotations)
    env.wait_event("app", "Rejected", f"{NS}/app was rejected: with error: {named}")
    c.wait_status("app.example.com", "/", 404)
    env.ingress("app", [rule("app.example.com", ("/", "web"))], annotations={"example.com/fixed": "yes"})
    c.wait_backend("app.example.com", "/", "web")
    still_healthy(c)


def test_use_cluster_ip_takes_go_booleans(env: Env, running: Controller) -> None:
    c = running
    direct = env.backend("direct")
    # No EndpointSlices: only the cluster IP (here the backend's own address) can reach it.
    env.service("direct", port=direct.port, clusterIP="127.0.0.1")
    env.ingress("cip", [rule("cip.example.com", ("/", "direct", direct.port))],
                annotations={"nginx.org/use-cluster-ip": "True"})
    c.wait_backend("cip.example.com", "/", "direct")
    env.ingress("cip", [rule("cip.example.com", ("/", "direct", direct.port))],
                annotations={"nginx.org/use-cluster-ip": "0"})
    c.wait_status("cip.example.com", "/", 502)     # pod endpoints: none
    env.ingress("cip", [rule("cip.example.com", ("/", "direct", direct.port))],
                annotations={"nginx.org/use-cluster-ip": "yes"})
    env.wait_event("cip", "Rejected", 'annotations.nginx.org/use-cluster-ip: Invalid value: "yes": must be a '
                                      "boolean")
    c.wait_status("cip.example.com", "/", 404)
    still_healthy(c)


# ------------------------------------------------------------------------------------------ basic auth

def test_basic_auth_as_root_with_default_settings(env: Env) -> None:
    """Workers read htpasswd files at request time. With the defaults (no `user` directive) a root master
    runs them as an unprivileged user: the secrets dir must let them in without exposing the keys."""
    base = tempfile.mkdtemp(prefix="ic-auth-", dir="/tmp")
    os.chmod(base, 0o755)   # like /etc and /var/lib: traversable by the worker user
    env.cleanup_dirs.append(base)
    env.service("staff")
    env.endpoints("staff", [env.backend("staff")])
    env.create(htpasswd_secret("users", {"alice": "wonderland"}))
    cert = make_cert("secure.example.com")
    env.create(cert.secret("secure-tls", NS))
    env.ingress("private", [rule("private.example.com", ("/", "staff"))],
                annotations={"nginx.org/basic-auth-secret": "users", "nginx.org/basic-auth-realm": "Staff"})
    env.ingress("secure", [rule("secure.example.com", ("/", "staff"))],
                tls=[{"hosts": ["secure.example.com"], "secretName": "secure-tls"}])
    c = env.controller(conf_dir=os.path.join(base, "conf"), run_dir=os.path.join(base, "run"))

    def get(headers: dict[str, str]) -> Response:
        return http_get(c.http_port, "private.example.com", "/", headers=headers)

    r = wait_until(lambda: (x := get({})).status == 401 and x, "401 without credentials")
    assert r.headers["www-authenticate"] == 'Basic realm="Staff"'
    assert get(basic("alice", "wonderland")).backend == "staff"
    assert get(basic("alice", "looking-glass")).status == 401
    https = wait_until(lambda: (x := c.https("secure.example.com", "/")).status == 200 and x, "https 200")
    assert https.peer_cert_der == cert.der

    # Workers do not run as root; files are as open as each needs, and no more.
    workers = current_workers(c.manager.master_pid or 0)
    assert workers
    uids = {os.stat(f"/proc/{w.pid}").st_uid for w in workers}
    assert uids == ({u for u in uids if u != 0} if os.geteuid() == 0 else {os.geteuid()})
    secrets = c.manager.secrets_dir
    assert mode_of(secrets) == 0o711
    assert mode_of(os.path.join(secrets, f"{NS}-users")) == 0o644
    assert mode_of(os.path.join(secrets, f"{NS}-secure-tls")) == 0o600
    assert mode_of(c.manager.run_dir) == 0o755

    # The Secret goes away: its file too, so NGINX refuses everyone.
    env.delete("secrets", "users")
    env.wait_event("private", "AddedOrUpdatedWithWarning", "Basic auth secret users is invalid")
    wait_until(lambda: get(basic("alice", "wonderland")).status == 403, "403 once the Secret is deleted")
    assert get(basic("mallory", "guess")).status == 403
    assert get({}).status == 401   # NGINX asks for credentials before it looks for the file
    env.create(htpasswd_secret("users", {"alice": "wonderland"}))
    wait_until(lambda: get(basic("alice", "wonderland")).backend == "staff", "200 once it is back")
    assert c.https("secure.example.com", "/").status == 200


# ------------------------------------------------------------------------------------------ https

def test_redirect_to_https_and_hsts_behind_a_proxy(env: Env, running: Controller) -> None:
    c = running
    env.ingress("proxied", [rule("proxied.example.com", ("/", "web"))],
                annotations={"nginx.org/redirect-to-https": "true", "nginx.org/hsts": "true",
                             "nginx.org/hsts-max-age": "600", "nginx.org/hsts-behind-proxy": "true"})

    def get(proto: str | None) -> Response:
        headers = {"X-Forwarded-Proto": proto} if proto else {}
        return http_get(c.http_port, "proxied.example.com", "/cart?id=1", headers=headers)

    r = wait_until(lambda: (x := get("http")).status == 301 and x, "redirect for X-Forwarded-Proto: http")
    assert r.headers["location"] == "https://proxied.example.com/cart?id=1"
    r = get("https")
    assert r.backend == "web"
    assert r.headers["strict-transport-security"] == "max-age=600; preload"
    # Without the header the request came straight in: served, and no HSTS.
    r = get(None)
    assert r.backend == "web" and "strict-transport-security" not in r.headers
    still_healthy(c)


def test_hsts_with_tls_and_ssl_redirect(env: Env, running: Controller) -> None:
    c = running
    cert = make_cert("hsts.example.com")
    env.create(cert.secret("hsts-tls", NS))
    tls = [{"hosts": ["hsts.example.com"], "secretName": "hsts-tls"}]
    env.ingress("hsts", [rule("hsts.example.com", ("/", "web"))], tls=tls,
                annotations={"nginx.org/hsts": "true", "nginx.org/hsts-max-age": "3600",
                             "nginx.org/hsts-include-subdomains": "true"})
    r = wait_until(lambda: (x := c.https("hsts.example.com", "/a")).status == 200 and x, "https 200")
    assert r.backend == "web"
    assert r.headers["strict-transport-security"] == "max-age=3600; includeSubDomains; preload"
    # New workers answer before the reload has returned; until it has, an old worker may still accept.
    c.wait_idle()
    plain = c.get("hsts.example.com", "/a?b=c")
    assert plain.status == 301
    assert plain.headers["location"] == f"https://hsts.example.com:{c.https_port}/a?b=c"
    assert "strict-transport-security" not in plain.headers
    # ssl-redirect off: plain HTTP is served, still without HSTS (it only goes out over TLS).
    env.ingress("hsts", [rule("hsts.example.com", ("/", "web"))], tls=tls,
                annotations={"nginx.org/hsts": "true", "ingress.kubernetes.io/ssl-redirect": "false"})
    r = wait_until(lambda: (x := c.get("hsts.example.com", "/a")).status == 200 and x, "plain HTTP served")
    assert r.backend == "web" and "strict-transport-security" not in r.headers
    c.wait_idle()
    assert c.https("hsts.example.com", "/").headers["strict-transport-security"].startswith("max-age=")
    # A bad HSTS value is rejected and the Ingress stops serving; the others do not notice.
    env.ingress("hsts", [rule("hsts.example.com", ("/", "web"))], tls=tls,
                annotations={"nginx.org/hsts": "true", "nginx.org/hsts-max-age": "-5"})
    env.wait_event("hsts", "Rejected", 'annotations.nginx.org/hsts-max-age: Invalid value: "-5"')
    c.wait_status("hsts.example.com", "/", 404)
    still_healthy(c)


def test_server_level_basic_auth_guards_the_paths_no_rule_matches(env: Env) -> None:
    """NIC's server-level `auth_basic` is checked before NGINX looks for a location: a host without a `/`
    path answers its unmatched paths 401 to a client without credentials, and 404 only to one with them."""
    env.service("tea")
    env.endpoints("tea", [env.backend("tea")])
    env.create(htpasswd_secret("users", {"alice": "wonderland"}))
    env.ingress("cafe", [rule("cafe.example.com", ("/tea", "tea"))],
                annotations={"nginx.org/basic-auth-secret": "users"})
    c = env.controller()

    def get(path: str, headers: dict[str, str]) -> Response:
        return http_get(c.http_port, "cafe.example.com", path, headers=headers)

    wait_until(lambda: get("/tea", basic("alice", "wonderland")).backend == "tea", "the route, authenticated")
    assert get("/tea", {}).status == 401
    assert get("/coffee", {}).status == 401
    assert get("/coffee", basic("alice", "wonderland")).status == 404
    assert c.lbc.is_alive() and c.lbc.stats.sync_errors == 0
