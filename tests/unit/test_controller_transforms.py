"""Per-kind informer transforms: each keeps what the controller's readers use (checked by running those
readers on the original and the transformed object) and drops the rest; shared values; malformed input never
raises."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingressctl.app.latency import LatencyLabels
from ingressctl.controller.endpoints import cluster_ip_endpoint, endpoints_for_port
from ingressctl.controller.handlers import (
    endpoint_slice_service_key,
    has_ingress_changes,
    has_service_changes,
    ingress_class_of,
    is_supported_secret,
)
from ingressctl.controller.model import creation_seconds
from ingressctl.controller.secrets import secret_file, validate_secret
from ingressctl.controller.status import current_addresses, external_service_addresses
from ingressctl.controller.transforms import (
    SharedValues,
    config_map_transform,
    endpoint_slice_transform,
    ingress_class_transform,
    ingress_transform,
    secret_transform,
    service_transform,
    transform_for,
)
from ingressctl.k8s.reflector import LAST_APPLIED_ANNOTATION, strip_managed_fields
from ingressctl.k8s.resource import (
    CONFIGMAPS,
    ENDPOINTSLICES,
    INGRESSCLASSES,
    INGRESSES,
    PODS,
    SECRETS,
    SERVICES,
)
from ingressctl.k8s.store import endpoint_slices_by_service

MANAGED = [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:metadata": {}}}]


def full_meta(name: str, ns: str = "team-a", **extra: Any) -> dict[str, Any]:
    """Metadata as a real API server returns it."""
    return {"name": name, "namespace": ns, "uid": f"uid-{name}", "resourceVersion": "42", "generation": 3,
            "creationTimestamp": "2024-05-01T10:00:00Z", "labels": {"app": name, "team": "a"},
            "annotations": {"note": "x", LAST_APPLIED_ANNOTATION: '{"big": "json"}'},
            "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u"}],
            "finalizers": ["example.com/f"], "managedFields": copy.deepcopy(MANAGED), **extra}


def ingress(name: str = "web", status_ip: str | None = None) -> dict[str, Any]:
    backend = {"service": {"name": "svc", "port": {"number": 80}}}
    status: dict[str, Any] = {"loadBalancer": {}}
    if status_ip:
        status = {"loadBalancer": {"ingress": [{"ip": status_ip}]}}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": full_meta(name),
            "spec": {"ingressClassName": "nginx", "defaultBackend": copy.deepcopy(backend),
                     "tls": [{"hosts": ["a.example.com"], "secretName": "tls"}],
                     "rules": [{"host": "a.example.com", "http": {"paths": [
                         {"path": "/", "pathType": "Prefix", "backend": copy.deepcopy(backend)},
                         {"path": "/api", "pathType": "Exact", "backend": copy.deepcopy(backend)}]}}]},
            "status": status}


def service(name: str = "svc", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": full_meta(name),
            "spec": {"type": "ClusterIP", "selector": {"app": name}, "clusterIP": "10.96.0.10",
                     "clusterIPs": ["10.96.0.10"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                     "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                     "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080,
                                "appProtocol": "http", "nodePort": 30080},
                               {"name": "grpc", "port": 9000, "protocol": "TCP", "targetPort": "grpc"}],
                     **spec},
            "status": {"loadBalancer": {}}}


def endpoint_slice(name: str = "svc-abcde", svc: str = "svc") -> dict[str, Any]:
    managed_by = {"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
    meta = full_meta(name, labels={"kubernetes.io/service-name": svc, **managed_by},
                     annotations={"endpoints.kubernetes.io/last-change-trigger-time": "2024-05-01T10:00:00Z"})

    def ep(ip: str, pod: str, ready: bool) -> dict[str, Any]:
        return {"addresses": [ip], "nodeName": "node-1", "zone": "z1",
                "conditions": {"ready": ready, "serving": ready, "terminating": False},
                "targetRef": {"kind": "Pod", "namespace": "team-a", "name": pod, "uid": f"uid-{pod}"}}

    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": meta,
            "addressType": "IPv4",
            "endpoints": [ep("10.0.0.1", "p1", True), ep("10.0.0.2", "p2", False),
                          {"addresses": ["10.0.0.3"]}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP", "appProtocol": "http"},
                      {"name": "grpc", "port": 9000, "protocol": "TCP"}]}


def secret(name: str = "tls", secret_type: str = "kubernetes.io/tls",
           data: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": full_meta(name), "type": secret_type,
            "immutable": False, "data": data if data is not None else {"tls.crt": "Y3J0", "tls.key": "a2V5"}}


# ------------------------------------------------------------------------------------------------ Ingress


def test_ingress_keeps_every_field_but_managed_fields() -> None:
    """The status writer PUTs the cached Ingress back: labels, owners, finalizers and every annotation stay
    (without kubectl's last-applied-configuration, a status write would break later `kubectl apply` diffs)."""
    original = ingress()
    out = ingress_transform()(copy.deepcopy(original))
    expected = copy.deepcopy(original)
    del expected["metadata"]["managedFields"]
    assert out == expected
    meta = out["metadata"]
    assert "managedFields" not in meta
    assert meta["annotations"][LAST_APPLIED_ANNOTATION] == original["metadata"]["annotations"][
        LAST_APPLIED_ANNOTATION]
    for kept in ("uid", "creationTimestamp", "generation", "resourceVersion", "labels", "ownerReferences",
                 "finalizers"):
        assert meta[kept] == original["metadata"][kept]
    # Readers: host ownership, class, status comparison, no-op detection.
    assert creation_seconds(out) == creation_seconds(original)
    assert ingress_class_of(out) == "nginx"
    assert not has_ingress_changes(expected, out)


def test_ingress_shares_status_and_backends() -> None:
    t = ingress_transform()
    a = t(ingress("a", status_ip="10.1.1.1"))
    b = t(ingress("b", status_ip="10.1.1.1"))
    c = t(ingress("c", status_ip="10.2.2.2"))
    assert a["status"] is b["status"] and a["status"] is not c["status"]
    assert current_addresses(a) == [{"ip": "10.1.1.1"}] and current_addresses(c) == [{"ip": "10.2.2.2"}]
    paths_a = a["spec"]["rules"][0]["http"]["paths"]
    paths_b = b["spec"]["rules"][0]["http"]["paths"]
    # Equal backends within one Ingress are one object; the port is shared across Ingresses.
    assert paths_a[0]["backend"] is paths_a[1]["backend"] is a["spec"]["defaultBackend"]
    assert paths_a[0]["backend"] is not paths_b[0]["backend"]
    assert paths_a[0]["backend"]["service"]["port"] is paths_b[0]["backend"]["service"]["port"]
    assert paths_a[1]["pathType"] == "Exact"


def test_ingress_backends_that_differ_stay_apart() -> None:
    ing = ingress()
    paths = ing["spec"]["rules"][0]["http"]["paths"]
    paths[1]["backend"] = {"service": {"name": "other", "port": {"name": "http"}}}
    out = ingress_transform()(copy.deepcopy(ing))
    out_paths = out["spec"]["rules"][0]["http"]["paths"]
    assert out_paths[0]["backend"] == {"service": {"name": "svc", "port": {"number": 80}}}
    assert out_paths[1]["backend"] == {"service": {"name": "other", "port": {"name": "http"}}}


# ------------------------------------------------------------------------------------------------ Service


def test_service_keeps_what_readers_use() -> None:
    original = service()
    out = service_transform()(copy.deepcopy(original))
    assert out == {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "svc", "namespace": "team-a", "resourceVersion": "42"},
        "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10",
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                           {"name": "grpc", "port": 9000, "targetPort": "grpc", "protocol": "TCP"}]},
    }
    slc = endpoint_slice()
    for port in (80, "http", 9000, "grpc"):
        assert endpoints_for_port(out, port, [slc]) == endpoints_for_port(original, port, [slc])
        assert cluster_ip_endpoint(out, port) == cluster_ip_endpoint(original, port)
    assert external_service_addresses(out) == external_service_addresses(original) == []
    changed = copy.deepcopy(original)
    changed["spec"]["ports"][0]["targetPort"] = 8081
    assert has_service_changes(out, service_transform()(copy.deepcopy(changed)))


def test_external_service_addresses_survive() -> None:
    lb = service("ext", type="LoadBalancer", externalIPs=["192.0.2.7"])
    lb["status"] = {"loadBalancer": {"ingress": [{"ip": "198.51.100.1", "ipMode": "VIP",
                                                  "ports": [{"port": 80, "protocol": "TCP"}]},
                                                 {"hostname": "lb.example.com"}]},
                    "conditions": [{"type": "x"}]}
    out = service_transform()(copy.deepcopy(lb))
    assert out["status"] == {"loadBalancer": {"ingress": [{"ip": "198.51.100.1"},
                                                          {"hostname": "lb.example.com"}]}}
    assert external_service_addresses(out) == external_service_addresses(lb) == [
        "198.51.100.1", "lb.example.com", "192.0.2.7"]
    name = service("named", type="ExternalName", externalName="db.example.com")
    out = service_transform()(copy.deepcopy(name))
    assert out["spec"]["externalName"] == "db.example.com"
    assert external_service_addresses(out) == ["db.example.com"]


def test_service_ports_are_shared_between_services() -> None:
    t = service_transform()
    a, b = t(service("a")), t(service("b"))
    assert a["spec"]["ports"] is b["spec"]["ports"]
    other = service("c")
    other["spec"]["ports"][0]["port"] = 81
    assert t(other)["spec"]["ports"] is not a["spec"]["ports"]


# ------------------------------------------------------------------------------------------- EndpointSlice


def test_endpoint_slice_keeps_what_readers_use() -> None:
    original = endpoint_slice()
    out = endpoint_slice_transform()(copy.deepcopy(original))
    assert out == {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "svc-abcde", "namespace": "team-a", "resourceVersion": "42",
                     "labels": {"kubernetes.io/service-name": "svc"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True},
                       "targetRef": {"kind": "Pod", "name": "p1"}},
                      {"addresses": ["10.0.0.2"], "conditions": {"ready": False},
                       "targetRef": {"kind": "Pod", "name": "p2"}},
                      {"addresses": ["10.0.0.3"]}],
        "ports": [{"name": "http", "port": 8080}, {"name": "grpc", "port": 9000}],
    }
    svc = service()
    for port in (80, "http", 9000, "grpc"):
        assert endpoints_for_port(svc, port, [out]) == endpoints_for_port(svc, port, [original])
    assert endpoints_for_port(svc, 80, [out]) == ["10.0.0.1:8080", "10.0.0.3:8080"]
    assert endpoint_slices_by_service(out) == endpoint_slices_by_service(original) == ["team-a/svc"]
    assert endpoint_slice_service_key(out) == "team-a/svc"
    # Per-Pod latency metrics read targetRef kind and name.
    pods = LatencyLabels(None, lambda ns, s: [out])._pods("team-a", "svc")  # type: ignore[arg-type]
    assert pods == LatencyLabels(None, lambda ns, s: [original])._pods("team-a", "svc")  # type: ignore[arg-type]
    assert pods["10.0.0.1:8080"] == "p1"


def test_endpoint_slice_shares_conditions_and_ports() -> None:
    t = endpoint_slice_transform()
    a, b = t(endpoint_slice("a")), t(endpoint_slice("b"))
    assert a["ports"] is b["ports"]
    assert a["endpoints"][0]["conditions"] is b["endpoints"][0]["conditions"]
    assert a["endpoints"][0]["conditions"] is not a["endpoints"][1]["conditions"]


def test_endpoint_slice_without_the_service_label_has_no_labels() -> None:
    slc = endpoint_slice()
    del slc["metadata"]["labels"]["kubernetes.io/service-name"]
    out = endpoint_slice_transform()(slc)
    assert "labels" not in out["metadata"]
    assert endpoint_slice_service_key(out) is None


# ------------------------------------------------------------------------------------------------ Secrets


def test_supported_secrets_keep_their_data_and_the_event_fields() -> None:
    for original in (secret(), secret("auth", "nginx.org/htpasswd", {"htpasswd": "dTpw"})):
        out = secret_transform()(copy.deepcopy(original))
        assert out == {"apiVersion": "v1", "kind": "Secret", "type": original["type"],
                       "data": original["data"],
                       "metadata": {"name": original["metadata"]["name"], "namespace": "team-a",
                                    "uid": original["metadata"]["uid"], "resourceVersion": "42"}}
        assert is_supported_secret(out)
    auth = secret_transform()(secret("auth", "nginx.org/htpasswd", {"htpasswd": "dTpw"}))
    validate_secret(auth)
    assert secret_file(auth) == (b"u:p", 0o644)


def test_other_secrets_lose_their_data() -> None:
    for t in ("Opaque", "helm.sh/release.v1", "kubernetes.io/service-account-token"):
        out = secret_transform()(secret("x", t, {"release": "H4sI" * 1000}))
        assert "data" not in out and out["type"] == t and not is_supported_secret(out)
    odd = secret("x")
    odd["type"] = ["not", "a", "string"]
    assert "data" not in secret_transform()(odd)


# ----------------------------------------------------------------------------------- ConfigMap, IngressClass


def test_config_map_and_ingress_class() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": full_meta("nginx-config"),
          "data": {"worker-processes": "1"}, "binaryData": {"b": "AAAA"}}
    out = config_map_transform()(copy.deepcopy(cm))
    assert out == {"apiVersion": "v1", "kind": "ConfigMap", "data": {"worker-processes": "1"},
                   "metadata": {"name": "nginx-config", "namespace": "team-a", "uid": "uid-nginx-config",
                                "resourceVersion": "42"}}
    ic = {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": full_meta("nginx", ns=""),
          "spec": {"controller": "nginx.org/ingress-controller", "parameters": {"kind": "X", "name": "p"}}}
    out = ingress_class_transform()(copy.deepcopy(ic))
    assert out["spec"] == {"controller": "nginx.org/ingress-controller"}
    assert out["metadata"] == {"name": "nginx", "namespace": "", "uid": "uid-nginx", "resourceVersion": "42"}


# ------------------------------------------------------------------------------------ wiring, shared values


def test_transform_for_gives_each_informer_its_own_transform() -> None:
    for rt in (INGRESSES, SERVICES, ENDPOINTSLICES, SECRETS, CONFIGMAPS, INGRESSCLASSES):
        assert transform_for(rt) is not transform_for(rt)
    assert transform_for(PODS) is strip_managed_fields
    slc = transform_for(ENDPOINTSLICES)(endpoint_slice())
    assert "uid" not in slc["metadata"]


def test_shared_values_keep_types_and_order_apart_and_are_bounded() -> None:
    shared = SharedValues(limit=3)
    a = {"ready": True}
    assert shared(a) is a and shared({"ready": True}) is a
    one = {"ready": 1}
    assert shared(one) is one            # 1 is not true
    ab, ba = {"a": 1, "b": 2}, {"b": 2, "a": 1}
    assert shared(ab) is ab and shared(ba) is ba   # key order is kept
    assert len(shared) == 3
    late = {"late": 1}
    assert shared(late) is late and shared({"late": 1}) is not late   # full: not remembered
    big = {"k": list(range(1000))}
    assert shared(big) is big and len(shared) == 3


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["metadata", "spec", "status", "ports", "endpoints", "data", "type", "labels",
                         "loadBalancer", "ingress", "rules", "http", "paths", "backend", "service", "port",
                         "conditions", "targetRef", "addresses", "ready", "name", "kind", "annotations",
                         "defaultBackend", "tls", "addressType", "x"]), inner, max_size=6),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(body=st.dictionaries(st.sampled_from(["spec", "status", "endpoints", "ports", "data", "type",
                                             "addressType", "kind", "apiVersion", "x"]), json_values),
       meta=st.dictionaries(st.sampled_from(["labels", "annotations", "uid", "managedFields", "x"]),
                            json_values))
def test_malformed_objects_never_raise(body: dict[str, Any], meta: dict[str, Any]) -> None:
    for factory in (ingress_transform, service_transform, endpoint_slice_transform, secret_transform,
                    config_map_transform, ingress_class_transform):
        obj = {**copy.deepcopy(body), "metadata": {"name": "n", "namespace": "ns", **copy.deepcopy(meta)}}
        out = factory()(obj)
        assert out["metadata"]["name"] == "n"


@pytest.mark.parametrize("factory", [service_transform, endpoint_slice_transform, secret_transform,
                                     config_map_transform, ingress_class_transform])
def test_transforms_are_idempotent(factory: Any) -> None:
    for obj in (service(), endpoint_slice(), secret(), ingress()):
        once = factory()(copy.deepcopy(obj))
        assert factory()(copy.deepcopy(once)) == once
