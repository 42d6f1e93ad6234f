"""`ingressctl-webhook-certgen`: certificates for the admission webhook, run by the Helm chart's hook Jobs.

- `create --namespace NS --secret-name NAME --host HOST`: when the Secret does not exist, generate a CA and a
  serving certificate for HOST (the webhook Service's `<name>.<namespace>.svc`) and store them as a
  `kubernetes.io/tls` Secret with `tls.crt`, `tls.key` and `ca.crt`. An existing Secret is kept (upgrades and
  re-runs do not rotate the certificate under a running controller).
- `patch --namespace NS --secret-name NAME --webhook-name VWC`: set `clientConfig.caBundle` of every webhook
  of the ValidatingWebhookConfiguration to the Secret's `ca.crt` (get and update, retried on a conflict).
Exit status 0 on success, 1 with a message on stderr otherwise. The keys never leave memory except in the
Secret.
"""

from __future__ import annotations

import argparse
import base64
import sys
from collections.abc import Sequence

from ingressctl.devcluster.tlsutil import generate
from ingressctl.k8s.client import KubeClient, KubeConfigError
from ingressctl.k8s.errors import ApiError
from ingressctl.k8s.resource import SECRETS, ResourceType

VALIDATING_WEBHOOK_CONFIGURATIONS = ResourceType("admissionregistration.k8s.io", "v1",
                                                 "validatingwebhookconfigurations",
                                                 "ValidatingWebhookConfiguration", namespaced=False)
CERT_DAYS = 3650
CONFLICT_RETRIES = 5


def create_secret(client: KubeClient, namespace: str, name: str, host: str) -> bool:
    """Create the Secret unless it exists; returns whether it was created."""
    try:
        client.get(SECRETS, namespace, name)
        return False
    except ApiError as e:
        if not e.is_not_found:
            raise
    cert = generate(host, days=CERT_DAYS)
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
              "metadata": {"name": name, "namespace": namespace},
              "data": {"tls.crt": base64.b64encode(cert.cert_pem).decode(),
                       "tls.key": base64.b64encode(cert.key_pem).decode(),
                       "ca.crt": base64.b64encode(cert.ca_pem).decode()}}
    try:
        client.create(SECRETS, namespace, secret)
    except ApiError as e:
        if e.is_already_exists:   # another run won the race: keep its certificate
            return False
        raise
    return True


def patch_ca_bundle(client: KubeClient, namespace: str, secret_name: str, webhook_name: str) -> None:
    ca = (client.get(SECRETS, namespace, secret_name).get("data") or {}).get("ca.crt")
    if not ca:
        raise ValueError(f"the Secret {namespace}/{secret_name} has no ca.crt")
    for attempt in range(CONFLICT_RETRIES):
        vwc = client.get(VALIDATING_WEBHOOK_CONFIGURATIONS, None, webhook_name)
        for hook in vwc.get("webhooks") or []:
            hook.setdefault("clientConfig", {})["caBundle"] = ca
        try:
            client.update(VALIDATING_WEBHOOK_CONFIGURATIONS, None, webhook_name, vwc)
            return
        except ApiError as e:
            if not e.is_conflict or attempt == CONFLICT_RETRIES - 1:
                raise


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ingressctl-webhook-certgen",
                                description="Certificates for ingressctl's admission webhook.")
    p.add_argument("--kubeconfig", help="default: in-cluster, then $KUBECONFIG, ~/.kube/config")
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("create", "patch"):
        s = sub.add_parser(name)
        s.add_argument("--namespace", required=True)
        s.add_argument("--secret-name", required=True)
        if name == "create":
            s.add_argument("--host", required=True, help="the webhook Service's <name>.<namespace>.svc")
        else:
            s.add_argument("--webhook-name", required=True, help="the ValidatingWebhookConfiguration")
    a = p.parse_args(argv)
    try:
        client = KubeClient.from_kubeconfig(a.kubeconfig)
        try:
            if a.command == "create":
                created = create_secret(client, a.namespace, a.secret_name, a.host)
                print(f"secret {a.namespace}/{a.secret_name} {'created' if created else 'exists'}")
            else:
                patch_ca_bundle(client, a.namespace, a.secret_name, a.webhook_name)
                print(f"validatingwebhookconfiguration {a.webhook_name} caBundle set")
        finally:
            client.close()
    except (ApiError, KubeConfigError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
