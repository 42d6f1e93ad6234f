"""A stub configuration kind for tests: NIC's Resource interface and a Configuration part, parametrised by
the kind's name and what its objects claim. Kinds other than Ingress live in tests until the product has
them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ingressctl.controller.model import Claims, ConfigurationProblem, Entry, Resource
from ingressctl.keys import ResourceKey


@dataclass
class StubResource:
    """A configured stub resource."""

    kind: str
    obj: dict[str, Any]
    key: str
    valid_hosts: dict[str, bool]
    warnings: list[str] = field(default_factory=list)

    @property
    def key_with_kind(self) -> ResourceKey:
        return ResourceKey(self.kind, self.key)

    def is_equal(self, other: Resource) -> bool:
        return (isinstance(other, StubResource) and other.key_with_kind == self.key_with_kind
                and (self.obj, self.valid_hosts) == (other.obj, other.valid_hosts))

    def children(self) -> list[tuple[ResourceKey, dict[str, Any]]]:
        return []

    def lost_all_hosts(self, obj: dict[str, Any], warnings: list[str]) -> StubResource:
        return StubResource(self.kind, obj, self.key, {h: False for h in self.valid_hosts}, warnings)


class StubModel:
    """The stub kind's part of the Configuration (`ConfigurationKind`)."""

    def __init__(self, kind: str, api_kind: str, claims: Callable[[Mapping[str, Any]], Claims], *,
                 is_ours: Callable[[Mapping[str, Any]], bool] = lambda obj: True,
                 validate: Callable[[Mapping[str, Any]], str] = lambda obj: "") -> None:
        self.kind = kind
        self.api_kind = api_kind
        self._claims = claims
        self._is_ours = is_ours
        self._validate = validate

    def is_ours(self, obj: Mapping[str, Any]) -> bool:
        return self._is_ours(obj)

    def validate(self, obj: Mapping[str, Any]) -> str:
        return self._validate(obj)

    def claims(self, obj: Mapping[str, Any]) -> Claims:
        return self._claims(obj)

    def build(self, entry: Entry, valid_hosts: dict[str, bool], warnings: list[str],
              children: list[Entry]) -> StubResource:
        return StubResource(self.kind, entry.obj, entry.key.ns_name, valid_hosts, warnings)

    def child_problem(self, entry: Entry) -> ConfigurationProblem:
        raise AssertionError("the stub kind has no children")
