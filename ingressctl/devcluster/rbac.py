"""RBAC authorization as kube-apiserver's RBAC authorizer decides it, over plain Role, ClusterRole,
RoleBinding and ClusterRoleBinding objects.

Guarantees:
- A request is allowed when a ClusterRoleBinding, or a RoleBinding in the request's namespace, binds the user
  (a User subject of its name, a Group subject of one of its groups, or a ServiceAccount subject that is this
  ServiceAccount) to a role with one rule that matches: the verb, the API group and the resource (with its
  subresource as `resource/subresource`; `*` matches everything, `*/sub` every resource's `sub`), and,
  when the rule names resourceNames, the request's object name. A RoleBinding grants nothing outside its
  namespace, also when it refers to a ClusterRole. Non-resource URLs (`/healthz`, ...) are matched against
  the nonResourceURLs of ClusterRoles bound by ClusterRoleBindings (a trailing `*` is a prefix match).
- A denial carries kube-apiserver's message (`forbidden()`), with the reason `RBAC: ...` when a binding refers
  to a role that does not exist. Aggregated ClusterRoles are not computed (their rules are used as stored).
- The decision names the binding, role and rule that allowed the request, for least-privilege reports.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ingressctl.devcluster.errors import StatusError

Obj = dict[str, Any]
SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""

    @property
    def service_account(self) -> tuple[str, str] | None:
        """(namespace, name) when this is a ServiceAccount's identity."""
        if not self.name.startswith(SA_PREFIX):
            return None
        namespace, _, name = self.name[len(SA_PREFIX):].partition(":")
        return (namespace, name) if namespace and name else None


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    """The identity kube-apiserver gives a ServiceAccount token."""
    return UserInfo(f"{SA_PREFIX}{namespace}:{name}",
                    ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
                    uid)


@dataclass(frozen=True)
class Attributes:
    """What a request asks to do (authorizer.Attributes)."""

    verb: str
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""                 # non-resource requests only
    resource_request: bool = True


@dataclass(frozen=True)
class Grant:
    """The rule that allowed a request: binding and role as `<Kind>/<namespace>/<name>`, the rule's index."""

    binding: str
    role: str
    rule: int


@dataclass(frozen=True)
class Decision:
    allowed: bool
    grant: Grant | None = None
    reason: str = ""


@dataclass
class Policy:
    """A snapshot of the RBAC objects (as the API returns them, without kind/apiVersion)."""

    roles: Sequence[Obj] = ()
    cluster_roles: Sequence[Obj] = ()
    role_bindings: Sequence[Obj] = ()
    cluster_role_bindings: Sequence[Obj] = ()
    _roles: dict[tuple[str, str], Obj] = field(default_factory=dict, init=False)
    _cluster_roles: dict[str, Obj] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._roles = {(_meta(r, "namespace"), _meta(r, "name")): r for r in self.roles}
        self._cluster_roles = {_meta(r, "name"): r for r in self.cluster_roles}

    def authorize(self, user: UserInfo, attrs: Attributes) -> Decision:
        errors: list[str] = []
        for binding in self.cluster_role_bindings:
            decision = self._check(user, attrs, binding, "ClusterRoleBinding", "", errors)
            if decision is not None:
                return decision
        if attrs.namespace and attrs.resource_request:
            for binding in self.role_bindings:
                if _meta(binding, "namespace") == attrs.namespace:
                    decision = self._check(user, attrs, binding, "RoleBinding", attrs.namespace, errors)
                    if decision is not None:
                        return decision
        return Decision(False, reason=f"RBAC: {', '.join(errors)}" if errors else "")

    def _check(self, user: UserInfo, attrs: Attributes, binding: Obj, binding_kind: str, namespace: str,
               errors: list[str]) -> Decision | None:
        subjects = [s for s in binding.get("subjects") or [] if isinstance(s, dict)]
        if not any(_applies(s, user, namespace) for s in subjects):
            return None
        ref = binding.get("roleRef")
        if not isinstance(ref, dict):
            return None
        ref_kind, ref_name = str(ref.get("kind", "")), str(ref.get("name", ""))
        if ref_kind == "ClusterRole":
            role = self._cluster_roles.get(ref_name)
            role_id = f"ClusterRole/{ref_name}"
            missing = f'clusterrole.rbac.authorization.k8s.io "{ref_name}" not found'
        elif ref_kind == "Role" and namespace:
            role = self._roles.get((namespace, ref_name))
            role_id = f"Role/{namespace}/{ref_name}"
            missing = f'role.rbac.authorization.k8s.io "{ref_name}" not found'
        else:
            return None
        if role is None:
            errors.append(missing)
            return None
        for index, rule in enumerate(role.get("rules") or []):
            if isinstance(rule, dict) and rule_allows(rule, attrs):
                binding_id = "/".join(x for x in (binding_kind, namespace, _meta(binding, "name")) if x)
                return Decision(True, Grant(binding_id, role_id, index))
        return None


def _meta(obj: Obj, key: str) -> str:
    meta = obj.get("metadata")
    return str(meta.get(key, "") or "") if isinstance(meta, dict) else ""


def _applies(subject: Obj, user: UserInfo, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(name == user.name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user.name == f"{SA_PREFIX}{namespace}:{name}"
    return False


def _has(values: Any, wanted: str) -> bool:
    return isinstance(values, list) and ("*" in values or wanted in values)


def _resource_matches(rule_resources: Any, resource: str, subresource: str) -> bool:
    if not isinstance(rule_resources, list):
        return False
    combined = f"{resource}/{subresource}" if subresource else resource
    for r in rule_resources:
        if r == "*" or r == combined:
            return True
        if subresource and r == f"*/{subresource}":
            return True
    return False


def _non_resource_matches(urls: Any, path: str) -> bool:
    if not isinstance(urls, list):
        return False
    for url in urls:
        if url == "*" or url == path:
            return True
        if isinstance(url, str) and url.endswith("*") and path.startswith(url[:-1]):
            return True
    return False


def rule_allows(rule: Obj, attrs: Attributes) -> bool:
    """One PolicyRule against one request (rbac.RuleAllows)."""
    if not _has(rule.get("verbs"), attrs.verb):
        return False
    if not attrs.resource_request:
        return _non_resource_matches(rule.get("nonResourceURLs"), attrs.path)
    if not _has(rule.get("apiGroups"), attrs.group):
        return False
    if not _resource_matches(rule.get("resources"), attrs.resource, attrs.subresource):
        return False
    names = rule.get("resourceNames")
    return not names or (isinstance(names, list) and attrs.name in names)


def forbidden(user: UserInfo, attrs: Attributes, reason: str = "") -> StatusError:
    """403 Forbidden with kube-apiserver's message and details."""
    if not attrs.resource_request:
        what = f'User "{user.name}" cannot {attrs.verb} path "{attrs.path}"'
        message = f"forbidden: {what}" + (f": {reason}" if reason else "")
        return StatusError(403, "Forbidden", message, {})
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = (f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope")
    what = (f'User "{user.name}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.group}" '
            f"{where}") + (f": {reason}" if reason else "")
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    prefix = f'{qualified} "{attrs.name}"' if attrs.name else qualified
    details: dict[str, Any] = {}
    if attrs.name:
        details["name"] = attrs.name
    if attrs.group:
        details["group"] = attrs.group
    details["kind"] = attrs.resource
    return StatusError(403, "Forbidden", f"{prefix} is forbidden: {what}", details)


def granted_permissions(rules: Iterable[Obj]) -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) for every combination the rules spell out (wildcards kept as `*`)."""
    return {(g, r, v) for rule in rules for g in rule.get("apiGroups") or []
            for r in rule.get("resources") or [] for v in rule.get("verbs") or []}
