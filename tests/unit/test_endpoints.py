"""EndpointSlices to upstream servers: merging, readiness, port matching, IPv6 and typed errors."""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.controller.endpoints import (
    BackendError,
    ExternalNameServiceError,
    ServiceNotFoundError,
    ServicePortNotFoundError,
    cluster_ip_endpoint,
    endpoints_for_port,
    resolve_backend_endpoints,
)
from ingressctl.controller.ingress_refs import ingress_backends


def service(
    ports: list[dict[str, Any]], *, name: str = "web", ns: str = "default", **spec: Any
) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"ports": ports, **spec}}


def endpoint(ip: str, ready: bool | None = True) -> dict[str, Any]:
    ep: dict[str, Any] = {"addresses": [ip]}
    if ready is not None:
        ep["conditions"] = {"ready": ready}
    return ep


def eslice(
    name: str,
    endpoints: list[dict[str, Any]] | None,
    ports: list[dict[str, Any]] | None,
    *,
    svc: str = "web",
    ns: str = "default",
    address_type: str = "IPv4",
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "labels": {"kubernetes.io/service-name": svc}},
        "addressType": address_type,
        "endpoints": endpoints,
        "ports": ports,
    }


HTTP = [{"name": "http", "port": 80, "targetPort": 8080}]


def test_merges_slices_deduplicates_and_sorts_numerically() -> None:
    slices = [
        eslice("web-a", [endpoint("10.0.0.10"), endpoint("10.0.0.2")], [{"name": "http", "port": 8080}]),
        eslice("web-b", [endpoint("10.0.0.2"), endpoint("10.0.0.3")], [{"name": "http", "port": 8080}]),
    ]
    assert endpoints_for_port(service(HTTP), 80, slices) == [
        "10.0.0.2:8080",
        "10.0.0.3:8080",
        "10.0.0.10:8080",
    ]


def test_only_ready_endpoints_nil_ready_counts_as_ready() -> None:
    slices = [
        eslice(
            "web-a",
            [
                endpoint("10.0.0.1", ready=False),
                endpoint("10.0.0.2", ready=None),
                endpoint("10.0.0.3", ready=True),
            ],
            [{"name": "http", "port": 8080}],
        )
    ]
    assert endpoints_for_port(service(HTTP), 80, slices) == ["10.0.0.2:8080", "10.0.0.3:8080"]


def test_null_endpoints_and_other_services_slices_are_ignored() -> None:
    slices = [
        eslice("web-empty", None, [{"name": "http", "port": 8080}]),
        eslice("other-a", [endpoint("10.9.9.9")], [{"name": "http", "port": 8080}], svc="other"),
        eslice("web-other-ns", [endpoint("10.8.8.8")], [{"name": "http", "port": 8080}], ns="elsewhere"),
        eslice("web-fqdn", [endpoint("example.com")], [{"name": "http", "port": 8080}], address_type="FQDN"),
        eslice("web-a", [endpoint("10.0.0.1")], [{"name": "http", "port": 8080}]),
    ]
    assert endpoints_for_port(service(HTTP), 80, slices) == ["10.0.0.1:8080"]


def test_service_without_ready_endpoints_is_empty_not_an_error() -> None:
    assert endpoints_for_port(service(HTTP), 80, []) == []


def test_port_by_number_and_by_name() -> None:
    svc = service(
        [
            {"name": "http", "port": 80, "targetPort": 8080},
            {"name": "metrics", "port": 9090, "targetPort": 9100},
        ]
    )
    slices = [
        eslice(
            "web-a",
            [endpoint("10.0.0.1")],
            [{"name": "http", "port": 8080}, {"name": "metrics", "port": 9100}],
        )
    ]
    assert endpoints_for_port(svc, 80, slices) == ["10.0.0.1:8080"]
    assert endpoints_for_port(svc, "metrics", slices) == ["10.0.0.1:9100"]
    assert endpoints_for_port(svc, 9090, slices) == ["10.0.0.1:9100"]
    # A number never matches by name, and a name never matches a number (unlike NIC's first-unnamed rule).
    with pytest.raises(ServicePortNotFoundError, match='no port with name "80" in service default/web'):
        endpoints_for_port(svc, "80", slices)


def test_unnamed_single_port_and_missing_target_port() -> None:
    svc = service([{"port": 80}])  # targetPort defaults to the port
    slices = [eslice("web-a", [endpoint("10.0.0.1")], [{"name": "", "port": 80}])]
    assert endpoints_for_port(svc, 80, slices) == ["10.0.0.1:80"]


def test_named_target_port_resolves_per_slice() -> None:
    # Two sets of pods expose the named container port "web" on different numbers.
    svc = service([{"name": "http", "port": 80, "targetPort": "web"}])
    slices = [
        eslice("web-a", [endpoint("10.0.0.1")], [{"name": "http", "port": 8080}]),
        eslice("web-b", [endpoint("10.0.0.2")], [{"name": "http", "port": 8081}]),
    ]
    assert endpoints_for_port(svc, 80, slices) == ["10.0.0.1:8080", "10.0.0.2:8081"]
    # A slice without the port's name cannot resolve a named target port.
    assert (
        endpoints_for_port(svc, 80, [eslice("x", [endpoint("10.0.0.3")], [{"name": "other", "port": 1}])])
        == []
    )


def test_numeric_target_port_with_unnamed_slice_ports() -> None:
    svc = service([{"name": "http", "port": 80, "targetPort": 8080}])
    slices = [
        eslice("mirrored", [endpoint("10.0.0.1")], [{"port": 8080}]),
        eslice("all-ports", [endpoint("10.0.0.2")], [{"name": "http", "port": None}]),
        eslice("wrong-port", [endpoint("10.0.0.3")], [{"port": 9999}]),
    ]
    assert endpoints_for_port(svc, 80, slices) == ["10.0.0.1:8080", "10.0.0.2:8080"]


def test_ipv6_is_bracketed_and_sorted_after_ipv4() -> None:
    svc = service(HTTP)
    slices = [
        eslice(
            "web-v6",
            [endpoint("fd00::0:2"), endpoint("fd00::1")],
            [{"name": "http", "port": 8080}],
            address_type="IPv6",
        ),
        eslice("web-v4", [endpoint("10.0.0.1")], [{"name": "http", "port": 8080}]),
    ]
    assert endpoints_for_port(svc, 80, slices) == ["10.0.0.1:8080", "[fd00::1]:8080", "[fd00::2]:8080"]


def test_external_name_service_is_a_clear_error() -> None:
    svc = service([{"port": 80}], type="ExternalName", externalName="example.com")
    with pytest.raises(ExternalNameServiceError, match="default/web is of type ExternalName"):
        endpoints_for_port(svc, 80, [])


def test_missing_service_and_missing_port() -> None:
    with pytest.raises(ServiceNotFoundError, match="service default/web doesn't exist"):
        resolve_backend_endpoints("default", "web", 80, None, [])
    with pytest.raises(
        ServicePortNotFoundError, match="no port with number 81 in service default/web"
    ) as exc:
        resolve_backend_endpoints("default", "web", 81, service(HTTP), [])
    assert isinstance(exc.value, BackendError)


def test_cluster_ip_endpoint() -> None:
    svc = service(HTTP, clusterIP="10.96.0.10")
    assert cluster_ip_endpoint(svc, "http") == ["10.96.0.10:80"]
    assert cluster_ip_endpoint(service(HTTP, clusterIP="fd00::a"), 80) == ["[fd00::a]:80"]
    with pytest.raises(BackendError, match="has no cluster IP"):
        cluster_ip_endpoint(service(HTTP, clusterIP="None"), 80)


def test_backend_services_lists_default_backend_and_paths_once() -> None:
    def be(name: str, port: dict[str, Any]) -> dict[str, Any]:
        return {"service": {"name": name, "port": port}}

    ing = {
        "spec": {
            "defaultBackend": be("default", {"number": 8080}),
            "rules": [
                {
                    "host": "a.com",
                    "http": {
                        "paths": [
                            {"path": "/", "backend": be("web", {"number": 80})},
                            {"path": "/m", "backend": be("web", {"name": "metrics"})},
                        ]
                    },
                },
                {"host": "b.com", "http": {"paths": [{"path": "/", "backend": be("web", {"number": 80})}]}},
                {"host": "c.com"},
            ],
        }
    }
    assert ingress_backends(ing) == [("default", 8080), ("web", 80), ("web", "metrics")]
