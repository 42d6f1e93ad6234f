"""Validating admission webhooks, called as kube-apiserver calls them.

`WebhookAdmission.admit` is called by the server for create, update, patch and delete requests, with the
object as it would be stored (after defaulting) and, for update and delete, the current one. It reads every
`admissionregistration.k8s.io/v1` ValidatingWebhookConfiguration (in name order) and calls each webhook that
matches. Guarantees, as in kube-apiserver:
- Matching: `rules` (operations, apiGroups, apiVersions, resources with `*`, `res/sub`, `*/sub`, `*/*`;
  scope `Namespaced`/`Cluster`/`*`), `namespaceSelector` (labels of the object's Namespace; of the
  Namespace itself for namespaces; ignored for other cluster-scoped kinds) and `objectSelector` (labels of
  the new or the old object). ValidatingWebhookConfigurations themselves are never sent to webhooks.
- The request is the real `admission.k8s.io/v1` AdmissionReview: a fresh `uid`, kind/resource (and
  requestKind/requestResource), subResource, name, namespace, operation, userInfo, `object` (null on delete),
  `oldObject` (update and delete), `dryRun` and the operation's options.
- The call: `clientConfig.url`, or `clientConfig.service` (port 443 unless given) resolved through the
  `services` map (`namespace/name` or `namespace/name:port` -> `host:port`), since a devcluster has no
  Service network; TLS is verified against `caBundle` (the system roots without one) and the host name of
  the URL, or `<name>.<namespace>.svc` for a service. `timeoutSeconds` (default 10) bounds the connection
  and every read.
- A denial becomes the Status kube-apiserver returns: the webhook's status code (400 when below 400 or
  unset), its reason, and the message `admission webhook "<name>" denied the request: <message>` (or
  `... without explanation`). Warnings are returned for `Warning: 299` headers.
- A failed call (connection, TLS, timeout, non-200, bad response, uid mismatch) allows the request under
  `failurePolicy: Ignore` and fails it with a 500 InternalError naming the webhook under `Fail` (the
  default). A dry-run request reaching a webhook whose `sideEffects` is not `None`/`NoneOnDryRun` is a 400.
- Webhooks are called one after another; the first denial or failure ends the request. A write is admitted
  on its preview; a concurrent write between the call and the commit is not re-admitted.
"""

from __future__ import annotations

import base64
import binascii
import http.client
import json
import socket
import ssl
import urllib.parse
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ingressctl.devcluster import errors
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.resources import ResourceKind
from ingressctl.devcluster.selectors import LabelSelector, Requirement
from ingressctl.devcluster.store import Store
from ingressctl.logging import get_logger

log = get_logger(__name__)

GROUP = "admissionregistration.k8s.io"
PLURAL = "validatingwebhookconfigurations"
DEFAULT_TIMEOUT_SECONDS = 10
MAX_RESPONSE_BYTES = 3 * 1024 * 1024
USER_INFO = {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}
_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
_SELECTOR_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


class WebhookCallError(Exception):
    """The webhook could not be called or answered nonsense; the failurePolicy decides."""


@dataclass
class AdmissionAttributes:
    """What is being admitted (kube-apiserver's admission.Attributes)."""

    kind: ResourceKind
    subresource: str
    operation: str              # CREATE, UPDATE, DELETE
    namespace: str
    name: str
    obj: dict[str, Any] | None  # with apiVersion and kind
    old: dict[str, Any] | None
    dry_run: bool
    user: dict[str, Any] | None = None   # the requester's userInfo; None: the cluster's admin


def label_selector(sel: Any) -> LabelSelector:
    """A metav1.LabelSelector (matchLabels, matchExpressions) as a LabelSelector; ValueError if malformed."""
    if sel is None:
        return LabelSelector(())
    if not isinstance(sel, dict):
        raise ValueError("a label selector must be an object")
    reqs = [Requirement(str(k), "=", (str(v),)) for k, v in (sel.get("matchLabels") or {}).items()]
    for expr in sel.get("matchExpressions") or []:
        op = _SELECTOR_OPS.get(str((expr or {}).get("operator")))
        if op is None or not isinstance(expr.get("key"), str):
            raise ValueError(f"invalid label selector expression {expr!r}")
        values = tuple(str(v) for v in expr.get("values") or ())
        if (op in ("in", "notin")) != bool(values):
            need = "needs" if op in ("in", "notin") else "takes no"
            raise ValueError(f"operator {expr['operator']} {need} values")
        reqs.append(Requirement(expr["key"], op, values))
    return LabelSelector(tuple(reqs))


def _labels(obj: Mapping[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def _matches_resource(patterns: list[Any], plural: str, sub: str) -> bool:
    for p in patterns:
        res, _, psub = str(p).partition("/")
        if not sub and not psub and res in ("*", plural):
            return True
        if sub and psub in ("*", sub) and res in ("*", plural):
            return True
        if p == "*/*":
            return True
    return False


def rule_matches(rule: Mapping[str, Any], a: AdmissionAttributes) -> bool:
    """One RuleWithOperations against the request."""
    ops = rule.get("operations") or []
    if a.operation not in ops and "*" not in ops:
        return False
    if not any(g in ("*", a.kind.group) for g in rule.get("apiGroups") or []):
        return False
    if not any(v in ("*", a.kind.version) for v in rule.get("apiVersions") or []):
        return False
    if not _matches_resource(list(rule.get("resources") or []), a.kind.plural, a.subresource):
        return False
    scope = rule.get("scope") or "*"
    return scope == "*" or (scope == "Namespaced") == a.kind.namespaced


class WebhookAdmission:
    """Calls the ValidatingWebhookConfigurations of a store (see the module docstring)."""

    def __init__(self, store: Store, *, services: Mapping[str, str] | None = None) -> None:
        self._store = store
        self._services = dict(services or {})
        self._kind = store.registry.by_path(GROUP, "v1", PLURAL)

    def set_service(self, service: str, address: str) -> None:
        """Route `namespace/name[:port]` to `host:port` (what a Service network would do)."""
        self._services[service] = address

    def configurations(self) -> list[dict[str, Any]]:
        if self._kind is None:
            return []
        bucket = self._store.bucket(self._kind)
        with self._store.lock:
            stored = [bucket.objects[k] for k in bucket.keys]
        return [s.parse() for s in stored]

    def wanted(self, kind: ResourceKind, subresource: str, operation: str) -> bool:
        """Whether some webhook's rules match (selectors aside): only then is a write previewed and sent."""
        if self._kind is None or kind.group == GROUP or not self._store.bucket(self._kind).keys:
            return False
        a = AdmissionAttributes(kind, subresource, operation, "", "", None, None, False)
        return any(isinstance(r, dict) and rule_matches(r, a)
                   for cfg in self.configurations() for hook in cfg.get("webhooks") or []
                   if isinstance(hook, dict) for r in hook.get("rules") or [])

    def admit(self, a: AdmissionAttributes) -> list[str]:
        """Call every matching webhook; returns their warnings or raises the StatusError of a denial."""
        warnings: list[str] = []
        for cfg in self.configurations():
            for hook in cfg.get("webhooks") or []:
                if isinstance(hook, dict) and self._matches(hook, a):
                    warnings.extend(self._call(hook, a))
        return warnings

    # ------------------------------------------------------------------------------------------ matching
    def _matches(self, hook: Mapping[str, Any], a: AdmissionAttributes) -> bool:
        if not any(isinstance(r, dict) and rule_matches(r, a) for r in hook.get("rules") or []):
            return False
        try:
            if not self._namespace_matches(label_selector(hook.get("namespaceSelector")), a):
                return False
            obj_sel = label_selector(hook.get("objectSelector"))
        except ValueError as e:
            return self._failed(hook, f"invalid selector: {e}")
        return obj_sel.matches(_labels(a.obj)) or (a.old is not None and obj_sel.matches(_labels(a.old)))

    def _namespace_matches(self, sel: LabelSelector, a: AdmissionAttributes) -> bool:
        if not sel.requirements:
            return True
        if a.kind.group == "" and a.kind.plural == "namespaces":
            return sel.matches(_labels(a.obj if a.obj is not None else a.old))
        if not a.kind.namespaced:
            return True
        ns_kind = self._store.registry.by_path("", "v1", "namespaces")
        try:
            ns = self._store.get(ns_kind, "", a.namespace).parse() if ns_kind is not None else {}
        except StatusError:
            ns = {}
        return sel.matches(_labels(ns))

    # ------------------------------------------------------------------------------------------ calling
    def _failed(self, hook: Mapping[str, Any], why: str) -> bool:
        """A call failure: allowed (False = 'nothing to do') under Ignore, a 500 under Fail."""
        name = str(hook.get("name", ""))
        if hook.get("failurePolicy") == "Ignore":
            log.warning("admission webhook failed; ignored by its failurePolicy", webhook=name, error=why)
            return False
        raise errors.internal_error(f'failed calling webhook "{name}": {why}')

    def review_request(self, a: AdmissionAttributes) -> dict[str, Any]:
        k = a.kind
        gvk = {"group": k.group, "version": k.version, "kind": k.kind}
        gvr = {"group": k.group, "version": k.version, "resource": k.plural}
        req: dict[str, Any] = {
            "uid": str(uuid.uuid4()), "kind": gvk, "resource": gvr,
            "requestKind": gvk, "requestResource": gvr,
            "name": a.name, "operation": a.operation, "userInfo": a.user or USER_INFO, "object": a.obj,
            "oldObject": a.old, "dryRun": a.dry_run,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": _OPTIONS_KIND.get(a.operation, "")},
        }
        if a.subresource:
            req["subResource"] = a.subresource
        if k.namespaced:
            req["namespace"] = a.namespace
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}

    def _call(self, hook: Mapping[str, Any], a: AdmissionAttributes) -> list[str]:
        name = str(hook.get("name", ""))
        if a.dry_run and hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise errors.bad_request(f'admission webhook "{name}" does not support dry run')
        review = self.review_request(a)
        try:
            response = self._post(hook, review)
        except WebhookCallError as e:
            self._failed(hook, str(e))
            return []
        warnings = [str(w) for w in response.get("warnings") or [] if isinstance(w, str)]
        if response.get("allowed") is True:
            return warnings
        status = response.get("status")
        result: dict[str, Any] = status if isinstance(status, dict) else {}
        raw_code = result.get("code")
        code = raw_code if isinstance(raw_code, int) and 400 <= raw_code <= 599 else 400
        denied = f'admission webhook "{name}" denied the request'
        message, reason = str(result.get("message") or ""), str(result.get("reason") or "")
        text = f"{denied}: {message}" if message else f"{denied}: {reason}" if reason else \
            f"{denied} without explanation"
        return_reason = reason or {400: "BadRequest", 403: "Forbidden", 422: "Invalid"}.get(code, "")
        raise StatusError(code, return_reason, text,
                          result.get("details") if isinstance(result.get("details"), dict) else None)

    def _target(self, hook: Mapping[str, Any]) -> tuple[str, int, str, str, str]:
        """(connect host, port, TLS server name, path, URL for messages) of a webhook's clientConfig."""
        cc = hook.get("clientConfig") or {}
        if cc.get("url"):
            parts = urllib.parse.urlsplit(str(cc["url"]))
            if parts.scheme != "https" or not parts.hostname:
                raise WebhookCallError(f"the webhook URL {cc['url']!r} must be https://host[:port]/path")
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            return parts.hostname, parts.port or 443, parts.hostname, path, str(cc["url"])
        svc = cc.get("service")
        if not isinstance(svc, dict) or not svc.get("name") or not svc.get("namespace"):
            raise WebhookCallError("clientConfig needs a url or a service with namespace and name")
        ns, svc_name, port = str(svc["namespace"]), str(svc["name"]), int(svc.get("port") or 443)
        path = str(svc.get("path") or "/")
        address = self._services.get(f"{ns}/{svc_name}:{port}") or self._services.get(f"{ns}/{svc_name}")
        url = f"https://{svc_name}.{ns}.svc:{port}{path}"
        if not address:
            raise WebhookCallError(f'Post "{url}": service {ns}/{svc_name} is not reachable from devcluster '
                                   f"(route it with --webhook-service {ns}/{svc_name}=HOST:PORT)")
        host, _, mapped_port = address.rpartition(":")
        return host.strip("[]"), int(mapped_port), f"{svc_name}.{ns}.svc", path, url

    def _post(self, hook: Mapping[str, Any], review: dict[str, Any]) -> dict[str, Any]:
        try:
            host, port, server_name, path, url = self._target(hook)
        except ValueError as e:
            raise WebhookCallError(f"invalid clientConfig: {e}") from None
        if "v1" not in (hook.get("admissionReviewVersions") or []):
            raise WebhookCallError("admissionReviewVersions does not include v1")
        timeout = hook.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS
        ca = (hook.get("clientConfig") or {}).get("caBundle")
        try:
            # The caBundle, or the system's CAs when there is none (loaded only then: it reads many files).
            ctx = (ssl.create_default_context(cadata=base64.b64decode(ca, validate=True).decode("ascii"))
                   if ca else ssl.create_default_context())
            body = json.dumps(review).encode()
            sock = socket.create_connection((host, port), timeout=float(timeout))
            conn = http.client.HTTPConnection(host, port, timeout=float(timeout))
            conn.sock = ctx.wrap_socket(sock, server_hostname=server_name)
            try:
                conn.request("POST", path, body, {"Content-Type": "application/json",
                                                  "Accept": "application/json"})
                resp = conn.getresponse()
                data = resp.read(MAX_RESPONSE_BYTES + 1)
            finally:
                conn.close()
        except (OSError, ssl.SSLError, http.client.HTTPException, binascii.Error, UnicodeDecodeError,
                ValueError) as e:
            raise WebhookCallError(f'failed to call webhook: Post "{url}": {e}') from None
        if resp.status != 200:
            raise WebhookCallError(f'failed to call webhook: Post "{url}": the server responded with status '
                                   f"{resp.status}")
        if len(data) > MAX_RESPONSE_BYTES:
            raise WebhookCallError("the webhook's response is too large")
        try:
            answer = json.loads(data)
        except ValueError as e:
            raise WebhookCallError(f"the webhook's response is not JSON: {e}") from None
        response = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(response, dict):
            raise WebhookCallError("the webhook's response has no response object")
        if response.get("uid") != review["request"]["uid"]:
            raise WebhookCallError(f"expected response.uid={review['request']['uid']!r}, got "
                                   f"{str(response.get('uid'))[:64]!r}")
        return response
