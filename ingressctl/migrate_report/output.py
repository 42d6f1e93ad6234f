"""A migration report as text (for people) or as a JSON document (for scripts).

Guarantees:
- Both show the same facts: per Ingress its class, verdict and why, its errors or warnings and each
  ingress-nginx annotation's status, reason and effect; the IngressClasses read; the documents skipped; the
  notes; the summary (Ingresses per verdict, annotation -> count per status).
- The JSON document is stable: `kind`/`version` name its schema (`version` changes only when a field changes
  meaning or goes away), keys are sorted, lists in the report's deterministic order; the same input gives
  the same bytes.
"""

from __future__ import annotations

import json
from typing import Any, Final

from ingressctl.migrate_report.analysis import STATUSES, VERDICTS, IngressReport, Report

KIND: Final = "IngressNginxMigrationReport"
VERSION: Final = 1
_VALUE_WIDTH = 60


def to_json(report: Report, source: dict[str, Any]) -> str:
    """The report as a JSON document (see the module docstring); `source` says what was read."""
    o = report.options
    doc = {
        "kind": KIND,
        "version": VERSION,
        "source": source,
        "options": {"ingressClass": o.ingress_class, "enableSnippets": o.enable_snippets,
                    "allowEmptyIngressHost": o.allow_empty_ingress_host, "ingressNginxCompat": True},
        "notes": report.notes,
        "ingressClasses": [{"name": c.name, "controller": c.controller, "served": c.served,
                            "default": c.default, "where": c.where} for c in report.ingress_classes],
        "ingresses": [_ingress_json(r) for r in report.ingresses],
        "skipped": [{"where": s.where, "kind": s.kind, "apiVersion": s.api_version, "name": s.name,
                     "reason": s.reason} for s in report.skipped],
        "summary": {"ingresses": {"total": len(report.ingresses), **report.verdict_counts()},
                    "annotations": report.annotation_counts()},
    }
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _ingress_json(r: IngressReport) -> dict[str, Any]:
    return {"namespace": r.namespace, "name": r.name, "where": r.where, "class": r.ingress_class,
            "classSource": r.class_source, "verdict": r.verdict, "why": list(r.why), "errors": list(r.errors),
            "warnings": list(r.warnings),
            "annotations": [{"key": e.key, "value": e.value, "status": e.status, "reason": e.reason,
                             "effect": e.effect} for e in r.annotations]}


def _short(value: str) -> str:
    value = value.replace("\n", "\\n")
    return value if len(value) <= _VALUE_WIDTH else value[:_VALUE_WIDTH - 3] + "..."


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(headers, *rows, strict=True)]
    line = "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths,
                                                                                          strict=True)))
    out = [line, "  ".join("-" * w for w in widths)]
    for row in rows:
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    return out


def _verdict_text(verdict: str) -> str:
    return verdict.replace("-", " ").upper() if verdict in ("rejected", "not-served") else \
        verdict.replace("-", " ")


def to_text(report: Report, source: str) -> str:
    """The report for a terminal; `source` says what was read (a directory, a cluster)."""
    lines = [f"ingress-nginx migration report: {len(report.ingresses)} Ingresses from {source}, as "
             f"ingressctl --ingress-nginx-compat --ingress-class {report.options.ingress_class} would "
             f"serve them" + (" (--enable-snippets)" if report.options.enable_snippets else "")
             + (" (--allow-empty-ingress-host)" if report.options.allow_empty_ingress_host else "")
             + ", with the ConfigMap's defaults."]
    for note in report.notes:
        lines.append(f"note: {note}")
    if report.ingress_classes:
        lines.append("")
        lines.append("IngressClasses:")
        for c in report.ingress_classes:
            default = ", the default class" if c.default else ""
            lines.append(f"  {c.name}: controller {c.controller or '(none)'}, "
                         f"{'served' if c.served else 'not served'}{default}"
                         + (f" ({c.where})" if c.where else ""))
    for r in report.ingresses:
        lines.append("")
        lines.append(f"{r.namespace}/{r.name}" + (f"  ({r.where})" if r.where else ""))
        lines.append(f"  verdict: {_verdict_text(r.verdict)}")
        for why in r.why:
            lines.append(f"    {why}")
        if r.errors:
            lines.append("  rejected because:")
            lines.extend(f"    - {e}" for e in r.errors)
        if r.annotations:
            lines.append("  ingress-nginx annotations:")
            width = max(len(e.status) for e in r.annotations)
            pad = " " * (4 + width + 2)
            for e in r.annotations:
                lines.append(f"    {e.status.ljust(width)}  {e.key}={json.dumps(_short(e.value))}")
                if e.effect:
                    lines.append(f"{pad}-> {e.effect}")
                if e.reason:
                    lines.append(f"{pad}{'note' if e.effect else 'why'}: {e.reason.replace('`', '')}")
        else:
            lines.append("  no ingress-nginx annotations")
        if r.warnings:
            lines.append("  warnings:")
            lines.extend(f"    - {w}" for w in r.warnings)
    if report.skipped:
        lines.append("")
        lines.append(f"Skipped {len(report.skipped)} other documents:")
        for s in report.skipped:
            what = f"{s.kind} {s.name}".strip() or "document"
            lines.append(f"  {s.where}: {what}: {s.reason}")
    lines.append("")
    counts = report.verdict_counts()
    lines.append("Summary: " + ", ".join(f"{counts[v]} {v.replace('-', ' ')}" for v in VERDICTS)
                 + f" ({len(report.ingresses)} Ingresses)")
    annotations = report.annotation_counts()
    if annotations:
        lines.append("")
        rows = [[k, *(str(c[s]) if c[s] else "." for s in STATUSES)] for k, c in annotations.items()]
        lines.extend(_table(["annotation", *STATUSES], rows))
    else:
        lines.append("No ingress-nginx annotations.")
    return "\n".join(lines) + "\n"
