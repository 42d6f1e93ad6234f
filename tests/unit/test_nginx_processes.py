"""Worker processes are counted by generation from a fake /proc tree."""

from __future__ import annotations

import os
from pathlib import Path

from ingressctl.nginx.processes import (
    ProcessIdentity,
    WorkerProcessCounts,
    count_worker_processes,
    current_workers,
    still_accepting,
)

PAD = b"\0" * 40  # NGINX pads the rewritten argv with NULs


def add_proc(root: Path, pid: int, cmdline: bytes, ppid: int = 1, comm: str = "nginx") -> None:
    d = root / str(pid)
    d.mkdir()
    (d / "cmdline").write_bytes(cmdline)
    (d / "stat").write_bytes(f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194624".encode())


def test_counts_current_and_old_workers(tmp_path: Path) -> None:
    add_proc(tmp_path, 100, b"nginx: master process /usr/sbin/nginx -e stderr -c /x/nginx.conf" + PAD)
    add_proc(tmp_path, 101, b"nginx: worker process" + PAD, ppid=100)
    add_proc(tmp_path, 102, b"nginx: worker process" + PAD, ppid=100)
    add_proc(tmp_path, 103, b"nginx: worker process is shutting down" + PAD, ppid=100)
    add_proc(tmp_path, 104, b"nginx: cache manager process" + PAD, ppid=100)
    add_proc(tmp_path, 105, b"python3\0-m\0ingressctl\0")
    add_proc(tmp_path, 106, b"")                                     # a zombie or kernel thread
    add_proc(tmp_path, 107, b"vim\0nginx: worker process\0")        # mentions it, but is not a worker
    (tmp_path / "self").mkdir()                                       # non-numeric entries are ignored
    (tmp_path / "uptime").write_text("1.0 1.0\n")
    assert count_worker_processes(str(tmp_path)) == WorkerProcessCounts(current=2, old=1)


def test_space_padding_and_filter_by_master(tmp_path: Path) -> None:
    add_proc(tmp_path, 200, b"nginx: worker process   ", ppid=10)
    add_proc(tmp_path, 201, b"nginx: worker process is shutting down" + PAD, ppid=10)
    add_proc(tmp_path, 300, b"nginx: worker process" + PAD, ppid=20, comm="ngin) x")  # ')' in comm
    assert count_worker_processes(str(tmp_path)) == WorkerProcessCounts(current=2, old=1)
    assert count_worker_processes(str(tmp_path), parent_pid=10) == WorkerProcessCounts(current=1, old=1)
    assert count_worker_processes(str(tmp_path), parent_pid=20) == WorkerProcessCounts(current=1, old=0)
    assert count_worker_processes(str(tmp_path), parent_pid=30) == WorkerProcessCounts()


def test_vanished_and_unreadable_entries_are_skipped(tmp_path: Path) -> None:
    add_proc(tmp_path, 400, b"nginx: worker process" + PAD)
    (tmp_path / "401").mkdir()                                        # process gone: no cmdline
    (tmp_path / "402").mkdir()
    os.mkdir(tmp_path / "402" / "cmdline")                            # unreadable as a file
    assert count_worker_processes(str(tmp_path)) == WorkerProcessCounts(current=1, old=0)


def test_missing_proc_root_gives_zero(tmp_path: Path) -> None:
    assert count_worker_processes(str(tmp_path / "nope")) == WorkerProcessCounts()


def test_real_proc_does_not_fail() -> None:
    counts = count_worker_processes()
    assert counts.current >= 0 and counts.old >= 0


def add_full_proc(root: Path, pid: int, title: bytes, ppid: int, start_time: int) -> None:
    d = root / str(pid)
    d.mkdir(exist_ok=True)
    (d / "cmdline").write_bytes(title + PAD)
    rest = " ".join(["0"] * 15)  # fields 7..21
    (d / "stat").write_bytes(f"{pid} (nginx) S {ppid} {pid} {pid} {rest} {start_time} 0 0".encode())


def test_current_workers_and_still_accepting(tmp_path: Path) -> None:
    add_full_proc(tmp_path, 100, b"nginx: master process nginx", 1, 50)
    add_full_proc(tmp_path, 101, b"nginx: worker process", 100, 60)
    add_full_proc(tmp_path, 102, b"nginx: worker process is shutting down", 100, 55)
    add_full_proc(tmp_path, 103, b"nginx: worker process", 999, 61)          # another master's worker
    for use_children_file in (False, True):
        if use_children_file:
            (tmp_path / "100" / "task" / "100").mkdir(parents=True)
            (tmp_path / "100" / "task" / "100" / "children").write_text("101 102 ")
        workers = current_workers(100, str(tmp_path))
        assert workers == {ProcessIdentity(101, 60)}
    assert still_accepting(workers, str(tmp_path)) == workers
    # The worker is told to shut down: it no longer accepts.
    add_full_proc(tmp_path, 101, b"nginx: worker process is shutting down", 100, 60)
    assert still_accepting(workers, str(tmp_path)) == set()
    # It exited and its pid was reused by a new worker: a different process, so not an old one.
    add_full_proc(tmp_path, 101, b"nginx: worker process", 100, 70)
    assert still_accepting(workers, str(tmp_path)) == set()
    # Gone entirely.
    for f in (tmp_path / "101").iterdir():
        f.unlink()
    assert still_accepting(workers, str(tmp_path)) == set()
    assert current_workers(12345, str(tmp_path)) == set()
