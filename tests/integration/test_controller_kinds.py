"""A second resource kind through the kind registry, end to end (devcluster, the real controller, real NGINX).

The kind is a stub that lives in this test: it serves NIC's VirtualServer objects (the chart's CRD, served
by devcluster) with its own Configuration part, builder, renderer (NIC's `vs_<ns>_<name>.conf` file names;
a fixed answer instead of real upstreams) and status writer. It has the same namespace and name as an
Ingress; the test shows the two kept apart in every keyed structure: the Configuration and its host
ownership (across kinds), the changes, the Configurator's files, the rejected set, the status bookkeeping
and the per-kind status writers.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from ingressctl.configs.renderers import RenderContext, Rendered
from ingressctl.controller import controller as controller_module
from ingressctl.controller.configuration import Configuration, IngressConfiguration
from ingressctl.controller.kinds import Applied, Enqueue, ResourceKind
from ingressctl.controller.model import Claims, Resource
from ingressctl.controller.task import Task
from ingressctl.k8s.resource import ResourceType
from ingressctl.keys import ResourceKey, object_key
from tests.helpers import wait_until
from tests.integration.harness import NS, Env, rule
from tests.stub_kinds import StubModel, StubResource

pytestmark = pytest.mark.integration

VS = "virtualserver"
VIRTUALSERVERS = ResourceType("k8s.nginx.org", "v1", "virtualservers", "VirtualServer")
CRDS = ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
                    namespaced=False)
CRD_FILE = Path(__file__).resolve().parents[2] / "charts/ingressctl/crds/k8s.nginx.org_virtualservers.yaml"
ING_HOST = "ing.example.com"
VS_HOST = "vs.example.com"


# ------------------------------------------------------------------------------------------ the stub kind


def _ours(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "VirtualServer"


def stub_claims(obj: Mapping[str, Any]) -> Claims:
    return Claims(role="regular", hosts=(str(obj["spec"]["host"]),))


def stub_validate(obj: Mapping[str, Any]) -> str:
    return "" if (obj.get("spec") or {}).get("host") else "spec.host: Required value"


def stub_model() -> StubModel:
    return StubModel(VS, "VirtualServer", stub_claims, is_ours=_ours, validate=stub_validate)


class StubRenderer:
    kind = VS

    def file_name(self, key: ResourceKey) -> str:
        return f"vs_{key.namespace}_{key.name}"

    def render(self, resource: object, ctx: RenderContext) -> Rendered:
        assert isinstance(resource, StubResource)
        spec = resource.obj["spec"]
        extra = spec.get("server-snippets", "")
        text = (f"server {{\n    listen {ctx.static.http_port};\n    server_name {spec['host']};\n"
                f"    {extra}\n    location / {{ return 200 \"stub {resource.key}\\n\"; }}\n}}\n")
        return Rendered(text, [])

    def catch_all(self, resource: object) -> str:
        return ""

    def counts(self, resources: Iterable[object]) -> dict[str, int]:
        return {"total": len(list(resources))}


class StubBuilder:
    def __init__(self, configurator: Any) -> None:
        self._configurator = configurator

    def apply(self, resource: Resource) -> Applied:
        return Applied(resource, list(resource.warnings) +
                       self._configurator.add_or_update(resource.key_with_kind, resource))

    def forget(self, key: ResourceKey) -> None:
        pass


class StubStatus:
    """Records the keys whose status the controller asked this kind to write."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.updated: list[str] = []
        self.cleared: list[str] = []

    @property
    def writes(self) -> int:
        with self._lock:
            return len(self.updated)

    def update_status(self, key: str) -> bool:
        with self._lock:
            self.updated.append(key)
        return True

    def clear_status(self, key: str) -> bool:
        with self._lock:
            self.cleared.append(key)
        return True

    def safe_update(self, key: str, on_item: Callable[[str], None] | None = None) -> bool:
        return self.update_status(key)


class StubHandler:
    def __init__(self, enqueue: Enqueue) -> None:
        self._enqueue = enqueue

    def on_add(self, obj: dict[str, Any], is_initial_list: bool = False) -> None:
        if _ours(obj):
            self._enqueue(Task(VS, object_key(obj)))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if _ours(old) or _ours(new):
            self._enqueue(Task(VS, object_key(new)))

    def on_delete(self, obj: Any) -> None:
        inner = obj if isinstance(obj, dict) else obj.obj or {}
        self._enqueue(Task(VS, object_key(inner) if inner else obj.key))


STATUS = StubStatus()


def stub_kind(lbc: Any) -> ResourceKind:
    lbc.configurator.register_renderer(StubRenderer())
    return ResourceKind(name=VS, rt=VIRTUALSERVERS, handler=StubHandler,
                        builder=StubBuilder(lbc.configurator), status=STATUS, model=stub_model(),
                        transform=lambda obj: obj, metric_types=("total",))


def stub(name: str, host: str, **spec: str) -> dict[str, Any]:
    return {"apiVersion": "k8s.nginx.org/v1", "kind": "VirtualServer",
            "metadata": {"name": name, "namespace": NS}, "spec": {"host": host, **spec}}


def apply_vs(env: Env, body: dict[str, Any]) -> None:
    from ingressctl.k8s.errors import ApiError

    try:
        env.kube.create(VIRTUALSERVERS, NS, body)
    except ApiError as e:
        if not e.is_already_exists:
            raise
        cur = env.kube.get(VIRTUALSERVERS, NS, body["metadata"]["name"])
        env.kube.update(VIRTUALSERVERS, NS, body["metadata"]["name"], {**cur, "spec": body["spec"]})


def ikey(name: str) -> ResourceKey:
    return ResourceKey("ingress", f"{NS}/{name}")


def vkey(name: str) -> ResourceKey:
    return ResourceKey(VS, f"{NS}/{name}")


# ------------------------------------------------------------------------------------------------ tests


def test_configuration_keeps_kinds_apart_and_owns_hosts_across_kinds() -> None:
    conf = Configuration(ingress_class="nginx")
    conf.register_kind(stub_model())
    conf.set_startup_complete()
    ing = {"metadata": {"name": "cafe", "namespace": NS, "uid": "u1",
                        "creationTimestamp": "2024-01-01T00:00:00Z"},
           "spec": {"ingressClassName": "nginx", "rules": [rule(ING_HOST, ("/", "web"))]}}
    changes, _ = conf.add_or_update_ingress(ing)
    assert [c.resource.key_with_kind for c in changes] == [ikey("cafe")]
    vs = {**stub("cafe", VS_HOST), "metadata": {**stub("cafe", VS_HOST)["metadata"], "uid": "u2",
                                               "creationTimestamp": "2024-01-01T00:00:05Z"}}
    changes, problems = conf.add_or_update(VS, vs)
    assert [(c.op, c.resource.key_with_kind) for c in changes] == [("AddOrUpdate", vkey("cafe"))]
    assert problems == []
    assert [r.key_with_kind for r in conf.get_resources()] == [ikey("cafe"), vkey("cafe")]
    assert conf.host_owner(ING_HOST) == ikey("cafe") and conf.host_owner(VS_HOST) == vkey("cafe")

    # A younger stub claiming the Ingress's host loses it; the problem names the winner with its kind.
    grab = {**stub("grab", ING_HOST), "metadata": {**stub("grab", ING_HOST)["metadata"], "uid": "u3",
                                                  "creationTimestamp": "2024-01-01T00:00:09Z"}}
    changes, problems = conf.add_or_update(VS, grab)
    assert changes == []
    assert [(p.key, p.reason) for p in problems] == [(vkey("grab"), "Rejected")]
    assert f"host {ING_HOST} by Ingress {NS}/cafe" in problems[0].message

    # Deleting the stub touches only the stub.
    changes, _ = conf.delete(vkey("cafe"))
    assert [(c.op, c.resource.key_with_kind) for c in changes] == [("Delete", vkey("cafe"))]
    assert conf.get_resource(ikey("cafe")) is not None and conf.host_owner(ING_HOST) == ikey("cafe")
    assert conf.get_object(vkey("grab")) is not None and conf.get_object(ikey("grab")) is None


def test_a_second_kind_with_the_same_name_as_an_ingress_is_kept_apart(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    original = controller_module.LoadBalancerController.__init__

    def with_stub(self: Any, *args: Any, kinds: Iterable[Any] = (), **kw: Any) -> None:
        original(self, *args, kinds=[*kinds, stub_kind], **kw)

    monkeypatch.setattr(controller_module.LoadBalancerController, "__init__", with_stub)
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nginx-config", "namespace": NS},
               "data": {"external-status-address": "1.2.3.4"}})
    env.kube.create(CRDS, None, yaml.safe_load(CRD_FILE.read_text()))
    env.ingress("cafe", [rule(ING_HOST, ("/", "web"))])
    apply_vs(env, stub("cafe", VS_HOST))
    # The real VirtualServer kind stays off: the stub has its name.
    c = env.controller(nginx_configmaps=f"{NS}/nginx-config", report_ingress_status=True,
                       enable_custom_resources=False)
    lbc = c.lbc
    c.wait_backend(ING_HOST, "/", "web")
    wait_until(lambda: c.get(VS_HOST, "/").body == f"stub {NS}/cafe\n", "the stub kind serves its host")
    c.wait_idle()

    # Configuration and host ownership.
    assert isinstance(lbc.configuration.get_resource(ikey("cafe")), IngressConfiguration)
    assert isinstance(lbc.configuration.get_resource(vkey("cafe")), StubResource)
    assert lbc.cached(vkey("cafe"))["kind"] == "VirtualServer"
    assert lbc.configuration.host_owner(ING_HOST) == ikey("cafe")
    assert lbc.configuration.host_owner(VS_HOST) == vkey("cafe")
    # Configurator files: NIC's name for each kind.
    assert {k: v for k, v in lbc.configurator.file_names().items() if k.ns_name == f"{NS}/cafe"} == {
        ikey("cafe"): f"{NS}-cafe", vkey("cafe"): f"vs_{NS}_cafe"}
    conf_d = os.path.join(c.settings.nginx.conf_dir, "conf.d")
    assert {f"{NS}-cafe.conf", f"vs_{NS}_cafe.conf"} <= set(os.listdir(conf_d))
    # Status bookkeeping, and each kind's status writer.
    assert {ikey("cafe"), vkey("cafe")} <= set(lbc.status_keys())
    wait_until(lambda: f"{NS}/cafe" in STATUS.updated, "the stub's status written by its own writer")
    lb = lambda: (env.get("ingresses", "cafe").get("status") or {}).get("loadBalancer")  # noqa: E731
    wait_until(lambda: lb() == {"ingress": [{"ip": "1.2.3.4"}]}, "the Ingress's status")
    assert lbc.configurator.resource_counts()["ingress"] == {"regular": 1, "master": 0, "minion": 0}
    assert lbc.configurator.resource_counts()[VS] == {"total": 1}

    # NGINX refuses the stub's new config: only the stub is rejected; both keep serving.
    reloads = c.reloads
    apply_vs(env, stub("cafe", VS_HOST, **{"server-snippets": "bogus_directive on;"}))
    wait_until(lambda: vkey("cafe") in lbc.configurator.rejected, "the stub rejected")
    c.wait_idle()
    assert list(lbc.configurator.rejected) == [vkey("cafe")]
    assert 'unknown directive "bogus_directive"' in lbc.configurator.rejected[vkey("cafe")]
    assert c.reloads > reloads
    assert c.get(ING_HOST, "/").backend == "web" and c.get(VS_HOST, "/").status == 200
    env.wait_event("cafe", "AddedOrUpdatedWithError", "bogus_directive", kind="VirtualServer")
    assert env.events("cafe", "AddedOrUpdatedWithError") == []          # nothing on the Ingress

    # Deleting the stub removes its file and bookkeeping only.
    env.kube.delete(VIRTUALSERVERS, NS, "cafe")
    wait_until(lambda: lbc.configuration.get_resource(vkey("cafe")) is None, "the stub deleted")
    c.wait_idle()
    assert vkey("cafe") not in lbc.configurator.rejected and vkey("cafe") not in set(lbc.status_keys())
    assert ikey("cafe") in set(lbc.status_keys())
    assert f"vs_{NS}_cafe.conf" not in os.listdir(conf_d) and f"{NS}-cafe.conf" in os.listdir(conf_d)
    assert c.get(ING_HOST, "/").backend == "web"
    wait_until(lambda: c.get(VS_HOST, "/").status == 404, "the stub's host no longer served")
