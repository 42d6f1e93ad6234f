"""ingressctl.devcluster: an in-memory Kubernetes API server speaking the real wire protocol.

It serves discovery, CRUD, the status subresource, merge/strategic-merge/JSON patches, paginated lists with
selectors and watches (bookmarks, timeouts, 410 after a bounded history) for the kinds in `resources.py` and
`builtin.py`, and for the kinds of the `apiextensions.k8s.io/v1` CustomResourceDefinitions created in it
(`crd.py`: discovery at once, structural schemas enforced, pruning, defaults, printer columns), with
ServiceAccount tokens (TokenRequest), server-side apply (`apply.py`) and, on request, RBAC authorization
(`rbac.py`), with fault injection and request statistics for tests. It is a product feature for demos,
development and benchmarks, not a test double: it behaves like a real API server wherever a controller could
tell the difference.

Command line (prints "<url> kubeconfig=<path>" once serving; SIGINT/SIGTERM stop it with exit status 0):

    python -m ingressctl.devcluster --port 0 --kubeconfig-out .run/kubeconfig --manifests examples/ [--tls] \
        [--authorization-mode RBAC]

Python:

    with DevCluster(bookmark_interval=0.2) as dc:
        dc.write_kubeconfig(path)                 # for kubectl and the kubernetes client
        dc.load(objects)                          # bulk create-or-replace, status kept
        dc.faults.set_error_rate(429, 0.5, verb="list", resource="ingresses", retry_after=1)
        dc.faults.set_latency(50, verb="update", resource="ingresses/status")
        dc.faults.drop_watches(); dc.faults.compact()
        dc.stats.count("watch", "ingresses"); dc.stats.max_in_flight("list", "ingresses"); dc.stats.calls()

    with DevCluster(authorization_mode="RBAC") as dc:    # the kubeconfig carries the admin token
        token = dc.create_token("ns", "sa")              # or POST .../serviceaccounts/sa/token
        dc.write_kubeconfig(path, token=token)           # requests as system:serviceaccount:ns:sa
        dc.access_log.allowed("system:serviceaccount:ns:sa"); dc.access_log.denied(...)

Built-in kinds are validated where the controller's users could tell (`validation.py`: Ingress, Secret;
`strategy.py`: immutable fields, Secret `stringData` merged into `data` and never stored); `load` skips
validation, like a restore of the API server's storage. Every write decodes as kube-apiserver's does
(`decode.py`): fields a kind does not declare (`fields.py` for built-in kinds, the structural schema for
custom resources) and duplicate fields are refused, warned about or dropped per `fieldValidation` (Warn when
absent), and server-side apply refuses undeclared fields.

Validating admission webhooks are called as kube-apiserver calls them (`admission.py`).

Known differences from a real API server: authentication by bearer token only (the admin token, ServiceAccount
tokens), RBAC without ClusterRole aggregation and without escalation checks on RBAC writes, no mutating
admission webhooks, no CEL rules (`x-kubernetes-validations`) or conversion webhooks for CRDs, most built-in
kinds' values unvalidated (their field names are checked), OpenAPI schemas for custom resources only
(`openapi.py`; built-in group/versions publish their operations only, so kubectl computes strategic merge
patches from its compiled-in types), protobuf accepted only for the bodies kubectl's create generators send,
and bookmarks every `bookmark_interval` seconds (default 2) rather than every minute.
"""

from ingressctl.devcluster.auth import Access, AccessLog
from ingressctl.devcluster.builtin import DEFAULT_KINDS
from ingressctl.devcluster.cluster import INITIAL_NAMESPACES, DevCluster
from ingressctl.devcluster.faults import Call, FaultInjector, RequestStats
from ingressctl.devcluster.resources import Column, ResourceKind

__all__ = ["DEFAULT_KINDS", "INITIAL_NAMESPACES", "Access", "AccessLog", "Call", "Column", "DevCluster",
           "FaultInjector", "RequestStats", "ResourceKind"]
