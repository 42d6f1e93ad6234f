"""A resource request as the server routes it, and the query parameters every verb shares.

- `ResourceRequest`: kind, namespace, name, subresource, verb and query of one resource request.
- `bool_param`, `int_param`, `field_validation`: parameters parsed as kube-apiserver parses them, a bad value
  refused with 400 naming the parameter.
- `warning_headers`: warnings as one RFC 7234 `Warning` header (code 299 each).
"""

from __future__ import annotations

from dataclasses import dataclass

from ingressctl.devcluster import errors
from ingressctl.devcluster.resources import ResourceKind

PATCH_TYPES = {"application/merge-patch+json": "merge", "application/json-patch+json": "json",
               "application/strategic-merge-patch+json": "strategic"}


@dataclass
class ResourceRequest:
    kind: ResourceKind
    namespace: str
    name: str
    subresource: str
    verb: str
    query: dict[str, str]

    @property
    def resource(self) -> str:
        return f"{self.kind.plural}/{self.subresource}" if self.subresource else self.kind.plural


def bool_param(query: dict[str, str], name: str) -> bool | None:
    value = query.get(name)
    if value is None:
        return None
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0", ""):
        return False
    raise errors.bad_request(f'invalid value for {name}: "{value}"')


_FIELD_VALIDATION = ("Ignore", "Strict", "Warn")


def field_validation(query: dict[str, str]) -> str:
    """The fieldValidation directive of a write ("" when absent: like Ignore for custom resources)."""
    value = query.get("fieldValidation", "")
    if value and value not in _FIELD_VALIDATION:
        raise errors.bad_request(f'fieldValidation: Unsupported value: "{value}": supported values: '
                                 + ", ".join(f'"{v}"' for v in _FIELD_VALIDATION))
    return value


def warning_headers(warnings: list[str]) -> dict[str, str] | None:
    """The warnings as one RFC 7234 Warning header (code 299 each), comma-separated as the RFC allows; clients
    (client-go, the kubernetes Python client) split the list."""
    if not warnings:
        return None
    printable = ("".join(c if " " <= c <= "~" else "?" for c in w) for w in warnings)  # a header is latin-1
    return {"Warning": ", ".join('299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"'
                                 for w in printable)}


def int_param(query: dict[str, str], name: str) -> int:
    value = query.get(name, "")
    if value == "":
        return 0
    try:
        n = int(value)
        if n < 0:
            raise ValueError
        return n
    except ValueError:
        raise errors.bad_request(f'invalid value for {name}: "{value}": must be a non-negative '
                                 'integer') from None
