"""TransportServer validation: NIC's rules in Kubernetes' field-error format.

Guarantees:
- `validate_transportserver` is pure and never raises on malformed input: every problem is a `FieldError`
  (`spec.upstreams[1].name: Duplicate value: "tea"`), in field order.
- Checked: `listener` (name and protocol; the built-in `tls-passthrough` listener goes with protocol
  `TLS_PASSTHROUGH` only, and is refused without `--enable-tls-passthrough`), `host` (forbidden for UDP;
  required for passthrough; on TCP it needs `tls.secret`, as in NIC, and NGINX's stream `server_name`, SNI
  selection among the TransportServers of one listener, NGINX 1.25.5: refused on an older one), `tls` (NIC:
  forbidden with the passthrough listener, `secret` a DNS-1123 subdomain; ingressctl also refuses a `secret`
  on a UDP listener, which NGINX cannot load: "ssl" is incompatible with "udp"), upstreams (RFC 1035 names,
  unique; a Service name; port 1..65535; failTimeout a time; maxFails and maxConns >= 0; a stream
  load-balancing method), upstreamParameters (UDP counters only for UDP, times, tries >= 0),
  sessionParameters.timeout, `action.pass` naming one of the upstreams, and snippets only with
  `--enable-snippets` ("snippet specified but snippets feature is not enabled").
- Whether the listener exists in the GlobalConfiguration is NOT a validation error (NIC: a problem of the
  Configuration, "Listener X doesn't exist"); the Service's existence neither, nor the TLS Secret's (warnings
  at render time).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ingressctl.kinds.transportserver.config import PROTOCOL_TCP, PROTOCOL_UDP
from ingressctl.kinds.transportserver.globalconfiguration import TLS_PASSTHROUGH_LISTENER
from ingressctl.validation import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    is_dns1035_label,
    is_dns1123_subdomain,
    is_nginx_time,
    not_supported,
    required,
    validate_host,
)

PROTOCOL_TLS_PASSTHROUGH = "TLS_PASSTHROUGH"
_STREAM_LB_METHODS = ("round_robin", "least_conn", "random", "random two", "random two least_conn")
_HASH_RE = re.compile(r"hash (\$\{remote_addr\}|\$remote_addr|[^\s$;{}]+)( consistent)?")


def is_stream_lb_method(value: str) -> bool:
    return value in _STREAM_LB_METHODS or _HASH_RE.fullmatch(value) is not None


def _time(spec: Mapping[str, Any], key: str, fld: str) -> list[FieldError]:
    v = spec.get(key)
    if v is None or v == "":
        return []
    if not isinstance(v, str) or " " in v or not is_nginx_time(v):
        return [invalid(f"{fld}.{key}", v, "must be a time, e.g. 10s or 1m30s")]
    return []


def _non_negative(spec: Mapping[str, Any], key: str, fld: str) -> list[FieldError]:
    v = spec.get(key)
    if v is None:
        return []
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        return [invalid(f"{fld}.{key}", v, "must be greater than or equal to 0")]
    return []


def _obj(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _listener(spec: Mapping[str, Any], tls_passthrough: bool) -> tuple[str, list[FieldError]]:
    listener = _obj(spec.get("listener"))
    name, protocol = listener.get("name"), listener.get("protocol")
    if not isinstance(name, str) or not name:
        return "", [required("spec.listener.name")]
    if not isinstance(protocol, str) or not protocol:
        return "", [required("spec.listener.protocol")]
    is_passthrough = name == TLS_PASSTHROUGH_LISTENER or protocol == PROTOCOL_TLS_PASSTHROUGH
    if is_passthrough:
        if (name, protocol) != (TLS_PASSTHROUGH_LISTENER, PROTOCOL_TLS_PASSTHROUGH):
            return "", [invalid("spec.listener", f"{name}/{protocol}",
                                f"the {TLS_PASSTHROUGH_LISTENER} listener goes with protocol "
                                f"{PROTOCOL_TLS_PASSTHROUGH} only")]
        if not tls_passthrough:
            return protocol, [forbidden("spec.listener", "TLS Passthrough is not enabled")]
        return protocol, []
    errs = [invalid("spec.listener.name", name, m) for m in is_dns1035_label(name)]
    if protocol not in (PROTOCOL_TCP, PROTOCOL_UDP):
        errs.append(not_supported("spec.listener.protocol", protocol, (PROTOCOL_TCP, PROTOCOL_UDP)))
    return protocol, errs


def _upstream(u: Any, fld: str) -> tuple[str, list[FieldError]]:
    if not isinstance(u, Mapping):
        return "", [invalid(fld, str(u), "must be an object")]
    errs: list[FieldError] = []
    name = u.get("name")
    if not isinstance(name, str) or not name:
        errs.append(required(f"{fld}.name"))
        name = ""
    else:
        errs += [invalid(f"{fld}.name", name, m) for m in is_dns1035_label(name)]
    service = u.get("service")
    if not isinstance(service, str) or not service:
        errs.append(required(f"{fld}.service"))
    else:
        errs += [invalid(f"{fld}.service", service, m) for m in is_dns1035_label(service)]
    port = u.get("port")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        errs.append(invalid(f"{fld}.port", port, "must be between 1 and 65535, inclusive"))
    errs += _time(u, "failTimeout", fld)
    errs += _non_negative(u, "maxFails", fld)
    errs += _non_negative(u, "maxConns", fld)
    method = u.get("loadBalancingMethod")
    if method not in (None, "") and (not isinstance(method, str) or not is_stream_lb_method(method)):
        errs.append(invalid(f"{fld}.loadBalancingMethod", method,
                            f"load balancing method is not valid: {method}"))
    backup = u.get("backup")
    if backup not in (None, ""):
        if not isinstance(backup, str) or is_dns1035_label(backup):
            errs.append(invalid(f"{fld}.backup", backup, "must be the name of a Service"))
        if method not in (None, "", "round_robin", "least_conn"):
            errs.append(forbidden(f"{fld}.backup",
                                  "backup needs loadBalancingMethod round_robin or least_conn"))
        bport = u.get("backupPort")
        if isinstance(bport, bool) or not isinstance(bport, int) or not 1 <= bport <= 65535:
            errs.append(invalid(f"{fld}.backupPort", bport, "must be between 1 and 65535, inclusive"))
    return name, errs


def validate_transportserver(ts: Mapping[str, Any], *, snippets_enabled: bool = False,
                             tls_passthrough: bool = False, stream_server_name: bool = False
                             ) -> list[FieldError]:
    """Every validation error of the TransportServer (see the module docstring)."""
    spec = _obj(ts.get("spec"))
    protocol, errs = _listener(spec, tls_passthrough)
    host = spec.get("host")
    if host not in (None, ""):
        if protocol == PROTOCOL_UDP:
            errs.append(forbidden("spec.host", "host is not supported for UDP listeners"))
        elif not isinstance(host, str):
            errs.append(invalid("spec.host", str(host), "must be a string"))
        elif protocol == PROTOCOL_TCP:
            if not tls_secret(spec):
                errs.append(required("spec.host", "must specify spec.tls.secret when host is specified for "
                                                  "non-TLS Passthrough TransportServers"))
            elif stream_server_name:
                errs += validate_host(host, "spec.host")
            else:
                errs.append(forbidden("spec.host", "a host on a TCP listener (SNI selection with the stream "
                                                   "server_name directive) needs NGINX 1.25.5 or newer"))
        else:
            errs += validate_host(host, "spec.host")
    elif protocol == PROTOCOL_TLS_PASSTHROUGH:
        errs.append(required("spec.host", "a TLS passthrough TransportServer needs a host"))
    names: set[str] = set()
    upstreams = spec.get("upstreams")
    if upstreams is not None and not isinstance(upstreams, list):
        errs.append(invalid("spec.upstreams", str(upstreams), "must be a list"))
        upstreams = []
    for i, u in enumerate(upstreams or []):
        name, uerrs = _upstream(u, f"spec.upstreams[{i}]")
        errs += uerrs
        if name and name in names:
            errs.append(duplicate(f"spec.upstreams[{i}].name", name))
        names.add(name)
    params = _obj(spec.get("upstreamParameters"))
    for key in ("udpRequests", "udpResponses"):
        if params.get(key) is not None and protocol != PROTOCOL_UDP:
            errs.append(forbidden(f"spec.upstreamParameters.{key}", "only for UDP listeners"))
        errs += _non_negative(params, key, "spec.upstreamParameters")
    for key in ("connectTimeout", "nextUpstreamTimeout"):
        errs += _time(params, key, "spec.upstreamParameters")
    errs += _non_negative(params, "nextUpstreamTries", "spec.upstreamParameters")
    if "nextUpstream" in params and not isinstance(params["nextUpstream"], bool):
        errs.append(invalid("spec.upstreamParameters.nextUpstream", params["nextUpstream"],
                            "must be a boolean"))
    errs += _time(_obj(spec.get("sessionParameters")), "timeout", "spec.sessionParameters")
    action = _obj(spec.get("action"))
    target = action.get("pass")
    if not isinstance(target, str) or not target:
        errs.append(required("spec.action.pass"))
    elif target not in names:
        errs.append(not_supported("spec.action.pass", target, sorted(n for n in names if n)))
    for key in ("serverSnippets", "streamSnippets"):
        if spec.get(key) and not snippets_enabled:
            errs.append(forbidden(f"spec.{key}", "snippet specified but snippets feature is not enabled"))
        elif spec.get(key) is not None and not isinstance(spec.get(key), str):
            errs.append(invalid(f"spec.{key}", str(spec.get(key)), "must be a string"))
    listener = _obj(spec.get("listener"))
    passthrough = (listener.get("name") == TLS_PASSTHROUGH_LISTENER
                   or listener.get("protocol") == PROTOCOL_TLS_PASSTHROUGH)
    errs += _tls(spec.get("tls"), PROTOCOL_TLS_PASSTHROUGH if passthrough else protocol)
    return errs


def tls_secret(spec: Mapping[str, Any]) -> str:
    """The name in `spec.tls.secret`, or "" (no `tls`, no or an empty secret, or not a string)."""
    secret = _obj(spec.get("tls")).get("secret")
    return secret if isinstance(secret, str) else ""


def _tls(tls: Any, protocol: str) -> list[FieldError]:
    """NIC's validateTLS, plus the UDP rule (see the module docstring)."""
    if tls is None:
        return []
    if protocol == PROTOCOL_TLS_PASSTHROUGH:
        return [forbidden("spec.tls", "cannot specify tls for TLS Passthrough TransportServers")]
    if not isinstance(tls, Mapping):
        return [invalid("spec.tls", str(tls), "must be an object")]
    secret = tls.get("secret")
    if secret is None or secret == "":
        return []   # NIC: a warning at render time ("TLS secret is empty")
    if not isinstance(secret, str):
        return [invalid("spec.tls.secret", str(secret), "must be a string")]
    errs = [invalid("spec.tls.secret", secret, m) for m in is_dns1123_subdomain(secret)]
    if protocol == PROTOCOL_UDP:
        errs.append(forbidden("spec.tls", "TLS termination is only possible on TCP listeners (NGINX: \"ssl\" "
                                          "is incompatible with \"udp\")"))
    return errs
