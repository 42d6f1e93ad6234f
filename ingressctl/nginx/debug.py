"""`--nginx-debug`: which NGINX executable logs at debug level.

NIC runs `nginx-debug` (NGINX built with `--with-debug`) instead of `nginx`. `debug_binary` does the same when
such an executable exists next to the configured one (or on the usual search path), and otherwise accepts the
configured executable itself if `nginx -V` shows it was built `--with-debug` (Debian's is). Debug lines appear
only with `error-log-level: debug` in the ConfigMap, as in NIC.
"""

from __future__ import annotations

import os
import subprocess

from ingressctl.nginx.manager import find_binary


class DebugBinaryError(Exception):
    """No NGINX with debug logging was found; the message says what to install or pass."""


def built_with_debug(binary: str) -> bool:
    """True if `binary -V` lists `--with-debug` among its configure arguments."""
    try:
        out = subprocess.run([binary, "-V"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--with-debug" in (out.stdout + out.stderr).split()


def debug_binary(binary: str) -> str:
    """The executable to run for `--nginx-debug` given `--nginx-binary`; raises DebugBinaryError."""
    found = find_binary(binary)
    if found is None:
        raise DebugBinaryError(f"--nginx-debug: the NGINX executable {binary!r} (--nginx-binary) was not "
                               "found")
    debug = find_binary(os.path.join(os.path.dirname(found), os.path.basename(found) + "-debug"))
    if debug is not None:
        return debug
    if built_with_debug(found):
        return found
    raise DebugBinaryError(
        f"--nginx-debug needs an NGINX built with --with-debug: there is no {os.path.basename(found)}-debug "
        f"next to {found}, and {found} was built without it; install one, or point --nginx-binary at one")
