"""Ingress validation: NIC's rules with Kubernetes' field-error format (`ingressctl.validation`).

Guarantees:
- `validate_ingress` is pure and never raises on malformed input (wrong types, missing fields): every problem
  becomes a `FieldError`, formatted exactly as apimachinery's `field.Error`
  (`spec.rules[0].host: Invalid value: "foo_bar": a lowercase RFC 1123 subdomain ...`).
- Order of checks follows NIC: annotations (`annotation_validation`), then the spec, then the master/minion
  rules of mergeable Ingresses.
- Deliberate differences from NIC: duplicate paths of one host (the same path with the same pathType; Exact
  and Prefix of one path are two paths) are a `Duplicate value` error; path errors carry the correct field
  path `spec.rules[i].http.paths[j].path`; hosts and backends get the API server's checks too (an Ingress
  from a cluster that skips them is still rejected cleanly).
- An Ingress without rules needs a `defaultBackend` (the API server's rule; it is then the class-wide
  catch-all, see the Configuration); NIC requires rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from ingressctl.kinds.ingress.annotation_validation import annotation_errors, get_annotations
from ingressctl.kinds.ingress.annotations_nginx_org import (
    LISTEN_PORTS,
    LISTEN_PORTS_SSL,
    MERGEABLE_INGRESS_TYPE,
)
from ingressctl.kinds.ingress.ingress_nginx.translate import has_ingress_nginx
from ingressctl.kinds.ingress.ingress_nginx.validation import ingress_nginx_errors
from ingressctl.validation import (
    DNS1035_LABEL_RE,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    is_dns1035_label,
    is_valid_port_name,
    is_valid_port_num,
    not_supported,
    regex_error,
    required,
    too_many,
    validate_host,
)

INGRESS_CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"

PATH_TYPES: Final = ("Exact", "ImplementationSpecific", "Prefix")


def _as_dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


# ---------------------------------------------------------------------------------------------------------
# Spec validation.

_PATH_FMT = r"/[^\s;]*"
_PATH_RE = re.compile(_PATH_FMT)
_PATH_MSG = "must start with / and must not include any whitespace character or ';'"
_ESCAPED_STRING_RE = re.compile(r'([^"\\]|\\.)*', re.DOTALL)
_CURLY_WITH_LETTERS_RE = re.compile(r"\{[^}]*[A-Za-z][^}]*\}")
_ILLEGAL_PATH_RE = re.compile(r"/etc/|/root|/var|\\n|\\r")
_INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_PATH_SUFFIXES = ("/..", "/.")
_PATH_SEPARATORS_RE = re.compile(r"[/\\]")
# Letters, digits, '_', '-' and '/': no character any check below refuses or reads specially (no '.', '%',
# quote, backslash, brace or regex syntax), so only '//' and the illegal paths can make such a path invalid.
_PLAIN_PATH_RE = re.compile(r"/[A-Za-z0-9_/-]*")


def _is_plain_path(path: str) -> bool:
    """A path `validate_path` accepts under every pathType, decided without its full set of checks (most
    paths: letters, digits, '-', '_' and single slashes)."""
    return _PLAIN_PATH_RE.fullmatch(path) is not None and "//" not in path \
        and _ILLEGAL_PATH_RE.search(path) is None


def validate_path(path: str, path_type: str, field: str) -> list[FieldError]:
    """A path of pathType Exact, Prefix or ImplementationSpecific (the pathType is already checked)."""
    if path == "":
        if path_type == "ImplementationSpecific":
            return []
        return [required(field, "path is required for Exact and Prefix PathTypes")]
    if _is_plain_path(path):
        return []
    return _path_errors(path, path_type, field)


def _path_errors(path: str, path_type: str, field: str) -> list[FieldError]:
    """Every check of `validate_path` on a non-empty path."""
    if not _PATH_RE.fullmatch(path):
        return [invalid(field, path, regex_error(_PATH_MSG, _PATH_FMT, "/", "/path", "/path/subpath-123"))]
    errs: list[FieldError] = []
    if path.startswith("//"):
        errs.append(invalid(field, path, "must not start with '//' (a protocol-relative URL)"))
    if ".." in _PATH_SEPARATORS_RE.split(path):
        errs.append(invalid(field, path, "must not contain '..' path segments"))
    if path_type in ("Exact", "Prefix"):
        for seq in _INVALID_PATH_SEQUENCES:
            if seq in path:
                errs.append(invalid(field, path, f"must not contain '{seq}'"))
        for suffix in _INVALID_PATH_SUFFIXES:
            if path.endswith(suffix):
                errs.append(invalid(field, path, f"cannot end with '{suffix}'"))
    try:
        re.compile(path)
    except re.error as e:
        errs.append(invalid(field, path, f"must be a valid regular expression: {e}"))
    if not _ESCAPED_STRING_RE.fullmatch(path):
        errs.append(invalid(field, path, "must have all '\"' (double quotes) escaped and must not end with "
                                         "an unescaped '\\' (backslash)"))
    if _CURLY_WITH_LETTERS_RE.search(path):
        errs.append(invalid(field, path, "must not include curly braces containing alphabetical characters"))
    if _ILLEGAL_PATH_RE.search(path):  # anywhere in the path, as NIC 5.5
        errs.append(invalid(field, path, "must not contain invalid paths"))
    return errs


def _is_plain_backend(backend: Any) -> bool:
    """A backend `validate_backend` accepts, decided without building its messages: a Service with a valid
    DNS-1035 name and a port number 1-65535 (no port name)."""
    if not isinstance(backend, dict) or backend.get("resource") is not None:
        return False
    service = backend.get("service")
    if not isinstance(service, dict):
        return False
    name, port = service.get("name"), service.get("port")
    if not isinstance(name, str) or len(name) > 63 or DNS1035_LABEL_RE.fullmatch(name) is None \
            or not isinstance(port, dict) or port.get("name"):
        return False
    number = port.get("number")
    return isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= 65535


def validate_backend(backend: Any, field: str) -> list[FieldError]:
    """An IngressBackend: a Service with a valid name and one port (number 1-65535 or an IANA_SVC_NAME)."""
    if not isinstance(backend, dict):
        return [invalid(field, "", "resource or service backend is required")]
    has_resource = backend.get("resource") is not None
    service = backend.get("service")
    if has_resource:
        return [forbidden(f"{field}.resource", "resource backends are not supported")]
    if not isinstance(service, dict):
        return [invalid(field, "", "resource or service backend is required")]
    errs: list[FieldError] = []
    name = service.get("name")
    if not isinstance(name, str) or name == "":
        errs.append(required(f"{field}.service.name"))
    else:
        errs.extend(invalid(f"{field}.service.name", name, m) for m in is_dns1035_label(name))
    port = _as_dict(service.get("port"))
    port_name = port.get("name") or ""
    port_number = port.get("number") or 0
    if not isinstance(port_name, str):
        errs.append(invalid(f"{field}.service.port.name", str(port_name), "must be a string"))
        return errs
    if not isinstance(port_number, int) or isinstance(port_number, bool):
        errs.append(invalid(f"{field}.service.port.number", str(port_number), "must be an integer"))
        return errs
    if port_name and port_number:
        errs.append(invalid(field, "", "cannot set both port name & port number"))
    elif port_name:
        errs.extend(invalid(f"{field}.service.port.name", port_name, m)
                    for m in is_valid_port_name(port_name))
    elif port_number:
        errs.extend(invalid(f"{field}.service.port.number", port_number, m)
                    for m in is_valid_port_num(port_number))
    else:
        errs.append(required(field, "port name or number is required"))
    return errs


def path_conflict_key(path: str, path_type: str) -> str:
    """The location a path occupies: "" means "/", and a Prefix path ignores its trailing slashes."""
    if path == "":
        return "/"
    if path_type == "Prefix":
        return path.rstrip("/") or "/"
    return path


def duplicate_path_key(path: str, path_type: str) -> tuple[str, str]:
    """What makes two paths of one rule duplicates: the same path (as `path_conflict_key` sees it) with the
    same pathType. Exact and Prefix of one path are different paths (Exact wins for the exact URI)."""
    return path_type, path_conflict_key(path, path_type)


def validate_ingress_spec(ing: Mapping[str, Any], *, allow_empty_host: bool = False) -> list[FieldError]:
    """NIC's `validateIngressSpec` plus the API server's host, pathType and backend checks. With
    `allow_empty_host` (NIC's -allow-empty-ingress-host) one rule may have no host (`_empty_host_errors`)."""
    spec = _as_dict(ing.get("spec"))
    errs: list[FieldError] = []
    if spec.get("defaultBackend") is not None:
        errs.extend(validate_backend(spec["defaultBackend"], "spec.defaultBackend"))
    rules = _as_list(spec.get("rules"))
    if not rules and spec.get("defaultBackend") is None:
        errs.append(required("spec.rules"))
        return errs
    hosts: set[str] = set()
    valid_hosts: set[str] = set()   # rule hosts validate_host accepted
    for i, raw_rule in enumerate(rules):
        rule = _as_dict(raw_rule)
        host = rule.get("host")
        host_field = f"spec.rules[{i}].host"
        if (host is None or host == "") and allow_empty_host:
            if "" in hosts:
                errs.append(duplicate(host_field, ""))
            else:
                hosts.add("")
                errs.extend(_empty_host_errors(ing, host_field))
        elif not isinstance(host, str) or host == "":
            errs.append(required(host_field))
        elif host in hosts:
            errs.append(duplicate(host_field, host))
        else:
            hosts.add(host)
            host_errs = validate_host(host, host_field)
            if host_errs:
                errs.extend(host_errs)
            else:
                valid_hosts.add(host)
        seen_paths: set[tuple[str, str]] = set()
        for j, raw_path in enumerate(_as_list(_as_dict(rule.get("http")).get("paths"))):
            p = _as_dict(raw_path)
            path = p.get("path", "")
            path_type = p.get("pathType")
            if isinstance(path, str) and path_type in PATH_TYPES and _is_plain_path(path) \
                    and _is_plain_backend(p.get("backend")):
                # Nothing to report for the path or its backend: only the duplicate check is left.
                k = duplicate_path_key(path, path_type)
                if k in seen_paths:
                    errs.append(duplicate(f"spec.rules[{i}].http.paths[{j}].path", path))
                seen_paths.add(k)
                continue
            pfield = f"spec.rules[{i}].http.paths[{j}]"
            if not isinstance(path, str):
                errs.append(invalid(f"{pfield}.path", str(path), "must be a string"))
                path = ""
            if path_type is None or path_type == "":
                errs.append(required(f"{pfield}.pathType", "pathType must be specified"))
            elif path_type not in PATH_TYPES:
                errs.append(not_supported(f"{pfield}.pathType", str(path_type), PATH_TYPES))
            else:
                path_errs = validate_path(path, path_type, f"{pfield}.path")
                errs.extend(path_errs)
                if not path_errs:
                    k = duplicate_path_key(path, path_type)
                    if k in seen_paths:
                        errs.append(duplicate(f"{pfield}.path", path))
                    seen_paths.add(k)
            errs.extend(validate_backend(p.get("backend"), f"{pfield}.backend"))
    for i, raw_tls in enumerate(_as_list(spec.get("tls"))):
        for j, h in enumerate(_as_list(_as_dict(raw_tls).get("hosts"))):
            if isinstance(h, str) and h and h not in valid_hosts:   # a valid rule host is valid here too
                errs.extend(validate_host(h, f"spec.tls[{i}].hosts[{j}]"))
    return errs


def _rules_and_paths(ing: Mapping[str, Any]) -> tuple[list[Any], Any]:
    rules = _as_list(_as_dict(ing.get("spec")).get("rules"))
    http = _as_dict(rules[0]).get("http") if rules else None
    return rules, http


def validate_master_spec(ing: Mapping[str, Any]) -> list[FieldError]:
    """A master: exactly one rule, and no paths."""
    rules, http = _rules_and_paths(ing)
    if len(rules) != 1:
        return [too_many("spec.rules", len(rules), 1)]
    paths = _as_list(_as_dict(http).get("paths"))
    if paths:
        return [too_many("spec.rules[0].http.paths", len(paths), 0)]
    return []


def validate_minion_spec(ing: Mapping[str, Any]) -> list[FieldError]:
    """A minion: no TLS, exactly one rule, at least one path."""
    tls = _as_list(_as_dict(ing.get("spec")).get("tls"))
    if tls:
        return [too_many("spec.tls", len(tls), 0)]
    rules, http = _rules_and_paths(ing)
    if len(rules) != 1:
        return [too_many("spec.rules", len(rules), 1)]
    if not _as_list(_as_dict(http).get("paths")):
        return [required("spec.rules[0].http.paths", "must include at least one path")]
    return []


def _empty_host_errors(ing: Mapping[str, Any], field: str) -> list[FieldError]:
    """A rule without a host (it serves the hosts no other server names, as the class-wide catch-all does):
    not with its own listen ports, and no TLS entry with an empty host (its certificate is the default
    server's). A mergeable master may have it, and its minions then have no host either (NIC 5.5: the way to
    share the default server across namespaces)."""
    errs: list[FieldError] = []
    annotations = get_annotations(ing)
    for name in (LISTEN_PORTS, LISTEN_PORTS_SSL):
        if name in annotations:
            errs.append(forbidden(f"annotations.{name}", "not allowed with a rule without a host"))
    for i, raw_tls in enumerate(_as_list(_as_dict(ing.get("spec")).get("tls"))):
        if "" in _as_list(_as_dict(raw_tls).get("hosts")):
            errs.append(forbidden(f"spec.tls[{i}].hosts", "an empty host cannot have TLS; the rule without a "
                                                         "host uses the default server's certificate"))
    return errs


def validate_ingress(ing: Mapping[str, Any], *, is_plus: bool = False, snippets_enabled: bool = False,
                     allow_empty_host: bool = False, ingress_nginx_compat: bool = False) -> list[FieldError]:
    """Every error of the Ingress, in NIC's order; an empty list means valid. With `ingress_nginx_compat`,
    the `nginx.ingress.kubernetes.io/*` annotations are checked too (`ingress_nginx/validation.py`)."""
    annotations = get_annotations(ing)
    errs = annotation_errors(ing, annotations, is_plus=is_plus, snippets_enabled=snippets_enabled)
    if ingress_nginx_compat and annotations and has_ingress_nginx(annotations):
        errs.extend(ingress_nginx_errors(annotations, snippets_enabled=snippets_enabled))
        errs.sort(key=lambda e: e.field)
    errs.extend(validate_ingress_spec(ing, allow_empty_host=allow_empty_host))
    kind = annotations.get(MERGEABLE_INGRESS_TYPE, "")
    if kind == "master":
        errs.extend(validate_master_spec(ing))
    elif kind == "minion":
        errs.extend(validate_minion_spec(ing))
    return errs
