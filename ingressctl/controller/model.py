"""The kind-neutral parts of the Configuration's model: NIC's resource interface, stored entries, ownership
rank, problems and the messages about taken hosts.

Guarantees:
- `Resource` is what every configured resource offers (NIC's `Resource`: key with kind, hosts, `is_equal`),
  so the Configuration, the controller's sync loop and its reporter handle every kind alike.
- An `Entry` is computed once per stored valid object from its kind's `Claims` (hosts, listeners, Services,
  Secrets, Policies, ConfigMaps) and is kept small: one exists for every resource in the cluster.
- Ranking: the older creationTimestamp (whole seconds) wins; on a tie a resource that does not share hosts
  beats one that does, then the greater UID (between resources that share hosts, the greater
  namespace/name: ingress-nginx's order, the same on every cluster for Ingresses created together); then
  the smaller key. A total order: the owner never depends on the order resources arrive in.
  An object without a creationTimestamp loses to every object that has one.
- Messages name the winner with its kind, e.g. `host a.com is taken by another resource (Ingress ns/name)`;
  the class-wide catch-all (`CATCH_ALL_HOST`) is named as such.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple, Protocol

from ingressctl.keys import ResourceKey

REASON_REJECTED = "Rejected"
REASON_IGNORED = "Ignored"    # a child its host's configured parent does not take
MESSAGE_ALL_HOSTS_TAKEN = "All hosts are taken by other resources"
_NO_TIMESTAMP = 2**62
Role = Literal["regular", "parent", "child"]
CATCH_ALL_LABEL = "the catch-all (an Ingress without rules, with a defaultBackend)"
# The host of the class-wide catch-all in `IngressEx.valid_hosts`: an Ingress without rules and with a
# defaultBackend that owns it serves every host and path no rule matches. Rule hosts are never empty.
CATCH_ALL_HOST = ""


def host_label(host: str) -> str:
    return CATCH_ALL_LABEL if host == CATCH_ALL_HOST else f"host {host}"


def host_taken_warning(host: str, winner: str | None = None, winner_kind: str = "Ingress") -> str:
    """NIC's warning, naming the winning resource when known."""
    if winner:
        return f"{host_label(host)} is taken by another resource ({winner_kind} {winner})"
    return f"{host_label(host)} is taken by another resource"


def all_hosts_taken_message(taken: Mapping[str, tuple[str, str] | None]) -> str:
    """NIC's problem message, followed by each host and the resource (name, kind) that holds it."""
    details = ", ".join(f"{host_label(h)} by {w[1]} {w[0]}" if w else host_label(h) for h, w in taken.items())
    return f"{MESSAGE_ALL_HOSTS_TAKEN}: {details}" if details else MESSAGE_ALL_HOSTS_TAKEN


HOST_TAKEN = "Host is taken by another resource"


class CustomResourceMessages:
    """NIC's wording for a custom resource's Rejected events and problems (VirtualServer, VirtualServerRoute,
    TransportServer): a kind's Configuration part inherits it."""

    api_kind = ""

    def rejected_message(self, key: str, detail: str) -> str:
        """"VirtualServer ns/name was rejected with error: ..." (or "... with warning(s): ...")."""
        return f"{self.api_kind} {key} was rejected {detail}"

    def host_taken_message(self, taken: Mapping[str, tuple[str, str] | None]) -> str:
        """NIC's "Host is taken by another resource", followed by the resource (name, kind) holding it."""
        details = ", ".join(f"{host_label(h)} by {w[1]} {w[0]}" if w else host_label(h)
                            for h, w in taken.items())
        return f"{HOST_TAKEN}: {details}" if details else HOST_TAKEN


class Resource(Protocol):
    """A configured resource of any kind (NIC's Resource interface)."""

    @property
    def key(self) -> str:
        """"namespace/name", as users see it."""

    @property
    def key_with_kind(self) -> ResourceKey: ...

    @property
    def obj(self) -> dict[str, Any]:
        """The object as last stored."""

    @property
    def valid_hosts(self) -> dict[str, bool]: ...

    @property
    def warnings(self) -> list[str]: ...

    def is_equal(self, other: Resource) -> bool:
        """Whether re-rendering could not change anything."""

    def children(self) -> list[tuple[ResourceKey, dict[str, Any]]]:
        """The objects configured through this resource besides itself (a master's minions), with keys."""

    def lost_all_hosts(self, obj: dict[str, Any], warnings: list[str]) -> Resource:
        """This resource as a Delete reports it when it lost every host: the current object, no valid host."""


@dataclass
class ConfigurationProblem:
    obj: dict[str, Any]
    is_error: bool
    reason: str
    message: str
    key: ResourceKey

    def same_as(self, other: ConfigurationProblem) -> bool:
        return (self.is_error, self.reason, self.message) == (other.is_error, other.reason, other.message)


class Claims(NamedTuple):
    """What a kind extracts from one of its objects (its references)."""

    role: Role
    hosts: tuple[str, ...]
    listeners: tuple[str, ...] = ()                      # stream resources
    services: tuple[tuple[str, str], ...] = ()           # (namespace, name), unique
    secrets: tuple[tuple[str, str], ...] = ()            # (namespace, name), unique
    uses_default_tls_secret: bool = False
    policies: tuple[tuple[str, str], ...] = ()           # (namespace, name) of referenced Policies, unique
    weak_hosts: tuple[str, ...] = ()  # hosts owned only when no resource claims them as a host (redirects)
    # the resource shares its hosts with the other sharing claimants (ingress-nginx's Ingresses): the owner's
    # server also serves their paths
    shares_hosts: bool = False
    config_maps: tuple[tuple[str, str], ...] = ()        # (namespace, name) of ConfigMaps read, unique


def creation_seconds(obj: Mapping[str, Any]) -> int:
    """metadata.creationTimestamp in whole seconds since the epoch (a missing/bad one sorts last)."""
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
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
class Entry:
    """A stored valid object with what the indexes need, computed once."""

    obj: dict[str, Any]
    key: ResourceKey
    seconds: int
    tiebreak: str  # of the rank in one second: metadata.uid, or namespace/name for a resource sharing hosts
    role: Role
    hosts: tuple[str, ...]
    claims: tuple[str, ...]     # hosts, then listener claims (the same tuple when there are no listeners)
    services: tuple[tuple[str, str], ...]
    secrets: tuple[tuple[str, str], ...]
    uses_default_tls_secret: bool
    policies: tuple[tuple[str, str], ...] = ()
    weak_hosts: tuple[str, ...] = ()  # claims that lose to any host claim (in `claims`, not in `hosts`)
    shares_hosts: bool = False  # see `Claims.shares_hosts`
    config_maps: tuple[tuple[str, str], ...] = ()

    def wins(self, other: Entry) -> bool:
        """Whether this entry ranks before `other` (`rank_of`: older first, then see the module docstring)."""
        return rank_of(self) < rank_of(other)


_LISTENER_PREFIX = "listener:"


def listener_with_host(listener: str, host: str = "") -> str:
    """What a stream resource claims (NIC's listener table key: listener and host; a TCP listener's
    TransportServers with hosts are told apart by SNI). A space is in neither a listener name nor a host."""
    return f"{listener} {host}" if host else listener


def listener_claim(listener: str) -> str:
    """The claim a stream resource makes for a listener (`listener_with_host`): listener claims share the
    host index under a prefix no host can have."""
    return _LISTENER_PREFIX + listener


def listener_taken_message(claim: str, winner: tuple[str, str] | None) -> str:
    """NIC's problem message for a lost listener claim ("empty host" for a claim without a host), naming the
    winner (name, kind) when known."""
    listener, _, host = claim.removeprefix(_LISTENER_PREFIX).partition(" ")
    msg = f"Listener {listener} with host {host or 'empty host'} is taken by another resource"
    return f"{msg} ({winner[1]} {winner[0]})" if winner else msg


def make_entry(key: ResourceKey, obj: dict[str, Any], claims: Claims) -> Entry:
    meta = obj.get("metadata") or {}
    all_claims = claims.hosts + tuple(listener_claim(x) for x in claims.listeners) if claims.listeners \
        else claims.hosts
    weak = tuple(h for h in claims.weak_hosts if h not in claims.hosts) if claims.weak_hosts else ()
    if weak:
        all_claims = all_claims + weak
    tiebreak = key.ns_name if claims.shares_hosts else str(meta.get("uid", ""))
    return Entry(obj=obj, key=key, seconds=creation_seconds(obj), tiebreak=tiebreak,
                 role=claims.role, hosts=claims.hosts, claims=all_claims, services=claims.services,
                 secrets=claims.secrets, uses_default_tls_secret=claims.uses_default_tls_secret,
                 policies=claims.policies, weak_hosts=weak, shares_hosts=claims.shares_hosts,
                 config_maps=claims.config_maps)


Rank = tuple[int, bool, _Descending, ResourceKey]


def rank_of(e: Entry) -> Rank:
    """A sort key ordering winners first (computed when compared, not stored: one resource costs less)."""
    return e.seconds, e.shares_hosts, _Descending(e.tiebreak), e.key


def catch_all_rank(e: Entry) -> tuple[int, ResourceKey]:
    """The catch-all goes to the oldest, then the smaller namespace/name: predictable for its users."""
    return e.seconds, e.key


def best(entries: Iterable[Entry], host: str | None = None) -> Entry | None:
    """The owner of `host` among its claimants: a weak claim (`weak_hosts`) only when no other is left."""
    return min(entries, key=catch_all_rank if host == CATCH_ALL_HOST else _weak_rank(host), default=None)


def _weak_rank(host: str | None) -> Callable[[Entry], tuple[bool, Rank]]:
    def rank(e: Entry) -> tuple[bool, Rank]:
        return bool(e.weak_hosts) and host in e.weak_hosts, rank_of(e)
    return rank


def with_users(resources: list[Resource], more: Sequence[Callable[[str, str], list[Resource]]],
               namespace: str, name: str) -> list[Resource]:
    """`resources` and the users of namespace/name that `more` adds (kinds outside the Configuration that
    use a Service or a Secret), each once, sorted by key when `more` added any."""
    if not more:
        return resources
    found = {r.key_with_kind: r for r in resources}
    for users in more:
        found.update((r.key_with_kind, r) for r in users(namespace, name))
    return [found[k] for k in sorted(found)]
