"""The Markdown of an annotation table for docs/annotations.md: one table per section, and the mergeable
Ingresses' lists, each between marker lines so that the hand-written prose around them is kept.

Guarantees:
- `blocks(table)` is deterministic: block name -> Markdown, sections in table order, rows in table order.
  A row whose data its section cannot show (a ConfigMap key without that column, a syntax or default without
  a values column) or whose text would break a table (a newline, an unescaped `|`) raises `ValueError`
  naming it, so nothing a row says is silently left out of the docs.
- `replace_blocks(text, table)` rewrites every block between its `markers` and leaves the rest of the text as
  it is; `read_blocks(text, table)` returns what a document holds. Both raise `ValueError` naming a block
  whose markers are missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ingressctl.kinds.ingress.annotation_table import Annotation, AnnotationTable, Section

MERGEABLE_LISTS = "mergeable-lists"
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def markers(table: AnnotationTable, name: str) -> tuple[str, str]:
    """The begin and end lines of block `name` of the table."""
    return (f"<!-- annotations:{table.family}:{name}:begin (generated from {table.source}) -->",
            f"<!-- annotations:{table.family}:{name}:end -->")


def cell(row: Annotation, text: str) -> str:
    if "\n" in text or _UNESCAPED_PIPE.search(text):
        raise ValueError(f"annotation {row.key}: a docs cell has a newline or an unescaped '|': {text!r}")
    return f" {text} " if text else " "


def _values(row: Annotation) -> str:
    """`<syntax> (<default>)`: the default a literal, a literal with its meaning, or a note."""
    if row.default:
        shown = f"`{row.default}`" + (f" = {row.default_note}" if row.default_note else "")
    else:
        shown = row.default_note
    return f"{row.syntax} ({shown})" if shown else row.syntax


def section_table(table: AnnotationTable, section: Section) -> str:
    """The Markdown table of the section's rows."""
    headers = ["annotation"]
    if section.config_map_column:
        headers.append("ConfigMap key")
    if section.values_column:
        headers.append(section.values_column)
    headers.append(section.effect_column)
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    for row in table.rows:
        if row.section != section:
            continue
        if row.config_map_key and not section.config_map_column:
            raise ValueError(f"annotation {row.key}: section {section.name} has no ConfigMap key column")
        if (row.syntax or row.default or row.default_note) and not section.values_column:
            raise ValueError(f"annotation {row.key}: section {section.name} has no values column")
        cells = [f"`{row.key}`"]
        if section.config_map_column:
            cells.append(f"`{row.config_map_key}`" if row.config_map_key else "")
        if section.values_column:
            cells.append(_values(row))
        cells.append(row.effect)
        lines.append("|" + "|".join(cell(row, c) for c in cells) + "|")
    return "\n".join(lines)


def mergeable_lists(table: AnnotationTable) -> str:
    """NIC's lists of mergeable Ingresses, as the rows state them."""
    def names(keys: Iterable[str]) -> str:
        return ", ".join(f"`{k}`" for k in sorted(keys))

    return "\n".join([
        f"- a master may not have: {names(table.master_denied)}",
        f"- a minion may not have: {names(table.minion_denied)}",
        f"- a minion inherits from its master, unless it sets its own: {names(table.minion_inherited)}",
        f"- merged, the master's with the minion's: {names(table.minion_merged)}",
    ])


def blocks(table: AnnotationTable) -> dict[str, str]:
    """Every generated block of the table: section name -> its table, and the mergeable lists."""
    result = {section.name: section_table(table, section) for section in table.sections}
    result[MERGEABLE_LISTS] = mergeable_lists(table)
    return result


def span(text: str, table: AnnotationTable, name: str) -> tuple[int, int]:
    begin, end = markers(table, name)
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"the document has no block {name!r} (between {begin!r} and {end!r})")
    return start + len(begin), stop


def read_blocks(text: str, table: AnnotationTable) -> dict[str, str]:
    """What the document holds in each of the table's blocks."""
    result = {}
    for name in blocks(table):
        start, stop = span(text, table, name)
        result[name] = text[start:stop].strip()
    return result


def replace_blocks(text: str, table: AnnotationTable) -> str:
    """The document with every block of the table generated afresh."""
    for name, markdown in blocks(table).items():
        start, stop = span(text, table, name)
        text = text[:start] + "\n" + markdown + "\n" + text[stop:]
    return text
