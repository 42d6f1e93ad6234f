"""NGINX: config files and the process (`manager`), stub_status (`stub_status`), worker counts (`processes`).

Layering: this package never imports ingressctl.k8s, ingressctl.controller or ingressctl.configs.
"""

from ingressctl.nginx.manager import (
    CONF_D_INCLUDE,
    CONFIG_VERSION_INCLUDE,
    Manager,
    NginxStartError,
    ReloadError,
    RuntimePaths,
    config_version_include_path,
)
from ingressctl.nginx.processes import WorkerProcessCounts, count_worker_processes
from ingressctl.nginx.stub_status import StubStatus, StubStatusError, fetch_stub_status, parse_stub_status

__all__ = [
    "CONFIG_VERSION_INCLUDE",
    "CONF_D_INCLUDE",
    "Manager",
    "NginxStartError",
    "ReloadError",
    "RuntimePaths",
    "StubStatus",
    "StubStatusError",
    "WorkerProcessCounts",
    "config_version_include_path",
    "count_worker_processes",
    "fetch_stub_status",
    "parse_stub_status",
]
