"""Rendering ahead, in parallel, at start-up: the render of thousands of resources is pure CPU work in Python,
so one thread renders no faster than one core. `render_ahead` splits it over forked processes.

Guarantees:
- `render_ahead(items, count, render, processes=P)` returns every item `items` yields, in order, with what
  `render(item)` returned, or None where `render` raised or its share was lost. None means "not rendered
  ahead": the caller renders that item itself, in its normal path, where errors are logged and reported as
  usual. A result is never made up: each one is exactly what `render` (then `in_child`, if given) returned
  for that item (a copy, by pickle, from a child).
- With P >= 2 (and `os.fork`), P - 1 children forked from this process render a contiguous share each while
  the calling thread renders its own (the first few, which it times, and the last). Items are pulled from
  `items` in order (pulling may build them), and each child is forked as soon as its share is pulled, so
  children render while this process still builds the rest. Shares are sized so that all finish together,
  by what the first items cost here (built, rendered and `in_child`-ed in this process, timed, before any
  fork). Children share this process's memory copy-on-write, so the inputs are not copied; each child
  sends its results back pickled through a pipe.
- Its own share done, this process takes back the end of a child's share that is not done, item by item
  (a limit in memory shared with the child, which checks it before each item); the child's result for an
  item taken back is not used. So a child slower than measured, or stuck, delays the end by about one item
  of its own, not by the rest of its share; the shares are sized a little large for that
  (`CHILD_SHARE_BIAS`).
- Children are `forked.ForkedCall`s: a child only renders, runs `in_child` and sends; it never logs or
  touches locks that another thread of this process may have held at the fork (the render path takes none).
  A child that crashes, is killed, sends something that cannot be unpickled, or is not done long after this
  process (`CHILD_GRACE_*`; it is then killed) costs only the parallelism: its share comes back None. The
  parent always reaps its children.
- `render` must be pure (its effects in a child are lost) and return something picklable. `in_child`, run
  in a child after each of its renders (and here on the items timed), is where a child may act outside its
  memory (write the item's file); what it returns is the item's result (e.g. the render with a record of
  the file written). It must take no lock another thread may hold.
- `startup_processes()` is the number of processes worth using: the CPUs this process may run on, capped by
  a cgroup (v2 `cpu.max`, v1 `cpu.cfs_quota_us`) CPU limit and by `MAX_PROCESSES`.
"""

from __future__ import annotations

import itertools
import math
import mmap
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from ingressctl.forked import ForkedCall, private_bytes

T = TypeVar("T")
R = TypeVar("R")
# What a child sends back: its results (None where one raised), its private memory (bytes) and when it was
# done (time.monotonic, which is system-wide).
_ChildResults = tuple[list[object], int, float]

MAX_PROCESSES = 4
MIN_ITEMS = 200          # fewer items than this are rendered inline: a fork costs more than it saves
MEASURED_ITEMS = 64      # at most this many items are timed here, before any fork, to size the shares
MAX_COST = 4.0           # the most a measured cost (relative to a render) is taken for
# The children's shares are sized as if an item cost them this fraction of what was measured, i.e. a
# little too large: this process takes back the end of a share that is late, but cannot help a child that
# is done early.
CHILD_SHARE_BIAS = 0.9
# A child gets this long, or this many times what this process took for its own share (whichever is more),
# after this process's share is done; then it is killed and its share is rendered here.
CHILD_GRACE_SECONDS = 10.0
CHILD_GRACE_FACTOR = 4.0
_CGROUP_V2_CPU_MAX = "/sys/fs/cgroup/cpu.max"
_CGROUP_V1_QUOTA = "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"
_CGROUP_V1_PERIOD = "/sys/fs/cgroup/cpu/cpu.cfs_period_us"


@dataclass
class RenderAheadStats:
    """What one `render_ahead` did: processes used, items rendered by children, shares lost, and the most
    memory a child had of its own when it finished (bytes, 0 when unknown): the pages it did not share with
    this process, i.e. what it added to the pod's memory."""

    processes: int = 1
    by_children: int = 0
    lost_shares: int = 0
    lost_reasons: list[str] = field(default_factory=list)  # why each lost share was lost
    child_private_bytes: int = 0
    waited_seconds: float = 0.0     # after rendering its own share, for the children's results
    unpickle_seconds: float = 0.0
    # How much earlier than this process (its own share done) the last child finished its share; negative:
    # later. Near 0 when the shares are sized right.
    children_ahead_seconds: float = 0.0
    child_cost: float = 0.0         # the costs the shares were sized by (measured, or given)
    prepare_cost: float = 0.0
    child_ranges: list[range] = field(default_factory=list)  # the indexes each child rendered (its share)
    taken_back: int = 0             # items of the children's shares this process rendered, theirs done


def render_ahead(items: Iterable[T], count: int, render: Callable[[T], R], *, processes: int,
                 min_items: int = MIN_ITEMS, in_child: Callable[[T, R], R] | None = None,
                 measure: int = MEASURED_ITEMS, child_cost: float = 1.0, prepare_cost: float = 0.0,
                 stats: RenderAheadStats | None = None) -> list[tuple[T, R | None]]:
    """See the module docstring. `items` yields about `count` items; pulling one may be work of its own
    (building it). Returns every item pulled, in order, with its result. With fewer than `min_items` items,
    or one process, nothing is rendered ahead (all None). `in_child(item, result)` runs in the child after
    each of its renders (e.g. to write the item's file there, in parallel) and returns the item's result to
    send back; when it raises, that item comes back None.
    The shares are sized by what items cost: the first `measure` items (at most 1/16 of `count`) are
    built, rendered and `in_child`-ed here, timed, before any fork; with `measure=0` (or nothing measured),
    by `child_cost` (what an item costs a child, `in_child` included) and `prepare_cost` (building one),
    relative to a render here."""
    stats = stats if stats is not None else RenderAheadStats()
    processes = max(1, min(processes, count))
    if processes < 2 or count < min_items or not hasattr(os, "fork"):
        return [(item, None) for item in items]
    pulled = iter(items)
    out: list[tuple[T, R | None]] = []
    started = time.monotonic()
    measured = _measure(pulled, min(measure, count // 16), render, in_child, out)
    if measured is not None:
        child_cost, prepare_cost = measured
    stats.child_cost, stats.prepare_cost = child_cost, prepare_cost
    child_sizes = _child_shares(count - len(out), processes, child_cost * CHILD_SHARE_BIAS, prepare_cost)
    children: list[tuple[int, ForkedCall[_ChildResults]]] = []   # (index of its first item, its call)
    progress = _Progress(len(child_sizes))
    try:
        for size in child_sizes:
            first = len(out)
            out.extend((item, None) for item in itertools.islice(pulled, size))
            if len(out) == first:
                break
            progress.set_limit(len(children), len(out) - first)
            child = _fork_child([item for item, _ in out[first:]], render, in_child, progress, len(children))
            if child is None:
                stats.lost_shares += 1
            else:
                children.append((first, child))
        stats.processes = 1 + len(children)
        for item in pulled:
            out.append((item, _render_here(render, item)))
        stats.taken_back = _take_back([first for first, _ in children], progress, out, render)
        stats.child_ranges = [range(first, first + progress.limit(c))
                              for c, (first, _) in enumerate(children)]
        own_done = time.monotonic()
        own = own_done - started
        deadline = own_done + max(CHILD_GRACE_SECONDS, CHILD_GRACE_FACTOR * own)
        last_child_done = -math.inf
        for c, (first, call) in enumerate(children):
            t0 = time.monotonic()
            got, why = call.result(deadline)  # stuck (e.g. a lock taken at the fork): rendered here later
            stats.waited_seconds += time.monotonic() - t0 - call.unpickle_seconds
            stats.unpickle_seconds += call.unpickle_seconds
            results, private, done = got if got is not None else ([], 0, None)
            limit = progress.limit(c)
            if not why and len(results) < limit:
                why = f"{len(results)} results for {limit} items"
            if why:
                stats.lost_shares += 1
                stats.lost_reasons.append(why)
                continue
            for i, result in enumerate(results[:limit], first):  # past the limit: taken back, rendered here
                out[i] = (out[i][0], cast("R | None", result))
            stats.by_children += sum(r is not None for r in results[:limit])
            stats.child_private_bytes = max(stats.child_private_bytes, private)
            if done is not None:
                last_child_done = max(last_child_done, done)
        if last_child_done > -math.inf:
            stats.children_ahead_seconds = own_done - last_child_done
    finally:
        for _, call in children:
            call.close()  # this process failed before it took the child's results: kill and reap
        progress.close()
    return out


def _render_here(render: Callable[[T], R], item: T) -> R | None:
    try:
        return render(item)
    except Exception:
        return None


class _Progress:
    """Per child, in memory shared with the children: how many items of its share it may render (its limit,
    lowered by this process to take items back) and how many it has rendered. Aligned 32-bit words, each
    read and written with one load or store through a memoryview (`struct.pack_into` would zero the word
    before writing it: a reader could see 0 in between)."""

    def __init__(self, children: int) -> None:
        self._map = mmap.mmap(-1, max(1, children) * 8)  # anonymous and shared: children see the same pages
        self._words = memoryview(self._map).cast("i")

    def limit(self, child: int) -> int:
        return self._words[2 * child]

    def set_limit(self, child: int, value: int) -> None:
        self._words[2 * child] = value

    def done(self, child: int) -> int:
        return self._words[2 * child + 1]

    def set_done(self, child: int, value: int) -> None:
        self._words[2 * child + 1] = value

    def close(self) -> None:
        self._words.release()
        self._map.close()


def _take_back(firsts: Sequence[int], progress: _Progress, out: list[tuple[T, R | None]],
               render: Callable[[T], R]) -> int:
    """This process's share done, render the last items of the children still busy, one at a time from the
    end of the share with the most left, lowering its limit first; stop when no child has an item left past
    the one it may be rendering. A child may still render an item taken back (it read the old limit): its
    result is not used. Returns how many items were taken back."""
    taken = 0
    while True:
        best, most = -1, 0
        for c in range(len(firsts)):
            left = progress.limit(c) - progress.done(c) - 1  # past the item it may be rendering
            if left > most:
                best, most = c, left
        if best < 0:
            return taken
        limit = progress.limit(best) - 1
        progress.set_limit(best, limit)
        i = firsts[best] + limit
        out[i] = (out[i][0], _render_here(render, out[i][0]))
        taken += 1


def _measure(pulled: Iterator[T], n: int, render: Callable[[T], R], in_child: Callable[[T, R], R] | None,
             out: list[tuple[T, R | None]]) -> tuple[float, float] | None:
    """Build, render and `in_child` the next `n` items here, appending each with its result to `out`;
    returns (child cost, prepare cost) relative to a render, from the items after the first (which may pay
    for one-time work, e.g. a template's first use), or None if there was nothing to measure."""
    prepare = rendering = extra = 0.0
    t0 = time.perf_counter()
    for i, item in zip(range(n), pulled, strict=False):  # `range` first: nothing pulled past the n-th
        t1 = time.perf_counter()
        try:
            result = render(item)
            t2 = time.perf_counter()
            if in_child is not None:
                result = in_child(item, result)
        except Exception:
            out.append((item, None))
            t0 = time.perf_counter()
            continue
        t3 = time.perf_counter()
        out.append((item, result))
        if i:
            prepare, rendering, extra = prepare + t1 - t0, rendering + t2 - t1, extra + t3 - t2
        t0 = t3
    if rendering <= 0:
        return None
    # A measure this short can catch a pause (another thread holding the interpreter): bounded, the shares
    # stay sane.
    return min((rendering + extra) / rendering, MAX_COST), min(prepare / rendering, MAX_COST)


def _child_shares(n: int, processes: int, child_cost: float, prepare_cost: float) -> list[int]:
    """How many of `n` items each child renders; this process renders the rest, after building every item.
    Child j starts once its share is built, so that all finish together: with T the common finish time (in
    renders), child j ends at prepare_cost * (items up to its share's end) + child_cost * s_j = T, and this
    process at prepare_cost * n + s_0 = T."""
    p, c = max(prepare_cost, 0.0), max(child_cost, 1e-9)

    def sizes(t: float) -> list[float]:
        out: list[float] = []
        built = 0.0
        for _ in range(processes - 1):
            s = max(0.0, (t - p * built) / (p + c))
            out.append(s)
            built += s
        return out

    low, high = 0.0, (p + 1.0) * n
    for _ in range(60):  # the total grows with t: bisect to the t at which the shares add up to n
        t = (low + high) / 2
        if sum(sizes(t)) + max(0.0, t - p * n) > n:
            high = t
        else:
            low = t
    children = [round(x) for x in sizes(low)]
    while sum(children) > n:
        children[children.index(max(children))] -= 1
    return children


def _fork_child(share: Sequence[T], render: Callable[[T], R], in_child: Callable[[T, R], R] | None,
                progress: _Progress, index: int) -> ForkedCall[_ChildResults] | None:
    """Fork a child that renders the items of `share`, in order, up to its limit in `progress` (slot
    `index`), counting them there; None if the fork failed."""

    def run() -> _ChildResults:
        out: list[object] = []
        for i, item in enumerate(share):
            if i >= progress.limit(index):  # the rest was taken back
                break
            try:
                result = render(item)
                if in_child is not None:
                    result = in_child(item, result)
            except Exception:
                out.append(None)
            else:
                out.append(result)
            progress.set_done(index, i + 1)
        # CLOCK_MONOTONIC is the system's: the parent compares when this child finished with its own end.
        return out, private_bytes(), time.monotonic()

    return ForkedCall.start(run)


def startup_processes() -> int:
    """See the module docstring."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    limit = _cgroup_cpu_limit()
    if limit is not None:
        cpus = min(cpus, max(1, math.ceil(limit)))
    return max(1, min(cpus, MAX_PROCESSES))


def _cgroup_cpu_limit() -> float | None:
    """The CPU limit of this process's cgroup in CPUs, or None without one."""
    try:
        with open(_CGROUP_V2_CPU_MAX) as f:
            quota, _, period = f.read().strip().partition(" ")
        if quota == "max":
            return None
        return int(quota) / int(period or 100000)
    except (OSError, ValueError):
        pass
    try:
        with open(_CGROUP_V1_QUOTA) as f:
            quota_us = int(f.read())
        with open(_CGROUP_V1_PERIOD) as f:
            period_us = int(f.read())
    except (OSError, ValueError):
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None
