"""ingress-nginx's basic authentication (`auth-type: basic`, `auth-secret`, `auth-secret-type`, `auth-realm`)
through the real controller (`--ingress-nginx-compat`), devcluster, the real kubectl and a real NGINX: an
Opaque Secret written with `stringData` holding htpasswd lines (bcrypt `$2y$`, `$apr1$`, `{SHA}`), 401 with
the realm, 200 with each user's password, 401 with a wrong one; the `namespace/name` form; a Secret created
after the Ingress, changed, then deleted; the 503 of an unusable Secret with its Warning event; the refused
values; `satisfy: any` with an address rule; and the informer keeping only the keys ingress-nginx reads.
`auth-secret-type: auth-map`: a Secret written as users publish it (multi-document YAML with comments,
`stringData`, applied with kubectl), read in full from the API while the cache keeps it reduced; a user
added without a restart; deleted, 503 with a Warning event; an auth-file Ingress beside it unaffected; a
forbidden read (403) denies with a Warning and is read again later, and a re-render reads nothing more."""

from __future__ import annotations

import base64
import ctypes
import ctypes.util
import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ingressctl.controller import auth_map_secrets
from ingressctl.demo.backend import Backend
from tests.helpers import wait_until
from tests.integration.harness import NS, Env
from tests.integration.ingress_nginx_helpers import compat_controller, request
from tests.integration.policy_helpers import basic
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration

N = "nginx.ingress.kubernetes.io/"
REALM = "Authentication Required - team"


def _crypt(password: str, salt: str) -> str:
    lib = ctypes.CDLL(ctypes.util.find_library("crypt") or "libcrypt.so.1")
    lib.crypt.restype = ctypes.c_char_p
    lib.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    out = lib.crypt(password.encode(), salt.encode())
    assert out and out.startswith(salt[:4].encode()), out
    return str(out.decode())


def htpasswd_line(user: str, password: str, scheme: str) -> str:
    """What `htpasswd -nb[B|m|s]` prints: bcrypt (`$2y$`), apr1 (`$apr1$`, by openssl) or `{SHA}`."""
    if scheme == "bcrypt":
        digest = _crypt(password, "$2y$05$" + os.urandom(11).hex())  # 22 salt characters of bcrypt's alphabet
    elif scheme == "apr1":
        done = subprocess.run(["openssl", "passwd", "-apr1", password], capture_output=True, text=True,
                              check=True)
        digest = done.stdout.strip()
    else:
        digest = "{SHA}" + base64.b64encode(hashlib.sha1(password.encode()).digest()).decode()
    return f"{user}:{digest}\n"


def opaque_secret(name: str, namespace: str = NS, **string_data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "stringData": string_data}   # no type: the API server defaults it to Opaque


def ingress(name: str, host: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": NS, "annotations": annotations},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": host, "http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}


def basic_auth(secret: str, **extra: str) -> dict[str, str]:
    return {N + "auth-type": "basic", N + "auth-secret": secret, **{N + k.replace("_", "-"): v
                                                                    for k, v in extra.items()}}


def apply(kubectl: Kubectl, obj: dict[str, Any]) -> None:
    done = kubectl.apply(obj)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def web(env: Env) -> Backend:
    # NGINX workers (nobody, under a root master) open the htpasswd file at request time: let them reach it.
    os.chmod(env.tmp, 0o711)
    env.delete("ingressclasses", "nginx", None)
    env.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx"},
                "spec": {"controller": "k8s.io/ingress-nginx"}})
    env.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                "metadata": {"name": "ingressctl"}, "spec": {"controller": "nginx.org/ingress-controller"}})
    env.service("web")
    backend = env.backend("web")
    env.endpoints("web", [backend])
    return backend


def test_basic_auth_from_an_opaque_secret(env: Env, kubectl: Kubectl, web: Backend) -> None:
    lines = (htpasswd_line("alice", "bcrypt-pw", "bcrypt") + htpasswd_line("bob", "apr1-pw", "apr1")
             + htpasswd_line("carol", "sha-pw", "sha"))
    assert lines.count("$2y$") == 1 and lines.count("$apr1$") == 1 and lines.count("{SHA}") == 1
    apply(kubectl, opaque_secret("users", auth=lines, password="an application's own secret"))
    apply(kubectl, ingress("team", "team.example.com", basic_auth("users", auth_realm=REALM)))
    apply(kubectl, ingress("nsform", "ns.example.com",
                           basic_auth(f"{NS}/users", auth_secret_type="auth-file")))
    apply(kubectl, ingress("late", "late.example.com", basic_auth("late-users")))
    apply(kubectl, ingress("cross", "cross.example.com", basic_auth("other/users")))
    apply(kubectl, ingress("nokey", "nokey.example.com", basic_auth("nokey")))
    apply(kubectl, opaque_secret("nokey", htpasswd="carol:{SHA}x\n"))
    apply(kubectl, ingress("plain", "plain.example.com", {N + "proxy-body-size": "1m"}))
    apply(kubectl, ingress("map", "map.example.com", basic_auth("users", auth_secret_type="auth-map")))
    apply(kubectl, ingress("digest", "digest.example.com",
                           {**basic_auth("users"), N + "auth-type": "digest"}))
    c = compat_controller(env)
    port = c.http_port
    wait_until(lambda: request(port, "team.example.com").status == 401, "team served")

    # 401 with the realm without credentials or with a wrong password; 200 with each user's password.
    r = request(port, "team.example.com", "/page")
    assert r.headers["www-authenticate"] == f'Basic realm="{REALM}"'
    for user, password in (("alice", "bcrypt-pw"), ("bob", "apr1-pw"), ("carol", "sha-pw")):
        assert request(port, "team.example.com", "/page", headers=basic(user, password)).status == 200, user
        assert request(port, "team.example.com", "/page", headers=basic(user, "wrong")).status == 401, user
    assert request(port, "team.example.com", headers=basic("mallory", "sha-pw")).status == 401
    # namespace/name, ingress-nginx's default realm (empty).
    r = request(port, "ns.example.com")
    assert (r.status, r.headers["www-authenticate"]) == (401, 'Basic realm=""')
    assert request(port, "ns.example.com", headers=basic("carol", "sha-pw")).status == 200
    # The other Ingresses are served as they are.
    assert request(port, "plain.example.com").status == 200

    # Unusable Secrets: every location answers 503 (ingress-nginx's denied location), with a Warning event.
    # As auth-map, the Secret's key `auth` (several htpasswd lines) would add lines: the Secret is refused.
    for host, name, reason in (("late", "late", f"secret {NS}/late-users does not exist"),
                               ("cross", "cross", "cross namespace usage of secrets is not allowed"),
                               ("nokey", "nokey", "the secret nokey does not contain a key with value auth"),
                               ("map", "map", "not a valid auth-map: the value of the key auth holds")):
        assert request(port, f"{host}.example.com", headers=basic("carol", "sha-pw")).status == 503, host
        env.wait_event(name, "AddedOrUpdatedWithWarning", reason)
    # Refused values: the Ingress is rejected, never served unauthenticated.
    env.wait_event("digest", "Rejected", "NGINX has no digest authentication")
    assert request(port, "digest.example.com").status == 404

    # The Secret created after the Ingress is picked up; changed, it applies; deleted, the Ingress is denied.
    apply(kubectl, opaque_secret("late-users", auth=htpasswd_line("dave", "late-pw", "apr1")))
    wait_until(lambda: request(port, "late.example.com", headers=basic("dave", "late-pw")).status == 200,
               "late Secret picked up")
    c.wait_idle()  # (right after a reload the old workers still accept, with the old configuration)
    assert request(port, "late.example.com").status == 401
    apply(kubectl, opaque_secret("late-users", auth=htpasswd_line("erin", "new-pw", "sha")))
    wait_until(lambda: request(port, "late.example.com", headers=basic("erin", "new-pw")).status == 200,
               "changed Secret applied")
    c.wait_idle()  # (right after a reload the old workers still accept, with the old configuration)
    assert request(port, "late.example.com", headers=basic("dave", "late-pw")).status == 401
    done = kubectl.run("delete", "secret", "late-users", "-n", NS)
    assert done.returncode == 0, done.stderr
    wait_until(lambda: request(port, "late.example.com", headers=basic("erin", "new-pw")).status == 503,
               "deleted Secret denies")
    assert request(port, "team.example.com", headers=basic("carol", "sha-pw")).status == 200

    # The informer keeps only the keys ingress-nginx's annotations read, never the application's own.
    cached = c.lbc.informers.get_object("secrets", f"{NS}/users")
    assert set(cached["data"]) == {"auth"}
    assert "data" not in c.lbc.informers.get_object("secrets", f"{NS}/nokey")


AUTH_MAP_YAML = """\
# The dashboard's users, as ingress-nginx's auth-map reads them: each key a user name, its value the
# password hash (htpasswd -nbB <user> <password>, the part after the colon).
apiVersion: v1
kind: Secret
metadata:
  name: dashboard-users
  namespace: {ns}
type: Opaque
stringData:
  alice: '{alice}'   # bcrypt
  # A block scalar leaves a trailing newline: one is dropped.
  bob: |
    {bob}
{more}---
# The reports' users: an htpasswd file under `auth` (auth-file), beside an application's own key.
apiVersion: v1
kind: Secret
metadata:
  name: reports-users
  namespace: {ns}
stringData:
  auth: |
    {carol}
  api-token: an application's own secret
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: dashboard
  namespace: {ns}
  annotations:
    nginx.ingress.kubernetes.io/auth-type: basic
    nginx.ingress.kubernetes.io/auth-secret: dashboard-users
    nginx.ingress.kubernetes.io/auth-secret-type: auth-map
    nginx.ingress.kubernetes.io/auth-realm: Dashboard
spec:
  ingressClassName: nginx
  rules:
    - host: dashboard.example.com
      http:
        paths:
          - {{path: /, pathType: Prefix, backend: {{service: {{name: web, port: {{number: 80}}}}}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: reports
  namespace: {ns}
  annotations:
    nginx.ingress.kubernetes.io/auth-type: basic
    nginx.ingress.kubernetes.io/auth-secret: reports-users
spec:
  ingressClassName: nginx
  rules:
    - host: reports.example.com
      http:
        paths:
          - {{path: /, pathType: Prefix, backend: {{service: {{name: web, port: {{number: 80}}}}}}}}
"""


def _hash(user: str, password: str, scheme: str) -> str:
    return htpasswd_line(user, password, scheme).strip().split(":", 1)[1]


def test_basic_auth_from_an_auth_map_secret(env: Env, kubectl: Kubectl, web: Backend, tmp_path: Path) -> None:
    fields = {"ns": NS, "alice": _hash("alice", "alice-pw", "bcrypt"), "bob": _hash("bob", "bob-pw", "apr1"),
              "carol": htpasswd_line("carol", "carol-pw", "sha").strip()}
    manifest = tmp_path / "users.yaml"

    def publish(more: str = "") -> None:
        manifest.write_text(AUTH_MAP_YAML.format(**fields, more=more))
        done = kubectl.run("apply", "-f", str(manifest))
        assert done.returncode == 0, done.stderr

    publish()
    c = compat_controller(env)
    port = c.http_port
    alice = basic("alice", "alice-pw")
    wait_until(lambda: request(port, "dashboard.example.com", headers=alice).status == 200, "auth-map served")
    r = request(port, "dashboard.example.com")
    assert (r.status, r.headers["www-authenticate"]) == (401, 'Basic realm="Dashboard"')
    for user, password in (("alice", "alice-pw"), ("bob", "bob-pw")):
        assert request(port, "dashboard.example.com", headers=basic(user, password)).status == 200, user
        assert request(port, "dashboard.example.com", headers=basic(user, "wrong")).status == 401, user
    assert request(port, "dashboard.example.com", headers=basic("dave", "dave-pw")).status == 401
    assert request(port, "reports.example.com", headers=basic("carol", "carol-pw")).status == 200
    assert request(port, "reports.example.com", headers=basic("alice", "alice-pw")).status == 401
    # The cache keeps the Secret reduced (no user): the users were read from the API.
    assert "data" not in c.lbc.informers.get_object("secrets", f"{NS}/dashboard-users")

    # A user added: in without a restart.
    publish(more=f"  dave: '{_hash('dave', 'dave-pw', 'sha')}'\n")
    wait_until(lambda: request(port, "dashboard.example.com", headers=basic("dave", "dave-pw")).status == 200,
               "added user let in")
    assert request(port, "dashboard.example.com", headers=basic("alice", "alice-pw")).status == 200

    # Deleted: every location answers 503, with a Warning event; the auth-file Ingress is unaffected.
    done = kubectl.run("delete", "secret", "dashboard-users", "-n", NS)
    assert done.returncode == 0, done.stderr
    wait_until(lambda: request(port, "dashboard.example.com", headers=basic("dave", "dave-pw")).status == 503,
               "deleted auth-map Secret denies")
    env.wait_event("dashboard", "AddedOrUpdatedWithWarning", f"secret {NS}/dashboard-users does not exist")
    assert request(port, "dashboard.example.com", headers=basic("alice", "alice-pw")).status == 503
    assert request(port, "reports.example.com", headers=basic("carol", "carol-pw")).status == 200
    assert not Path(c.manager.conf_dir, "secrets", f"{NS}-dashboard-users_auth-map").exists()


def test_a_forbidden_auth_map_read_denies_then_is_read_again(env: Env, kubectl: Kubectl, web: Backend,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(auth_map_secrets, "RETRY_SECONDS", 0.5)  # the in-process controller's retry
    c = compat_controller(env)
    port = c.http_port
    wait_until(lambda: request(port, "other.example.com").status == 404, "controller serving")
    apply(kubectl, opaque_secret("dashboard-users", alice=_hash("alice", "alice-pw", "sha")))
    wait_until(lambda: c.lbc.informers.get_object("secrets", f"{NS}/dashboard-users"), "Secret cached")
    reads = env.cluster.stats.count("get", "secrets")   # kubectl's own reads are done (apply reads first)
    env.cluster.faults.fail_next(403, verb="get", resource="secrets")
    apply(kubectl, ingress("dashboard", "dashboard.example.com",
                           basic_auth("dashboard-users", auth_secret_type="auth-map")))
    # Forbidden: the Ingress's locations answer 503, with a Warning; the read is tried again later.
    env.wait_event("dashboard", "AddedOrUpdatedWithWarning", f"secret {NS}/dashboard-users could not be "
                   "read: 403")
    alice = basic("alice", "alice-pw")
    wait_until(lambda: request(port, "dashboard.example.com", headers=alice).status == 200, "read again")
    assert env.cluster.stats.count("get", "secrets") == reads + 2
    # Re-rendered without a change of the Secret (a new realm): served from the file, no further read.
    apply(kubectl, ingress("dashboard", "dashboard.example.com",
                           basic_auth("dashboard-users", auth_secret_type="auth-map", auth_realm="Again")))
    wait_until(lambda: request(port, "dashboard.example.com").headers.get("www-authenticate")
               == 'Basic realm="Again"', "re-rendered")
    assert request(port, "dashboard.example.com", headers=alice).status == 200
    assert env.cluster.stats.count("get", "secrets") == reads + 2


def test_basic_auth_satisfy_any_with_an_address_rule(env: Env, kubectl: Kubectl, web: Backend) -> None:
    apply(kubectl, opaque_secret("users", auth=htpasswd_line("carol", "sha-pw", "sha")))
    office = {N + "whitelist-source-range": "127.0.0.2/32"}
    apply(kubectl, ingress("any", "any.example.com", {**basic_auth("users"), **office, N + "satisfy": "any"}))
    apply(kubectl, ingress("all", "all.example.com", {**basic_auth("users"), **office}))
    c = compat_controller(env)
    port = c.http_port
    wait_until(lambda: request(port, "any.example.com", source="127.0.0.2").status == 200, "any served")
    creds = basic("carol", "sha-pw")
    assert request(port, "any.example.com", source="127.0.0.1").status == 401
    assert request(port, "any.example.com", source="127.0.0.1", headers=creds).status == 200
    assert request(port, "all.example.com", source="127.0.0.2").status == 401
    assert request(port, "all.example.com", source="127.0.0.2", headers=creds).status == 200
    assert request(port, "all.example.com", source="127.0.0.1", headers=creds).status == 403


def test_without_the_flag_opaque_secrets_keep_no_data(env: Env, kubectl: Kubectl, web: Backend) -> None:
    apply(kubectl, opaque_secret("users", auth=htpasswd_line("carol", "sha-pw", "sha")))
    c = env.controller(ingress_class="ingressctl")
    wait_until(lambda: c.lbc.informers.get_object("secrets", f"{NS}/users") is not None, "Secret cached")
    assert "data" not in c.lbc.informers.get_object("secrets", f"{NS}/users")
    assert not Path(c.manager.conf_dir, "secrets", f"{NS}-users").exists()
