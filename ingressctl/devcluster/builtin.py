"""Built-in kinds a chart or a kubectl user creates and no devcluster controller acts on: ServiceAccounts,
workloads (Deployment, DaemonSet, ReplicaSet, StatefulSet), RBAC (Role, ClusterRole and their bindings),
PodDisruptionBudgets and HorizontalPodAutoscalers; and SelfSubjectAccessReview, which is answered, not stored.

Each is one row of the kinds table, stored, listed, watched and patched by the generic path with the defaults,
strategic-merge keys, short names and `kubectl get` columns kube-apiserver gives it. Nothing reconciles them:
a Deployment's status stays as written. `DEFAULT_KINDS` is the table a `DevCluster` serves by default: the
core kinds of `resources.py` plus these.
"""

from __future__ import annotations

from typing import Any

from ingressctl.devcluster.patch import FieldMeta
from ingressctl.devcluster.podspec import default_pod_spec
from ingressctl.devcluster.resources import (
    AGE,
    NAME,
    OBJECT_META,
    POD_SPEC_META,
    Column,
    Obj,
    ResourceKind,
    Subresource,
    object_patch_meta,
)
from ingressctl.devcluster.resources import (
    DEFAULT_KINDS as CORE_KINDS,
)

RBAC_GROUP = "rbac.authorization.k8s.io"
_STATUS_CONDITIONS = FieldMeta(fields={"conditions": FieldMeta(merge_key="type")})
_WORKLOAD_META = object_patch_meta(
    spec=FieldMeta(fields={"template": FieldMeta(fields={"metadata": OBJECT_META, "spec": POD_SPEC_META})}),
    status=_STATUS_CONDITIONS)


def _get(obj: Obj, *keys: str, default: Any = None) -> Any:
    node: Any = obj
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return node


def _dict(value: Any) -> Obj:
    return dict(value) if isinstance(value, dict) else {}


def _default_pod_template(spec: Obj) -> None:
    template = spec["template"] = _dict(spec.get("template"))
    pod = template["spec"] = _dict(template.get("spec"))   # copies: defaulting never edits nested input
    default_pod_spec(pod)


def _default_deployment(obj: Obj, old: Obj | None) -> None:
    spec = obj["spec"] = _dict(obj.get("spec"))
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    spec.setdefault("strategy", {"type": "RollingUpdate",
                                 "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    _default_pod_template(spec)


def _default_daemonset(obj: Obj, old: Obj | None) -> None:
    spec = obj["spec"] = _dict(obj.get("spec"))
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("updateStrategy", {"type": "RollingUpdate",
                                       "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    _default_pod_template(spec)


def _default_replicaset(obj: Obj, old: Obj | None) -> None:
    spec = obj["spec"] = _dict(obj.get("spec"))
    spec.setdefault("replicas", 1)
    _default_pod_template(spec)


def _default_statefulset(obj: Obj, old: Obj | None) -> None:
    spec = obj["spec"] = _dict(obj.get("spec"))
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    _default_pod_template(spec)


def _count(*keys: str) -> Column:
    return Column(keys[-1][0].upper() + keys[-1][1:], lambda o: int(_get(o, *keys, default=0) or 0),
                  type="integer")


def _ready_of(ready: str, total: tuple[str, ...]) -> Column:
    return Column("Ready", lambda o: f"{_get(o, 'status', ready, default=0) or 0}/"
                                     f"{_get(o, *total, default=0) or 0}")


def _role_ref(obj: Obj) -> str:
    ref = _dict(obj.get("roleRef"))
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _subjects(kind: str) -> Column:
    def cell(obj: Obj) -> str:
        subjects = [s for s in obj.get("subjects") or [] if isinstance(s, dict) and s.get("kind") == kind]
        if kind == "ServiceAccount":
            names = [f"{s.get('namespace', '')}/{s.get('name', '')}" for s in subjects]
        else:
            names = [str(s.get("name", "")) for s in subjects]
        return ", ".join(names)
    return Column(kind + "s", cell, priority=1)


def _or_na(title: str, *keys: str) -> Column:
    def cell(obj: Obj) -> str:
        value = _get(obj, *keys)
        return "N/A" if value is None else str(value)
    return Column(title, cell)


def _hpa_reference(obj: Obj) -> str:
    ref = _dict(_get(obj, "spec", "scaleTargetRef"))
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _created_at(obj: Obj) -> str:
    return str(_get(obj, "metadata", "creationTimestamp", default=""))


# The TokenRequest subresource (authentication.k8s.io/v1), answered by auth.AccessControl.token_request.
TOKEN = Subresource("token", kind="TokenRequest", group="authentication.k8s.io", version="v1",
                    verbs=("create",))

SERVICEACCOUNTS = ResourceKind(
    "", "v1", "serviceaccounts", "ServiceAccount", singular="serviceaccount", short_names=("sa",),
    typed="V1ServiceAccount",
    subresources=(TOKEN,),
    patch_meta=object_patch_meta(secrets=FieldMeta(merge_key="name")),
    columns=(NAME, Column("Secrets", lambda o: len(o.get("secrets") or []), type="integer"), AGE))
DEPLOYMENTS = ResourceKind(
    "apps", "v1", "deployments", "Deployment", singular="deployment", short_names=("deploy",),
    typed="V1Deployment",
    categories=("all",), has_status=True, generation=True, default=_default_deployment,
    patch_meta=_WORKLOAD_META,
    columns=(NAME, _ready_of("readyReplicas", ("spec", "replicas")),
             Column("Up-to-date", lambda o: int(_get(o, "status", "updatedReplicas", default=0) or 0),
                    type="integer"),
             Column("Available", lambda o: int(_get(o, "status", "availableReplicas", default=0) or 0),
                    type="integer"),
             AGE))
DAEMONSETS = ResourceKind(
    "apps", "v1", "daemonsets", "DaemonSet", singular="daemonset", short_names=("ds",), categories=("all",),
    typed="V1DaemonSet",
    has_status=True, generation=True, default=_default_daemonset, patch_meta=_WORKLOAD_META,
    columns=(NAME, _count("status", "desiredNumberScheduled"), _count("status", "currentNumberScheduled"),
             _count("status", "numberReady"), _count("status", "updatedNumberScheduled"),
             _count("status", "numberAvailable"),
             Column("Node Selector", lambda o: ",".join(
                 f"{k}={v}" for k, v in _dict(_get(o, "spec", "template", "spec", "nodeSelector")).items())
                 or "<none>"),
             AGE))
REPLICASETS = ResourceKind(
    "apps", "v1", "replicasets", "ReplicaSet", singular="replicaset", short_names=("rs",),
    typed="V1ReplicaSet",
    categories=("all",), has_status=True, generation=True, default=_default_replicaset,
    patch_meta=_WORKLOAD_META,
    columns=(NAME, Column("Desired", lambda o: int(_get(o, "spec", "replicas", default=0) or 0),
                          type="integer"),
             _count("status", "replicas"), _count("status", "readyReplicas"), AGE))
STATEFULSETS = ResourceKind(
    "apps", "v1", "statefulsets", "StatefulSet", singular="statefulset", short_names=("sts",),
    typed="V1StatefulSet",
    categories=("all",), has_status=True, generation=True, default=_default_statefulset,
    patch_meta=_WORKLOAD_META,
    columns=(NAME, _ready_of("readyReplicas", ("spec", "replicas")), AGE))
ROLES = ResourceKind(
    RBAC_GROUP, "v1", "roles", "Role", singular="role", typed="V1Role",
    columns=(NAME, Column("Created At", _created_at, format="date")))
CLUSTERROLES = ResourceKind(
    RBAC_GROUP, "v1", "clusterroles", "ClusterRole", namespaced=False, singular="clusterrole",
    typed="V1ClusterRole",
    columns=(NAME, Column("Created At", _created_at, format="date")))
_BINDING_COLUMNS = (NAME, Column("Role", _role_ref), AGE, _subjects("User"), _subjects("Group"),
                    _subjects("ServiceAccount"))
ROLEBINDINGS = ResourceKind(
    RBAC_GROUP, "v1", "rolebindings", "RoleBinding", singular="rolebinding", columns=_BINDING_COLUMNS,
    typed="V1RoleBinding")
CLUSTERROLEBINDINGS = ResourceKind(
    RBAC_GROUP, "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False,
    typed="V1ClusterRoleBinding",
    singular="clusterrolebinding", columns=_BINDING_COLUMNS)
PODDISRUPTIONBUDGETS = ResourceKind(
    "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", singular="poddisruptionbudget",
    typed="V1PodDisruptionBudget",
    short_names=("pdb",), has_status=True, generation=True,
    patch_meta=object_patch_meta(status=_STATUS_CONDITIONS),
    columns=(NAME, _or_na("Min Available", "spec", "minAvailable"),
             _or_na("Max Unavailable", "spec", "maxUnavailable"),
             Column("Allowed Disruptions", lambda o: int(_get(o, "status", "disruptionsAllowed", default=0)
                                                         or 0), type="integer"),
             AGE))
HORIZONTALPODAUTOSCALERS = ResourceKind(
    "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler",
    typed="V2HorizontalPodAutoscaler",
    singular="horizontalpodautoscaler", short_names=("hpa",), categories=("all",), has_status=True,
    patch_meta=object_patch_meta(status=_STATUS_CONDITIONS),
    columns=(NAME, Column("Reference", _hpa_reference),
             Column("MinPods", lambda o: _get(o, "spec", "minReplicas", default=1), type="integer"),
             Column("MaxPods", lambda o: _get(o, "spec", "maxReplicas", default=0), type="integer"),
             Column("Replicas", lambda o: int(_get(o, "status", "currentReplicas", default=0) or 0),
                    type="integer"),
             AGE))

# Answered, never stored (auth.AccessControl.self_subject_access_review).
SELFSUBJECTACCESSREVIEWS = ResourceKind(
    "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", namespaced=False,
    typed="V1SelfSubjectAccessReview",
    singular="selfsubjectaccessreview", verbs=("create",))

BUILTIN_KINDS: tuple[ResourceKind, ...] = (
    SERVICEACCOUNTS, DEPLOYMENTS, DAEMONSETS, REPLICASETS, STATEFULSETS, ROLES, CLUSTERROLES, ROLEBINDINGS,
    CLUSTERROLEBINDINGS, PODDISRUPTIONBUDGETS, HORIZONTALPODAUTOSCALERS, SELFSUBJECTACCESSREVIEWS,
)
DEFAULT_KINDS: tuple[ResourceKind, ...] = (*CORE_KINDS, *BUILTIN_KINDS)
