"""ingressctl's own NGINX modules (nginx-module/, built by scripts/build-nginx-module.sh): whether one is
installed for the running NGINX.

Guarantees:
- `installed_module(binary, file)` is the absolute path of `file` for `load_module` when it is in the modules
  directory `nginx -V` names and was built for this binary (the stamp next to it names the same NGINX
  version, and the binary loads modules built `--with-compat`), else "". It never raises.
- `DYNAMIC_PEERS_MODULE` serves endpoint changes without reloads (nginx.dynamic_peers);
  `CERTIFICATE_CACHE_MODULE` caches the certificates NGINX < 1.27.4 would parse at every full handshake
  (`ingressctl_certificate_cache max=N;`, see docs/certificates-per-handshake.md).
"""

from __future__ import annotations

import os
import re
import subprocess

DYNAMIC_PEERS_MODULE = "ngx_http_ingressctl_dynamic_peers_module.so"
CERTIFICATE_CACHE_MODULE = "ngx_http_ingressctl_certificate_cache_module.so"
BUILD_SCRIPT = "scripts/build-nginx-module.sh"
_DEFAULT_MODULES_PATH = "/usr/lib/nginx/modules"


def installed_module(binary: str, module_file: str) -> str:
    """The module's path for `load_module`, or "" when it is not installed for this NGINX."""
    try:
        res = subprocess.run([binary, "-V"], capture_output=True, stdin=subprocess.DEVNULL, timeout=30,
                             check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    out = (res.stderr + res.stdout).decode(errors="replace")
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
