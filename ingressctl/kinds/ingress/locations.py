"""The pieces of an Ingress's servers: safe hosts, paths and endpoints, NIC's upstream names, the NGINX
locations of one path, and the Service backend of a path.

Guarantees:
- `location_keys(path, path_type, path_regex)`: the `(modifier, path or regex)` of the locations that
  implement one Ingress path (see the config module for the rules); `put_location` adds one to a server, an
  Exact path winning over a Prefix one for the same location, otherwise the first wins and the other is
  reported.
- `service_backend(backend)`: a Service backend of an Ingress backend, or why there is none; the patterns here
  accept only values that are safe in the templates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ingressctl.configs.config import (
    EXACT,
    PREFIX,
    REGEX,
    REGEX_CASE_INSENSITIVE,
    Location,
)
from ingressctl.validation import as_list

HOST = re.compile(r"(\*\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*")


NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


PORT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?")


# A path in a prefix or exact location: no whitespace, quotes, backslash, ';', '{', '}', '$', '#' or control
# characters.
PATH = re.compile(r"/[^\s\"'\\;{}$#\x00-\x1f\x7f]{0,2047}")


# A path used as a regular expression (written double-quoted): no whitespace, ';' or control characters.
REGEX_PATH = re.compile(r"/[^\s;\x00-\x1f\x7f]{0,2047}")


ENDPOINT = re.compile(
    r"(\d{1,3}(\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):\d{1,5}")


PATH_TYPE_EXACT = "Exact"


PATH_TYPE_PREFIX = "Prefix"


PATH_TYPE_IMPLEMENTATION_SPECIFIC = "ImplementationSpecific"


def upstream_name(namespace: str, ingress_name: str, host: str, service: str, port: int | str) -> str:
    """NIC's upstream name: `<ns>-<ing>-<host>-<svc>-<port>`."""
    return f"{namespace}-{ingress_name}-{host}-{service}-{port}"


def location_keys(path: str, path_type: str, path_regex: str = "") -> list[tuple[str, str]]:
    """The NGINX locations `(modifier, path or regex)` that implement one Ingress path."""
    if path_regex in ("case_sensitive", "case_insensitive"):
        modifier = REGEX if path_regex == "case_sensitive" else REGEX_CASE_INSENSITIVE
        return [(modifier, "^" + path + ("$" if path_type == PATH_TYPE_EXACT else ""))]
    if path_type == PATH_TYPE_EXACT and path_regex != "exact" and len(path) > 1 and path.endswith("/"):
        return [exact_trailing_slash_location(path)]
    if path_regex == "exact" or path_type == PATH_TYPE_EXACT:
        return [(EXACT, path)]
    if path_type == PATH_TYPE_PREFIX:
        trimmed = path.rstrip("/")
        if not trimmed:
            return [(PREFIX, "/")]
        return [(EXACT, trimmed), (PREFIX, trimmed + "/")]
    return [(PREFIX, path)]


def exact_trailing_slash_location(path: str) -> tuple[str, str]:
    """An Exact path ending in `/` as an anchored regex location. `location = /foo/` would make NGINX answer
    `/foo` with a 301 to `/foo/` (its automatic redirect for a proxied location ending in a slash); a regex
    location has no such redirect, so `/foo` goes wherever it would go without this path."""
    return REGEX, "^" + re.escape(path) + "$"


def exact_first(locations: list[Location]) -> list[Location]:
    """The regex locations of Exact paths before the others (otherwise in order): NGINX takes the first
    matching regex, and an Exact path wins for its URI. `locations` itself when it has none (most)."""
    for loc in locations:
        if loc.exact_regex:
            return sorted(locations, key=lambda loc: not loc.exact_regex)
    return locations


def has_root_location(locations: list[Location]) -> bool:
    """A `location /` is among `locations`."""
    return any(loc.path == "/" and loc.modifier == PREFIX for loc in locations)


@dataclass
class ServiceBackend:
    service: str
    port: int | str


def service_backend(backend: Any) -> tuple[ServiceBackend | None, str]:
    """A Service backend from an Ingress backend dict, or (None, problem)."""
    if not isinstance(backend, dict):
        return None, "no backend"
    service = backend.get("service")
    if not isinstance(service, dict):
        if "resource" in backend:
            return None, "resource backends are not supported"
        return None, "no service backend"
    name = service.get("name")
    port = service.get("port")
    if not isinstance(name, str) or not LABEL.fullmatch(name):
        return None, f"invalid service name {name!r}"
    if not isinstance(port, dict):
        return None, "invalid service port"
    number, port_name = port.get("number"), port.get("name")
    if isinstance(number, int) and not isinstance(number, bool) and 0 < number < 65536:
        return ServiceBackend(name, number), ""
    if isinstance(port_name, str) and port_name and PORT_NAME.fullmatch(port_name):
        return ServiceBackend(name, port_name), ""
    return None, f"invalid port for service {name!r}"


def tls_secret_names(spec: dict[str, Any]) -> dict[str, str]:
    """host -> secretName from spec.tls (exact host match; with several entries the last wins)."""
    result: dict[str, str] = {}
    for tls in as_list(spec.get("tls")):
        if not isinstance(tls, dict):
            continue
        secret = tls.get("secretName") or ""
        for host in as_list(tls.get("hosts")):
            if isinstance(host, str):
                result[host] = secret if isinstance(secret, str) else ""
    return result


# (modifier, path) -> (location, is an Exact path)
Locations = dict[tuple[str, str], tuple[Location, bool]]


@dataclass
class ServerParts:
    host: str
    locations: Locations = field(default_factory=dict)


def put_location(locations: Locations, loc: Location, is_exact: bool) -> bool:
    """Add a location unless one with the same (modifier, path) is there; an Exact path beats a Prefix one
    (Kubernetes). False if it was a duplicate."""
    key = (loc.modifier, loc.path)
    existing = locations.get(key)
    if existing is None or (is_exact and not existing[1]):
        locations[key] = (loc, is_exact)
    elif existing[1] and not is_exact and loc.modifier == EXACT:
        pass  # a Prefix path's exact location is served by an Exact path, as Kubernetes says
    else:
        return False
    return True


def one_label_host_regex(host: str) -> str:
    """For a wildcard host `*.foo.com`, the regex of the hosts it matches under the Ingress spec: exactly one
    label in place of the `*` (`bar.foo.com`, neither `baz.bar.foo.com` nor `foo.com`); "" for other hosts."""
    if not host.startswith("*."):
        return ""
    return "^[^.]+" + re.escape(host[1:]) + "$"
