"""The Policy's registry entry (`k8s.nginx.org/v1` Policy, with `--enable-custom-resources`): informer
handler, validation, status and events, and the resolution of policy references for the kinds that use
them.

Guarantees:
- `policy_handler` enqueues Policies of our class (empty `spec.ingressClassName` or ours) on add, on an
  update that changes the spec or the class (status writes never retrigger a sync), and on delete.
- `PolicySync` (the kind's sync, on the sync thread): a Policy of ours is validated (`validate_policy`);
  valid: Normal `AddedOrUpdated` "Policy ns/name was added or updated", state Valid; invalid: Warning
  `Rejected` "Policy ns/name is invalid and was rejected: <errors>", state Invalid. The status is written
  only when state, reason or message changed, only by the leader; during start-up the write is deferred to
  the start-up flush like the other kinds' (and the became-leader callback rewrites it). A deleted Policy
  emits nothing. Then exactly the configured resources that reference the Policy are re-rendered (none
  during start-up: the first render reads every Policy).
- `PolicyStore` answers for the renderers: `resolve(key)` gives the Policy from the informer cache (None
  when missing or of another class), its validation error, and its Secrets resolved through the Secret
  store (whose type the generator checks); `resources_for_secret(ns, name)` gives the configured
  resources whose Policies use that Secret (a Secret change re-renders them), `resources_for_replicas()`
  those using rateLimit policies with `scale` (a change of the controller replica count re-renders them).
  Unbound (no Policy kind
  served), every reference is missing, so routes that ask for a policy answer 500.
- The admission webhook validates Policies with the same `validate_policy` and class filter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from ingressctl.controller.kinds import (
    Applied,
    ConfigurationView,
    Enqueue,
    EventHandler,
    ResourceKind,
    Verdict,
)
from ingressctl.controller.model import Resource
from ingressctl.k8s.resource import ResourceType
from ingressctl.keys import ResourceKey, object_key, split_key
from ingressctl.kinds.policy.secrets import policy_secret_keys, resolve_policy_secrets
from ingressctl.kinds.virtualserver.kind import StatusClient, VirtualServerHandler, VirtualServerStatusWriter
from ingressctl.kinds.virtualserver.model import vs_class_is_ours
from ingressctl.logging import get_logger
from ingressctl.policies.base import PolicyValidationConfig, ResolvedPolicy, ref_keys
from ingressctl.policies.validation import validate_policy
from ingressctl.secret_types import SecretReference
from ingressctl.validation import aggregate_message

log = get_logger(__name__)

POLICY_KIND = "policy"
POLICIES = ResourceType("k8s.nginx.org", "v1", "policies", "Policy")


def _d(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def invalid_message(key: str, errors: str) -> str:
    return f"Policy {key} is invalid and was rejected: {errors}"


def policy_handler(enqueue: Enqueue, ingress_class: str) -> EventHandler:
    """The VirtualServer's handler rule (class filter, spec changes, every delete) for Policy tasks."""
    return VirtualServerHandler(enqueue, ingress_class, POLICY_KIND)


class PolicyController(Protocol):
    """What the Policy kind needs from the LoadBalancerController."""

    configuration: Any      # find_resources_for_policy
    secret_store: Any       # get_secret_reference
    reporter: Any           # event, track_status, untrack_status
    options: Any
    informers: Any          # list(kind)

    def get_object(self, name: str, key: str) -> dict[str, Any] | None: ...

    def is_ready(self) -> bool: ...

    def is_rendering(self) -> bool: ...

    def rerender(self, resources: list[Resource], reason: str) -> None: ...


class PolicyStore:
    """See the module docstring. Read on the sync thread (rendering) only."""

    def __init__(self, ingress_class: str = "", config: PolicyValidationConfig | None = None) -> None:
        self._class = ingress_class
        self.config = config or PolicyValidationConfig()
        self._lbc: PolicyController | None = None
        self._memo: dict[str, tuple[str, str]] = {}      # key -> (resourceVersion, validation error)

    def bind(self, lbc: PolicyController, ingress_class: str) -> None:
        self._lbc = lbc
        self._class = ingress_class

    def is_ours(self, obj: Mapping[str, Any]) -> bool:
        return vs_class_is_ours(obj, self._class)

    def validate(self, obj: Mapping[str, Any]) -> str:
        """The aggregate validation error of a Policy ("" when valid), memoised per resourceVersion."""
        key, rv = object_key(obj), str(_d(obj.get("metadata")).get("resourceVersion") or "")
        memo = self._memo.get(key)
        if memo is not None and memo[0] == rv and rv:
            return memo[1]
        error = aggregate_message(validate_policy(obj, self.config))
        self._memo[key] = (rv, error)
        return error

    def forget(self, key: str) -> None:
        self._memo.pop(key, None)

    def _lookup_secret(self, key: str) -> SecretReference:
        assert self._lbc is not None
        ref: SecretReference = self._lbc.secret_store.get_secret_reference(key)
        return ref

    def resolve(self, key: str) -> ResolvedPolicy:
        if self._lbc is None:
            return ResolvedPolicy(key)
        obj = self._lbc.get_object(POLICY_KIND, key)
        if obj is None or not self.is_ours(obj):
            return ResolvedPolicy(key)
        error = self.validate(obj)
        if error:
            return ResolvedPolicy(key, obj, error=error)
        return ResolvedPolicy(key, obj, secrets=resolve_policy_secrets(obj, self._lookup_secret))

    def resolve_for(self, owners: Iterable[tuple[str, Iterable[Any]]]) -> dict[str, ResolvedPolicy]:
        """Every reference of the given (default namespace, reference lists) resolved once."""
        out: dict[str, ResolvedPolicy] = {}
        for ns, lists in owners:
            for refs in lists:
                for key in ref_keys(refs, ns):
                    if key not in out:
                        out[key] = self.resolve(key)
        return out

    def _users(self, uses: Callable[[Mapping[str, Any]], bool]) -> list[Resource]:
        """The configured resources referencing a Policy of ours for which `uses(policy)` holds."""
        if self._lbc is None:
            return []
        found: dict[ResourceKey, Resource] = {}
        for obj in self._lbc.informers.list(POLICY_KIND):
            if self.is_ours(obj) and uses(obj):
                ns, pname = split_key(object_key(obj))
                for res in self._lbc.configuration.find_resources_for_policy(ns, pname):
                    found[res.key_with_kind] = res
        return [found[k] for k in sorted(found)]

    def resources_for_secret(self, namespace: str, name: str) -> list[Resource]:
        secret = f"{namespace}/{name}"
        return self._users(lambda obj: secret in policy_secret_keys(obj))

    def resources_for_replicas(self) -> list[Resource]:
        """The users of rateLimit policies with `scale` (their rate depends on the replica count)."""
        return self._users(lambda obj: bool(_d(_d(obj.get("spec")).get("rateLimit")).get("scale")))


class PolicyStatusWriter(VirtualServerStatusWriter):
    """The VirtualServer's status writer without `externalEndpoints` (a Policy's status has none)."""

    def _desired(self, key: str) -> dict[str, Any] | None:
        desired = super()._desired(key)
        if desired is not None:
            desired.pop("externalEndpoints", None)
        return desired

    @staticmethod
    def _current(obj: dict[str, Any]) -> dict[str, Any]:
        st = _d(obj.get("status"))
        return {"state": st.get("state", ""), "reason": st.get("reason", ""),
                "message": st.get("message", "")}


class PolicySync:
    """See the module docstring."""

    def __init__(self, lbc: PolicyController, store: PolicyStore) -> None:
        self._lbc = lbc
        self._store = store

    def __call__(self, key: str) -> None:
        lbc = self._lbc
        rkey = ResourceKey(POLICY_KIND, key)
        obj = lbc.get_object(POLICY_KIND, key)
        self._store.forget(key)
        if obj is not None and self._store.is_ours(obj):
            error = self._store.validate(obj)
            if error:
                lbc.reporter.event(obj, POLICY_KIND, "Warning", "Rejected", invalid_message(key, error))
            else:
                lbc.reporter.event(obj, POLICY_KIND, "Normal", "AddedOrUpdated",
                                   f"Policy {key} was added or updated")
            lbc.reporter.track_status(rkey, defer=not lbc.is_ready())
        else:
            lbc.reporter.untrack_status(rkey)
        if not lbc.is_rendering():
            return
        ns, name = split_key(key)
        resources = lbc.configuration.find_resources_for_policy(ns, name)
        if resources:
            lbc.rerender(resources, "policy")


class _NoBuilder:
    def apply(self, resource: Resource) -> Applied:
        raise TypeError("a Policy is not rendered on its own; the resources that reference it are")

    def forget(self, key: ResourceKey) -> None:
        pass


def policy_admission(store: PolicyStore) -> Callable[[Mapping[str, Any], Mapping[str, Any] | None,
                                                      ConfigurationView], Verdict]:
    """The webhook's validator of Policies: the sync loop's class filter and validation."""

    def validate(obj: Mapping[str, Any], old: Mapping[str, Any] | None, config: ConfigurationView) -> Verdict:
        if not store.is_ours(obj):
            return Verdict()
        errors = aggregate_message(validate_policy(obj, store.config))
        return Verdict(message=invalid_message(object_key(obj), errors)) if errors else Verdict()

    return validate


def policy_kind_factory(client: StatusClient, store: PolicyStore) -> Callable[[Any], ResourceKind]:
    """The Policy's registry entry's factory (the controller calls it with itself); `store` is the one the
    VirtualServer kind resolves references with."""

    def factory(lbc: Any) -> ResourceKind:
        ingress_class = lbc.options.ingress_class
        store.bind(lbc, ingress_class)
        lbc.secret_users.append(store.resources_for_secret)
        lbc.replicas.sources.append(store.resources_for_replicas)

        def handler(enqueue: Enqueue) -> EventHandler:
            return policy_handler(enqueue, ingress_class)

        writer = PolicyStatusWriter(client, get_cached=lambda key: lbc.get_object(POLICY_KIND, key),
                                    is_leader=lbc.status.is_leader, addresses=lambda: [], rt=POLICIES)
        return ResourceKind(name=POLICY_KIND, rt=POLICIES, handler=handler, builder=_NoBuilder(),
                            status=writer, sync=PolicySync(lbc, store), admission=policy_admission(store))

    return factory
