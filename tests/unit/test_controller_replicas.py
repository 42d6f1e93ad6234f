"""The controller replica count from the ready endpoints of the controller's own Service, and which
resources depend on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ingressctl.controller.replicas import ControllerReplicas, ingresses_with_scale
from ingressctl.keys import ResourceKey


def slice_(*endpoints: tuple[str, bool | None]) -> dict[str, Any]:
    return {"endpoints": [{"addresses": [a], **({"conditions": {"ready": r}} if r is not None else {})}
                          for a, r in endpoints]}


def test_ready_distinct_endpoints_are_the_replicas_and_only_changes_are_handed_on() -> None:
    seen: list[int] = []
    r = ControllerReplicas(seen.append)
    assert (r.count, seen) == (1, [1])
    assert r.update([slice_(("10.0.0.1", True), ("10.0.0.2", None), ("10.0.0.3", False)),
                     slice_(("10.0.0.1", True))]) is True
    assert (r.count, seen) == (2, [1, 2])
    assert r.update([slice_(("10.0.0.9", True), ("10.0.0.8", True))]) is False
    assert r.update([]) is True and r.count == 1       # never below one
    assert seen == [1, 2, 1]


@dataclass
class Res:
    kind: str
    name: str
    obj: dict[str, Any]
    kids: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key_with_kind(self) -> ResourceKey:
        return ResourceKey(self.kind, f"demo/{self.name}")

    def children(self) -> list[tuple[ResourceKey, dict[str, Any]]]:
        return [(ResourceKey(self.kind, f"demo/k{i}"), k) for i, k in enumerate(self.kids)]


def ann(value: str | None) -> dict[str, Any]:
    return {"metadata": {"annotations": {} if value is None else {"nginx.org/limit-req-scale": value}}}


def test_ingresses_with_scale_and_the_users_of_every_source() -> None:
    scaled, plain, master = Res("ingress", "a", ann("true")), Res("ingress", "b", ann(None)), \
        Res("ingress", "m", ann(None), [ann("false"), ann("True")])
    vs = Res("virtualserver", "v", ann("true"))
    assert ingresses_with_scale([scaled, plain, master, vs]) == [scaled, master]
    r = ControllerReplicas(lambda n: None)
    r.sources += [lambda: [master, scaled], lambda: [scaled, vs]]
    assert [x.key_with_kind.ns_name for x in r.users()] == ["demo/a", "demo/m", "demo/v"]
