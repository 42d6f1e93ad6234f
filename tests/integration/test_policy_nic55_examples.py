"""Manifests in the shapes of NIC 5.5's policy examples (`data/nic55-policy-examples.yaml`: custom-resources
cache-policy, cors, external-auth; ingress-resources access-control, cors, egress-mtls, external-auth,
ingress-mtls) applied unchanged, with generated Secrets, and routed as their READMEs describe."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from ingressctl.kinds.policy.kind import POLICIES
from ingressctl.kinds.virtualserver.kind import VIRTUALSERVERS
from tests.helpers import http_get, make_cert, wait_until
from tests.integration.harness import NS, Env
from tests.integration.policy_helpers import install_policy_crds, wait_policy_state
from tests.integration.policy_servers import GOOD_TOKEN, AuthService, MTLSBackend, call
from tests.integration.vs_helpers import wait_vs_state
from tests.pki import CA, ca_secret, tls_secret

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).parent / "data" / "nic55-policy-examples.yaml"


def _apply_examples(env: Env) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(EXAMPLES.read_text()) if d]
    for d in docs:
        d["metadata"]["namespace"] = NS
        rt = {"Policy": POLICIES, "VirtualServer": VIRTUALSERVERS}.get(d["kind"])
        if rt is None:
            env.create(d)
        else:
            env.kube.create(rt, NS, d)
    return docs


def test_nic55_policy_examples(env: Env) -> None:
    os.chmod(env.tmp, 0o711)
    install_policy_crds(env)
    tea, coffee = env.backend("tea"), env.backend("coffee")
    for name, backend in (("tea-svc", tea), ("coffee-svc", coffee)):
        env.service(name)
        env.endpoints(name, [backend])
    auth = AuthService("external-auth").start()
    env.backends.append(auth)            # type: ignore[arg-type]  (stopped with the others)
    env.service("external-auth-svc", port=8080)
    env.endpoints("external-auth-svc", [auth])     # type: ignore[list-item]
    client_ca, backend_ca = CA("client-ca"), CA("backend-ca")
    secure = MTLSBackend("secure-app", backend_ca.issue("secure-app.example.com", server=True,
                                                       dns=("secure-app.example.com",)), client_ca).start()
    env.backends.append(secure)          # type: ignore[arg-type]
    env.service("secure-app", port=8443, port_name="https")
    env.endpoints("secure-app", [secure], port_name="https")    # type: ignore[list-item]
    env.apply(make_cert("mtls.example.com").secret("tls-secret", NS))
    env.apply(ca_secret("ingress-mtls-secret", NS, client_ca))
    env.apply(tls_secret("egress-mtls-secret", NS, client_ca.issue("nginx-ingress")))
    env.apply(ca_secret("egress-trusted-ca-secret", NS, backend_ca))
    docs = _apply_examples(env)
    c = env.controller()   # its 0700 run dir is made traversable: NGINX workers write the cache under it
    c.wait_backend("cafe.example.com", "/menu", "coffee")
    for d in docs:
        if d["kind"] == "Policy":
            wait_policy_state(env, d["metadata"]["name"], "Valid")
    for vs in ("cafe", "webapp"):
        wait_vs_state(env, vs, "Valid", "AddedOrUpdated")
    # cache-policy: the second request is a cache hit.
    before = tea.hits
    assert [call(c.http_port, "cafe.example.com", "/tea").backend for _ in range(3)] == ["tea"] * 3
    assert tea.hits == before + 1
    # cors: exact and wildcard origins.
    pre = call(c.http_port, "cafe.example.com", "/coffee", method="OPTIONS",
               headers={"Origin": "https://app.example.com", "Access-Control-Request-Method": "PUT"})
    assert pre.status == 204 and pre.headers["access-control-allow-methods"] == "GET, POST, PUT"
    assert pre.headers["access-control-allow-credentials"] == "true"
    r = call(c.http_port, "cafe.example.com", "/menu", headers={"Origin": "https://shop.example.org"})
    assert r.backend == "coffee" and r.headers["access-control-allow-origin"] == "https://shop.example.org"
    r = call(c.http_port, "cors.example.com", "/", headers={"Origin": "https://app.example.com"})
    assert r.backend == "coffee" and r.headers["access-control-allow-origin"] == "https://app.example.com"
    # external-auth on a VirtualServer and on an Ingress.
    for host in ("webapp.example.com", "auth.example.com"):
        assert call(c.http_port, host, "/").status == 401
        assert call(c.http_port, host, "/", headers={"Authorization": GOOD_TOKEN}).status == 200
    # access-control.
    assert http_get(c.http_port, "ac.example.com", "/", source="127.0.0.1").backend == "tea"
    assert http_get(c.http_port, "ac.example.com", "/", source="127.0.0.2").status == 403
    # ingress-mtls and egress-mtls.
    good = client_ca.issue("client")
    wait_until(lambda: call(c.https_port, "mtls.example.com", "/", tls=True, client=good).backend == "tea",
               "ingress mTLS")
    assert call(c.https_port, "mtls.example.com", "/", tls=True).status == 400
    r = call(c.http_port, "secure.example.com", "/")
    assert (r.status, r.body) == (200, "mtls nginx-ingress\n")
