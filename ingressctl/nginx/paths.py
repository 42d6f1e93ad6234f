"""Where NGINX's files live: the names under conf_dir and run_dir, and the directives the main config needs.

Guarantees:
- `RuntimePaths` gives every absolute path the Manager and the main config agree on; nothing else builds
  those paths. `check_path` makes a directory absolute and refuses characters NGINX's config cannot take
  unquoted, so every path can be written into a directive as it is.
- `check_name` and `split_config_name` refuse names that could leave their directory (a '/', NUL, a
  leading '.', more than 200 bytes); a config name is `x` (conf.d/x.conf) or `stream-conf.d/x`.

What the main config (the configs package's nginx.conf.j2) must contain; `RuntimePaths` gives every path
and `main_directives()` / `http_directives()` render the required directives:

    daemon off;                          # NGINX stays our child
    error_log stderr notice;             # forwarded to our log
    pid <run_dir>/nginx.pid;             # an orphaned master is found through it
    http {
        access_log off;                  # or a writable path: the compiled-in default is root-only
        client_body_temp_path <run_dir>/client_body;  proxy_temp_path <run_dir>/proxy;
        fastcgi_temp_path <run_dir>/fastcgi;  uwsgi_temp_path <run_dir>/uwsgi;  scgi_temp_path <run_dir>/scgi;
        server { listen unix:<run_dir>/nginx-status.sock; access_log off;
                 location /stub_status { stub_status; } }
        include config-version.conf;     # relative: resolved against the -c file's directory (conf_dir)
        include conf.d/*.conf;           # relative too, so that test_configs() can use a staging copy
    }
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ingressctl.nginx.stub_status import STATUS_SOCKET_NAME

MAIN_CONFIG_FILE = "nginx.conf"
CONF_D_DIR = "conf.d"
# Stream (layer 4) configs: names qualified as "stream-conf.d/<name>" live here, included inside stream {}.
STREAM_CONF_D_DIR = "stream-conf.d"
CONFIG_DIRS = (CONF_D_DIR, STREAM_CONF_D_DIR)
SECRETS_DIR = "secrets"
SECRETS_DIR_MODE = 0o711  # workers may open a known file name; nobody may list the dir
CONFIG_VERSION_FILE = "config-version.conf"
CONFIG_VERSION_SOCKET_NAME = "nginx-config-version.sock"
# Bound by the controller (latency metrics), not by NGINX: the Manager never removes it.
SYSLOG_SOCKET_NAME = "nginx-syslog.sock"
PID_FILE_NAME = "nginx.pid"
TEMP_PATH_DIRECTIVES = {
    "client_body_temp_path": "client_body",
    "proxy_temp_path": "proxy",
    "fastcgi_temp_path": "fastcgi",
    "uwsgi_temp_path": "uwsgi",
    "scgi_temp_path": "scgi",
}
# The include lines the main config needs inside http {}, relative to conf_dir.
CONFIG_VERSION_INCLUDE = CONFIG_VERSION_FILE
CONF_D_INCLUDE = f"{CONF_D_DIR}/*.conf"
STREAM_CONF_D_INCLUDE = f"{STREAM_CONF_D_DIR}/*.conf"

MAX_UNIX_SOCKET_PATH = 107  # sun_path is 108 bytes including the terminating NUL
_UNSAFE_PATH_CHARS = re.compile(r"[\s;{}\"'$#\\]")


def config_version_include_path() -> str:
    """The path to `include` inside http {} of the main config (relative to conf_dir)."""
    return CONFIG_VERSION_INCLUDE


@dataclass(frozen=True)
class RuntimePaths:
    """Every absolute path the Manager and the main config agree on."""

    conf_dir: str
    run_dir: str

    @property
    def main_config(self) -> str:
        return os.path.join(self.conf_dir, MAIN_CONFIG_FILE)

    @property
    def conf_d(self) -> str:
        return os.path.join(self.conf_dir, CONF_D_DIR)

    @property
    def secrets_dir(self) -> str:
        return os.path.join(self.conf_dir, SECRETS_DIR)

    @property
    def config_version_file(self) -> str:
        return os.path.join(self.conf_dir, CONFIG_VERSION_FILE)

    @property
    def pid_file(self) -> str:
        return os.path.join(self.run_dir, PID_FILE_NAME)

    @property
    def config_version_socket(self) -> str:
        return os.path.join(self.run_dir, CONFIG_VERSION_SOCKET_NAME)

    @property
    def status_socket(self) -> str:
        return os.path.join(self.run_dir, STATUS_SOCKET_NAME)

    @property
    def syslog_socket(self) -> str:
        return os.path.join(self.run_dir, SYSLOG_SOCKET_NAME)

    def temp_path(self, directive: str) -> str:
        return os.path.join(self.run_dir, TEMP_PATH_DIRECTIVES[directive])

    def main_directives(self, error_log_level: str = "notice") -> str:
        """Main-context directives the Manager relies on."""
        return f"daemon off;\nerror_log stderr {error_log_level};\npid {self.pid_file};\n"

    def http_directives(self, *, stub_status: bool = True) -> str:
        """http-context directives: temp paths, the stub_status socket server, and the two includes."""
        lines = [f"{d} {self.temp_path(d)};" for d in TEMP_PATH_DIRECTIVES]
        if stub_status:
            lines += [
                "server {",
                f"    listen unix:{self.status_socket};",
                "    access_log off;",
                "    location /stub_status { stub_status; }",
                "}",
            ]
        lines += [f"include {CONFIG_VERSION_INCLUDE};", f"include {CONF_D_INCLUDE};"]
        return "\n".join(lines) + "\n"


def check_name(kind: str, name: str) -> None:
    if (not name or "/" in name or "\0" in name or name.startswith(".")
            or len(name.encode()) > 200):
        raise ValueError(f"invalid {kind} name {name!r}: must be non-empty, at most 200 bytes, "
                         "contain no '/' or NUL, and not start with '.'")


def split_config_name(name: str) -> tuple[str, str]:
    """A config name -> (its directory, its base name): "x" is conf.d/x, "stream-conf.d/x" is in the stream
    directory; any other qualification is refused."""
    directory, sep, base = name.partition("/")
    if not sep:
        directory, base = CONF_D_DIR, name
    elif directory != STREAM_CONF_D_DIR:
        raise ValueError(f"invalid config name {name!r}: only {STREAM_CONF_D_DIR}/ may qualify a name")
    check_name("config", base)
    return directory, base


def check_path(kind: str, path: str) -> str:
    path = os.path.abspath(path)
    if _UNSAFE_PATH_CHARS.search(path):
        raise ValueError(f"{kind} {path!r} contains characters NGINX config cannot take unquoted "
                         "(whitespace, quotes, ';', '{', '}', '$', '#', '\\')")
    return path
