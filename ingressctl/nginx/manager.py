"""The Manager: NGINX's config files on disk and the NGINX process (start, reload, verify, quit), after
NIC's `internal/nginx` LocalManager.

Guarantees:
- Every file write is atomic: a temp file in the same directory (named ".<name>.tmp", so
  `include conf.d/*.conf` never sees it), created with the file's mode (never more open than it: the umask
  can only narrow it, and then it is widened to exactly the mode before the rename), then renamed over the
  target. `create_*` writes only when the bytes differ from what is on disk, and says so; an unchanged file
  keeps its mtime. A digest of each file written (keyed by inode, size and mtime) avoids re-reading it; the
  contents are not kept in memory (the Configurator's 10,000 files would be held twice). A caller that knows
  a conf.d file does not exist (it removed them all and has not written this one since) says so with
  `create_config(..., absent=True)`: the write then skips the look-up of the old file (a stat of a missing
  name in a directory of 10,000 files cost ~7% of start-up's sync thread); should the file exist after
  all, it is still replaced atomically. Secret files need no caller's word: the secrets dir is listed once,
  at the first Secret write, and a name it did not hold and that was not written since is known absent.
- `reload()` sends SIGHUP to the master it owns (`nginx -s reload` would parse the whole config once more just
  to find the pid, doubling a multi-second load at scale), and succeeds only once NGINX's new workers serve
  the new config version over `<run_dir>/nginx-config-version.sock` AND the previous workers stopped
  accepting connections (read from /proc), so every connection opened after it returns gets the new config.
  Otherwise it raises ReloadError ("nginx reload failed: ..." with the master's [emerg] (or its own [crit])
  lines, or "could not get newest config version: ..."), and the old config keeps serving. As in NIC, the
  version counter is not rolled back after a failure.
- NGINX runs as our child in its own process group, with its output forwarded to our log. If it dies
  without `quit()`, its leftover workers are killed (so a restart can bind the ports again) and
  `on_exit(returncode)` is called from the waiter thread; `restart()` starts it again with the current files.
- Works as root and unprivileged: all paths are absolute, nginx gets `-p <run_dir>/`, and the socket, pid
  and temp paths all live under run_dir (created 0755). Certificates are read by the master process, so
  0600 secrets owned by the controller's user work even when workers run as `nobody`. Files workers read at
  request time (htpasswd, written 0644) work too: the secrets dir is 0711, traversable but not listable.
  The conf dir's own parents must be traversable by the worker user. Certificates loaded at handshakes
  (through a variable) are read by workers: `create_secret(owner=<the worker uid>)` gives them the file.

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

import contextlib
import hashlib
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import requests
import requests_unixsocket

from ingressctl.logging import get_logger
from ingressctl.nginx.dynamic_peers import SOCKET_DIR as DYNAMIC_PEERS_SOCKET_DIR
from ingressctl.nginx.dynamic_peers import SOCKET_NAME as DYNAMIC_PEERS_SOCKET_NAME
from ingressctl.nginx.dynamic_peers import DynamicPeersClient, DynamicUpdateError
from ingressctl.nginx.processes import ProcessIdentity, current_workers, still_accepting
from ingressctl.nginx.stub_status import STATUS_SOCKET_NAME, unix_socket_url

log = get_logger(__name__)

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
CONFIG_VERSION_PATH = "/configVersion"
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

_MAX_UNIX_SOCKET_PATH = 107  # sun_path is 108 bytes including the terminating NUL
_UNSAFE_PATH_CHARS = re.compile(r"[\s;{}\"'$#\\]")
_NGINX_LEVEL = re.compile(r"\[(debug|info|notice|warn|error|crit|alert|emerg)\]")
_DAEMON_OFF = re.compile(rb"^[ \t]*daemon[ \t]+off[ \t]*;", re.MULTILINE)
_RETRIED_BIND = re.compile(r"\] \d+#\d+: bind\(\) to \S+ failed")
# After a wrong version: wait 25 ms, then a pause doubling up to 250 ms that NGINX's output ends early (it
# prints when new workers start).
_POLL_WRONG_VERSION_SLEEP = 0.025
_POLL_WRONG_VERSION_MAX_SLEEP = 0.25
_OLD_WORKER_POLL = 0.005
_POLL_REQUEST_TIMEOUT_CAP = 2.0
_OUTPUT_TAIL = 400
_SEARCH_DIRS = ("/usr/sbin", "/usr/local/sbin", "/usr/local/nginx/sbin")


def find_binary(name: str) -> str | None:
    """The executable `name` names: a path as given, else found on PATH or in the usual sbin directories."""
    found = shutil.which(name)
    if found is None and os.sep not in name:
        for d in _SEARCH_DIRS:
            candidate = os.path.join(d, name)
            if os.access(candidate, os.X_OK):
                return candidate
    return found


def config_version_include_path() -> str:
    """The path to `include` inside http {} of the main config (relative to conf_dir)."""
    return CONFIG_VERSION_INCLUDE


class ReloadError(Exception):
    """A reload was refused by NGINX or could not be verified. `output` is NGINX's stderr (may be empty)."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class NginxStartError(Exception):
    """NGINX could not be started or did not serve its config version in time. `output` is what it printed."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


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


def render_config_version(version: int, socket_path: str) -> str:
    """config-version.conf: a server answering GET /configVersion with `version`, and NIC's mismatch map."""
    return (
        "# Written by ingressctl: the config version these workers serve, to verify reloads.\n"
        "map $http_x_expected_config_version $config_version_mismatch {\n"
        f'    "{version}" "";\n'
        '    default "mismatch";\n'
        "}\n"
        "server {\n"
        f"    listen unix:{socket_path};\n"
        "    access_log off;\n"
        f"    location = {CONFIG_VERSION_PATH} {{\n"
        "        default_type text/plain;\n"
        f"        return 200 {version};\n"
        "    }\n"
        "    location / {\n"
        "        return 404;\n"
        "    }\n"
        "}\n"
    )


class WrittenFile(NamedTuple):
    """What the Manager keeps of a file it wrote: the digest of its bytes, and the inode, size and mtime that
    tell whether the file on disk is still that one. One per file: a NamedTuple is made in a fraction of a
    dataclass's time."""

    digest: bytes
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, digest: bytes, st: os.stat_result) -> WrittenFile:
        return cls(digest, st.st_ino, st.st_size, st.st_mtime_ns)

    def is_file(self, st: os.stat_result) -> bool:
        """`st` (a stat of its path) is of the file this describes: same inode, size and mtime."""
        return (self.ino, self.size, self.mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)


class _Output:
    """Recent lines NGINX printed, numbered, for error messages and reload failure detection."""

    def __init__(self, maxlen: int = _OUTPUT_TAIL) -> None:
        self._lock = threading.Condition()
        self._lines: deque[tuple[int, str]] = deque(maxlen=maxlen)
        self._seq = 0

    def append(self, line: str) -> None:
        with self._lock:
            self._seq += 1
            self._lines.append((self._seq, line))
            self._lock.notify_all()

    def wait(self, seq: int, timeout: float) -> int:
        """Block until a line after `seq` arrives or `timeout` passes; the current seq."""
        with self._lock:
            self._lock.wait_for(lambda: self._seq > seq, timeout)
            return self._seq

    @property
    def seq(self) -> int:
        with self._lock:
            return self._seq

    def since(self, seq: int) -> list[str]:
        with self._lock:
            return [line for n, line in self._lines if n > seq]


@dataclass(eq=False)
class _Instance:
    proc: subprocess.Popen[bytes]
    output_start: int
    stopping: bool = False
    serving: bool = False  # set once start() saw the config version; on_exit is only called after that
    exited: threading.Event = field(default_factory=threading.Event)
    reader: threading.Thread | None = None
    waiter: threading.Thread | None = None


class _Exited(Exception):
    def __init__(self, returncode: int) -> None:
        super().__init__(f"nginx exited with code {returncode}")
        self.returncode = returncode


class _EmergLogged(Exception):
    pass


def _check_name(kind: str, name: str) -> None:
    if (not name or "/" in name or "\0" in name or name.startswith(".")
            or len(name.encode()) > 200):
        raise ValueError(f"invalid {kind} name {name!r}: must be non-empty, at most 200 bytes, "
                         "contain no '/' or NUL, and not start with '.'")


def _split_config_name(name: str) -> tuple[str, str]:
    """A config name -> (its directory, its base name): "x" is conf.d/x, "stream-conf.d/x" is in the stream
    directory; any other qualification is refused."""
    directory, sep, base = name.partition("/")
    if not sep:
        directory, base = CONF_D_DIR, name
    elif directory != STREAM_CONF_D_DIR:
        raise ValueError(f"invalid config name {name!r}: only {STREAM_CONF_D_DIR}/ may qualify a name")
    _check_name("config", base)
    return directory, base


def _check_path(kind: str, path: str) -> str:
    path = os.path.abspath(path)
    if _UNSAFE_PATH_CHARS.search(path):
        raise ValueError(f"{kind} {path!r} contains characters NGINX config cannot take unquoted "
                         "(whitespace, quotes, ';', '{', '}', '$', '#', '\\')")
    return path


_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _atomic_write(path: str, data: bytes, mode: int, owner: int | None = None) -> os.stat_result:
    """Write `.<name>.tmp` (created with `mode`, never more open: the umask can only narrow it, and then it is
    widened to exactly `mode` before the rename; given to the uid `owner` before any byte) and rename it over
    `path`; the written file's stat (its inode, size and mtime). Callers hold the files lock, so the temp
    name is ours; one left by a process killed mid-write is replaced. Plain syscalls, no more than it takes
    (open, write, fstat, close, rename): at 10,000 files, mkstemp alone cost seconds."""
    directory, _, base = path.rpartition("/")
    tmp = f"{directory}/.{base}.tmp"
    try:
        fd = os.open(tmp, _TEMP_FLAGS, mode)
    except FileExistsError:
        os.unlink(tmp)
        fd = os.open(tmp, _TEMP_FLAGS, mode)
    try:
        try:
            if owner is not None:
                os.fchown(fd, owner, -1)
            written = os.write(fd, data)
            if written < len(data):
                view = memoryview(data)[written:]
                while view:
                    view = view[os.write(fd, view):]
            st = os.fstat(fd)
            if st.st_mode & 0o7777 != mode:  # the umask narrowed it (a chmod keeps inode, size and mtime)
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return st


def _write_ahead(path: str, data: bytes, mode: int, owner: int | None = None) -> WrittenFile:
    """`_atomic_write`, and what the owning process needs to take the file over (see `Manager._adopt`)."""
    return WrittenFile.of(content_digest(data), _atomic_write(path, data, mode, owner))


def _is_on_disk(path: str, written: WrittenFile) -> bool:
    """`path` is still the file `written` describes (same inode, size and mtime)."""
    try:
        return written.is_file(os.stat(path))
    except FileNotFoundError:
        return False


def content_digest(data: bytes) -> bytes:
    """The digest the Manager keeps of a file's bytes (callers that have one pass it along, not to hash
    the same bytes twice)."""
    return hashlib.blake2b(data, digest_size=16).digest()


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False


def _nginx_level(line: str) -> str:
    m = _NGINX_LEVEL.search(line)
    level = m.group(1) if m else "notice"
    if level in ("error", "crit", "alert", "emerg"):
        return "error"
    return "warning" if level == "warn" else "info"


class Manager:
    """Owns conf_dir (nginx.conf, conf.d/, config-version.conf, secrets/) and the NGINX process."""

    def __init__(self, binary: str = "nginx", conf_dir: str = "/etc/nginx", run_dir: str = "/var/lib/nginx",
                 reload_timeout_ms: int = 60000, *,
                 on_reload: Callable[[bool, int, bool], None] | None = None,
                 proc_root: str = "/proc", wait_for_old_workers: bool = True,
                 connectable_sockets: bool = False) -> None:
        """`connectable_sockets`: NGINX runs with umask 011, so that the unix sockets its master binds can be
        connected to by workers of another user (TLS passthrough hands connections over such sockets); the
        files NGINX creates keep the modes it asks for."""
        self._umask = 0o011 if connectable_sockets else -1
        if reload_timeout_ms <= 0:
            raise ValueError(f"reload timeout must be positive, got {reload_timeout_ms} ms")
        self.binary = binary
        self.paths = RuntimePaths(_check_path("conf dir", conf_dir), _check_path("run dir", run_dir))
        for sock in (self.paths.config_version_socket, self.paths.status_socket):
            if len(os.fsencode(sock)) > _MAX_UNIX_SOCKET_PATH:
                raise ValueError(f"unix socket path {sock!r} is longer than {_MAX_UNIX_SOCKET_PATH} bytes; "
                                 "use a shorter run dir")
        self.conf_dir = self.paths.conf_dir
        self.run_dir = self.paths.run_dir
        self.secrets_dir = self.paths.secrets_dir
        self.reload_timeout_ms = reload_timeout_ms
        self.on_reload = on_reload
        self.proc_root = proc_root
        # After a verified reload, also wait until the old workers stop accepting (NGINX signals them
        # ~100 ms after starting the new ones).
        self.wait_for_old_workers = wait_for_old_workers

        self.config_version = 0
        self.reload_count = 0            # successful reloads
        self.endpoints_reload_count = 0  # of which for endpoint updates
        self.reload_errors = 0
        self.last_reload_ok: bool | None = None
        self.last_reload_ms = 0          # last successful reload, from the command through verification
        # Endpoint updates applied without a reload (the dynamic-peers module), and the failed ones.
        self.dynamic_update_count = 0
        self.dynamic_update_errors = 0
        self.on_dynamic_update: Callable[[bool], None] | None = None
        self._dynamic_peers = DynamicPeersClient(os.path.join(self.run_dir, DYNAMIC_PEERS_SOCKET_DIR,
                                                              DYNAMIC_PEERS_SOCKET_NAME))

        self._config_dirs = {d: os.path.join(self.conf_dir, d) for d in CONFIG_DIRS}
        self._files_lock = threading.Lock()
        self._cache: dict[str, WrittenFile] = {}
        self._secrets_listed: frozenset[str] | None = None  # the secrets dir at the first Secret write
        self._proc_lock = threading.RLock()
        self._instance: _Instance | None = None
        self._on_exit: Callable[[int], None] | None = None
        self._output = _Output()
        self._session: requests.Session | None = None
        self._resolved_binary: str | None = None
        self._build_text: str | None = None

        os.makedirs(self.paths.conf_d, exist_ok=True)
        os.makedirs(os.path.join(self.conf_dir, STREAM_CONF_D_DIR), exist_ok=True)
        if not os.path.isdir(self.run_dir):
            # Workers (possibly `nobody`) use the temp paths under it: traversable by everyone.
            os.makedirs(self.run_dir, mode=0o755, exist_ok=True)
            os.chmod(self.run_dir, 0o755)
        # Traversable but not listable: workers open htpasswd files (0644) by their exact name at request
        # time; certificates and keys (0600) are read by the master only.
        os.makedirs(self.secrets_dir, mode=SECRETS_DIR_MODE, exist_ok=True)
        try:
            os.chmod(self.secrets_dir, SECRETS_DIR_MODE)
        except PermissionError as e:
            raise ValueError(f"cannot set the mode of {self.secrets_dir}: {e.strerror}; the controller must "
                             "own it (mount a volume at the conf dir, not at its secrets directory)") from e
        private = os.path.dirname(self._dynamic_peers.socket_path)
        os.makedirs(private, mode=0o700, exist_ok=True)
        os.chmod(private, 0o700)

    # ------------------------------------------------------------------ files

    @property
    def main_config_path(self) -> str:
        return self.paths.main_config

    def config_path(self, name: str) -> str:
        """conf.d/<name>.conf, or stream-conf.d/<base>.conf for a name "stream-conf.d/<base>"."""
        directory, base = _split_config_name(name)
        return f"{self._config_dirs[directory]}/{base}.conf"

    def secret_path(self, name: str) -> str:
        """`secrets/<name>` (NIC's GetFilenameForSecret)."""
        _check_name("secret", name)
        return os.path.join(self.secrets_dir, name)

    def create_main_config(self, content: str) -> bool:
        """Write nginx.conf; True if the bytes changed."""
        return self._write_if_changed(self.paths.main_config, content.encode(), 0o644)

    def create_config(self, name: str, content: str | bytes, *, absent: bool = False,
                      digest: bytes | None = None) -> bool:
        """Write conf.d/<name>.conf; True if the bytes changed. `absent`: the caller knows the file does not
        exist (see the module docstring). `digest`: `content_digest` of the bytes, when the caller has it."""
        data = content.encode() if isinstance(content, str) else content
        return self._write_if_changed(self.config_path(name), data, 0o644, absent=absent, digest=digest)

    def write_config_ahead(self, name: str, content: str) -> WrittenFile:
        """Write conf.d/<name>.conf atomically without the files lock and without recording it: for a process
        forked to write files while the one that owns them writes none (configs.prerender). Returns what the
        owner needs to `adopt_config` the file; a `create_config` of the same bytes instead reads it back and
        leaves it as it is."""
        return _write_ahead(self.config_path(name), content.encode(), 0o644)

    def adopt_config(self, name: str, written: WrittenFile) -> bool:
        """Take over conf.d/<name>.conf as another process wrote it (`write_config_ahead`, which returned
        `written`): True if the file is still that one (same inode, size and mtime); it is then known to hold
        the bytes of `written.digest`, without reading them. False: nothing is recorded."""
        return self._adopt(self.config_path(name), written)

    def _adopt(self, path: str, written: WrittenFile) -> bool:
        with self._files_lock:
            if not _is_on_disk(path, written):
                return False
            self._cache[path] = written
            return True

    def delete_config(self, name: str) -> bool:
        """Remove conf.d/<name>.conf; True if it existed."""
        return self._remove(self.config_path(name))

    def read_config(self, name: str) -> str | None:
        """The current content of conf.d/<name>.conf, or None."""
        data = self._read(self.config_path(name))
        return None if data is None else data.decode(errors="replace")

    def list_configs(self) -> list[str]:
        """Names of the conf.d/*.conf files on disk, then the stream-conf.d ones (qualified), each sorted (to
        prune stale ones at start-up)."""
        out: list[str] = []
        for directory in CONFIG_DIRS:
            try:
                entries = os.listdir(os.path.join(self.conf_dir, directory))
            except FileNotFoundError:
                continue
            prefix = "" if directory == CONF_D_DIR else directory + "/"
            out.extend(sorted(prefix + e[:-5] for e in entries
                              if e.endswith(".conf") and not e.startswith(".")))
        return out

    def configs_named_in(self, output: str) -> list[str]:
        """Names of the conf.d files NGINX's output points at (e.g. `[emerg] ... in <conf_d>/<name>.conf:3`),
        in order of first mention: a shortcut to the offender before bisecting with `test_configs`."""
        names: list[str] = []
        dirs = "|".join(re.escape(d) for d in CONFIG_DIRS)
        prefix = re.escape(self.conf_dir + os.sep)
        for m in re.finditer(prefix + "(" + dirs + r")/([^/\s:\"']+)\.conf\b", output):
            name = m.group(2) if m.group(1) == CONF_D_DIR else f"{m.group(1)}/{m.group(2)}"
            if name not in names:
                names.append(name)
        return names

    def create_secret(self, name: str, content: bytes | str, mode: int = 0o600,
                      owner: int | None = None) -> str:
        """Write secrets/<name> atomically with `mode` (never more open meanwhile) and, when given, owned by
        the uid `owner` (a file NGINX's workers read); returns the path."""
        path = self.secret_path(name)
        data = content.encode() if isinstance(content, str) else content
        with self._files_lock:
            written = self._write_if_changed_locked(path, data, mode, owner,
                                                    absent=self._secret_absent_locked(name, path))
        if not written:
            st = os.stat(path)
            if stat.S_IMODE(st.st_mode) != mode:
                os.chmod(path, mode)
            if owner is not None and st.st_uid != owner:
                os.chown(path, owner, -1)
        return path

    def write_secret_ahead(self, name: str, content: bytes, mode: int = 0o600,
                           owner: int | None = None) -> WrittenFile:
        """Write secrets/<name> as `create_secret` does, but without the files lock and without recording it:
        for a process forked to write files while the one that owns them writes none of those
        (controller.secrets). Returns what the owner needs to `adopt_secret` it."""
        return _write_ahead(self.secret_path(name), content, mode, owner)

    def adopt_secret(self, name: str, written: WrittenFile) -> bool:
        """Take over secrets/<name> as another process wrote it (`write_secret_ahead`): as `adopt_config`."""
        return self._adopt(self.secret_path(name), written)

    def discard_secret_ahead(self, name: str, written: WrittenFile) -> bool:
        """Remove secrets/<name> if it is still the file another process wrote (`written`) and no write of
        this one replaced it; True if removed."""
        path = self.secret_path(name)
        with self._files_lock:
            if path in self._cache or not _is_on_disk(path, written):
                return False
            os.unlink(path)
            return True

    def delete_secret(self, name: str) -> None:
        """Remove secrets/<name>; a failure is logged, not raised (as NIC)."""
        path = self.secret_path(name)
        try:
            self._remove(path)
        except OSError as e:
            log.warning("failed to delete secret file", path=path, error=str(e))

    def _secret_absent_locked(self, name: str, path: str) -> bool:
        """True if secrets/<name> is known not to exist: not in the dir's first listing, not written since."""
        if self._secrets_listed is None:
            try:
                self._secrets_listed = frozenset(os.listdir(self.secrets_dir))
            except OSError:
                return False
        return name not in self._secrets_listed and path not in self._cache

    def _write_if_changed(self, path: str, data: bytes, mode: int, owner: int | None = None, *,
                          absent: bool = False, digest: bytes | None = None) -> bool:
        with self._files_lock:
            return self._write_if_changed_locked(path, data, mode, owner, absent=absent, digest=digest)

    def _write_if_changed_locked(self, path: str, data: bytes, mode: int, owner: int | None = None, *,
                                 absent: bool = False, digest: bytes | None = None) -> bool:
        if digest is None:
            digest = content_digest(data)
        if not absent and self._holds_locked(path, data, digest):
            return False
        st = _atomic_write(path, data, mode, owner)
        self._cache[path] = WrittenFile.of(digest, st)
        return True

    def _holds_locked(self, path: str, data: bytes, digest: bytes) -> bool:
        """True if the file holds exactly `data` (whose digest is `digest`): by the cached digest while the
        file's inode, size and mtime are the cached ones; else a file of another size differs, and one of the
        same size (e.g. written by a forked render process) is read and compared byte for byte, no digest."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._cache.pop(path, None)
            return False
        cached = self._cache.get(path)
        if cached is not None and cached.is_file(st):
            return cached.digest == digest
        self._cache.pop(path, None)
        if st.st_size != len(data) or self._read(path) != data:
            return False
        self._cache[path] = WrittenFile.of(digest, st)
        return True

    @staticmethod
    def _read(path: str) -> bytes | None:
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def _remove(self, path: str) -> bool:
        with self._files_lock:
            self._cache.pop(path, None)
            try:
                os.unlink(path)
            except FileNotFoundError:
                return False
            return True

    def _write_config_version(self, version: int) -> None:
        content = render_config_version(version, self.paths.config_version_socket)
        self._write_if_changed(self.paths.config_version_file, content.encode(), 0o644)

    # ------------------------------------------------------------------ commands

    def _binary(self) -> str:
        if self._resolved_binary is None:
            found = find_binary(self.binary)
            if found is None:
                raise FileNotFoundError(f"nginx binary {self.binary!r} not found (on PATH or in "
                                        f"{', '.join(_SEARCH_DIRS)})")
            self._resolved_binary = found
        return self._resolved_binary

    def _command(self, *args: str, conf: str | None = None) -> list[str]:
        return [self._binary(), *args, "-e", "stderr", "-c", conf or self.paths.main_config,
                "-p", self.run_dir + os.sep]

    def _build_info(self) -> str:
        """`nginx -V`'s output (version and configure arguments), read once: the binary does not change."""
        if self._build_text is None:
            res = subprocess.run([self._binary(), "-V"], capture_output=True, stdin=subprocess.DEVNULL,
                                 timeout=self.reload_timeout_ms / 1000, check=False)
            self._build_text = (res.stderr + res.stdout).decode(errors="replace")
        return self._build_text

    def version(self) -> str:
        """NGINX's version, from `nginx -V` (e.g. "1.22.1")."""
        text = self._build_info()
        m = re.search(r"nginx/(\S+)", text)
        if m is None:
            raise RuntimeError(f"unexpected `nginx -V` output: {text.strip()[:500]!r}")
        return m.group(1)

    def configure_arguments(self) -> list[str]:
        """The configure arguments of this NGINX, from `nginx -V` (e.g. `--with-http_stub_status_module`)."""
        text = self._build_info()
        line = next((ln for ln in text.splitlines() if ln.startswith("configure arguments:")), "")
        return line.removeprefix("configure arguments:").split()

    def test_config(self, main_conf_path: str | None = None) -> tuple[bool, str]:
        """`nginx -t` on the current (or the given) main config: (ok, NGINX's output)."""
        try:
            cmd = self._command("-t", conf=main_conf_path)
            res = subprocess.run(cmd, capture_output=True, stdin=subprocess.DEVNULL,
                                 timeout=self.reload_timeout_ms / 1000, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, f"nginx -t failed: {e}"
        return res.returncode == 0, (res.stderr + res.stdout).decode(errors="replace").strip()

    def test_configs(self, overrides: Mapping[str, str | None]) -> tuple[bool, str]:
        """`nginx -t` on a staging copy: the current files, with conf.d/<name>.conf replaced by the given
        content (None leaves it out). Needs the main config's includes to be relative (see module doc)."""
        for name in overrides:
            _split_config_name(name)
        main = self._read(self.paths.main_config) or b""
        if os.fsencode(self.paths.conf_d + os.sep) in main:
            raise ValueError("test_configs needs the main config to include conf.d by a relative path "
                             f"({CONF_D_INCLUDE}), not {self.paths.conf_d}")
        staging = tempfile.mkdtemp(prefix="staging-", dir=self.run_dir)
        try:
            with os.scandir(self.conf_dir) as it:
                for entry in it:
                    if entry.name in (*CONFIG_DIRS, SECRETS_DIR) or entry.name.startswith("."):
                        continue
                    os.symlink(entry.path, os.path.join(staging, entry.name))
            for directory in CONFIG_DIRS:
                os.mkdir(os.path.join(staging, directory))

            def staged(name: str) -> str:
                directory, base = _split_config_name(name)
                return os.path.join(staging, directory, base + ".conf")

            for name in self.list_configs():
                if name not in overrides:
                    os.symlink(self.config_path(name), staged(name))
            for name, content in overrides.items():
                if content is not None:
                    with open(staged(name), "w") as f:
                        f.write(content)
            return self.test_config(os.path.join(staging, MAIN_CONFIG_FILE))
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    # ------------------------------------------------------------------ process

    @property
    def master_pid(self) -> int | None:
        inst = self._instance
        return inst.proc.pid if inst is not None and inst.proc.poll() is None else None

    def is_running(self) -> bool:
        inst = self._instance
        return inst is not None and inst.proc.poll() is None

    def start(self, *, on_exit: Callable[[int], None] | None = None) -> None:
        """Start NGINX with config version 0 and wait until it serves it (deadline: the reload timeout).

        `on_exit(returncode)` is called from a waiter thread if NGINX exits without `quit()`.
        Raises NginxStartError (with NGINX's output) if it exits or times out; it is then stopped.
        """
        with self._proc_lock:
            if self.is_running():
                raise NginxStartError("nginx is already running")
            self._on_exit = on_exit
            self.config_version = 0
            self._start_locked()

    def restart(self) -> None:
        """Start NGINX again (after it died) with the current files and config version."""
        with self._proc_lock:
            if self.is_running():
                self.quit(timeout=self.reload_timeout_ms / 1000)
            self._start_locked()

    def _start_locked(self) -> None:
        main = self._read(self.paths.main_config)
        if main is None:
            raise NginxStartError(f"main config {self.paths.main_config} does not exist")
        if not _DAEMON_OFF.search(main):
            # Otherwise NGINX would fork into the background, out of our reach.
            raise NginxStartError(f"main config {self.paths.main_config} must contain 'daemon off;'")
        self._reap_previous()
        self._clean_run_dir()
        version = self.config_version
        self._write_config_version(version)
        try:
            cmd = self._command()
        except FileNotFoundError as e:
            raise NginxStartError(str(e)) from None
        output_start = self._output.seq
        started = time.monotonic()
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
                                    umask=self._umask)
        except OSError as e:
            raise NginxStartError(f"could not run {cmd[0]}: {e}") from e
        inst = _Instance(proc=proc, output_start=output_start)
        inst.reader = threading.Thread(target=self._read_output, args=(inst,), name="nginx-output",
                                       daemon=True)
        inst.waiter = threading.Thread(target=self._wait_exit, args=(inst,), name="nginx-waiter", daemon=True)
        self._instance = inst
        inst.reader.start()
        inst.waiter.start()
        log.info("nginx started", pid=proc.pid, command=" ".join(cmd))
        try:
            self._wait_for_version(inst, version, started + self.reload_timeout_ms / 1000,
                                   output_seq=output_start, fail_on_emerg=False)
        except _Exited as e:
            self._stop_instance(inst, 0.0)
            out = "\n".join(self._output.since(output_start))
            msg = f"nginx exited with code {e.returncode} while starting: {out}"
            raise NginxStartError(msg, out) from None
        except TimeoutError as e:
            self._stop_instance(inst, 0.0)
            out = "\n".join(self._output.since(output_start))
            raise NginxStartError(
                f"nginx did not serve config version {version} within {self.reload_timeout_ms} ms ({e}); "
                f"output: {out}", out) from None
        inst.serving = True
        log.info("nginx is serving", pid=proc.pid, config_version=version,
                 ms=int((time.monotonic() - started) * 1000))

    def _reap_previous(self) -> None:
        """Make sure a previous instance and its leftover workers are gone before starting another."""
        inst = self._instance
        if inst is not None:
            self._stop_instance(inst, 0.0)
            self._instance = None
        pid = self._leftover_master()
        if pid is None:
            return
        if self._parent_pid(pid) != 1:
            raise NginxStartError(f"an NGINX master process (pid {pid}, from {self.paths.pid_file}) is "
                                  "already running with this run dir; stop it first")
        # Its controller died without stopping it (SIGKILL): it was re-parented to init. Take over the run
        # dir: a graceful quit, then SIGKILL of its whole process group.
        log.warning("stopping an orphaned NGINX left by a previous controller", pid=pid)
        self._stop_orphan(pid, timeout=self.reload_timeout_ms / 1000)

    def stop_leftover(self) -> int | None:
        """Stop the NGINX master named by this run dir's pid file and running this config, whoever its parent
        is, and return its pid (None: there is none). Only for a caller that knows the process which ran it
        is gone (it holds that process's lock); `start()` itself stops only masters re-parented to init."""
        if self.is_running():
            return None
        pid = self._leftover_master()
        if pid is not None:
            log.warning("stopping an NGINX left running by a previous run", pid=pid)
            self._stop_orphan(pid, timeout=self.reload_timeout_ms / 1000)
        return pid

    def _leftover_master(self) -> int | None:
        """The pid of a running NGINX master of this run dir or config, from the pid file; None if none."""
        try:
            with open(self.paths.pid_file) as f:
                pid = int(f.read().strip() or "0")
        except (OSError, ValueError):
            return None
        try:
            with open(os.path.join(self.proc_root, str(pid), "cmdline"), "rb") as f:
                title = f.read().split(b"\0", 1)[0]
        except OSError:
            return None
        ours = (os.fsencode(self.paths.main_config) in title or os.fsencode(self.run_dir) in title)
        if pid <= 0 or not title.startswith(b"nginx: master process") or not ours:
            return None
        return pid

    def _parent_pid(self, pid: int) -> int | None:
        try:
            with open(os.path.join(self.proc_root, str(pid), "stat"), "rb") as f:
                stat = f.read()
        except OSError:
            return None
        # The command name in field 2 may contain spaces; the fields after its closing ")" are fixed.
        fields = stat[stat.rfind(b")") + 2:].split()
        return int(fields[1]) if len(fields) > 1 else None

    def _stop_orphan(self, pid: int, timeout: float) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGQUIT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and os.path.exists(os.path.join(self.proc_root, str(pid))):
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)

    def _clean_run_dir(self) -> None:
        """Remove a stale pid file and unix sockets left by an NGINX that was killed (bind would fail)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.paths.pid_file)
        with os.scandir(self.run_dir) as it:
            stale = [e.path for e in it
                     if e.name.endswith(".sock") and e.name != SYSLOG_SOCKET_NAME and _is_socket(e.path)]
        private = os.path.dirname(self._dynamic_peers.socket_path)
        with contextlib.suppress(OSError), os.scandir(private) as it:  # the modules' API sockets
            stale += [e.path for e in it if e.name.endswith(".sock") and _is_socket(e.path)]
        for path in stale:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _read_output(self, inst: _Instance) -> None:
        stream = inst.proc.stdout
        assert stream is not None
        try:
            for raw in iter(stream.readline, b""):
                line = raw.decode(errors="replace").rstrip("\r\n")
                if not line:
                    continue
                self._output.append(line)
                level = _nginx_level(line)
                if level == "error":
                    log.error("nginx", output=line)
                elif level == "warning":
                    log.warning("nginx", output=line)
                else:
                    log.info("nginx", output=line)
        except Exception as e:  # a dying pipe must not kill the thread silently
            log.warning("reading nginx output failed", error=str(e))
        finally:
            with contextlib.suppress(OSError):
                stream.close()

    def _wait_exit(self, inst: _Instance) -> None:
        rc = inst.proc.wait()
        if rc != 0:
            # The master died abnormally: its workers live on and hold the listening sockets.
            self._kill_group(inst)
        inst.exited.set()
        if inst.stopping or not inst.serving:
            log.info("nginx exited", pid=inst.proc.pid, code=rc)
            return
        tail = self._output.since(max(inst.output_start, self._output.seq - 20))
        log.error("nginx exited unexpectedly", pid=inst.proc.pid, code=rc, output="\n".join(tail))
        callback = self._on_exit
        if callback is not None:
            try:
                callback(rc)
            except Exception as e:
                log.exception("nginx on_exit callback failed", error=str(e))

    def _kill_group(self, inst: _Instance) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(inst.proc.pid, signal.SIGKILL)

    def _stop_instance(self, inst: _Instance, timeout: float) -> None:
        """SIGQUIT, wait up to `timeout`, then SIGKILL the whole group; waits until it is gone."""
        inst.stopping = True
        if inst.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                inst.proc.send_signal(signal.SIGQUIT)
            if not inst.exited.wait(timeout) and inst.proc.poll() is None:
                log.warning("nginx did not quit in time; killing it", pid=inst.proc.pid, timeout_s=timeout)
                self._kill_group(inst)
        inst.exited.wait()
        if inst.reader is not None and inst.reader is not threading.current_thread():
            inst.reader.join(timeout=5.0)

    def quit(self, timeout: float = 30.0) -> None:
        """Graceful stop: SIGQUIT, wait up to `timeout` seconds, then SIGKILL. on_exit is not called."""
        with self._proc_lock:
            inst = self._instance
            if inst is None:
                return
            self._stop_instance(inst, timeout)
            self._instance = None
            self._clean_run_dir()
            log.info("nginx stopped", pid=inst.proc.pid, code=inst.proc.returncode)

    # ------------------------------------------------------------------ dynamic upstreams

    @property
    def dynamic_peers_socket(self) -> str:
        """Where the main config serves the dynamic-peers module's API."""
        return self._dynamic_peers.socket_path

    def update_upstreams(self, servers: Mapping[str, Sequence[str]]) -> None:
        """Make each named upstream (declared dynamic in the running config) serve exactly these addresses,
        without a reload. Raises DynamicUpdateError (NGINX then applied none of it); counted either way."""
        with self._proc_lock:
            if not self.is_running():
                ok = False
                error: DynamicUpdateError | None = DynamicUpdateError("dynamic update failed: nginx is not "
                                                                      "running")
            else:
                try:
                    self._dynamic_peers.push(servers)
                    ok, error = True, None
                except DynamicUpdateError as e:
                    ok, error = False, e
            if ok:
                self.dynamic_update_count += 1
            else:
                self.dynamic_update_errors += 1
            callback = self.on_dynamic_update
            if callback is not None:
                try:
                    callback(ok)
                except Exception as e:
                    log.exception("on_dynamic_update callback failed", error=str(e))
            if error is not None:
                raise error
            log.info("nginx upstreams updated without a reload", upstreams=len(servers))

    def served_upstreams(self) -> dict[str, tuple[int, tuple[str, ...]]]:
        """The dynamic upstreams NGINX serves now: slot count and live addresses (DynamicUpdateError)."""
        return self._dynamic_peers.served()

    # ------------------------------------------------------------------ reload

    def reload(self, is_endpoints_update: bool = False) -> None:
        """Bump the config version, SIGHUP the master, and wait until the new workers serve the new version.

        Raises ReloadError; the old config keeps serving then.
        """
        with self._proc_lock:
            started = time.monotonic()
            timeout_s = self.reload_timeout_ms / 1000
            deadline = started + timeout_s
            try:
                self._reload_locked(deadline)
            except ReloadError as e:
                self._record(False, started, is_endpoints_update)
                log.error("nginx reload failed", error=str(e), config_version=self.config_version)
                raise
            self._record(True, started, is_endpoints_update)
            log.info("nginx reloaded", config_version=self.config_version, ms=self.last_reload_ms,
                     endpoints=is_endpoints_update)

    def _reload_locked(self, deadline: float) -> None:
        inst = self._instance
        if inst is None or inst.proc.poll() is not None:
            raise ReloadError("nginx reload failed: nginx is not running")
        self.config_version += 1
        version = self.config_version
        try:
            self._write_config_version(version)
        except OSError as e:
            raise ReloadError(f"nginx reload failed: writing {self.paths.config_version_file}: {e}") from None
        output_seq = self._output.seq
        old_workers = current_workers(inst.proc.pid, self.proc_root) if self.wait_for_old_workers else set()
        try:
            inst.proc.send_signal(signal.SIGHUP)
        except OSError as e:
            raise ReloadError(f"nginx reload failed: signalling the master {inst.proc.pid}: {e}") from None
        try:
            self._wait_for_version(inst, version, deadline, output_seq=output_seq, fail_on_emerg=True)
        except TimeoutError as e:
            raise ReloadError("could not get newest config version: could not get expected version: "
                              f"{version} after {self.reload_timeout_ms}ms ({e})") from None
        except _EmergLogged as e:
            raise ReloadError(f"nginx reload failed: {e}", str(e)) from None
        except _Exited as e:
            out = "\n".join(self._output.since(output_seq))
            msg = f"nginx reload failed: nginx exited with code {e.returncode}: {out}"
            raise ReloadError(msg, out) from None
        self._wait_old_workers(old_workers, deadline)

    def _wait_old_workers(self, old_workers: set[ProcessIdentity], deadline: float) -> None:
        """Wait until the previous generation stopped accepting, so that every connection made after
        reload() returns gets the new config (the master tells old workers ~100 ms after new ones start)."""
        while old_workers:
            old_workers = still_accepting(old_workers, self.proc_root)
            if not old_workers:
                return
            if time.monotonic() > deadline:
                log.warning("old nginx workers still accept connections after the reload",
                            pids=sorted(w.pid for w in old_workers))
                return
            time.sleep(_OLD_WORKER_POLL)

    def _record(self, ok: bool, started: float, is_endpoints_update: bool) -> None:
        duration_ms = int((time.monotonic() - started) * 1000)
        self.last_reload_ok = ok
        if ok:
            self.reload_count += 1
            if is_endpoints_update:
                self.endpoints_reload_count += 1
            self.last_reload_ms = duration_ms
        else:
            self.reload_errors += 1
        callback = self.on_reload
        if callback is not None:
            try:
                callback(ok, duration_ms, is_endpoints_update)
            except Exception as e:
                log.exception("on_reload callback failed", error=str(e))

    def _wait_for_version(self, inst: _Instance, version: int, deadline: float, *, output_seq: int,
                          fail_on_emerg: bool) -> None:
        """Poll GET /configVersion until it returns `version` (NIC's WaitForCorrectVersion).

        Retries at once after a request error (back-to-back errors back off up to 25 ms, so a socket that does
        not exist yet is not polled in a busy loop). After a wrong version it waits 25 ms, then until NGINX
        prints a line or a pause passes that doubles up to 250 ms (a big config takes seconds to load, and
        polling must not take CPU from it).
        Raises TimeoutError (with the last observation), _Exited, or _EmergLogged when the master logged an
        [emerg] or [crit] while applying the new config (it keeps the old one then).
        """
        if self._session is None:
            self._session = requests_unixsocket.Session()
        session = self._session
        url = unix_socket_url(self.paths.config_version_socket, CONFIG_VERSION_PATH)
        last = "no response yet"
        errors = 0
        pause = _POLL_WRONG_VERSION_SLEEP
        while True:
            rc = inst.proc.poll()
            if rc is not None:
                raise _Exited(rc)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"last: {last}")
            try:
                resp = session.get(url, timeout=min(remaining, _POLL_REQUEST_TIMEOUT_CAP),
                                   headers={"Connection": "close"})
            except requests.RequestException as e:
                last = f"request error: {e}"
                if errors:
                    time.sleep(min(_POLL_WRONG_VERSION_SLEEP, 0.001 * 2 ** min(errors, 5)))
                errors += 1
                continue
            errors = 0
            body = resp.text.strip()
            if resp.status_code == 200 and body == str(version):
                return
            last = f"HTTP {resp.status_code} {body[:100]!r}"
            if fail_on_emerg:
                # The master's [crit] lines fail a reload too (a full shared zone fails it without [emerg]).
                crit = f"[crit] {inst.proc.pid}#"
                emerg = [line for line in self._output.since(output_seq) if "[emerg]" in line or crit in line]
                # A failed bind() is retried for ~2.5 s; "still could not bind()" ends that cycle.
                if any(not _RETRIED_BIND.search(line) for line in emerg):
                    raise _EmergLogged("\n".join(emerg))
            # A big config takes NGINX seconds to load: back off, but wake up when it prints something.
            time.sleep(_POLL_WRONG_VERSION_SLEEP)
            self._output.wait(self._output.seq, min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, _POLL_WRONG_VERSION_MAX_SLEEP)
