"""Count NGINX worker processes by generation, from /proc (for `nginx_worker_processes_total{generation}`).

Guarantees: a scan never raises because a process vanished or is unreadable mid-scan (it is skipped);
the /proc root is injectable so tests can use a fake tree. A worker titled `nginx: worker process` is of
the current generation; `nginx: worker process is shutting down` is an old one (draining after a reload).
With `parent_pid`, only children of that master are counted (field 4 of /proc/<pid>/stat).

`current_workers(master_pid)` and `still_accepting(workers)` let the Manager wait, after a reload, until the
previous generation stopped accepting connections: NGINX retitles a worker "is shutting down" in the same
event-loop step in which it closes its listening sockets, and the master signals the old workers only
~100 ms after it started the new ones.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

CURRENT_WORKER_TITLE = "nginx: worker process"
OLD_WORKER_TITLE = "nginx: worker process is shutting down"


@dataclass(frozen=True)
class WorkerProcessCounts:
    current: int = 0
    old: int = 0


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(4096)
    except OSError:  # vanished (ENOENT/ESRCH), not ours (EACCES), or not a process directory
        return None


def _process_title(raw: bytes) -> str:
    # NGINX rewrites argv in place: the title, then NULs (or spaces) over the rest of the original argv.
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace").rstrip(" ")


def _parent_pid(stat: bytes) -> int | None:
    # "pid (comm) state ppid ...": comm may contain spaces and parentheses, so split after the LAST ')'.
    end = stat.rfind(b")")
    if end < 0:
        return None
    fields = stat[end + 1:].split()
    if len(fields) < 2 or not fields[1].isdigit():
        return None
    return int(fields[1])


def _stat_fields(stat: bytes) -> list[bytes]:
    """Fields after "(comm)": index 0 is field 3 (state), 1 is ppid, 19 is starttime (field 22)."""
    end = stat.rfind(b")")
    return stat[end + 1:].split() if end >= 0 else []


@dataclass(frozen=True)
class ProcessIdentity:
    pid: int
    start_time: int  # clock ticks since boot: tells a reused pid apart


def _identity(proc_root: str, pid: int) -> tuple[str, int] | None:
    raw = _read(os.path.join(proc_root, str(pid), "cmdline"))
    stat = _read(os.path.join(proc_root, str(pid), "stat"))
    if not raw or stat is None:
        return None
    fields = _stat_fields(stat)
    if len(fields) < 20 or not fields[19].isdigit():
        return None
    return _process_title(raw), int(fields[19])


def _children(proc_root: str, pid: int) -> list[int]:
    raw = _read(os.path.join(proc_root, str(pid), "task", str(pid), "children"))
    if raw is not None:  # the master is single-threaded, so its main task has all its children
        return [int(p) for p in raw.split() if p.isdigit()]
    found = []
    try:
        entries = os.listdir(proc_root)
    except OSError:
        return []
    for entry in entries:
        if entry.isdigit():
            stat = _read(os.path.join(proc_root, entry, "stat"))
            if stat is not None and _parent_pid(stat) == pid:
                found.append(int(entry))
    return found


def current_workers(master_pid: int, proc_root: str = "/proc") -> set[ProcessIdentity]:
    """The master's workers of the current generation (titled `nginx: worker process`)."""
    result = set()
    for pid in _children(proc_root, master_pid):
        ident = _identity(proc_root, pid)
        if ident is not None and ident[0] == CURRENT_WORKER_TITLE:
            result.add(ProcessIdentity(pid, ident[1]))
    return result


def still_accepting(workers: set[ProcessIdentity], proc_root: str = "/proc") -> set[ProcessIdentity]:
    """Those of `workers` still alive with the current-worker title (so they may accept connections)."""
    result = set()
    for w in workers:
        ident = _identity(proc_root, w.pid)
        if ident is not None and ident == (CURRENT_WORKER_TITLE, w.start_time):
            result.add(w)
    return result


def count_worker_processes(proc_root: str = "/proc", *, parent_pid: int | None = None) -> WorkerProcessCounts:
    """Scan `<proc_root>/<pid>/cmdline` and count NGINX workers of the current and old generations."""
    current = old = 0
    try:
        entries = os.listdir(proc_root)
    except OSError:
        return WorkerProcessCounts()
    for entry in entries:
        if not entry.isdigit():
            continue
        raw = _read(os.path.join(proc_root, entry, "cmdline"))
        if not raw:
            continue
        title = _process_title(raw)
        if title not in (CURRENT_WORKER_TITLE, OLD_WORKER_TITLE):
            continue
        if parent_pid is not None:
            stat = _read(os.path.join(proc_root, entry, "stat"))
            if stat is None or _parent_pid(stat) != parent_pid:
                continue
        if title == CURRENT_WORKER_TITLE:
            current += 1
        else:
            old += 1
    return WorkerProcessCounts(current=current, old=old)
