"""What the installed NGINX and ingressctl's modules allow, folded into the static parameters at start-up.

Guarantees:
- `nginx_capabilities` reads the running NGINX's version and modules (`nginx -V`) once; when that fails, the
  defaults (no directive newer than NGINX 1.22).
- Each `with_*` loads one of ingressctl's NGINX modules when it is installed and not turned off, and says in
  the log what is slower or reloads without it; none of them fails the start.
- `certificates_per_handshake`: `--load-certificates-per-handshake`, by default on when NGINX caches what it
  loads at handshakes.
"""

from __future__ import annotations

import dataclasses
import os

from ingressctl.configs.configmaps import StaticConfigParams
from ingressctl.logging import get_logger
from ingressctl.nginx.capabilities import Capabilities
from ingressctl.settings import Settings

log = get_logger(__name__)


def with_dynamic_upstreams(settings: Settings, static: StaticConfigParams, binary: str,
                           socket: str) -> StaticConfigParams:
    """Load the dynamic-peers module when it is installed and not turned off: endpoint changes then reach
    NGINX without reloads; without it they reload NGINX (said in the log)."""
    if not settings.nginx.dynamic_upstreams:
        return static
    from ingressctl.nginx.dynamic_peers import MODULE_FILE, dynamic_peers_module

    path = dynamic_peers_module(binary)
    if not path:
        log.warning("the dynamic-peers NGINX module is not installed: endpoint changes reload NGINX",
                    module=MODULE_FILE, install="scripts/build-nginx-module.sh")
        return static
    if len(os.fsencode(socket)) > 107:  # sun_path holds 108 bytes with the terminating NUL
        log.warning("endpoint changes reload NGINX: the dynamic-peers socket path is too long; use a "
                    "shorter --nginx-run-dir", socket=socket)
        return static
    log.info("endpoint changes reach NGINX without reloads", module=path)
    return dataclasses.replace(static, dynamic_peers_module_path=path)

def with_routes(settings: Settings, static: StaticConfigParams, binary: str) -> StaticConfigParams:
    """Load the routes module (plain Ingress hosts as data, changed without reloads: configs.routes) when
    it is installed, not turned off, and endpoint changes are dynamic; the latency metrics, which name
    each request's upstream by its proxy_pass, keep server blocks."""
    if not settings.nginx.dynamic_routes or not static.dynamic_peers_module_path:
        return static
    if settings.serving.enable_latency_metrics:
        log.info("plain Ingress hosts keep server blocks: latency metrics name upstreams by proxy_pass")
        return static
    from ingressctl.nginx.modules import ROUTES, installed_module

    path = installed_module(binary, ROUTES)
    if not path:
        log.warning("the routes NGINX module is not installed: every Ingress change reloads NGINX",
                    module=ROUTES, install="scripts/build-nginx-module.sh")
        return static
    return dataclasses.replace(static, routes_module_path=path)


def with_upstream_front(static: StaticConfigParams, binary: str) -> StaticConfigParams:
    """Load the upstream-front and scoped-include modules when they are installed: NGINX then loads a
    configuration with thousands of upstreams and servers several times faster (configs.upstream_front,
    docs/nginx-modules.md); without them, only slower."""
    from ingressctl.nginx.modules import INCLUDE_SCOPED, UPSTREAM_FRONT, installed_module

    paths = {module: installed_module(binary, module) for module in (UPSTREAM_FRONT, INCLUDE_SCOPED)}
    for module, path in paths.items():
        if not path:
            log.warning("an NGINX module is not installed: reloads with thousands of upstreams and "
                        "servers are slower", module=module, install="scripts/build-nginx-module.sh")
    return dataclasses.replace(static, upstream_front_module_path=paths[UPSTREAM_FRONT],
                               include_scoped_module_path=paths[INCLUDE_SCOPED])


def with_escape_uri(static: StaticConfigParams, binary: str) -> StaticConfigParams:
    """Load the escape-URI module when it is installed: ingress-nginx's `$escaped_request_uri` (the
    original URL of an `auth-signin` redirect) is then escaped as ingress-nginx escaped it; without it,
    it is `$request_uri` (a query of several arguments reaches the sign-in service cut at its first `&`)."""
    from ingressctl.nginx.modules import ESCAPE_URI, installed_module

    path = installed_module(binary, ESCAPE_URI)
    if not path:
        log.warning("an NGINX module is not installed: ingress-nginx's $escaped_request_uri is not escaped",
                    module=ESCAPE_URI, install="scripts/build-nginx-module.sh")
    return dataclasses.replace(static, escape_uri_module_path=path)


def with_certificate_cache(settings: Settings, static: StaticConfigParams,
                           binary: str) -> StaticConfigParams:
    """On an NGINX without ssl_certificate_cache (< 1.27.4), load ingressctl's certificate-cache module
    when it is installed, not turned off (--enable-certificate-cache) and certificates may be loaded at
    handshakes: each worker then parses a certificate once, not at every full handshake."""
    per_handshake = settings.controller.load_certificates_per_handshake
    if (static.capabilities.has("ssl_certificate_cache") or per_handshake is False
            or not settings.nginx.certificate_cache):
        return static
    from ingressctl.nginx.modules import CERTIFICATE_CACHE, installed_module

    path = installed_module(binary, CERTIFICATE_CACHE)
    if not path:
        log.warning("the certificate-cache NGINX module is not installed: TLS certificates are loaded at "
                    "every reload" if per_handshake is None else
                    "the certificate-cache NGINX module is not installed: TLS certificates are parsed at "
                    "every full handshake", module=CERTIFICATE_CACHE,
                    install="scripts/build-nginx-module.sh")
        return static
    log.info("TLS certificates are loaded at handshakes and cached by each NGINX worker", module=path)
    return dataclasses.replace(static, certificate_cache_module_path=path)

def certificates_per_handshake(settings: Settings, static: StaticConfigParams) -> bool:
    """--load-certificates-per-handshake, by default on when NGINX caches what it loads at handshakes
    (ssl_certificate_cache, or the certificate-cache module `with_certificate_cache` loads)."""
    chosen = settings.controller.load_certificates_per_handshake
    if chosen is None:
        return (static.capabilities.has("ssl_certificate_cache")
                or bool(static.certificate_cache_module_path))
    return chosen

def nginx_capabilities(settings: Settings, binary: str) -> Capabilities:
    """The running NGINX's version and modules (`nginx -V`), which decide the directives newer than
    NGINX 1.22 and the module-backed features; when `nginx -V` fails, the defaults (no newer directive).
    Without stub_status, the stub_status metrics and --nginx-status are unavailable (said in the log)."""
    from ingressctl.nginx.capabilities import Capabilities, CapabilitiesError
    from ingressctl.nginx.capabilities import detect as detect_capabilities

    try:
        caps = detect_capabilities(binary, timeout=settings.nginx.reload_timeout_ms / 1000)
    except CapabilitiesError as e:
        log.warning("cannot read the NGINX version and modules; directives newer than NGINX 1.22 are "
                    "left out", error=str(e))
        return Capabilities()
    log.info("nginx capabilities", capabilities=caps.describe())
    if not caps.has("stub_status"):
        log.warning("this NGINX has no stub_status module (ngx_http_stub_status_module): the "
                    "stub_status metrics and --nginx-status are left out", binary=binary)
    return caps
