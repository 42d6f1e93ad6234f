"""The Ingress's part of the Configuration: class filter, validation, references, and configured resources
(regular Ingresses, and masters with their minions).

Guarantees:
- An Ingress is ours when its class (the `kubernetes.io/ingress.class` annotation, else
  `spec.ingressClassName`) is one we serve (`controller/ingress_class.py`: ours, and with
  `--ingress-nginx-compat` the ingress-nginx ones); one without a class is not.
- Validation is `validate_ingress` (NIC's rules); references come from the one walk in `ingress_refs`.
- Mergeable Ingresses: a master owns its host like a regular Ingress; minions (any namespace) attach to the
  master owning their host; a path claimed by several minions goes to the oldest (then greater UID) minion,
  the others get `path ... is taken by another resource` as their own warnings. A minion without a master is a
  `NoIngressMasterFound` problem.
- ingress-nginx's canaries (`--ingress-nginx-compat`, `canary: "true"`, not mergeable): a child of the regular
  Ingress owning its first host (`canaries`); without one, a `Rejected` problem naming the host.
- ingress-nginx's shared hosts (`--ingress-nginx-compat`): a regular Ingress of an ingress-nginx class shares
  its hosts with the other such Ingresses (`Claims.shares_hosts`); the owner of a host gets the others as
  `members` (oldest first, each with the hosts it shares with the owner), whose paths its server serves.
- ingress-nginx's from-to-www-redirect: the other name of each host is a weak claim (owned only when no
  resource serves it as a host).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ingressctl.controller.ingress_class import IngressClasses
from ingressctl.controller.model import CATCH_ALL_HOST, Claims, ConfigurationProblem, Entry, Resource
from ingressctl.keys import INGRESS_KIND, ResourceKey
from ingressctl.kinds.ingress.annotation_validation import mergeable_type
from ingressctl.kinds.ingress.ingress_nginx.canary import is_canary
from ingressctl.kinds.ingress.ingress_nginx.default_backend import service_of
from ingressctl.kinds.ingress.ingress_nginx.header_maps import referenced_config_maps
from ingressctl.kinds.ingress.ingress_nginx.www_redirect import www_redirect_names
from ingressctl.kinds.ingress.refs import ingress_secrets, service_names
from ingressctl.kinds.ingress.validation import path_conflict_key, validate_ingress
from ingressctl.kinds.policy.refs import ingress_policy_claims
from ingressctl.validation import aggregate_message

REASON_NO_INGRESS_MASTER_FOUND = "NoIngressMasterFound"
MESSAGE_NO_MASTER = "Ingress master is invalid or doesn't exist"
REASON_REJECTED = "Rejected"
MESSAGE_NO_PRIMARY = ("canary Ingress (nginx.ingress.kubernetes.io/canary): no regular Ingress of the class "
                      "serves host {host}; a canary needs a primary Ingress with the same host and path")


def claimed_hosts(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The hosts an Ingress's spec claims: its rules' hosts, or the catch-all for an Ingress without rules
    that has a defaultBackend (the Ingress spec: it serves requests no rule matches)."""
    rules = spec.get("rules") or []
    if not rules and spec.get("defaultBackend") is not None:
        return (CATCH_ALL_HOST,)
    return tuple(str((r or {}).get("host", "")) for r in rules)


def path_taken_warning(path: str) -> str:
    return f"path {path} is taken by another resource"


@dataclass(slots=True)
class MinionConfiguration:
    """A minion attached to a master, with the paths it won (`valid_paths[path]`)."""

    ingress: dict[str, Any]
    key: str
    valid_paths: dict[str, bool] = field(default_factory=dict)


@dataclass(slots=True)
class MemberConfiguration:
    """An ingress-nginx Ingress whose paths of `hosts` the owner of those hosts serves."""

    ingress: dict[str, Any]
    key: str
    hosts: tuple[str, ...]


@dataclass(slots=True)
class IngressConfiguration:
    """A configured Ingress (regular or master) and the hosts it owns."""

    ingress: dict[str, Any]
    key: str
    valid_hosts: dict[str, bool] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    is_master: bool = False
    is_minion: bool = False
    minions: list[MinionConfiguration] = field(default_factory=list)
    canaries: list[MinionConfiguration] = field(default_factory=list)  # ingress-nginx's canary children
    valid_minion_paths: dict[str, bool] = field(default_factory=dict)  # unused for regular/master resources
    child_warnings: dict[str, list[str]] = field(default_factory=dict)  # minion key -> path conflicts
    members: list[MemberConfiguration] = field(default_factory=list)  # ingress-nginx's shared hosts

    @property
    def key_with_kind(self) -> ResourceKey:
        return ResourceKey(INGRESS_KIND, self.key)

    @property
    def obj(self) -> dict[str, Any]:
        return self.ingress

    @property
    def namespace(self) -> str:
        return self.key_with_kind.namespace

    @property
    def name(self) -> str:
        return self.key_with_kind.name

    def children(self) -> list[tuple[ResourceKey, dict[str, Any]]]:
        attached: list[MinionConfiguration | MemberConfiguration] = [*self.minions, *self.canaries,
                                                                     *self.members]
        return [(ResourceKey(INGRESS_KIND, m.key), m.ingress) for m in attached]

    def lost_all_hosts(self, obj: dict[str, Any], warnings: list[str]) -> IngressConfiguration:
        return replace(self, ingress=obj, valid_hosts={h: False for h in self.valid_hosts_of(obj)},
                       warnings=warnings)

    @staticmethod
    def valid_hosts_of(obj: Mapping[str, Any]) -> tuple[str, ...]:
        return claimed_hosts(obj.get("spec") or {})

    def is_equal(self, other: Resource) -> bool:
        """Whether re-rendering could not change anything (NIC's `IsEqual`, also comparing uid and spec)."""
        return (
            isinstance(other, IngressConfiguration)
            and self.key == other.key
            and _same_object(self.ingress, other.ingress)
            and self.valid_hosts == other.valid_hosts
            and self.is_master == other.is_master
            and len(self.minions) == len(other.minions)
            and all(a.key == b.key and a.valid_paths == b.valid_paths and _same_object(a.ingress, b.ingress)
                    for a, b in zip(self.minions, other.minions, strict=True))
            and len(self.canaries) == len(other.canaries)
            and all(a.key == b.key and _same_object(a.ingress, b.ingress)
                    for a, b in zip(self.canaries, other.canaries, strict=True))
            and len(self.members) == len(other.members)
            and all(a.key == b.key and a.hosts == b.hosts and _same_object(a.ingress, b.ingress)
                    for a, b in zip(self.members, other.members, strict=True))
        )


def _same_object(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    ma, mb = a.get("metadata") or {}, b.get("metadata") or {}
    return (ma.get("uid") == mb.get("uid") and ma.get("generation") == mb.get("generation")
            and (ma.get("annotations") or {}) == (mb.get("annotations") or {})
            and a.get("spec") == b.get("spec"))


class IngressModel:
    """The Ingress kind of the Configuration (`ConfigurationKind`)."""

    kind = INGRESS_KIND
    api_kind = "Ingress"

    def __init__(self, ingress_class: str | IngressClasses, *, is_controller_ingress_class: bool = True,
                 is_plus: bool = False, snippets_enabled: bool = False,
                 allow_empty_host: bool = False) -> None:
        self.classes = ingress_class if isinstance(ingress_class, IngressClasses) else \
            IngressClasses(ingress_class)
        self.ingress_class = self.classes.primary
        self.ingress_nginx_compat = self.classes.compat
        self.is_controller_ingress_class = is_controller_ingress_class
        self.is_plus = is_plus
        self.snippets_enabled = snippets_enabled
        self.allow_empty_host = allow_empty_host  # -allow-empty-ingress-host: a rule without a host is valid

    def is_ours(self, obj: Mapping[str, Any]) -> bool:
        return self.is_controller_ingress_class and self.classes.is_ours(obj)

    def validate(self, obj: Mapping[str, Any]) -> str:
        return aggregate_message(validate_ingress(obj, is_plus=self.is_plus,
                                                  snippets_enabled=self.snippets_enabled,
                                                  allow_empty_host=self.allow_empty_host,
                                                  ingress_nginx_compat=self.ingress_nginx_compat))

    def claims(self, obj: Mapping[str, Any]) -> Claims:
        ns = str((obj.get("metadata") or {}).get("namespace", ""))
        mtype = mergeable_type(obj)
        refs = ingress_secrets(obj, ingress_nginx=self.ingress_nginx_compat)
        canary = self._is_canary(obj)
        return Claims(
            role="parent" if mtype == "master" else "child" if mtype == "minion" or canary else "regular",
            hosts=claimed_hosts(obj.get("spec") or {}),
            services=tuple(sorted({(ns, s) for s in service_names(obj) | self._default_backend(obj)})),
            secrets=tuple(sorted({(ns, s) for s in refs.names})),
            uses_default_tls_secret=refs.uses_default_tls,
            policies=ingress_policy_claims(obj),
            weak_hosts=www_redirect_names(obj) if self.ingress_nginx_compat else (),
            shares_hosts=(self.ingress_nginx_compat and mtype not in ("master", "minion") and not canary
                          and self.classes.is_ingress_nginx(obj)),
            config_maps=referenced_config_maps(obj) if self.ingress_nginx_compat else (),
        )

    def build(self, entry: Entry, valid_hosts: dict[str, bool], warnings: list[str],
              children: list[Entry]) -> IngressConfiguration:
        cfg = IngressConfiguration(ingress=entry.obj, key=entry.key.ns_name, valid_hosts=valid_hosts,
                                   warnings=warnings, is_master=entry.role == "parent")
        if not cfg.is_master:
            cfg.canaries = [MinionConfiguration(ingress=c.obj, key=c.key.ns_name) for c in children
                            if c.key.kind == INGRESS_KIND and c.role == "child" and self._is_canary(c.obj)]
            cfg.members = [MemberConfiguration(m.obj, m.key.ns_name,
                                               tuple(h for h in dict.fromkeys(m.hosts) if valid_hosts.get(h)))
                           for m in children if m.key.kind == INGRESS_KIND and m.role == "regular"]
            return cfg
        minions = [m for m in children if m.key.kind == INGRESS_KIND and not self._is_canary(m.obj)]
        winners: dict[str, Entry] = {}
        for m in minions:
            for path, ptype in _minion_paths(m.obj):
                ck = path_conflict_key(path, ptype)
                holder = winners.get(ck)
                if holder is None or m.wins(holder):
                    winners[ck] = m
        for m in minions:
            valid_paths: dict[str, bool] = {}
            for path, ptype in _minion_paths(m.obj):
                ok = winners[path_conflict_key(path, ptype)] is m
                valid_paths[path] = ok
                if not ok:
                    cfg.child_warnings.setdefault(m.key.ns_name, []).append(path_taken_warning(path))
            cfg.minions.append(MinionConfiguration(ingress=m.obj, key=m.key.ns_name, valid_paths=valid_paths))
        return cfg

    def _default_backend(self, obj: Mapping[str, Any]) -> set[str]:
        """ingress-nginx's `default-backend` Service (its endpoints matter too)."""
        svc = service_of(obj) if self.ingress_nginx_compat else ""
        return {svc} if svc else set()

    def _is_canary(self, obj: Mapping[str, Any]) -> bool:
        return (self.ingress_nginx_compat and mergeable_type(obj) not in ("master", "minion")
                and is_canary(obj))

    def child_attaches(self, child: Entry, owner: Entry) -> bool:
        """A minion attaches to a master, a canary to a regular Ingress."""
        return owner.role == ("regular" if self._is_canary(child.obj) else "parent")

    def child_problem(self, entry: Entry) -> ConfigurationProblem:
        if self._is_canary(entry.obj):
            host = entry.claims[0] if entry.claims else ""
            return ConfigurationProblem(entry.obj, False, REASON_REJECTED,
                                        MESSAGE_NO_PRIMARY.format(host=host), key=entry.key)
        return ConfigurationProblem(entry.obj, False, REASON_NO_INGRESS_MASTER_FOUND, MESSAGE_NO_MASTER,
                                    key=entry.key)


def _minion_paths(ing: Mapping[str, Any]) -> list[tuple[str, str]]:
    rules = (ing.get("spec") or {}).get("rules") or []
    if not rules:
        return []
    paths = ((rules[0] or {}).get("http") or {}).get("paths") or []
    return [(str(p.get("path", "") or ""), str(p.get("pathType", ""))) for p in paths]
