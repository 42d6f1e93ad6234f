"""Helpers for the Policy integration tests: the Policy CRD, Policy objects and their status, Secrets of
the policy types, a Basic auth header, a test environment with Policies served, and a spy on renders."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any

import yaml

from ingressctl.keys import ResourceKey
from ingressctl.kinds.policy.kind import POLICIES
from tests.helpers import wait_until
from tests.integration.harness import NS, Controller, Env
from tests.integration.vs_helpers import CRDS, apply_spec, install_crds, wait_served

CRD = Path(__file__).resolve().parents[2] / "charts" / "ingressctl" / "crds" / "k8s.nginx.org_policies.yaml"


def install_policy_crds(env: Env) -> None:
    """The VirtualServer, VirtualServerRoute and Policy CRDs, serving."""
    install_crds(env)
    env.kube.create(CRDS, None, yaml.safe_load(CRD.read_text()))
    wait_served(env, POLICIES)


def policy(name: str, namespace: str = NS, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "k8s.nginx.org/v1", "kind": "Policy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def apply_policy(env: Env, obj: dict[str, Any]) -> dict[str, Any]:
    """Create, or replace the spec of, a Policy."""
    return apply_spec(env, POLICIES, obj)


def delete_policy(env: Env, name: str, namespace: str = NS) -> None:
    env.kube.delete(POLICIES, namespace, name)


def policy_status(env: Env, name: str, namespace: str = NS) -> dict[str, Any]:
    return dict(env.kube.get(POLICIES, namespace, name).get("status") or {})


def wait_policy_state(env: Env, name: str, state: str, contains: str = "",
                      namespace: str = NS) -> dict[str, Any]:
    def ok() -> bool:
        st = policy_status(env, name, namespace)
        return st.get("state") == state and contains in st.get("message", "")

    wait_until(ok, f"Policy {name} state {state}")
    return policy_status(env, name, namespace)


def htpasswd_secret(name: str, users: dict[str, str], namespace: str = NS,
                    secret_type: str = "nginx.org/htpasswd") -> dict[str, Any]:
    """An htpasswd Secret with {SHA} password hashes (NGINX reads them without crypt)."""
    lines = "".join(f"{u}:{{SHA}}{base64.b64encode(hashlib.sha1(p.encode()).digest()).decode()}\n"
                    for u, p in users.items())
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "type": secret_type, "data": {"htpasswd": base64.b64encode(lines.encode()).decode()}}


def apikey_secret(name: str, keys: dict[str, str], namespace: str = NS) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "type": "nginx.org/apikey",
            "data": {c: base64.b64encode(k.encode()).decode() for c, k in keys.items()}}


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def policy_env(env: Env) -> None:
    """The custom-resource CRDs and a Service `web` with one backend."""
    # NGINX workers (nobody, under a root master) open the htpasswd file at request time: let them reach it.
    os.chmod(env.tmp, 0o711)
    install_policy_crds(env)
    env.service("web")
    env.endpoints("web", [env.backend("web")])


def spy_renders(c: Controller) -> list[ResourceKey]:
    """From now on, the keys of the VirtualServers the controller renders, in order."""
    rendered: list[ResourceKey] = []
    builder = c.lbc.kinds["virtualserver"].builder
    apply = builder.apply

    def spy(resource: Any) -> Any:
        rendered.append(resource.key_with_kind)
        return apply(resource)

    builder.apply = spy
    return rendered
