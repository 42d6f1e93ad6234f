"""Who a request is and what it may do: bearer-token authentication, ServiceAccount tokens (TokenRequest) and
the authorization mode (AlwaysAllow or RBAC), with a record of every decision per identity.

Guarantees:
- The cluster's admin token (the kubeconfig's) authenticates as `system:admin` in `system:masters` and is
  always allowed, in every mode. Without an admin token and outside RBAC mode, a request without credentials
  is that admin too (the plain-HTTP development setup); in RBAC mode a request without a valid token gets 401.
- `POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token` (authentication.k8s.io/v1 TokenRequest) issues a
  signed token bound to that ServiceAccount's uid, valid for `spec.expirationSeconds` (default 3600, at least
  600). The token authenticates as `system:serviceaccount:<ns>:<name>` until it expires or the ServiceAccount
  is deleted (a new ServiceAccount of the same name has another uid).
- In RBAC mode every request of a non-admin identity is authorized by `rbac.Policy` over the stored Roles,
  ClusterRoles and bindings as they are at that moment; a denial is kube-apiserver's 403. Discovery
  (`/api`, `/apis`, `/version`, `/openapi`, health) is open to every authenticated identity, as the default
  system:discovery and system:public-info-viewer bindings make it.
- Every decision about a resource request of a non-admin identity is recorded (`AccessLog`), in every mode.
- SelfSubjectAccessReview (`kubectl auth can-i`) answers for the requesting identity with the same policy;
  the admin may act as another identity with the impersonation headers (`kubectl --as`, `--as-group`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ingressctl.devcluster import errors
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.objects import Stored, object_key
from ingressctl.devcluster.rbac import Attributes, Grant, Policy, UserInfo, forbidden, service_account_user
from ingressctl.devcluster.store import Store

Obj = dict[str, Any]
ADMIN = UserInfo("system:admin", ("system:masters", "system:authenticated"))
MODES = ("AlwaysAllow", "RBAC")
ISSUER = "https://kubernetes.default.svc.cluster.local"
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600
_RBAC = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class Access:
    """One authorization decision about a resource request."""

    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    allowed: bool
    grant: Grant | None = None


class AccessLog:
    """The distinct decisions per identity (user name), in order of first occurrence, with how often each was
    made; thread-safe. Memory grows with the distinct (verb, resource, namespace, name) asked, not with the
    number of requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_user: dict[str, dict[Access, int]] = {}

    def add(self, user: str, access: Access) -> None:
        with self._lock:
            seen = self._by_user.setdefault(user, {})
            seen[access] = seen.get(access, 0) + 1

    def decisions(self, user: str) -> list[Access]:
        with self._lock:
            return list(self._by_user.get(user, ()))

    def count(self, user: str, access: Access) -> int:
        """How many times this decision was made."""
        with self._lock:
            return self._by_user.get(user, {}).get(access, 0)

    def allowed(self, user: str) -> set[tuple[str, str, str, str, str]]:
        """Every (verb, group, resource, subresource, namespace) allowed to `user`."""
        return {(a.verb, a.group, a.resource, a.subresource, a.namespace) for a in self.decisions(user)
                if a.allowed}

    def denied(self, user: str) -> list[Access]:
        return [a for a in self.decisions(user) if not a.allowed]

    def users(self) -> list[str]:
        with self._lock:
            return list(self._by_user)

    def reset(self) -> None:
        with self._lock:
            self._by_user.clear()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenIssuer:
    """Signed (HS256 JWT) ServiceAccount tokens with kube-apiserver's claims."""

    def __init__(self, key: bytes | None = None, clock: Callable[[], float] = time.time) -> None:
        self._key = key or secrets.token_bytes(32)
        self._clock = clock

    def issue(self, namespace: str, name: str, uid: str, audiences: list[str],
              expiration: int) -> tuple[str, int]:
        now = int(self._clock())
        claims = {"iss": ISSUER, "sub": f"system:serviceaccount:{namespace}:{name}", "aud": audiences,
                  "iat": now, "nbf": now, "exp": now + expiration, "jti": secrets.token_hex(8),
                  "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}}}
        head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
        body = _b64(json.dumps(claims, separators=(",", ":")).encode())
        sig = _b64(hmac.new(self._key, f"{head}.{body}".encode(), hashlib.sha256).digest())
        return f"{head}.{body}.{sig}", now + expiration

    def verify(self, token: str) -> tuple[str, str, str] | None:
        """(namespace, name, uid) of a valid, unexpired token; None otherwise."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        expected = _b64(hmac.new(self._key, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest())
        if not hmac.compare_digest(expected, parts[2]):
            return None
        try:
            claims = json.loads(_unb64(parts[1]))
            sa = claims["kubernetes.io"]
            if int(claims["exp"]) <= self._clock():
                return None
            return str(sa["namespace"]), str(sa["serviceaccount"]["name"]), str(sa["serviceaccount"]["uid"])
        except (ValueError, KeyError, TypeError):
            return None


class AccessControl:
    """Authentication, authorization and TokenRequest for one devcluster."""

    def __init__(self, store: Store, *, admin_token: str = "", mode: str = "AlwaysAllow",
                 issuer: TokenIssuer | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown authorization mode {mode!r} (known: {', '.join(MODES)})")
        if mode == "RBAC":
            for plural in ("roles", "clusterroles", "rolebindings", "clusterrolebindings"):
                if f"{_RBAC}/{plural}" not in store.registry.storage_ids():
                    raise ValueError(f"authorization mode RBAC needs the {_RBAC} {plural} kind in the table")
        self.store = store
        self.admin_token = admin_token
        self.mode = mode
        self.issuer = issuer or TokenIssuer()
        self.log = AccessLog()

    # ------------------------------------------------------------------------------------ authentication
    def authenticate(self, authorization: str) -> UserInfo:
        """The identity of a request's Authorization header; 401 when it proves none."""
        token = authorization[7:].strip() if authorization.startswith("Bearer ") else ""
        if token:
            if self.admin_token and hmac.compare_digest(token, self.admin_token):
                return ADMIN
            user = self._service_account(token)
            if user is not None:
                return user
            raise errors.unauthorized()
        if self.admin_token or self.mode == "RBAC":
            raise errors.unauthorized()
        return ADMIN

    def impersonate(self, user: UserInfo, name: str, groups: list[str]) -> UserInfo:
        """The identity of `Impersonate-User` / `Impersonate-Group` (kubectl --as, --as-group): allowed to the
        admin (system:masters) only; anyone else gets kube-apiserver's 403 for the impersonate verb."""
        if not (user is ADMIN or "system:masters" in user.groups):
            raise forbidden(user, Attributes("impersonate", resource="users", name=name))
        sa = UserInfo(name).service_account
        base = service_account_user(*sa).groups if sa else ()
        return UserInfo(name, tuple(dict.fromkeys([*groups, *base, "system:authenticated"])))

    def _service_account(self, token: str) -> UserInfo | None:
        verified = self.issuer.verify(token)
        if verified is None:
            return None
        namespace, name, uid = verified
        stored = self._service_account_object(namespace, name)
        if stored is None or stored.uid != uid:
            return None
        return service_account_user(namespace, name, uid)

    def _service_account_object(self, namespace: str, name: str) -> Stored | None:
        if "/serviceaccounts" not in self.store.registry.storage_ids():
            return None   # a kinds table without ServiceAccounts: no ServiceAccount tokens
        with self.store.lock:
            return self.store.bucket_by_id("/serviceaccounts").objects.get(object_key(namespace, name))

    # ------------------------------------------------------------------------------------ authorization
    def authorize(self, user: UserInfo, attrs: Attributes) -> None:
        """Raise 403 unless `user` may do `attrs`; record the decision for resource requests."""
        if user is ADMIN or "system:masters" in user.groups:
            return
        if not attrs.resource_request:
            return   # discovery and health: open to every authenticated identity
        if (attrs.group, attrs.resource, attrs.verb) == ("authorization.k8s.io", "selfsubjectaccessreviews",
                                                         "create"):
            return   # asking about oneself: open to every authenticated identity (system:basic-user)
        if self.mode == "RBAC":
            decision = self.policy().authorize(user, attrs)
            allowed, grant, reason = decision.allowed, decision.grant, decision.reason
        else:
            allowed, grant, reason = True, None, ""
        self.log.add(user.name, Access(attrs.verb, attrs.group, attrs.resource, attrs.subresource,
                                       attrs.namespace, attrs.name, allowed, grant))
        if not allowed:
            raise forbidden(user, attrs, reason)

    def self_subject_access_review(self, user: UserInfo, namespace: str, name: str, body: Any) -> Obj:
        """Answer a SelfSubjectAccessReview (`kubectl auth can-i`): may the requesting identity do it?"""
        spec = body.get("spec") if isinstance(body, dict) else None
        if not isinstance(spec, dict):
            raise errors.bad_request("the body must be an authorization.k8s.io/v1 SelfSubjectAccessReview")
        res, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if isinstance(res, dict) == isinstance(non, dict):
            raise errors.invalid("SelfSubjectAccessReview", "authorization.k8s.io", "", [(
                "spec.resourceAttributes", "FieldValueInvalid",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified")])
        if isinstance(res, dict):
            def field(key: str) -> str:
                return str(res.get(key) or "")
            attrs = Attributes(field("verb"), field("group"), field("version"), field("resource"),
                               field("subresource"), field("namespace"), field("name"))
        else:
            assert isinstance(non, dict)
            attrs = Attributes(str(non.get("verb") or ""), path=str(non.get("path") or ""),
                               resource_request=False)
        status: Obj = {"allowed": True}
        privileged = user is ADMIN or "system:masters" in user.groups
        if not privileged and self.mode == "RBAC" and attrs.resource_request:   # URLs: open, see authorize()
            decision = self.policy().authorize(user, attrs)
            status = {"allowed": decision.allowed}
            if decision.allowed and decision.grant is not None:
                grant = decision.grant
                status["reason"] = f'RBAC: allowed by {grant.binding} of {grant.role} (rule {grant.rule})'
            elif decision.reason:
                status["reason"] = decision.reason
        return {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
                "metadata": {}, "spec": spec, "status": status}

    def policy(self) -> Policy:
        """The RBAC objects as stored now."""
        def objects(plural: str) -> list[Obj]:
            bucket = self.store.bucket_by_id(f"{_RBAC}/{plural}")
            with self.store.lock:
                stored = list(bucket.objects.values())
            return [s.parse() for s in stored]
        return Policy(roles=objects("roles"), cluster_roles=objects("clusterroles"),
                      role_bindings=objects("rolebindings"),
                      cluster_role_bindings=objects("clusterrolebindings"))

    # ------------------------------------------------------------------------------------ TokenRequest
    def create_token(self, namespace: str, name: str, *, audiences: list[str] | None = None,
                     expiration_seconds: int = DEFAULT_EXPIRATION) -> tuple[str, int]:
        """A token for ServiceAccount namespace/name and its expiry (Unix seconds); 404 if there is none."""
        stored = self._service_account_object(namespace, name)
        if stored is None:
            raise errors.not_found("serviceaccounts", "", name)
        return self.issuer.issue(namespace, name, stored.uid, audiences or [ISSUER], expiration_seconds)

    def token_request(self, user: UserInfo, namespace: str, name: str, body: Any) -> Obj:
        """Serve a TokenRequest (POST serviceaccounts/<name>/token): the request with its status filled in."""
        if not isinstance(body, dict) or body.get("kind", "TokenRequest") != "TokenRequest":
            raise errors.bad_request("the body must be an authentication.k8s.io/v1 TokenRequest")
        spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        expiration = spec.get("expirationSeconds", DEFAULT_EXPIRATION)
        if not isinstance(expiration, int) or isinstance(expiration, bool):
            raise _invalid_token_request(name, "spec.expirationSeconds", "must be an integer")
        if expiration < MIN_EXPIRATION:
            raise _invalid_token_request(name, "spec.expirationSeconds",
                                         "may not specify a duration less than 10 minutes")
        audiences = spec.get("audiences") or [ISSUER]
        if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
            raise _invalid_token_request(name, "spec.audiences", "must be a list of strings")
        token, expires = self.create_token(namespace, name, audiences=audiences,
                                           expiration_seconds=expiration)
        meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                "metadata": {**(meta or {}), "name": name, "namespace": namespace},
                "spec": {**spec, "audiences": audiences, "expirationSeconds": expiration},
                "status": {"token": token, "expirationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                time.gmtime(expires))}}


def _invalid_token_request(name: str, path: str, message: str) -> StatusError:
    return errors.invalid("TokenRequest", "authentication.k8s.io", name,
                          [(path, "FieldValueInvalid", message)])
