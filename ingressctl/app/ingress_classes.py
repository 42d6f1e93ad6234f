"""The start-up check of the IngressClasses (NIC's mustValidateIngressClass), with `--ingress-nginx-compat`'s
classes.

Guarantees:
- The IngressClass of `--ingress-class` must exist and name this controller (`nginx.org/ingress-controller`);
  with compat on it may name `k8s.io/ingress-nginx` instead. Anything else raises `IngressClassError` with a
  message for users.
- Compat on: every IngressClass is listed once and the ingress-nginx ones become the compat names of
  `classes`; none is not an error (the informer serves them once they appear), it is logged. A failed list is
  an error (RBAC: the chart grants `list` on IngressClasses).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ingressctl.controller.ingress_class import INGRESS_NGINX_CONTROLLER, NGINX_CONTROLLER, IngressClasses
from ingressctl.k8s.errors import ApiError
from ingressctl.logging import get_logger

log = get_logger(__name__)


class IngressClassError(Exception):
    """The IngressClasses do not allow the controller to start."""


def check_ingress_classes(classes: IngressClasses, get: Callable[[], dict[str, Any]],
                          list_all: Callable[[], dict[str, Any]]) -> None:
    """See the module docstring. `get` reads the primary IngressClass, `list_all` lists every one."""
    name = classes.primary
    try:
        ic = get()
    except ApiError as e:
        if e.is_not_found:
            raise IngressClassError(
                f"IngressClass {name!r} does not exist: create it with spec.controller "
                f"{NGINX_CONTROLLER!r}, or pass --ingress-class with the name of one that does") from e
        raise IngressClassError(f"cannot read IngressClass {name!r}: {e}") from e
    controller = (ic.get("spec") or {}).get("controller")
    accepted = (NGINX_CONTROLLER, INGRESS_NGINX_CONTROLLER) if classes.compat else (NGINX_CONTROLLER,)
    if controller not in accepted:
        raise IngressClassError(f"IngressClass {name!r} has spec.controller {controller!r}; "
                                f"this controller serves {' or '.join(map(repr, accepted))}")
    if not classes.compat:
        return
    try:
        listed = list_all()
    except ApiError as e:
        raise IngressClassError(f"cannot list IngressClasses (--ingress-nginx-compat): {e}") from e
    for item in listed.get("items") or []:
        classes.observe(item)
    if not classes.compat_names:
        log.info("no IngressClass names the controller k8s.io/ingress-nginx yet; served once one exists",
                 also_served="the annotation kubernetes.io/ingress.class: nginx")
    log.info("ingress-nginx compatibility on", ingress_classes=classes.describe())
