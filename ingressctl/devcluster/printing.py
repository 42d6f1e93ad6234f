"""Server-side printing: meta.k8s.io/v1 `Table` responses for `kubectl get`, from the kind table's columns.

kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io`; the rows carry the cells of the kind's
columns and, depending on `includeObject` (None, Metadata (default), Object), the object itself or its
metadata as a PartialObjectMetadata.
"""

from __future__ import annotations

from typing import Any

from ingressctl.devcluster.errors import bad_request
from ingressctl.devcluster.resources import AGE, NAME, Obj, ResourceKind

_DEFAULT_COLUMNS = (NAME, AGE)


def wants_table(accept: str) -> str:
    """The Table version asked for in an Accept header ("v1", "v1beta1") or "" if none."""
    for part in accept.split(","):
        params = {kv.split("=", 1)[0].strip(): kv.split("=", 1)[1].strip()
                  for kv in part.split(";")[1:] if "=" in kv}
        wanted = (params.get("as"), params.get("g")) == ("Table", "meta.k8s.io")
        if wanted and params.get("v") in ("v1", "v1beta1"):
            return params["v"]
        media = part.split(";")[0].strip()
        if media in ("application/json", "*/*", "application/*") and "as" not in params:
            return ""
    return ""


def column_definitions(kind: ResourceKind) -> list[dict[str, Any]]:
    return [{"name": c.name, "type": c.type, "format": c.format, "description": c.description,
             "priority": c.priority} for c in (kind.columns or _DEFAULT_COLUMNS)]


def _cell(value: Any) -> Any:
    return value if isinstance(value, (int, float, bool)) or value is None else str(value)


def row(kind: ResourceKind, obj: Obj, include_object: str) -> dict[str, Any]:
    cells = []
    for c in kind.columns or _DEFAULT_COLUMNS:
        try:
            cells.append(_cell(c.cell(obj)))
        except (AttributeError, TypeError, ValueError, KeyError):
            cells.append("<error>")
    out: dict[str, Any] = {"cells": cells}
    if include_object == "Object":
        out["object"] = {"kind": kind.kind, "apiVersion": kind.api_version, **obj}
    elif include_object == "Metadata":
        out["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                         "metadata": obj.get("metadata", {})}
    return out


def table(kind: ResourceKind, objs: list[Obj], *, version: str, include_object: str,
          list_meta: dict[str, Any] | None = None, headers: bool = True) -> dict[str, Any]:
    if include_object not in ("None", "Metadata", "Object"):
        raise bad_request(f'includeObject: Unsupported value: "{include_object}": supported values: '
                          '"Metadata", "None", "Object"')
    return {
        "kind": "Table", "apiVersion": f"meta.k8s.io/{version}", "metadata": list_meta or {},
        "columnDefinitions": column_definitions(kind) if headers else None,
        "rows": [row(kind, o, include_object) for o in objs],
    }
