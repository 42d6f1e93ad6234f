"""configs.prerender: results of forked renders are exactly what the render returned, in order; a render that
raises, a child that dies or sends what cannot be unpickled costs only that item or share; the collector is
unfrozen after; the process count follows the CPUs and the cgroup's CPU limit."""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ingressctl.configs import prerender
from ingressctl.configs.prerender import RenderAheadStats, render_ahead, startup_processes
from tests.helpers import wait_until

ITEMS = list(range(300))


def square_with_pid(i: int) -> tuple[int, int]:
    return i * i, os.getpid()


@pytest.fixture(autouse=True)
def exact_shares(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Shares exactly as the costs say, and none taken back (so a test knows each child's share); a test of
    taking back calls the returned function to have it again."""
    take_back, bias = prerender._take_back, prerender.CHILD_SHARE_BIAS
    monkeypatch.setattr(prerender, "_take_back", lambda *args: 0)
    monkeypatch.setattr(prerender, "CHILD_SHARE_BIAS", 1.0)

    def restore() -> None:
        monkeypatch.setattr(prerender, "_take_back", take_back)
        monkeypatch.setattr(prerender, "CHILD_SHARE_BIAS", bias)

    return restore


def ahead(items: list[int], render: Callable[[int], Any], **kw: Any) -> list[Any]:
    """render_ahead with the shares sized by the given costs (nothing measured) unless `measure` is given."""
    kw.setdefault("measure", 0)
    pairs = render_ahead(iter(items), len(items), render, **kw)
    assert [item for item, _ in pairs] == items, "every item comes back, in order"
    return [result for _, result in pairs]


@pytest.mark.parametrize("processes", [2, 3])
def test_results_are_the_renders_in_order_and_children_render_their_shares(processes: int) -> None:
    stats = RenderAheadStats()
    results = ahead(ITEMS, square_with_pid, processes=processes, stats=stats)
    assert [r[0] for r in results] == [i * i for i in ITEMS]
    me = os.getpid()
    pids = [r[1] for r in results]
    size = len(ITEMS) // processes  # equal costs: equal shares, this process's last
    assert pids[-size:] == [me] * size and me not in pids[:-size]
    assert len(set(pids)) == processes, "each child renders a share in a process of its own"
    assert stats.processes == processes and stats.lost_shares == 0
    assert stats.by_children == len(ITEMS) - size
    assert stats.child_private_bytes > 0
    assert gc.get_freeze_count() > 0, "what was alive at the fork is frozen"


def test_a_render_that_raises_comes_back_none_in_every_process() -> None:
    def render(i: int) -> int:
        if i % 7 == 0:
            raise ValueError(f"bad {i}")
        return i

    assert ahead(ITEMS, render, processes=2) == [None if i % 7 == 0 else i for i in ITEMS]


def test_a_child_that_dies_costs_only_its_share() -> None:
    parent = os.getpid()

    def render(i: int) -> int:
        if os.getpid() != parent and i == 101:
            os._exit(3)  # a crash in the middle of the child's share
        return i

    stats = RenderAheadStats()
    assert ahead(ITEMS, render, processes=2, stats=stats) == [None] * 150 + ITEMS[150:]
    assert stats.lost_shares == 1 and stats.by_children == 0 and stats.lost_reasons == ["exit status 3"]


def test_a_result_that_cannot_be_pickled_costs_its_childs_share() -> None:
    results = ahead(ITEMS, lambda i: threading.Lock() if i == 5 else i, processes=2)
    assert results == [None] * 150 + ITEMS[150:]


def test_too_few_items_or_one_process_renders_nothing_ahead() -> None:
    stats = RenderAheadStats()
    assert ahead(ITEMS[:10], square_with_pid, processes=2, stats=stats) == [None] * 10
    assert ahead(ITEMS, square_with_pid, processes=1, stats=stats) == [None] * len(ITEMS)
    assert stats.processes == 1 and stats.by_children == 0
    assert None not in ahead(ITEMS[:10], square_with_pid, processes=2, min_items=5)


def test_a_child_renders_while_the_rest_is_still_being_pulled(tmp_path: Path) -> None:
    """Each child is forked once its share is pulled: it renders while this process builds the rest."""
    marker = tmp_path / "child-started"

    def render(i: int) -> int:
        if i == 0:
            marker.write_text(str(os.getpid()))
        return i

    def items() -> Iterator[int]:
        for i in ITEMS:
            if i == len(ITEMS) - 1:  # the last item is pulled only once the child has rendered
                wait_until(marker.exists, "the child's first render, before the last item was pulled")
            yield i

    pairs = render_ahead(items(), len(ITEMS), render, processes=2, measure=0)
    assert [r for _, r in pairs] == ITEMS and int(marker.read_text()) != os.getpid()


def test_the_shares_are_sized_by_what_the_first_items_cost_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first items are built, rendered and in_child-ed here, timed (all but the very first, which may
    pay one-time costs); the children's shares follow from those costs, not from the given estimates."""
    now = [0.0]
    clock = SimpleNamespace(perf_counter=lambda: now[0], monotonic=time.monotonic)
    monkeypatch.setattr(prerender, "time", clock)

    def items() -> Iterator[int]:
        for i in ITEMS:
            now[0] += 0.5     # building an item: half a render
            yield i

    def render(i: int) -> int:
        now[0] += 100.0 if i == 0 else 1.0
        return i

    def write(i: int, result: int) -> int:
        now[0] += 1.0         # a child's item costs two renders
        return result

    stats = RenderAheadStats()
    pairs = render_ahead(items(), len(ITEMS), render, processes=2, in_child=write, measure=10,
                         child_cost=1.0, prepare_cost=0.0, stats=stats)
    assert [r for _, r in pairs] == ITEMS
    assert (stats.child_cost, stats.prepare_cost) == (2.0, 0.5)
    [share] = prerender._child_shares(len(ITEMS) - 10, 2, 2.0, 0.5)
    assert stats.child_ranges == [range(10, 10 + share)] and stats.by_children == share
    assert share != prerender._child_shares(len(ITEMS) - 10, 2, 1.0, 0.0)[0]
    # A measure caught in a pause is bounded.
    def slow_write(i: int, result: int) -> int:
        now[0] += 50.0
        return result

    stats = RenderAheadStats()
    render_ahead(items(), len(ITEMS), render, processes=2, in_child=slow_write, measure=10, stats=stats)
    assert stats.child_cost == prerender.MAX_COST
    # At most 1/16 of the items are measured.
    stats = RenderAheadStats()
    render_ahead(items(), len(ITEMS), render, processes=2, in_child=write, measure=1000, stats=stats)
    assert stats.child_ranges[0].start == len(ITEMS) // 16


def test_children_leave_without_running_this_process_exit_handlers(tmp_path: Path) -> None:
    """A child leaves with os._exit: nothing of this process (atexit, buffered output) runs twice."""
    marker = tmp_path / "atexit"
    import atexit

    def handler() -> None:  # would run in a child that left through sys.exit
        marker.write_text("ran")

    atexit.register(handler)
    try:
        ahead(ITEMS, lambda i: i, processes=2)
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
    """What in_child returns is the item's result (e.g. the render with a record of the file written)."""
    def write(i: int, result: int) -> int:
        if i == 50:
            raise OSError("disk full")
        (tmp_path / f"{i}-{os.getpid()}").write_text(str(result))
        return result + 1

    stats = RenderAheadStats()
    results = ahead(ITEMS, lambda i: i * 2, processes=2, in_child=write, stats=stats)
    written = {int(p.name.split("-")[0]): int(p.name.split("-")[1]) for p in tmp_path.iterdir()}
    assert sorted(written) == [i for i in range(150) if i != 50]  # only the child's share
    assert os.getpid() not in written.values()
    assert results == [None if i == 50 else i * 2 + 1 if i < 150 else i * 2 for i in ITEMS]
    assert stats.by_children == 149


@pytest.mark.parametrize(("n", "processes", "child_cost", "prepare_cost"),
                         [(300, 2, 1.0, 0.0), (300, 2, 2.0, 0.0), (10000, 2, 1.9, 0.5), (1000, 3, 1.5, 0.5),
                          (7, 4, 1.0, 0.0), (1000, 4, 1.9, 2.0)])
def test_shares_finish_together(n: int, processes: int, child_cost: float, prepare_cost: float) -> None:
    """Child j starts once its share is built and renders it at `child_cost`; this process builds every item
    and renders the rest: all end at about the same time."""
    children = prerender._child_shares(n, processes, child_cost, prepare_cost)
    assert len(children) == processes - 1 and all(s >= 0 for s in children) and sum(children) <= n
    ends, built = [], 0
    for s in children:
        built += s
        ends.append(prepare_cost * built + child_cost * s)
    ends.append(prepare_cost * n + (n - sum(children)))
    assert max(ends) - min(ends) <= max(child_cost, 1.0) * processes + prepare_cost * processes  # rounding


def test_shares_of_the_start_up_case() -> None:
    assert prerender._child_shares(300, 2, 1.0, 0.0) == [150]
    assert prerender._child_shares(300, 2, 2.0, 0.0) == [100]
    assert prerender._child_shares(10000, 2, 1.9, 0.5) == [4412]


def test_a_stuck_child_is_killed_after_its_grace_and_costs_only_its_share(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """E.g. a lock another thread held at the fork: the child never finishes; this process does not wait for
    it forever."""
    monkeypatch.setattr(prerender, "CHILD_GRACE_SECONDS", 0.5)
    parent = os.getpid()
    lock = threading.Lock()

    def render(i: int) -> int:
        if os.getpid() != parent and i == 3:
            lock.acquire()  # held by this process at the fork: blocks the child for good
        return i

    stats = RenderAheadStats()
    with lock:
        results = ahead(ITEMS, render, processes=2, stats=stats)
    assert results == [None] * 150 + ITEMS[150:]
    assert stats.lost_shares == 1 and stats.lost_reasons == ["not done in time: killed"]


def test_this_process_takes_back_the_end_of_a_late_share(exact_shares: Callable[[], None],
                                                         tmp_path: Path) -> None:
    """Its own share done, this process renders the last items of a child's share that is not done, and the
    child stops before them: every item is rendered once, in one process or the other."""
    exact_shares()
    [planned] = prerender._child_shares(len(ITEMS), 2, prerender.CHILD_SHARE_BIAS, 0.0)
    parent = os.getpid()
    taking_back = tmp_path / "taking-back"

    def render(i: int) -> tuple[int, int]:
        if os.getpid() == parent and i < planned:
            taking_back.touch()             # an item of the child's share, rendered here
        elif os.getpid() != parent and i == 2:
            wait_until(taking_back.exists, "this process taking items back")
        return i * i, os.getpid()

    stats = RenderAheadStats()
    results = ahead(ITEMS, render, processes=2, stats=stats)
    assert [r[0] for r in results] == [i * i for i in ITEMS]
    [theirs] = stats.child_ranges
    # Never the item the child may be rendering: at least its first stays its own.
    assert theirs.start == 0 and 1 <= theirs.stop < planned and stats.taken_back == planned - theirs.stop
    assert {r[1] for r in results[:theirs.stop]} == {next(r[1] for r in results if r[1] != parent)}
    assert all(r[1] == parent for r in results[theirs.stop:])
    assert stats.by_children == theirs.stop and stats.lost_shares == 0


def test_a_stuck_child_costs_only_the_item_it_is_stuck_on_and_those_before(
        exact_shares: Callable[[], None], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With taking back, a child stuck at its 4th item leaves this process to render all the rest; only the
    first four (its results are lost with it) are rendered later, by the caller."""
    exact_shares()
    monkeypatch.setattr(prerender, "CHILD_GRACE_SECONDS", 0.5)
    [planned] = prerender._child_shares(len(ITEMS), 2, prerender.CHILD_SHARE_BIAS, 0.0)
    parent = os.getpid()
    lock = threading.Lock()
    stuck = tmp_path / "stuck"

    def render(i: int) -> int:
        if os.getpid() != parent and i == 3:
            stuck.touch()
            lock.acquire()  # held by this process at the fork: blocks the child for good
        elif i == planned:  # this process's first item: once the child is stuck
            wait_until(stuck.exists, "the child stuck at its 4th item")
        return i

    stats = RenderAheadStats()
    with lock:
        results = ahead(ITEMS, render, processes=2, stats=stats)
    assert results == [None] * 4 + ITEMS[4:]
    assert stats.lost_shares == 1 and stats.taken_back == planned - 4 and stats.child_ranges == [range(0, 4)]


def test_when_pulling_fails_the_children_are_killed_and_reaped() -> None:
    parent = os.getpid()
    lock = threading.Lock()

    def render(i: int) -> int:
        if os.getpid() != parent:
            lock.acquire()  # every child is stuck
        return i

    def items() -> Iterator[int]:
        yield from ITEMS[:200]
        raise RuntimeError("a bug while building an item")

    with lock, pytest.raises(RuntimeError, match="a bug"):
        render_ahead(items(), len(ITEMS), render, processes=3)


def test_taking_back_never_loses_a_share(exact_shares: Callable[[], None]) -> None:
    """The child and this process race over the child's limit while items are taken back: the child must
    never read a limit lower than any this process wrote (a write through struct.pack_into first zeroed the
    word, and a child reading that 0 stopped one item short: its whole share was dropped in ~1 run in 5)."""
    exact_shares()
    parent = os.getpid()

    def render(i: int) -> int:
        n = 300 if os.getpid() != parent else 200  # the child a little slower: this process takes back
        while n:
            n -= 1
        return i

    lost: list[str] = []
    taken = 0
    for _ in range(40):
        stats = RenderAheadStats()
        results = ahead(list(range(3000)), render, processes=2, stats=stats)
        assert results == list(range(3000))
        lost += stats.lost_reasons
        taken += stats.taken_back
    assert lost == [] and taken > 0
