"""The controller's admission webhook registered in devcluster, driven by kubectl: a bad Ingress is refused
with the webhook's reason and nothing is stored, a good one is stored and routed, a host another Ingress owns
is a warning, and when the webhook is down failurePolicy decides (Ignore: stored, then rejected by the
controller's own event path; Fail: refused)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from ingressctl.k8s.errors import ApiError
from ingressctl.keys import ResourceKey
from ingressctl.settings import AdmissionWebhookSettings
from tests.helpers import tls_secret, wait_until
from tests.integration.harness import NS, Controller, Env
from tests.webhooks import SERVICE, SERVICE_NS, Kubectl, WebhookCert, ingress, vwc, webhook_cert

DENIED = 'admission webhook "ingresses.validate.ingressctl" denied the request: '
SNIPPET = {"nginx.org/server-snippets": "location /x { return 200; }"}


@pytest.fixture
def webhooked(env: Env, cert: WebhookCert) -> Iterator[Controller]:
    """The controller with its webhook on an ephemeral port, routed from the webhook Service."""
    s = env.settings()
    s = dataclasses.replace(s, admission_webhook=AdmissionWebhookSettings(
        enabled=True, port=0, tls_cert_file=cert.cert_file, tls_key_file=cert.key_file))
    c = env.controller(s)
    env.cluster.admission.set_service(f"{SERVICE_NS}/{SERVICE}", f"127.0.0.1:{c.app.webhook.port}")
    web = env.backend("web")
    env.service("web")
    env.endpoints("web", [web])
    yield c


def _absent(env: Env, name: str) -> bool:
    try:
        env.get("ingresses", name)
    except ApiError as e:
        return e.status == 404
    return False


def test_bad_ingress_is_refused_with_the_reason_and_not_stored(env: Env, webhooked: Controller,
                                                               kubectl: Kubectl, cert: WebhookCert) -> None:
    env.cluster.load([vwc("ingressctl", cert.ca_bundle)])
    bad = kubectl.apply(ingress("bad", "bad.example.com", annotations=SNIPPET))
    assert bad.returncode != 0
    assert DENIED in bad.stderr
    assert ("annotations.nginx.org/server-snippets: Forbidden: snippet specified but snippets feature is "
            "not enabled") in bad.stderr
    assert _absent(env, "bad")
    # What the API server's own validation lets through and only the controller refuses.
    bad_value = kubectl.apply(ingress("badvalue", "b.example.com",
                                      annotations={"nginx.org/client-max-body-size": "lots"}))
    assert bad_value.returncode != 0 and DENIED in bad_value.stderr
    assert 'annotations.nginx.org/client-max-body-size: Invalid value: "lots"' in bad_value.stderr
    assert _absent(env, "badvalue")

    good = kubectl.apply(ingress("good", "good.example.com"))
    assert good.returncode == 0, good.stderr
    webhooked.wait_backend("good.example.com", "/", "web")

    # An update that breaks the Ingress is refused too; the stored one keeps serving.
    broken = kubectl.apply(ingress("good", "good.example.com", annotations={"nginx.org/proxy-connect-timeout":
                                                                            "ten seconds"}))
    assert broken.returncode != 0 and DENIED in broken.stderr
    assert "nginx.org/proxy-connect-timeout" in broken.stderr
    stored = env.get("ingresses", "good")["metadata"].get("annotations") or {}
    assert "nginx.org/proxy-connect-timeout" not in stored
    webhooked.wait_backend("good.example.com", "/", "web")


def test_host_owned_by_an_older_ingress_is_a_warning(env: Env, webhooked: Controller, kubectl: Kubectl,
                                                     cert: WebhookCert) -> None:
    env.cluster.load([vwc("ingressctl", cert.ca_bundle)])
    assert kubectl.apply(ingress("first", "shared.example.com")).returncode == 0
    wait_until(lambda: webhooked.lbc.configuration.host_owner("shared.example.com") == ResourceKey(
        "ingress", f"{NS}/first"),
               "the first Ingress owns the host")
    # Ownership goes by creationTimestamp (seconds), then UID: let the second Ingress be strictly newer.
    created = datetime.fromisoformat(env.get("ingresses", "first")["metadata"]["creationTimestamp"])
    wait_until(lambda: datetime.now(UTC).replace(microsecond=0) > created, "a newer creationTimestamp")
    second = kubectl.apply(ingress("second", "shared.example.com"))
    assert second.returncode == 0, second.stderr
    warning = f"Warning: host shared.example.com is taken by another resource (Ingress {NS}/first)"
    assert warning in second.stderr
    env.get("ingresses", "second")   # a warning, not a denial


def test_ingress_of_another_class_is_allowed_untouched(env: Env, webhooked: Controller, kubectl: Kubectl,
                                                       cert: WebhookCert) -> None:
    env.cluster.load([vwc("ingressctl", cert.ca_bundle)])
    other = kubectl.apply(ingress("other", "other.example.com", annotations=SNIPPET, cls="other"))
    assert other.returncode == 0, other.stderr
    env.get("ingresses", "other")


def test_webhook_down_with_ignore_stores_and_the_controller_still_rejects(
        env: Env, webhooked: Controller, kubectl: Kubectl, cert: WebhookCert) -> None:
    env.cluster.load([vwc("ingressctl", cert.ca_bundle, failure_policy="Ignore")])
    webhooked.app.webhook.stop()
    bad = kubectl.apply(ingress("bad", "bad.example.com", annotations=SNIPPET))
    assert bad.returncode == 0, bad.stderr
    env.get("ingresses", "bad")
    event = env.wait_event("bad", "Rejected", "snippet specified but snippets feature is not enabled")
    assert event["type"] == "Warning"
    assert webhooked.lbc.configuration.get_ingress(f"{NS}/bad") is None


def test_webhook_down_with_fail_refuses(env: Env, webhooked: Controller, kubectl: Kubectl,
                                        cert: WebhookCert) -> None:
    env.cluster.load([vwc("ingressctl", cert.ca_bundle, failure_policy="Fail")])
    webhooked.app.webhook.stop()
    good = kubectl.apply(ingress("good", "good.example.com"))
    assert good.returncode != 0
    assert 'failed calling webhook "ingresses.validate.ingressctl"' in good.stderr
    assert _absent(env, "good")


def test_certificate_from_a_tls_secret(env: Env, kubectl: Kubectl,
                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    cert = webhook_cert(str(tmp_path_factory.mktemp("secret-cert")))
    with open(cert.cert_file, "rb") as f:
        chain = f.read()
    with open(cert.key_file, "rb") as f:
        key = f.read()
    env.create(tls_secret("webhook-cert", "default", chain, key))
    s = dataclasses.replace(env.settings(), admission_webhook=AdmissionWebhookSettings(
        enabled=True, port=0, tls_secret="default/webhook-cert"))
    c = env.controller(s)
    env.cluster.admission.set_service(f"{SERVICE_NS}/{SERVICE}", f"127.0.0.1:{c.app.webhook.port}")
    env.cluster.load([vwc("ingressctl", cert.ca_bundle, failure_policy="Fail")])
    bad = kubectl.apply(ingress("bad", "bad.example.com", annotations=SNIPPET))
    assert bad.returncode != 0 and DENIED in bad.stderr   # the call succeeded: TLS verified with the CA


def test_an_unreadable_certificate_stops_the_start_with_a_clear_error(env: Env, tmp_path_factory:
                                                                      pytest.TempPathFactory) -> None:
    from ingressctl.app.root import StartupError

    missing = str(tmp_path_factory.mktemp("none") / "missing.pem")
    s = dataclasses.replace(env.settings(), admission_webhook=AdmissionWebhookSettings(
        enabled=True, port=0, tls_cert_file=missing, tls_key_file=missing))
    c = env.controller(s, start=False)
    with pytest.raises(StartupError, match="cannot load the admission webhook certificate"):
        c.app.start()
