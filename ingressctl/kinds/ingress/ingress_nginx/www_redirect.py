"""ingress-nginx's `from-to-www-redirect`: a server for the other name of each host (`www.<host>`, or the host
without `www.`) that redirects to the host.

Guarantees:
- `www_redirect_names(obj)`: the other names of the Ingress's hosts when the annotation is Go-true (wildcard
  hosts and names that are not valid hosts have none). The Ingress claims them weakly (the Configuration's
  `weak_hosts`): a name another resource serves as a host stays that resource's (ingress-nginx skips the
  redirect too), and the redirect server exists only while the Ingress owns the name.
- The redirect server listens on the host's plain-text ports and answers every request with
  `return <http-redirect-code> $scheme://<host>:<port><request URI without one trailing slash>` (308 by
  default, as ingress-nginx's `ngx_srv_redirect.lua`; the port is the one the client connected to).
- HTTPS too, as ingress-nginx, when the host's server terminates TLS with a certificate valid for the other
  name (`certified_names`: its subject alternative DNS names, or its CN without them; a wildcard covers one
  label): the redirect server then listens on the host's TLS ports with that certificate. A certificate
  that does not cover the other name gets a warning, and HTTPS requests to it are not redirected.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from ingressctl.configs.config import PREFIX, Location, Server, ValueMap, derive
from ingressctl.kinds.ingress.locations import HOST, tls_secret_names
from ingressctl.validation import parse_go_bool

FROM_TO_WWW = "nginx.ingress.kubernetes.io/from-to-www-redirect"


def other_name(host: str) -> str:
    """`www.<host>` for a host, the host without `www.` for a `www.` one ("" when there is none)."""
    if not host or host.startswith("*."):
        return ""
    name = host.removeprefix("www.") if host.startswith("www.") else "www." + host
    return name if HOST.fullmatch(name) and len(name) <= 253 else ""


def www_redirect_names(obj: Mapping[str, Any]) -> tuple[str, ...]:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(FROM_TO_WWW)
    if not isinstance(value, str) or parse_go_bool(value) is not True:
        return ()
    hosts = [str((r or {}).get("host") or "") for r in (obj.get("spec") or {}).get("rules") or []
             if isinstance(r, dict)]
    return tuple(dict.fromkeys(n for h in hosts if (n := other_name(h)) and n not in hosts))


def certificate_names(secret: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The DNS names a TLS Secret's certificate (the first of `tls.crt`) is valid for: its subject
    alternative DNS names, or its CN when it has none (Go's rule); () when there is no such certificate."""
    data = (secret or {}).get("data")
    crt = data.get("tls.crt") if isinstance(data, dict) else None
    if not isinstance(crt, str):
        return ()
    try:
        cert = x509.load_pem_x509_certificate(base64.b64decode(crt, validate=True))
    except (binascii.Error, ValueError):
        return ()
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = tuple(str(n) for n in sans.get_values_for_type(x509.DNSName))
    except x509.ExtensionNotFound:
        names = ()
    if names:
        return names
    return tuple(str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME))


def name_matches(name: str, pattern: str) -> bool:
    """Whether a certificate name (`*.` for one label) covers a host name, case-insensitively."""
    name, pattern = name.lower(), pattern.lower().rstrip(".")
    if pattern.startswith("*."):
        label, _, rest = name.partition(".")
        return bool(label) and rest == pattern[2:]
    return name == pattern


def certified_names(obj: Mapping[str, Any], secret: Callable[[str], Mapping[str, Any] | None]
                    ) -> frozenset[str]:
    """The other names of the Ingress's hosts (`www_redirect_names`) that the certificate of their host's TLS
    Secret (`secret(name)`: the Secret of the Ingress's namespace, or None) is valid for."""
    names = www_redirect_names(obj)
    if not names:
        return frozenset()
    tls = tls_secret_names((obj.get("spec") or {}) if isinstance(obj.get("spec"), dict) else {})
    covered: set[str] = set()
    for host, secret_name in tls.items():
        name = other_name(host)
        if name in names and secret_name and any(name_matches(name, p)
                                                 for p in certificate_names(secret(secret_name))):
            covered.add(name)
    return frozenset(covered)


def add_redirects(servers: list[Server], valid_hosts: Mapping[str, bool], code: int, warnings: list[str],
                  tls_names: frozenset[str] = frozenset()) -> tuple[list[Server], tuple[ValueMap, ...]]:
    """The servers with a redirect server for the other name of each host the Ingress owns it for, over TLS
    too for the names in `tls_names` (see `certified_names`)."""
    out = list(servers)
    maps: list[ValueMap] = []
    for server in servers:
        name = other_name(server.name)
        if not name or name not in valid_hosts:
            continue
        if not valid_hosts[name]:
            warnings.append(f"annotation {FROM_TO_WWW}: host {name} is served by another resource; no "
                            f"redirect from it to {server.name}")
            continue
        tls = server.ssl and bool(server.ssl_certificate) and not server.ssl_reject_handshake
        if tls and name not in tls_names:
            warnings.append(f"annotation {FROM_TO_WWW}: the TLS certificate of host {server.name} is not "
                            f"valid for {name}; HTTPS requests to {name} are not redirected")
        made = redirect_server(server, name, code, tls=tls and name in tls_names)
        if made is not None:
            out.append(made[0])
            maps.extend(made[1])
    return out, tuple(maps)


def redirect_server(server: Server, name: str, code: int, *, tls: bool = False
                    ) -> tuple[Server, tuple[ValueMap, ...]] | None:
    """The redirect server for `name` to `server`'s host (on its TLS listeners too, with its certificate,
    when `tls`), with the maps it needs (dropping the trailing slash; the port behind the TLS passthrough
    split); None when the host's server has no location to take the proxy settings of."""
    if not server.locations:
        return None
    digest = hashlib.sha1(f"{name}/{server.name}".encode()).hexdigest()[:16]
    uri, port = f"$inn_www_{digest}", "$server_port"
    maps = [ValueMap(source="$request_uri", variable=uri, entries=(("^(.*)/$", "$1"),),
                     default="$request_uri")]
    if tls and server.passthrough_socket:  # TLS arrives on a unix socket: the port is the PROXY protocol's
        port = f"$inn_www_port_{digest}"
        maps.append(ValueMap(source="$scheme", variable=port,
                             entries=(("^https$", "$proxy_protocol_server_port"),), default="$server_port"))
    base: Location = server.locations[0]
    loc = derive(base, path="/", modifier=PREFIX, exact_regex=False, catch_all=False, upstream_var="",
                 return_redirect=(code, f"$scheme://{server.name}:{port}{uri}"))
    redirect = Server(name=name, locations=(loc,), ports=server.ports, server_tokens=server.server_tokens,
                      disable_ipv6=server.disable_ipv6, proxy_protocol=server.proxy_protocol)
    if tls:  # its own SSL context: the default server's per-handshake certificates know the host only
        cert, key = server.ssl_certificate, server.ssl_certificate_key
        redirect = derive(redirect, ssl=True, ssl_ports=server.ssl_ports, ssl_certificate=cert,
                          ssl_certificate_key=key, http2=server.http2, http2_directive=server.http2_directive,
                          passthrough_socket=server.passthrough_socket, ssl_ciphers=server.ssl_ciphers,
                          ssl_prefer_server_ciphers=server.ssl_prefer_server_ciphers)
    return redirect, tuple(maps)
