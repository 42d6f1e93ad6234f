"""The files under conf_dir that NGINX reads: nginx.conf, conf.d/, stream-conf.d/ and secrets/, after NIC's
`internal/nginx` LocalManager (`CreateConfig`, `CreateSecret`, ...).

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
- A process forked to write files ahead (`write_*_ahead`) writes them the same way without the lock or the
  record; the owner then `adopt_*`s each file that is still the one written (same inode, size and mtime).
- The secrets dir is 0711: workers open a file by its exact name (htpasswd, written 0644), nobody lists it;
  certificates and keys (0600) are read by the master. A file workers read is given to their uid
  (`create_secret(owner=...)`). The conf dir's own parents must be traversable by the worker user.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import threading
from typing import NamedTuple

from ingressctl.logging import get_logger
from ingressctl.nginx.paths import (
    CONF_D_DIR,
    CONFIG_DIRS,
    SECRETS_DIR_MODE,
    STREAM_CONF_D_DIR,
    RuntimePaths,
    check_name,
    split_config_name,
)

log = get_logger(__name__)


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
    """`_atomic_write`, and what the owning process needs to take the file over (see `ConfDir._adopt`)."""
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


class ConfDir:
    """Owns the files of conf_dir (nginx.conf, conf.d/, stream-conf.d/, secrets/); thread-safe."""

    def __init__(self, paths: RuntimePaths) -> None:
        self.paths = paths
        self.conf_dir = paths.conf_dir
        self.secrets_dir = paths.secrets_dir
        self._config_dirs = {d: os.path.join(self.conf_dir, d) for d in CONFIG_DIRS}
        self._files_lock = threading.Lock()
        self._cache: dict[str, WrittenFile] = {}
        self._secrets_listed: frozenset[str] | None = None  # the secrets dir at the first Secret write

        os.makedirs(paths.conf_d, exist_ok=True)
        os.makedirs(os.path.join(self.conf_dir, STREAM_CONF_D_DIR), exist_ok=True)
        # Traversable but not listable: workers open htpasswd files (0644) by their exact name at request
        # time; certificates and keys (0600) are read by the master only.
        os.makedirs(self.secrets_dir, mode=SECRETS_DIR_MODE, exist_ok=True)
        try:
            os.chmod(self.secrets_dir, SECRETS_DIR_MODE)
        except PermissionError as e:
            raise ValueError(f"cannot set the mode of {self.secrets_dir}: {e.strerror}; the controller must "
                             "own it (mount a volume at the conf dir, not at its secrets directory)") from e


    @property
    def main_config_path(self) -> str:
        return self.paths.main_config

    def config_path(self, name: str) -> str:
        """conf.d/<name>.conf, or stream-conf.d/<base>.conf for a name "stream-conf.d/<base>"."""
        directory, base = split_config_name(name)
        return f"{self._config_dirs[directory]}/{base}.conf"

    def secret_path(self, name: str) -> str:
        """`secrets/<name>` (NIC's GetFilenameForSecret)."""
        check_name("secret", name)
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

