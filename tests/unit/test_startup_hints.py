"""Start-up failures name the flag that fixes them: NGINX's and Python's own words, matched to the path or
port flag that set them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ingressctl.nginx.debug import DebugBinaryError, debug_binary
from ingressctl.settings import NginxSettings, ServingSettings, Settings
from ingressctl.startup_hints import hint, with_hint

DEFAULTS = Settings()


@pytest.mark.parametrize(("message", "flag"), [
    ("start-up failed: [Errno 13] Permission denied: '/etc/nginx/secrets'", "--nginx-conf-dir"),
    ("[Errno 30] Read-only file system: '/etc/nginx/conf.d'", "--nginx-conf-dir"),
    ('nginx exited with code 1 while starting: nginx: [emerg] mkdir() "/var/lib/nginx/client_body" failed '
     "(13: Permission denied)", "--nginx-run-dir"),
    ('nginx: [alert] could not open error log file: open() "/var/lib/nginx/logs/error.log" failed '
     "(13: Permission denied)", "--nginx-run-dir"),
    ("nginx: [emerg] bind() to 0.0.0.0:80 failed (13: Permission denied)", "--default-http-listener-port"),
    ("nginx: [emerg] bind() to [::]:443 failed (13: Permission denied)", "--default-https-listener-port"),
    ("nginx: [emerg] bind() to 0.0.0.0:8080 failed (98: Address already in use)", "--nginx-status-port"),
])
def test_the_hint_names_the_flag(message: str, flag: str) -> None:
    h = hint(message, DEFAULTS)
    assert f"pass {flag} " in h
    assert with_hint(message, DEFAULTS) == f"{message}\nhint: {h}"


def test_privileged_port_hint_says_why() -> None:
    h = hint("bind() to 0.0.0.0:80 failed (13: Permission denied)", DEFAULTS)
    assert "CAP_NET_BIND_SERVICE" in h and "below 1024" in h


def test_ports_and_paths_follow_the_settings() -> None:
    s = Settings(nginx=NginxSettings(conf_dir="/srv/ic/conf", run_dir="/srv/ic/run", http_port=8880),
                 serving=ServingSettings(ready_status_port=8881))
    assert "--nginx-run-dir (/srv/ic/run)" in hint("Permission denied: '/srv/ic/run/proxy'", s)
    assert "--default-http-listener-port" in hint("bind() to 0.0.0.0:8880 failed (98: Address in use)", s)
    assert hint("bind() to 0.0.0.0:80 failed (13: Permission denied)", s) == ""   # no flag set port 80
    assert hint("Permission denied: '/home/me/kubeconfig'", s) == ""
    assert with_hint("something else", s) == "something else"


def _script(path: Path, configure_args: str) -> str:
    path.write_text(f"#!/bin/sh\necho 'configure arguments: {configure_args}' >&2\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_nginx_debug_binary(tmp_path: Path) -> None:
    plain = _script(tmp_path / "nginx", "--prefix=/usr")
    with pytest.raises(DebugBinaryError, match="--nginx-debug needs an NGINX built with --with-debug"):
        debug_binary(plain)
    debug = _script(tmp_path / "nginx-debug", "--with-debug")
    assert debug_binary(plain) == debug                         # NIC's nginx-debug next to nginx
    os.unlink(debug)
    built = _script(tmp_path / "nginx2", "--prefix=/usr --with-debug")
    assert debug_binary(built) == built                          # an nginx built --with-debug itself
    with pytest.raises(DebugBinaryError, match="was not found"):
        debug_binary(str(tmp_path / "missing"))
