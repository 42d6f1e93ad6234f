"""Helpers for the Policy integration tests: the Policy CRD, Policy objects and their status, Secrets of
the policy types, and HTTP requests from a chosen client address with headers."""

from __future__ import annotations

import base64
import hashlib
import http.client
from pathlib import Path
from typing import Any

import yaml

from ingressctl.controller.policy_kind import POLICIES
from ingressctl.k8s.client import ApiError
from tests.helpers import Response, wait_until
from tests.integration.harness import NS, Env
from tests.integration.vs_helpers import CRDS, install_crds

CRD = Path(__file__).resolve().parents[2] / "charts" / "ingressctl" / "crds" / "k8s.nginx.org_policies.yaml"


def install_policy_crds(env: Env) -> None:
    """The VirtualServer, VirtualServerRoute and Policy CRDs, serving."""
    install_crds(env)
    env.kube.create(CRDS, None, yaml.safe_load(CRD.read_text()))

    def served() -> bool:
        try:
            env.kube.list(POLICIES, NS, limit=1)
        except ApiError:
            return False
        return True

    wait_until(served, "the Policy CRD serves")


def policy(name: str, namespace: str = NS, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "k8s.nginx.org/v1", "kind": "Policy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def apply_policy(env: Env, obj: dict[str, Any]) -> dict[str, Any]:
    """Create, or replace the spec of, a Policy."""
    md = obj["metadata"]
    ns = md.get("namespace", NS)
    try:
        return dict(env.kube.create(POLICIES, ns, obj))
    except ApiError as e:
        if not e.is_already_exists:
            raise
    cur = env.kube.get(POLICIES, ns, md["name"])
    return dict(env.kube.update(POLICIES, ns, md["name"], {**cur, "spec": obj["spec"]}))


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


def request(port: int, host: str, path: str = "/", *, source: str = "127.0.0.1",
            headers: dict[str, str] | None = None) -> Response:
    """GET from the client address `source` (any 127.0.0.0/8 address reaches NGINX on loopback)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        conn.request("GET", path, headers={"Host": host, "Connection": "close", **(headers or {})})
        r = conn.getresponse()
        body = r.read().decode(errors="replace")
        return Response(r.status, body, {k.lower(): v for k, v in r.getheaders()})
    finally:
        conn.close()


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
