"""Validation of an Ingress's ingress-nginx annotations as Kubernetes field errors (the `Rejected` event's
text): what `translate` refuses or finds invalid.

Guarantees:
- `annotations.<key>: Invalid value: "<value>": <detail>` for a value ingress-nginx's validator (or NGINX)
  would refuse, `annotations.<key>: Forbidden: not supported by ingressctl: <reason>` for a refused
  annotation; one error per annotation, sorted by key. Never raises.
"""

from __future__ import annotations

from collections.abc import Mapping

from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.validation import FieldError, forbidden, invalid


def ingress_nginx_errors(annotations: Mapping[str, str], *,
                         snippets_enabled: bool = False) -> list[FieldError]:
    """See the module docstring (the redirect default does not change what is valid)."""
    errs = []
    for p in translate(annotations, snippets_enabled=snippets_enabled).problems:
        field = f"annotations.{p.key}"
        errs.append(forbidden(field, f"not supported by ingressctl: {p.detail}") if p.refused
                    else invalid(field, p.value, p.detail))
    errs.sort(key=lambda e: e.field)
    return errs
