"""The admission webhook for VirtualServers and VirtualServerRoutes, driven by kubectl against devcluster with
the chart's CRDs: a bad one is refused with the controller's own validation message and nothing is stored, a
good one is stored and routed, a host another VirtualServer owns is a warning, and with custom resources
disabled the webhook lets every custom resource through (the controller does not serve them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.resource import ResourceType
from ingressctl.keys import ResourceKey
from ingressctl.kinds.virtualserver.kind import VIRTUALSERVERROUTES, VIRTUALSERVERS
from ingressctl.settings import AdmissionWebhookSettings
from tests.helpers import wait_until
from tests.integration.harness import NS, Controller, Env
from tests.integration.vs_helpers import install_crds, virtual_server, virtual_server_route
from tests.webhooks import INGRESS_RULE, SERVICE, SERVICE_NS, Kubectl, WebhookCert, vwc

VS_RULE = {"apiGroups": ["k8s.nginx.org"], "apiVersions": ["v1"],
           "resources": ["virtualservers", "virtualserverroutes"], "operations": ["CREATE", "UPDATE"],
           "scope": "Namespaced"}
DENIED = 'admission webhook "ingresses.validate.ingressctl" denied the request: '
UPSTREAM = {"name": "web", "service": "web", "port": 80}


def _start(env: Env, cert: WebhookCert, **kw: Any) -> Controller:
    install_crds(env)
    s = dataclasses.replace(env.settings(**kw), admission_webhook=AdmissionWebhookSettings(
        enabled=True, port=0, tls_cert_file=cert.cert_file, tls_key_file=cert.key_file))
    c = env.controller(s)
    env.cluster.admission.set_service(f"{SERVICE_NS}/{SERVICE}", f"127.0.0.1:{c.app.webhook.port}")
    env.cluster.load([vwc("ingressctl", cert.ca_bundle, rules=[INGRESS_RULE, VS_RULE])])
    web = env.backend("web")
    env.service("web")
    env.endpoints("web", [web])
    return c


@pytest.fixture
def webhooked(env: Env, cert: WebhookCert) -> Iterator[Controller]:
    yield _start(env, cert)


def _absent(env: Env, rt: ResourceType, name: str) -> bool:
    try:
        env.kube.get(rt, NS, name)
    except ApiError as e:
        return e.status == 404
    return False


def _bad_vs(name: str, host: str) -> dict[str, Any]:
    return virtual_server(name, host, upstreams=[UPSTREAM, dict(UPSTREAM)],
                          routes=[{"path": "tea", "action": {"pass": "web"}}])


def test_bad_virtualserver_is_refused_with_the_reason_and_not_stored(env: Env, webhooked: Controller,
                                                                     kubectl: Kubectl) -> None:
    bad = kubectl.apply(_bad_vs("bad", "bad.example.com"))
    assert bad.returncode != 0
    assert DENIED in bad.stderr
    assert f"VirtualServer {NS}/bad was rejected: " in bad.stderr
    assert 'spec.upstreams[1].name: Duplicate value: "web"' in bad.stderr
    assert 'spec.routes[0].path: Invalid value: "tea": must start with /, ~, ^~ or =' in bad.stderr
    assert _absent(env, VIRTUALSERVERS, "bad")

    good = virtual_server("good", "good.example.com", upstreams=[UPSTREAM],
                          routes=[{"path": "/", "action": {"pass": "web"}}])
    applied = kubectl.apply(good)
    assert applied.returncode == 0, applied.stderr
    webhooked.wait_backend("good.example.com", "/", "web")

    # An update that breaks it is refused; the stored one keeps serving.
    broken = kubectl.apply(virtual_server("good", "good.example.com", upstreams=[UPSTREAM],
                                          routes=[{"path": "/", "action": {"pass": "missing"}}]))
    assert broken.returncode != 0 and DENIED in broken.stderr
    assert 'spec.routes[0].action.pass: Unsupported value: "missing"' in broken.stderr
    stored = env.kube.get(VIRTUALSERVERS, NS, "good")
    assert stored["spec"]["routes"][0]["action"]["pass"] == "web"
    webhooked.wait_backend("good.example.com", "/", "web")


def test_bad_virtualserverroute_is_refused_and_a_good_one_is_stored(env: Env, webhooked: Controller,
                                                                    kubectl: Kubectl) -> None:
    bad = kubectl.apply(virtual_server_route("bad", "r.example.com", NS, upstreams=[UPSTREAM],
                                             subroutes=[{"path": "/tea", "action": {"pass": "nope"}}]))
    assert bad.returncode != 0 and DENIED in bad.stderr
    assert f"VirtualServerRoute {NS}/bad was rejected: " in bad.stderr
    assert 'spec.subroutes[0].action.pass: Unsupported value: "nope"' in bad.stderr
    assert _absent(env, VIRTUALSERVERROUTES, "bad")
    good = kubectl.apply(virtual_server_route("tea", "r.example.com", NS, upstreams=[UPSTREAM],
                                              subroutes=[{"path": "/tea", "action": {"pass": "web"}}]))
    assert good.returncode == 0, good.stderr
    env.kube.get(VIRTUALSERVERROUTES, NS, "tea")


def test_host_owned_by_an_older_virtualserver_is_a_warning(env: Env, webhooked: Controller,
                                                           kubectl: Kubectl) -> None:
    first = virtual_server("first", "shared.example.com", upstreams=[UPSTREAM],
                           routes=[{"path": "/", "action": {"pass": "web"}}])
    assert kubectl.apply(first).returncode == 0
    wait_until(lambda: webhooked.lbc.configuration.host_owner("shared.example.com") == ResourceKey(
        "virtualserver", f"{NS}/first"), "the first VirtualServer owns the host")
    stored = env.kube.get(VIRTUALSERVERS, NS, "first")
    created = datetime.fromisoformat(stored["metadata"]["creationTimestamp"])
    wait_until(lambda: datetime.now(UTC).replace(microsecond=0) > created, "a newer creationTimestamp")
    second = kubectl.apply({**first, "metadata": {"name": "second", "namespace": NS}})
    assert second.returncode == 0, second.stderr
    assert (f"Warning: host shared.example.com is taken by another resource (VirtualServer {NS}/first)"
            in second.stderr)
    env.kube.get(VIRTUALSERVERS, NS, "second")   # a warning, not a denial


def test_virtualserver_of_another_class_is_allowed_untouched(env: Env, webhooked: Controller,
                                                             kubectl: Kubectl) -> None:
    other = _bad_vs("other", "other.example.com")
    other["spec"]["ingressClassName"] = "other"
    applied = kubectl.apply(other)
    assert applied.returncode == 0, applied.stderr
    env.kube.get(VIRTUALSERVERS, NS, "other")


def test_custom_resources_disabled_leaves_them_to_the_api_server(env: Env, cert: WebhookCert,
                                                                 kubectl: Kubectl) -> None:
    _start(env, cert, enable_custom_resources=False)
    applied = kubectl.apply(_bad_vs("unserved", "u.example.com"))
    assert applied.returncode == 0, applied.stderr
    env.kube.get(VIRTUALSERVERS, NS, "unserved")
