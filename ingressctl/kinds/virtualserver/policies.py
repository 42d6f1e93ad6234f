"""Policies of one VirtualServer (with its VirtualServerRoutes): which Policies they reference, and NIC's
contexts and precedence on top of the shared generator (`policies/generator.py`).

Guarantees:
- `vs_policy_references(vs, vsrs)`: the reference lists of a VirtualServer (`spec.policies`,
  `spec.routes[].policies`) and of its VirtualServerRoutes (`spec.subroutes[].policies`), each with the
  namespace a reference without one is in (the namespace of the object that holds it).
- `vs_policy_claims(obj)` / `vsr_policy_claims(obj)`: the (namespace, name) of every Policy one object
  references, sorted and unique, for the Configuration's Policy index. Malformed entries are skipped.
- `VSPolicies.spec(refs)` is the server context (`spec.policies`); `route(refs)` a VirtualServer route's
  location context; `subroute(refs, vsr, parent_refs)` a VirtualServerRoute subroute's: a subroute that
  lists policies uses only them (references default to the VirtualServerRoute's namespace), one that lists
  none inherits the delegating route's (which default to the VirtualServer's namespace) — NIC's rule.
- For the same type, a route or subroute policy wins over a spec policy: server lines are overridden by
  NGINX's inheritance, and a spec policy's `inherited` lines (types that cannot live at server level, such
  as apiKey's checks) are added to a location only when its own context has no policy of that type, and
  always to `catch_all()`, the location of the paths no route matches.
- A context whose policies fail (missing, invalid, bad Secret, NGINX Plus only) gets `error` (the owner
  answers 500 there) and its warnings; nothing else is affected. A failing spec context fails the server.
- `http` collects every context's http-level lines once, in first-use order. Two cache policies that
  would define one cache zone (same `cacheZoneName` in one VirtualServer) with other parameters fail the
  later context closed with a warning, instead of a configuration NGINX refuses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from ingressctl.configs.config import PolicyLocation
from ingressctl.policies.base import (
    LEVEL_ROUTE,
    LEVEL_SPEC,
    LEVEL_SUBROUTE,
    PolicyContext,
    PolicyResult,
    ResolvedPolicy,
    ref_keys,
)
from ingressctl.policies.cache import cache_zone_of
from ingressctl.policies.generator import generate_policies


class VSPolicies:
    """See the module docstring."""

    def __init__(self, policies: Mapping[str, ResolvedPolicy], namespace: str, name: str, *, tls: bool,
                 replicas: int = 1, capabilities: frozenset[str] = frozenset(),
                 is_plus: bool = False, context: Mapping[str, Any] | None = None) -> None:
        self._policies = policies
        self._ns, self._name = namespace, name
        self._base = PolicyContext("virtualserver", namespace, name, LEVEL_SPEC, tls=tls,
                                   capabilities=capabilities, is_plus=is_plus, replicas=max(1, replicas),
                                   **dict(context or {}))
        self._spec = PolicyResult()
        self.http: list[str] = []
        self._zones: dict[str, str] = {}      # cache zone -> its proxy_cache_path line
        self.locations: list[PolicyLocation] = []

    def _run(self, refs: Any, default_ns: str, level: str, context_id: str,
             vsr: tuple[str, str] | None = None) -> PolicyResult:
        keys = ref_keys(refs, default_ns)
        resolved = [self._policies.get(k) or ResolvedPolicy(k) for k in keys]
        ctx = dataclasses.replace(self._base, level=level, context_id=context_id,
                                  vsr_namespace=vsr[0] if vsr else "", vsr_name=vsr[1] if vsr else "")
        result = generate_policies(resolved, ctx)
        zones = [z for z in map(cache_zone_of, result.http) if z]
        clash = next((z for z in zones if self._zones.get(z[0], z[1]) != z[1]), None)
        if clash is not None and not result.error:
            msg = f"cache zone {clash[0]} is already defined by another cache policy with other parameters"
            return PolicyResult(warnings=[*result.warnings, msg], error=msg, types=result.types)
        if not result.error:
            self._zones.update(zones)
            self.http.extend(line for line in result.http if line not in self.http)
            for loc in result.locations:
                same = next((known for known in self.locations if known.path == loc.path), None)
                if same is None:
                    self.locations.append(loc)
                elif same != loc:   # one NGINX location per path: the first policy's wins
                    result.warnings.append(f"location {loc.path} of a policy in {context_id} is already "
                                           "defined by another policy; ignored")
        return result

    def spec(self, refs: Any) -> PolicyResult:
        self._spec = self._run(refs, self._ns, LEVEL_SPEC, "spec")
        return self._spec

    def _with_inherited(self, result: PolicyResult) -> PolicyResult:
        if result.error or self._spec.error:
            return result
        for type_key, lines in self._spec.inherited.items():
            if type_key not in result.types:
                result.location.extend(lines)
        return result

    def catch_all(self) -> PolicyResult:
        """The unrouted paths' location (the server's 404): the spec context's `inherited` lines, so that a
        spec policy that has to live in locations (apiKey) guards it too, as NIC's server-level one does."""
        return self._with_inherited(PolicyResult())

    def route(self, refs: Any, path: str) -> PolicyResult:
        return self._with_inherited(self._run(refs, self._ns, LEVEL_ROUTE, path))

    def subroute(self, refs: Any, vsr: tuple[str, str], parent_refs: Any, path: str) -> PolicyResult:
        if isinstance(refs, list) and refs:
            return self._with_inherited(self._run(refs, vsr[0], LEVEL_SUBROUTE, path, vsr))
        return self._with_inherited(self._run(parent_refs, self._ns, LEVEL_ROUTE, path))


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
