"""The ingressMTLS Policy that ingress-nginx's `auth-tls-*` annotations of an Ingress make (the controller's
part of `authtls`): the Ingress's Policies with it added (`with_auth_tls`), resolved against the Secret store.

Guarantees: see `authtls`; pure apart from the two lookups it is given (the Secret reference, which writes
the CA file on first use, and the Secret object, for its `ca.crl`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ingressctl.kinds.ingress.ingress_nginx.authtls import AUTH_TLS_SECRET, AuthTLSConfig
from ingressctl.kinds.ingress.ingress_nginx.synthetic_policies import annotation_settings, cross_namespace
from ingressctl.kinds.policy.refs import with_crl
from ingressctl.policies.base import PolicySecret, ResolvedPolicy
from ingressctl.secret_types import SECRET_TYPE_CA, SecretReference


def synthetic_policy(namespace: str, c: AuthTLSConfig, secret: PolicySecret) -> ResolvedPolicy:
    """The ingressMTLS Policy of the annotations (never stored: named after the annotation)."""
    name = f"auth-tls-secret={c.name}"
    policy = {"apiVersion": "k8s.nginx.org/v1", "kind": "Policy",
              "metadata": {"namespace": namespace, "name": name},
              "spec": {"ingressMTLS": {"clientCertSecret": c.name, "verifyClient": c.verify_client,
                                       "verifyDepth": c.depth}}}
    return ResolvedPolicy(f"{namespace}/{name}", policy, secrets={"clientCertSecret": secret})


def with_auth_tls(ing: Mapping[str, Any], policies: tuple[ResolvedPolicy, ...] | None,
                  get_secret_reference: Callable[[str], SecretReference],
                  get_secret: Callable[[str], Mapping[str, Any] | None],
                  ) -> tuple[tuple[ResolvedPolicy, ...] | None, list[str]]:
    """The Ingress's Policies with the ingressMTLS of its `auth-tls-*` annotations, and warnings."""
    namespace, c, warnings = annotation_settings(ing, policies, AUTH_TLS_SECRET, "ingressMTLS",
                                                 lambda tr: tr.auth_tls)
    if c is None:
        return policies, warnings
    key = f"{c.namespace or namespace}/{c.name}"
    if (c.namespace or namespace) != namespace:
        secret, warning = cross_namespace(AUTH_TLS_SECRET, key)
        warnings.append(warning)
    else:
        ref = get_secret_reference(key)
        secret = PolicySecret(key, secret_type=ref.secret_type, path=ref.path, error=ref.error)
        secret = with_crl({"s": secret}, get_secret)["s"]
        if ref.secret_type != SECRET_TYPE_CA:
            warnings.append(f"annotation {AUTH_TLS_SECRET}: the Secret {key} must exist and be of the type "
                            f"{SECRET_TYPE_CA} (with ca.crt); ingressctl does not read other types")
    return (*(policies or ()), synthetic_policy(namespace, c, secret)), warnings
