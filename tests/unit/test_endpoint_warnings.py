"""The no-endpoints warning: why a Service has no endpoints, and one warning per Ingress and reason."""

from __future__ import annotations

from ingressctl.kinds.ingress.endpoint_warnings import EndpointWarnings, no_endpoints_reason


def test_reasons() -> None:
    assert no_endpoints_reason("d", "web", 80, []).startswith("Service d/web has no EndpointSlices: ")
    not_ready = [{"endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": False}},
                                {"addresses": ["10.0.0.2", "10.0.0.3"]}]}]
    assert no_endpoints_reason("d", "web", "http", not_ready).startswith(
        "Service d/web has no ready endpoints for port http (3 endpoint address(es) not ready or for another "
        "port): requests routed to it get 502")
    assert "has no ready endpoints for port 80:" in no_endpoints_reason("d", "web", 80, [{"endpoints": None}])


def test_each_reason_is_given_once_until_it_changes() -> None:
    w = EndpointWarnings()
    assert w.observe("d/app", {"web": "none"}) == ["none"]
    assert w.observe("d/app", {"web": "none"}) == []                       # every later sync: quiet
    assert w.observe("d/app", {"web": "none", "api": "none"}) == ["none"]  # another Service
    assert w.observe("d/app", {"web": "not ready", "api": "none"}) == ["not ready"]
    assert w.observe("d/other", {"web": "not ready"}) == ["not ready"]     # per Ingress
    assert w.observe("d/app", {}) == []                                    # fixed
    assert w.observe("d/app", {"web": "not ready"}) == ["not ready"]       # broken again: said again
    w.forget("d/app")
    assert w.observe("d/app", {"web": "not ready"}) == ["not ready"]       # a new Ingress of that name
