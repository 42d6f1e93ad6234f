"""Dynamic upstreams: upstream blocks whose servers NGINX takes without a reload (the dynamic-peers module).

The rendered text of a conf.d file is turned into its dynamic form by `DynamicUpstreams.slot()`: every
eligible upstream gets a fixed number of server slots (the endpoints, then spare slots marked `down`) and the
`ingressctl_dynamic_peers` directive. `endpoint_changes()` then tells whether two versions of a file differ
only in the addresses their dynamic upstreams serve, and which ones: such a change is pushed to NGINX
instead of reloading it.

Guarantees:
- Eligible: an upstream with a `zone` line whose other lines are only `ingressctl_upstream_front` (see
  configs.upstream_front), a built-in load-balancing method,
  `server <ip:port>` lines (or the single "no endpoints" server, `server unix:...-502-server.sock`) that all
  carry the same max_fails / fail_timeout / max_conns, and `keepalive`. Anything else (sticky cookies,
  snippets, host names, no zone) is left as rendered and changes reload NGINX as before.
- The lb-method, max_fails, fail_timeout, max_conns and keepalive of an upstream are exactly those rendered:
  only the number of `server` lines (slots) and the addresses of the slots change.
- Slot counts change rarely: a file's upstream keeps its count while its endpoints fit and the count is at
  most 4 times what they need; otherwise it takes `slots_for(n)` (at least `MIN_SLOTS`, a power of two
  with room for a quarter more endpoints, and at least one more). A new count changes the file's shape, so
  NGINX is reloaded.
- Pure text functions; not thread-safe (the file engine's sync thread owns the slot counts).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from ingressctl.configs.upstream_front import DIRECTIVE as FRONT_DIRECTIVE

DIRECTIVE = "ingressctl_dynamic_peers"
MIN_SLOTS = 2
_MAX_SLACK = 4

_SERVER = re.compile(r"server (\S+) (max_fails=\d+ fail_timeout=\S+ max_conns=\d+)( down)?;")
_LB = re.compile(r"(least_conn|ip_hash|random( two( least_conn)?)?|hash \S+( consistent)?);")
_IP_PORT = re.compile(r"(\d{1,3}(\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\]):\d{1,5}")
_NO_ENDPOINTS = re.compile(r"unix:\S+-502-server\.sock")
_KEEPALIVE = re.compile(r"keepalive \d+;")
_DIRECTIVE_LINE = f"{DIRECTIVE};"
_DIRECTIVE_BODY_LINE = f"    {DIRECTIVE};\n"
_FRONT_LINE = f"{FRONT_DIRECTIVE};"
_PLACEHOLDER = "-"


def slots_for(n: int) -> int:
    """The slot count for `n` endpoints: a power of two, at least MIN_SLOTS, with room for n + n/4 (min 1)."""
    need = n + max(1, n // 4)
    return max(MIN_SLOTS, 1 << (need - 1).bit_length())


def _keep_or_resize(n: int, previous: int) -> int:
    need = slots_for(n)
    if previous and n <= previous <= _MAX_SLACK * need:
        return previous
    return need


class _Upstream(NamedTuple):  # a NamedTuple: one is made per upstream of every file written
    name: str
    start: int  # the block's span in the text
    end: int
    head: tuple[str, ...]  # zone and lb-method lines (as rendered, indented)
    params: str
    addresses: tuple[str, ...]  # served addresses (no spare slots)
    down: tuple[str, ...]  # addresses of spare slots
    tail: tuple[str, ...]  # keepalive
    dynamic: bool  # already carries the directive


# The form the templates render, as one pattern over a block's body: front, zone and lb-method lines, served
# servers (ip:port) with one set of parameters, spare slots with the same, the directive, keepalive. Every
# line it takes is one that `_parse_lines` accepts, in an order it accepts (its character classes are
# ASCII subsets of those of the line patterns), so a body it matches parses the same; it is 4 times as fast.
_TOKEN = "[!-~]+"  # printable ASCII, no space
_IP_PORT_ASCII = r"(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}"
_PARAMS_ASCII = f"max_fails=[0-9]+ fail_timeout={_TOKEN} max_conns=[0-9]+"
_RENDERED = re.compile(
    rf"(?P<front>    {FRONT_DIRECTIVE};\n)?"
    r"(?P<zone>    zone [!-:<-~]+(?: [!-:<-~]+)?;\n)"
    rf"(?P<lb>    (?:least_conn|ip_hash|random(?: two(?: least_conn)?)?|hash {_TOKEN}(?: consistent)?);\n)?"
    rf"(?P<served>    server {_IP_PORT_ASCII} (?P<params>{_PARAMS_ASCII});\n"
    rf"(?:    server {_IP_PORT_ASCII} (?P=params);\n)*)"
    rf"(?P<spare>(?:    server {_TOKEN} (?P=params) down;\n)*)"
    rf"(?P<directive>    {DIRECTIVE};\n)?"
    r"(?P<keepalive>    keepalive [0-9]+;\n)?")
_ADDRESS = re.compile(r"    server (\S+) ")


def _parse(name: str, start: int, end: int, text: str, body: int, body_end: int) -> _Upstream | None:
    """The eligible upstream block `name` whose body is text[body:body_end], or None (see the module
    docstring): one pattern match for the rendered form, the line-by-line rules for any other."""
    m = _RENDERED.fullmatch(text, body, body_end)
    if m is None:
        return _parse_lines(name, start, end, text[body:body_end])
    front, zone, lb, served, params, spare, directive, keepalive = m.group(
        "front", "zone", "lb", "served", "params", "spare", "directive", "keepalive")
    head = tuple(line[:-1] for line in (front, zone, lb) if line)
    return _Upstream(name, start, end, head, params, tuple(_ADDRESS.findall(served)),
                     tuple(_ADDRESS.findall(spare)), (keepalive[:-1],) if keepalive else (),
                     directive is not None)


def _parse_lines(name: str, start: int, end: int, body: str) -> _Upstream | None:
    """`_parse` line by line: the rules of the module docstring for any layout of the lines."""
    head: list[str] = []
    tail: list[str] = []
    params: set[str] = set()
    addresses: list[str] = []
    down: list[str] = []
    zone = dynamic = False
    for raw in body.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("server "):
            m = _SERVER.fullmatch(line)
            if m is None or tail:
                return None
            address = m.group(1)
            if m.group(3):
                down.append(address)
            elif _IP_PORT.fullmatch(address):
                addresses.append(address)
            elif _NO_ENDPOINTS.fullmatch(address) and not addresses:
                down.append(address)
            else:
                return None
            params.add(m.group(2))
        elif line.startswith("zone ") and not addresses and not down:
            zone = True
            head.append(raw)
        elif line == _DIRECTIVE_LINE:
            dynamic = True
        elif line == _FRONT_LINE and not addresses and not down:
            head.append(raw)
        elif line.startswith("keepalive ") and _KEEPALIVE.fullmatch(line):
            tail.append(raw)
        elif _LB.fullmatch(line) and not addresses and not down:
            head.append(raw)
        else:
            return None
    if not zone or len(params) != 1 or not (addresses or down):
        return None
    return _Upstream(name, start, end, tuple(head), params.pop(), tuple(addresses), tuple(down),
                     tuple(tail), dynamic)


def _blocks(text: str) -> Iterator[tuple[str, int, int, int]]:
    """Each `upstream <name> {` block at the start of a line, up to a line `}`: (name, start of the block,
    start of its body, end of its body: the character after the newline before `}`). Plain string search:
    this runs for every file the controller writes."""
    if text.startswith("upstream "):
        pos = 0
    else:
        pos = text.find("\nupstream ") + 1
        if pos == 0:
            return
    while True:
        brace = text.find(" {\n", pos)
        end = text.find("\n}\n", brace)
        if brace < 0 or end < 0:
            return
        name = text[pos + len("upstream "):brace]
        if name and " " not in name and "\n" not in name:
            yield name, pos, brace + 3, end + 1
        pos = text.find("\nupstream ", end) + 1
        if pos == 0:
            return


def _upstreams(text: str) -> Iterator[_Upstream]:
    """The eligible upstream blocks of `text`."""
    for name, start, body, body_end in _blocks(text):
        u = _parse(name, start, body_end + 2, text, body, body_end)
        if u is not None:
            yield u


def _render(u: _Upstream, addresses: tuple[str, ...], spares: int, spare_address: str) -> str:
    lines = [f"upstream {u.name} {{", *u.head]
    lines += [f"    server {a} {u.params};" for a in addresses]
    lines += [f"    server {spare_address} {u.params} down;"] * spares
    lines += [f"    {DIRECTIVE};", *u.tail, "}"]
    return "\n".join(lines) + "\n"


class SlotCounts(NamedTuple):
    """One file's slot counts: per upstream, and its spare slots in all."""

    counts: dict[str, int]
    spares: int


class DynamicUpstreams:
    """The slot counts of every file's dynamic upstreams, and the text transformations (module docstring)."""

    def __init__(self, spare_address: str) -> None:
        """`spare_address`: what spare slots name (never used while they are down; the 502 server)."""
        self.spare_address = spare_address
        self._slots: dict[str, dict[str, int]] = {}  # file name -> upstream -> slot count
        self._spares: dict[str, int] = {}  # file name -> its spare slots

    def slot(self, name: str, text: str) -> str:
        """The dynamic form of conf.d file `name`'s rendered `text` (see the module docstring)."""
        previous = self._slots.get(name, {})
        counts: dict[str, int] = {}
        spares = 0
        parts: list[str] = []
        pos = 0
        for upstream, start, body, body_end in _blocks(text):
            end = body_end + 2
            m = _RENDERED.fullmatch(text, body, body_end)
            if m is not None:
                # The rendered form: its text up to the served servers is what _render would write.
                if m.start("directive") >= 0:
                    continue
                served_end = m.end("served")
                n = text.count("\n", m.start("served"), served_end)
                count = _keep_or_resize(n, previous.get(upstream, 0))
                spare = count - n
                spare_line = f"    server {self.spare_address} {m.group('params')} down;\n"
                parts += [text[pos:served_end], spare_line * spare, _DIRECTIVE_BODY_LINE,
                          m.group("keepalive") or "", "}\n"]
            else:
                u = _parse_lines(upstream, start, end, text[body:body_end])
                if u is None or u.dynamic:
                    continue
                count = _keep_or_resize(len(u.addresses), previous.get(upstream, 0))
                spare = count - len(u.addresses)
                parts += [text[pos:start], _render(u, u.addresses, spare, self.spare_address)]
            counts[upstream] = count
            spares += spare
            pos = end
        if not counts:
            self.forget(name)
            return text
        self._slots[name] = counts
        self._spares[name] = spares
        parts.append(text[pos:])
        return "".join(parts)

    def slots_of(self, name: str) -> SlotCounts | None:
        """File `name`'s slot counts as the last `slot` of it left them (None: it has no dynamic upstream),
        for `adopt` in the process that owns the files (a forked render process slots its share)."""
        counts = self._slots.get(name)
        return None if counts is None else SlotCounts(dict(counts), self._spares.get(name, 0))

    def adopt(self, name: str, slots: SlotCounts | None) -> None:
        """Take file `name`'s slot counts from `slot` run in another process on the same state (`slots_of`
        there): afterwards this instance is as if it had run that `slot` itself."""
        if slots is None:
            self.forget(name)
        else:
            self._slots[name] = dict(slots.counts)
            self._spares[name] = slots.spares

    def spare_slots(self, name: str) -> int:
        """How many spare slots file `name` holds (for sizing the shared upstream zone)."""
        return self._spares.get(name, 0)

    def forget(self, name: str) -> None:
        self._slots.pop(name, None)
        self._spares.pop(name, None)


def _shape(text: str) -> tuple[str, dict[str, tuple[str, ...]]]:
    """`text` with the addresses of its dynamic upstreams' slots masked, and each one's served addresses."""
    served: dict[str, tuple[str, ...]] = {}
    parts: list[str] = []
    pos = 0
    for u in _upstreams(text):
        if not u.dynamic:
            continue
        served[u.name] = u.addresses
        slots = len(u.addresses) + len(u.down)
        parts += [text[pos:u.start], _render(u, (_PLACEHOLDER,) * slots, 0, _PLACEHOLDER)]
        pos = u.end
    parts.append(text[pos:])
    return "".join(parts), served


def endpoint_changes(old: str, new: str) -> dict[str, tuple[str, ...]] | None:
    """None if `new` differs from `old` in more than the addresses its dynamic upstreams serve; else the
    upstreams whose served addresses changed, with their new addresses (empty when nothing changed)."""
    if old == new:
        return {}
    old_shape, old_served = _shape(old)
    new_shape, new_served = _shape(new)
    if old_shape != new_shape:
        return None
    return {name: addrs for name, addrs in new_served.items() if old_served.get(name) != addrs}


class UpstreamShape(NamedTuple):
    """What a dynamic upstream is apart from the addresses it serves: two with equal shapes (slot counts
    aside) balance, fail over and keep connections alike."""

    head: tuple[str, ...]  # zone and lb-method lines, without the upstream-front directive
    params: str
    tail: tuple[str, ...]
    slots: int
    addresses: tuple[str, ...]

    def same_kind(self, other: UpstreamShape) -> bool:
        return (self.head, self.params, self.tail) == (other.head, other.params, other.tail)


def upstream_blocks(text: str) -> tuple[dict[str, tuple[str, UpstreamShape | None]], str]:
    """Each upstream block of `text` (by name: its text, and its shape when it is dynamic), and `text`
    without them."""
    blocks: dict[str, tuple[str, UpstreamShape | None]] = {}
    parts: list[str] = []
    pos = 0
    for name, start, body, body_end in _blocks(text):
        end = body_end + 2
        u = _parse(name, start, end, text, body, body_end)
        shape = None
        if u is not None and u.dynamic:
            head = tuple(line for line in u.head if line.strip() != _FRONT_LINE)
            shape = UpstreamShape(head, u.params, u.tail, len(u.addresses) + len(u.down), u.addresses)
        blocks[name] = (text[start:end], shape)
        parts.append(text[pos:start])
        pos = end
    parts.append(text[pos:])
    return blocks, "".join(parts)
