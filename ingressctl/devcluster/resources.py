"""The table of resource kinds the devcluster serves, and the per-kind rules a real API server applies.

A `ResourceKind` row says where a kind lives (group, version, plural, scope), what discovery shows (kind,
singular, short names, verbs), whether it has a `/status` subresource and a `metadata.generation`, its
strategic-merge-patch metadata, its defaulting, the field selectors it supports, its `kubectl get` columns,
and (for a second version of one stored kind, like events.k8s.io/v1 Event) how to convert to and from the
stored form. New kinds are added by appending a row: `DevCluster(kinds=(*DEFAULT_KINDS, ResourceKind(...)))`.
"""

from __future__ import annotations

import ipaddress
import itertools
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ingressctl.devcluster.patch import FieldMeta
from ingressctl.devcluster.podspec import default_pod_spec
from ingressctl.devcluster.selectors import FieldGetter
from ingressctl.devcluster.strategy import (
    normalize_cluster_ips,
    secret_to_storage,
    validate_configmap,
    validate_ingressclass,
    validate_secret_update,
    validate_service,
)
from ingressctl.devcluster.validation import validate_ingress

Obj = dict[str, Any]
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Column:
    """A `kubectl get` column (a meta.k8s.io/v1 TableColumnDefinition plus how to compute the cell)."""

    name: str
    cell: Callable[[Obj], Any]
    type: str = "string"
    format: str = ""
    description: str = ""
    priority: int = 0


@dataclass(frozen=True)
class Subresource:
    """A subresource other than `/status` (e.g. serviceaccounts/token): its own kind, group and verbs, served
    by a handler the server is given for it."""

    name: str
    kind: str
    group: str = ""
    version: str = ""
    verbs: tuple[str, ...] = ("create",)


@dataclass(frozen=True)
class ResourceKind:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    has_status: bool = False               # a /status subresource; the main resource ignores status
    generation: bool = False               # metadata.generation, bumped on spec changes
    reset_status_on_create: bool = True    # like the real strategies' PrepareForCreate
    allow_create_on_update: bool = False   # PUT of a missing object creates it (Leases, Events)
    return_deleted_object: bool = False    # DELETE answers with the object instead of a Status
    strategic_merge: bool = True           # accepts strategic merge patches (custom resources do not)
    delete_finalizer: str = ""             # added by the first DELETE, which only marks the object (CRDs)
    patch_meta: FieldMeta = field(default_factory=lambda: object_patch_meta())
    # Defaulting on create and update: (new object, current object or None). It may set keys of the new
    # object's top-level and metadata dicts, but must replace (never modify) any nested value it changes.
    default: Callable[[Obj, Obj | None], None] | None = None
    field_selectors: Mapping[str, FieldGetter] = field(default_factory=dict)
    columns: tuple[Column, ...] = ()
    # Validation on create and update, after defaulting: (new object, current object or None, subresource)
    # -> field errors (field path, cause reason, message); any error refuses the write with 422 Invalid.
    validate: Callable[[Obj, Obj | None, str], list[tuple[str, str, str]]] | None = None
    # The fields of a request body the kind's schema does not know (paths), for fieldValidation=Strict/Warn;
    # None: the kind has no schema here and every field is accepted.
    unknown_fields: Callable[[Obj], list[str]] | None = None
    # A built-in kind's Go type as the kubernetes client's models name it ("V1Service"): its declared fields
    # (`fields.TypedFields`) are the schema fieldValidation checks and unknown fields are dropped against.
    typed: str = ""
    storage: str = ""                      # the stored kind's "<group>/<plural>" when this is another version
    to_storage: Callable[[Obj], Obj] | None = None
    from_storage: Callable[[Obj], Obj] | None = None
    subresources: tuple[Subresource, ...] = ()   # besides status

    def subresource(self, name: str) -> Subresource | None:
        return next((s for s in self.subresources if s.name == name), None)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_id(self) -> str:
        return self.storage or f"{self.group}/{self.plural}"

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def group_resource(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def all_field_getters(self) -> dict[str, FieldGetter]:
        getters: dict[str, FieldGetter] = {"metadata.name": _meta("name")}
        if self.namespaced:
            getters["metadata.namespace"] = _meta("namespace")
        getters.update(self.field_selectors)
        return getters


# ----------------------------------------------------------------------------------------- helpers
def _meta(key: str) -> FieldGetter:
    def get(obj: Obj) -> str:
        return str(obj.get("metadata", {}).get(key, "") or "")
    return get


def _path(*keys: str) -> FieldGetter:
    def get(obj: Obj) -> str:
        node: Any = obj
        for key in keys:
            if not isinstance(node, dict):
                return ""
            node = node.get(key)
        if node is None:
            return ""
        if isinstance(node, bool):
            return "true" if node else "false"
        return str(node)
    return get


def now_rfc3339() -> str:
    """Second-precision RFC 3339 UTC time, as metav1.Time serialises."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _age(obj: Obj) -> str:
    created = obj.get("metadata", {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    try:
        then = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<unknown>"
    return human_duration((datetime.now(UTC) - then).total_seconds())


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration."""
    s = int(seconds)
    if s < 0:
        return "<invalid>"
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = s // 3600
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    return f"{h // 24 // 365}y"


NAME = Column("Name", _meta("name"), format="name", description="Name must be unique within a namespace.")
AGE = Column("Age", _age,
             description="CreationTimestamp is a timestamp representing the server time when this "
             "object was created.")


def _join(values: Iterable[Any], empty: str = "<none>") -> str:
    vals = [str(v) for v in values if v not in (None, "")]
    return ",".join(vals) if vals else empty


# -------------------------------------------------------------------------------------- patch meta
OBJECT_META = FieldMeta(fields={
    "finalizers": FieldMeta(merge_primitives=True),
    "ownerReferences": FieldMeta(merge_key="uid"),
})
_CONTAINER = {
    "ports": FieldMeta(merge_key="containerPort"),
    "env": FieldMeta(merge_key="name"),
    "volumeMounts": FieldMeta(merge_key="mountPath"),
    "volumeDevices": FieldMeta(merge_key="devicePath"),
    "resizePolicy": FieldMeta(merge_key="resourceName"),
}
_CONDITIONS = FieldMeta(merge_key="type")
POD_SPEC_META = FieldMeta(fields={
    "containers": FieldMeta(merge_key="name", fields=_CONTAINER),
    "initContainers": FieldMeta(merge_key="name", fields=_CONTAINER),
    "ephemeralContainers": FieldMeta(merge_key="name", fields=_CONTAINER),
    "volumes": FieldMeta(merge_key="name", retain_keys=True),
    "imagePullSecrets": FieldMeta(merge_key="name"),
    "hostAliases": FieldMeta(merge_key="ip"),
    "topologySpreadConstraints": FieldMeta(merge_key="topologyKey"),
    "resourceClaims": FieldMeta(merge_key="name", retain_keys=True),
    "schedulingGates": FieldMeta(merge_key="name"),
})


def object_patch_meta(**fields: FieldMeta) -> FieldMeta:
    """Strategic-merge metadata for a kind: ObjectMeta's plus the given top-level fields. For a workload kind
    added to the table (e.g. apps/v1 Deployment), pass spec=FieldMeta(fields={"template": FieldMeta(fields={
    "metadata": OBJECT_META, "spec": POD_SPEC_META})}) so kubectl apply merges containers by name."""
    return FieldMeta(fields={"metadata": OBJECT_META, **fields})


# -------------------------------------------------------------------------------------- defaulting
_GEN_LOCK = threading.Lock()
_CLUSTER_IPS = itertools.count(10)


def _allocate_cluster_ip() -> str:
    with _GEN_LOCK:
        n = next(_CLUSTER_IPS)
    return str(ipaddress.ip_address("10.96.0.0") + n % (1 << 20))


def _dict(value: Any) -> Obj:
    return dict(value) if isinstance(value, dict) else {}


def _default_namespace(obj: Obj, old: Obj | None) -> None:
    spec = obj["spec"] = _dict(obj.get("spec"))
    spec.setdefault("finalizers", ["kubernetes"])
    status = obj["status"] = _dict(obj.get("status"))
    status.setdefault("phase", "Active")
    meta = obj["metadata"]
    meta["labels"] = {**_dict(meta.get("labels")), "kubernetes.io/metadata.name": meta.get("name", "")}


def _default_ports(ports: Any, target_port: bool) -> Any:
    if not isinstance(ports, list):
        return ports
    out = []
    for port in ports:
        if isinstance(port, dict):
            port = {**port}
            port.setdefault("protocol", "TCP")
            if target_port and "targetPort" not in port and "port" in port:
                port["targetPort"] = port["port"]
        out.append(port)
    return out


def _default_service(obj: Obj, old: Obj | None) -> None:
    spec = obj["spec"] = _dict(obj.get("spec"))
    svc_type = spec.setdefault("type", "ClusterIP")
    if svc_type != "ExternalName":
        old_spec = _dict((old or {}).get("spec"))
        if old is not None and old_spec.get("type") != "ExternalName":
            normalize_cluster_ips(spec, old_spec)
            # What the update leaves out keeps its allocated value (kube-apiserver's patchAllocatedValues).
            if not spec.get("clusterIP") and old_spec.get("clusterIP"):
                spec["clusterIP"] = old_spec["clusterIP"]
            if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
                spec["clusterIPs"] = list(old_spec["clusterIPs"])
        if not spec.get("clusterIP"):
            spec["clusterIP"] = _allocate_cluster_ip()
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        spec.setdefault("sessionAffinity", "None")
    if "ports" in spec:
        spec["ports"] = _default_ports(spec["ports"], target_port=True)
    if svc_type in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    obj.setdefault("status", {"loadBalancer": {}})


def _default_pod(obj: Obj, old: Obj | None) -> None:
    spec = obj["spec"] = _dict(obj.get("spec"))
    default_pod_spec(spec)
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("serviceAccountName", "default")     # the ServiceAccount admission plug-in's
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    status = obj["status"] = _dict(obj.get("status"))
    status.setdefault("phase", "Pending")


def _default_secret(obj: Obj, old: Obj | None) -> None:
    obj.setdefault("type", "Opaque")


def _default_endpointslice(obj: Obj, old: Obj | None) -> None:
    if "ports" in obj:
        obj["ports"] = _default_ports(obj["ports"], target_port=False)


def _default_ingress(obj: Obj, old: Obj | None) -> None:
    obj.setdefault("status", {"loadBalancer": {}})


def _default_event(obj: Obj, old: Obj | None) -> None:
    obj.setdefault("eventTime", None)
    obj.setdefault("involvedObject", {})
    obj.setdefault("reportingComponent", "")
    obj.setdefault("reportingInstance", "")
    obj.setdefault("source", {})


# ----------------------------------------------------------------------------------- events.k8s.io
_CORE_TO_V1 = (("reportingComponent", "reportingController"), ("involvedObject", "regarding"),
               ("message", "note"), ("source", "deprecatedSource"),
               ("firstTimestamp", "deprecatedFirstTimestamp"),
               ("lastTimestamp", "deprecatedLastTimestamp"), ("count", "deprecatedCount"))
_SAME = ("metadata", "eventTime", "series", "reportingInstance", "action", "reason", "related", "type")


def event_to_events_v1(core: Obj) -> Obj:
    """core/v1 Event (the stored form) to events.k8s.io/v1 Event."""
    out: Obj = {k: core[k] for k in _SAME if k in core}
    for old, new in _CORE_TO_V1:
        value = core.get(old)
        if value not in (None, "", {}, 0):
            out[new] = value
    out.setdefault("eventTime", None)
    series = out.get("series")
    if isinstance(series, dict) and "lastObservedTime" in series:
        out["series"] = {"count": series.get("count", 0), "lastObservedTime": series["lastObservedTime"]}
    return out


def events_v1_to_event(ev: Obj) -> Obj:
    """events.k8s.io/v1 Event to the stored core/v1 form."""
    out: Obj = {k: ev[k] for k in _SAME if k in ev}
    for old, new in _CORE_TO_V1:
        if new in ev:
            out[old] = ev[new]
    return out


# ----------------------------------------------------------------------------------------- columns
def _ingress_hosts(obj: Obj) -> str:
    rules = obj.get("spec", {}).get("rules") or []
    hosts = [r.get("host") or "*" for r in rules if isinstance(r, dict)]
    if len(hosts) > 4:
        return ",".join(hosts[:4]) + f" + {len(hosts) - 4} more..."
    return ",".join(hosts) if hosts else "*"


def _lb_addresses(obj: Obj) -> str:
    ing = (obj.get("status", {}).get("loadBalancer") or {}).get("ingress") or []
    return ",".join(str(i.get("ip") or i.get("hostname") or "") for i in ing if isinstance(i, dict))


def _ingress_ports(obj: Obj) -> str:
    return "80, 443" if obj.get("spec", {}).get("tls") else "80"


def _service_ports(obj: Obj) -> str:
    out = []
    for p in obj.get("spec", {}).get("ports") or []:
        if not isinstance(p, dict):
            continue
        text = str(p.get("port", ""))
        if p.get("nodePort"):
            text += f":{p['nodePort']}"
        out.append(f"{text}/{p.get('protocol', 'TCP')}")
    return ",".join(out) if out else "<none>"


def _service_external(obj: Obj) -> str:
    spec = obj.get("spec", {})
    if spec.get("type") == "ExternalName":
        return str(spec.get("externalName", ""))
    addrs = _lb_addresses(obj) or _join(spec.get("externalIPs") or [], "")
    if spec.get("type") == "LoadBalancer":
        return addrs or "<pending>"
    return addrs or "<none>"


def _slice_endpoints(obj: Obj) -> str:
    endpoints = [e for e in obj.get("endpoints") or [] if isinstance(e, dict)]
    addrs = [a for e in endpoints for a in (e.get("addresses") or [])[:1]]
    if not addrs:
        return "<unset>"
    return ",".join(addrs[:3]) + (f" + {len(addrs) - 3} more..." if len(addrs) > 3 else "")


def _slice_ports(obj: Obj) -> str:
    ports = [str(p.get("port")) for p in (obj.get("ports") or []) if isinstance(p, dict) and p.get("port")]
    return ",".join(ports) if ports else "<unset>"


def _pod_ready(obj: Obj) -> str:
    statuses = obj.get("status", {}).get("containerStatuses") or []
    total = len(obj.get("spec", {}).get("containers") or [])
    ready = sum(1 for s in statuses if isinstance(s, dict) and s.get("ready"))
    return f"{ready}/{total}"


def _pod_restarts(obj: Obj) -> int:
    return sum(int(s.get("restartCount", 0)) for s in obj.get("status", {}).get("containerStatuses") or []
               if isinstance(s, dict))


def _event_object(obj: Obj) -> str:
    ref = obj.get("involvedObject") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


def _event_last_seen(obj: Obj) -> str:
    ts = obj.get("lastTimestamp") or obj.get("eventTime") or obj.get("metadata", {}).get("creationTimestamp")
    return _age({"metadata": {"creationTimestamp": str(ts)[:19] + "Z"}}) if ts else "<unknown>"


# --------------------------------------------------------------------------------------- the table
NAMESPACES = ResourceKind(
    "", "v1", "namespaces", "Namespace", namespaced=False, singular="namespace", short_names=("ns",),
    typed="V1Namespace",
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"), has_status=True,
    return_deleted_object=True, default=_default_namespace,
    field_selectors={"status.phase": _path("status", "phase")},
    columns=(NAME, Column("Status", _path("status", "phase"), description="The phase of the namespace."),
             AGE))
SERVICES = ResourceKind(
    "", "v1", "services", "Service", singular="service", short_names=("svc",), categories=("all",),
    typed="V1Service", validate=validate_service,
    verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
    has_status=True, generation=True, return_deleted_object=True, default=_default_service,
    patch_meta=object_patch_meta(spec=FieldMeta(fields={"ports": FieldMeta(merge_key="port")}),
                    status=FieldMeta(fields={"conditions": _CONDITIONS})),
    field_selectors={"spec.clusterIP": _path("spec", "clusterIP"), "spec.type": _path("spec", "type")},
    columns=(NAME, Column("Type", _path("spec", "type")), Column("Cluster-IP", _path("spec", "clusterIP")),
             Column("External-IP", _service_external), Column("Port(s)", _service_ports), AGE,
             Column("Selector", lambda o: _join(f"{k}={v}" for k, v in (o.get("spec", {}).get("selector")
                                                                         or {}).items()), priority=1)))
ENDPOINTS = ResourceKind(
    "", "v1", "endpoints", "Endpoints", singular="endpoints", short_names=("ep",), typed="V1Endpoints",
    columns=(NAME, Column("Endpoints", lambda o: _join(
        f"{a.get('ip')}:{p.get('port')}" for s in o.get("subsets") or [] if isinstance(s, dict)
        for a in s.get("addresses") or [] for p in s.get("ports") or [{}])), AGE))
SECRETS = ResourceKind(
    "", "v1", "secrets", "Secret", singular="secret", default=_default_secret,
    validate=validate_secret_update, to_storage=secret_to_storage,
    typed="V1Secret",
    field_selectors={"type": _path("type")},
    columns=(NAME, Column("Type", _path("type")),
             Column("Data", lambda o: len(o.get("data") or {}), type="integer"),
             AGE))
CONFIGMAPS = ResourceKind(
    "", "v1", "configmaps", "ConfigMap", singular="configmap", short_names=("cm",), typed="V1ConfigMap",
    validate=validate_configmap,
    columns=(NAME, Column("Data", lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {}),
                          type="integer"), AGE))
PODS = ResourceKind(
    "", "v1", "pods", "Pod", singular="pod", short_names=("po",), categories=("all",), has_status=True,
    typed="V1Pod",
    generation=True, return_deleted_object=True, default=_default_pod,
    patch_meta=object_patch_meta(spec=POD_SPEC_META, status=FieldMeta(fields={
        "conditions": _CONDITIONS, "podIPs": FieldMeta(merge_key="ip"),
        "hostIPs": FieldMeta(merge_key="ip")})),
    field_selectors={"spec.nodeName": _path("spec", "nodeName"), "status.phase": _path("status", "phase"),
                     "status.podIP": _path("status", "podIP"),
                     "spec.restartPolicy": _path("spec", "restartPolicy"),
                     "spec.schedulerName": _path("spec", "schedulerName"),
                     "spec.serviceAccountName": _path("spec", "serviceAccountName"),
                     "status.nominatedNodeName": _path("status", "nominatedNodeName")},
    columns=(NAME, Column("Ready", _pod_ready), Column("Status", _path("status", "phase")),
             Column("Restarts", _pod_restarts, type="integer"), AGE,
             Column("IP", _path("status", "podIP"), priority=1), Column("Node", _path("spec", "nodeName"),
                                                                       priority=1)))
_EVENT_FIELDS: dict[str, FieldGetter] = {
    "involvedObject.kind": _path("involvedObject", "kind"),
    "involvedObject.namespace": _path("involvedObject", "namespace"),
    "involvedObject.name": _path("involvedObject", "name"),
    "involvedObject.uid": _path("involvedObject", "uid"),
    "involvedObject.apiVersion": _path("involvedObject", "apiVersion"),
    "involvedObject.resourceVersion": _path("involvedObject", "resourceVersion"),
    "involvedObject.fieldPath": _path("involvedObject", "fieldPath"),
    "reason": _path("reason"), "reportingComponent": _path("reportingComponent"),
    "source": _path("source", "component"), "type": _path("type"),
}
EVENTS = ResourceKind(
    "", "v1", "events", "Event", singular="event", short_names=("ev",), allow_create_on_update=True,
    typed="CoreV1Event",
    reset_status_on_create=False, default=_default_event, field_selectors=_EVENT_FIELDS,
    columns=(Column("Last Seen", _event_last_seen), Column("Type", _path("type")),
             Column("Reason", _path("reason")), Column("Object", _event_object),
             Column("Message", _path("message")),
             ))
EVENTS_V1 = ResourceKind(
    "events.k8s.io", "v1", "events", "Event", singular="event", short_names=("ev",), typed="EventsV1Event",
    allow_create_on_update=True, reset_status_on_create=False, default=_default_event, storage="/events",
    to_storage=events_v1_to_event, from_storage=event_to_events_v1,
    field_selectors={k.replace("involvedObject", "regarding"): v for k, v in _EVENT_FIELDS.items()},
    columns=(NAME, AGE))
ENDPOINTSLICES = ResourceKind(
    "discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", singular="endpointslice",
    typed="V1EndpointSlice",
    default=_default_endpointslice, field_selectors={"addressType": _path("addressType")},
    columns=(NAME, Column("AddressType", _path("addressType")), Column("Ports", _slice_ports),
             Column("Endpoints", _slice_endpoints), AGE))
INGRESSES = ResourceKind(
    "networking.k8s.io", "v1", "ingresses", "Ingress", singular="ingress", short_names=("ing",),
    typed="V1Ingress",
    has_status=True, generation=True, default=_default_ingress, validate=validate_ingress,
    columns=(NAME, Column("Class", lambda o: o.get("spec", {}).get("ingressClassName") or "<none>"),
             Column("Hosts", _ingress_hosts), Column("Address", _lb_addresses),
             Column("Ports", _ingress_ports),
             AGE))
INGRESSCLASSES = ResourceKind(
    "networking.k8s.io", "v1", "ingressclasses", "IngressClass", namespaced=False, singular="ingressclass",
    typed="V1IngressClass", validate=validate_ingressclass,
    generation=True,
    columns=(NAME, Column("Controller", _path("spec", "controller")),
             Column("Parameters", lambda o: _join([(o.get("spec", {}).get("parameters") or {}).get("name")])),
             AGE))
LEASES = ResourceKind(
    "coordination.k8s.io", "v1", "leases", "Lease", singular="lease", allow_create_on_update=True,
    typed="V1Lease",
    columns=(NAME, Column("Holder", _path("spec", "holderIdentity")), AGE))
VALIDATING_WEBHOOK_CONFIGURATIONS = ResourceKind(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
    typed="V1ValidatingWebhookConfiguration",
    namespaced=False, singular="validatingwebhookconfiguration", categories=("api-extensions",),
    columns=(NAME, Column("Webhooks", lambda o: len(o.get("webhooks") or []),
                                           type="integer"), AGE))

DEFAULT_KINDS: tuple[ResourceKind, ...] = (
    NAMESPACES, SERVICES, ENDPOINTS, SECRETS, CONFIGMAPS, PODS, EVENTS, EVENTS_V1, ENDPOINTSLICES, INGRESSES,
    INGRESSCLASSES,
    LEASES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
)
