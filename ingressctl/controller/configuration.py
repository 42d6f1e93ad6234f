"""The Configuration: the valid configuration resources of our class, of every kind, and who owns each host
(NIC's model).

Guarantees:
- Kind-neutral: each kind plugs in a `ConfigurationKind` (its class filter, validator, reference extraction
  and resource builder); Ingresses are built in. Every map is keyed by `ResourceKey`, so resources of
  different kinds with the same namespace and name never collide.
- Host ownership spans kinds: of all valid, non-child resources claiming a host, the one with the OLDEST
  creationTimestamp (second resolution) owns it; on a tie the greater `metadata.uid` string wins. Listeners
  (stream resources) are owned by the same rule, in their own name space. The result does not depend on the
  order in which resources arrive or are deleted. A resource that loses some hosts keeps the others and gets
  one warning per lost host, naming the winner; one that loses all of them is not configured and is reported
  as a problem naming each host and its winner (and, if it was configured, its Delete carries those warnings).
  Warnings and problems always name the current winner.
- Weak claims (`Claims.weak_hosts`: ingress-nginx's from-to-www-redirect names): a host owned only when no
  resource claims it as a host (then the oldest weak claimant); never what makes a resource configured.
- The catch-all: an Ingress without rules and with a `defaultBackend` claims `CATCH_ALL_HOST`, resolved like
  a host except on a tie (oldest wins, then the smaller `ns/name`); the others are problems naming the
  winner and take over when it goes. (NIC rejects such an Ingress; the Ingress spec says its default backend
  serves what no rule matches.)
- Shared hosts (`Claims.shares_hosts`: ingress-nginx's Ingresses, which it merged by host): a host claimed
  by several sharing resources is still owned by the oldest, but when the owner shares too, the others are
  its members for that host instead of losers: the owner's kind gets them as children (oldest first) and
  serves their paths in its server; a member loses no warning for the host, and one that owns no host of
  its own is configured through its owners (no problem, no resource of its own; lookups by Service, Secret
  and Policy return its owners). A resource that does not share keeps NIC's one owner per host, on both
  sides.
- Children (Ingress minions): a child attaches to the owner of its host, if that owner is a parent (a master;
  a kind may say otherwise with `child_attaches`: ingress-nginx's canaries attach to regular Ingresses);
  the parent's kind decides what the child gets (for minions, the paths it wins). A child whose host is not
  owned by a parent is a problem of its kind (`NoIngressMasterFound` for minions); one the configured parent
  does not take (a VirtualServerRoute no route of its VirtualServer validly delegates to) is an `Ignored`
  problem ("VirtualServer ns/name ignores VirtualServerRoute").
- `add_or_update` / `delete` (and the Ingress shorthands) return ResourceChanges (all Deletes first, each
  resource at most once, sorted by key within each group) and ConfigurationProblems (only new or changed
  ones, each carrying its resource key), computed by re-resolving just the hosts the changed resource touches:
  steady-state work is proportional to the resources that share those hosts, not to the size of the cluster.
- Start-up (see docs/architecture.md): until `set_startup_complete()`, adds, updates and deletes only
  validate and store (constant work per resource: no host resolution); `set_startup_complete()` runs ONE
  full resolution and returns every configured resource as an AddOrUpdate plus every problem.
  `legacy_startup=True` keeps the pre-5.5 behaviour (a full rebuild on every change, children found by
  scanning) as a benchmark baseline; every mode reaches the same state.
- Lookups by Service, Secret and Policy use indexes maintained on every store change; they return only
  configured resources (a child's parent stands in for the child). Per-resource state is kept small.
- Pure and single-threaded: the one sync thread owns it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ingressctl.controller.ingress_class import IngressClasses
from ingressctl.controller.model import (
    CATCH_ALL_HOST,
    REASON_IGNORED,
    REASON_REJECTED,
    Claims,
    ConfigurationProblem,
    Entry,
    Resource,
    all_hosts_taken_message,
    best,
    host_taken_warning,
    listener_claim,
    listener_taken_message,
    make_entry,
    rank_of,
)
from ingressctl.keys import INGRESS_KIND, ResourceKey, object_key
from ingressctl.kinds.ingress.model import IngressConfiguration, IngressModel, MinionConfiguration
from ingressctl.logging import get_logger

log = get_logger(__name__)

__all__ = ["Configuration", "ConfigurationKind", "ConfigurationProblem", "IngressConfiguration",
           "MinionConfiguration", "ResourceChange"]


class ConfigurationKind(Protocol):
    """What the Configuration needs from a kind: filter, validate, extract references, build resources."""

    kind: str       # the registry name, e.g. "ingress"
    api_kind: str   # as users see it, e.g. "Ingress"

    def is_ours(self, obj: Mapping[str, Any]) -> bool: ...

    def validate(self, obj: Mapping[str, Any]) -> str: ...

    def claims(self, obj: Mapping[str, Any]) -> Claims: ...

    def build(self, entry: Entry, valid_hosts: dict[str, bool], warnings: list[str],
              children: list[Entry]) -> Resource: ...

    def child_problem(self, entry: Entry) -> ConfigurationProblem: ...

    # Optional, for NIC's custom-resource wording: `rejected_message(key, detail) -> str` (the Rejected text
    # for "with error: ..."), `host_taken_message(taken) -> str` (the problem of a resource that lost its
    # host).


@dataclass
class ResourceChange:
    op: Literal["AddOrUpdate", "Delete"]
    resource: Resource
    error: str = ""


Changes = tuple[list[ResourceChange], list[ConfigurationProblem]]


# Indexes map a claim (host, Service, Secret) to the keys of the resources using it. Nearly always one per
# claim: store the key itself and switch to a set only for a second one (a set costs ~200 bytes).
Index = dict[Any, "ResourceKey | set[ResourceKey]"]


def _index_add(index: Index, k: Any, key: ResourceKey) -> None:
    cur = index.get(k)
    if cur is None:
        index[k] = key
    elif isinstance(cur, set):
        cur.add(key)
    elif cur != key:
        index[k] = {cur, key}


def _index_remove(index: Index, k: Any, key: ResourceKey) -> None:
    cur = index.get(k)
    if cur is None:
        return
    if not isinstance(cur, set):
        if cur == key:
            del index[k]
        return
    cur.discard(key)
    if len(cur) == 1:
        index[k] = next(iter(cur))
    elif not cur:
        del index[k]


def _index_get(index: Index, k: Any) -> tuple[ResourceKey, ...] | set[ResourceKey]:
    cur = index.get(k)
    if cur is None:
        return ()
    return cur if isinstance(cur, set) else (cur,)


class Configuration:
    """Valid resources of one class, resolved into configured resources (see the module docstring)."""

    def __init__(self, *, ingress_class: str | IngressClasses, is_controller_ingress_class: bool = True,
                 legacy_startup: bool = False, is_plus: bool = False, snippets_enabled: bool = False,
                 allow_empty_host: bool = False) -> None:
        """`allow_empty_host`: NIC's -allow-empty-ingress-host: a rule without a host claims the catch-all."""
        self.ingress_classes = ingress_class if isinstance(ingress_class, IngressClasses) else \
            IngressClasses(ingress_class)
        self.ingress_class = self.ingress_classes.primary
        self.ingress_nginx_compat = self.ingress_classes.compat
        self.is_controller_ingress_class = is_controller_ingress_class
        self.legacy_startup = legacy_startup
        self.is_plus = is_plus
        self.snippets_enabled = snippets_enabled
        self._startup_complete = False
        self._kinds: dict[str, ConfigurationKind] = {}
        self.register_kind(IngressModel(self.ingress_classes, is_plus=is_plus,
                                        snippets_enabled=snippets_enabled,
                                        is_controller_ingress_class=is_controller_ingress_class,
                                        allow_empty_host=allow_empty_host))

        self._entries: dict[ResourceKey, Entry] = {}
        self._claims: Index = {}  # host (or listener claim) -> parent/regular keys claiming it
        self._children_by_host: Index = {}
        self._by_service: Index = {}  # (namespace, name) -> keys
        self._by_secret: Index = {}
        self._by_policy: Index = {}
        self._by_config_map: Index = {}
        self._default_tls: set[ResourceKey] = set()

        self._hosts: dict[str, ResourceKey] = {}  # host or listener claim -> owning key (resolved state)
        self._resources: dict[ResourceKey, Resource] = {}  # configured resources as last reported
        self._problems: dict[ResourceKey, ConfigurationProblem] = {}  # host problems as last reported

    def register_kind(self, kind: ConfigurationKind) -> None:
        self._kinds[kind.kind] = kind

    # ------------------------------------------------------------------------------------------------ API

    @property
    def startup_complete(self) -> bool:
        return self._startup_complete

    def has_correct_ingress_class(self, ing: Mapping[str, Any]) -> bool:
        """The Ingress kind's class filter: the class annotation beats spec.ingressClassName; an Ingress
        without a class is not ours."""
        return self._kinds[INGRESS_KIND].is_ours(ing)

    def api_kind(self, key: ResourceKey) -> str:
        """The kind of `key` as users see it ("Ingress"), "" for a kind not registered."""
        model = self._kinds.get(key.kind)
        return model.api_kind if model is not None else ""

    def add_or_update(self, kind: str, obj: dict[str, Any]) -> Changes:
        """Validate and store (or remove) the resource, then resolve the hosts it touches."""
        model = self._kinds[kind]
        key = ResourceKey(kind, object_key(obj))
        errors = ""
        new: Entry | None = None
        if model.is_ours(obj):
            try:
                errors = model.validate(obj)
                if not errors:
                    new = make_entry(key, obj, model.claims(obj))
            except Exception as e:  # a validator bug must reject one object, not kill the sync thread
                log.error("validating a resource failed", resource=str(key), error=repr(e))
                errors, new = f"internal error while validating: {e!r}", None
        old = self._store(key, new)
        changes, problems = self._after_store(key, old, new)
        if errors:
            for change in changes:
                if change.resource.key_with_kind == key:
                    change.error = errors
                    break
            else:
                rejected = getattr(model, "rejected_message", None)
                message = rejected(key.ns_name, f"with error: {errors}") if callable(rejected) else errors
                problems.append(ConfigurationProblem(obj=obj, is_error=True, reason=REASON_REJECTED,
                                                     message=message, key=key))
        return changes, problems

    def delete(self, key: ResourceKey) -> Changes:
        """Forget the resource; its hosts pass to the next owner."""
        if key not in self._entries:
            return [], []
        old = self._store(key, None)
        return self._after_store(key, old, None)

    def add_or_update_ingress(self, ing: dict[str, Any]) -> Changes:
        return self.add_or_update(INGRESS_KIND, ing)

    def delete_ingress(self, key: str) -> Changes:
        """Forget the Ingress ("namespace/name")."""
        return self.delete(ResourceKey(INGRESS_KIND, key))

    def set_startup_complete(self) -> Changes:
        """End start-up: resolve every host once; return every configured resource and every problem."""
        if self._startup_complete:
            return [], []
        self._startup_complete = True
        if self.legacy_startup:
            # Already resolved on every change; problems were reported as they appeared.
            return [ResourceChange("AddOrUpdate", r) for r in self.get_resources()], []
        return self._rebuild_hosts()

    def get_resources(self) -> list[Resource]:
        """Every configured resource, sorted by key."""
        return [self._resources[k] for k in sorted(self._resources)]

    def get_resource(self, key: ResourceKey) -> Resource | None:
        return self._resources.get(key)

    def resources_of_kind(self, kind: str) -> list[Resource]:
        """The configured resources of one kind, unsorted (for per-event lookups on the sync path)."""
        return [r for k, r in self._resources.items() if k.kind == kind]

    def get_object(self, key: ResourceKey) -> dict[str, Any] | None:
        """A stored valid resource of our class (configured or not)."""
        e = self._entries.get(key)
        return e.obj if e is not None else None

    def get_ingress(self, key: str) -> dict[str, Any] | None:
        """A stored valid Ingress ("namespace/name") of our class (configured or not)."""
        return self.get_object(ResourceKey(INGRESS_KIND, key))

    def host_owner(self, host: str) -> ResourceKey | None:
        return self._hosts.get(host)

    def shares_hosts(self, ing: Mapping[str, Any]) -> bool:
        """Whether the Ingress shares its hosts with the other sharing Ingresses (`Claims.shares_hosts`)."""
        return self._kinds[INGRESS_KIND].claims(ing).shares_hosts

    def listener_owner(self, listener: str) -> ResourceKey | None:
        return self._hosts.get(listener_claim(listener))

    def host_problems(self) -> dict[ResourceKey, ConfigurationProblem]:
        """The current host problems (all hosts taken, orphaned children) by resource key."""
        return dict(self._problems)

    def find_resources_for_service(self, namespace: str, name: str) -> list[Resource]:
        """Configured resources that (or one of whose children) reference the Service."""
        return self._resolve_keys(_index_get(self._by_service, (namespace, name)))

    def find_resources_for_secret(self, namespace: str, name: str) -> list[Resource]:
        """Configured resources referencing the Secret (spec.tls secretName, nginx.org/basic-auth-secret)."""
        return self._resolve_keys(_index_get(self._by_secret, (namespace, name)))

    def find_resources_for_policy(self, namespace: str, name: str) -> list[Resource]:
        """Configured resources that (or one of whose children) reference the Policy."""
        return self._resolve_keys(_index_get(self._by_policy, (namespace, name)))

    def find_resources_for_config_map(self, namespace: str, name: str) -> list[Resource]:
        """Configured resources that (or one of whose children) read the ConfigMap (ingress-nginx's
        custom-headers, auth-proxy-set-headers)."""
        return self._resolve_keys(_index_get(self._by_config_map, (namespace, name)))

    def find_resources_for_default_tls_secret(self) -> list[Resource]:
        """Configured resources with a TLS entry without a Secret (they use the wildcard Secret)."""
        return self._resolve_keys(self._default_tls)

    # ------------------------------------------------------------------------------------------ internals

    def _parent_of(self, e: Entry) -> ResourceKey | None:
        owner = self._hosts.get(e.claims[0]) if e.claims else None
        if owner is None:
            return None
        model = self._kinds[owner.kind]
        attaches = getattr(model, "child_attaches", None)  # (Ingress canaries attach to regular Ingresses)
        owner_entry = self._entries[owner]
        if not (attaches(e, owner_entry) if callable(attaches) else owner_entry.role == "parent"):
            return None
        # A parent takes children of its `child_kinds` (by default its own kind: Ingress masters and minions).
        if e.key.kind not in getattr(model, "child_kinds", (model.kind,)):
            return None
        return owner

    def _shared_hosts(self, e: Entry) -> dict[str, ResourceKey]:
        """The hosts of `e` whose sharing owner serves `e`'s paths in its server, with that owner
        (`Claims.shares_hosts`)."""
        if not e.shares_hosts:
            return {}
        return {h: o for h in e.hosts if (o := self._hosts.get(h)) is not None and o != e.key
                and h != CATCH_ALL_HOST and self._entries[o].shares_hosts}

    def _members(self, e: Entry, valid_hosts: Mapping[str, bool]) -> list[Entry]:
        """The sharing resources whose paths `e`'s server serves for the hosts `e` owns, oldest first."""
        found: dict[ResourceKey, Entry] = {}
        for h, owned in valid_hosts.items():
            if owned and h != CATCH_ALL_HOST:
                for k in _index_get(self._claims, h):
                    m = self._entries[k]
                    if k != e.key and m.shares_hosts and h in m.hosts:  # (not a weak claim)
                        found[k] = m
        return sorted(found.values(), key=rank_of)

    def _resolve_keys(self, keys: Iterable[ResourceKey]) -> list[Resource]:
        found: dict[ResourceKey, Resource] = {}
        for k in keys:
            res = self._resources.get(k)
            e = self._entries.get(k)
            if res is None and e is not None and e.role == "child":
                parent = self._parent_of(e)
                res = self._resources.get(parent) if parent is not None else None
            if res is not None:
                found[res.key_with_kind] = res
            for owner in self._shared_hosts(e).values() if e is not None else ():
                if (res := self._resources.get(owner)) is not None:
                    found[owner] = res
        return [found[k] for k in sorted(found)]

    def _store(self, key: ResourceKey, new: Entry | None) -> Entry | None:
        """Replace the stored entry and keep every index in step; returns the old entry."""
        old = self._entries.pop(key, None)
        if old is not None:
            self._unindex(old)
        if new is not None:
            self._entries[key] = new
            self._index(new)
        return old

    def _index(self, e: Entry) -> None:
        if e.role == "child":
            _index_add(self._children_by_host, e.claims[0], e.key)
        else:
            for h in e.claims:
                _index_add(self._claims, h, e.key)
        for s in e.services:
            _index_add(self._by_service, s, e.key)
        for s in e.secrets:
            _index_add(self._by_secret, s, e.key)
        for p in e.policies:
            _index_add(self._by_policy, p, e.key)
        for c in e.config_maps:
            _index_add(self._by_config_map, c, e.key)
        if e.uses_default_tls_secret:
            self._default_tls.add(e.key)

    def _unindex(self, e: Entry) -> None:
        if e.role == "child":
            _index_remove(self._children_by_host, e.claims[0], e.key)
        else:
            for h in e.claims:
                _index_remove(self._claims, h, e.key)
        for s in e.services:
            _index_remove(self._by_service, s, e.key)
        for s in e.secrets:
            _index_remove(self._by_secret, s, e.key)
        for p in e.policies:
            _index_remove(self._by_policy, p, e.key)
        for c in e.config_maps:
            _index_remove(self._by_config_map, c, e.key)
        self._default_tls.discard(e.key)

    def _after_store(self, key: ResourceKey, old: Entry | None, new: Entry | None) -> Changes:
        if not self._startup_complete:
            if self.legacy_startup:
                return self._rebuild_hosts()
            return [], []
        if self.legacy_startup:
            return self._rebuild_hosts()
        hosts: set[str] = set()
        for e in (old, new):
            if e is not None:
                hosts.update(e.claims)
        keys = {key}
        if (old is not None and old.shares_hosts) != (new is not None and new.shares_hosts):
            for h in hosts:  # the other claimants become (or stop being) its members or owners
                keys.update(_index_get(self._claims, h))
        return self._resolve_hosts(hosts, keys)

    def _resolve_hosts(self, hosts: set[str], extra_keys: set[ResourceKey]) -> Changes:
        """Incremental resolution: re-decide the owners of `hosts` and re-evaluate who can be affected."""
        keys = set(extra_keys)
        problem_keys = set(extra_keys)
        for h in hosts:
            old_owner = self._hosts.get(h)
            claimants = _index_get(self._claims, h)
            winner = best((self._entries[k] for k in claimants), h)
            if winner is None:
                self._hosts.pop(h, None)
            else:
                self._hosts[h] = winner.key
                keys.add(winner.key)
            # The old and the new owner may see their valid hosts change; when the owner changes, the other
            # claimants keep losing the host but their warnings and problems now name the new winner.
            if old_owner is not None:
                keys.add(old_owner)
            if winner is not None and old_owner != winner.key:
                keys.update(claimants)
            problem_keys.update(_index_get(self._children_by_host, h))
        problem_keys.update(keys)
        return self._diff(keys, problem_keys)

    def _rebuild_hosts(self) -> Changes:
        """Full resolution from scratch (NIC's `rebuildHosts`): O(number of resources)."""
        hosts: dict[str, ResourceKey] = {}
        for key, e in self._entries.items():  # any order: ownership is a total order
            if e.role == "child":
                continue
            for h in e.claims:
                holder = hosts.get(h)
                if holder is None or best((e, self._entries[holder]), h) is e:
                    hosts[h] = key
        self._hosts = hosts
        keys = set(self._entries) | set(self._resources)
        return self._diff(keys, keys | set(self._problems))

    def _children_for_host(self, host: str) -> list[Entry]:
        if self.legacy_startup:  # pre-5.5: scan every resource
            return [e for k, e in sorted(self._entries.items()) if e.role == "child" and e.claims[0] == host]
        return [self._entries[k] for k in sorted(_index_get(self._children_by_host, host))]

    def _taken_warning(self, host: str) -> str:
        owner = self._hosts.get(host)
        if owner is None:
            return host_taken_warning(host)
        return host_taken_warning(host, owner.ns_name, self.api_kind(owner))

    def _build(self, key: ResourceKey) -> Resource | None:
        """The resource for `key` under the current ownership, or None when it is not configured."""
        e = self._entries.get(key)
        if e is None or e.role == "child":
            return None
        valid_hosts = {h: self._hosts.get(h) == key for h in e.hosts}
        owned = [self._hosts.get(c) == key for c in e.claims if c not in e.weak_hosts]
        if not any(owned):
            return None
        shared = self._shared_hosts(e)
        warnings = [self._taken_warning(h) for h, ok in valid_hosts.items() if not ok and h not in shared]
        for h in e.weak_hosts:  # (the kind says what it does without one)
            valid_hosts[h] = self._hosts.get(h) == key
        children = self._children_for_host(e.hosts[0]) if e.role == "parent" and e.hosts else []
        if e.role == "regular" and self._children_by_host:  # (Ingress canaries)
            children = [c for h in dict.fromkeys(e.hosts)
                        for k in sorted(_index_get(self._children_by_host, h))
                        if (c := self._entries[k]) and self._parent_of(c) == key]
        if e.shares_hosts:
            children = [*children, *self._members(e, valid_hosts)]
        return self._kinds[key.kind].build(e, valid_hosts, warnings, children)

    def _lost_all_hosts(self, key: ResourceKey, old: Resource) -> Resource:
        """The resource a Delete reports: for a resource still stored that lost every host, its current state
        with one warning per host naming the winner (NIC re-points the change at the new resource); else the
        old resource."""
        e = self._entries.get(key)
        if e is None or e.role == "child" or not e.hosts:
            return old
        shared = self._shared_hosts(e)  # (served through their owners: no warning, no Rejected event)
        return old.lost_all_hosts(e.obj, [self._taken_warning(h) for h in e.hosts if h not in shared])

    def _problem(self, key: ResourceKey) -> ConfigurationProblem | None:
        e = self._entries.get(key)
        if e is None:
            return None
        if e.role == "child":
            parent = self._parent_of(e)
            if parent is None:
                return self._kinds[key.kind].child_problem(e)
            configured = self._resources.get(parent)
            if configured is not None and all(k != key for k, _ in configured.children()):
                return ConfigurationProblem(e.obj, False, REASON_IGNORED, f"{self.api_kind(parent)} "
                                            f"{parent.ns_name} ignores {self.api_kind(key)}", key=key)
            return None
        if not any(self._hosts.get(c) == key for c in e.claims if c not in e.weak_hosts):
            if self._shared_hosts(e):
                return None  # its paths are served by the owners of its hosts
            if not e.hosts:  # a stream resource: only listener claims
                message = "; ".join(listener_taken_message(c, (o.ns_name, self.api_kind(o))
                                                           if (o := self._hosts.get(c)) else None)
                                    for c in e.claims)
                return ConfigurationProblem(e.obj, False, REASON_REJECTED, message, key=key)
            taken = {h: (o.ns_name, self.api_kind(o)) if (o := self._hosts.get(h)) else None
                     for h in e.hosts}
            taken_message = getattr(self._kinds[key.kind], "host_taken_message", None)
            message = taken_message(taken) if callable(taken_message) else all_hosts_taken_message(taken)
            return ConfigurationProblem(e.obj, False, REASON_REJECTED, message, key=key)
        return None

    def _diff(self, keys: set[ResourceKey], problem_keys: set[ResourceKey]) -> Changes:
        """Rebuild `keys` and re-evaluate the problems of `problem_keys` (a superset of `keys`)."""
        deletes: list[ResourceChange] = []
        updates: list[ResourceChange] = []
        ordered = sorted(problem_keys)
        for key in ordered:
            if key not in keys:
                continue
            old = self._resources.get(key)
            new = self._build(key)
            if new is not None:
                self._resources[key] = new
                if old is None or not old.is_equal(new):
                    updates.append(ResourceChange("AddOrUpdate", new))
            elif old is not None:
                del self._resources[key]
                deletes.append(ResourceChange("Delete", self._lost_all_hosts(key, old)))
        problems: list[ConfigurationProblem] = []
        for key in ordered:
            old_p = self._problems.get(key)
            new_p = self._problem(key)
            if new_p is None:
                self._problems.pop(key, None)
                continue
            self._problems[key] = new_p
            if old_p is None or not old_p.same_as(new_p):
                problems.append(new_p)
        return deletes + updates, problems
