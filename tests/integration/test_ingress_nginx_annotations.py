"""ingress-nginx's annotations through the real controller (`--ingress-nginx-compat`), devcluster, kubectl and
a real NGINX, with the manifests in the form users publish (tests/integration/data/ingress-nginx/): each
annotation answers real requests as it did under ingress-nginx (body limits, timeouts, buffers, the upstream
Host, retries, redirect codes and targets, allow and deny lists, rate and connection limits answering 503)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import make_cert, wait_until
from tests.integration.harness import NS, Env
from tests.integration.ingress_nginx_helpers import (
    apply_manifest,
    compat_controller,
    concurrently,
    request,
    special,
)
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration


def web(env: Env) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])


def test_proxying_annotations(env: Env, kubectl: Kubectl) -> None:
    web(env)
    env.service("special")
    env.endpoints("special", [special(env, "special")])
    env.service("flaky")
    env.endpoints("flaky", [env.backend("good"), special(env, "bad", fail=True)])
    apply_manifest(env, kubectl, "proxying.yaml")
    c = compat_controller(env)
    port = c.http_port
    for host in ("upload", "slow", "buffers", "plain", "vhost", "retry", "noretry"):
        wait_until(lambda h=host: request(port, f"{h}.example.com").status in (200, 502), f"{host} served")

    # proxy-body-size: "1k" (client_max_body_size), with request buffering off
    assert request(port, "upload.example.com", method="POST", body=b"x" * 1000).status == 200
    assert request(port, "upload.example.com", method="POST", body=b"x" * 2000).status == 413
    conf = Path(c.manager.conf_dir, "conf.d", f"{NS}-upload.conf").read_text()
    assert "proxy_request_buffering off;" in conf and "client_body_buffer_size 2k;" in conf
    # proxy-read-timeout: "1" (seconds): a 2 s answer times out, the plain Ingress waits 60 s
    assert request(port, "slow.example.com", "/slow").status == 504
    assert request(port, "plain.example.com", "/slow").status == 200
    # upstream-vhost and proxy-redirect-from/-to
    r = request(port, "vhost.example.com", "/page")
    assert r.body == "special GET internal.example.com/page\n"
    r = request(port, "vhost.example.com", "/redirect")
    assert r.status == 302 and r.headers["location"] == "https://vhost.example.com/next"
    assert request(port, "plain.example.com", "/redirect").headers["location"] == \
        "http://internal.example.com/next"
    # proxy-next-upstream: a 502 of one endpoint is retried on the other
    assert {request(port, "retry.example.com").status for _ in range(30)} == {200}
    assert {request(port, "noretry.example.com").status for _ in range(30)} == {200, 502}
    # proxy-buffer-size: "16k" takes a 12 KiB header NGINX's default buffer refuses (last: the refused
    # header counts as a failure of the plain Ingress's upstream server)
    big = request(port, "buffers.example.com", "/big-header")
    assert big.status == 200 and len(big.headers["x-big"]) == 12000
    assert request(port, "plain.example.com", "/big-header").status == 502


def test_redirect_annotations(env: Env, kubectl: Kubectl) -> None:
    web(env)
    for name in ("secure", "both"):
        env.create(make_cert(f"{name}.example.com").secret(f"{name}-tls", NS))
    apply_manifest(env, kubectl, "redirects.yaml")
    c = compat_controller(env)
    port, https = c.http_port, c.https_port
    wait_until(lambda: c.https("secure.example.com").status == 200, "secure served over TLS")
    # ssl-redirect: 308 (ingress-nginx's http-redirect-code), to the TLS port, keeping the URI
    r = request(port, "secure.example.com", "/a/b?c=1")
    assert (r.status, r.headers["location"]) == (308, f"https://secure.example.com:{https}/a/b?c=1")
    assert request(port, "both.example.com").status == 200
    # force-ssl-redirect: also without a certificate of the host
    r = wait_until(lambda: (x := request(port, "forced.example.com", "/x")).status == 308 and x, "forced")
    assert r.headers["location"] == f"https://forced.example.com:{https}/x"
    # app-root: `/` (only `/`) answers 302 to the root
    r = request(port, "approot.example.com", "/")
    assert (r.status, r.headers["location"]) == (302, "http://approot.example.com/app1")
    assert request(port, "approot.example.com", "/app1").status == 200
    # permanent-redirect (301, with NGINX variables), its code, and temporal-redirect winning over it
    r = request(port, "moved.example.com", "/old?x=1")
    assert (r.status, r.headers["location"]) == (301, "https://www.example.org/old?x=1")
    r = request(port, "moved308.example.com", "/anything")
    assert (r.status, r.headers["location"]) == (308, "https://www.example.org/new")
    r = request(port, "maintenance.example.com", "/")
    assert (r.status, r.headers["location"]) == (302, "https://status.example.org/")
    assert env.wait_event("maintenance", "AddedOrUpdatedWithWarning",
                          "permanent-redirect ignored (nginx.ingress.kubernetes.io/temporal-redirect is set")


def test_access_and_limit_annotations(env: Env, kubectl: Kubectl) -> None:
    web(env)
    env.service("special")
    env.endpoints("special", [special(env, "special")])
    apply_manifest(env, kubectl, "access-and-limits.yaml")
    c = compat_controller(env)
    port = c.http_port
    wait_until(lambda: request(port, "public.example.com").status == 200, "public served")
    # whitelist-source-range: only the listed clients; denylist-source-range: all but the listed
    assert request(port, "office.example.com", source="127.0.0.1").status == 403
    assert request(port, "office.example.com", source="127.0.0.2").status == 200
    assert request(port, "public.example.com", source="127.0.0.3").status == 403
    assert request(port, "public.example.com", source="127.0.0.1").status == 200
    # limit-rps: 2/s with a burst of 2 x limit-burst-multiplier (1), nodelay: the excess answers 503
    codes = [request(port, "api.example.com", source="127.0.0.5").status for _ in range(12)]
    assert codes[0] == 200 and 503 in codes and set(codes) == {200, 503}
    # limit-whitelist: that client is never limited
    assert {request(port, "api.example.com", source="127.0.0.4").status for _ in range(12)} == {200}
    # limit-rpm: one a minute, with a burst of 1 (1 x limit-burst-multiplier) on top
    codes = [request(port, "perminute.example.com", source="127.0.0.6").status for _ in range(4)]
    assert codes == [200, 200, 503, 503]
    # limit-connections: "1": a second concurrent connection of the client gets 503
    codes = concurrently(3, lambda: request(port, "downloads.example.com", "/slow",
    source="127.0.0.7").status)
    assert sorted(codes) == [200, 503, 503]
    assert request(port, "downloads.example.com", "/", source="127.0.0.7").status == 200

    # An invalid entry refuses the Ingress (ingress-nginx served 503 on its paths); the others keep serving.
    done = kubectl.run("annotate", "--overwrite", "-n", NS, "ingress", "office",
                       "nginx.ingress.kubernetes.io/whitelist-source-range=127.0.0.2/32, 10.20.0.0/33")
    assert done.returncode == 0, done.stderr
    env.wait_event("office", "Rejected", "annotations.nginx.ingress.kubernetes.io/whitelist-source-range: "
                                         'Invalid value: "127.0.0.2/32, 10.20.0.0/33"')
    c.wait_status("office.example.com", "/", 404)
    assert request(port, "public.example.com").status == 200

