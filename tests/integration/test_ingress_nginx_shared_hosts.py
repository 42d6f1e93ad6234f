"""Several ingress-nginx Ingresses for one host, served as ingress-nginx served them (one server with every
Ingress's paths), through the real controller (`--ingress-nginx-compat`), kubectl, devcluster and a real
NGINX: ingress-nginx's oauth2-proxy setup (an authenticated application and an unauthenticated /oauth2
Ingress of the same host, the auth subrequest coming back through this NGINX), a host split by team (each
Ingress's annotations on its own paths only, the host's regex mode shared, the certificate named by the
newer Ingress only), a repeated path (the older Ingress keeps it, the newer is told), the host passing to
the next Ingress when its owner goes, every Ingress's status and events, an Ingress of ingressctl's own
class keeping NIC's one owner per host, and one team's snippet NGINX refuses costing only that team's
change."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from ingressctl.controller.model import creation_seconds
from tests.helpers import make_cert, tls_secret, wait_until
from tests.integration.harness import NS, Env, rule
from tests.integration.ingress_nginx_helpers import DATA, N, compat_controller, request, special
from tests.integration.policy_servers import call
from tests.integration.test_ingress_nginx_auth import AuthService, Echo, echo_service
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration


@pytest.fixture
def auth_service() -> Any:
    a = AuthService()
    yield a
    a.stop()


def created_after(env: Env, name: str) -> None:
    """Return once an object created now is younger than Ingress `name` (ownership goes by creation second:
    the API server's clock, this machine's)."""
    created = creation_seconds(env.get("ingresses", name))
    wait_until(lambda: int(time.time()) > created, f"a second after {name} was created")


def lb_ips(env: Env, name: str) -> list[str]:
    ing = env.get("ingresses", name)
    return [x.get("ip") or x.get("hostname")
            for x in ((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []]


def test_ingresses_of_one_host_share_its_server(env: Env, kubectl: Kubectl, tmp_path: Path,
                                               auth_service: AuthService) -> None:
    echo_app = Echo("echo").start()
    env.backends.append(echo_app)
    echo_service(env, echo_app)
    env.service("oauth2-proxy")
    env.endpoints("oauth2-proxy", [auth_service])  # type: ignore[list-item]
    for name in ("web", "api", "legacy"):
        env.service(name)
        env.endpoints(name, [special(env, name)])
    for host, secret in (("dash.example.com", "dash-tls"), ("shop.example.com", "shop-tls")):
        cert = make_cert(host)
        env.create(tls_secret(secret, NS, cert.cert_pem, cert.key_pem))
    env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nginx-config", "namespace": NS},
               "data": {"external-status-address": "10.9.8.7"}})
    env.delete("ingressclasses", "nginx", None)
    env.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                "metadata": {"name": "ingressctl"}, "spec": {"controller": "nginx.org/ingress-controller"}})
    done = kubectl.run("apply", "-f", str(DATA / "shared-hosts.yaml"))
    assert done.returncode == 0, done.stderr
    c = compat_controller(env, nginx_configmaps=f"{NS}/nginx-config", report_ingress_status=True)
    http, https = c.http_port, c.https_port
    good = {"X-Token": "good"}

    def dash(path: str, **headers: str) -> Any:
        return call(https, "dash.example.com", path, headers=headers, tls=True)

    def shop(path: str, *, tls: bool = False) -> Any:
        host = "shop.example.com"
        return call(https, host, path, tls=True) if tls else request(http, host, path)

    # ingress-nginx's oauth2-proxy setup: /oauth2 is served by its own Ingress, without the application's
    # authentication, so the subrequest coming back through this NGINX reaches the auth service.
    wait_until(lambda: dash("/", **good).status == 200, "dash served")
    auth_service.requests.clear()
    r = dash("/reports", **good)
    assert (r.status, r.body) == (200, "user=alice email=- GET /reports\n")
    ((method, path, headers),) = auth_service.requests
    assert (method, path, headers["host"]) == ("GET", "/oauth2/auth", "dash.example.com")
    r = dash("/reports")
    assert (r.status, r.headers["location"]) == (302, "https://dash.example.com/oauth2/start?rd=%2Freports")
    auth_service.requests.clear()
    assert dash("/oauth2/start?rd=/reports").status == 401  # the auth service's own answer, no auth first
    assert [p for _, p, _ in auth_service.requests] == ["/oauth2/start?rd=/reports"]

    # A host split by team: the API team's Ingress, created later, adds its paths and the certificate.
    wait_until(lambda: shop("/").status == 200, "shop served")
    with pytest.raises(OSError):  # no certificate for the host yet
        shop("/", tls=True)
    created_after(env, "shop-web")
    api = (tmp_path / "shop-api.yaml")
    api.write_text(SHOP_API)
    done = kubectl.run("apply", "-f", str(api))
    assert done.returncode == 0, done.stderr
    wait_until(lambda: shop("/api/items").body.startswith("api "), "api served")
    assert shop("/api/items?page=2").body == "api GET shop.example.com/items?page=2\n"
    assert shop("/API").body == "api GET shop.example.com/\n"  # the host's regex mode: case-insensitive
    assert shop("/catalog").body == "web GET shop.example.com/catalog\n"
    assert shop("/api/x", tls=True).body == "api GET shop.example.com/x\n"
    assert shop("/", tls=True).body == "web GET shop.example.com/\n"
    # the member's endpoints change: the owner's server follows
    env.endpoints("api", [special(env, "api-2")])
    wait_until(lambda: shop("/api/x").body == "api-2 GET shop.example.com/x\n", "the new endpoint serves")
    # the server's redirect is the oldest Ingress's (ssl-redirect "false"); the newer one's is named
    assert shop("/api/x").status == 200
    env.wait_event("shop-api", "AddedOrUpdatedWithWarning", "nginx.ingress.kubernetes.io/ssl-redirect set "
                   "the server of a host shared with Ingress demo/shop-web, the oldest of the host")

    # A later Ingress repeating `/`: the older keeps it; the newer is told.
    created_after(env, "shop-api")
    env.ingress("shop-legacy", [rule("shop.example.com", ("/", "legacy"))], cls="nginx")
    env.wait_event("shop-legacy", "AddedOrUpdatedWithWarning",
                   "of host shop.example.com is served by an older Ingress of the host; ignored here")
    assert shop("/").body == "web GET shop.example.com/\n"

    # Every Ingress of a shared host is configured: events and status, none rejected.
    for name in ("dashboard", "oauth2-proxy", "shop-web", "shop-api", "shop-legacy"):
        wait_until(lambda n=name: lb_ips(env, n) == ["10.9.8.7"], f"status of {name}")
        assert not env.events(name, "Rejected"), name
    assert not Path(c.manager.conf_dir, "conf.d", f"{NS}-shop-api.conf").exists()  # one server: one file

    # The owner goes: the next oldest owns the host, and the repeated `/` is the legacy Ingress's now; the
    # server's redirect is the API Ingress's (ssl-redirect "true": 308, as ingress-nginx).
    env.delete("ingresses", "shop-web")
    wait_until(lambda: shop("/", tls=True).body == "legacy GET shop.example.com/\n", "the next one serves /")
    assert shop("/api/items", tls=True).body == "api-2 GET shop.example.com/items\n"
    r = shop("/api/items")
    assert (r.status, r.headers.get("location")) == (308, f"https://shop.example.com:{https}/api/items")

    # An Ingress of ingressctl's own class keeps NIC's rules: it cannot join an ingress-nginx host.
    env.ingress("intruder", [rule("shop.example.com", ("/intruder", "web"))], cls="ingressctl")
    env.wait_event("intruder", "Rejected", "All hosts are taken by other resources: host shop.example.com by "
                   "Ingress demo/shop-api")
    assert shop("/intruder", tls=True).body == "legacy GET shop.example.com/intruder\n"


SHOP_API = """\
# The API team's Ingress for the shop's host (created after the web front-end's).
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop-api
  namespace: demo
  annotations:
    nginx.ingress.kubernetes.io/use-regex: "true"
    nginx.ingress.kubernetes.io/rewrite-target: '/$2'
    nginx.ingress.kubernetes.io/ssl-redirect: "true"
spec:
  ingressClassName: nginx
  tls:
    - hosts: [shop.example.com]
      secretName: shop-tls
  rules:
    - host: shop.example.com
      http:
        paths:
          - path: /api(/|$)(.*)
            pathType: ImplementationSpecific
            backend:
              service:
                name: api
                port:
                  number: 80
"""


def test_a_member_nginx_refuses_takes_no_other_ingress_down(env: Env, kubectl: Kubectl,
                                                          tmp_path: Path) -> None:
    """One team's configuration-snippet NGINX refuses (`more_set_headers`: ingress-nginx's NGINX had the
    headers-more module, stock NGINX has not) costs that team's change only: the owner and the other team
    keep being served and updated, the team keeps its last served paths and is told why; the owner's own
    refused change holds back none of the teams'."""
    for name in ("web", "cart", "search"):
        env.service(name)
        env.endpoints(name, [special(env, name)])
    env.delete("ingressclasses", "nginx", None)
    env.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                "metadata": {"name": "ingressctl"}, "spec": {"controller": "nginx.org/ingress-controller"}})
    env.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                "metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx"}})
    env.ingress("store-web", [rule("store.example.com", ("/", "web"))], cls="nginx")
    created_after(env, "store-web")
    manifest = tmp_path / "teams.yaml"
    manifest.write_text(TEAMS.format(cart_path="/cart", cart_snippet='add_header X-Team "cart";',
                                     search_path="/search"))
    done = kubectl.run("apply", "-f", str(manifest))
    assert done.returncode == 0, done.stderr
    c = compat_controller(env, enable_snippets=True)

    def get(path: str) -> Any:
        return request(c.http_port, "store.example.com", path)

    wait_until(lambda: get("/cart/x").body == "cart GET store.example.com/cart/x\n", "cart served")
    assert get("/cart/x").headers["x-team"] == "cart"
    assert get("/search").body == "search GET store.example.com/search\n"

    # The cart team moves to /basket with a snippet written for ingress-nginx's NGINX.
    manifest.write_text(TEAMS.format(cart_path="/basket", cart_snippet='more_set_headers "X-Team: cart";',
                                     search_path="/search"))
    done = kubectl.run("apply", "-f", str(manifest))
    assert done.returncode == 0, done.stderr
    env.wait_event("cart", "AddedOrUpdatedWithError", 'but was not applied: [emerg] unknown directive '
                   '"more_set_headers"')
    c.wait_idle()
    assert get("/cart/x").body == "cart GET store.example.com/cart/x\n"  # its last served version
    assert get("/basket").body == "web GET store.example.com/basket\n"  # (the owner's `/`)
    assert get("/search").body == "search GET store.example.com/search\n"
    assert not env.events("store-web", "AddedOrUpdatedWithError")
    assert not env.events("search", "AddedOrUpdatedWithError")
    # The owner and the other team still take changes.
    env.ingress("store-web", [rule("store.example.com", ("/", "web"), ("/help", "search"))], cls="nginx")
    wait_until(lambda: get("/help").body == "search GET store.example.com/help\n", "the owner's change")
    assert get("/cart/x").body == "cart GET store.example.com/cart/x\n"

    # Fixed, the change is served.
    manifest.write_text(TEAMS.format(cart_path="/basket", cart_snippet='add_header X-Team "basket";',
                                     search_path="/search"))
    done = kubectl.run("apply", "-f", str(manifest))
    assert done.returncode == 0, done.stderr
    r = wait_until(lambda: (x := get("/basket/1")).body == "cart GET store.example.com/basket/1\n" and x,
                   "the fixed version served")
    assert r.headers["x-team"] == "basket"
    c.wait_idle()
    assert get("/cart/x").body == "web GET store.example.com/cart/x\n"  # gone with the old version

    # The owner's own change NGINX refuses: it keeps its last served version, the teams' changes are served.
    env.ingress("store-web", [rule("store.example.com", ("/", "web"), ("/faq", "search"))], cls="nginx",
                annotations={N + "configuration-snippet": 'more_set_headers "X-Web: 1";'})
    env.wait_event("store-web", "AddedOrUpdatedWithError", 'unknown directive "more_set_headers"')
    manifest.write_text(TEAMS.format(cart_path="/basket", cart_snippet='add_header X-Team "basket";',
                                     search_path="/find"))
    done = kubectl.run("apply", "-f", str(manifest))
    assert done.returncode == 0, done.stderr
    wait_until(lambda: get("/find").body == "search GET store.example.com/find\n", "the team's change")
    c.wait_idle()
    assert get("/help").body == "search GET store.example.com/help\n"  # the owner's last served version
    assert get("/faq").body == "web GET store.example.com/faq\n"
    assert get("/basket/1").body == "cart GET store.example.com/basket/1\n"
    assert not env.events("search", "AddedOrUpdatedWithError")


TEAMS = """\
# Two teams' Ingresses for the store's host (created after the front-end's).
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: cart
  namespace: demo
  annotations:
    nginx.ingress.kubernetes.io/configuration-snippet: |
      {cart_snippet}
spec:
  ingressClassName: nginx
  rules:
    - host: store.example.com
      http:
        paths:
          - path: {cart_path}
            pathType: Prefix
            backend:
              service:
                name: cart
                port:
                  number: 80
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: search
  namespace: demo
spec:
  ingressClassName: nginx
  rules:
    - host: store.example.com
      http:
        paths:
          - path: {search_path}
            pathType: Prefix
            backend:
              service:
                name: search
                port:
                  number: 80
"""
