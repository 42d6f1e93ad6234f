"""The chart's README documents every value of values.yaml: its values table is generated from values.yaml
(each key, its default, and the comment above it) and must match.

Regenerate it with `python -m tests.chart.test_chart_readme --write`.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

CHART = Path(__file__).resolve().parents[2] / "charts" / "ingressctl"
README = CHART / "README.md"
BEGIN, END = "<!-- values:begin (generated from values.yaml) -->", "<!-- values:end -->"
_KEY = re.compile(r"^(\s*)([A-Za-z][A-Za-z0-9_]*):(.*)$")


def values_table() -> str:
    """One row per key of values.yaml: its dotted path, its default (leaves only) and its own comment."""
    defaults = yaml.safe_load(CHART.joinpath("values.yaml").read_text())
    rows = ["| value | default | meaning |", "| --- | --- | --- |"]
    stack: list[tuple[int, str]] = []
    comment: list[str] = []
    for line in CHART.joinpath("values.yaml").read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            comment.append(stripped.lstrip("#").strip())
            continue
        m = _KEY.match(line)
        if not m:
            comment = []
            continue
        indent, key = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = [k for _, k in stack] + [key]
        stack.append((indent, key))
        value: object = defaults
        for k in path:
            value = value[k] if isinstance(value, dict) else None
        meaning = " ".join(comment).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
        comment = []
        if isinstance(value, dict) and value:
            if meaning:
                rows.append(f"| `{'.'.join(path)}` | | {meaning} |")
            continue
        shown = json.dumps(value) if not isinstance(value, str) else (f'"{value}"' if value == "" else value)
        rows.append(f"| `{'.'.join(path)}` | `{shown}` | {meaning} |")
    return "\n".join(rows)


def readme_block(text: str) -> str:
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()


def test_chart_readme_documents_every_value() -> None:
    assert readme_block(README.read_text()) == values_table(), \
        "charts/ingressctl/README.md is stale: run python -m tests.chart.test_chart_readme --write"


def test_chart_readme_links_resolve() -> None:
    text = README.read_text()
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        if "://" not in target:
            assert (CHART / target).resolve().exists(), target


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        text = README.read_text()
        start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
        README.write_text(text[:start] + "\n" + values_table() + "\n" + text[end:])
        print("charts/ingressctl/README.md values table updated")
    else:
        print(values_table())
