"""Changes without reloads: conf.d files whose changes touch only routes and the addresses of dynamic
upstreams, pushed to NGINX's routes and dynamic-peers modules instead of reloading it.

The file engine (configs.files) asks `RouteUpdates.push` to apply its pending changes, each as the file's
text at the last good reload (or push) and its text now (None: no file). The push is planned from the texts
alone, so what NGINX serves afterwards is what a reload of the files would serve.

Guarantees:
- A plan exists only when, in every file, everything but its route blocks (configs.routes) and its upstream
  blocks is unchanged (a new or removed file holds nothing else but comments), every upstream that stays
  changed only in the addresses it serves (configs.dynamic_upstreams), and every new upstream is dynamic and
  can borrow a spare: a spare upstream (conf.d/ingressctl-route-spares.conf) of the same kind (balancing,
  parameters, keepalive) with as many slots as it needs. Otherwise `push` returns False and the file
  engine reloads.
- A borrowed spare serves the new upstream's addresses and the routes that name the upstream are pushed
  naming the spare; later endpoint changes of that upstream go to the spare too. Spares are lent until the
  next successful reload, which loads the real upstream blocks (the files always name them), and are then
  free again.
- The first configuration is loaded by a reload (start-up's, with everything), never pushed.
- Order: upstream addresses first (a spare serves before a route names it), then routes. Routes of a host
  that moves between files in one batch are set once (the file that has it now wins over the one that let
  it go). Any refusal by NGINX returns False: the reload that follows serves the files.
- Not thread-safe: the file engine's sync thread owns it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ingressctl.configs.dynamic_upstreams import UpstreamShape, endpoint_changes, upstream_blocks
from ingressctl.configs.routes import HOST_DIRECTIVE
from ingressctl.logging import get_logger
from ingressctl.nginx.dynamic_peers import DynamicUpdateError
from ingressctl.nginx.routes import RoutesClient

log = get_logger(__name__)

_OPEN = HOST_DIRECTIVE + " "


def split_routes(text: str) -> tuple[dict[str, str], str]:
    """The route blocks of `text` by host (each block's text) and `text` without them."""
    blocks: dict[str, str] = {}
    parts: list[str] = []
    pos = 0
    if text.startswith(_OPEN):
        start = 0
    else:
        start = text.find("\n" + _OPEN)
        start = start + 1 if start >= 0 else -1
    while start >= 0:
        end = text.find("\n}\n", start)
        if end < 0:
            break
        end += 3
        block = text[start:end]
        host = block[len(_OPEN):block.find(" ", len(_OPEN))]
        blocks[host] = block
        parts.append(text[pos:start])
        pos = end
        start = text.find("\n" + _OPEN, end - 1)
        start = start + 1 if start >= 0 else -1
    parts.append(text[pos:])
    return blocks, "".join(parts)


def api_lines(block: str, upstream_of: Callable[[str], str]) -> list[str]:
    """The API's lines for one route block, its upstreams named by `upstream_of`."""
    lines = block.splitlines()
    head = lines[0][len(_OPEN):].removesuffix(" {")
    out = [f"host {head}"]
    for line in lines[1:-1]:
        fields = line.strip().removesuffix(";").split(" ")
        if len(fields) == 6:
            fields[3] = upstream_of(fields[3])
        out.append("route " + " ".join(fields))
    return out


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines())


class _Plan:
    def __init__(self) -> None:
        self.endpoints: dict[str, tuple[str, ...]] = {}
        self.new_upstreams: dict[str, UpstreamShape] = {}
        self.hosts: dict[str, str | None] = {}  # host -> its block now, None: removed

    def add(self, old: str | None, new: str | None) -> bool:
        """Add one file's change; False when it cannot be pushed."""
        old_routes, old_rest = split_routes(old) if old is not None else ({}, "")
        new_routes, new_rest = split_routes(new) if new is not None else ({}, "")
        old_ups, old_skeleton = upstream_blocks(old_rest)
        new_ups, new_skeleton = upstream_blocks(new_rest)
        if old is not None and new is not None:
            if _lines(old_skeleton) != _lines(new_skeleton):  # blank lines between blocks may come and go
                return False
        elif not _only_comments(old_skeleton if old is not None else new_skeleton):
            return False
        for name, (text, shape) in new_ups.items():
            before = old_ups.get(name)
            if before is None:
                if shape is None:
                    return False
                self.new_upstreams[name] = shape
                continue
            if before[0] == text:
                continue
            changed = endpoint_changes(before[0], text)
            if changed is None:
                return False
            self.endpoints.update(changed)
        for host in old_routes.keys() - new_routes.keys():
            self.hosts.setdefault(host, None)
        for host, block in new_routes.items():
            if old_routes.get(host) != block:
                self.hosts[host] = block
        return True


class RouteUpdates:
    """Pushes route and endpoint changes (see the module docstring)."""

    def __init__(self, client: RoutesClient, push_endpoints: Callable[[Mapping[str, tuple[str, ...]]], None],
                 reloads: Callable[[], int]) -> None:
        """`push_endpoints`: the Manager's `update_upstreams`; `reloads`: its count of successful reloads."""
        self.client = client
        self._push_endpoints = push_endpoints
        self._reloads = reloads
        self._spares: dict[str, UpstreamShape] = {}
        self._lent: dict[str, str] = {}  # upstream -> the spare serving it until the next reload
        self._lent_at = -1  # the reload count when the spares were lent
        self.pushes = 0

    def set_spares(self, text: str) -> None:
        """The spare upstream blocks NGINX loads (conf.d/ingressctl-route-spares.conf), rendered."""
        blocks, _ = upstream_blocks(text)
        self._spares = {name: shape for name, (_, shape) in blocks.items() if shape is not None}

    @property
    def free_spares(self) -> int:
        self._expire()
        return len(self._spares) - len(set(self._lent.values()))

    def _expire(self) -> None:
        if self._lent_at != self._reloads():
            self._lent.clear()
            self._lent_at = self._reloads()

    def _lend(self, name: str, shape: UpstreamShape) -> str | None:
        spare = self._lent.get(name)
        if spare is not None:
            return spare if self._spares[spare].slots >= len(shape.addresses) else None
        taken = set(self._lent.values())
        for spare, kind in self._spares.items():
            if spare not in taken and kind.same_kind(shape) and kind.slots >= len(shape.addresses):
                self._lent[name] = spare
                return spare
        return None

    def push(self, changes: Mapping[str, tuple[str | None, str | None]]) -> bool:
        """Apply the files' changes (file name -> (text at the last good reload or push, text now)) without
        a reload; False when they cannot be (nothing was pushed then, or a reload must follow)."""
        self._expire()
        if not self._reloads() or any(name.startswith("stream-conf.d/") for name in changes):
            return False
        plan = _Plan()
        for old, new in changes.values():
            if not plan.add(old, new):
                return False
        lent_before = dict(self._lent)
        servers = {}
        for name, shape in plan.new_upstreams.items():
            spare = self._lend(name, shape)
            if spare is None:
                self._lent = lent_before
                return False
            servers[spare] = shape.addresses
        for name, addresses in plan.endpoints.items():
            servers[self._lent.get(name, name)] = addresses
        body: list[str] = []
        for host, block in plan.hosts.items():
            body += [f"delete {host}"] if block is None else api_lines(block, lambda u: self._lent.get(u, u))
        try:
            if servers:
                self._push_endpoints(servers)
            if body:
                self.client.push("\n".join(body) + "\n")
        except DynamicUpdateError as e:
            log.warning("route update failed; reloading instead", error=str(e), hosts=len(plan.hosts),
                        upstreams=len(servers))
            return False
        self.pushes += 1
        if plan.hosts:
            log.info("nginx routes updated without a reload", hosts=len(plan.hosts), upstreams=len(servers),
                     spares_lent=len(self._lent))
        return True
