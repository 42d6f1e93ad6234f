"""VirtualServer upstream `subselector` end to end: only the Service's endpoints on Pods whose labels match
are used (the EndpointSlices name their Pods in `targetRef`), and a Pod label change re-renders at once."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import wait_until
from tests.integration.harness import NS, Env
from tests.integration.vs_helpers import apply_vs, install_crds, virtual_server, wait_vs_state

pytestmark = pytest.mark.integration

HOST = "sub.example.com"


def _pod(env: Env, name: str, version: str) -> None:
    env.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS,
                                                               "labels": {"app": "web", "version": version}},
               "spec": {"containers": [{"name": "web", "image": "web"}]}})


def _relabel(env: Env, name: str, version: str) -> None:
    from ingressctl.k8s.resource import PODS

    cur: dict[str, Any] = dict(env.kube.get(PODS, NS, name))
    cur["metadata"]["labels"] = {"app": "web", "version": version}
    env.kube.update(PODS, NS, name, cur)


def test_subselector_picks_the_pods_and_follows_their_labels(env: Env) -> None:
    install_crds(env)
    env.service("web")
    v1, v2 = env.backend("web-v1"), env.backend("web-v2")      # EndpointSlices name them as their Pods
    _pod(env, "web-v1", "v1")
    _pod(env, "web-v2", "v2")
    env.endpoints("web", [v1, v2])
    apply_vs(env, virtual_server("sub", HOST, upstreams=[
        {"name": "v2", "service": "web", "port": 80, "subselector": {"version": "v2"}},
        {"name": "all", "service": "web", "port": 80}], routes=[
        {"path": "/v2", "action": {"pass": "v2"}}, {"path": "/", "action": {"pass": "all"}}]))
    c = env.controller()
    c.wait_backend(HOST, "/v2", "web-v2")
    assert {c.get(HOST, "/v2").backend for _ in range(20)} == {"web-v2"}
    wait_until(lambda: {c.get(HOST, "/").backend for _ in range(20)} == {"web-v1", "web-v2"}, "both without")
    st = wait_vs_state(env, "sub", "Valid", "AddedOrUpdated")
    assert "subselector" not in st["message"]
    # Relabelled Pods: the subselected upstream follows without any endpoint change.
    _relabel(env, "web-v1", "v2")
    wait_until(lambda: {c.get(HOST, "/v2").backend for _ in range(20)} == {"web-v1", "web-v2"}, "both v2")
    _relabel(env, "web-v1", "v1")
    _relabel(env, "web-v2", "v1")
    c.wait_status(HOST, "/v2", 502)                # no Pod matches: the 502 server, as without endpoints
    assert c.get(HOST, "/").status == 200
