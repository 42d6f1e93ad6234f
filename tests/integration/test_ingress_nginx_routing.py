"""ingress-nginx's `use-regex`, `rewrite-target` and canaries through the real controller
(`--ingress-nginx-compat`), devcluster, kubectl and a real NGINX: ingress-nginx's own rewrite example sends
`/something/new` to the backend as `/new`; regex mode makes every path of the host a case-insensitive regex
anchored at the start, the longest first; a target without capture groups replaces the whole URI; a target
ingress-nginx's validator refuses rejects the Ingress (nothing of it reaches NGINX) and harms no other
Ingress; a canary Ingress takes its weight's share of 1,000 real requests within 5 points, and its header and
cookie decide first (`always`/`never`, an exact value); a canary without a primary is reported and serves
nothing; `default-backend` answers for a backend without endpoints and takes `custom-http-errors`;
`from-to-www-redirect` answers 308 from the other name unless another Ingress serves it."""

from __future__ import annotations

import ssl
import time
from pathlib import Path

import pytest

from tests.helpers import https_get, make_cert, wait_until
from tests.integration.harness import NS, Env
from tests.integration.ingress_nginx_helpers import DATA, apply_manifest, compat_controller, request, special
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration


def test_rewrite_target_and_use_regex(env: Env, kubectl: Kubectl) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.service("special")
    env.endpoints("special", [special(env, "special")])
    apply_manifest(env, kubectl, "rewrite.yaml")
    c = compat_controller(env)
    port = c.http_port
    for host in ("rewrite.bar.com", "regex.example.com", "whole.example.com"):
        wait_until(lambda h=host: request(port, h, "/something/x" if h.startswith("rewrite") else "/app")
                   .status in (200, 404), f"{host} served")

    def seen(host: str, path: str) -> str:
        r = request(port, host, path)
        assert r.status == 200, (host, path, r.status, r.body)
        return r.body

    # ingress-nginx's docs example: the second capture group is the URI the backend gets
    assert seen("rewrite.bar.com", "/something/new") == "special GET rewrite.bar.com/new\n"
    assert seen("rewrite.bar.com", "/something") == "special GET rewrite.bar.com/\n"
    assert seen("rewrite.bar.com", "/something/a/b?q=1") == "special GET rewrite.bar.com/a/b?q=1\n"
    assert seen("rewrite.bar.com", "/SomeThing/new") == "special GET rewrite.bar.com/new\n"  # (?i)
    assert request(port, "rewrite.bar.com", "/other").status == 404
    # use-regex: the longest regex first, case-insensitive, the Prefix path a plain regex prefix
    assert seen("regex.example.com", "/api/V2/items/7") == "special GET regex.example.com/api/V2/items/7\n"
    assert seen("regex.example.com", "/API/v1/other").startswith("web ")
    assert seen("regex.example.com", "/apix").startswith("web ")  # no element-wise Prefix in regex mode
    assert request(port, "regex.example.com", "/nothing").status == 404
    # a target without captures replaces the whole URI; the path stays a prefix regex
    assert seen("whole.example.com", "/app/deep/x") == "special GET whole.example.com/landing\n"
    assert seen("whole.example.com", "/application") == "special GET whole.example.com/landing\n"

    # A target ingress-nginx refuses rejects the Ingress; the others keep serving.
    done = kubectl.run("annotate", "--overwrite", "-n", NS, "ingress", "whole",
                       "nginx.ingress.kubernetes.io/rewrite-target=/x;return 200 pwned")
    assert done.returncode == 0, done.stderr
    env.wait_event("whole", "Rejected", "annotations.nginx.ingress.kubernetes.io/rewrite-target: "
                                        'Invalid value: "/x;return 200 pwned"')
    c.wait_status("whole.example.com", "/app", 404)
    assert seen("rewrite.bar.com", "/something/new") == "special GET rewrite.bar.com/new\n"


def test_canary_annotations(env: Env, kubectl: Kubectl) -> None:
    for name in ("stable", "canary"):
        env.service(name)
        env.endpoints(name, [special(env, name)])
    apply_manifest(env, kubectl, "canary.yaml")
    c = compat_controller(env)
    port = c.http_port
    for host in ("weight", "header", "value"):
        wait_until(lambda h=host: request(port, f"{h}.example.com").status == 200, f"{host} served")

    def backend(host: str, **headers: str) -> str:
        r = request(port, host, "/", headers=headers)
        assert r.status == 200, (host, r.status, r.body)
        return r.headers["x-backend"]

    # canary-weight: 30 of 100, over 1,000 real requests, within 5 points
    shares = [backend("weight.example.com") for _ in range(1000)]
    assert 250 <= shares.count("canary") <= 350 and shares.count("canary") + shares.count("stable") == 1000
    # canary-by-header: always / never; any other value falls through (to the cookie, then weight 0)
    host = "header.example.com"
    assert backend(host, **{"X-Canary": "always"}) == "canary"
    assert backend(host, **{"X-Canary": "never", "Cookie": "canary=always"}) == "stable"  # header first
    assert backend(host, **{"X-Canary": "maybe"}) == "stable"
    assert backend(host) == "stable"
    # canary-by-cookie: always / never when the header says nothing
    assert backend(host, Cookie="a=1; canary=always") == "canary"
    assert backend(host, **{"X-Canary": "maybe", "Cookie": "canary=always"}) == "canary"
    assert backend(host, Cookie="canary=never") == "stable"
    assert backend(host, **{"X-Canary": "Always"}) == "stable"  # case-sensitive, as ingress-nginx's Lua
    # canary-by-header-value: only that exact value
    host = "value.example.com"
    assert backend(host, **{"X-Version": "v2"}) == "canary"
    assert {backend(host, **{"X-Version": v}) for v in ("v3", "V2", "always", "")} == {"stable"}
    # A canary without a primary is reported, serves nothing and harms nothing.
    env.wait_event("orphan-canary", "Rejected",
                   "no regular Ingress of the class serves host orphan.example.com")
    assert request(port, "orphan.example.com").status == 404
    assert backend("value.example.com", **{"X-Version": "v2"}) == "canary"
    # Deleting the canary sends everything to the primary again.
    done = kubectl.run("delete", "-n", NS, "ingress", "tester-canary")
    assert done.returncode == 0, done.stderr
    wait_until(lambda: backend("header.example.com", **{"X-Canary": "always"}) == "stable", "canary removed")


def test_default_backend_annotation(env: Env, kubectl: Kubectl) -> None:
    env.service("special")
    env.endpoints("special", [special(env, "special")])
    env.service("fallback")
    env.endpoints("fallback", [special(env, "fallback")])
    env.service("down")
    env.endpoints("down", [])
    apply_manifest(env, kubectl, "default-backend.yaml")
    c = compat_controller(env)
    port = c.http_port
    wait_until(lambda: request(port, "fallback.example.com", "/").status == 200, "fallback served")
    wait_until(lambda: request(port, "plain.example.com", "/down").status == 502, "plain served")
    # a backend without endpoints: the default-backend Service answers, with the request as it came
    r = request(port, "fallback.example.com", "/down/x")
    assert (r.status, r.body) == (200, "fallback GET fallback.example.com/down/x\n")
    # custom-http-errors go to it too, keeping the status
    r = request(port, "fallback.example.com", "/missing")
    assert r.status == 404 and r.headers["x-backend"] == "fallback"
    assert request(port, "fallback.example.com", "/found").headers["x-backend"] == "special"
    # once the backend has endpoints again, it answers itself
    env.endpoints("down", [special(env, "down")])
    wait_until(lambda: request(port, "fallback.example.com", "/down/x").headers.get("x-backend") == "down",
               "down served")
    # the default-backend Service without endpoints counts for nothing (ingress-nginx): the 502 of the backend
    env.endpoints("down", [])
    env.endpoints("fallback", [])
    wait_until(lambda: request(port, "fallback.example.com", "/down/x").status == 502, "no default backend")
    # a Service that does not exist is named in a Warning event
    done = kubectl.run("annotate", "--overwrite", "-n", NS, "ingress", "fallback",
                       "nginx.ingress.kubernetes.io/default-backend=nosuch")
    assert done.returncode == 0, done.stderr
    env.wait_event("fallback", "AddedOrUpdatedWithWarning",
                   f"annotation nginx.ingress.kubernetes.io/default-backend: Service {NS}/nosuch not found")


def test_from_to_www_redirect(env: Env, kubectl: Kubectl) -> None:
    env.service("special")
    env.endpoints("special", [special(env, "special")])
    apply_manifest(env, kubectl, "www-redirect.yaml")
    c = compat_controller(env)
    port = c.http_port
    wait_until(lambda: request(port, "www.shop.example.com").status == 308, "redirect served")
    # 308 to the host, on the port asked, with one trailing slash dropped (ingress-nginx's redirect server)
    for path, target in (("/a/b?x=1", "/a/b?x=1"), ("/a/", "/a"), ("/", "")):
        r = request(port, "www.shop.example.com", path)
        assert (r.status, r.headers["location"]) == (308, f"http://shop.example.com:{port}{target}"), path
    assert request(port, "shop.example.com", "/a").body == "special GET shop.example.com/a\n"
    r = request(port, "blog.example.com", "/post")
    assert (r.status, r.headers["location"]) == (308, f"http://www.blog.example.com:{port}/post")
    # a name another Ingress serves stays its own, even a newer one's; the redirecting Ingress is told
    wait_until(lambda: request(port, "www.taken.example.com", "/x").status == 308, "taken redirects")
    created = env.get("ingresses", "taken")["metadata"]["creationTimestamp"]
    wait_until(lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) > created, "a newer second")
    done = kubectl.run("apply", "-f", str(DATA / "www-redirect-taken.yaml"))
    assert done.returncode == 0, done.stderr
    # (the event comes after the reload: a 200 seen earlier can come from a new worker while an old one
    # still accepts, and answers the next request with the redirect)
    env.wait_event("taken", "AddedOrUpdatedWithWarning",
                   "host www.taken.example.com is served by another resource; no redirect")
    assert request(port, "www.taken.example.com", "/x").body == "special GET www.taken.example.com/x\n"
    # when that Ingress goes, the redirect takes the name
    done = kubectl.run("delete", "-n", NS, "ingress", "taken-www")
    assert done.returncode == 0, done.stderr
    wait_until(lambda: request(port, "www.taken.example.com", "/x").status == 308, "redirect takes the name")


def test_from_to_www_redirect_over_https(env: Env, kubectl: Kubectl, tmp_path: Path) -> None:
    env.service("special")
    env.endpoints("special", [special(env, "special")])
    for name, cert in (("secure-tls", make_cert("secure.example.com", "www.secure.example.com")),
                       ("plain-cert-tls", make_cert("plain-cert.example.com"))):
        (tmp_path / f"{name}.crt").write_bytes(cert.cert_pem)
        (tmp_path / f"{name}.key").write_bytes(cert.key_pem)
        done = kubectl.run("create", "secret", "tls", name, "-n", NS, f"--cert={tmp_path / name}.crt",
                           f"--key={tmp_path / name}.key")
        assert done.returncode == 0, done.stderr
    apply_manifest(env, kubectl, "www-redirect.yaml")
    c = compat_controller(env)
    https = c.https_port
    # the certificate names the other name: HTTPS requests to it answer 308 with that certificate
    r = wait_until(lambda: (x := https_get(https, "www.secure.example.com", "/a/?q=1")).status == 308 and x,
                   "HTTPS redirect served")
    assert r.headers["location"] == f"https://secure.example.com:{https}/a/?q=1"  # only a final `/` goes
    assert r.peer_cert_der == https_get(https, "secure.example.com").peer_cert_der
    assert https_get(https, "secure.example.com", "/a").body == "special GET secure.example.com/a\n"
    r = request(c.http_port, "www.secure.example.com", "/b")
    assert (r.status, r.headers["location"]) == (308, f"http://secure.example.com:{c.http_port}/b")
    # the certificate does not: plain HTTP is redirected, HTTPS is not (as without the annotation), and the
    # Ingress is told
    r = request(c.http_port, "www.plain-cert.example.com", "/b")
    assert (r.status, r.headers["location"]) == (308, f"http://plain-cert.example.com:{c.http_port}/b")
    with pytest.raises(ssl.SSLError, match="UNRECOGNIZED_NAME"):  # the default server knows no such name
        https_get(https, "www.plain-cert.example.com", "/b")
    env.wait_event("plain-cert", "AddedOrUpdatedWithWarning", "the TLS certificate of host "
                   "plain-cert.example.com is not valid for www.plain-cert.example.com; HTTPS requests to "
                   "www.plain-cert.example.com are not redirected")
    # a new certificate naming it: HTTPS redirects too
    cert = make_cert("plain-cert.example.com", "*.plain-cert.example.com")
    env.apply(cert.secret("plain-cert-tls", NS))
    r = wait_until(lambda: (x := https_get(https, "www.plain-cert.example.com", "/b")).status == 308 and x,
                   "HTTPS redirect after the certificate changed")
    assert r.headers["location"] == f"https://plain-cert.example.com:{https}/b"
