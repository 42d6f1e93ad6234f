"""Helpers for the admission webhook tests: a serving certificate for a webhook Service, a
ValidatingWebhookConfiguration, AdmissionReviews, and kubectl against a devcluster."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from typing import Any

from ingressctl.devcluster.tlsutil import generate

SERVICE = "ingressctl-webhook"
SERVICE_NS = "default"
INGRESS_RULE = {"apiGroups": ["networking.k8s.io"], "apiVersions": ["v1"], "resources": ["ingresses"],
                "operations": ["CREATE", "UPDATE"], "scope": "Namespaced"}


@dataclass(frozen=True)
class WebhookCert:
    cert_file: str
    key_file: str
    ca_pem: bytes

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca_pem).decode()


def webhook_cert(directory: str, host: str = f"{SERVICE}.{SERVICE_NS}.svc") -> WebhookCert:
    """A CA and a certificate for `host` (and 127.0.0.1/localhost), written as PEM files."""
    c = generate(host)
    cert_file, key_file = os.path.join(directory, "webhook.crt"), os.path.join(directory, "webhook.key")
    with open(cert_file, "wb") as f:
        f.write(c.cert_pem + c.ca_pem)
    with open(key_file, "wb") as f:
        f.write(c.key_pem)
    return WebhookCert(cert_file, key_file, c.ca_pem)


def vwc(name: str, ca_bundle: str, *, url: str | None = None, failure_policy: str = "Ignore",
        rules: list[dict[str, Any]] | None = None, timeout: int = 5, side_effects: str = "None",
        namespace_selector: dict[str, Any] | None = None, object_selector: dict[str, Any] | None = None,
        webhook_name: str = "ingresses.validate.ingressctl", path: str = "/validate") -> dict[str, Any]:
    """A ValidatingWebhookConfiguration with one webhook, by URL or by the test Service."""
    client: dict[str, Any] = {"caBundle": ca_bundle}
    if url is not None:
        client["url"] = url
    else:
        client["service"] = {"namespace": SERVICE_NS, "name": SERVICE, "path": path, "port": 443}
    hook: dict[str, Any] = {
        "name": webhook_name, "clientConfig": client, "rules": rules or [INGRESS_RULE],
        "failurePolicy": failure_policy, "sideEffects": side_effects, "timeoutSeconds": timeout,
        "admissionReviewVersions": ["v1"],
    }
    if namespace_selector is not None:
        hook["namespaceSelector"] = namespace_selector
    if object_selector is not None:
        hook["objectSelector"] = object_selector
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name}, "webhooks": [hook]}


def review(obj: Any, *, operation: str = "CREATE", old: Any = None, group: str = "networking.k8s.io",
           kind: str = "Ingress", uid: str | None = None) -> dict[str, Any]:
    req: dict[str, Any] = {"uid": uid or str(uuid.uuid4()),
                           "kind": {"group": group, "version": "v1", "kind": kind},
                           "resource": {"group": group, "version": "v1", "resource": kind.lower() + "s"},
                           "operation": operation, "object": obj, "userInfo": {"username": "tester"}}
    if old is not None:
        req["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def ingress(name: str, host: str, *, namespace: str = "demo", annotations: dict[str, str] | None = None,
            cls: str = "nginx", service: str = "web") -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": md,
            "spec": {"ingressClassName": cls, "rules": [{"host": host, "http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": service, "port": {"number": 80}}}}]}}]}}


class Kubectl:
    """The kubectl on PATH against a kubeconfig, with a private cache directory."""

    def __init__(self, kubeconfig: str, tmp: str) -> None:
        self.kubeconfig = kubeconfig
        self.tmp = tmp
        self.binary = shutil.which("kubectl") or "kubectl"
        self._files = 0

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.binary, "--kubeconfig", self.kubeconfig,
                               "--cache-dir", os.path.join(self.tmp, "kubectl-cache"), *args],
                              capture_output=True, text=True, timeout=120)

    def apply(self, obj: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        import json

        self._files += 1
        path = os.path.join(self.tmp, f"manifest-{self._files}.json")
        with open(path, "w") as f:
            json.dump(obj, f)
        return self.run("apply", "-f", path)
