"""The kind-neutral core with a second kind next to Ingress: the Configurator's files, outcomes and rejected
set, the Configuration's host and listener ownership across kinds, and the kind registry. The stub kinds live
here, not in the product."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from ingressctl.configs.renderers import RenderContext, Rendered
from ingressctl.controller.configuration import Configuration
from ingressctl.controller.kinds import KindRegistry, ResourceKind
from ingressctl.controller.model import Claims
from ingressctl.k8s.resource import CONFIGMAPS
from ingressctl.keys import ResourceKey
from tests.stub_kinds import StubModel
from tests.unit.test_configs_configurator import configurator, ex

TS = "transportserver"


def ikey(ns_name: str) -> ResourceKey:
    return ResourceKey("ingress", ns_name)


def tkey(ns_name: str) -> ResourceKey:
    return ResourceKey(TS, ns_name)


def stream_claims(obj: Mapping[str, Any]) -> Claims:
    """A TransportServer-like stub: a passthrough host, or a listener."""
    spec = obj["spec"]
    return Claims(role="regular", hosts=tuple(spec.get("hosts", ())),
                  listeners=tuple(spec.get("listeners", ())))


class StreamRenderer:
    kind = TS

    def file_name(self, key: ResourceKey) -> str:
        return f"ts_{key.namespace}_{key.name}"

    def render(self, resource: object, ctx: RenderContext) -> Rendered:
        assert isinstance(resource, str)
        if resource == "RAISE":
            raise ValueError("cannot render")
        return Rendered(resource, [f"{resource} warning"] if resource == "WARN" else [])

    def catch_all(self, resource: object) -> str:
        return ""

    def counts(self, resources: Iterable[object]) -> dict[str, int]:
        return {"total": len(list(resources))}


def test_resource_counts_follow_adds_updates_deletes_and_a_late_renderer() -> None:
    c, _ = configurator()
    c.add_or_update_ingress(ex("cafe"))
    c.add_or_update(tkey("default/early"), "x")     # held before its kind has a renderer: not counted yet
    assert c.resource_counts() == {"ingress": {"regular": 1, "master": 0, "minion": 0}}
    c.register_renderer(StreamRenderer())           # counts what is already held
    assert c.resource_counts()["transportserver"] == {"total": 1}
    c.add_or_update(tkey("default/a"), "x")
    c.add_or_update(tkey("default/a"), "y")         # an update is not a second resource
    c.add_or_update_ingress(ex("tea"))
    c.delete(ikey("default/cafe"))
    c.delete(ikey("default/gone"))                  # never held: nothing changes
    assert c.resource_counts() == {"ingress": {"regular": 1, "master": 0, "minion": 0},
                                   "transportserver": {"total": 2}}
    c.delete(tkey("default/a"))
    c.delete(tkey("default/early"))
    c.delete(ikey("default/tea"))
    assert c.resource_counts() == {"ingress": {"regular": 0, "master": 0, "minion": 0},
                                   "transportserver": {"total": 0}}


def obj(name: str, ts: int, *, hosts: tuple[str, ...] = (), listeners: tuple[str, ...] = (),
        ns: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}",
                         "creationTimestamp": f"2024-01-01T00:00:{ts:02d}Z"},
            "spec": {"hosts": list(hosts), "listeners": list(listeners), "ingressClassName": "nginx",
                     "rules": [{"host": h, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {
                         "service": {"name": "svc", "port": {"number": 80}}}}]}} for h in hosts]}}


def test_configurator_keeps_a_second_kind_apart_in_files_outcomes_and_rejected() -> None:
    c, m = configurator()
    c.register_renderer(StreamRenderer())
    c.add_or_update_ingress(ex("cafe"))
    assert c.add_or_update(tkey("default/cafe"), "WARN") == ["WARN warning"]
    assert c.file_names() == {ikey("default/cafe"): "default-cafe", tkey("default/cafe"): "ts_default_cafe"}
    assert c.reload_if_needed().reloaded and set(m.loaded) == {"default-cafe", "ts_default_cafe"}
    # NGINX refuses the stub's new file: only the stub's key is blamed and rejected.
    c.add_or_update(tkey("default/cafe"), "BAD")
    c.add_or_update_ingress(ex("cafe", "new"))
    outcome = c.reload_if_needed()
    assert outcome.reloaded and list(outcome.failed) == [tkey("default/cafe")]
    assert list(c.rejected) == [tkey("default/cafe")]
    assert "new" in m.loaded["default-cafe"] and m.loaded["ts_default_cafe"] == "WARN"
    # A render error and an unknown kind cost their own resource only.
    c.add_or_update(tkey("default/cafe"), "RAISE")
    c.add_or_update(ResourceKey("nosuchkind", "default/cafe"), "x")
    outcome = c.reload_if_needed()
    unknown = ResourceKey("nosuchkind", "default/cafe")
    assert set(outcome.failed) == {tkey("default/cafe"), unknown}
    assert "no renderer for the kind 'nosuchkind'" in outcome.failed[unknown]
    assert c.resource_counts() == {"ingress": {"regular": 1, "master": 0, "minion": 0}, TS: {"total": 1}}
    # Deleting the Ingress leaves the stub's file (and its rejection) alone.
    c.delete_ingress("default/cafe")
    assert c.file_names() == {tkey("default/cafe"): "ts_default_cafe"}
    assert list(c.rejected) == [tkey("default/cafe")] and "default-cafe" not in m.files


def test_hosts_are_owned_across_kinds_and_listeners_by_the_oldest() -> None:
    conf = Configuration(ingress_class="nginx")
    conf.register_kind(StubModel(TS, "TransportServer", stream_claims))
    conf.set_startup_complete()
    conf.add_or_update_ingress({**obj("web", 5, hosts=("a.com",)), "kind": "Ingress"})
    # An older passthrough stream resource takes the Ingress's host; the Ingress is reported with the winner.
    changes, problems = conf.add_or_update(TS, obj("web", 1, hosts=("a.com",)))
    assert [(ch.op, ch.resource.key_with_kind) for ch in changes] == [
        ("Delete", ikey("default/web")), ("AddOrUpdate", tkey("default/web"))]
    assert changes[0].resource.warnings == [
        "host a.com is taken by another resource (TransportServer default/web)"]
    assert [(p.key, p.reason) for p in problems] == [(ikey("default/web"), "Rejected")]
    assert conf.host_owner("a.com") == tkey("default/web")
    # Listeners: the oldest holds one; a younger claimant is not configured until it is free.
    conf.add_or_update(TS, obj("dns", 3, listeners=("dns-udp",)))
    changes, problems = conf.add_or_update(TS, obj("dns2", 4, listeners=("dns-udp",)))
    assert changes == [] and [p.key for p in problems] == [tkey("default/dns2")]
    assert conf.listener_owner("dns-udp") == tkey("default/dns")
    assert conf.host_owner("dns-udp") is None        # listeners and hosts are separate name spaces
    changes, _ = conf.delete(tkey("default/dns"))
    assert [(ch.op, ch.resource.key_with_kind) for ch in changes] == [
        ("Delete", tkey("default/dns")), ("AddOrUpdate", tkey("default/dns2"))]
    assert conf.listener_owner("dns-udp") == tkey("default/dns2")
    # Deleting the stream resource gives the host back to the Ingress.
    changes, _ = conf.delete(tkey("default/web"))
    assert [(ch.op, ch.resource.key_with_kind) for ch in changes] == [
        ("Delete", tkey("default/web")), ("AddOrUpdate", ikey("default/web"))]


def test_registry_refuses_a_second_entry_with_a_taken_name() -> None:
    def entry(name: str) -> ResourceKind:
        return ResourceKind(name=name, rt=CONFIGMAPS, handler=lambda enqueue: None,  # type: ignore[arg-type,return-value]
                            builder=None, status=None)  # type: ignore[arg-type]

    reg = KindRegistry([entry("ingress"), entry(TS)])
    assert reg.names() == ["ingress", TS] and TS in reg and reg[TS].name == TS
    with pytest.raises(ValueError, match="registered twice"):
        reg.register(entry(TS))
