"""Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) into JSON objects.

kubectl's typed clients (`kubectl create namespace|configmap|secret|service|ingress|token|serviceaccount|
role|clusterrole|rolebinding|clusterrolebinding`, `kubectl auth can-i`) send protobuf. This
module decodes the `k8s\\x00` envelope (runtime.Unknown) and the messages of those kinds from field tables
written after k8s.io/api's generated.proto, and produces the JSON the same object would have (empty values
dropped, as Go's `omitempty` does; bytes as base64; IntOrString and Time as in JSON). Responses are always
JSON, which every client accepts. A body of another kind raises `ProtobufError`.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Mapping
from typing import Any

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    """The body is not a decodable Kubernetes protobuf object."""


# A field: (json name, type, repeated). Types: "string", "bytes", "int", "bool", "time", "intorstr",
# "map_ss" (map<string,string>), "map_sb" (map<string,bytes>), a nested table, or ("inline", table).
Table = Mapping[int, tuple[str, Any, bool]]


def _f(name: str, kind: Any, repeated: bool = False) -> tuple[str, Any, bool]:
    return (name, kind, repeated)


TIME: Table = {}
OWNER_REFERENCE: Table = {1: _f("kind", "string"), 3: _f("name", "string"), 4: _f("uid", "string"),
                          5: _f("apiVersion", "string"), 6: _f("controller", "bool"),
                          7: _f("blockOwnerDeletion", "bool")}
OBJECT_META: Table = {
    1: _f("name", "string"), 2: _f("generateName", "string"), 3: _f("namespace", "string"),
    5: _f("uid", "string"), 6: _f("resourceVersion", "string"), 7: _f("generation", "int"),
    8: _f("creationTimestamp", "time"), 9: _f("deletionTimestamp", "time"),
    10: _f("deletionGracePeriodSeconds", "int"), 11: _f("labels", "map_ss"), 12: _f("annotations", "map_ss"),
    13: _f("ownerReferences", OWNER_REFERENCE, True), 14: _f("finalizers", "string", True),
}
NAMESPACE: Table = {1: _f("metadata", OBJECT_META), 2: _f("spec", {1: _f("finalizers", "string", True)}),
                    3: _f("status", {1: _f("phase", "string")})}
CONFIGMAP: Table = {1: _f("metadata", OBJECT_META), 2: _f("data", "map_ss"), 3: _f("binaryData", "map_sb"),
                    4: _f("immutable", "bool")}
SECRET: Table = {1: _f("metadata", OBJECT_META), 2: _f("data", "map_sb"), 3: _f("type", "string"),
                 4: _f("stringData", "map_ss"), 5: _f("immutable", "bool")}
SERVICE_PORT: Table = {1: _f("name", "string"), 2: _f("protocol", "string"), 3: _f("port", "int"),
                       4: _f("targetPort", "intorstr"), 5: _f("nodePort", "int"),
                       6: _f("appProtocol", "string")}
SERVICE: Table = {
    1: _f("metadata", OBJECT_META),
    2: _f("spec", {
        1: _f("ports", SERVICE_PORT, True), 2: _f("selector", "map_ss"), 3: _f("clusterIP", "string"),
        4: _f("type", "string"), 5: _f("externalIPs", "string", True), 7: _f("sessionAffinity", "string"),
        8: _f("loadBalancerIP", "string"), 9: _f("loadBalancerSourceRanges", "string", True),
        10: _f("externalName", "string"), 11: _f("externalTrafficPolicy", "string"),
        12: _f("healthCheckNodePort", "int"), 13: _f("publishNotReadyAddresses", "bool"),
        17: _f("ipFamilyPolicy", "string"), 18: _f("clusterIPs", "string", True),
        19: _f("ipFamilies", "string", True), 20: _f("allocateLoadBalancerNodePorts", "bool"),
        21: _f("loadBalancerClass", "string"), 22: _f("internalTrafficPolicy", "string"),
    }),
}
INGRESS_BACKEND: Table = {
    3: _f("resource", {1: _f("apiGroup", "string"), 2: _f("kind", "string"), 3: _f("name", "string")}),
    4: _f("service", {1: _f("name", "string"),
                      2: _f("port", {1: _f("name", "string"), 2: _f("number", "int")})}),
}
HTTP_PATH: Table = {1: _f("path", "string"), 2: _f("backend", INGRESS_BACKEND), 3: _f("pathType", "string")}
INGRESS: Table = {
    1: _f("metadata", OBJECT_META),
    2: _f("spec", {
        1: _f("defaultBackend", INGRESS_BACKEND),
        2: _f("tls", {1: _f("hosts", "string", True), 2: _f("secretName", "string")}, True),
        3: _f("rules", {1: _f("host", "string"),
                        2: _f("", ("inline", {1: _f("http", {1: _f("paths", HTTP_PATH, True)})}))}, True),
        4: _f("ingressClassName", "string"),
    }),
}
DELETE_OPTIONS: Table = {1: _f("gracePeriodSeconds", "int"),
                         2: _f("preconditions", {1: _f("uid", "string"), 2: _f("resourceVersion", "string")}),
                         3: _f("orphanDependents", "bool"), 4: _f("propagationPolicy", "string"),
                         5: _f("dryRun", "string", True)}
TOKEN_REQUEST: Table = {
    1: _f("metadata", OBJECT_META),
    2: _f("spec", {1: _f("audiences", "string", True), 4: _f("expirationSeconds", "int"),
                   3: _f("boundObjectRef", {1: _f("kind", "string"), 2: _f("apiVersion", "string"),
                                            3: _f("name", "string"), 4: _f("uid", "string")})}),
}
OBJECT_REFERENCE: Table = {1: _f("kind", "string"), 2: _f("namespace", "string"), 3: _f("name", "string"),
                           4: _f("uid", "string"), 5: _f("apiVersion", "string"),
                           6: _f("resourceVersion", "string"), 7: _f("fieldPath", "string")}
SERVICE_ACCOUNT: Table = {1: _f("metadata", OBJECT_META), 2: _f("secrets", OBJECT_REFERENCE, True),
                          3: _f("imagePullSecrets", {1: _f("name", "string")}, True),
                          4: _f("automountServiceAccountToken", "bool")}
POLICY_RULE: Table = {1: _f("verbs", "string", True), 2: _f("apiGroups", "string", True),
                      3: _f("resources", "string", True), 4: _f("resourceNames", "string", True),
                      5: _f("nonResourceURLs", "string", True)}
ROLE: Table = {1: _f("metadata", OBJECT_META), 2: _f("rules", POLICY_RULE, True)}
ROLE_BINDING: Table = {
    1: _f("metadata", OBJECT_META),
    2: _f("subjects", {1: _f("kind", "string"), 2: _f("apiGroup", "string"), 3: _f("name", "string"),
                       4: _f("namespace", "string")}, True),
    3: _f("roleRef", {1: _f("apiGroup", "string"), 2: _f("kind", "string"), 3: _f("name", "string")}),
}
SELF_SUBJECT_ACCESS_REVIEW: Table = {
    1: _f("metadata", OBJECT_META),
    2: _f("spec", {
        1: _f("resourceAttributes", {1: _f("namespace", "string"), 2: _f("verb", "string"),
                                     3: _f("group", "string"), 4: _f("version", "string"),
                                     5: _f("resource", "string"), 6: _f("subresource", "string"),
                                     7: _f("name", "string")}),
        2: _f("nonResourceAttributes", {1: _f("path", "string"), 2: _f("verb", "string")}),
    }),
}
KINDS: dict[tuple[str, str], Table] = {
    ("v1", "DeleteOptions"): DELETE_OPTIONS, ("meta.k8s.io/v1", "DeleteOptions"): DELETE_OPTIONS,
    ("v1", "Namespace"): NAMESPACE, ("v1", "ConfigMap"): CONFIGMAP, ("v1", "Secret"): SECRET,
    ("v1", "Service"): SERVICE, ("networking.k8s.io/v1", "Ingress"): INGRESS,
    ("authentication.k8s.io/v1", "TokenRequest"): TOKEN_REQUEST, ("v1", "ServiceAccount"): SERVICE_ACCOUNT,
    ("rbac.authorization.k8s.io/v1", "Role"): ROLE, ("rbac.authorization.k8s.io/v1", "ClusterRole"): ROLE,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ROLE_BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): ROLE_BINDING,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): SELF_SUBJECT_ACCESS_REVIEW,
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) in order; length-delimited values stay bytes."""
    out = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ProtobufError("truncated field")
            value, pos = data[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind: str, value: Any) -> Any:
    if kind == "string":
        if not isinstance(value, bytes):
            raise ProtobufError("expected a string")
        return value.decode("utf-8")
    if kind == "bytes":
        return base64.b64encode(value).decode()
    if kind == "int":
        return _signed(value)
    if kind == "bool":
        return bool(value)
    if kind == "time":
        fields = {n: v for n, _, v in _fields(value)}
        seconds = _signed(fields.get(1, 0))
        if not seconds:
            return None
        return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if kind == "intorstr":
        fields = {n: v for n, _, v in _fields(value)}
        if fields.get(1, 0) == 1:
            return fields.get(3, b"").decode("utf-8")
        return _signed(fields.get(2, 0))
    raise ProtobufError(f"unknown field type {kind}")


def _empty(value: Any) -> bool:
    if isinstance(value, bool):
        return not value
    return value is None or value in ("", 0, {}, [])


def decode_message(data: bytes, table: Table) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for number, _, value in _fields(data):
        spec = table.get(number)
        if spec is None:
            continue      # a field this server does not model; a real server would keep it
        name, kind, repeated = spec
        if isinstance(kind, tuple):
            obj.update(decode_message(value, kind[1]))
            continue
        if kind in ("map_ss", "map_sb"):
            entry = {n: v for n, _, v in _fields(value)}
            key = entry.get(1, b"").decode("utf-8")
            raw = entry.get(2, b"")
            obj.setdefault(name, {})[key] = raw.decode("utf-8") if kind == "map_ss" else _scalar("bytes", raw)
            continue
        if isinstance(kind, Mapping):
            decoded: Any = decode_message(value, kind)
        elif repeated and kind == "string" and isinstance(value, bytes):
            decoded = value.decode("utf-8")
        else:
            decoded = _scalar(kind, value)
        if repeated:
            obj.setdefault(name, []).append(decoded)
        elif not _empty(decoded):
            obj[name] = decoded
    return obj


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf-encoded Kubernetes object (with its envelope) as the equivalent JSON object."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf envelope")
    unknown = {n: v for n, _, v in _fields(body[len(MAGIC):])}
    type_meta = {n: v for n, _, v in _fields(unknown.get(1, b""))}
    api_version = type_meta.get(1, b"").decode("utf-8")
    kind = type_meta.get(2, b"").decode("utf-8")
    table = KINDS.get((api_version, kind))
    if table is None:
        raise ProtobufError(f"protobuf bodies are supported for {', '.join(k for _, k in KINDS)} only, not "
                            f"{api_version} {kind}; send JSON")
    if unknown.get(3):
        raise ProtobufError("compressed protobuf bodies are not supported")
    obj = decode_message(unknown.get(2, b""), table)
    return {"apiVersion": api_version, "kind": kind, **obj}
