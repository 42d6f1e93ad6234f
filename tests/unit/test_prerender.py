"""configs.prerender: results of forked renders are exactly what the render returned, in order; a render that
raises, a child that dies or sends what cannot be unpickled costs only that item or share; the collector is
unfrozen after; the process count follows the CPUs and the cgroup's CPU limit."""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path

import pytest

from ingressctl.configs import prerender
from ingressctl.configs.prerender import RenderAheadStats, render_ahead, startup_processes

ITEMS = list(range(300))


def square_with_pid(i: int) -> tuple[int, int]:
    return i * i, os.getpid()


@pytest.mark.parametrize("processes", [2, 3])
def test_results_are_the_renders_in_order_and_children_render_their_shares(processes: int) -> None:
    stats = RenderAheadStats()
    results = render_ahead(ITEMS, square_with_pid, processes=processes, stats=stats)
    assert [r[0] for r in results if r is not None] == [i * i for i in ITEMS]
    me = os.getpid()
    pids = [r[1] for r in results if r is not None]
    first = len(ITEMS) // processes
    assert pids[:first] == [me] * first and me not in pids[first:]  # this process: the first share
    assert len(set(pids)) == processes, "each child renders a share in a process of its own"
    assert stats.processes == processes and stats.lost_shares == 0
    assert stats.by_children == len(ITEMS) - len(ITEMS) // processes
    assert stats.child_private_bytes > 0
    assert gc.get_freeze_count() == 0


def test_a_render_that_raises_comes_back_none_in_every_process() -> None:
    def render(i: int) -> int:
        if i % 7 == 0:
            raise ValueError(f"bad {i}")
        return i

    results = render_ahead(ITEMS, render, processes=2)
    assert results == [None if i % 7 == 0 else i for i in ITEMS]


def test_a_child_that_dies_costs_only_its_share() -> None:
    parent = os.getpid()

    def render(i: int) -> int:
        if os.getpid() != parent and i == 201:
            os._exit(3)  # a crash in the middle of the child's share
        return i

    stats = RenderAheadStats()
    results = render_ahead(ITEMS, render, processes=2, stats=stats)
    assert results == [i if i < 150 else None for i in ITEMS]
    assert stats.lost_shares == 1 and stats.by_children == 0


def test_a_result_that_cannot_be_pickled_costs_its_childs_share() -> None:
    results = render_ahead(ITEMS, lambda i: threading.Lock() if i == 205 else i, processes=2)
    assert results == ITEMS[:150] + [None] * 150


def test_too_few_items_or_one_process_renders_nothing_ahead() -> None:
    stats = RenderAheadStats()
    assert render_ahead(ITEMS[:10], square_with_pid, processes=2, stats=stats) == [None] * 10
    assert render_ahead(ITEMS, square_with_pid, processes=1, stats=stats) == [None] * len(ITEMS)
    assert stats.processes == 1 and stats.by_children == 0
    assert render_ahead(ITEMS[:10], square_with_pid, processes=2, min_items=5)[1] is not None


def test_children_leave_without_running_this_process_exit_handlers(tmp_path: Path) -> None:
    """A child leaves with os._exit: nothing of this process (atexit, buffered output) runs twice."""
    marker = tmp_path / "atexit"
    import atexit

    def handler() -> None:  # would run in a child that left through sys.exit
        marker.write_text("ran")

    atexit.register(handler)
    try:
        render_ahead(ITEMS, lambda i: i, processes=2)
    finally:
        atexit.unregister(handler)
    assert not marker.exists()


@pytest.mark.parametrize(("cpu_max", "expected"), [
    ("max 100000", None),          # no limit: the CPUs we may run on, up to MAX_PROCESSES
    ("50000 100000", 1),           # half a CPU: render inline
    ("100000 100000", 1),
    ("150000 100000", 2),          # 1.5 CPUs: two processes
])
def test_startup_processes_follow_the_cgroup_cpu_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        cpu_max: str, expected: int | None) -> None:
    f = tmp_path / "cpu.max"
    f.write_text(cpu_max + "\n")
    monkeypatch.setattr(prerender, "_CGROUP_V2_CPU_MAX", str(f))
    cpus = min(len(os.sched_getaffinity(0)), prerender.MAX_PROCESSES)
    assert startup_processes() == (cpus if expected is None else min(cpus, expected))


def test_startup_processes_read_a_cgroup_v1_quota(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "quota").write_text("50000\n")
    (tmp_path / "period").write_text("100000\n")
    monkeypatch.setattr(prerender, "_CGROUP_V2_CPU_MAX", str(tmp_path / "absent"))
    monkeypatch.setattr(prerender, "_CGROUP_V1_QUOTA", str(tmp_path / "quota"))
    monkeypatch.setattr(prerender, "_CGROUP_V1_PERIOD", str(tmp_path / "period"))
    assert startup_processes() == 1
    (tmp_path / "quota").write_text("-1\n")  # no limit
    assert startup_processes() == min(len(os.sched_getaffinity(0)), prerender.MAX_PROCESSES)


def test_in_child_runs_in_the_child_for_its_share_and_a_failure_costs_that_item(tmp_path: Path) -> None:
    def write(i: int, result: int) -> None:
        if i == 250:
            raise OSError("disk full")
        (tmp_path / f"{i}-{os.getpid()}").write_text(str(result))

    stats = RenderAheadStats()
    results = render_ahead(ITEMS, lambda i: i * 2, processes=2, in_child=write, stats=stats)
    written = {int(p.name.split("-")[0]): int(p.name.split("-")[1]) for p in tmp_path.iterdir()}
    assert sorted(written) == [i for i in range(150, 300) if i != 250]  # only the child's share
    assert os.getpid() not in written.values()
    assert results == [None if i == 250 else i * 2 for i in ITEMS]
    assert stats.by_children == 149


@pytest.mark.parametrize(("n", "processes", "cost"),
                         [(300, 2, 1.0), (300, 2, 2.0), (1000, 3, 1.5), (7, 4, 1.0)])
def test_shares_cover_every_item_once_and_children_get_less_when_they_cost_more(
        n: int, processes: int, cost: float) -> None:
    shares = prerender._shares(n, processes, cost)
    assert len(shares) == processes and [i for s in shares for i in s] == list(range(n))
    if cost > 1:
        assert all(len(s) < len(shares[0]) for s in shares[1:])
    assert len(prerender._shares(300, 2, 2.0)[1]) == 100
