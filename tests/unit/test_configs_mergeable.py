"""Mergeable Ingresses: a master and its minions rendered into the master's file (NIC's
generateNginxCfgForMergeableIngresses), annotation inheritance and removal, the Configurator's bookkeeping
(one file per master, counts, deletes, endpoint updates), and the controller's Configuration feeding it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.configurator import Configurator
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.controller.configuration import Configuration
from ingressctl.keys import INGRESS_KIND, ResourceKey
from ingressctl.kinds.ingress.config import AnnotationError, generate_nginx_config_for_mergeable
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.secret_types import SecretReference
from tests.unit.test_configs_configurator import FakeManager
from tests.unit.test_configs_ingress import backend, block, path

STATIC = StaticConfigParams(run_dir="/run/ic", conf_dir="/etc/ic", secrets_dir="/etc/ic/secrets")
TEMPLATES = TemplateExecutor()
HOST = "shop.example.com"


def ikey(ns_name: str) -> ResourceKey:
    return ResourceKey(INGRESS_KIND, ns_name)


def ing(name: str, namespace: str, kind: str, paths: list[dict[str, Any]], *,
        annotations: dict[str, str] | None = None, created: str = "2024-01-01T00:00:00Z",
        default_backend: dict[str, Any] | None = None, tls: bool = False) -> dict[str, Any]:
    rule: dict[str, Any] = {"host": HOST}
    if paths:
        rule["http"] = {"paths": paths}
    spec: dict[str, Any] = {"rules": [rule], "ingressClassName": "nginx"}
    if default_backend is not None:
        spec["defaultBackend"] = default_backend
    if tls:
        spec["tls"] = [{"hosts": [HOST], "secretName": "shop-tls"}]
    anns = {"nginx.org/mergeable-ingress-type": kind, **(annotations or {})}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": namespace, "annotations": anns, "uid": f"uid-{name}",
                         "creationTimestamp": created, "generation": 1},
            "spec": spec}


def ex(obj: dict[str, Any], valid_paths: dict[str, bool] | None = None,
       refs: dict[str, SecretReference] | None = None) -> IngressEx:
    meta = obj["metadata"]
    endpoints: dict[str, list[str]] = {}
    for p in (obj["spec"]["rules"][0].get("http") or {}).get("paths", []):
        svc = p["backend"]["service"]["name"]
        endpoints[backend_key(svc, 80)] = [f"10.0.{len(endpoints)}.1:80"]
    db = obj["spec"].get("defaultBackend")
    if db:
        endpoints[backend_key(db["service"]["name"], 80)] = ["10.9.9.9:80"]
    return IngressEx(obj, {HOST: True}, endpoints, secret_refs=refs or {},
                     valid_minion_paths=valid_paths if valid_paths is not None else {
                         p["path"]: True for p in (obj["spec"]["rules"][0].get("http") or {}).get("paths", [])
                         if meta["annotations"]["nginx.org/mergeable-ingress-type"] == "minion"})


def master(**kw: Any) -> dict[str, Any]:
    return ing("shop", "default", "master", [], **kw)


def render(m: MergeableIngresses, config: ConfigParams | None = None,
           static: StaticConfigParams = STATIC) -> tuple[str, list[str], dict[str, list[str]]]:
    result = generate_nginx_config_for_mergeable(m, static, config or ConfigParams())
    return TEMPLATES.execute_ingress_template(result.config), result.warnings, result.minion_warnings


def test_master_with_minions_in_two_namespaces() -> None:
    m = MergeableIngresses(ex(master(default_backend=backend("fallback", 80))), [
        ex(ing("cart", "team-a", "minion", [path("/cart", "cart")])),
        ex(ing("users", "team-a", "minion", [path("/users", "users"), path("/cart", "users")]),
           valid_paths={"/users": True, "/cart": False}),  # /cart went to the older minion
        ex(ing("pay", "team-b", "minion", [path("/pay", "pay", path_type="Exact")],
               default_backend=backend("pay-default", 80))),
    ])
    text, warnings, minion_warnings = render(m)
    assert warnings == [] and minion_warnings == {}
    assert text.startswith("# configuration for default/shop\n")
    assert text.count("\nserver {") == 1
    # The master's default-backend upstream is emitted (NIC), but serves no location; minions' own names.
    assert re.findall(r"^upstream (\S+) \{", text, re.M) == [
        "default-shop--fallback-80", "team-a-cart-shop.example.com-cart-80",
        "team-a-users-shop.example.com-users-80", "team-b-pay-shop.example.com-pay-80"]
    server = block(text, "\nserver")
    assert re.findall(r"location (.*?) \{", server) == ["= /cart", "/cart/", "= /users", "/users/", "= /pay",
                                                         "/"]
    assert "proxy_pass http://team-a-users-shop.example.com-users-80;" in block(server, "location = /users")
    assert "users" not in block(server, "location /cart/")
    # No minion serves "/": the fallback, not a backend.
    assert 'location / {\n        try_files "" =404;' in server
    assert "fallback" not in server and "pay-default" not in text  # minions' default backends are removed
    pay = block(server, "location = /pay")
    assert '# location for minion team-b/pay\n        set $resource_name "pay";' in pay
    assert 'set $resource_namespace "team-b";' in pay
    assert 'set $resource_name "shop";' in server.split("location")[0]  # the master's at server level


def test_annotation_inheritance_and_removal() -> None:
    m_anns = {"nginx.org/proxy-read-timeout": "7s", "nginx.org/client-max-body-size": "1k",
              "nginx.org/rewrites": "serviceName=cart rewrite=/", "nginx.org/keepalive": "8",
              "nginx.org/server-tokens": "false", "nginx.org/hsts": "true", "nginx.org/lb-method": "ip_hash",
              "nginx.org/limit-req-rate": "5r/s", "nginx.org/proxy-set-headers": "X-A: master, X-B: master",
              "nginx.org/path-regex": "case_sensitive"}
    cart_anns = {"nginx.org/server-tokens": "true", "nginx.org/listen-ports": "9999",
                 "nginx.org/client-max-body-size": "10k", "nginx.org/keepalive": "64",
                 "nginx.org/proxy-set-headers": "X-B: minion"}
    m = MergeableIngresses(ex(master(annotations=m_anns, tls=True), refs={"shop-tls": SecretReference(
        "default/shop-tls", "/etc/ic/secrets/default-shop-tls", secret_type="kubernetes.io/tls")}), [
        ex(ing("cart", "team-a", "minion", [path("/cart", "cart")], annotations=cart_anns)),
        ex(ing("pay", "team-b", "minion", [path("/pay", "pay")],
               annotations={"nginx.org/path-regex": "case_insensitive"})),
    ])
    text, warnings, minion_warnings = render(m)
    assert warnings == ["a master Ingress cannot have the annotation(s) nginx.org/rewrites; ignored"]
    assert minion_warnings == {"team-a/cart": [
        "a minion Ingress cannot have the annotation(s) nginx.org/listen-ports, nginx.org/server-tokens; "
        "ignored"]}
    server = block(text, "\nserver")
    # Server level: the master's (server-tokens, HSTS, TLS); a minion's listen-ports is removed.
    assert "server_tokens off;" in server and "9999" not in text and "listen 443 ssl;" in server
    assert 'set $hsts_header_val "max-age=2592000; preload";' in server
    cart = block(server, "location = /cart")
    # Inherited unless the minion sets it; the master's rewrites are removed; path-regex is never inherited.
    assert "proxy_read_timeout 7s;" in cart and "client_max_body_size 10k;" in cart
    assert "proxy_pass http://team-a-cart-shop.example.com-cart-80;" in cart
    assert 'proxy_set_header X-A "master";' in cart and 'proxy_set_header X-B "minion";' in cart
    pay = block(server, 'location ~* "^/pay"')
    assert "client_max_body_size 1k;" in pay and 'proxy_set_header X-B "master";' in pay
    # keepalive: the master's for every upstream and location (the minion's 64 does not apply).
    for name in ("team-a-cart-shop.example.com-cart-80", "team-b-pay-shop.example.com-pay-80"):
        up = block(text, f"upstream {name}")
        assert "keepalive 8;" in up and "ip_hash;" in up
    assert "keepalive 64" not in text and 'proxy_set_header Connection "";' in cart
    # Rate limiting is inherited, with each minion's own zone.
    assert re.findall(r"limit_req_zone \S+ zone=(\S+):", text) == ["team-a/cart", "team-b/pay"]
    assert "limit_req zone=team-a/cart;" in cart and "limit_req zone=team-b/pay;" in pay


def test_basic_auth_master_at_server_level_minion_per_location() -> None:
    ref = SecretReference("x/users", "/etc/ic/secrets/x-users", secret_type="nginx.org/htpasswd")
    m = MergeableIngresses(
        ex(master(annotations={"nginx.org/basic-auth-secret": "users"}),
           refs={"users": SecretReference("default/users", "/etc/ic/secrets/default-users",
                                          secret_type="nginx.org/htpasswd")}),
        [ex(ing("cart", "team-a", "minion", [path("/cart", "cart")],
                annotations={"nginx.org/basic-auth-secret": "users", "nginx.org/basic-auth-realm": "cart"}),
            refs={"users": ref}),
         ex(ing("pay", "team-b", "minion", [path("/pay", "pay")]))])
    text, _, _ = render(m)
    server = block(text, "\nserver")
    head = server.split("    location")[0]
    assert 'auth_basic "";\n    auth_basic_user_file /etc/ic/secrets/default-users;' in head
    cart = block(server, "location = /cart")
    assert 'auth_basic "cart";\n        auth_basic_user_file /etc/ic/secrets/x-users;' in cart
    assert "auth_basic" not in block(server, "location = /pay")


def test_minion_problems_cost_only_that_minion() -> None:
    m = MergeableIngresses(ex(master()), [
        ex(ing("bad", "team-a", "minion", [path("/bad", "bad")],
               annotations={"nginx.org/limit-req-rate": "lots"})),
        ex(ing("other-host", "team-a", "minion", [path("/x", "x")])),
        ex(ing("dup", "team-b", "minion", [path("/cart/", "dup", path_type="ImplementationSpecific")])),
        ex(ing("cart", "team-b", "minion", [path("/cart", "cart")])),
    ])
    m.minions[1].ingress["spec"]["rules"][0]["host"] = "elsewhere.example.com"
    text, _, minion_warnings = render(m)
    assert "bad" not in block(text, "\nserver") and "/x" not in text
    assert minion_warnings["team-a/bad"] == [
        'the minion is not applied: annotation nginx.org/limit-req-rate: invalid value "lots": must be a '
        "rate such as 10r/s or 30r/m"]
    assert "is not the master's host" in minion_warnings["team-a/other-host"][0]
    assert minion_warnings["team-b/cart"] == [
        "location /cart/ duplicates a location of another minion; ignored"]
    assert "location = /cart {" in text and "proxy_pass http://team-b-dup-shop.example.com-dup-80;" in block(
        text, "location /cart/")
    # The master's own invalid annotation rejects the whole file.
    with pytest.raises(AnnotationError):
        render(MergeableIngresses(ex(master(annotations={"nginx.org/proxy-read-timeout": "x"})), []))


# ------------------------------------------------------------------------------------------ Configurator

def configurator() -> tuple[Configurator, FakeManager]:
    m = FakeManager()
    c = Configurator(m, StaticConfigParams(), ConfigParams(), TemplateExecutor())  # type: ignore[arg-type]
    return c, m


def shop(minions: int = 2, endpoint: str = "10.0.0.1:80") -> MergeableIngresses:
    mins = []
    for i in range(minions):
        mex = ex(ing(f"m{i}", "team-a", "minion", [path(f"/p{i}", f"svc{i}")]))
        mex.endpoints = {backend_key(f"svc{i}", 80): [endpoint]}
        mins.append(mex)
    return MergeableIngresses(ex(master()), mins)


def test_configurator_one_file_per_master_counts_and_delete() -> None:
    c, m = configurator()
    regular = ex(ing("plain", "default", "master", []))
    regular.ingress["metadata"]["annotations"] = {}
    regular.ingress["spec"]["rules"][0]["http"] = {"paths": [path("/", "web")]}
    assert c.add_or_update_ingress(regular) == []
    assert c.add_or_update_mergeable_ingress(shop(3)) == []
    assert sorted(m.files) == ["default-plain", "default-shop"]
    assert "team-a-m2-shop.example.com-svc2-80" in m.files["default-shop"]
    assert c.resource_counts()["ingress"] == {"regular": 1, "master": 1, "minion": 3}
    assert c.reload_if_needed().reloaded
    # Identical endpoints: no write, no reload; a change: one reload.
    writes = m.writes
    c.update_endpoints_for_mergeables([shop(3)])
    assert m.writes == writes and not c.reload_if_needed("endpoints").reloaded
    c.update_endpoints_for_mergeables([shop(3, endpoint="10.0.0.2:80")])
    assert c.reload_if_needed("endpoints").reloaded and "10.0.0.2:80" in m.files["default-shop"]
    # A master that becomes a regular Ingress keeps its file name and is counted as regular.
    as_regular = ex(master())
    as_regular.ingress["metadata"]["annotations"] = {}
    as_regular.ingress["spec"]["rules"][0]["http"] = {"paths": [path("/", "web")]}
    c.add_or_update_ingress(as_regular)
    assert c.resource_counts()["ingress"] == {"regular": 2, "master": 0, "minion": 0}
    c.add_or_update_mergeable_ingress(shop(1))
    assert c.resource_counts()["ingress"] == {"regular": 1, "master": 1, "minion": 1}
    c.delete_ingress("default/shop")
    assert c.resource_counts()["ingress"] == {"regular": 1, "master": 0, "minion": 0}
    assert sorted(m.files) == ["default-plain"] and c.reload_if_needed().reloaded


def test_configurator_mergeable_warnings_and_render_errors() -> None:
    c, m = configurator()
    mg = shop(1)
    mg.minions[0].ingress["metadata"]["annotations"]["nginx.org/server-tokens"] = "false"
    warnings = c.add_or_update_mergeable_ingress(mg)
    assert warnings == ["minion team-a/m0: a minion Ingress cannot have the annotation(s) "
                        "nginx.org/server-tokens; ignored"]
    assert c.minion_warnings("default/shop") == {"team-a/m0": [warnings[0].split(": ", 1)[1]]}
    assert c.reload_if_needed().reloaded
    good = m.files["default-shop"]
    bad = shop(1)
    bad.master.ingress["metadata"]["annotations"]["nginx.org/proxy-read-timeout"] = "never"
    assert c.add_or_update_mergeable_ingress(bad) == []
    outcome = c.reload_if_needed()
    assert not outcome.reloaded and list(outcome.failed) == [ikey("default/shop")]
    assert 'nginx.org/proxy-read-timeout: invalid value "never"' in outcome.failed[ikey("default/shop")]
    assert m.files["default-shop"] == good  # the last good file stays


def test_update_config_rerenders_masters() -> None:
    c, m = configurator()
    c.add_or_update_mergeable_ingress(shop(1))
    c.reload_if_needed()
    c.update_config(ConfigParams(proxy_read_timeout="3s", client_max_body_size="3m"), [], [shop(1)])
    # A ConfigMap proxy setting every location shares is declared once in nginx.conf; the others are per
    # location: the master's file is rendered again.
    assert "client_max_body_size 3m;" in m.files["default-shop"]
    assert "proxy_read_timeout 3s;" in m.main and "proxy_read_timeout" not in m.files["default-shop"]
    assert c.reload_if_needed().reloaded


def test_configuration_feeds_the_renderer() -> None:
    """The controller's Configuration decides minions and path winners; the render follows it."""
    conf = Configuration(ingress_class="nginx")
    objs = [
        ing("shop", "default", "master", []),
        ing("cart", "team-a", "minion", [path("/cart", "cart")], created="2024-01-01T00:00:00Z"),
        ing("cart-late", "team-b", "minion", [path("/cart", "late"), path("/late", "late")],
            created="2024-01-02T00:00:00Z"),
        ing("users", "team-a", "minion", [path("/users", "users")]),
    ]
    for o in objs:
        conf.add_or_update_ingress(o)
    changes, problems = conf.set_startup_complete()
    assert problems == [] and [ch.resource.key for ch in changes] == ["default/shop"]
    res = changes[0].resource
    assert res.child_warnings == {"team-b/cart-late": ["path /cart is taken by another resource"]}
    mergeable = MergeableIngresses(ex(res.ingress), [ex(mc.ingress, valid_paths=mc.valid_paths)
                                                     for mc in res.minions])
    text, _, _ = render(mergeable)
    assert "proxy_pass http://team-a-cart-shop.example.com-cart-80;" in block(text, "location = /cart")
    assert "location = /late {" in text and "team-b-cart-late-shop.example.com-late-80" in text
    assert text.count("location = /cart {") == 1 and "location = /users {" in text
