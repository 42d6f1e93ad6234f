"""ConfigMap keys whose directives not every NGINX can load: `add-header-inherit` (NGINX 1.29.3+) and the
OpenTelemetry keys `otel-*` (NGINX's ngx_otel_module, a dynamic module Debian's NGINX does not ship).

Guarantees:
- `CAPABILITY_KEYS` parses each key strictly (values reach the main template).
- `check_otel(values, errors)` applies NIC's rules: `otel-exporter-header-name` and `-value` come together,
  and every other otel key needs `otel-exporter-endpoint`; a value that breaks them is dropped with an error.
- `drop_unloadable(values, capabilities, errors)` drops the values this NGINX cannot load, each with an error
  naming the NGINX version or module it needs. The ConfigMap then gets the Warning event NIC gives a value it
  does not apply, and the main config never holds a directive NGINX would refuse (no failed reload).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ingressctl.configs import directive_values, parsing
from ingressctl.nginx.capabilities import Capabilities

_ENDPOINT = re.compile(r"[A-Za-z0-9._~:/\[\]%@-]{1,1024}")
_SERVICE_NAME = re.compile(r"[A-Za-z0-9._:/-]{1,256}")
_HEADER_VALUE = re.compile(r'[^"$\\\x00-\x1f\x7f]{1,1024}')


def parse_otel_endpoint(value: str) -> str:
    """`host:port` or a URL of the OTLP/gRPC collector; no whitespace, quotes or `;{}$`."""
    v = value.strip()
    if not _ENDPOINT.fullmatch(v):
        raise ValueError("must be a host:port or URL of an OTLP/gRPC collector (no spaces, quotes, ';{}$')")
    return v


def parse_otel_service_name(value: str) -> str:
    v = value.strip()
    if not _SERVICE_NAME.fullmatch(v):
        raise ValueError("must be 1-256 letters, digits or '._:/-'")
    return v


def parse_otel_header_value(value: str) -> str:
    v = value.strip()
    if not _HEADER_VALUE.fullmatch(v):
        raise ValueError("must be 1-1024 characters without quotes, backslashes, '$' or control characters")
    return v


# ConfigMap key -> (ConfigParams field, parser); merged into the ConfigMap key table.
CAPABILITY_KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "add-header-inherit": ("http_add_header_inherit", directive_values.parse_add_header_inherit),
    "otel-exporter-endpoint": ("otel_exporter_endpoint", parse_otel_endpoint),
    "otel-exporter-header-name": ("otel_exporter_header_name",
                                  lambda v: parsing.parse_header_name(v.strip())),
    "otel-exporter-header-value": ("otel_exporter_header_value", parse_otel_header_value),
    "otel-service-name": ("otel_service_name", parse_otel_service_name),
    "otel-trace-in-http": ("otel_trace_in_http", lambda v: parsing.parse_bool(v.strip())),
}
_OTEL_KEYS = tuple(k for k in CAPABILITY_KEYS if k.startswith("otel-"))


def _field(key: str) -> str:
    return CAPABILITY_KEYS[key][0]


def check_otel(values: dict[str, Any], errors: list[tuple[str, str]]) -> None:
    """NIC's rules between the otel keys (see the module docstring); `values` maps field names."""
    name, value = _field("otel-exporter-header-name"), _field("otel-exporter-header-value")
    if (name in values) != (value in values):
        values.pop(name, None)
        values.pop(value, None)
        errors.append(("otel-exporter-header-name",
                       "otel-exporter-header-name and otel-exporter-header-value must be set together; both "
                       "are ignored"))
    if _field("otel-exporter-endpoint") in values:
        return
    for key in _OTEL_KEYS:
        if values.pop(_field(key), None) is not None:
            errors.append((key, "needs otel-exporter-endpoint; ignored"))


def drop_unloadable(values: dict[str, Any], capabilities: Capabilities,
                    errors: list[tuple[str, str]]) -> None:
    """Drop what this NGINX cannot load (see the module docstring); `values` maps field names."""
    if _field("add-header-inherit") in values:
        warning = capabilities.not_applied("ConfigMap key add-header-inherit", "add_header_inherit")
        if warning:
            values.pop(_field("add-header-inherit"))
            errors.append(("add-header-inherit", warning))
    if _field("otel-exporter-endpoint") in values:
        warning = capabilities.not_applied("ConfigMap key otel-exporter-endpoint", "otel")
        if warning:
            for key in _OTEL_KEYS:
                values.pop(_field(key), None)
            errors.append(("otel-exporter-endpoint", warning))
