"""The admission webhook for Policies, driven by kubectl against devcluster with the chart's CRDs: an
invalid Policy is refused with the controller's own message and not stored, a valid one is stored and
gets its Valid status, and a Policy of another class is let through untouched."""

from __future__ import annotations

import dataclasses

import pytest

from ingressctl.k8s.errors import ApiError
from ingressctl.kinds.policy.kind import POLICIES
from ingressctl.settings import AdmissionWebhookSettings
from tests.integration.harness import NS, Env
from tests.integration.policy_helpers import install_policy_crds, policy, wait_policy_state
from tests.webhooks import SERVICE, SERVICE_NS, Kubectl, WebhookCert, vwc

pytestmark = pytest.mark.integration

RULE = {"apiGroups": ["k8s.nginx.org"], "apiVersions": ["v1"], "resources": ["policies"],
        "operations": ["CREATE", "UPDATE"], "scope": "Namespaced"}
DENIED = 'admission webhook "ingresses.validate.ingressctl" denied the request: '


def test_policies_are_validated_by_the_webhook(env: Env, cert: WebhookCert, kubectl: Kubectl) -> None:
    install_policy_crds(env)
    s = dataclasses.replace(env.settings(), admission_webhook=AdmissionWebhookSettings(
        enabled=True, port=0, tls_cert_file=cert.cert_file, tls_key_file=cert.key_file))
    c = env.controller(s)
    env.cluster.admission.set_service(f"{SERVICE_NS}/{SERVICE}", f"127.0.0.1:{c.app.webhook.port}")
    env.cluster.load([vwc("ingressctl", cert.ca_bundle, rules=[RULE])])

    bad = kubectl.apply(policy("bad", rateLimit={"rate": "5r/x", "key": "$uri", "zoneSize": "1m"}))
    assert bad.returncode != 0 and DENIED in bad.stderr
    assert f"Policy {NS}/bad is invalid and was rejected: " in bad.stderr
    assert 'spec.rateLimit.rate: Invalid value: "5r/x"' in bad.stderr
    assert "variables must be enclosed in curly braces" in bad.stderr
    two = kubectl.apply(policy("two", accessControl={"allow": ["10.0.0.1"]}, basicAuth={"secret": "s"}))
    assert two.returncode != 0 and "must specify exactly one of: `accessControl`" in two.stderr
    for name in ("bad", "two"):
        with pytest.raises(ApiError) as e:
            env.kube.get(POLICIES, NS, name)
        assert e.value.status == 404

    good = kubectl.apply(policy("good", accessControl={"allow": ["10.0.0.0/8"]}))
    assert good.returncode == 0, good.stderr
    wait_policy_state(env, "good", "Valid")
    other = kubectl.apply(policy("other", ingressClassName="another", accessControl={"allow": ["nope"]}))
    assert other.returncode == 0, other.stderr      # not ours: neither validated nor served
    env.kube.get(POLICIES, NS, "other")
