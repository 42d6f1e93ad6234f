"""Policies on Ingresses (`nginx.org/policies`, NIC 5.5) end to end through devcluster and a real NGINX:
accessControl, cors, egressMTLS, externalAuth and ingressMTLS at server level and per minion location;
each fail-closed 500 (unsupported type, missing or invalid Policy, ingressMTLS on a minion) with its
Rejected and Warning events; Policy changes re-syncing the Ingresses that reference them; and the
annotation ignored with a warning when custom resources are disabled. The manifests have the field shapes
of NIC 5.5's examples (ingress-resources/access-control, cors, egress-mtls, external-auth, ingress-mtls)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.helpers import http_get, make_cert, wait_until
from tests.integration.harness import NS, Env, rule
from tests.integration.policy_helpers import apply_policy, install_policy_crds, policy
from tests.integration.policy_servers import GOOD_TOKEN, AuthService, MTLSBackend, call
from tests.integration.test_policy import HOST, _status
from tests.pki import CA, ca_secret, tls_secret

pytestmark = pytest.mark.integration

POLICIES = "nginx.org/policies"


def _env(env: Env) -> None:
    os.chmod(env.tmp, 0o711)
    install_policy_crds(env)
    for name in ("tea", "coffee"):
        env.service(name)
        env.endpoints(name, [env.backend(name)])


def _ingress(env: Env, name: str, policies: str, *paths: tuple[Any, ...], host: str = HOST,
             tls: bool = False, **annotations: str) -> dict[str, Any]:
    anns = {POLICIES: policies, **annotations} if policies else dict(annotations)
    return env.ingress(name, [rule(host, *(paths or (("/tea", "tea"), ("/coffee", "coffee"))))],
                       annotations=anns, tls=[{"hosts": [host], "secretName": "cafe-tls"}] if tls else None)


def test_access_control_and_cors_at_server_level_and_policy_changes(env: Env) -> None:
    _env(env)
    apply_policy(env, policy("webapp-policy", accessControl={"allow": ["127.0.0.1/32"]}))
    apply_policy(env, policy("cors-policy", cors={"allowOrigin": ["https://app.example.com",
                                                                  "https://*.example.org"],
                                                  "allowMethods": ["GET", "POST"],
                                                  "allowHeaders": ["Content-Type"], "maxAge": 3600}))
    _ingress(env, "cafe-ingress", "webapp-policy,cors-policy")
    _ingress(env, "other", "", ("/", "tea"), host="other.example.com")
    c = env.controller()
    c.wait_backend(HOST, "/tea", "tea")
    assert [_status(c, p) for p in ("/tea", "/coffee")] == [200, 200]
    assert [_status(c, p, "127.0.0.2") for p in ("/tea", "/coffee")] == [403, 403]
    assert _status(c, "/", "127.0.0.2", host="other.example.com") == 200      # only the referencing Ingress
    pre = call(c.http_port, HOST, "/coffee", method="OPTIONS",
               headers={"Origin": "https://shop.example.org", "Access-Control-Request-Method": "POST"})
    assert (pre.status, pre.backend) == (204, "")
    assert pre.headers["access-control-allow-origin"] == "https://shop.example.org"
    assert pre.headers["access-control-allow-methods"] == "GET, POST"
    assert pre.headers["access-control-max-age"] == "3600"
    simple = call(c.http_port, HOST, "/tea", headers={"Origin": "https://app.example.com"})
    assert simple.backend == "tea" and simple.headers["access-control-allow-origin"] == "https://app.example.com"
    assert "access-control-allow-origin" not in call(c.http_port, HOST, "/tea",
                                                     headers={"Origin": "https://evil.com"}).headers
    env.wait_event("cafe-ingress", "AddedOrUpdated", "")
    # A Policy change re-syncs the Ingress: now deny 127.0.0.2 instead of allowing 127.0.0.1 only.
    apply_policy(env, policy("webapp-policy", accessControl={"deny": ["127.0.0.2"]}))
    wait_until(lambda: _status(c, "/tea", "127.0.0.3") == 200, "the changed Policy applies")
    assert _status(c, "/tea", "127.0.0.2") == 403


def test_unsupported_missing_and_invalid_policies_fail_closed(env: Env) -> None:
    _env(env)
    apply_policy(env, policy("rate-limit", rateLimit={"rate": "10r/s", "key": "${binary_remote_addr}",
                                                      "zoneSize": "10M"}))
    apply_policy(env, policy("bad-cors", cors={"allowOrigin": ["https://a.com/path"]}))
    _ingress(env, "limited", "rate-limit", ("/", "tea"), host="limited.example.com")
    _ingress(env, "missing", "not-there", ("/", "tea"), host="missing.example.com")
    _ingress(env, "invalid", "bad-cors", ("/", "tea"), host="invalid.example.com")
    _ingress(env, "good", "", ("/", "coffee"), host="good.example.com")
    c = env.controller()
    c.wait_backend("good.example.com", "/", "coffee")
    for host, name, message in (
            ("limited.example.com", "limited",
             f"Policy {NS}/rate-limit of type rateLimit is not supported on Ingress resources"),
            ("missing.example.com", "missing", f"Policy {NS}/not-there is missing or invalid"),
            ("invalid.example.com", "invalid", f"Policy {NS}/bad-cors is missing or invalid")):
        assert _status(c, "/", host=host) == 500, host
        env.wait_event(name, "Rejected", message)
        e = env.wait_event(name, "AddedOrUpdatedWithWarning", message)
        assert e["type"] == "Warning"
    # The missing Policy appears: the Ingress is re-synced and serves.
    apply_policy(env, policy("not-there", accessControl={"allow": ["127.0.0.1"]}))
    c.wait_backend("missing.example.com", "/", "tea")


def test_external_auth_on_an_ingress_and_per_minion(env: Env) -> None:
    _env(env)
    auth = AuthService("auth").start()
    env.backends.append(auth)        # type: ignore[arg-type]  (stopped with the others)
    env.service("auth-svc", port=80)
    env.endpoints("auth-svc", [auth])   # type: ignore[list-item]
    apply_policy(env, policy("external-auth", externalAuth={"authURI": "/auth",
                                                            "authServiceName": "auth-svc"}))
    _ingress(env, "cafe-ingress", "external-auth")
    # Mergeable: the tea minion is protected, the coffee minion is not.
    env.ingress("master", [{"host": "m.example.com"}],
                annotations={"nginx.org/mergeable-ingress-type": "master"})
    env.ingress("tea-minion", [rule("m.example.com", ("/tea", "tea"))],
                annotations={"nginx.org/mergeable-ingress-type": "minion", POLICIES: "external-auth"})
    env.ingress("coffee-minion", [rule("m.example.com", ("/coffee", "coffee"))],
                annotations={"nginx.org/mergeable-ingress-type": "minion"})
    c = env.controller()
    c.wait_backend("m.example.com", "/coffee", "coffee")
    token = {"Authorization": GOOD_TOKEN}
    for host, path in ((HOST, "/tea"), (HOST, "/coffee"), ("m.example.com", "/tea")):
        assert _status(c, path, host=host) == 401, (host, path)
        assert http_get(c.http_port, host, path, headers=token).status == 200, (host, path)
    assert _status(c, "/coffee", host="m.example.com") == 200
    assert auth.seen[-1]["path"] == "/auth"
    # The auth Service's endpoints go away: the protected paths fail closed.
    env.endpoints("auth-svc", [])
    wait_until(lambda: http_get(c.http_port, HOST, "/tea", headers=token).status == 500, "auth gone: 500")


# Certificates loaded at handshakes share the default server's SSL context: a server with IngressMTLS keeps
# its own (ssl_verify_client acts only there).
@pytest.mark.parametrize("per_handshake", [False, True], ids=["certificates-at-reload", "per-handshake"])
def test_ingress_mtls_and_egress_mtls_on_ingresses(env: Env, per_handshake: bool) -> None:
    _env(env)
    client_ca, backend_ca = CA("client-ca"), CA("backend-ca")
    good, foreign = client_ca.issue("good"), CA("other").issue("good")
    env.apply(make_cert(HOST).secret("cafe-tls", NS))
    env.apply(ca_secret("ingress-mtls-secret", NS, client_ca))
    apply_policy(env, policy("ingress-mtls-policy", ingressMTLS={"clientCertSecret": "ingress-mtls-secret",
                                                                 "verifyClient": "on", "verifyDepth": 1}))
    _ingress(env, "cafe-ingress", "ingress-mtls-policy", tls=True)
    _ingress(env, "plain", "ingress-mtls-policy", ("/", "tea"), host="plain.example.com")   # no spec.tls
    # egressMTLS to an HTTPS backend that requires our client certificate.
    backend = MTLSBackend("secure-app", backend_ca.issue("secure-app.internal", server=True,
                                                         dns=("secure-app.internal",)), client_ca).start()
    env.backends.append(backend)      # type: ignore[arg-type]
    env.service("secure-app", port=8443, port_name="https")
    env.endpoints("secure-app", [backend], port_name="https")   # type: ignore[list-item]
    env.apply(tls_secret("egress-mtls-secret", NS, client_ca.issue("ingressctl")))
    env.apply(ca_secret("egress-trusted-ca-secret", NS, backend_ca))
    apply_policy(env, policy("egress-mtls-policy", egressMTLS={
        "tlsSecret": "egress-mtls-secret", "trustedCertSecret": "egress-trusted-ca-secret",
        "verifyServer": True, "serverName": True, "sslName": "secure-app.internal"}))
    _ingress(env, "secure-ingress", "egress-mtls-policy", ("/", "secure-app", 8443),
             host="secure.example.com", **{"nginx.org/ssl-services": "secure-app"})
    # On a minion: ingressMTLS fails that minion's location closed, the other minion is served.
    env.ingress("master", [{"host": "m.example.com"}],
                annotations={"nginx.org/mergeable-ingress-type": "master"})
    env.ingress("tea-minion", [rule("m.example.com", ("/tea", "tea"))],
                annotations={"nginx.org/mergeable-ingress-type": "minion", POLICIES: "ingress-mtls-policy"})
    env.ingress("coffee-minion", [rule("m.example.com", ("/coffee", "coffee"))],
                annotations={"nginx.org/mergeable-ingress-type": "minion"})
    c = env.controller(load_certificates_per_handshake=per_handshake)
    c.wait_backend("m.example.com", "/coffee", "coffee")
    wait_until(lambda: call(c.https_port, HOST, "/tea", tls=True, client=good).backend == "tea", "mTLS")
    assert call(c.https_port, HOST, "/tea", tls=True).status == 400
    assert call(c.https_port, HOST, "/tea", tls=True, client=foreign).status == 400
    assert _status(c, "/", host="plain.example.com") == 500
    env.wait_event("plain", "AddedOrUpdatedWithWarning",
                   f"TLS must be enabled in Ingress for IngressMTLS policy {NS}/ingress-mtls-policy")
    assert _status(c, "/tea", host="m.example.com") == 500
    env.wait_event("tea-minion", "AddedOrUpdatedWithWarning",
                   f"IngressMTLS policy {NS}/ingress-mtls-policy is not allowed on a minion Ingress")
    r = wait_until(lambda: (r := call(c.http_port, "secure.example.com", "/")).status == 200 and r,
                   "egress mTLS")
    assert r.body == "mtls ingressctl\n"


def test_policies_are_ignored_with_a_warning_without_custom_resources(env: Env) -> None:
    _env(env)
    _ingress(env, "cafe-ingress", "webapp-policy")
    c = env.controller(enable_custom_resources=False)
    c.wait_backend(HOST, "/tea", "tea")
    assert _status(c, "/tea", "127.0.0.2") == 200
    env.wait_event("cafe-ingress", "AddedOrUpdatedWithWarning",
                   "annotation nginx.org/policies is ignored: custom resources are disabled")
