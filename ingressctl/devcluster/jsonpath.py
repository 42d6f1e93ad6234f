"""The JSONPath subset CRD printer columns use (`additionalPrinterColumns[].jsonPath`), as client-go reads it.

Supported: field steps (`.status.state`, `.metadata['some.key']`), list indexes (`[0]`, `[-1]`), every element
(`[*]`) and recursive descent (`..name`), with or without the template braces (`{.spec.host}`). `compile()`
raises `ValueError` for anything else, so a CRD with a path devcluster cannot evaluate is refused at create.
`find()` returns every match in document order; a missing field yields no match (never an error).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_STEP = re.compile(r"""\.\.(?P<deep>[A-Za-z0-9_\-]+)
                   |\.(?P<field>[A-Za-z0-9_\-]+)
                   |\[(?P<index>-?\d+|\*)\]
                   |\[['"](?P<quoted>[^'"]+)['"]\]""", re.VERBOSE)


@dataclass(frozen=True)
class Step:
    kind: str        # "field", "index", "all", "deep"
    key: str = ""
    index: int = 0


def compile_path(text: str) -> tuple[Step, ...]:
    path = text.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1].strip()
    if not path.startswith((".", "[")):
        raise ValueError(f"unsupported JSONPath {text!r}: it must start with '.'")
    steps: list[Step] = []
    pos = 0
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None:
            raise ValueError(f"unsupported JSONPath {text!r} at {path[pos:]!r}")
        if m.group("deep"):
            steps.append(Step("deep", m.group("deep")))
        elif m.group("field") or m.group("quoted"):
            steps.append(Step("field", m.group("field") or m.group("quoted")))
        elif m.group("index") == "*":
            steps.append(Step("all"))
        else:
            steps.append(Step("index", index=int(m.group("index"))))
        pos = m.end()
    return tuple(steps)


def _descend(node: Any, key: str) -> Iterator[Any]:
    if isinstance(node, dict):
        if key in node:
            yield node[key]
        for value in node.values():
            yield from _descend(value, key)
    elif isinstance(node, list):
        for value in node:
            yield from _descend(value, key)


def find(steps: tuple[Step, ...], obj: Any) -> list[Any]:
    nodes = [obj]
    for step in steps:
        out: list[Any] = []
        for node in nodes:
            if step.kind == "field" and isinstance(node, dict) and step.key in node:
                out.append(node[step.key])
            elif step.kind == "index" and isinstance(node, list) and -len(node) <= step.index < len(node):
                out.append(node[step.index])
            elif step.kind == "all" and isinstance(node, (list, dict)):
                out.extend(node if isinstance(node, list) else node.values())
            elif step.kind == "deep":
                out.extend(_descend(node, step.key))
        nodes = out
    return nodes
