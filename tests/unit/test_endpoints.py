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
from ingressctl.kinds.ingress.refs import ingress_backends


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


ADDRESS_CORPUS = [
    "1.2.3.4", "0.0.0.0", "255.255.255.255", "10.0.0.10", "192.168.100.1", "9.99.199.255",
    "01.2.3.4", "1.2.3.04", "00.1.1.1", "0000.1.1.1", "256.1.1.1", "1.2.3.256", "999.1.1.1", "1.2.3",
    "1.2.3.4.5", " 1.2.3.4", "1.2.3.4 ", "\u0661.2.3.4", "1.2.3.\u00b2", "1..2.3", "1.2.3.", ".1.2.3",
    "+1.2.3.4", "-1.2.3.4",
    "1.2.3.4%eth0", "1.2.3.4/32", "1.2.3.0x1", "1_0.2.3.4", "", ".", "...", "a.b.c.d", "fd00::1", "::1",
    "::ffff:1.2.3.4", "FD00:0:0::0:1", "fe80::1%eth0", "2001:db8::", "2001:DB8:0:0:0:0:0:1", "not-an-ip",
]


@pytest.mark.parametrize("address", ADDRESS_CORPUS)
def test_join_host_port_matches_ipaddress(address: str) -> None:
    """The IPv4 fast path gives exactly what `ipaddress` gives: the same text, sort key and rejections."""
    import ipaddress

    from ingressctl.controller.endpoints import _join_host_port

    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        expected = None
    else:
        text = f"[{ip.compressed}]:8080" if ip.version == 6 else f"{ip.compressed}:8080"
        expected = ((ip.version, int(ip), 8080), text)
    assert _join_host_port(address, 8080) == expected


def test_canonical_ipv4_endpoints_are_read_without_ipaddress(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nearly every endpoint is a canonical IPv4 address: it never reaches the `ipaddress` parser (the
    resolution of 10,000 backends spent a third of its time there); IPv6 still does."""
    import ipaddress

    calls: list[str] = []
    real = ipaddress.ip_address

    def counting(address: str) -> Any:
        calls.append(address)
        return real(address)

    monkeypatch.setattr(ipaddress, "ip_address", counting)
    svc = service([{"name": "http", "port": 80, "targetPort": 8080}])
    slc = eslice("a", [endpoint("10.0.0.2"), endpoint("10.0.0.10"), endpoint("fd00::1")],
                 [{"name": "http", "port": 8080}])
    assert endpoints_for_port(svc, 80, [slc]) == ["10.0.0.2:8080", "10.0.0.10:8080", "[fd00::1]:8080"]
    assert calls == ["fd00::1"]


def test_backend_walk_skips_malformed_parts() -> None:
    from ingressctl.kinds.ingress.refs import service_names

    good = {"path": "/", "backend": {"service": {"name": "web", "port": {"number": 80}}}}
    for spec in (None, [], {"rules": None}, {"rules": {}}, {"rules": [None, "x", {"http": None}]},
                 {"rules": [{"http": {"paths": None}}, {"http": {"paths": [None, 3, {"backend": None}]}}]}):
        assert ingress_backends({"spec": spec}) == [] and service_names({"spec": spec}) == set()
    ing = {"spec": {"defaultBackend": {"service": {"name": "d", "port": None}},
                    "rules": [None, {"host": "a.com", "http": {"paths": [None, good,
                              {"path": "/x", "backend": {"service": {"name": "n", "port": {"name": None}}}},
                              {"path": "/y", "backend": {"service": {}}}]}}]}}
    assert ingress_backends(ing) == [("d", ""), ("web", 80), ("n", "")]
    assert ingress_backends(ing, valid_hosts={"a.com": False}) == [("d", "")]
    assert ingress_backends(ing, valid_paths={"/x": True}) == [("d", ""), ("n", "")]
    assert service_names(ing) == {"d", "web", "n"}
