"""ingress-nginx's `default-backend` annotation: a Service of the Ingress's namespace that answers for the
Ingress's backends without endpoints and takes its `custom-http-errors`.

Guarantees:
- `service_of(obj)`: the annotation's Service when its value is a valid Service name ("" otherwise: the
  translation refuses an invalid one), so the Service index re-renders the Ingress when it changes.
- `service_port(service)`: ingress-nginx's choice, the Service's first port (None when it has none).
- The builder (`kinds/ingress/config.py`) uses it only when it has ready endpoints, as ingress-nginx: a
  location whose upstream has none proxies to `<ns>-<name>--<svc>-<port>` (the default-backend upstream), and
  the server's `custom-http-errors` go there instead of `spec.defaultBackend`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.kinds.ingress.ingress_nginx import values as v

DEFAULT_BACKEND = "nginx.ingress.kubernetes.io/default-backend"


def service_of(obj: Mapping[str, Any]) -> str:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_BACKEND)
    if not isinstance(value, str) or not value:
        return ""
    try:
        return v.service_name(value)
    except ValueError:
        return ""


def service_port(service: Mapping[str, Any]) -> int | None:
    ports = (service.get("spec") or {}).get("ports") or []
    port = ports[0].get("port") if ports and isinstance(ports[0], dict) else None
    return port if isinstance(port, int) and not isinstance(port, bool) else None
