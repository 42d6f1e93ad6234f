"""The Configuration: the valid Ingresses of our class, host ownership and mergeable Ingresses (NIC's model).

Guarantees:
- Host ownership: of all valid, non-minion Ingresses claiming a host, the one with the OLDEST
  creationTimestamp (second resolution) owns it; on a tie the greater `metadata.uid` string wins. The result
  does not depend on the order in which Ingresses arrive or are deleted. An Ingress that loses some hosts
  keeps the others and gets one warning per lost host, naming the winning Ingress; one that loses all of them
  is not configured and is reported as a problem naming each host and its winner (and, if it was configured,
  its Delete carries those warnings). Warnings and problems always name the current winner.
- The catch-all: an Ingress without rules and with a `defaultBackend` claims `CATCH_ALL_HOST`, resolved like
  a host except on a tie (oldest wins, then the smaller `ns/name`); the others are problems naming the
  winner and take over when it goes. (NIC rejects such an Ingress; the Ingress spec says its default backend
  serves what no rule matches.)
- Mergeable Ingresses: a master owns its host like a regular Ingress; minions (any namespace) attach to the
  master owning their host; a path claimed by several minions goes to the oldest (then greater UID) minion.
  A minion whose host is not owned by a master is a `NoIngressMasterFound` problem.
- `add_or_update_ingress` / `delete_ingress` return ResourceChanges (all Deletes first, each resource at most
  once, sorted by key within each group) and ConfigurationProblems (only new or changed ones), computed by
  re-resolving just the hosts the changed Ingress touches: steady-state work is proportional to the Ingresses
  that share those hosts, not to the size of the cluster.
- Start-up (see docs/architecture.md): until `set_startup_complete()`, adds, updates and deletes only
  validate and store (constant work per Ingress: no host resolution); `set_startup_complete()` runs ONE full
  resolution and returns every configured resource as an AddOrUpdate plus every problem.
  `legacy_startup=True` keeps the pre-5.5 behaviour (a full rebuild on every change, minions found by
  scanning) as a benchmark baseline; every mode reaches the same state.
- Lookups by Service and Secret use indexes maintained on every store change; they return only configured
  resources (a minion's master stands in for the minion). Per-Ingress state is kept small (slots, no stored
  sort keys, one string instead of a set in an index entry used by one Ingress): it is held for every
  Ingress in the cluster.
- Pure and single-threaded: the one sync thread owns it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, ClassVar, Literal

from ingressctl.configs.ingress_ex import CATCH_ALL_HOST
from ingressctl.controller.validation import (
    BASIC_AUTH_SECRET,
    INGRESS_CLASS_ANNOTATION,
    aggregate_message,
    get_annotations,
    mergeable_type,
    path_conflict_key,
    spec_service_names,
    validate_ingress,
)
from ingressctl.logging import get_logger

log = get_logger(__name__)

REASON_REJECTED = "Rejected"
REASON_NO_INGRESS_MASTER_FOUND = "NoIngressMasterFound"
MESSAGE_ALL_HOSTS_TAKEN = "All hosts are taken by other resources"
MESSAGE_NO_MASTER = "Ingress master is invalid or doesn't exist"

_NO_TIMESTAMP = 2**62  # an object without a creationTimestamp loses to every object that has one


CATCH_ALL_LABEL = "the catch-all (an Ingress without rules, with a defaultBackend)"


def claimed_hosts(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The hosts an Ingress's spec claims: its rules' hosts, or the catch-all for an Ingress without rules
    that has a defaultBackend (the Ingress spec: it serves requests no rule matches)."""
    rules = spec.get("rules") or []
    if not rules and spec.get("defaultBackend") is not None:
        return (CATCH_ALL_HOST,)
    return tuple(str((r or {}).get("host", "")) for r in rules)


def _host_label(host: str) -> str:
    return CATCH_ALL_LABEL if host == CATCH_ALL_HOST else f"host {host}"


def host_taken_warning(host: str, winner: str | None = None) -> str:
    """NIC's warning, naming the winning Ingress when known."""
    if winner:
        return f"{_host_label(host)} is taken by another resource (Ingress {winner})"
    return f"{_host_label(host)} is taken by another resource"


def all_hosts_taken_message(taken: Mapping[str, str | None]) -> str:
    """NIC's problem message, followed by each host and the Ingress that holds it."""
    details = ", ".join(f"{_host_label(h)} by Ingress {w}" if w else _host_label(h) for h, w in taken.items())
    return f"{MESSAGE_ALL_HOSTS_TAKEN}: {details}" if details else MESSAGE_ALL_HOSTS_TAKEN


def path_taken_warning(path: str) -> str:
    return f"path {path} is taken by another resource"


def ingress_key(ing: Mapping[str, Any]) -> str:
    meta = ing.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


# ---------------------------------------------------------------------------------------------------------
# Public types (NIC's Resource / ResourceChange / ConfigurationProblem).


@dataclass(slots=True)
class MinionConfiguration:
    """A minion attached to a master, with the paths it won (`valid_paths[path]`)."""

    ingress: dict[str, Any]
    key: str
    valid_paths: dict[str, bool] = field(default_factory=dict)


@dataclass(slots=True)
class IngressConfiguration:
    """A configured Ingress (regular or master) and the hosts it owns."""

    kind: ClassVar[str] = "Ingress"

    ingress: dict[str, Any]
    key: str
    valid_hosts: dict[str, bool] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    is_master: bool = False
    is_minion: bool = False
    minions: list[MinionConfiguration] = field(default_factory=list)
    valid_minion_paths: dict[str, bool] = field(default_factory=dict)  # unused for regular/master resources
    child_warnings: dict[str, list[str]] = field(default_factory=dict)  # minion key -> path conflicts

    @property
    def key_with_kind(self) -> str:
        return f"{self.kind}/{self.key}"

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[1]

    def is_equal(self, other: IngressConfiguration) -> bool:
        """Whether re-rendering could not change anything (NIC's `IsEqual`, also comparing uid and spec)."""
        return (
            self.key == other.key
            and _same_object(self.ingress, other.ingress)
            and self.valid_hosts == other.valid_hosts
            and self.is_master == other.is_master
            and len(self.minions) == len(other.minions)
            and all(a.key == b.key and a.valid_paths == b.valid_paths and _same_object(a.ingress, b.ingress)
                    for a, b in zip(self.minions, other.minions, strict=True))
        )


def _same_object(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    ma, mb = a.get("metadata") or {}, b.get("metadata") or {}
    return (ma.get("uid") == mb.get("uid") and ma.get("generation") == mb.get("generation")
            and (ma.get("annotations") or {}) == (mb.get("annotations") or {})
            and a.get("spec") == b.get("spec"))


@dataclass
class ResourceChange:
    op: Literal["AddOrUpdate", "Delete"]
    resource: IngressConfiguration
    error: str = ""


@dataclass
class ConfigurationProblem:
    obj: dict[str, Any]
    is_error: bool
    reason: str
    message: str

    def same_as(self, other: ConfigurationProblem) -> bool:
        return (self.is_error, self.reason, self.message) == (other.is_error, other.reason, other.message)


Changes = tuple[list[ResourceChange], list[ConfigurationProblem]]


# ---------------------------------------------------------------------------------------------------------
# Internal state.


def creation_seconds(ing: Mapping[str, Any]) -> int:
    """metadata.creationTimestamp in whole seconds since the epoch (a missing/bad one sorts last)."""
    ts = (ing.get("metadata") or {}).get("creationTimestamp")
    if not isinstance(ts, str) or not ts:
        return _NO_TIMESTAMP
    try:
        return int(datetime.fromisoformat(ts).timestamp())
    except ValueError:
        return _NO_TIMESTAMP


class _Descending(str):
    """A string that sorts in reverse order (for "the greater UID wins" in an ascending sort key)."""

    __slots__ = ()

    def __lt__(self, other: str) -> bool:
        return str.__gt__(self, other)

    def __gt__(self, other: str) -> bool:
        return str.__lt__(self, other)


@dataclass(frozen=True, slots=True)
class _Entry:
    """A stored valid Ingress with what the indexes need, computed once (kept small: one per Ingress)."""

    ing: dict[str, Any]
    key: str
    seconds: int
    uid: str
    kind: Literal["regular", "master", "minion"]
    hosts: tuple[str, ...]
    services: tuple[tuple[str, str], ...]      # unique
    secrets: tuple[tuple[str, str], ...]       # unique
    uses_default_tls_secret: bool

    def wins(self, other: _Entry) -> bool:
        """Older creationTimestamp wins; on a tie the greater UID (then, for equal UIDs, the smaller key)."""
        return _rank_of(self) < _rank_of(other)


def _make_entry(key: str, ing: dict[str, Any]) -> _Entry:
    meta = ing.get("metadata") or {}
    ns = str(meta.get("namespace", ""))
    spec = ing.get("spec") or {}
    mtype = mergeable_type(ing)
    kind: Literal["regular", "master", "minion"] = (
        "master" if mtype == "master" else "minion" if mtype == "minion" else "regular")
    hosts = claimed_hosts(spec)
    secrets: set[tuple[str, str]] = set()
    uses_default = False
    for tls in spec.get("tls") or []:
        name = (tls or {}).get("secretName") or ""
        if name:
            secrets.add((ns, name))
        else:
            uses_default = True
    auth = get_annotations(ing).get(BASIC_AUTH_SECRET)
    if auth:
        secrets.add((ns, auth))
    seconds, uid = creation_seconds(ing), str(meta.get("uid", ""))
    return _Entry(
        ing=ing, key=key, seconds=seconds, uid=uid, kind=kind, hosts=hosts,
        services=tuple(sorted({(ns, s) for s in spec_service_names(ing)})), secrets=tuple(sorted(secrets)),
        uses_default_tls_secret=uses_default,
    )


def _rank_of(e: _Entry) -> tuple[int, _Descending, str]:
    """A sort key ordering winners first (computed when compared, not stored: one Ingress costs less)."""
    return e.seconds, _Descending(e.uid), e.key


def _catch_all_rank(e: _Entry) -> tuple[int, str]:
    """The catch-all goes to the oldest, then the smaller namespace/name: predictable for its users."""
    return e.seconds, e.key


def _best(entries: Iterable[_Entry], host: str | None = None) -> _Entry | None:
    return min(entries, key=_catch_all_rank if host == CATCH_ALL_HOST else _rank_of, default=None)


# Indexes map a key (host, Service, Secret) to the Ingress keys that use it. Nearly always one Ingress per
# key: store it as a plain string and switch to a set only for a second one (a set costs ~200 bytes).
Index = dict[Any, "str | set[str]"]


def _index_add(index: Index, k: Any, key: str) -> None:
    cur = index.get(k)
    if cur is None:
        index[k] = key
    elif isinstance(cur, str):
        if cur != key:
            index[k] = {cur, key}
    else:
        cur.add(key)


def _index_remove(index: Index, k: Any, key: str) -> None:
    cur = index.get(k)
    if cur is None:
        return
    if isinstance(cur, str):
        if cur == key:
            del index[k]
        return
    cur.discard(key)
    if len(cur) == 1:
        index[k] = next(iter(cur))
    elif not cur:
        del index[k]


def _index_get(index: Index, k: Any) -> tuple[str, ...] | set[str]:
    cur = index.get(k)
    if cur is None:
        return ()
    return (cur,) if isinstance(cur, str) else cur


class Configuration:
    """Valid Ingresses of one class, resolved into configured resources (see the module docstring)."""

    def __init__(self, *, ingress_class: str, is_controller_ingress_class: bool = True,
                 legacy_startup: bool = False, is_plus: bool = False, snippets_enabled: bool = False) -> None:
        self.ingress_class = ingress_class
        self.is_controller_ingress_class = is_controller_ingress_class
        self.legacy_startup = legacy_startup
        self.is_plus = is_plus
        self.snippets_enabled = snippets_enabled
        self._startup_complete = False

        self._entries: dict[str, _Entry] = {}
        self._claims: Index = {}  # host -> regular/master keys with a rule for it
        self._minions_by_host: Index = {}
        self._by_service: Index = {}  # (namespace, name) -> keys
        self._by_secret: Index = {}
        self._default_tls: set[str] = set()

        self._hosts: dict[str, str] = {}  # host -> owning key (resolved state)
        self._resources: dict[str, IngressConfiguration] = {}  # configured resources as last reported
        self._problems: dict[str, ConfigurationProblem] = {}  # host problems as last reported

    # ------------------------------------------------------------------------------------------------ API

    @property
    def startup_complete(self) -> bool:
        return self._startup_complete

    def has_correct_ingress_class(self, ing: Mapping[str, Any]) -> bool:
        """The class annotation beats spec.ingressClassName; an Ingress without a class is not ours."""
        cls = get_annotations(ing).get(INGRESS_CLASS_ANNOTATION, "")
        if not cls:
            cls = str((ing.get("spec") or {}).get("ingressClassName") or "")
        return self.is_controller_ingress_class and cls == self.ingress_class

    def add_or_update_ingress(self, ing: dict[str, Any]) -> Changes:
        """Validate and store (or remove) the Ingress, then resolve the hosts it touches."""
        key = ingress_key(ing)
        errors: str = ""
        new: _Entry | None = None
        if self.has_correct_ingress_class(ing):
            try:
                errors = aggregate_message(validate_ingress(ing, is_plus=self.is_plus,
                                                            snippets_enabled=self.snippets_enabled))
                if not errors:
                    new = _make_entry(key, ing)
            except Exception as e:  # a validator bug must reject one object, not kill the sync thread
                log.error("validating ingress failed", ingress=key, error=repr(e))
                errors, new = f"internal error while validating: {e!r}", None
        old = self._store(key, new)
        changes, problems = self._after_store(key, old, new)
        if errors:
            for change in changes:
                if change.resource.key == key:
                    change.error = errors
                    break
            else:
                problems.append(ConfigurationProblem(obj=ing, is_error=True, reason=REASON_REJECTED,
                                                     message=errors))
        return changes, problems

    def delete_ingress(self, key: str) -> Changes:
        """Forget the Ingress; its hosts pass to the next owner."""
        if key not in self._entries:
            return [], []
        old = self._store(key, None)
        return self._after_store(key, old, None)

    def set_startup_complete(self) -> Changes:
        """End start-up: resolve every host once; return every configured resource and every problem."""
        if self._startup_complete:
            return [], []
        self._startup_complete = True
        if self.legacy_startup:
            # Already resolved on every change; problems were reported as they appeared.
            return [ResourceChange("AddOrUpdate", r) for r in self.get_resources()], []
        changes, problems = self._rebuild_hosts()
        return changes, problems

    def get_resources(self) -> list[IngressConfiguration]:
        """Every configured resource, sorted by key."""
        return [self._resources[k] for k in sorted(self._resources)]

    def get_resource(self, key: str) -> IngressConfiguration | None:
        return self._resources.get(key)

    def get_ingress(self, key: str) -> dict[str, Any] | None:
        """A stored valid Ingress of our class (configured or not)."""
        e = self._entries.get(key)
        return e.ing if e is not None else None

    def host_owner(self, host: str) -> str | None:
        return self._hosts.get(host)

    def host_problems(self) -> dict[str, ConfigurationProblem]:
        """The current host problems (all hosts taken, orphaned minions) by Ingress key."""
        return dict(self._problems)

    def find_resources_for_service(self, namespace: str, name: str) -> list[IngressConfiguration]:
        """Configured resources whose Ingress (or one of whose minions) references the Service."""
        return self._resolve_keys(_index_get(self._by_service, (namespace, name)))

    def find_resources_for_secret(self, namespace: str, name: str) -> list[IngressConfiguration]:
        """Configured resources referencing the Secret (spec.tls secretName, nginx.org/basic-auth-secret)."""
        return self._resolve_keys(_index_get(self._by_secret, (namespace, name)))

    def find_resources_for_default_tls_secret(self) -> list[IngressConfiguration]:
        """Configured resources with a spec.tls entry without secretName (they use the wildcard secret)."""
        return self._resolve_keys(self._default_tls)

    # ------------------------------------------------------------------------------------------ internals

    def _resolve_keys(self, keys: Iterable[str]) -> list[IngressConfiguration]:
        found: dict[str, IngressConfiguration] = {}
        for k in keys:
            res = self._resources.get(k)
            if res is None:
                e = self._entries.get(k)
                if e is not None and e.kind == "minion":
                    owner = self._hosts.get(e.hosts[0])
                    master = self._resources.get(owner) if owner is not None else None
                    if master is not None and master.is_master:
                        res = master
            if res is not None:
                found[res.key] = res
        return [found[k] for k in sorted(found)]

    def _store(self, key: str, new: _Entry | None) -> _Entry | None:
        """Replace the stored entry and keep every index in step; returns the old entry."""
        old = self._entries.pop(key, None)
        if old is not None:
            self._unindex(old)
        if new is not None:
            self._entries[key] = new
            self._index(new)
        return old

    def _index(self, e: _Entry) -> None:
        if e.kind == "minion":
            _index_add(self._minions_by_host, e.hosts[0], e.key)
        else:
            for h in e.hosts:
                _index_add(self._claims, h, e.key)
        for s in e.services:
            _index_add(self._by_service, s, e.key)
        for s in e.secrets:
            _index_add(self._by_secret, s, e.key)
        if e.uses_default_tls_secret:
            self._default_tls.add(e.key)

    def _unindex(self, e: _Entry) -> None:
        if e.kind == "minion":
            _index_remove(self._minions_by_host, e.hosts[0], e.key)
        else:
            for h in e.hosts:
                _index_remove(self._claims, h, e.key)
        for s in e.services:
            _index_remove(self._by_service, s, e.key)
        for s in e.secrets:
            _index_remove(self._by_secret, s, e.key)
        self._default_tls.discard(e.key)

    def _after_store(self, key: str, old: _Entry | None, new: _Entry | None) -> Changes:
        if not self._startup_complete:
            if self.legacy_startup:
                return self._rebuild_hosts()
            return [], []
        if self.legacy_startup:
            return self._rebuild_hosts()
        hosts: set[str] = set()
        for e in (old, new):
            if e is not None:
                hosts.update(e.hosts)
        return self._resolve_hosts(hosts, {key})

    def _resolve_hosts(self, hosts: set[str], extra_keys: set[str]) -> Changes:
        """Incremental resolution: re-decide the owners of `hosts` and re-evaluate who can be affected."""
        keys = set(extra_keys)
        problem_keys = set(extra_keys)
        for h in hosts:
            old_owner = self._hosts.get(h)
            claimants = _index_get(self._claims, h)
            best = _best((self._entries[k] for k in claimants), h)
            if best is None:
                self._hosts.pop(h, None)
            else:
                self._hosts[h] = best.key
                keys.add(best.key)
            # The old and the new owner may see their valid hosts change; when the owner changes, the other
            # claimants keep losing the host but their warnings and problems now name the new winner.
            if old_owner is not None:
                keys.add(old_owner)
            if best is not None and old_owner != best.key:
                keys.update(claimants)
            problem_keys.update(_index_get(self._minions_by_host, h))
        problem_keys.update(keys)
        return self._diff(keys, problem_keys)

    def _rebuild_hosts(self) -> Changes:
        """Full resolution from scratch (NIC's `rebuildHosts`): O(number of Ingresses)."""
        hosts: dict[str, str] = {}
        for key in sorted(self._entries):
            e = self._entries[key]
            if e.kind == "minion":
                continue
            for h in e.hosts:
                holder = hosts.get(h)
                if holder is None or _best((e, self._entries[holder]), h) is e:
                    hosts[h] = key
        self._hosts = hosts
        keys = set(self._entries) | set(self._resources)
        return self._diff(keys, keys | set(self._problems))

    def _minions_for_host(self, host: str) -> list[_Entry]:
        if self.legacy_startup:  # pre-5.5: scan every Ingress
            return [e for k, e in sorted(self._entries.items()) if e.kind == "minion" and e.hosts[0] == host]
        return [self._entries[k] for k in sorted(_index_get(self._minions_by_host, host))]

    def _build(self, key: str) -> IngressConfiguration | None:
        """The resource for `key` under the current ownership, or None when it is not configured."""
        e = self._entries.get(key)
        if e is None or e.kind == "minion":
            return None
        valid_hosts = {h: self._hosts.get(h) == key for h in e.hosts}
        if not any(valid_hosts.values()):
            return None
        warnings = [host_taken_warning(h, self._hosts.get(h)) for h, ok in valid_hosts.items() if not ok]
        cfg = IngressConfiguration(ingress=e.ing, key=key, valid_hosts=valid_hosts, warnings=warnings,
                                   is_master=e.kind == "master")
        if cfg.is_master:
            minions = self._minions_for_host(e.hosts[0])
            winners: dict[str, _Entry] = {}
            for m in minions:
                for path, ptype in _minion_paths(m.ing):
                    ck = path_conflict_key(path, ptype)
                    holder = winners.get(ck)
                    if holder is None or m.wins(holder):
                        winners[ck] = m
            for m in minions:
                valid_paths: dict[str, bool] = {}
                for path, ptype in _minion_paths(m.ing):
                    ok = winners[path_conflict_key(path, ptype)] is m
                    valid_paths[path] = ok
                    if not ok:
                        cfg.child_warnings.setdefault(m.key, []).append(path_taken_warning(path))
                cfg.minions.append(MinionConfiguration(ingress=m.ing, key=m.key, valid_paths=valid_paths))
        return cfg

    def _lost_all_hosts(self, key: str, old: IngressConfiguration) -> IngressConfiguration:
        """The resource a Delete reports: for an Ingress still stored that lost every host, its current state
        with one warning per host naming the winner (NIC re-points the change at the new resource); else the
        old resource."""
        e = self._entries.get(key)
        if e is None or e.kind == "minion" or not e.hosts:
            return old
        return replace(old, ingress=e.ing, valid_hosts={h: False for h in e.hosts},
                       warnings=[host_taken_warning(h, self._hosts.get(h)) for h in e.hosts])

    def _problem(self, key: str) -> ConfigurationProblem | None:
        e = self._entries.get(key)
        if e is None:
            return None
        if e.kind == "minion":
            owner = self._hosts.get(e.hosts[0])
            if owner is None or self._entries[owner].kind != "master":
                return ConfigurationProblem(e.ing, False, REASON_NO_INGRESS_MASTER_FOUND, MESSAGE_NO_MASTER)
            return None
        if not any(self._hosts.get(h) == key for h in e.hosts):
            taken = {h: self._hosts.get(h) for h in e.hosts}
            return ConfigurationProblem(e.ing, False, REASON_REJECTED, all_hosts_taken_message(taken))
        return None

    def _diff(self, keys: Iterable[str], problem_keys: Iterable[str]) -> Changes:
        deletes: list[ResourceChange] = []
        updates: list[ResourceChange] = []
        for key in sorted(keys):
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
        for key in sorted(problem_keys):
            old_p = self._problems.get(key)
            new_p = self._problem(key)
            if new_p is None:
                self._problems.pop(key, None)
                continue
            self._problems[key] = new_p
            if old_p is None or not old_p.same_as(new_p):
                problems.append(new_p)
        return deletes + updates, problems


def _minion_paths(ing: Mapping[str, Any]) -> list[tuple[str, str]]:
    rules = (ing.get("spec") or {}).get("rules") or []
    if not rules:
        return []
    paths = ((rules[0] or {}).get("http") or {}).get("paths") or []
    return [(str(p.get("path", "") or ""), str(p.get("pathType", ""))) for p in paths]
