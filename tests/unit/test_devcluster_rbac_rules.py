"""devcluster's RBAC authorizer (rbac.py) and token issuer (auth.py): kube-apiserver's rules and messages."""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.devcluster.auth import ADMIN, AccessControl, TokenIssuer
from ingressctl.devcluster.builtin import DEFAULT_KINDS
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.rbac import (
    Attributes,
    Policy,
    UserInfo,
    forbidden,
    rule_allows,
    service_account_user,
)
from ingressctl.devcluster.registry import Registry
from ingressctl.devcluster.store import Store

SA = service_account_user("edge", "ctl")
OTHER = service_account_user("edge", "other")


def rule(groups: list[str], resources: list[str], verbs: list[str],
         names: list[str] | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names is not None:
        r["resourceNames"] = names
    return r


def obj(name: str, namespace: str = "", **body: Any) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": meta, **body}


def sa_subject(namespace: str = "edge", name: str = "ctl") -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def crb(name: str, role: str, *subjects: dict[str, str]) -> dict[str, Any]:
    return obj(name, roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
               subjects=list(subjects))


def rb(name: str, namespace: str, kind: str, role: str, *subjects: dict[str, str]) -> dict[str, Any]:
    return obj(name, namespace, roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
               subjects=list(subjects))


@pytest.mark.parametrize(("r", "attrs", "allowed"), [
    (rule([""], ["services"], ["list"]), Attributes("list", "", resource="services"), True),
    (rule([""], ["services"], ["list"]), Attributes("watch", "", resource="services"), False),
    (rule([""], ["services"], ["*"]), Attributes("watch", "", resource="services"), True),
    (rule(["apps"], ["services"], ["list"]), Attributes("list", "", resource="services"), False),
    (rule(["*"], ["services"], ["list"]), Attributes("list", "apps", resource="services"), True),
    # Subresources are separate resources: `ingresses` does not grant `ingresses/status`, nor the reverse.
    (rule(["networking.k8s.io"], ["ingresses"], ["update"]),
     Attributes("update", "networking.k8s.io", resource="ingresses", subresource="status"), False),
    (rule(["networking.k8s.io"], ["ingresses/status"], ["update"]),
     Attributes("update", "networking.k8s.io", resource="ingresses", subresource="status"), True),
    (rule(["networking.k8s.io"], ["ingresses/status"], ["update"]),
     Attributes("update", "networking.k8s.io", resource="ingresses"), False),
    (rule(["*"], ["*/status"], ["update"]), Attributes("update", "apps", resource="deployments",
                                                        subresource="status"), True),
    (rule(["*"], ["*"], ["update"]), Attributes("update", "apps", resource="deployments",
                                                subresource="status"), True),
    # resourceNames restrict to named requests: a list or create (no name) is not allowed by such a rule.
    (rule(["coordination.k8s.io"], ["leases"], ["get"], ["lock"]),
     Attributes("get", "coordination.k8s.io", resource="leases", name="lock"), True),
    (rule(["coordination.k8s.io"], ["leases"], ["get"], ["lock"]),
     Attributes("get", "coordination.k8s.io", resource="leases", name="other"), False),
    (rule(["coordination.k8s.io"], ["leases"], ["create"], ["lock"]),
     Attributes("create", "coordination.k8s.io", resource="leases"), False),
    ({"nonResourceURLs": ["/healthz/*"], "verbs": ["get"]},
     Attributes("get", path="/healthz/ping", resource_request=False), True),
    ({"nonResourceURLs": ["/healthz"], "verbs": ["get"]},
     Attributes("get", path="/metrics", resource_request=False), False),
])
def test_rule_matching(r: dict[str, Any], attrs: Attributes, allowed: bool) -> None:
    assert rule_allows(r, attrs) is allowed


def test_cluster_role_binding_allows_everywhere_role_binding_only_in_its_namespace() -> None:
    read = obj("read", rules=[rule([""], ["configmaps"], ["get", "list"])])
    policy = Policy(cluster_roles=[read], cluster_role_bindings=[crb("all", "read", sa_subject())])
    assert policy.authorize(SA, Attributes("list", resource="configmaps", namespace="x")).allowed
    assert policy.authorize(SA, Attributes("list", resource="configmaps")).allowed
    assert not policy.authorize(OTHER, Attributes("list", resource="configmaps")).allowed

    # A RoleBinding to the same ClusterRole grants it in the binding's namespace only, never cluster-wide.
    policy = Policy(cluster_roles=[read],
                    role_bindings=[rb("b", "edge", "ClusterRole", "read", sa_subject())])
    decision = policy.authorize(SA, Attributes("list", resource="configmaps", namespace="edge"))
    assert decision.allowed and decision.grant is not None
    assert (decision.grant.binding, decision.grant.role, decision.grant.rule) == (
        "RoleBinding/edge/b", "ClusterRole/read", 0)
    assert not policy.authorize(SA, Attributes("list", resource="configmaps", namespace="other")).allowed
    assert not policy.authorize(SA, Attributes("list", resource="configmaps")).allowed


def test_role_binding_to_a_role_of_its_namespace() -> None:
    role = obj("leases", "edge", rules=[
        rule(["coordination.k8s.io"], ["leases"], ["create"]),
        rule(["coordination.k8s.io"], ["leases"], ["get", "update"], ["lock"])])
    elsewhere = obj("leases", "other", rules=[rule(["*"], ["*"], ["*"])])
    policy = Policy(roles=[role, elsewhere], role_bindings=[rb("b", "edge", "Role", "leases", sa_subject())])
    lease = Attributes("update", "coordination.k8s.io", resource="leases", namespace="edge", name="lock")
    decision = policy.authorize(SA, lease)
    assert decision.allowed and decision.grant is not None and decision.grant.rule == 1
    assert not policy.authorize(SA, Attributes("update", "coordination.k8s.io", resource="leases",
                                               namespace="edge", name="x")).allowed
    assert not policy.authorize(SA, Attributes("delete", "coordination.k8s.io", resource="leases",
                                               namespace="other", name="lock")).allowed


def test_subjects_users_groups_and_service_account_namespace() -> None:
    admin = obj("admin", rules=[rule(["*"], ["*"], ["*"])])
    by_group = Policy(cluster_roles=[admin], cluster_role_bindings=[crb(
        "g", "admin", {"kind": "Group", "name": "system:serviceaccounts:edge",
                       "apiGroup": "rbac.authorization.k8s.io"})])
    assert by_group.authorize(SA, Attributes("delete", resource="pods", namespace="a", name="p")).allowed
    other_ns = service_account_user("other", "ctl")
    assert not by_group.authorize(other_ns, Attributes("get", resource="pods")).allowed
    by_user = Policy(cluster_roles=[admin], cluster_role_bindings=[crb("u", "admin", {"kind": "User",
                                                                                     "name": "jane"})])
    assert by_user.authorize(UserInfo("jane"), Attributes("get", resource="pods")).allowed
    assert not by_user.authorize(SA, Attributes("get", resource="pods")).allowed
    # The ServiceAccount of the same name in another namespace is another identity.
    wrong_ns = Policy(cluster_roles=[admin], cluster_role_bindings=[crb("s", "admin", sa_subject("default"))])
    assert not wrong_ns.authorize(SA, Attributes("get", resource="pods")).allowed


def test_missing_role_is_the_reason() -> None:
    policy = Policy(cluster_role_bindings=[crb("gone", "missing", sa_subject())])
    decision = policy.authorize(SA, Attributes("list", resource="pods"))
    assert not decision.allowed
    assert decision.reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found'


def test_forbidden_messages_are_kube_apiservers() -> None:
    err = forbidden(SA, Attributes("get", "", resource="secrets", namespace="edge", name="tls"))
    assert (err.code, err.reason) == (403, "Forbidden")
    assert err.message == ('secrets "tls" is forbidden: User "system:serviceaccount:edge:ctl" cannot get '
                           'resource "secrets" in API group "" in the namespace "edge"')
    assert err.details == {"name": "tls", "kind": "secrets"}
    err = forbidden(SA, Attributes("list", "networking.k8s.io", resource="ingresses"))
    assert err.message == ('ingresses.networking.k8s.io is forbidden: User "system:serviceaccount:edge:ctl" '
                           'cannot list resource "ingresses" in API group "networking.k8s.io" at the cluster '
                           'scope')
    err = forbidden(SA, Attributes("update", "networking.k8s.io", resource="ingresses", subresource="status",
                                   namespace="shop", name="web"))
    assert err.message == ('ingresses.networking.k8s.io "web" is forbidden: User '
                           '"system:serviceaccount:edge:ctl" cannot update resource "ingresses/status" in '
                           'API group "networking.k8s.io" in the namespace "shop"')
    err = forbidden(SA, Attributes("get", path="/metrics", resource_request=False), "RBAC: x")
    assert err.message == ('forbidden: User "system:serviceaccount:edge:ctl" cannot get path "/metrics": '
                           'RBAC: x')


def test_tokens_are_signed_bound_and_expire() -> None:
    now = [1_000_000.0]
    issuer = TokenIssuer(b"k" * 32, clock=lambda: now[0])
    token, expires = issuer.issue("edge", "ctl", "uid-1", ["api"], 600)
    assert expires == 1_000_600
    assert issuer.verify(token) == ("edge", "ctl", "uid-1")
    head, body, sig = token.split(".")
    assert issuer.verify(f"{head}.{body}.{sig[:-2]}AA") is None           # tampered signature
    assert TokenIssuer(b"x" * 32, clock=lambda: now[0]).verify(token) is None   # another cluster's key
    assert issuer.verify("not-a-token") is None
    now[0] += 600
    assert issuer.verify(token) is None                                       # expired


def _store() -> Store:
    store = Store(Registry(DEFAULT_KINDS))
    store.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "edge"}},
                {"apiVersion": "v1", "kind": "ServiceAccount",
                 "metadata": {"name": "ctl", "namespace": "edge"}}])
    return store


def test_authentication_modes() -> None:
    store = _store()
    open_http = AccessControl(store)                       # plain HTTP, no admin token, AlwaysAllow
    assert open_http.authenticate("") is ADMIN
    rbac = AccessControl(store, admin_token="secret", mode="RBAC")
    assert rbac.authenticate("Bearer secret") is ADMIN
    token, _ = rbac.create_token("edge", "ctl")
    assert rbac.authenticate(f"Bearer {token}").name == SA.name
    for header in ("", "Bearer wrong", f"Bearer {token}x", "Basic c2VjcmV0"):
        with pytest.raises(StatusError) as e:
            rbac.authenticate(header)
        assert e.value.code == 401
    # Another cluster's token (another signing key) proves nothing here.
    assert AccessControl(store, admin_token="secret").issuer.verify(token) is None
    with pytest.raises(StatusError) as e:
        rbac.create_token("edge", "nobody")
    assert e.value.code == 404
    with pytest.raises(ValueError, match="unknown authorization mode"):
        AccessControl(store, mode="ABAC")


def test_rbac_mode_authorizes_and_records() -> None:
    store = _store()
    store.load([{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 **obj("read", rules=[rule([""], ["services"], ["list"])])},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 **crb("read", "read", sa_subject())}])
    access = AccessControl(store, admin_token="secret", mode="RBAC")
    access.authorize(SA, Attributes("list", resource="services"))
    with pytest.raises(StatusError) as e:
        access.authorize(SA, Attributes("delete", resource="services", namespace="edge", name="web"))
    assert e.value.code == 403
    access.authorize(ADMIN, Attributes("delete", resource="services", namespace="edge", name="web"))
    assert access.log.allowed(SA.name) == {("list", "", "services", "", "")}
    assert [(a.verb, a.allowed) for a in access.log.denied(SA.name)] == [("delete", False)]
    assert access.log.users() == [SA.name]                 # the admin is not recorded
    # Impersonation: the admin only.
    assert access.impersonate(ADMIN, SA.name, []).groups == SA.groups
    with pytest.raises(StatusError) as e:
        access.impersonate(SA, "system:admin", [])
    assert e.value.code == 403
    # AlwaysAllow records a ServiceAccount's requests too, allowed.
    always = AccessControl(store)
    always.authorize(SA, Attributes("delete", resource="services", namespace="edge", name="web"))
    assert always.log.allowed(SA.name) == {("delete", "", "services", "", "edge")}
