"""A 403 as the RBAC permission it lacks (k8s/permissions.py) and its metric (metrics/api.py)."""

from __future__ import annotations

import pytest
import structlog

from ingressctl.k8s.permissions import Permission, PermissionDenials, permission_of
from ingressctl.metrics import ControllerMetrics, generate_text


@pytest.mark.parametrize(("verb", "path", "expected"), [
    ("list", "/api/v1/services", Permission("list", "", "services")),
    ("watch", "/apis/networking.k8s.io/v1/ingresses?watch=true&resourceVersion=5",
     Permission("watch", "networking.k8s.io", "ingresses")),
    ("get", "/api/v1/namespaces/edge/secrets/tls", Permission("get", "", "secrets", "edge")),
    ("update", "/apis/networking.k8s.io/v1/namespaces/shop/ingresses/web/status",
     Permission("update", "networking.k8s.io", "ingresses/status", "shop")),
    ("get", "/api/v1/namespaces/edge", Permission("get", "", "namespaces")),
    ("create", "/apis/coordination.k8s.io/v1/namespaces/edge/leases",
     Permission("create", "coordination.k8s.io", "leases", "edge")),
    ("list", "/api/v1/watch/namespaces/edge/configmaps", Permission("list", "", "configmaps", "edge")),
])
def test_permission_of_a_request(verb: str, path: str, expected: Permission) -> None:
    assert permission_of(verb, path) == expected


def test_denials_are_logged_counted_and_exported() -> None:
    denials = PermissionDenials()
    with structlog.testing.capture_logs() as logs:
        denials.record("list", "/api/v1/services", 'services is forbidden: User "u" cannot list ...')
        denials.record("list", "/api/v1/services", "again")
        denials.record("update", "/apis/networking.k8s.io/v1/namespaces/a/ingresses/b/status", "no")
    assert [(e["log_level"], e["missing_permission"]) for e in logs] == [
        ("error", 'list services (API group "") cluster-wide'),
        ("error", 'list services (API group "") cluster-wide'),
        ("error", 'update ingresses/status (API group "networking.k8s.io") in namespace "a"')]
    assert "Role or ClusterRole" in logs[0]["event"]
    assert logs[0]["server_message"] == 'services is forbidden: User "u" cannot list ...'
    assert denials.counts() == {Permission("list", "", "services"): 2,
                                Permission("update", "networking.k8s.io", "ingresses/status", "a"): 1}
    metrics = ControllerMetrics("nginx", run_dir="/nonexistent")
    assert "api_permission_denied_total{" not in generate_text(metrics.registry).decode()
    metrics.watch_api_permissions(denials.counts)
    out = generate_text(metrics.registry).decode()
    assert ('nginx_ingress_controller_api_permission_denied_total{class="nginx",group="",namespace="",'
            'resource="services",verb="list"} 2') in out
    assert ('nginx_ingress_controller_api_permission_denied_total{class="nginx",group="networking.k8s.io",'
            'namespace="a",resource="ingresses/status",verb="update"} 1') in out
