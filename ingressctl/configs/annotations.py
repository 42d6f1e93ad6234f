"""Ingress annotations (NIC's `annotations.go`): a table from annotation name to the setting it overrides.

Guarantees: `parse_annotations` never raises. Each supported annotation is parsed with a strict parser; an
invalid value is ignored (the ConfigMap value stays) and reported as a warning naming the annotation. Snippet
annotations apply only with `snippets_enabled`. Adding an annotation that overrides a `ConfigParams` field is
one line in `ANNOTATIONS`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ingressctl.configs import parsing
from ingressctl.configs.configmaps import ConfigParams

_SERVICE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_REWRITE_PATH = re.compile(r"/[A-Za-z0-9._~!*+,:@&=%/\-]*")


@dataclass(frozen=True)
class Annotation:
    """An annotation that overrides one `ConfigParams` field."""

    name: str
    field: str
    parse: Callable[[str], Any]
    needs_snippets: bool = False


def _bool(value: str) -> bool:
    return parsing.parse_bool(value.strip())


def _int(minimum: int, maximum: int) -> Callable[[str], int]:
    return lambda v: parsing.parse_int(v, minimum=minimum, maximum=maximum)


def _buffers(value: str) -> str:
    parts = value.split()
    if len(parts) != 2:
        raise ValueError(f"invalid proxy buffers {value!r}: use '<number> <size>', e.g. '8 4k'")
    return f"{parsing.parse_int(parts[0], minimum=1, maximum=1 << 16)} {parsing.parse_size(parts[1])}"


ANNOTATIONS: tuple[Annotation, ...] = (
    Annotation("nginx.org/proxy-connect-timeout", "proxy_connect_timeout", parsing.parse_time),
    Annotation("nginx.org/proxy-read-timeout", "proxy_read_timeout", parsing.parse_time),
    Annotation("nginx.org/proxy-send-timeout", "proxy_send_timeout", parsing.parse_time),
    Annotation("nginx.org/client-max-body-size", "client_max_body_size", parsing.parse_size),
    Annotation("nginx.org/proxy-buffering", "proxy_buffering", _bool),
    Annotation("nginx.org/proxy-buffers", "proxy_buffers", _buffers),
    Annotation("nginx.org/proxy-buffer-size", "proxy_buffer_size", parsing.parse_size),
    Annotation("nginx.org/proxy-max-temp-file-size", "proxy_max_temp_file_size", parsing.parse_size),
    Annotation("nginx.org/server-tokens", "server_tokens", parsing.parse_server_tokens),
    Annotation("nginx.org/redirect-to-https", "redirect_to_https", _bool),
    Annotation("ingress.kubernetes.io/ssl-redirect", "ssl_redirect", _bool),
    Annotation("nginx.org/lb-method", "lb_method", parsing.parse_lb_method),
    Annotation("nginx.org/keepalive", "keepalive", _int(0, 100000)),
    Annotation("nginx.org/max-fails", "max_fails", _int(0, 100000)),
    Annotation("nginx.org/max-conns", "max_conns", _int(0, 1 << 20)),
    Annotation("nginx.org/fail-timeout", "fail_timeout", parsing.parse_time),
    Annotation("nginx.org/upstream-zone-size", "upstream_zone_size", parsing.parse_size),
    Annotation("nginx.org/server-snippets", "server_snippets", parsing.parse_lines, needs_snippets=True),
    Annotation("nginx.org/location-snippets", "location_snippets", parsing.parse_lines, needs_snippets=True),
)
ANNOTATIONS_BY_NAME = {a.name: a for a in ANNOTATIONS}

REWRITES = "nginx.org/rewrites"
WEBSOCKET_SERVICES = "nginx.org/websocket-services"
SSL_SERVICES = "nginx.org/ssl-services"


@dataclass(frozen=True)
class IngressAnnotations:
    """The settings that apply to one Ingress: ConfigMap params with its annotations applied."""

    params: ConfigParams
    rewrites: dict[str, str] = field(default_factory=dict)  # service name -> URI
    websocket_services: frozenset[str] = frozenset()
    ssl_services: frozenset[str] = frozenset()


def parse_rewrites(value: str) -> dict[str, str]:
    """`serviceName=<svc> rewrite=<path>[;serviceName=... rewrite=...]` -> {svc: path}."""
    result: dict[str, str] = {}
    for item in value.split(";"):
        item = item.strip()
        if not item:
            continue
        parts = item.split()
        if (len(parts) != 2 or not parts[0].startswith("serviceName=")
                or not parts[1].startswith("rewrite=")):
            raise ValueError(f"invalid rewrite {item!r}: use 'serviceName=<service> rewrite=<path>'")
        service, path = parts[0][len("serviceName="):], parts[1][len("rewrite="):]
        if not _SERVICE_NAME.fullmatch(service):
            raise ValueError(f"invalid service name {service!r} in rewrite {item!r}")
        if not _REWRITE_PATH.fullmatch(path):
            raise ValueError(f"invalid rewrite path {path!r}: must start with '/' and contain only "
                             "letters, digits and ._~!*+,:@&=%/-")
        if service in result:
            raise ValueError(f"duplicate rewrite for service {service!r}")
        result[service] = path
    return result


def parse_service_list(value: str) -> frozenset[str]:
    services = parsing.parse_comma_list(value)
    for s in services:
        if not _SERVICE_NAME.fullmatch(s):
            raise ValueError(f"invalid service name {s!r}")
    return frozenset(services)


def parse_annotations(annotations: Mapping[str, str] | None, base: ConfigParams, *,
                      snippets_enabled: bool = False) -> tuple[IngressAnnotations, list[str]]:
    """Apply an Ingress's annotations to the ConfigMap params; returns the result and warnings."""
    annotations = annotations or {}
    warnings: list[str] = []
    overrides: dict[str, Any] = {}
    for name, raw in sorted(annotations.items()):
        spec = ANNOTATIONS_BY_NAME.get(name)
        if spec is None:
            continue
        if spec.needs_snippets and not snippets_enabled:
            warnings.append(f"annotation {name} is ignored: snippets are not enabled (--enable-snippets)")
            continue
        if not isinstance(raw, str):
            warnings.append(f"annotation {name} is ignored: not a string")
            continue
        try:
            overrides[spec.field] = spec.parse(raw)
        except ValueError as e:
            warnings.append(f"annotation {name} is ignored: {e}")
    extra: dict[str, Any] = {}
    per_service: tuple[tuple[str, str, Callable[[str], Any]], ...] = (
        (REWRITES, "rewrites", parse_rewrites),
        (WEBSOCKET_SERVICES, "websocket_services", parse_service_list),
        (SSL_SERVICES, "ssl_services", parse_service_list),
    )
    for ann, key, parse in per_service:
        value = annotations.get(ann)
        if value is None:
            continue
        try:
            extra[key] = parse(str(value))
        except ValueError as e:
            warnings.append(f"annotation {ann} is ignored: {e}")
    params = dataclasses.replace(base, **overrides) if overrides else base
    return IngressAnnotations(params=params, **extra), warnings
