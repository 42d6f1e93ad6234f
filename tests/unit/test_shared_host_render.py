"""The server of a shared host (ingress-nginx's Ingresses naming one host): the owner's paths and its
members', each with its own annotations only; duplicates to the older; the certificate from the first that
names the host; server-level annotations of a member named when they differ; counted once."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ingressctl.configs.configmaps import ConfigParams
from ingressctl.configs.renderers import IngressRenderer
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.kinds.ingress.config import generate_regular_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.kinds.ingress.ingress_nginx.canary import canary_warnings
from ingressctl.secret_types import SecretReference
from tests.unit.test_ingress_nginx_annotations import STATIC

TEMPLATES = TemplateExecutor()
N = "nginx.ingress.kubernetes.io/"
HOST = "shop.example.com"


def ing(name: str, *paths: str, annotations: dict[str, str] | None = None, tls: str = "",
        hosts: tuple[str, ...] = (HOST,)) -> dict[str, Any]:
    spec: dict[str, Any] = {"ingressClassName": "nginx", "rules": [{"host": h, "http": {"paths": [
        {"path": p, "pathType": "Prefix", "backend": {"service": {"name": name, "port": {"number": 80}}}}
        for p in paths]}} for h in hosts]}
    if tls:
        spec["tls"] = [{"hosts": [HOST], "secretName": tls}]
    return {"metadata": {"name": name, "namespace": "demo", "annotations": annotations or {}}, "spec": spec}


def ex(obj: dict[str, Any], *, member: bool = False, secrets: dict[str, SecretReference] | None = None,
       hosts: tuple[str, ...] = (HOST,)) -> IngressEx:
    name = obj["metadata"]["name"]
    return IngressEx(obj, dict.fromkeys(hosts, True), {backend_key(name, 80): ["10.0.0.1:80"]},
                     secret_refs=secrets or {}, is_member=member)


def locations(text: str) -> dict[str, str]:
    """`location <path>` -> its block."""
    found = re.finditer(r"\n    location ([^{]+?) \{\n(.*?)\n    \}", text, re.S)
    return {m.group(1): m.group(2) for m in found}


def test_each_ingress_keeps_its_own_annotations_on_its_own_paths() -> None:
    owner = ex(ing("app", "/", annotations={N + "auth-url": "http://auth.example.com/check",
                                           N + "enable-cors": "true", N + "proxy-read-timeout": "120"}))
    member = ex(ing("oauth2", "/oauth2", annotations={N + "proxy-body-size": "8m"}), member=True)
    r = generate_regular_config(dataclasses.replace(owner, members=(member,)), STATIC, ConfigParams())
    assert r.warnings == [] and r.minion_warnings == {}
    (server,) = r.config.servers
    served = sorted((loc.modifier, loc.path, loc.minion.name if loc.minion else "")
                    for loc in server.locations)
    assert served == [("", "/", ""), ("", "/oauth2/", "oauth2"), ("=", "/oauth2", "oauth2")]
    text = TEMPLATES.execute_ingress_template(r.config)
    blocks = locations(text)
    app = blocks["/"]
    oauth2 = next(b for p, b in blocks.items() if p.startswith("/oauth2"))
    assert "auth_request " in app and "auth_request " not in oauth2
    assert "Access-Control-Allow-Origin" in app and "Access-Control-Allow-Origin" not in oauth2
    assert "proxy_read_timeout 120s;" in app and "proxy_read_timeout 120s;" not in oauth2
    assert "client_max_body_size 8m;" in oauth2 and "client_max_body_size 8m;" not in app
    assert 'set $resource_name "oauth2";' in oauth2
    assert "upstream demo-oauth2-shop.example.com-oauth2-80 {" in text


def test_a_repeated_path_goes_to_the_older_and_the_newer_is_told() -> None:
    owner = ex(ing("web", "/", "/about"))
    older, newer = ex(ing("api", "/api", "/about"), member=True), ex(ing("legacy", "/", "/api"), member=True)
    r = generate_regular_config(dataclasses.replace(owner, members=(older, newer)), STATIC, ConfigParams())
    (server,) = r.config.servers
    served = {(loc.modifier, loc.path): loc.upstream.split("-")[1] for loc in server.locations}
    assert served[("", "/")] == "web" and served[("", "/about/")] == "web" and served[("", "/api/")] == "api"
    assert r.minion_warnings["demo/api"] == [
        "location = /about of host shop.example.com is served by an older Ingress of the host; ignored here",
        "location /about/ of host shop.example.com is served by an older Ingress of the host; ignored here"]
    assert len(r.minion_warnings["demo/legacy"]) == 3  # `/`, and both locations of `/api`
    assert all(u.name.split("-")[1] != "legacy" for u in r.config.upstreams)  # nothing of it is served


def test_the_certificate_comes_from_the_first_ingress_naming_the_host() -> None:
    ref = SecretReference("demo/shop-tls", "/secrets/demo-shop-tls", secret_type="kubernetes.io/tls")
    owner = ex(ing("web", "/"))
    first = ex(ing("api", "/api", tls="shop-tls"), member=True, secrets={"shop-tls": ref})
    other = ex(ing("admin", "/admin", tls="missing"), member=True)
    r = generate_regular_config(dataclasses.replace(owner, members=(first, other)), STATIC, ConfigParams())
    (server,) = r.config.servers
    assert server.ssl and server.ssl_certificate == "/secrets/demo-shop-tls"
    assert not server.ssl_reject_handshake
    # The owner's own entry wins.
    own = SecretReference("demo/web-tls", "/secrets/demo-web-tls", secret_type="kubernetes.io/tls")
    owner = ex(ing("web", "/", tls="web-tls"), secrets={"web-tls": own})
    r = generate_regular_config(dataclasses.replace(owner, members=(first,)), STATIC, ConfigParams())
    assert r.config.servers[0].ssl_certificate == "/secrets/demo-web-tls"


def test_a_members_server_level_annotations_are_named_when_they_differ() -> None:
    owner = ex(ing("web", "/", annotations={N + "ssl-redirect": "false", N + "app-root": "/home"}))
    same = ex(ing("a", "/a", annotations={N + "ssl-redirect": "false"}), member=True)
    other = ex(ing("b", "/b", annotations={N + "ssl-redirect": "true", N + "server-snippet": "x",
                                           "nginx.org/server-tokens": "off"}), member=True)
    r = generate_regular_config(dataclasses.replace(owner, members=(same, other)), STATIC, ConfigParams())
    assert "demo/a" not in r.minion_warnings
    (warning,) = r.minion_warnings["demo/b"]
    assert warning == (f"annotation(s) {N}server-snippet, {N}ssl-redirect, nginx.org/server-tokens set the "
                       "server of a host shared with Ingress demo/web, the oldest of the host, whose "
                       "settings apply; ignored here")


def test_a_member_naming_other_hosts_adds_only_the_shared_ones() -> None:
    owner = ex(ing("web", "/"))
    member = ex(ing("api", "/api", hosts=(HOST, "api.example.com")), member=True)
    r = generate_regular_config(dataclasses.replace(owner, members=(member,)), STATIC, ConfigParams())
    assert [s.name for s in r.config.servers] == [HOST] and r.minion_warnings == {}
    counts = IngressRenderer().counts([dataclasses.replace(owner, members=(member,))])
    assert counts["regular"] == 1  # the member's own resource (api.example.com) counts it
    alone = ex(ing("api", "/api"), member=True)
    assert IngressRenderer().counts([dataclasses.replace(owner, members=(alone,))])["regular"] == 2


def test_a_canary_splits_a_members_path_too() -> None:
    owner = ex(ing("web", "/"))
    member = ex(ing("api", "/api"), member=True)
    canary_obj = ing("api-next", "/api", annotations={N + "canary": "true", N + "canary-by-header": "X-Next"})
    primary = dataclasses.replace(owner, members=(member,), canaries=(ex(canary_obj),))
    r = generate_regular_config(primary, STATIC, ConfigParams())
    (server,) = r.config.servers
    chosen = {loc.path: (loc.upstream, loc.upstream_var) for loc in server.locations}
    assert chosen["/"] == ("demo-web-shop.example.com-web-80", "")
    assert chosen["/api/"][0] == "demo-api-shop.example.com-api-80" and chosen["/api/"][1].startswith("$")
    assert any(u.name.startswith("demo-api-next-") for u in r.config.upstreams)
    assert canary_warnings(owner.ingress, canary_obj, {HOST: True}, [member.ingress]) == []
    assert canary_warnings(owner.ingress, canary_obj, {HOST: True}) == [
        "canary path /api (Prefix) of host shop.example.com has no path with the same pathType in the "
        "primary Ingress; ignored"]


def test_members_do_not_take_the_owners_basic_auth_or_error_pages() -> None:
    htpasswd = SecretReference("demo/users", "/secrets/demo-users", secret_type="nginx.org/htpasswd")
    guards = {"nginx.org/basic-auth-secret": "users", "nginx.org/custom-http-errors": "404"}
    owner = ex(ing("web", "/", annotations=guards), secrets={"users": htpasswd})
    owner.ingress["spec"]["defaultBackend"] = {"service": {"name": "web", "port": {"number": 80}}}
    member = ex(ing("public", "/public"), member=True)
    guarded = ex(ing("admin", "/admin", annotations={"nginx.org/basic-auth-secret": "admins"}), member=True,
                 secrets={"admins": SecretReference("demo/admins", "/secrets/demo-admins",
                                                    secret_type="nginx.org/htpasswd")})
    r = generate_regular_config(dataclasses.replace(owner, members=(member, guarded)), STATIC, ConfigParams())
    blocks = locations(TEMPLATES.execute_ingress_template(r.config))
    assert "auth_basic off;" in blocks["/public/"] and "proxy_intercept_errors off;" in blocks["/public/"]
    assert 'auth_basic_user_file /secrets/demo-admins;' in blocks["/admin/"]
    assert "auth_basic off;" not in blocks["/admin/"]
    assert "auth_basic" not in blocks["/"] and "proxy_intercept_errors off;" not in blocks["/"]
    (server,) = r.config.servers
    assert server.basic_auth is not None and server.custom_http_errors == (404,)
