"""What ingressctl `--ingress-nginx-compat` would make of each Ingress: its class, its verdict, and the status
of each of its `nginx.ingress.kubernetes.io/*` annotations.

Guarantees:
- Nothing here restates the annotation table: every annotation's status and reason is the translator's
  (`translate(...).report`, plus its `problems`: a value ingress-nginx's validator would refuse is `invalid`),
  the effect of a served, translated or approximated one is its row's; whether an Ingress is served is the
  controller's class filter (`IngressClasses`) fed with the IngressClasses read; whether it is rejected is the
  controller's validation (`validate_ingress` with compat on, as the `Rejected` event says it); the warnings
  of a valid one are those of its `IngressSettings` (the `AddedOrUpdatedWithWarning` event's, ingress-nginx's
  annotations against `nginx.org/*` ones included), against the ConfigMap's defaults.
- Verdicts: `served`, `served-with-warnings`, `rejected` (ours, but the controller would reject it, with the
  errors), `not-served` (not of a class ingressctl would serve, or an object the API server refuses: a
  removed apiVersion, a non-string annotation value, no name; with why).
- Annotations are analysed for every Ingress, served or not, and the summary counts them all.
- Files only: an Ingress with no class gets the default IngressClass among the files, as the API server's
  DefaultIngressClass admission does when the manifest is applied (a listed Ingress already has it).
- Deterministic: Ingresses sorted by namespace, name and where they were found; annotations by key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.controller.ingress_class import (
    INGRESS_CLASS_ANNOTATION,
    INGRESS_NGINX_CONTROLLER,
    INGRESS_NGINX_LEGACY_CLASS,
    NGINX_CONTROLLER,
    IngressClasses,
    class_of,
    controller_of,
)
from ingressctl.devcluster.default_class import default_ingress_class
from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.annotation_validation import mergeable_type
from ingressctl.kinds.ingress.annotations_ingress_nginx import INGRESS_NGINX, PREFIX
from ingressctl.kinds.ingress.ingress_nginx.canary import is_canary
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.kinds.ingress.settings import IngressSettings
from ingressctl.kinds.ingress.validation import validate_ingress
from ingressctl.migrate_report.sources import INGRESS_API_VERSION, Inputs, Skipped

INVALID: Final = "invalid"
STATUSES: Final = (*(s.value for s in Status), INVALID)
VERDICTS: Final = ("served", "served-with-warnings", "rejected", "not-served")
_EFFECTIVE = (Status.SERVED, Status.TRANSLATED, Status.APPROXIMATED)


@dataclass(frozen=True)
class Options:
    """The controller flags the verdicts depend on."""

    ingress_class: str = "nginx"
    enable_snippets: bool = False
    allow_empty_ingress_host: bool = False


@dataclass(frozen=True)
class AnnotationEntry:
    key: str
    value: str
    status: str        # a `Status` value, or "invalid"
    reason: str
    effect: str        # what ingressctl renders for it (served, translated, approximated); "" otherwise


@dataclass(frozen=True)
class IngressReport:
    namespace: str
    name: str
    where: str                       # file and document ("" from a cluster)
    ingress_class: str
    class_source: str                # "annotation", "spec", "default IngressClass" or ""
    verdict: str                     # one of VERDICTS
    why: tuple[str, ...]             # why it is served or not
    errors: tuple[str, ...]          # rejected: the errors of its Rejected event
    warnings: tuple[str, ...]        # served: the warnings of its events
    annotations: tuple[AnnotationEntry, ...]


@dataclass(frozen=True)
class ClassInfo:
    name: str
    controller: str
    served: bool
    default: bool
    where: str


@dataclass
class Report:
    origin: str
    options: Options
    ingress_classes: list[ClassInfo] = field(default_factory=list)
    ingresses: list[IngressReport] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def verdict_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(VERDICTS, 0)
        for r in self.ingresses:
            counts[r.verdict] += 1
        return counts

    def annotation_counts(self) -> dict[str, dict[str, int]]:
        """annotation -> status -> how many Ingresses it has that status on (every status present)."""
        out: dict[str, dict[str, int]] = {}
        for r in self.ingresses:
            for e in r.annotations:
                out.setdefault(e.key, dict.fromkeys(STATUSES, 0))[e.status] += 1
        return dict(sorted(out.items()))


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def annotation_entries(annotations: Mapping[str, Any], snippets_enabled: bool) -> tuple[AnnotationEntry, ...]:
    """The translator's report of the ingress-nginx annotations, with its invalid values and the effects."""
    present = {k: _as_text(v) for k, v in annotations.items() if k.startswith(PREFIX)}
    if not present:
        return ()
    tr = translate(present, snippets_enabled=snippets_enabled)
    entries: dict[str, AnnotationEntry] = {}
    for e in tr.report:
        row = INGRESS_NGINX.by_key.get(e.key)
        effect = row.effect.replace("`", "") if row is not None and e.status in _EFFECTIVE else ""
        entries[e.key] = AnnotationEntry(e.key, present.get(e.key, ""), e.status.value, e.reason, effect)
    for p in tr.problems:
        if not p.refused:
            entries[p.key] = AnnotationEntry(p.key, p.value, INVALID, p.detail, "")
    return tuple(entries[k] for k in sorted(entries))


class _Classes:
    """The class filter of a controller started with `--ingress-nginx-compat` on these IngressClasses."""

    def __init__(self, inputs: Inputs, options: Options, report: Report) -> None:
        self.filter = IngressClasses(options.ingress_class, ingress_nginx_compat=True)
        self.controllers: dict[str, str] = {}
        self.origin = inputs.origin
        objs = [f.obj for f in inputs.ingress_classes]
        self.default = default_ingress_class(objs) if inputs.origin == "files" else None
        for found in inputs.ingress_classes:
            name = str(_meta(found.obj).get("name") or "")
            if not name:
                continue
            self.filter.observe(found.obj)
            self.controllers[name] = controller_of(found.obj)
        for found in inputs.ingress_classes:
            name = str(_meta(found.obj).get("name") or "")
            if name:
                served = self.filter.is_ours_class(name, False)
                default = (_meta(found.obj).get("annotations") or {}).get(
                    "ingressclass.kubernetes.io/is-default-class") == "true"
                report.ingress_classes.append(ClassInfo(name, self.controllers[name], served, default,
                                                        found.where))
        primary = options.ingress_class
        controller = self.controllers.get(primary)
        either = f"{NGINX_CONTROLLER} or {INGRESS_NGINX_CONTROLLER}"
        if controller is not None and controller not in (NGINX_CONTROLLER, INGRESS_NGINX_CONTROLLER):
            report.notes.append(f"IngressClass {primary} has controller {controller}: ingressctl "
                                f"--ingress-class {primary} would not start (it must name {either}); pass "
                                "--ingress-class with a class of its own")
        elif controller is None and inputs.origin == "cluster" and not inputs.notes:
            report.notes.append(f"IngressClass {primary} does not exist: ingressctl --ingress-class "
                                f"{primary} would not start until it does (spec.controller {either})")

    def decide(self, ing: Mapping[str, Any]) -> tuple[str, str, bool, str]:
        """(class, where it comes from, served, why)."""
        cls, from_annotation = class_of(ing)
        source = "annotation" if from_annotation else "spec" if cls else ""
        if not cls and self.default and _no_class_set(ing):
            cls, source = self.default, "default IngressClass"
        if self.filter.is_ours_class(cls, from_annotation):
            if cls == self.filter.primary:
                via = f" (the annotation {INGRESS_CLASS_ANNOTATION})" if from_annotation else ""
                why = f"class {cls}{via} is the --ingress-class"
            elif cls in self.filter.compat_names:
                why = f"class {cls}: IngressClass {cls} has controller {INGRESS_NGINX_CONTROLLER}"
            else:
                why = f"the legacy annotation {INGRESS_CLASS_ANNOTATION}: {INGRESS_NGINX_LEGACY_CLASS}"
            if source == "default IngressClass":
                why += " (the default IngressClass, which the API server sets when the Ingress is created)"
            return cls, source, True, why
        if not cls:
            return cls, source, False, (f"no class: neither the annotation {INGRESS_CLASS_ANNOTATION} nor "
                                        "spec.ingressClassName is set (as ingress-nginx without "
                                        "--watch-ingress-without-class, ingressctl serves no Ingress "
                                        "without a class)")
        controller = self.controllers.get(cls)
        if controller is not None:
            return cls, source, False, (f"class {cls}: IngressClass {cls} has controller {controller!r}, not "
                                        f"{INGRESS_NGINX_CONTROLLER}")
        where = "among the files" if self.origin == "files" else "in the cluster"
        return cls, source, False, f"class {cls}: there is no IngressClass {cls} {where}"


def _no_class_set(ing: Mapping[str, Any]) -> bool:
    """Whether DefaultIngressClass admission would set the class (neither field nor annotation present)."""
    spec = ing.get("spec")
    if isinstance(spec, dict) and spec.get("ingressClassName") is not None:
        return False
    return INGRESS_CLASS_ANNOTATION not in (_meta(ing).get("annotations") or {})


def _api_refusals(ing: Mapping[str, Any]) -> list[str]:
    """Why the API server would not take this object at all (files only; a listed Ingress passed)."""
    out: list[str] = []
    api_version = str(ing.get("apiVersion") or "")
    if api_version != INGRESS_API_VERSION:
        out.append(f"the API server refuses it: apiVersion {api_version}: Kubernetes serves Ingresses as "
                   f"{INGRESS_API_VERSION} only (the beta versions were removed in 1.22): convert the "
                   "manifest")
    refuses = "the API server refuses it: "
    if not isinstance(ing.get("metadata"), dict):
        out.append(refuses + "metadata: must be a map")
    spec = ing.get("spec")
    if spec is not None and not isinstance(spec, dict):
        out.append(refuses + "spec: must be a map")
    elif isinstance(spec, dict):
        for name, kind in (("ingressClassName", str), ("rules", list), ("tls", list)):
            if spec.get(name) is not None and not isinstance(spec[name], kind):
                out.append(f"{refuses}spec.{name}: must be a {'string' if kind is str else 'list'}")
    meta = _meta(ing)
    if not meta.get("name"):
        out.append(refuses + "metadata.name: Required value")
    annotations = meta.get("annotations")
    if annotations is not None and not isinstance(annotations, dict):
        out.append("the API server refuses it: metadata.annotations: must be a map of strings")
    elif annotations:
        for k, v in sorted(annotations.items()):
            if not isinstance(v, str):
                out.append(f"the API server refuses it: metadata.annotations.{k}: the value "
                           f"{json.dumps(v, default=str)} is not a string: quote it in the manifest")
    return out


def _settings_warnings(annotations: dict[str, str], options: Options) -> tuple[str, ...]:
    static = StaticConfigParams(enable_snippets=options.enable_snippets, ingress_nginx_compat=True)
    return tuple(dict.fromkeys(IngressSettings(annotations, ConfigParams(), static).warnings))


def analyse_ingress(found_obj: Mapping[str, Any], where: str, classes: _Classes, options: Options) \
        -> IngressReport:
    meta = _meta(found_obj)
    namespace = str(meta.get("namespace") or "default")
    name = str(meta.get("name") or "")
    raw = meta.get("annotations")
    annotations = raw if isinstance(raw, dict) else {}
    entries = annotation_entries(annotations, options.enable_snippets)
    cls, source, served, why = classes.decide(found_obj)
    refusals = _api_refusals(found_obj)
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    if refusals:
        verdict, reasons = "not-served", (*refusals, why)
    elif not served:
        verdict, reasons = "not-served", (why,)
    else:
        reasons = (why,)
        errors = tuple(str(e) for e in validate_ingress(
            found_obj, snippets_enabled=options.enable_snippets,
            allow_empty_host=options.allow_empty_ingress_host, ingress_nginx_compat=True))
        if errors:
            verdict = "rejected"
        else:
            warnings = _settings_warnings({str(k): str(v) for k, v in annotations.items()}, options)
            verdict = "served-with-warnings" if warnings else "served"
    return IngressReport(namespace, name, where, cls, source, verdict, reasons, errors, warnings, entries)


def analyse(inputs: Inputs, options: Options, namespace: str | None = None) -> Report:
    """See the module docstring. `namespace`: only the Ingresses of that namespace."""
    report = Report(inputs.origin, options, skipped=list(inputs.skipped), notes=list(inputs.notes))
    classes = _Classes(inputs, options, report)
    for found in inputs.ingresses:
        r = analyse_ingress(found.obj, found.where, classes, options)
        if namespace is None or r.namespace == namespace:
            report.ingresses.append(r)
    report.ingresses.sort(key=lambda r: (r.namespace, r.name, r.where))
    report.ingress_classes.sort(key=lambda c: (c.name, c.where))
    report.notes.extend(_shared_hosts(inputs, report))
    return report


def _shared_hosts(inputs: Inputs, report: Report) -> list[str]:
    """A note for each host that several served Ingresses name, canaries and mergeable Ingresses left out
    (ingressctl serves them in one server, as ingress-nginx did, with the server-level settings of the oldest
    one: which one that is depends on creation times the note does not know)."""
    served = {(r.namespace, r.name, r.where) for r in report.ingresses
              if r.verdict in ("served", "served-with-warnings")}
    by_host: dict[str, list[str]] = {}
    for found in inputs.ingresses:
        meta = _meta(found.obj)
        key = (str(meta.get("namespace") or "default"), str(meta.get("name") or ""), found.where)
        spec = found.obj.get("spec")
        if key not in served or not isinstance(spec, dict) or is_canary(found.obj) or \
                mergeable_type(found.obj):
            continue
        for rule in spec.get("rules") or []:
            host = rule.get("host") if isinstance(rule, dict) else None
            if host and f"{key[0]}/{key[1]}" not in by_host.setdefault(str(host), []):
                by_host[str(host)].append(f"{key[0]}/{key[1]}")
    return [f"host {host} is named by {len(names)} served Ingresses ({', '.join(sorted(names))}): one "
            "server serves the paths of all of them, as ingress-nginx did; its server-level settings (TLS "
            "certificate, HTTPS redirect, app-root, server-snippet, auth-tls-*) are those of the oldest, and "
            "a path two of them name goes to the oldest"
            for host, names in sorted(by_host.items()) if len(names) > 1]
