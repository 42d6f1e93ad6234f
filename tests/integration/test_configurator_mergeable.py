"""Mergeable Ingresses through a real NGINX: a master with three minions in two namespaces, resolved by the
controller's Configuration (path winners) and rendered by the Configurator into the master's one file. Each
path reaches its own backend; inherited and removed annotations behave as NIC's lists say; a minion's basic
auth guards only its paths; endpoint updates reload only when the bytes change; deleting the master removes
everything."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams
from ingressctl.controller.configuration import Configuration, IngressConfiguration
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.secret_types import SecretReference
from tests.integration.test_annotations import Env, _BackendServer, backends, make_env

pytestmark = pytest.mark.integration
HOST = "shop.example.com"

__all__ = ["backends"]  # the fixture


@pytest.fixture
def env() -> Iterator[Env]:
    yield from make_env(config=ConfigParams())


def ing(name: str, namespace: str, kind: str, paths: list[tuple[str, str]], *, created: str,
        annotations: dict[str, str] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"host": HOST}
    if paths:
        rule["http"] = {"paths": [{"path": p, "pathType": "Prefix",
                                   "backend": {"service": {"name": svc, "port": {"number": 80}}}}
                                  for p, svc in paths]}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
                         "creationTimestamp": created, "generation": 1,
                         "annotations": {"nginx.org/mergeable-ingress-type": kind, **(annotations or {})}},
            "spec": {"ingressClassName": "nginx", "rules": [rule]}}


def exes(res: IngressConfiguration, bk: dict[str, _BackendServer],
         refs: dict[str, dict[str, SecretReference]]) -> MergeableIngresses:
    """What the controller's createIngressEx would build: endpoints of the won paths, secret references."""
    def one(obj: dict[str, Any], valid_paths: dict[str, bool] | None) -> IngressEx:
        eps: dict[str, list[str]] = {}
        for p in ((obj["spec"]["rules"][0].get("http") or {}).get("paths") or []):
            svc = p["backend"]["service"]["name"]
            if valid_paths is None or valid_paths.get(p["path"]):
                eps[backend_key(svc, 80)] = [bk[svc].address]
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        return IngressEx(obj, dict(res.valid_hosts), eps, secret_refs=refs.get(key, {}),
                         valid_minion_paths=dict(valid_paths or {}))
    return MergeableIngresses(one(res.ingress, None), [one(m.ingress, m.valid_paths) for m in res.minions])


def test_master_with_three_minions_in_two_namespaces(env: Env, backends: dict[str, _BackendServer]) -> None:
    digest = base64.b64encode(hashlib.sha1(b"pw").digest()).decode()
    htpasswd = env.manager.create_secret("team-b-payers", f"payer:{{SHA}}{digest}\n".encode(), 0o644)
    refs = {"team-b/pay": {"payers": SecretReference("team-b/payers", htpasswd,
                                                     secret_type="nginx.org/htpasswd")}}
    objects = [
        ing("shop", "default", "master", [], created="2024-01-01T00:00:00Z", annotations={
            "nginx.org/client-max-body-size": "1k",  # inherited by minions that do not set it
            "nginx.org/proxy-set-headers": "X-Shop: master",
            "nginx.org/use-cluster-ip": "true",  # not allowed on a master: ignored
            "nginx.org/server-tokens": "false"}),
        ing("cart", "team-a", "minion", [("/cart", "tea")], created="2024-01-02T00:00:00Z", annotations={
            "nginx.org/rewrites": "serviceName=tea rewrite=/basket",
            "nginx.org/server-tokens": "true"}),  # a server-level setting: removed from a minion
        ing("menu", "team-a", "minion", [("/menu", "coffee"), ("/cart", "coffee")],  # /cart: taken
            created="2024-01-03T00:00:00Z", annotations={"nginx.org/client-max-body-size": "10k"}),
        ing("pay", "team-b", "minion", [("/pay", "juice")], created="2024-01-04T00:00:00Z",
            annotations={"nginx.org/basic-auth-secret": "payers",
                         "nginx.org/proxy-set-headers": "X-Shop: pay"}),
    ]
    conf = Configuration(ingress_class="nginx")
    for o in objects:
        conf.add_or_update_ingress(o)
    changes, problems = conf.set_startup_complete()
    assert problems == [] and [c.resource.key for c in changes] == ["default/shop"]
    master = changes[0].resource
    assert master.child_warnings == {"team-a/menu": ["path /cart is taken by another resource"]}
    assert sorted(m.key for m in master.minions) == ["team-a/cart", "team-a/menu", "team-b/pay"]

    warnings = env.configurator.add_or_update_mergeable_ingress(exes(master, backends, refs))
    assert warnings == ["a master Ingress cannot have the annotation(s) nginx.org/use-cluster-ip; ignored",
                        "minion team-a/cart: a minion Ingress cannot have the annotation(s) "
                        "nginx.org/server-tokens; ignored"]
    assert env.configurator.reload_if_needed().reloaded
    assert env.manager.list_configs() == ["default-shop"]
    assert env.configurator.resource_counts()["ingress"] == {"regular": 0, "master": 1, "minion": 3}

    # Each path to its own backend, with the minion's own rewrite.
    assert env.request(HOST, "/cart/items").body == "tea /basket/items\n"
    assert env.request(HOST, "/menu").body == "coffee /menu\n"
    assert env.request(HOST, "/other").status == 404
    assert not any(s.path.startswith("/cart") for s in backends["coffee"].requests())
    # Server level from the master: server_tokens off for every path.
    assert env.request(HOST, "/menu").headers["server"] == "nginx"
    # client-max-body-size: inherited (1k) unless the minion sets its own (10k).
    assert env.request(HOST, "/cart", method="POST", body=b"x" * 2000).status == 413
    assert env.request(HOST, "/menu", method="POST", body=b"x" * 2000).status == 200
    # proxy-set-headers: the minion's value wins for the same header.
    env.request(HOST, "/menu")
    assert backends["coffee"].requests()[-1].headers["x-shop"] == "master"
    # The pay minion's basic auth guards only its paths.
    assert env.request(HOST, "/pay").status == 401
    credentials = "Basic " + base64.b64encode(b"payer:pw").decode()
    ok = env.request(HOST, "/pay", headers={"Authorization": credentials})
    assert ok.status == 200 and ok.body == "juice /pay\n"
    assert backends["juice"].requests()[-1].headers["x-shop"] == "pay"
    assert env.request(HOST, "/menu").status == 200

    # Endpoints: identical ones cause no reload; a changed one reloads once and is served.
    count = env.manager.reload_count
    env.configurator.update_endpoints_for_mergeables([exes(master, backends, refs)])
    assert not env.configurator.reload_if_needed("endpoints").reloaded and env.manager.reload_count == count
    moved = exes(master, backends, refs)
    menu = next(m for m in moved.minions if m.name == "menu")
    menu.endpoints[backend_key("coffee", 80)] = [backends["slow"].address]
    env.configurator.update_endpoints_for_mergeables([moved])
    assert env.configurator.reload_if_needed("endpoints").reloaded and env.manager.reload_count == count + 1
    assert env.request(HOST, "/menu").body == "slow /menu\n"

    # The master goes: its file and every minion's location go with it.
    conf_changes, _ = conf.delete_ingress("default/shop")
    assert [(c.op, c.resource.key) for c in conf_changes] == [("Delete", "default/shop")]
    env.configurator.delete_ingress("default/shop")
    assert env.configurator.reload_if_needed().reloaded
    assert env.manager.list_configs() == [] and env.request(HOST, "/menu").status == 404
    assert env.configurator.resource_counts()["ingress"] == {"regular": 0, "master": 0, "minion": 0}
