"""kube-apiserver's validation of the built-in kinds the controller reads, where a user could tell.

Each function is a `ResourceKind.validate` hook: (new object, current object or None, subresource) -> field
errors with the field paths and wording of kube-apiserver 1.32 (`networking/validation`, `core/validation`),
which the store turns into one 422 Invalid Status.
- Ingress (networking.k8s.io/v1): rule and TLS hosts (DNS-1123 subdomains, a wildcard only as the whole
  first label, no IP addresses), TLS secret names (DNS-1123 subdomains, unless an update keeps the invalid
  names of the current object), `http.paths` present, `pathType` required and one of Exact,
  ImplementationSpecific or Prefix, absolute paths without `//`, `/./`, `/../`, `%2f` or a trailing `/.` or
  `/..` for Exact and Prefix, backends with exactly one of service (a DNS-1035 name and one of port name or
  number 1-65535) or resource, `ingressClassName` a DNS-1123 subdomain and, on create, equal to a
  `kubernetes.io/ingress.class` annotation when both are set; on `/status`, load-balancer IPs that are IPs
  and hostnames that are not.
- Secret (v1): data keys that are valid config keys, `tls.crt` and `tls.key` for `kubernetes.io/tls`, and an
  immutable `type`.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from ingressctl.devcluster.schema import FieldError, go_value

Obj = dict[str, Any]

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_WILDCARD = re.compile(rf"^\*\.{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_PORT_NAME = re.compile(r"^[-a-z0-9]+$")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                 "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
                 "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
WILDCARD_MSG = ("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, "
                "which must consist of lower case alphanumeric characters, '-' or '.' and end with an "
                "alphanumeric character (e.g. '*.example.com', regex used for validation is "
                "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
               "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
               "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
CONFIG_KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
                  "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
                  "'[-._a-zA-Z0-9]+')")
PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
CLASS_ANNOTATION = "kubernetes.io/ingress.class"
_INVALID_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_SUFFIXES = ("/..", "/.")


def _invalid(path: str, value: Any, detail: str) -> FieldError:
    return (path, "FieldValueInvalid", f"Invalid value: {go_value(value)}: {detail}")


def _required(path: str, detail: str = "") -> FieldError:
    return (path, "FieldValueRequired", f"Required value: {detail}" if detail else "Required value")


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def subdomain_errors(value: str, path: str, *, wildcard_ok: bool) -> list[FieldError]:
    """IsDNS1123Subdomain (or IsWildcardDNS1123Subdomain when the value holds a '*' and wildcards are ok)."""
    errs: list[FieldError] = []
    if wildcard_ok and "*" in value:
        if len(value) > 253:
            errs.append(_invalid(path, value, "must be no more than 253 characters"))
        if not _WILDCARD.match(value):
            errs.append(_invalid(path, value, WILDCARD_MSG))
        return errs
    if len(value) > 253:
        errs.append(_invalid(path, value, "must be no more than 253 characters"))
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(_invalid(path, value, SUBDOMAIN_MSG))
    return errs


# --------------------------------------------------------------------------------------------- Ingress
def port_name_errors(name: str) -> list[str]:
    msgs = []
    if len(name) > 15:
        msgs.append("must be no more than 15 characters")
    if not _PORT_NAME.match(name):
        msgs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", name):
        msgs.append("must contain at least one letter (a-z)")
    if "--" in name:
        msgs.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        msgs.append("must not begin or end with a hyphen")
    return msgs


def _backend_errors(backend: Any, path: str) -> list[FieldError]:
    backend = _dict(backend)
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [_invalid(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        res = _dict(resource)
        return [_required(f"{path}.resource.{key}") for key in ("kind", "name") if not res.get(key)]
    if service is None:
        return [_invalid(path, "", "resource or service backend is required")]
    svc = _dict(service)
    errs: list[FieldError] = []
    name = svc.get("name") or ""
    if not name:
        errs.append(_required(f"{path}.service.name"))
    elif not isinstance(name, str) or len(name) > 63 or not _DNS1035_LABEL.match(name):
        errs.append(_invalid(f"{path}.service.name", name, DNS1035_MSG))
    port = _dict(svc.get("port"))
    port_name, number = port.get("name") or "", port.get("number") or 0
    if port_name and number:
        errs.append(_invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errs.extend(_invalid(f"{path}.service.port.name", port_name, msg)
                    for msg in port_name_errors(str(port_name)))
    elif number:
        if not isinstance(number, int) or not 1 <= number <= 65535:
            errs.append(_invalid(f"{path}.service.port.number", number,
                                 "must be between 1 and 65535, inclusive"))
    else:
        errs.append(_required(path, "port name or number is required"))
    return errs


def _path_errors(item: Any, path: str) -> list[FieldError]:
    item = _dict(item)
    path_type = item.get("pathType")
    if not path_type:
        return [_required(f"{path}.pathType", "pathType must be specified")]
    value = item.get("path") or ""
    errs: list[FieldError] = []
    if path_type in ("Exact", "Prefix"):
        if not str(value).startswith("/"):
            errs.append(_invalid(f"{path}.path", value, "must be an absolute path"))
        errs.extend(_invalid(f"{path}.path", value, f"must not contain '{seq}'")
                    for seq in _INVALID_SEQUENCES if value and seq in value)
        errs.extend(_invalid(f"{path}.path", value, f"cannot end with '{suffix}'")
                    for suffix in _INVALID_SUFFIXES if value and str(value).endswith(suffix))
    elif path_type == "ImplementationSpecific":
        if value and not str(value).startswith("/"):
            errs.append(_invalid(f"{path}.path", value, "must be an absolute path"))
    else:
        supported = ", ".join(f'"{t}"' for t in PATH_TYPES)
        errs.append((f"{path}.pathType", "FieldValueNotSupported",
                     f"Unsupported value: {go_value(path_type)}: supported values: {supported}"))
    return errs + _backend_errors(item.get("backend"), f"{path}.backend")


def _rule_errors(rule: Any, path: str) -> list[FieldError]:
    rule = _dict(rule)
    errs: list[FieldError] = []
    host = rule.get("host") or ""
    if host:
        if _is_ip(str(host)):
            errs.append(_invalid(f"{path}.host", host, "must be a DNS name, not an IP address"))
        errs.extend(subdomain_errors(str(host), f"{path}.host", wildcard_ok=True))
    http = rule.get("http")
    if http is not None:
        paths = _list(_dict(http).get("paths"))
        if not paths:
            errs.append(_required(f"{path}.http.paths"))
        for j, item in enumerate(paths):
            errs.extend(_path_errors(item, f"{path}.http.paths[{j}]"))
    return errs


def validate_ingress(obj: Obj, old: Obj | None, subresource: str) -> list[FieldError]:
    if subresource == "status":
        return _ingress_status_errors(obj)
    spec = _dict(obj.get("spec"))
    errs: list[FieldError] = []
    rules = _list(spec.get("rules"))
    if not rules and spec.get("defaultBackend") is None:
        errs.append(_invalid("spec", "", "either `defaultBackend` or `rules` must be specified"))
    if spec.get("defaultBackend") is not None:
        errs.extend(_backend_errors(spec["defaultBackend"], "spec.defaultBackend"))
    for i, rule in enumerate(rules):
        errs.extend(_rule_errors(rule, f"spec.rules[{i}]"))
    # An update may keep the invalid secret names an older API server accepted (as kube-apiserver allows).
    check_secret_names = old is None or not _has_invalid_secret_name(old)
    for i, tls in enumerate(_list(spec.get("tls"))):
        for j, host in enumerate(_list(_dict(tls).get("hosts"))):
            errs.extend(subdomain_errors(str(host), f"spec.tls[{i}].hosts[{j}]", wildcard_ok=True))
        secret = _dict(tls).get("secretName")
        if secret and check_secret_names:
            errs.extend(subdomain_errors(str(secret), f"spec.tls[{i}].secretName", wildcard_ok=False))
    cls = spec.get("ingressClassName")
    if cls:
        errs.extend(subdomain_errors(str(cls), "spec.ingressClassName", wildcard_ok=False))
    annotation = _dict(obj["metadata"].get("annotations")).get(CLASS_ANNOTATION)
    if old is None and annotation is not None and cls is not None and annotation != cls:
        errs.append(_invalid(f"annotations.{CLASS_ANNOTATION}", annotation,
                             "must match `ingressClassName` when both are specified"))
    return errs


def _has_invalid_secret_name(obj: Obj) -> bool:
    return any(subdomain_errors(str(_dict(tls).get("secretName")), "", wildcard_ok=False)
               for tls in _list(_dict(obj.get("spec")).get("tls")) if _dict(tls).get("secretName"))


def _ingress_status_errors(obj: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    lb = _dict(_dict(obj.get("status")).get("loadBalancer"))
    for i, entry in enumerate(_list(lb.get("ingress"))):
        entry = _dict(entry)
        ip, hostname = entry.get("ip"), entry.get("hostname")
        here = f"status.loadBalancer.ingress[{i}]"
        if ip and not _is_ip(str(ip)):
            errs.append(_invalid(f"{here}.ip", ip, "must be a valid IP address"))
        if hostname:
            errs.extend(subdomain_errors(str(hostname), f"{here}.hostname", wildcard_ok=False))
            if _is_ip(str(hostname)):
                errs.append(_invalid(f"{here}.hostname", hostname, "must be a DNS name, not an IP address"))
    return errs


# --------------------------------------------------------------------------------------------- Secret
def validate_secret(obj: Obj, old: Obj | None, subresource: str) -> list[FieldError]:
    errs: list[FieldError] = []
    data, string_data = _dict(obj.get("data")), _dict(obj.get("stringData"))
    for field, values in (("data", data), ("stringData", string_data)):
        errs.extend(_invalid(f"{field}[{key}]", key, CONFIG_KEY_MSG) for key in values
                    if not _CONFIG_KEY.match(key))
    keys = set(data) | set(string_data)
    if obj.get("type") == "kubernetes.io/tls":
        errs.extend(_required(f"data[{key}]") for key in ("tls.crt", "tls.key") if key not in keys)
    if old is not None and old.get("type") != obj.get("type"):
        errs.append(_invalid("type", obj.get("type"), "field is immutable"))
    return errs
