"""Where NGINX's modules come from: the stream module (built in, or a dynamic module to `load_module`) and
ingressctl's own modules (nginx-module/, built by scripts/build-nginx-module.sh).

Guarantees:
- `stream_module(binary)` reads `nginx -V`: a binary built `--with-stream` needs nothing (returns ""); one
  built `--with-stream=dynamic` needs `<modules-path>/ngx_stream_module.so` (Debian ships it in
  `libnginx-mod-stream`), whose absolute path is returned when the file exists.
- Anything else raises `StreamModuleError` with what to install, so the controller refuses to start rather
  than rendering a config NGINX cannot load.
- `installed_module(binary, file)` is the absolute path of our module `file` for `load_module` when it is
  installed in the modules directory `nginx -V` names and was built for this binary (the stamp next to it,
  `<module>.stamp`, names the same NGINX version, and the binary loads modules built `--with-compat`), else
  "": a module built for another NGINX would make NGINX refuse to start, so it is never named.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess

STREAM_MODULE_FILE = "ngx_stream_module.so"
STREAM_MODULE_PACKAGE = "libnginx-mod-stream"
_DEFAULT_MODULES_PATH = "/usr/lib/nginx/modules"
DYNAMIC_PEERS = "ngx_http_ingressctl_dynamic_peers_module.so"
"""Endpoint changes without reloads (see nginx.dynamic_peers)."""
UPSTREAM_FRONT = "ngx_http_ingressctl_upstream_front_module.so"
"""`ingressctl_upstream_front` (see configs.upstream_front)."""
INCLUDE_SCOPED = "ngx_http_ingressctl_include_scoped_module.so"
"""`ingressctl_include_scoped`: conf.d included with the upstreams and servers of each file shown to it
alone while NGINX reads it, so a load grows with the resources, not their square (docs/nginx-modules.md)."""
ROUTES = "ngx_http_ingressctl_routes_module.so"
"""Plain Ingress hosts served from a table in shared memory, changed without reloads (configs.routes)."""
ESCAPE_URI = "ngx_http_ingressctl_escape_uri_module.so"
"""`$ingressctl_escaped_request_uri`: $request_uri as one URI component, as ingress-nginx's
`$escaped_request_uri` (configs.escaped_uri)."""
CERTIFICATE_CACHE = "ngx_http_ingressctl_certificate_cache_module.so"
"""`ingressctl_certificate_cache`: certificates loaded at TLS handshakes parsed once per worker on NGINX
< 1.27.4 (see docs/certificates-per-handshake.md)."""


class StreamModuleError(Exception):
    pass


def parse_stream_module(version_output: str) -> tuple[str, str]:
    """(`builtin` | `dynamic` | `absent`, the modules path) from `nginx -V` output."""
    m = re.search(r"--modules-path=(\S+)", version_output)
    modules_path = m.group(1) if m else _DEFAULT_MODULES_PATH
    if re.search(r"--with-stream(\s|$)", version_output):
        return "builtin", modules_path
    if "--with-stream=dynamic" in version_output:
        return "dynamic", modules_path
    return "absent", modules_path


def stream_module(binary: str) -> str:
    """The `load_module` path the stream module needs ("" when built in); see the module docstring."""
    try:
        out = _build_info(binary)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise StreamModuleError(f"cannot run {binary} -V: {e}") from e
    how, modules_path = parse_stream_module(out)
    if how == "builtin":
        return ""
    path = os.path.join(modules_path, STREAM_MODULE_FILE)
    if how == "dynamic" and os.path.isfile(path):
        return path
    raise StreamModuleError(f"NGINX's stream module is missing ({path}); TransportServers need it: install "
                            f"the {STREAM_MODULE_PACKAGE} package (scripts/install-system-deps.sh does)")


@functools.lru_cache(maxsize=8)
def _build_info(binary: str) -> str:
    """`<binary> -V`, run once per binary: start-up asks it for the stream module and for each of our modules
    (a failure raises and is not cached)."""
    res = subprocess.run([binary, "-V"], capture_output=True, timeout=30, check=False)
    return (res.stderr + res.stdout).decode(errors="replace")


def installed_module(binary: str, module_file: str) -> str:
    """Our module's path for `load_module`, or "" when it is not installed for this NGINX."""
    try:
        out = _build_info(binary)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = re.search(r"--modules-path=(\S+)", out)
    path = os.path.join(m.group(1) if m else _DEFAULT_MODULES_PATH, module_file)
    version = re.search(r"nginx version: nginx/(\S+)", out)
    if version is None or "--with-compat" not in out or not os.path.isfile(path):
        return ""
    try:
        with open(path.removesuffix(".so") + ".stamp") as f:
            built_for = f.read().split(maxsplit=1)[0]
    except (OSError, IndexError):
        return ""
    return path if built_for == version.group(1) else ""
