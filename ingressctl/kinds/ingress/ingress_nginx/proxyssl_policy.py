"""The egressMTLS Policy that ingress-nginx's `proxy-ssl-*` annotations of an Ingress make (the controller's
part of `proxyssl`): the Ingress's Policies with it added (`with_proxy_ssl`), resolved against the Secret
store.

Guarantees:
- The Secret must be in the Ingress's namespace (ingress-nginx's default refuses others) and of the type
  `kubernetes.io/tls` with a valid `tls.crt`/`tls.key` (its file is the client certificate); its optional
  `ca.crt` becomes the trusted CA (a file of its own, `Secrets.get_ca_reference`).
- Fail closed, as NIC for an egressMTLS Policy whose Secret cannot be used: a missing Secret, one of another
  type or namespace, an invalid one or an invalid `ca.crt`, and `proxy-ssl-verify: on` without `ca.crt` make
  the Ingress's context answer 500 (`policies.generator`), with a warning naming the reason. Only that
  Ingress: nothing is written for it, every other Ingress is served as before.
- An egressMTLS Policy of `nginx.org/policies` on the Ingress wins, with a warning.
- Pure apart from the two lookups it is given (each writes its file on first use).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ingressctl.kinds.ingress.ingress_nginx.proxyssl import (
    PROXY_SSL_SECRET,
    VERIFY,
    ProxySSLConfig,
    egress_spec,
)
from ingressctl.kinds.ingress.ingress_nginx.synthetic_policies import annotation_settings, cross_namespace
from ingressctl.policies.base import PolicySecret, ResolvedPolicy
from ingressctl.secret_types import SECRET_TYPE_CA, SECRET_TYPE_TLS, SecretReference

Lookup = Callable[[str], SecretReference]


def synthetic_policy(namespace: str, c: ProxySSLConfig, tls: PolicySecret,
                     trusted: PolicySecret | None) -> ResolvedPolicy:
    """The egressMTLS Policy of the annotations (never stored: named after the annotation)."""
    name = f"proxy-ssl-secret={c.name}"
    policy = {"apiVersion": "k8s.nginx.org/v1", "kind": "Policy",
              "metadata": {"namespace": namespace, "name": name},
              "spec": {"egressMTLS": egress_spec(c, trusted=trusted is not None)}}
    secrets = {"tlsSecret": tls, **({"trustedCertSecret": trusted} if trusted is not None else {})}
    return ResolvedPolicy(f"{namespace}/{name}", policy, secrets=secrets)


def _secrets(key: str, c: ProxySSLConfig, get_secret_reference: Lookup, get_ca_reference: Lookup,
             ) -> tuple[PolicySecret, PolicySecret | None, list[str]]:
    """The client certificate and trusted CA of the Secret `key`, and warnings."""
    ref = get_secret_reference(key)
    tls = PolicySecret(key, secret_type=ref.secret_type, path=ref.path, error=ref.error)
    if ref.secret_type != SECRET_TYPE_TLS:
        return tls, None, [f"annotation {PROXY_SSL_SECRET}: the Secret {key} must exist and be of the type "
                           f"{SECRET_TYPE_TLS} (with tls.crt and tls.key); ingressctl does not read other "
                           "types"]
    if ref.error:
        return tls, None, [f"annotation {PROXY_SSL_SECRET}: the Secret {key} is invalid: {ref.error}"]
    ca = get_ca_reference(key)
    if ca.error:
        return tls, PolicySecret(key, secret_type=SECRET_TYPE_CA, error=ca.error), [
            f"annotation {PROXY_SSL_SECRET}: the ca.crt of the Secret {key} is invalid: {ca.error}"]
    if ca.path:
        return tls, PolicySecret(key, secret_type=SECRET_TYPE_CA, path=ca.path), []
    if c.verify == "on":
        why = f"{VERIFY} is on but the Secret has no ca.crt to verify the backend with"
        return tls, PolicySecret(key, secret_type=SECRET_TYPE_CA, error=why), [
            f"annotation {PROXY_SSL_SECRET}: {why} ({key})"]
    return tls, None, []


def with_proxy_ssl(ing: Mapping[str, Any], policies: tuple[ResolvedPolicy, ...] | None,
                   get_secret_reference: Lookup, get_ca_reference: Lookup,
                   ) -> tuple[tuple[ResolvedPolicy, ...] | None, list[str]]:
    """The Ingress's Policies with the egressMTLS of its `proxy-ssl-*` annotations, and warnings."""
    namespace, c, warnings = annotation_settings(ing, policies, PROXY_SSL_SECRET, "egressMTLS",
                                                 lambda tr: tr.proxy_ssl)
    if c is None:
        return policies, warnings
    key = f"{c.namespace}/{c.name}"
    if c.namespace != namespace:
        tls, warning = cross_namespace(PROXY_SSL_SECRET, key)
        return (*(policies or ()), synthetic_policy(namespace, c, tls, None)), [warning]
    tls, trusted, warnings = _secrets(key, c, get_secret_reference, get_ca_reference)
    return (*(policies or ()), synthetic_policy(namespace, c, tls, trusted)), warnings
