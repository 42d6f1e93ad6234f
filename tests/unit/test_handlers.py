"""Event handlers: class filtering, no-op and resync drops, tombstones, Service/Secret/slice/ConfigMap."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from ingressctl.controller.handlers import (
    ConfigMapHandler,
    EndpointSliceHandler,
    IngressClassHandler,
    IngressHandler,
    SecretHandler,
    ServiceHandler,
    has_correct_ingress_class,
    has_ingress_changes,
    has_service_changes,
    ingress_class_of,
    unwrap,
)
from ingressctl.controller.task import Kind, Task


@dataclass(frozen=True)
class Tombstone:
    """Shape of client-go's DeletedFinalStateUnknown (the real one lives in ingressctl.k8s.store)."""

    key: str
    obj: dict[str, Any] | None


def tombstones() -> list[type]:
    kinds: list[type] = [Tombstone]
    try:
        from ingressctl.k8s.store import DeletedFinalStateUnknown
    except ImportError:  # the store lands in parallel; the shape above is the contract
        return kinds
    kinds.append(DeletedFinalStateUnknown)
    return kinds


def ingress(name: str = "web", ns: str = "default", rv: str = "1", *, cls: str | None = "nginx",
            annotation: str | None = None, host: str = "a.example.com") -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": ns, "resourceVersion": rv, "generation": 1}
    if annotation is not None:
        md["annotations"] = {"kubernetes.io/ingress.class": annotation}
    spec: dict[str, Any] = {"rules": [{"host": host}]}
    if cls is not None:
        spec["ingressClassName"] = cls
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": md, "spec": spec}


class Recorder:
    def __init__(self) -> None:
        self.tasks: list[Task] = []

    def __call__(self, task: Task) -> None:
        self.tasks.append(task)


# --- class rules (NIC 2.1) ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("cls", "annotation", "expected"), [
    ("nginx", None, "nginx"),
    ("other", None, "other"),
    (None, "nginx", "nginx"),
    ("other", "nginx", "nginx"),      # the annotation wins
    ("nginx", "other", "other"),
    ("nginx", "", "nginx"),           # an empty annotation does not count
    (None, None, ""),
])
def test_ingress_class_of(cls: str | None, annotation: str | None, expected: str) -> None:
    assert ingress_class_of(ingress(cls=cls, annotation=annotation)) == expected


def test_ingress_without_class_is_not_ours() -> None:
    assert not has_correct_ingress_class(ingress(cls=None), "nginx")
    assert has_correct_ingress_class(ingress(cls="nginx"), "nginx")
    assert not has_correct_ingress_class(ingress(cls="nginx", annotation="other"), "nginx")


# --- Ingress handler ----------------------------------------------------------------------------------------

def test_ingress_add_filters_class() -> None:
    q = Recorder()
    h = IngressHandler(q, "nginx")
    h.on_add(ingress("a"), True)
    h.on_add(ingress("b", cls="other"), False)
    h.on_add(ingress("c", cls=None), False)
    h.on_add(ingress("d", cls=None, annotation="nginx"), False)
    assert q.tasks == [Task(Kind.INGRESS, "default/a"), Task(Kind.INGRESS, "default/d")]


def test_ingress_resync_and_status_only_updates_are_dropped() -> None:
    q = Recorder()
    h = IngressHandler(q, "nginx")
    old = ingress(rv="5")
    h.on_update(old, copy.deepcopy(old))                     # resync: same resourceVersion
    status_only = copy.deepcopy(old)
    status_only["metadata"]["resourceVersion"] = "6"
    status_only["status"] = {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}
    h.on_update(old, status_only)                            # our own status write
    assert q.tasks == []
    changed = copy.deepcopy(status_only)
    changed["metadata"]["resourceVersion"] = "7"
    changed["spec"]["rules"][0]["host"] = "b.example.com"
    h.on_update(status_only, changed)
    assert q.tasks == [Task(Kind.INGRESS, "default/web")]


def test_ingress_update_does_not_mutate_the_cached_old_object() -> None:
    old, new = ingress(rv="1"), ingress(rv="2", host="b.example.com")
    snapshot = copy.deepcopy(old)
    assert has_ingress_changes(old, new)
    assert old == snapshot


def test_ingress_class_change_away_from_us_is_enqueued_but_foreign_updates_are_not() -> None:
    q = Recorder()
    h = IngressHandler(q, "nginx")
    h.on_update(ingress(rv="1", cls="nginx"), ingress(rv="2", cls="other"))
    h.on_update(ingress(rv="1", cls="other"), ingress(rv="2", cls="nginx"))
    h.on_update(ingress(rv="1", cls="other"), ingress(rv="2", cls="other", host="z.example.com"))
    assert q.tasks == [Task(Kind.INGRESS, "default/web")] * 2


@pytest.mark.parametrize("tomb", tombstones())
def test_ingress_delete_and_tombstone(tomb: type) -> None:
    q = Recorder()
    h = IngressHandler(q, "nginx")
    h.on_delete(ingress("a"))
    h.on_delete(tomb("default/b", ingress("b")))
    assert q.tasks == [Task(Kind.INGRESS, "default/a"), Task(Kind.INGRESS, "default/b")]


def test_unwrap_rejects_garbage() -> None:
    with pytest.raises(TypeError):
        unwrap(42)


def test_handler_never_raises_on_malformed_objects() -> None:
    q = Recorder()
    h = IngressHandler(q, "nginx")
    h.on_delete(42)  # logged, not raised
    h.on_add({"metadata": None, "spec": None}, False)
    assert q.tasks == []


# --- Service handler ----------------------------------------------------------------------------------------

def service(name: str = "svc", rv: str = "1", ports: list[dict[str, Any]] | None = None,
            **spec: Any) -> dict[str, Any]:
    s = {"ports": ports if ports is not None else [{"name": "http", "port": 80, "targetPort": 8080}], **spec}
    return {"kind": "Service", "metadata": {"name": name, "namespace": "default", "resourceVersion": rv},
            "spec": s}


def test_service_changes() -> None:
    base = service()
    assert not has_service_changes(base, service(rv="2", selector={"app": "x"}))
    assert not has_service_changes(base, service(rv="2", clusterIP="10.0.0.9"))
    for changed in ({"name": "http", "port": 81, "targetPort": 8080},
                    {"name": "web", "port": 80, "targetPort": 8080},
                    {"name": "http", "port": 80, "targetPort": 9090}):
        assert has_service_changes(base, service(rv="2", ports=[changed]))
    assert has_service_changes(base, service(rv="2", type="ExternalName", externalName="x.example.com"))
    two = [{"name": "a", "port": 1}, {"name": "b", "port": 2}]
    assert not has_service_changes(service(ports=two), service(rv="2", ports=list(reversed(two))))


@pytest.mark.parametrize("tomb", tombstones())
def test_service_handler(tomb: type) -> None:
    q = Recorder()
    h = ServiceHandler(q, external_service_key="nginx-ingress/nginx-ingress")
    h.on_add(service(), False)
    h.on_update(service(), service())                                   # resync
    h.on_update(service(), service(rv="2", selector={"app": "y"}))      # selector only
    h.on_update(service(), service(rv="2", ports=[{"port": 90}]))
    h.on_delete(tomb("default/svc", service()))
    ext_old = service("nginx-ingress")
    ext_old["metadata"]["namespace"] = "nginx-ingress"
    ext_new = copy.deepcopy(ext_old)
    ext_new["metadata"]["resourceVersion"] = "9"
    ext_new["status"] = {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}
    h.on_update(ext_old, ext_new)
    ext = Task(Kind.SERVICE, "nginx-ingress/nginx-ingress")
    assert q.tasks == [Task(Kind.SERVICE, "default/svc")] * 3 + [ext]


# --- EndpointSlice handler ----------------------------------------------------------------------------------

def eps(name: str, svc: str | None, rv: str = "1") -> dict[str, Any]:
    labels = {"kubernetes.io/service-name": svc} if svc else {}
    return {"kind": "EndpointSlice", "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv,
                                                  "labels": labels}, "endpoints": [], "ports": []}


@pytest.mark.parametrize("tomb", tombstones())
def test_endpoint_slice_handler_keys_by_service(tomb: type) -> None:
    q = Recorder()
    h = EndpointSliceHandler(q)
    h.on_add(eps("web-abc", "web"), False)
    h.on_add(eps("orphan", None), False)
    h.on_update(eps("web-abc", "web"), eps("web-abc", "web"))            # resync
    h.on_update(eps("web-abc", "web"), eps("web-abc", "web", rv="2"))
    h.on_update(eps("web-abc", "web", rv="2"), eps("web-abc", "api", rv="3"))  # moved: both Services
    h.on_delete(tomb("ns/web-xyz", eps("web-xyz", "web")))
    expected = ["ns/web", "ns/web", "ns/web", "ns/api", "ns/web"]
    assert q.tasks == [Task(Kind.ENDPOINT_SLICE, k) for k in expected]


# --- Secret handler -----------------------------------------------------------------------------------------

def secret(name: str, type_: str, rv: str = "1") -> dict[str, Any]:
    md = {"name": name, "namespace": "ns", "resourceVersion": rv}
    return {"kind": "Secret", "type": type_, "metadata": md, "data": {}}


@pytest.mark.parametrize("tomb", tombstones())
def test_secret_handler_supported_types_only(tomb: type) -> None:
    q = Recorder()
    h = SecretHandler(q)
    h.on_add(secret("tls", "kubernetes.io/tls"), False)
    h.on_add(secret("auth", "nginx.org/htpasswd"), False)
    h.on_add(secret("opaque", "Opaque"), False)
    h.on_add(secret("helm", "helm.sh/release.v1"), False)
    h.on_update(secret("tls", "kubernetes.io/tls"), secret("tls", "kubernetes.io/tls"))       # resync
    h.on_update(secret("tls", "kubernetes.io/tls"), secret("tls", "Opaque", rv="2"))           # type change
    h.on_update(secret("opaque", "Opaque"), secret("opaque", "Opaque", rv="2"))
    h.on_delete(tomb("ns/tls2", secret("tls2", "kubernetes.io/tls")))
    h.on_delete(secret("opaque", "Opaque"))
    assert q.tasks == [Task(Kind.SECRET, k) for k in ("ns/tls", "ns/auth", "ns/tls", "ns/tls2")]


# --- ConfigMap and IngressClass handlers --------------------------------------------------------------------

@pytest.mark.parametrize("tomb", tombstones())
def test_configmap_handler_only_ours(tomb: type) -> None:
    q = Recorder()
    h = ConfigMapHandler(q, "nginx-ingress/nginx-config")

    def cm(ns: str, name: str, rv: str = "1") -> dict[str, Any]:
        return {"kind": "ConfigMap", "metadata": {"name": name, "namespace": ns, "resourceVersion": rv}}

    h.on_add(cm("nginx-ingress", "nginx-config"), True)
    h.on_add(cm("nginx-ingress", "other"), True)
    h.on_update(cm("nginx-ingress", "nginx-config"), cm("nginx-ingress", "nginx-config"))
    h.on_update(cm("nginx-ingress", "nginx-config"), cm("nginx-ingress", "nginx-config", "2"))
    h.on_delete(tomb("nginx-ingress/nginx-config", cm("nginx-ingress", "nginx-config")))
    h.on_delete(cm("default", "nginx-config"))
    assert q.tasks == [Task(Kind.CONFIG_MAP, "nginx-ingress/nginx-config")] * 3


def test_ingress_class_handler_never_raises() -> None:
    h = IngressClassHandler("nginx")
    ic = {"kind": "IngressClass", "metadata": {"name": "nginx", "resourceVersion": "1"},
          "spec": {"controller": "example.com/other"}}
    h.on_add(ic, True)
    h.on_update(ic, {**ic, "metadata": {"name": "nginx", "resourceVersion": "2"}})
    h.on_delete(Tombstone("nginx", ic))


def test_task_is_a_hashable_value() -> None:
    assert Task(Kind.INGRESS, "a/b") == Task(Kind.INGRESS, "a/b")
    assert len({Task(Kind.INGRESS, "a/b"), Task(Kind.INGRESS, "a/b"), Task(Kind.SERVICE, "a/b")}) == 2
    assert str(Task(Kind.SECRET, "ns/s")) == "secret:ns/s"


def test_tombstones_without_their_object() -> None:
    q = Recorder()
    slices = EndpointSliceHandler(q)
    slices.on_add(eps("web-abc", "web"), True)   # from the initial list: not enqueued, but remembered
    slices.on_delete(Tombstone("ns/web-abc", None))
    slices.on_delete(Tombstone("ns/never-seen", None))
    SecretHandler(q).on_delete(Tombstone("ns/tls", None))
    IngressHandler(q, "nginx").on_delete(Tombstone("ns/ing", None))
    assert q.tasks == [Task(Kind.ENDPOINT_SLICE, "ns/web"), Task(Kind.SECRET, "ns/tls"),
                       Task(Kind.INGRESS, "ns/ing")]


def test_the_initial_lists_services_slices_and_secrets_are_not_enqueued_but_the_special_ones() -> None:
    """The start-up reads them from the caches; the external Service (status, replicas) and the special TLS
    Secrets are still synced. Later adds are enqueued as usual."""
    q = Recorder()
    external = service("nginx-ingress")
    external["metadata"]["namespace"] = "ns"
    services = ServiceHandler(q, external_service_key="ns/nginx-ingress")
    slices = EndpointSliceHandler(q, external_service_key="ns/nginx-ingress")
    secrets = SecretHandler(q, special_keys=["ns/default-tls"])
    for live in (False, True):
        initial = not live
        services.on_add(service(), initial)
        services.on_add(external, initial)
        slices.on_add(eps("web-abc", "web"), initial)
        slices.on_add(eps("ctl-abc", "nginx-ingress"), initial)
        secrets.on_add(secret("tls", "kubernetes.io/tls"), initial)
        secrets.on_add(secret("default-tls", "kubernetes.io/tls"), initial)
    special = [Task(Kind.SERVICE, "ns/nginx-ingress"), Task(Kind.ENDPOINT_SLICE, "ns/nginx-ingress"),
               Task(Kind.SECRET, "ns/default-tls")]
    live_adds = [Task(Kind.SERVICE, "default/svc"), Task(Kind.SERVICE, "ns/nginx-ingress"),
                 Task(Kind.ENDPOINT_SLICE, "ns/web"), Task(Kind.ENDPOINT_SLICE, "ns/nginx-ingress"),
                 Task(Kind.SECRET, "ns/tls"), Task(Kind.SECRET, "ns/default-tls")]
    assert q.tasks == special + live_adds
