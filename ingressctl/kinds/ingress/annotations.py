"""Ingress annotations (NIC's `annotations.go`): the parser of an annotation table (`NGINX_ORG`, the
`nginx.org/*` family: `annotations_nginx_org.py`), applying an Ingress's annotations to the ConfigMap params.

Guarantees:
- `parse_annotations` never raises. Each annotation of the table is parsed with its row's strict parser (see
  `parsing`); a value that fails is NOT applied and is reported in `IngressAnnotations.errors` as
  `annotation nginx.org/<name>: invalid value "<value>": <detail>`. The generator turns errors into a rejected
  Ingress (NIC only logs them; here nothing an Ingress's author typed reaches NGINX unvalidated).
- Snippet annotations apply only with `snippets_enabled`. Without it, validation rejects the whole Ingress
  before it gets here (`controller.validation`, NIC's behaviour); should one arrive anyway (a caller that
  skipped validation), it is left out of the config with a warning, never rendered.
- A group (the HSTS annotations) applies together: an error in any of them applies none (as NIC). Its rows
  without the group's leader (`nginx.org/hsts`), and a row whose `requires` is absent (a realm without a
  basic-auth Secret), are ignored with a warning (validation rejects them; they remain on a minion whose
  `nginx.org/hsts` was removed). A row whose `ignored_with` is set too is ignored with a warning.
- Order, fixed: errors of the plain fields (sorted by name), of `proxy-redirect`, of the group, of the
  per-Ingress rows (table order); warnings of snippets, of `ignored_with`, of `requires`, of the group.
- `check_annotations` returns just the errors, for validation before anything is stored.
- Mergeable Ingresses: the rows' `master` and `minion` attributes are NIC's deny and inheritance lists;
  `master_annotations` / `minion_annotations` apply them and say what was removed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ingressctl.configs import directive_values
from ingressctl.configs.configmaps import ConfigParams
from ingressctl.kinds.ingress.annotation_table import AnnotationTable
from ingressctl.kinds.ingress.annotations_nginx_org import NGINX_ORG

_DEFAULT_PARAMS = ConfigParams()  # frozen: shared by every check_annotations call
MASTER_DENYLIST = NGINX_ORG.master_denied
MINION_DENYLIST = NGINX_ORG.minion_denied
MINION_INHERITANCE_LIST = NGINX_ORG.minion_inherited


@dataclass(frozen=True)
class IngressAnnotations:
    """The settings that apply to one Ingress: ConfigMap params with its annotations applied."""

    params: ConfigParams
    rewrites: dict[str, str] = field(default_factory=dict)  # service name -> URI
    websocket_services: frozenset[str] = frozenset()
    ssl_services: frozenset[str] = frozenset()
    grpc_services: frozenset[str] = frozenset()
    path_regex: str = ""  # "", case_sensitive, case_insensitive or exact
    errors: tuple[str, ...] = ()  # invalid annotation values: the Ingress must be rejected


def with_ssl_services(anns: IngressAnnotations, services: frozenset[str]) -> IngressAnnotations:
    """`anns` whose `ssl_services` also hold `services` (`anns` itself when they add nothing)."""
    if services <= anns.ssl_services:
        return anns
    return dataclasses.replace(anns, ssl_services=anns.ssl_services | services)


def annotation_error(name: str, value: str, detail: str) -> str:
    """`annotation <name>: invalid value "<value>": <detail>` (the value quoted as Go's %q would)."""
    shown = value if len(value) <= 200 else value[:200] + "..."
    return f"annotation {name}: invalid value {json.dumps(shown, ensure_ascii=False)}: {detail}"


def parse_annotations(annotations: Mapping[str, Any] | None, base: ConfigParams, *,
                      snippets_enabled: bool = False,
                      table: AnnotationTable = NGINX_ORG) -> tuple[IngressAnnotations, list[str]]:
    """Apply an Ingress's annotations (those of `table`) to the ConfigMap params; returns the result and
    warnings. Invalid values are not applied and are listed in `errors` of the result."""
    annotations = annotations or {}
    warnings: list[str] = []
    errors: list[str] = []
    overrides: dict[str, Any] = {}

    def parse(name: str, fn: Callable[[str], Any]) -> tuple[bool, Any]:
        raw = annotations[name]
        if not isinstance(raw, str):
            errors.append(annotation_error(name, str(raw), "must be a string"))
            return False, None
        try:
            return True, fn(raw)
        except ValueError as e:
            errors.append(annotation_error(name, raw, str(e)))
            return False, None

    fields = table.fields
    for name in sorted(annotations):
        row = fields.get(name)
        if row is None:
            continue
        if row.needs_snippets and not snippets_enabled:
            warnings.append(f"annotation {name} is ignored: snippets are not enabled (--enable-snippets)")
            continue
        ok, value = parse(name, row.parse)  # type: ignore[arg-type]  # a FIELD row has a parser
        if ok and not (row.ignored_with and row.ignored_with in annotations) and not (
                row.requires and row.requires not in annotations):
            overrides[row.sets] = value

    for row in table.ignorable:  # e.g. nginx.org/ssl-redirect wins over ingress.kubernetes.io/ssl-redirect
        if row.key in annotations:
            if row.ignored_with in annotations:
                warnings.append(f"annotation {row.key} is ignored: {row.ignored_with} is set")
            elif row.deprecated:
                warnings.append(f"annotation {row.key} is deprecated: use {row.ignored_with} instead")
    if table.proxy_redirect:  # nginx.org/proxy-redirect-from and -to: one value of two annotations
        frm, to = table.proxy_redirect
        if frm.key in annotations or to.key in annotations:
            name = frm.key if frm.key in annotations else to.key
            ok, value = parse(name, lambda _: directive_values.parse_proxy_redirect(
                annotations.get(frm.key), annotations.get(to.key)))
            if ok:
                overrides[frm.sets] = value
    for row in table.requiring:  # e.g. a realm without nginx.org/basic-auth-secret
        if row.key in annotations and row.requires not in annotations:
            warnings.append(f"annotation {row.key} is ignored: {row.requires} is not set")

    for group in table.groups:  # all or nothing (HSTS)
        leader = group[0].key
        present = [r for r in group if r.key in annotations]
        if not present:
            continue
        if leader not in annotations:
            warnings.extend(f"annotation {r.key} is ignored: {leader} is not set" for r in present)
            continue
        values: dict[str, Any] = {}
        n_errors = len(errors)
        for r in present:
            ok, value = parse(r.key, r.parse)  # type: ignore[arg-type]  # a FIELD row has a parser
            if ok:
                values[r.sets] = value
        if len(errors) == n_errors:
            overrides.update(values)

    extra: dict[str, Any] = {}
    for row in table.per_ingress:
        if row.key in annotations:
            ok, value = parse(row.key, row.parse)  # type: ignore[arg-type]  # an INGRESS row has a parser
            if ok:
                extra[row.sets] = value
    params = dataclasses.replace(base, **overrides) if overrides else base
    return IngressAnnotations(params=params, errors=tuple(errors), **extra), warnings


def check_annotations(annotations: Mapping[str, Any] | None, *, snippets_enabled: bool = False,
                      table: AnnotationTable = NGINX_ORG) -> list[str]:
    """The errors `parse_annotations` would report: one message per invalid annotation value."""
    anns, _ = parse_annotations(annotations, _DEFAULT_PARAMS, snippets_enabled=snippets_enabled, table=table)
    return list(anns.errors)


def master_annotations(annotations: Mapping[str, str],
                       table: AnnotationTable = NGINX_ORG) -> tuple[dict[str, str], list[str]]:
    """A master's annotations without those a master may not have; and the removed names (sorted)."""
    denied = table.master_denied
    removed = sorted(k for k in annotations if k in denied)
    return {k: v for k, v in annotations.items() if k not in denied}, removed


def minion_annotations(annotations: Mapping[str, str], master: Mapping[str, str],
                       table: AnnotationTable = NGINX_ORG) -> tuple[dict[str, str], list[str]]:
    """A minion's effective annotations: the master's inheritable ones it does not set itself, the merged
    ones combined (`proxy-set-headers`: the minion wins per header), minus those a minion may not have.
    Returns them and the removed names (sorted)."""
    result = dict(annotations)
    inherited = table.minion_inherited
    for k, v in master.items():
        if k in inherited and k not in result:
            result[k] = v
    for k, merge in table.minion_merged.items():  # nginx.org/proxy-set-headers
        if k in master:
            result[k] = merge(master[k], annotations.get(k))
    denied = table.minion_denied
    removed = sorted(k for k in result if k in denied)
    for k in removed:
        del result[k]
    return result, removed
