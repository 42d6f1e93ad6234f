"""What NGINX's workers must reach at request time, and whether they can: checked once NGINX runs.

NGINX's master reads the configuration, and the certificates, CA and CRL files it names, when it starts and
reloads; under a root master that is root. Its workers run as another user (the `user` directive, else
NGINX's compiled-in user, usually `nobody`; without root they are the master's own user) and open, while
serving, what lives under two directories:

- the run dir: the temporary files of request and response bodies larger than their buffers, the socket of
  the server that answers 502 for Services without endpoints, the TLS passthrough sockets, the latency
  metrics' syslog socket, and the cache Policies' zones when the cache lives there;
- the secrets dir of the conf dir: basic-auth user files (`nginx.org/basic-auth-secret`, basicAuth
  Policies), and the certificates loaded at TLS handshakes.

Each needs search permission on every directory from / down to it. A directory they cannot traverse fails
those requests silently (500, a TLS EOF, lost metrics), so this module makes it a start-up decision.

Guarantees:
- `worker_identity` is who a running worker is: its fs uid, fs gid and groups, read from /proc (what NGINX
  made of `user`, its compiled-in default and initgroups), not guessed from the configuration.
- `blocked_directory` decides as the kernel's permission check does for that identity (owner bits for the
  owner, else group bits for any of its groups, else other bits; uid 0 passes); POSIX ACLs are not read.
- `ensure_worker_access` changes only the conf dir, the run dir and the secrets dir themselves, and only
  when this process owns them and the workers cannot search them: it adds search for group and others
  (0o011: traversable, not listable), and logs a warning naming the directory, both modes and the user.
  Nothing above them is ever changed. When a directory still blocks the workers, it raises
  `WorkerAccessError` naming the directory, its mode and owner, the worker user, and what would fail (with
  the flag-dependent items only when their flag is on). Each directory serves something that no flag turns
  off (body temp files; basic auth), so the caller refuses to start (exit status 2).
- Files are not checked here: the controller writes those the workers read with modes they can read
  (htpasswd 0644; certificates loaded at handshakes owned by the worker user, see configs.certificate_map),
  NGINX chmods the unix sockets it listens on to 0666, and its master creates the temp directories for
  the worker user.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from dataclasses import dataclass

from ingressctl.logging import get_logger
from ingressctl.nginx.paths import RuntimePaths
from ingressctl.nginx.processes import current_workers

log = get_logger(__name__)

TRAVERSE_BITS = 0o011
"""Added to a directory of ours the workers cannot search: search for group and others, no listing."""

RUN_DIR_USES = ("temporary files of request and response bodies larger than their buffers (500)",
                "the server that answers 502 for Services without endpoints (a connect() error each time)")
SECRETS_DIR_USES = ("basic-auth user files of nginx.org/basic-auth-secret and basicAuth Policies (500)",)
TLS_PASSTHROUGH_USE = "the TLS passthrough sockets of --enable-tls-passthrough (the handshake ends in EOF)"
LATENCY_METRICS_USE = "the syslog socket of --enable-latency-metrics (the latencies are lost)"
CACHE_USE = "the zones of cache Policies (500)"


class WorkerAccessError(Exception):
    """NGINX's workers cannot traverse a directory they open files or sockets under at request time."""


@dataclass(frozen=True)
class WorkerIdentity:
    """The credentials the kernel checks a worker's file accesses with."""

    uid: int
    gid: int
    groups: frozenset[int]

    @property
    def name(self) -> str:
        """The user's name, with its uid (`nobody (uid 65534)`)."""
        try:
            return f"{pwd.getpwuid(self.uid).pw_name} (uid {self.uid})"
        except KeyError:
            return f"uid {self.uid}"

    def can_search(self, st: os.stat_result) -> bool:
        """Whether this identity may traverse the directory `st` describes."""
        if self.uid == 0:
            return True
        if st.st_uid == self.uid:
            bit = stat.S_IXUSR
        elif st.st_gid == self.gid or st.st_gid in self.groups:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        return bool(st.st_mode & bit)


def worker_identity(master_pid: int, proc_root: str = "/proc") -> WorkerIdentity | None:
    """The identity of a current worker of `master_pid` (from its /proc status), or None without one."""
    for worker in sorted(current_workers(master_pid, proc_root), key=lambda w: w.pid):
        try:
            with open(os.path.join(proc_root, str(worker.pid), "status")) as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            # Uid and Gid list the real, effective, saved and filesystem ids; the last decides file access.
            uid = int(fields["Uid"].split()[3])
            gid = int(fields["Gid"].split()[3])
            groups = frozenset(int(g) for g in fields.get("Groups", "").split())
        except (OSError, KeyError, IndexError, ValueError):
            continue  # exited meanwhile, or not readable: try the next one
        return WorkerIdentity(uid, gid, groups)
    return None


@dataclass(frozen=True)
class BlockedDirectory:
    """A directory a worker identity may not traverse."""

    path: str
    mode: int
    uid: int
    gid: int

    def describe(self) -> str:
        """`/tmp/x (mode 0700, owner root:root)`."""
        return f"{self.path} (mode {self.mode:04o}, owner {_user_name(self.uid)}:{_group_name(self.gid)})"


def blocked_directory(path: str, identity: WorkerIdentity) -> BlockedDirectory | None:
    """The first directory from / down to `path` (itself included) that `identity` cannot search; None
    when it can reach `path`, or when a directory on the way does not exist (nothing to reach yet)."""
    current = os.sep
    parts = [p for p in os.path.abspath(path).split(os.sep) if p]
    for part in [None, *parts]:
        if part is not None:
            current = os.path.join(current, part)
        try:
            st = os.stat(current)
        except OSError:
            return None
        if not identity.can_search(st):
            return BlockedDirectory(current, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
    return None


def ensure_worker_access(paths: RuntimePaths, master_pid: int, *, proc_root: str = "/proc",
                         tls_passthrough: bool = False, latency_metrics: bool = False,
                         cache_dir: str = "") -> None:
    """Make the run dir and the secrets dir reachable for the workers of `master_pid` where they are ours to
    change, and raise WorkerAccessError naming every directory above them that still blocks them (see the
    module docstring). `cache_dir`: where cache Policies' zones live, checked as well."""
    identity = worker_identity(master_pid, proc_root)
    if identity is None:
        log.warning("cannot tell which user NGINX's workers run as; not checking that they reach the conf "
                    "and run dirs", master_pid=master_pid)
        return
    for own in (paths.conf_dir, paths.secrets_dir, paths.run_dir):
        _make_traversable(own, identity)
    run_uses = list(RUN_DIR_USES)
    if tls_passthrough:
        run_uses.append(TLS_PASSTHROUGH_USE)
    if latency_metrics:
        run_uses.append(LATENCY_METRICS_USE)
    # (directory to reach, the directory of the flag it is in, its name, what needs it, how else to fix it)
    needs: list[tuple[str, str, str, list[str], str]] = [
        (paths.run_dir, paths.run_dir, "the run dir", run_uses,
         "pass --nginx-run-dir with a directory it can reach"),
        (paths.secrets_dir, paths.conf_dir, "the conf dir", list(SECRETS_DIR_USES),
         "pass --nginx-conf-dir with a directory it can reach"),
    ]
    if cache_dir:
        if _is_under(cache_dir, paths.run_dir):
            run_uses.append(CACHE_USE)
        else:
            needs.append((cache_dir, cache_dir, "the cache directory", [CACHE_USE],
                          f"make {cache_dir} reachable"))
    problems = []
    for target, shown, name, uses, remedy in needs:
        blocked = blocked_directory(target, identity)
        if blocked is None:
            continue
        if blocked.path == os.path.abspath(shown):
            where = f" ({name})"
        else:
            where = f" ({'in' if _is_under(blocked.path, shown) else 'above'} {name} {shown})"
        problems.append(f"NGINX's workers run as {identity.name} and cannot traverse {blocked.describe()}"
                        f"{where}, so these would fail at request time: {'; '.join(uses)}. Let that user "
                        f"search {blocked.path} (for example chmod o+x {blocked.path}) or {remedy}")
    if problems:
        raise WorkerAccessError("\n".join(problems))


def _make_traversable(path: str, identity: WorkerIdentity) -> None:
    try:
        st = os.stat(path)
    except OSError:
        return
    if identity.can_search(st) or st.st_uid != os.geteuid():
        return
    before = stat.S_IMODE(st.st_mode)
    try:
        os.chmod(path, before | TRAVERSE_BITS)
    except OSError as e:  # e.g. a read-only mount: the check that follows names the directory
        log.warning("cannot make a directory traversable for NGINX's workers", directory=path, error=str(e))
        return
    log.warning("made a directory of the controller traversable for NGINX's workers, which open files and "
                "sockets under it at request time", directory=path, mode_before=f"{before:04o}",
                mode=f"{before | TRAVERSE_BITS:04o}", worker_user=identity.name)


def _is_under(path: str, directory: str) -> bool:
    path, directory = os.path.abspath(path), os.path.abspath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
