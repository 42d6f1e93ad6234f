"""ingressctl.nginx.worker_access without NGINX: the kernel's search-permission rule for another user, the
first blocking directory, a worker's identity from a /proc tree, and what `ensure_worker_access` changes
(only the controller's own directories) and refuses (a blocking directory above them, named)."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingressctl.nginx.paths import RuntimePaths
from ingressctl.nginx.worker_access import (
    CACHE_USE,
    LATENCY_METRICS_USE,
    TLS_PASSTHROUGH_USE,
    WorkerAccessError,
    WorkerIdentity,
    blocked_directory,
    ensure_worker_access,
    worker_identity,
)


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A directory anyone may traverse, directly under /tmp (pytest's own lies below a 0700 directory)."""
    d = tempfile.mkdtemp(prefix="ic-access-", dir="/tmp")
    os.chmod(d, 0o755)
    try:
        yield Path(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


NOBODY = WorkerIdentity(uid=65534, gid=65534, groups=frozenset({65534}))
MASTER = 4242
WORKER = 4243


def mode(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def stat_of(st_mode: int, uid: int, gid: int) -> os.stat_result:
    return os.stat_result((stat.S_IFDIR | st_mode, 0, 0, 2, uid, gid, 0, 0, 0, 0))


def test_search_permission_is_decided_as_the_kernel_does() -> None:
    # The owner's bits alone count for the owner, even when "other" may search.
    assert not NOBODY.can_search(stat_of(0o601, 65534, 0))
    assert NOBODY.can_search(stat_of(0o100, 65534, 0))
    # A group of the user (primary or supplementary) gets the group bits, and only those.
    assert NOBODY.can_search(stat_of(0o710, 0, 65534))
    assert not NOBODY.can_search(stat_of(0o701, 0, 65534))
    assert WorkerIdentity(65534, 65534, frozenset({33})).can_search(stat_of(0o710, 0, 33))
    # Anyone else: the other bits.
    assert NOBODY.can_search(stat_of(0o711, 0, 0)) and not NOBODY.can_search(stat_of(0o770, 0, 0))
    assert WorkerIdentity(0, 0, frozenset()).can_search(stat_of(0o000, 5, 5))   # root passes


def test_the_first_directory_the_user_cannot_search_is_named(tmp_path: Path) -> None:
    top = tmp_path / "top"
    (top / "conf" / "secrets").mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    os.chmod(top, 0o700)
    blocked = blocked_directory(str(top / "conf" / "secrets"), NOBODY)
    assert blocked is not None and blocked.path == str(top) and blocked.mode == 0o700
    assert blocked.describe().startswith(f"{top} (mode 0700, owner ")
    os.chmod(top, 0o711)
    assert blocked_directory(str(top / "conf" / "secrets"), NOBODY) is None
    assert blocked_directory(str(top / "missing" / "dir"), NOBODY) is None   # nothing to reach yet


def fake_proc(root: Path, *, uid: str = "0\t65534\t65534\t65534", gid: str = "0\t65534\t65534\t65534",
              groups: str = "65534 33") -> str:
    """A /proc with a master and one current worker whose status has these Uid, Gid and Groups lines."""
    task = root / str(MASTER) / "task" / str(MASTER)
    task.mkdir(parents=True)
    (task / "children").write_text(f"{WORKER} ")
    worker = root / str(WORKER)
    worker.mkdir()
    (worker / "cmdline").write_bytes(b"nginx: worker process\0\0")
    (worker / "stat").write_text(f"{WORKER} (nginx) S {MASTER} " + " ".join(["0"] * 18) + " 777 0 0\n")
    (worker / "status").write_text(f"Name:\tnginx\nUid:\t{uid}\nGid:\t{gid}\nGroups:\t{groups}\n")
    return str(root)


def test_a_workers_identity_is_its_filesystem_ids_and_groups(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, uid="0\t33\t33\t33", gid="0\t33\t33\t44", groups="33 44 100")
    assert worker_identity(MASTER, proc) == WorkerIdentity(33, 44, frozenset({33, 44, 100}))
    assert worker_identity(MASTER + 1, proc) is None   # another master: no worker
    (tmp_path / str(WORKER) / "status").write_text("Name:\tnginx\n")
    assert worker_identity(MASTER, proc) is None        # unreadable status: no guess


def layout(tmp_path: Path, *, top_mode: int) -> RuntimePaths:
    top = tmp_path / "top"
    for d in ("conf/secrets", "run"):
        (top / d).mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    os.chmod(top, top_mode)
    os.chmod(top / "conf", 0o700)
    os.chmod(top / "conf" / "secrets", 0o711)
    os.chmod(top / "run", 0o700)
    return RuntimePaths(str(top / "conf"), str(top / "run"))


def test_the_controllers_own_directories_are_made_traversable_and_nothing_above_them(tmp_path: Path) -> None:
    paths = layout(tmp_path / "t", top_mode=0o751)
    proc = fake_proc(tmp_path / "proc")
    ensure_worker_access(paths, MASTER, proc_root=proc)
    assert mode(paths.conf_dir) == 0o711 and mode(paths.run_dir) == 0o711   # search added, no listing
    assert mode(paths.secrets_dir) == 0o711
    assert mode(os.path.dirname(paths.conf_dir)) == 0o751                   # not ours: untouched


def test_a_blocking_directory_above_them_is_refused_naming_it_the_user_and_what_fails(tmp_path: Path) -> None:
    paths = layout(tmp_path / "t", top_mode=0o700)
    top = os.path.dirname(paths.conf_dir)
    proc = fake_proc(tmp_path / "proc")
    with pytest.raises(WorkerAccessError) as e:
        ensure_worker_access(paths, MASTER, proc_root=proc, tls_passthrough=True, latency_metrics=True,
                             cache_dir=os.path.join(paths.run_dir, "cache"))
    run_problem, conf_problem = str(e.value).split("\n")
    who = "NGINX's workers run as nobody (uid 65534) and cannot traverse"
    assert run_problem.startswith(f"{who} {top} (mode 0700, owner ")
    assert f"(above the run dir {paths.run_dir})" in run_problem
    for use in ("temporary files of request and response bodies", TLS_PASSTHROUGH_USE, LATENCY_METRICS_USE,
                CACHE_USE):
        assert use in run_problem
    assert run_problem.endswith(f"chmod o+x {top}) or pass --nginx-run-dir with a directory it can reach")
    assert conf_problem.startswith(f"{who} {top} (mode 0700, owner ")
    assert f"(above the conf dir {paths.conf_dir})" in conf_problem
    assert "basic-auth user files" in conf_problem
    assert "TLS passthrough" not in conf_problem
    assert mode(top) == 0o700


def test_a_directory_the_workers_group_may_search_is_no_problem(tmp_path: Path) -> None:
    paths = layout(tmp_path / "t", top_mode=0o710)   # group: ours, which the fake worker is a member of
    in_our_group = fake_proc(tmp_path / "proc", groups=f"65534 {os.getegid()}")
    ensure_worker_access(paths, MASTER, proc_root=in_our_group)
    with pytest.raises(WorkerAccessError):
        ensure_worker_access(paths, MASTER, proc_root=fake_proc(tmp_path / "proc2"))


def test_a_cache_directory_outside_the_run_dir_is_checked_on_its_own(tmp_path: Path) -> None:
    paths = layout(tmp_path / "t", top_mode=0o711)
    cache = tmp_path / "cache" / "nginx"
    cache.mkdir(parents=True)
    os.chmod(tmp_path / "cache", 0o700)
    with pytest.raises(WorkerAccessError, match=r"\(above the cache directory .*zones of cache") as e:
        ensure_worker_access(paths, MASTER, proc_root=fake_proc(tmp_path / "proc"), cache_dir=str(cache))
    assert "\n" not in str(e.value)   # the conf and run dirs are reachable


def test_without_a_worker_to_read_nothing_is_changed_or_refused(tmp_path: Path) -> None:
    paths = layout(tmp_path / "t", top_mode=0o700)
    ensure_worker_access(paths, MASTER, proc_root=str(tmp_path / "empty-proc"))
    assert mode(paths.run_dir) == 0o700
