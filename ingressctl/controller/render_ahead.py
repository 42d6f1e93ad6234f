"""Rendering ahead at start-up: the renderer input of every resource whose builder can build it ahead
(`PreparingBuilder.prepare`), rendered in parallel processes by the Configurator (`configs.prerender`).

Guarantees:
- `render_ahead(...)` does nothing with fewer than two processes or `MIN_ITEMS` resources; otherwise the
  Configurator forks each share as soon as it is built, and the sync thread's `_apply` then takes the results
  instead of rendering. A failure here only costs the parallelism: `_apply` builds and renders whatever was
  not done ahead. The phase's time and what the other processes rendered are recorded in `SyncStats`.
- `drop_prepared(kinds)` lets every builder forget what it built ahead (after the start-up render).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

from ingressctl.configs.prerender import MIN_ITEMS, RenderAheadStats
from ingressctl.controller.kinds import KindRegistry, PreparingBuilder
from ingressctl.controller.model import Resource
from ingressctl.controller.options import SyncStats
from ingressctl.keys import ResourceKey
from ingressctl.logging import get_logger

log = get_logger(__name__)


class RenderingAhead(Protocol):
    def render_ahead(self, items: Iterable[tuple[ResourceKey, object]], count: int, *,
                     processes: int) -> RenderAheadStats: ...


def render_ahead(kinds: KindRegistry, resources: Sequence[Resource], configurator: RenderingAhead,
                 processes: int, sync_stats: SyncStats) -> None:
    """See the module docstring."""
    preparers = {k.name: k.builder for k in kinds if isinstance(k.builder, PreparingBuilder)}
    count = sum(1 for res in resources if res.key_with_kind.kind in preparers)
    if processes < 2 or count < MIN_ITEMS:
        return
    t0, c0 = time.monotonic(), time.thread_time()

    def prepared() -> Iterator[tuple[ResourceKey, object]]:
        for res in resources:
            key = res.key_with_kind
            builder = preparers.get(key.kind)
            if builder is None:
                continue
            try:
                yield builder.prepare(res)
            except Exception as e:  # `_apply` builds it again and reports the error
                log.exception("error building a resource", resource=str(key), error=str(e))

    stats = configurator.render_ahead(prepared(), count, processes=processes)
    sync_stats.phases["render_ahead"] = time.monotonic() - t0
    sync_stats.rendered_ahead = stats.by_children
    log.info("rendered ahead", resources=count, processes=stats.processes,
             by_other_processes=stats.by_children, lost_shares=stats.lost_shares,
             lost_reasons=stats.lost_reasons or None,
             child_private_mb=round(stats.child_private_bytes / 2**20, 1),
             waited_seconds=round(stats.waited_seconds, 3),
             unpickle_seconds=round(stats.unpickle_seconds, 3),
             children_ahead_seconds=round(stats.children_ahead_seconds, 3),
             child_cost=round(stats.child_cost, 2), prepare_cost=round(stats.prepare_cost, 2),
             seconds=round(time.monotonic() - t0, 3), cpu_seconds=round(time.thread_time() - c0, 3))


def drop_prepared(kinds: KindRegistry) -> None:
    """See the module docstring."""
    for kind in kinds:
        if isinstance(kind.builder, PreparingBuilder):
            kind.builder.drop_prepared()
