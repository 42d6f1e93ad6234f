"""Bad input: each gets the right event; NGINX keeps serving every other Ingress; nothing crashes."""

from __future__ import annotations

import base64

import pytest

from tests.helpers import make_cert, tls_secret, wait_until
from tests.integration.harness import GOOD, NS, Controller, Env, rule, still_healthy

pytestmark = pytest.mark.integration


def test_invalid_host(env: Env, running: Controller) -> None:
    # A real API server refuses this host (devcluster too: 422); objects stored before that validation, or
    # written past it, still reach the controller. load() writes like a storage restore, without validation.
    env.cluster.load([env.ingress("bad-host", [rule("Bad_Host.example.com", ("/", "web"))], apply=False)])
    e = env.wait_event("bad-host", "Rejected", 'spec.rules[0].host: Invalid value: "Bad_Host.example.com"')
    assert e["type"] == "Warning"
    still_healthy(running)


@pytest.mark.parametrize("path", ["/a b", "/a;b", "/a{b}"])
def test_bad_paths_are_rejected(env: Env, running: Controller, path: str) -> None:
    env.ingress("bad-path", [rule("bad.example.com", (path, "web"))])
    env.wait_event("bad-path", "Rejected", "spec.rules[0].http.paths[0].path: Invalid value")
    assert running.get("bad.example.com", "/").status == 404
    still_healthy(running)


def test_lone_brace_passes_validation_but_never_reaches_nginx(env: Env, running: Controller) -> None:
    """NIC's validation only rejects braces around letters; the config layer drops any unsafe path with a
    warning, and the Ingress's other paths are served."""
    env.ingress("brace", [rule("brace.example.com", ("/a{b", "web"), ("/ok", "web"))])
    env.wait_event("brace", "AddedOrUpdatedWithWarning", "path '/a{b' of host brace.example.com is invalid")
    running.wait_backend("brace.example.com", "/ok", "web")
    assert running.get("brace.example.com", "/a{b").status == 404
    still_healthy(running)


def test_invalid_update_of_a_working_ingress_removes_it_with_rejected(env: Env, running: Controller) -> None:
    env.ingress("app", [rule("app.example.com", ("/", "web"))])
    running.wait_backend("app.example.com", "/", "web")
    env.ingress("app", [rule("app.example.com", ("/x;y", "web"))])
    env.wait_event("app", "Rejected", "demo/app was rejected: with error: spec.rules[0].http.paths[0].path")
    running.wait_status("app.example.com", "/", 404)
    still_healthy(running)


def test_missing_service_and_missing_port(env: Env, running: Controller) -> None:
    env.ingress("missing", [rule("missing.example.com", ("/svc", "nope"), ("/port", "web", 81),
                                 ("/ok", "web"))])
    env.wait_event("missing", "AddedOrUpdatedWithWarning", "service demo/nope doesn't exist")
    env.wait_event("missing", "AddedOrUpdatedWithWarning", "no port with number 81 in service demo/web")
    running.wait_backend("missing.example.com", "/ok", "web")
    assert running.get("missing.example.com", "/svc").status == 502
    assert running.get("missing.example.com", "/port").status == 502
    # The Service appears later: the Ingress picks it up.
    env.service("nope")
    env.endpoints("nope", [env.backend("nope")])
    running.wait_backend("missing.example.com", "/svc", "nope")
    still_healthy(running)


def test_external_name_service_rejected_with_a_clear_warning(env: Env, running: Controller) -> None:
    env.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext", "namespace": NS},
               "spec": {"type": "ExternalName", "externalName": "example.org", "ports": [{"port": 80}]}})
    env.ingress("ext", [rule("ext.example.com", ("/", "ext"))])
    env.wait_event("ext", "AddedOrUpdatedWithWarning", "ExternalName")
    assert running.get("ext.example.com", "/").status == 502
    still_healthy(running)


def _handshake_fails(c: Controller, host: str) -> bool:
    try:
        c.https(host, "/")
    except OSError:
        return True
    return False


@pytest.mark.parametrize("broken", ["bad-pem", "mismatched-key"])
def test_broken_tls_secret(env: Env, running: Controller, broken: str) -> None:
    host = "tls.example.com"
    cert, other = make_cert(host), make_cert(host)
    if broken == "bad-pem":
        garbage = b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n"
        secret = tls_secret("tls", NS, garbage, cert.key_pem)
    else:
        secret = tls_secret("tls", NS, cert.cert_pem, other.key_pem)
    env.create(secret)
    env.ingress("tls", [rule(host, ("/", "web"))], tls=[{"hosts": [host], "secretName": "tls"}])
    env.wait_event("tls", "AddedOrUpdatedWithWarning", "TLS secret tls is invalid")
    running.wait_backend(host, "/", "web")          # HTTP keeps working
    assert _handshake_fails(running, host)          # TLS is rejected for that host
    still_healthy(running)
    # Fixing the Secret in place fixes the host.
    env.apply(cert.secret("tls", NS))
    wait_until(lambda: not _handshake_fails(running, host)
               and running.https(host, "/").peer_cert_der == cert.der, "TLS works after the secret was fixed")


def test_opaque_secret_is_unsupported(env: Env, running: Controller) -> None:
    env.create({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": "opaque", "namespace": NS},
                "data": {"tls.crt": base64.b64encode(b"x").decode()}})
    env.ingress("opaque", [rule("opaque.example.com", ("/", "web"))],
                tls=[{"hosts": ["opaque.example.com"], "secretName": "opaque"}])
    env.wait_event("opaque", "AddedOrUpdatedWithWarning", "opaque")
    running.wait_backend("opaque.example.com", "/", "web")
    still_healthy(running)


def test_reload_failure_rejects_only_the_offender(env: Env) -> None:
    """A config that passes validation but that NGINX refuses (a bad snippet): that Ingress gets
    AddedOrUpdatedWithError with NGINX's error text; everyone else keeps being served and updated."""
    for name in ("good", "web"):
        env.service(name)
        env.endpoints(name, [env.backend(name)])
    env.ingress("good", [rule(GOOD, ("/", "good"))])
    c = env.controller(enable_snippets=True)
    c.wait_backend(GOOD, "/", "good")
    env.ingress("snippet", [rule("snippet.example.com", ("/", "web"))],
                annotations={"nginx.org/server-snippets": "no_such_directive on;"})
    e = env.wait_event("snippet", "AddedOrUpdatedWithError", "no_such_directive")
    assert "but was not applied" in e["message"]
    assert c.get("snippet.example.com", "/").status == 404
    assert c.get(GOOD, "/").backend == "good"
    # Later changes still apply: the bad file does not poison the next reload.
    env.ingress("later", [rule("later.example.com", ("/", "web"))])
    c.wait_backend("later.example.com", "/", "web")
    # Fixing the offender applies it.
    env.ingress("snippet", [rule("snippet.example.com", ("/", "web"))],
                annotations={"nginx.org/server-snippets": "add_header X-Fixed yes;"})
    c.wait_backend("snippet.example.com", "/", "web")
    assert c.lbc.stats.sync_errors == 0


def test_problems_present_at_startup_are_reported_once_ready(env: Env) -> None:
    """Invalid Ingresses and host conflicts that exist before the controller starts: reported (events) at
    the first drain, while the valid Ingresses are served after exactly one reload."""
    import datetime

    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("older", [rule("shared.example.com", ("/", "web"))])
    wait_until(lambda: datetime.datetime.now(datetime.UTC) - datetime.datetime.fromisoformat(
        env.get("ingresses", "older")["metadata"]["creationTimestamp"]) >= datetime.timedelta(seconds=1.1),
        "a second passes", deadline=5)
    env.ingress("newer", [rule("shared.example.com", ("/", "web"))])
    env.cluster.load([env.ingress("invalid", [rule("in valid.example.com", ("/", "web"))], apply=False)])
    c = env.controller()
    c.wait_backend("shared.example.com", "/", "web")
    env.wait_event("newer", "Rejected", "All hosts are taken by other resources")
    env.wait_event("invalid", "Rejected", "spec.rules[0].host: Invalid value")
    env.wait_event("older", "AddedOrUpdated")
    assert c.reloads == 1
    assert c.lbc.stats.sync_errors == 0
