"""The special TLS Secrets (`--default-server-tls-secret`, `--wildcard-tls-secret`): read and validated at
start-up, then kept in step: a valid change is served after one reload, an invalid one is rejected with an
event and the previous certificate keeps serving."""

from __future__ import annotations

import base64

import pytest

from tests.helpers import make_cert, wait_until
from tests.integration.harness import NS, Env, rule

pytestmark = pytest.mark.integration


def test_special_secrets_follow_their_secret_after_startup(env: Env) -> None:
    default_a, default_b = make_cert("default.example.com"), make_cert("default-b.example.com")
    wild_a, wild_b = make_cert("*.example.com"), make_cert("*.example.com")
    env.create(default_a.secret("default-tls", NS))
    env.create(wild_a.secret("wildcard-tls", NS))
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("wild", [rule("w.example.com", ("/", "web"))], tls=[{"hosts": ["w.example.com"]}])
    c = env.controller(default_server_tls_secret=f"{NS}/default-tls",
                       wildcard_tls_secret=f"{NS}/wildcard-tls")
    assert c.https("unknown.example.com").peer_cert_der == default_a.der
    wait_until(lambda: c.https("w.example.com").peer_cert_der == wild_a.der, "wildcard certificate")
    c.wait_idle()
    reloads = c.reloads

    env.apply(default_b.secret("default-tls", NS))
    wait_until(lambda: c.https("unknown.example.com").peer_cert_der == default_b.der,
               "new default certificate")
    env.wait_event("default-tls", "SecretUpdated", kind="Secret")
    c.wait_idle()
    assert c.reloads == reloads + 1

    env.apply(wild_b.secret("wildcard-tls", NS))
    wait_until(lambda: c.https("w.example.com").peer_cert_der == wild_b.der, "new wildcard certificate")
    assert c.https("w.example.com").backend == "web"

    # An invalid update is rejected; the previous certificate keeps serving.
    bad = default_a.secret("default-tls", NS)
    bad["data"]["tls.key"] = base64.b64encode(wild_a.key_pem).decode()     # key of another certificate
    env.apply(bad)
    env.wait_event("default-tls", "Rejected", "using the previous version", kind="Secret")
    c.wait_idle()
    assert c.https("unknown.example.com").peer_cert_der == default_b.der
