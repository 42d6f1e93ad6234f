"""What the API server refused: every 403 Forbidden a `KubeClient` gets, as the RBAC permission it lacks.

Guarantees: each refusal is logged at error level with the permission spelled out (verb, API group,
resource with its subresource, namespace or cluster scope), the server's message (which names the identity)
and what to do about it; `counts()` gives how often each permission was refused, for metrics. Thread-safe;
recording never raises.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from urllib.parse import unquote

from ingressctl.logging import get_logger

log = get_logger(__name__)


@dataclass(frozen=True, order=True)
class Permission:
    """One RBAC permission as a rule grants it; namespace "" means all namespaces or a cluster-scoped kind."""

    verb: str
    group: str
    resource: str          # "ingresses" or "ingresses/status"
    namespace: str = ""

    def __str__(self) -> str:
        where = f'in namespace "{self.namespace}"' if self.namespace else "cluster-wide"
        return f'{self.verb} {self.resource} (API group "{self.group}") {where}'


def permission_of(verb: str, path: str) -> Permission:
    """The permission a request needs, from its verb and REST path (`/api/v1/...` or `/apis/<g>/<v>/...`)."""
    parts = [unquote(p) for p in path.split("?", 1)[0].split("/") if p]
    group = ""
    if parts[:1] == ["api"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return Permission(verb, "", path)
    if rest[:1] == ["watch"]:
        rest = rest[1:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return Permission(verb, group, path, namespace)
    resource = rest[0] + (f"/{rest[2]}" if len(rest) >= 3 else "")
    return Permission(verb, group, resource, namespace)


class PermissionDenials:
    """Counts and logs the permissions the API server refused."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[Permission, int] = {}

    def record(self, verb: str, path: str, message: str) -> Permission:
        permission = permission_of(verb, path)
        with self._lock:
            self._counts[permission] = self._counts.get(permission, 0) + 1
        log.error("the API server refused a request: the controller's ServiceAccount lacks an RBAC "
                  "permission; grant it in the Role or ClusterRole bound to that ServiceAccount",
                  missing_permission=str(permission), verb=permission.verb, api_group=permission.group,
                  resource=permission.resource, namespace=permission.namespace or None,
                  server_message=message)
        return permission

    def counts(self) -> dict[Permission, int]:
        with self._lock:
            return dict(self._counts)
