"""What to do about a start-up failure: the flag that changes the path or port that failed.

`hint(text, settings)` reads an error message (Python's or NGINX's own words) and returns one sentence naming
the flag to change, or "" when it recognises nothing. It looks for: a path that could not be created, opened
or written (`Permission denied: '/etc/nginx/secrets'`, `mkdir() "/var/lib/nginx/client_body" failed
(13: ...)`) under `--nginx-conf-dir` or `--nginx-run-dir`; and a port NGINX or a server of ours could not bind
(`bind() to 0.0.0.0:80 failed (13: Permission denied)`, `(98: Address already in use)`), matched to the flag
that set it. Pure: no I/O.
"""

from __future__ import annotations

import os
import re

from ingressctl.settings import Settings

_PATH = re.compile(r"""(?:Permission denied|Read-only file system)(?::| \(\S+\):) ['"]([^'"]+)['"]"""
                   r"""|\b(?:mkdir|open|opendir|chmod|bind)\(\) ["']?([^"'\s]+)["']? failed \((?:13|30|2):""")
_PORT = re.compile(r"bind\(\) to (?:\[[^\]]*\]|[^:\s]+):(\d+) failed \((13|98)[:)]|"
                   r"\[Errno (13|98)\][^\n]*?port (\d+)")
_ROOT_PORT = 1024


def _port_flags(settings: Settings) -> list[tuple[int, str]]:
    s = settings
    return [(s.nginx.http_port, "--default-http-listener-port"),
            (s.nginx.https_port, "--default-https-listener-port"),
            (s.nginx.status_port, "--nginx-status-port"),
            (s.serving.ready_status_port, "--ready-status-port"),
            (s.serving.prometheus_metrics_listen_port, "--prometheus-metrics-listen-port")]


def _under(path: str, directory: str) -> bool:
    path, directory = os.path.normpath(path), os.path.normpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def hint(text: str, settings: Settings) -> str:
    """One sentence naming the flag that fixes the failure described by `text`, or ""."""
    for m in _PORT.finditer(text):
        port = int(m.group(1) or m.group(4))
        errno = m.group(2) or m.group(3)
        flags = [flag for p, flag in _port_flags(settings) if p == port]
        if not flags:
            continue
        which = " or ".join(flags)
        if errno == "13":
            return (f"port {port} ({which}) needs root or the CAP_NET_BIND_SERVICE capability"
                    f"{' (ports below 1024)' if port < _ROOT_PORT else ''}; pass {flags[0]} with a port of "
                    f"1024 or more to run unprivileged")
        return (f"port {port} ({which}) is already in use; stop what holds it or pass {flags[0]} with a "
                "free port")
    for m in _PATH.finditer(text):
        path = m.group(1) or m.group(2)
        for directory, flag in ((settings.nginx.run_dir, "--nginx-run-dir"),
                                (settings.nginx.conf_dir, "--nginx-conf-dir")):
            if _under(path, directory):
                return (f"{path} is under {flag} ({directory}), which this user cannot write; pass {flag} "
                        "with a directory it owns (for example under /tmp)")
    return ""


def with_hint(message: str, settings: Settings) -> str:
    """`message`, followed by "; hint: ..." when `hint` knows what to do."""
    h = hint(message, settings)
    return f"{message}\nhint: {h}" if h else message
