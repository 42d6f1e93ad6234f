"""Ingress annotation validation: NIC's validators of each annotation, read from the annotation table
(`NGINX_ORG`, the rows' `checks`), and the value checks of the annotation parsers, as Kubernetes field errors.

Guarantees:
- `ANNOTATION_VALIDATIONS` maps an annotation name to its ordered validators (`annotation_validators`); the
  first failing one stops that annotation. Annotations are checked in sorted name order (NIC's order).
- Deliberate difference from NIC: every annotation value the config generator would refuse is a validation
  error too (`validate_annotation_values`: `limit-req-*`, unknown NGINX variables, zone sizes, ...), so a bad
  value rejects the Ingress up front with an event naming the annotation and value, instead of being logged
  and ignored. Each annotation is reported once: by its NIC validator if that fails, else by the parser
  (`annotation_errors` does both, sorted by field).
- The accessors (`get_annotations`, `mergeable_type`, ...) tolerate malformed objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ingressctl.kinds.ingress.annotation_table import AnnotationTable
from ingressctl.kinds.ingress.annotation_validators import AnnotationContext, AnnotationValidator
from ingressctl.kinds.ingress.annotations import annotation_error, check_annotations
from ingressctl.kinds.ingress.annotations_nginx_org import MERGEABLE_INGRESS_TYPE, NGINX_ORG
from ingressctl.kinds.ingress.refs import service_names
from ingressctl.validation import OMIT, ErrorType, FieldError, invalid


def _as_dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def get_annotations(ing: Mapping[str, Any]) -> dict[str, str]:
    """The annotations as strings (a copy; {} for none or a malformed field)."""
    ann = _as_dict(_as_dict(ing.get("metadata")).get("annotations"))
    if not ann:
        return {}
    return {str(k): v if isinstance(v, str) else str(v) for k, v in ann.items()}


def get_annotation(ing: Mapping[str, Any], name: str) -> str:
    """One annotation as `get_annotations` gives it ("" when absent), without copying the others."""
    v = _as_dict(_as_dict(ing.get("metadata")).get("annotations")).get(name, "")
    return v if isinstance(v, str) else str(v)


def mergeable_type(ing: Mapping[str, Any]) -> str:
    """The `nginx.org/mergeable-ingress-type` annotation ("master", "minion", or "" / another value)."""
    return get_annotation(ing, MERGEABLE_INGRESS_TYPE)


def is_master(ing: Mapping[str, Any]) -> bool:
    return mergeable_type(ing) == "master"


def is_minion(ing: Mapping[str, Any]) -> bool:
    return mergeable_type(ing) == "minion"


# annotation name -> ordered validators (the rows' `checks`); the first failing one stops the annotation.
ANNOTATION_VALIDATIONS: Mapping[str, tuple[AnnotationValidator, ...]] = NGINX_ORG.validators


def validate_annotations(ing: Mapping[str, Any], *, is_plus: bool = False, snippets_enabled: bool = False,
                         table: AnnotationTable = NGINX_ORG) -> list[FieldError]:
    """Run the validators of `table` (`ANNOTATION_VALIDATIONS`) over the Ingress's annotations, in sorted name
    order."""
    return _validate_annotations(ing, get_annotations(ing), is_plus, snippets_enabled, table)


def _validate_annotations(ing: Mapping[str, Any], annotations: dict[str, str], is_plus: bool,
                          snippets_enabled: bool, table: AnnotationTable) -> list[FieldError]:
    errs: list[FieldError] = []
    services: frozenset[str] | None = None   # the spec's Services: read only for an annotation to check
    validations = table.validators
    for name in sorted(annotations):
        validators = validations.get(name)
        if not validators:
            continue
        if services is None:
            services = frozenset(service_names(ing))
        ctx = AnnotationContext(name, annotations[name], annotations, is_plus, snippets_enabled, services)
        for validator in validators:
            found = validator(ctx)
            if found:
                errs.extend(found)
                break
    return errs


def annotation_errors(ing: Mapping[str, Any], annotations: dict[str, str], *, is_plus: bool = False,
                      snippets_enabled: bool = False, table: AnnotationTable = NGINX_ORG) -> list[FieldError]:
    """Every annotation error of the Ingress (`annotations` are its `get_annotations`), sorted by field; one
    annotation's errors keep their order."""
    if not annotations:
        return []
    errs = _validate_annotations(ing, annotations, is_plus, snippets_enabled, table)
    failed = {e.field.removeprefix("annotations.") for e in errs}
    errs.extend(_validate_annotation_values(annotations, snippets_enabled, failed, table))
    errs.sort(key=lambda e: e.field)
    return errs


def validate_annotation_values(ing: Mapping[str, Any], *, snippets_enabled: bool = False,
                               skip: Iterable[str] = (),
                               table: AnnotationTable = NGINX_ORG) -> list[FieldError]:
    """The values the config generator would refuse (`annotations.check_annotations`), as field
    errors `annotations.<name>: Invalid value: "<value>": <detail>`. Covers what NIC's validation lets through
    and only logs later: every `nginx.org/limit-req-*` value, unknown NGINX variables, zone sizes NGINX
    refuses, ... Annotations named in `skip` (already reported by `validate_annotations`) are left out."""
    return _validate_annotation_values(get_annotations(ing), snippets_enabled, skip, table)


def _validate_annotation_values(all_annotations: dict[str, str], snippets_enabled: bool,
                                skip: Iterable[str], table: AnnotationTable) -> list[FieldError]:
    if not all_annotations:
        return []
    skipped = set(skip)
    annotations = {k: v for k, v in all_annotations.items() if k not in skipped}
    if not annotations:
        return []
    errs: list[FieldError] = []
    for msg in check_annotations(annotations, snippets_enabled=snippets_enabled, table=table):
        errs.append(_annotation_value_error(msg, annotations))
    return errs


def _annotation_value_error(msg: str, annotations: Mapping[str, str]) -> FieldError:
    """A `check_annotations` message (`annotation <name>: invalid value "<v>": <detail>`) as a FieldError."""
    for name, value in annotations.items():
        if not msg.startswith(f"annotation {name}: "):
            continue
        prefix = annotation_error(name, value, "")
        detail = msg[len(prefix):] if msg.startswith(prefix) else msg
        return invalid(f"annotations.{name}", value, detail or "invalid value")
    return FieldError(ErrorType.INVALID, "metadata.annotations", OMIT, msg)
