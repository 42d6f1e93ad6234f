"""Helpers for the VirtualServer integration tests: the chart's CRDs in devcluster, VirtualServer objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.resource import ResourceType
from ingressctl.kinds.virtualserver.kind import VIRTUALSERVERROUTES, VIRTUALSERVERS
from tests.helpers import wait_until
from tests.integration.harness import NS, Env

CRD_DIR = Path(__file__).resolve().parents[2] / "charts" / "ingressctl" / "crds"
CRDS = ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
                    namespaced=False)


def install_crds(env: Env) -> None:
    """Create the chart's VirtualServer and VirtualServerRoute CRDs and wait until they serve."""
    for name in ("k8s.nginx.org_virtualservers.yaml", "k8s.nginx.org_virtualserverroutes.yaml"):
        env.kube.create(CRDS, None, yaml.safe_load((CRD_DIR / name).read_text()))
    wait_served(env, VIRTUALSERVERS)


def wait_served(env: Env, rt: ResourceType) -> None:
    """Until the API server lists `rt` (its CRD is established)."""
    def served() -> bool:
        try:
            env.kube.list(rt, NS, limit=1)
        except ApiError:
            return False
        return True

    wait_until(served, f"the {rt.kind} CRD serves")


def virtual_server(name: str, host: str, *, upstreams: list[dict[str, Any]] | None = None,
                   routes: list[dict[str, Any]] | None = None, namespace: str = NS,
                   **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "k8s.nginx.org/v1", "kind": "VirtualServer",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"host": host, "upstreams": upstreams or [], "routes": routes or [], **spec}}


def apply_vs(env: Env, obj: dict[str, Any]) -> dict[str, Any]:
    """Create, or replace the spec of, a VirtualServer."""
    return apply_spec(env, VIRTUALSERVERS, obj)


def vs_status(env: Env, name: str, namespace: str = NS) -> dict[str, Any]:
    return dict(env.kube.get(VIRTUALSERVERS, namespace, name).get("status") or {})


def wait_vs_state(env: Env, name: str, state: str, reason: str, contains: str = "",
                  namespace: str = NS) -> dict[str, Any]:
    def ok() -> bool:
        st = vs_status(env, name, namespace)
        return st.get("state") == state and st.get("reason") == reason and contains in st.get("message", "")

    wait_until(ok, f"VirtualServer {name} state {state}/{reason}")
    return vs_status(env, name, namespace)


def virtual_server_route(name: str, host: str, namespace: str, *, upstreams: list[dict[str, Any]],
                         subroutes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "k8s.nginx.org/v1", "kind": "VirtualServerRoute",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"host": host, "upstreams": upstreams, "subroutes": subroutes}}


def apply_vsr(env: Env, obj: dict[str, Any]) -> dict[str, Any]:
    """Create, or replace the spec of, a VirtualServerRoute."""
    md = obj["metadata"]
    try:
        return dict(env.kube.create(VIRTUALSERVERROUTES, md["namespace"], obj))
    except ApiError as e:
        if not e.is_already_exists:
            raise
    cur = env.kube.get(VIRTUALSERVERROUTES, md["namespace"], md["name"])
    body = {**cur, "spec": obj["spec"]}
    return dict(env.kube.update(VIRTUALSERVERROUTES, md["namespace"], md["name"], body))


def vsr_status(env: Env, name: str, namespace: str) -> dict[str, Any]:
    return dict(env.kube.get(VIRTUALSERVERROUTES, namespace, name).get("status") or {})


def apply_spec(env: Env, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """Create, or replace the spec of, a namespaced custom resource."""
    md = obj["metadata"]
    ns = md.get("namespace", NS)
    try:
        return dict(env.kube.create(rt, ns, obj))
    except ApiError as e:
        if not e.is_already_exists:
            raise
    cur = env.kube.get(rt, ns, md["name"])
    return dict(env.kube.update(rt, ns, md["name"], {**cur, "spec": obj["spec"]}))
