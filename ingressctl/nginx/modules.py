"""Where NGINX's stream module comes from: built in, or a dynamic module to `load_module`.

Guarantees:
- `stream_module(binary)` reads `nginx -V`: a binary built `--with-stream` needs nothing (returns ""); one
  built `--with-stream=dynamic` needs `<modules-path>/ngx_stream_module.so` (Debian ships it in
  `libnginx-mod-stream`), whose absolute path is returned when the file exists.
- Anything else raises `StreamModuleError` with what to install, so the controller refuses to start rather
  than rendering a config NGINX cannot load.
"""

from __future__ import annotations

import os
import re
import subprocess

STREAM_MODULE_FILE = "ngx_stream_module.so"
STREAM_MODULE_PACKAGE = "libnginx-mod-stream"
_DEFAULT_MODULES_PATH = "/usr/lib/nginx/modules"


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
        res = subprocess.run([binary, "-V"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise StreamModuleError(f"cannot run {binary} -V: {e}") from e
    how, modules_path = parse_stream_module((res.stderr + res.stdout).decode(errors="replace"))
    if how == "builtin":
        return ""
    path = os.path.join(modules_path, STREAM_MODULE_FILE)
    if how == "dynamic" and os.path.isfile(path):
        return path
    raise StreamModuleError(f"NGINX's stream module is missing ({path}); TransportServers need it: install "
                            f"the {STREAM_MODULE_PACKAGE} package (scripts/install-system-deps.sh does)")
