"""Which Policies a VirtualServer or VirtualServerRoute references.

Guarantees:
- `vs_policy_references(vs, vsrs)`: the reference lists of a VirtualServer (`spec.policies`,
  `spec.routes[].policies`) and of its VirtualServerRoutes (`spec.subroutes[].policies`), each with the
  namespace a reference without one is in (the namespace of the object that holds it).
- `vs_policy_claims(obj)` / `vsr_policy_claims(obj)`: the (namespace, name) of every Policy one object
  references, sorted and unique, for the Configuration's Policy index. Malformed entries are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ingressctl.policies.base import ref_keys


def _d(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _items(spec: Mapping[str, Any], name: str) -> list[Any]:
    v = spec.get(name)
    return v if isinstance(v, list) else []


def _namespace(obj: Mapping[str, Any]) -> str:
    return str(_d(obj.get("metadata")).get("namespace") or "")


def _vs_lists(vs: Mapping[str, Any]) -> tuple[str, list[Any]]:
    spec = _d(vs.get("spec"))
    return _namespace(vs), [spec.get("policies"), *(_d(r).get("policies") for r in _items(spec, "routes"))]


def _vsr_lists(vsr: Mapping[str, Any]) -> tuple[str, list[Any]]:
    spec = _d(vsr.get("spec"))
    return _namespace(vsr), [_d(r).get("policies") for r in _items(spec, "subroutes")]


def vs_policy_references(vs: Mapping[str, Any],
                         vsrs: Iterable[Mapping[str, Any]]) -> list[tuple[str, list[Any]]]:
    return [_vs_lists(vs), *(_vsr_lists(v) for v in vsrs)]


def _claims(namespace: str, lists: Iterable[Any]) -> tuple[tuple[str, str], ...]:
    out: set[tuple[str, str]] = set()
    for refs in lists:
        for key in ref_keys(refs, namespace):
            ns, _, name = key.partition("/")
            if name:
                out.add((ns, name))
    return tuple(sorted(out))


def vs_policy_claims(obj: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return _claims(*_vs_lists(obj))


def vsr_policy_claims(obj: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return _claims(*_vsr_lists(obj))
