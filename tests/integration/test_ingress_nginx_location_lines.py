"""ingress-nginx's one-directive annotations (`location_lines.py`) answering real requests through the real
controller (`--ingress-nginx-compat`), kubectl, devcluster and a real NGINX, with the Ingresses as
ingress-nginx users write them (tests/integration/data/ingress-nginx/location-lines.yaml): `limit-rate` and
`limit-rate-after` slowing a large answer, `proxy-cookie-path` and `proxy-cookie-domain` rewriting the
backend's cookies, `use-port-in-redirects` and `relative-redirects` shaping the redirect NGINX makes itself,
`enable-access-log: "false"` keeping an Ingress's requests out of the access log, `enable-rewrite-log`
logging the rewrites, `x-forwarded-prefix` sent by rewriting locations only, `satisfy: "any"` letting an
allowed address in without credentials, and invalid values rejecting only their Ingress."""

from __future__ import annotations

import base64
import hashlib
import http.client
import socket
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ingressctl.demo.backend import Backend
from tests.helpers import wait_until
from tests.integration.harness import NS, Controller, Env
from tests.integration.ingress_nginx_helpers import N, apply_manifest, compat_controller, request
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration

KIB = 1024
BIG = bytes(hashlib.sha256(str(i).encode()).digest()[i % 32] for i in range(600 * KIB))  # 600 KiB
COOKIE = "a=b; Path=/old; Domain=backend.internal"
SERVED = {"rate": "/", "plain": "/", "cookies": "/", "cookies-off": "/", "quiet": "/", "rewrite": "/app/",
          "unlogged": "/app/", "prefixonly": "/", "port": "/docs/", "noport": "/docs/", "relative": "/docs/",
          "redirects": "/docs/"}


class App(Backend):
    """The application behind every Ingress: `/big` answers `BIG`, `/cookie` sets `COOKIE`; anything else
    answers `<path> prefix=<X-Forwarded-Prefix or ->`."""

    def start(self) -> App:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                with outer._lock:
                    outer.hits += 1
                extra = {}
                if self.path.startswith("/big"):
                    body = BIG
                else:
                    body = f"{self.path} prefix={self.headers.get('X-Forwarded-Prefix', '-')}\n".encode()
                    if self.path.startswith("/cookie"):
                        extra["Set-Cookie"] = COOKIE
                self.send_response(200)
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("X-Backend", outer.name)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer((self.host, self._port), Handler)
        server.daemon_threads = True
        self._serve(server, f"backend-{self.name}")
        return self


def serve(env: Env, kubectl: Kubectl) -> Controller:
    """The manifest applied, its Ingresses served by a compat controller."""
    app = App("app").start()
    env.backends.append(app)
    env.service("app")
    env.endpoints("app", [app])
    apply_manifest(env, kubectl, "location-lines.yaml")
    c = compat_controller(env)
    for host, path in SERVED.items():
        wait_until(lambda h=host, p=path: request(c.http_port, f"{h}.example.com", p).status == 200,
                   f"{host} served")
    return c


def conf(c: Controller, name: str) -> str:
    return Path(c.manager.conf_dir, "conf.d", f"{NS}-{name}.conf").read_text()


def timed_get(port: int, host: str, path: str) -> tuple[float, int, bytes]:
    """Seconds from sending the request to the last byte of the body; the status and the body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        start = time.monotonic()
        conn.request("GET", path, headers={"Host": host, "Connection": "close"})
        r = conn.getresponse()
        body = r.read()
        return time.monotonic() - start, r.status, body
    finally:
        conn.close()


def test_limit_rate_slows_the_answer_after_limit_rate_after(env: Env, kubectl: Kubectl) -> None:
    c = serve(env, kubectl)
    port = c.http_port
    # 100 KB/s after the first 100 KB: the other 500 KB take 5 s. NGINX allows a second's worth ahead
    # (`rate * (now - start + 1)`) and counts whole seconds, so at least 3 s on any machine.
    seconds, status, body = timed_get(port, "rate.example.com", "/big")
    assert (status, len(body)) == (200, len(BIG)) and body == BIG
    assert seconds >= (len(BIG) - 100 * KIB) / (100 * KIB) - 2, seconds
    text = conf(c, "rate")
    assert "limit_rate_after 100k;" in text and "limit_rate 100k;" in text
    # Without the annotations the same answer arrives whole too, unlimited.
    _, status, body = timed_get(port, "plain.example.com", "/big")
    assert (status, body == BIG) == (200, True)
    assert "limit_rate" not in conf(c, "plain")


def test_proxy_cookie_path_and_domain(env: Env, kubectl: Kubectl) -> None:
    c = serve(env, kubectl)
    port = c.http_port
    r = request(port, "cookies.example.com", "/cookie")
    assert (r.status, r.headers["set-cookie"]) == (200, "a=b; Path=/new; Domain=example.com")
    # `off`, and no annotation: the cookie as the backend sent it.
    for host in ("cookies-off", "plain"):
        assert request(port, f"{host}.example.com", "/cookie").headers["set-cookie"] == COOKIE, host


def test_the_redirects_nginx_makes_itself(env: Env, kubectl: Kubectl) -> None:
    c = serve(env, kubectl)
    port = c.http_port
    # `/docs/` is a prefix location: NGINX answers `/docs` with 301 to `/docs/` itself (the backend never
    # sees it): absolute with the listener's port without the annotations (NGINX's `port_in_redirect on`,
    # where ingress-nginx writes `off`), with `use-port-in-redirects: "true"`, without the port with
    # `"false"`, and only the path with `relative-redirects: "true"`.
    app = env.backends[0]
    hits = app.hits
    expected = {"redirects": f"http://redirects.example.com:{port}/docs/",
                "port": f"http://port.example.com:{port}/docs/",
                "noport": "http://noport.example.com/docs/",
                "relative": "/docs/"}
    for host, location in expected.items():
        r = request(port, f"{host}.example.com", "/docs")
        assert (r.status, r.headers["location"]) == (301, location), host
    assert app.hits == hits


def output_seq(c: Controller) -> int:
    """The number of the last line NGINX printed (its access log is stdout, its error log stderr)."""
    return int(c.manager._output.seq)


def output_since(c: Controller, seq: int) -> list[str]:
    return list(c.manager._output.since(seq))


def get_until_closed(port: int, host: str, path: str) -> int:
    """GET, read until NGINX closes the connection (it writes the access log line before): the status."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1])


def test_enable_access_log_false(env: Env, kubectl: Kubectl) -> None:
    c = serve(env, kubectl)
    port = c.http_port
    seq = output_seq(c)
    assert get_until_closed(port, "quiet.example.com", "/quiet-request") == 200
    assert get_until_closed(port, "plain.example.com", "/logged-request") == 200
    wait_until(lambda: any('"GET /logged-request HTTP/1.1" 200' in line for line in output_since(c, seq)),
               "the plain Ingress's request in the access log")
    assert not [line for line in output_since(c, seq) if "/quiet-request" in line]
    assert "access_log off;" in conf(c, "quiet") and "access_log" not in conf(c, "plain")


def test_x_forwarded_prefix_and_the_rewrite_log(env: Env, kubectl: Kubectl) -> None:
    c = serve(env, kubectl)
    port = c.http_port
    seq = output_seq(c)
    # The rewriting location sends the prefix with the rewritten URI ...
    assert request(port, "rewrite.example.com", "/app/hello").body == "/hello prefix=/app\n"
    assert request(port, "rewrite.example.com", "/app").body == "/ prefix=/app\n"
    # ... a location that does not rewrite sends no prefix, and a rewrite without the annotation none either.
    assert request(port, "prefixonly.example.com", "/app/hello").body == "/app/hello prefix=-\n"
    assert request(port, "unlogged.example.com", "/app/other").body == "/other prefix=-\n"
    assert "X-Forwarded-Prefix" not in conf(c, "prefix-only")

    # enable-rewrite-log: NGINX's notices of the rewrite (its error log is at `notice`, the default).
    def rewrite_notices(host: str) -> list[str]:
        return [line for line in output_since(c, seq) if "[notice]" in line and f'host: "{host}"' in line]

    notices = wait_until(lambda: len(rewrite_notices("rewrite.example.com")) >= 4 and
                         rewrite_notices("rewrite.example.com"), "the rewrite log's notices")
    assert any('rewritten data: "/hello"' in line for line in notices), notices
    assert any('matches "/app/hello"' in line for line in notices), notices
    assert get_until_closed(port, "plain.example.com", "/after-the-rewrites") == 200
    wait_until(lambda: any("/after-the-rewrites" in line for line in output_since(c, seq)), "later request")
    assert rewrite_notices("unlogged.example.com") == []
    assert "rewrite_log on;" in conf(c, "rewrite") and "rewrite_log" not in conf(c, "rewrite-unlogged")


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_satisfy_any_with_basic_auth_and_an_allowlist(env: Env, kubectl: Kubectl) -> None:
    c = serve(env, kubectl)
    port = c.http_port
    r = wait_until(lambda: (x := request(port, "office.example.com", source="127.0.0.2")).status == 200 and x,
                   "the office's address let in")
    assert r.backend == "app"
    assert request(port, "office.example.com", source="127.0.0.1").status == 401
    assert request(port, "office.example.com", source="127.0.0.1", headers=basic("carol", "sha-pw")).status \
        == 200
    assert request(port, "office.example.com", source="127.0.0.1", headers=basic("carol", "no")).status == 401


def ingress(name: str, host: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": NS, "annotations": annotations},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": host, "http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": "app", "port": {"number": 80}}}}]}}]}}


@pytest.mark.parametrize(("key", "value"), [
    ("limit-rate", "10k"), ("limit-rate-after", "-1"), ("proxy-cookie-path", "/a;b /c"),
    ("proxy-cookie-domain", 'a.example "b'), ("x-forwarded-prefix", "/a b"),
    ("use-port-in-redirects", "maybe"), ("enable-access-log", "no way"),
])
def test_an_invalid_value_rejects_only_its_ingress(env: Env, kubectl: Kubectl, key: str, value: str) -> None:
    c = serve(env, kubectl)
    port = c.http_port
    done = kubectl.apply(ingress("bad", "bad.example.com", {N + key: value}))
    assert done.returncode == 0, done.stderr
    env.wait_event("bad", "Rejected", f"annotations.{N}{key}: Invalid value")
    # Also on an Ingress that was served: it is withdrawn, the others keep serving.
    done = kubectl.run("annotate", "--overwrite", "-n", NS, "ingress", "cookies", f"{N}{key}={value}")
    assert done.returncode == 0, done.stderr
    env.wait_event("cookies", "Rejected", f"annotations.{N}{key}: Invalid value")
    c.wait_status("cookies.example.com", "/", 404)
    assert request(port, "bad.example.com").status == 404
    assert request(port, "plain.example.com").status == 200
    assert request(port, "cookies-off.example.com", "/cookie").headers["set-cookie"] == COOKIE



def rewriting(name: str, prefix: str, path: str = "/app(/|$)(.*)") -> dict[str, Any]:
    """An Ingress for `<name>.example.com` rewriting `path` to `/$2`, with `x-forwarded-prefix: <prefix>`."""
    body = ingress(name, f"{name}.example.com", {N + "use-regex": "true", N + "rewrite-target": "/$2",
                                                 N + "x-forwarded-prefix": prefix})
    body["spec"]["rules"][0]["http"]["paths"][0].update(path=path, pathType="ImplementationSpecific")
    return body


def test_x_forwarded_prefix_with_an_unknown_variable_is_rejected(env: Env, kubectl: Kubectl) -> None:
    """A `$` that starts no capture group or NGINX variable failed NGINX's configuration test in the
    rewriting location (the reload, then the Ingress isolated): it is refused as an invalid value, as in
    rewrite-target."""
    c = serve(env, kubectl)
    port = c.http_port
    for name, value, bad in (("trailing", "/a$", "$"), ("unknown", "/$nosuch", "$nosuch")):
        done = kubectl.apply(rewriting(name, value))
        assert done.returncode == 0, done.stderr
        env.wait_event(name, "Rejected", f'annotations.{N}x-forwarded-prefix: Invalid value: "{value}": '
                                         f"unknown NGINX variable(s): {bad}")
        assert request(port, f"{name}.example.com", "/app/x").status == 404
    # A capture group of the path and a known variable are taken.
    done = kubectl.apply(rewriting("captured", "/$1x/$host", path="/(app)(?:/|$)(.*)"))
    assert done.returncode == 0, done.stderr
    r = wait_until(lambda: (x := request(port, "captured.example.com", "/app/y")).status == 200 and x,
                   "captured served")
    assert r.body == "/y prefix=/appx/captured.example.com\n"
    assert not env.events(reason="AddedOrUpdatedWithError")
    assert request(port, "rewrite.example.com", "/app/hello").body == "/hello prefix=/app\n"


def test_a_masters_values_reach_its_minions_without_their_own(env: Env, kubectl: Kubectl) -> None:
    """Mergeable Ingresses: a minion's own values apply to its locations; `satisfy` of the master reaches
    each minion that sets none, also one that sets another of these annotations."""
    c = serve(env, kubectl)
    port = c.http_port
    master = ingress("team", "team.example.com", {"nginx.org/mergeable-ingress-type": "master",
                                                  N + "satisfy": "any"})
    del master["spec"]["rules"][0]["http"]
    guarded = {"nginx.org/mergeable-ingress-type": "minion", N + "auth-type": "basic",
               N + "auth-secret": "users", N + "whitelist-source-range": "127.0.0.2/32"}
    minions = {"/plain": {}, "/limited": {N + "limit-rate": "1000"}, "/strict": {N + "satisfy": "all"}}
    for path, own in minions.items():
        body = ingress(f"team{path.replace('/', '-')}", "team.example.com", {**guarded, **own})
        body["spec"]["rules"][0]["http"]["paths"][0]["path"] = path
        done = kubectl.apply(body)
        assert done.returncode == 0, done.stderr
    done = kubectl.apply(master)
    assert done.returncode == 0, done.stderr
    for path in minions:
        wait_until(lambda p=path: request(port, "team.example.com", p).status != 404, f"{path} served")
    # The office's address without credentials: the master's `any`, unless the minion says `all`.
    assert request(port, "team.example.com", "/plain", source="127.0.0.2").status == 200
    assert request(port, "team.example.com", "/limited", source="127.0.0.2").status == 200
    assert request(port, "team.example.com", "/strict", source="127.0.0.2").status == 401
    # Another address: credentials let it in where `any` applies; `all` also needs the address.
    creds = basic("carol", "sha-pw")
    assert request(port, "team.example.com", "/limited", source="127.0.0.1").status == 401
    assert request(port, "team.example.com", "/limited", source="127.0.0.1", headers=creds).status == 200
    assert request(port, "team.example.com", "/strict", source="127.0.0.1", headers=creds).status == 403
    assert "limit_rate 1000k;" in conf(c, "team")
