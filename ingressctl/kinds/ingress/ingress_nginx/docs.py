"""The Markdown of the ingress-nginx table for docs/ingress-nginx-migration.md: one table per section (every
row: its key, value syntax and default, its status today, what ingressctl makes of it and why), between
marker lines so that the hand-written prose around them is kept.

Guarantees:
- Deterministic: sections and rows in table order. A row not implemented yet shows what it is today
  (refused or ignored) and the status it will have ("planned").
- A cell with a newline or an unescaped `|` raises `ValueError` naming the row (`annotation_docs`' rule).
- `replace_blocks` / `read_blocks` as `annotation_docs`' (the same markers, this table's family).
"""

from __future__ import annotations

from ingressctl.kinds.ingress import annotation_docs
from ingressctl.kinds.ingress.annotation_table import Annotation, AnnotationTable, Section
from ingressctl.kinds.ingress.annotations_ingress_nginx import PREFIX
from ingressctl.kinds.ingress.ingress_nginx.translate import effective_status

HEADERS = ("annotation", "values (default)", "status", "ingressctl", "why / how")


def status_cell(row: Annotation) -> str:
    now = effective_status(row)
    if now is row.status:
        return f"**{now.value}**"
    return f"**{now.value}** (planned: {row.status.value})"


def section_table(table: AnnotationTable, section: Section) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "|".join(" --- " for _ in HEADERS) + "|"]
    for row in table.rows:
        if row.section != section:
            continue
        values = f"{row.syntax} ({row.default_note})" if row.default_note else row.syntax
        cells = [f"`{row.key.removeprefix(PREFIX)}`", values, status_cell(row), row.effect, row.reason]
        lines.append("|" + "|".join(annotation_docs.cell(row, c) for c in cells) + "|")
    return "\n".join(lines)


def blocks(table: AnnotationTable) -> dict[str, str]:
    return {section.name: section_table(table, section) for section in table.sections}


def read_blocks(text: str, table: AnnotationTable) -> dict[str, str]:
    result = {}
    for name in blocks(table):
        start, stop = annotation_docs.span(text, table, name)
        result[name] = text[start:stop].strip()
    return result


def replace_blocks(text: str, table: AnnotationTable) -> str:
    for name, markdown in blocks(table).items():
        start, stop = annotation_docs.span(text, table, name)
        text = text[:start] + "\n" + markdown + "\n" + text[stop:]
    return text
