"""`apiextensions.k8s.io/v1` CustomResourceDefinitions: the CRD kind and the custom kinds it defines.

Guarantees, as kube-apiserver gives them:
- A CRD is validated on create and update (422 naming the field: names, scope, group, one storage version,
  a structural schema for every version, printer columns) and defaulted (`names.singular`, `names.listKind`,
  `conversion`). Its status is computed in the same write: `acceptedNames`, `storedVersions` and the
  conditions `NamesAccepted` (False with `PluralConflict`/`KindConflict`/`ShortNamesConflict`/
  `ListKindConflict` when another resource of the group uses a name) and `Established`.
- Once a CRD is established its served versions are rows of the kind table at once: discovery, kubectl and
  any client see them on their next request, no restart. Objects are pruned, defaulted and validated with the
  version's schema (422 Invalid with the field path); with `fieldValidation=Strict` (kubectl's default)
  unknown fields are refused (400, "strict decoding error"), with `Warn` pruned with one warning each;
  `/status` exists when the version declares it (the main resource then ignores status and `/status`
  ignores everything else); `metadata.generation` is kept; `kubectl get` shows the version's
  `additionalPrinterColumns` (Name and Age when it has none); its `selectableFields` are field selectors.
- Updating a CRD replaces its rows; stored objects stay, read from then on through the new schema (pruned
  and defaulted by it, with no event and their resourceVersions unchanged). Deleting a CRD first marks it
  (deletionTimestamp and the `customresourcecleanup.apiextensions.k8s.io` finalizer), then deletes every
  object of the kind (one DELETED event each), ends its watches, removes the kind from discovery, and
  finally removes the CRD.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ingressctl.devcluster import jsonpath, schema
from ingressctl.devcluster.objects import DELETED, Event
from ingressctl.devcluster.registry import Registry
from ingressctl.devcluster.resources import (
    AGE,
    ALL_VERBS,
    NAME,
    Column,
    Obj,
    ResourceKind,
    human_duration,
    now_rfc3339,
)
from ingressctl.devcluster.schema import FieldError, go_value
from ingressctl.devcluster.store import Store

GROUP = "apiextensions.k8s.io"
PLURAL = "customresourcedefinitions"
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_RULE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
               "and must start and end with an alphanumeric character")
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")
APPROVAL = "api-approved.kubernetes.io"
CLEANUP = "customresourcecleanup.apiextensions.k8s.io"
Cause = FieldError


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _condition(ctype: str, ok: bool, reason: str, message: str, old: list[Any],
                   now: str) -> dict[str, Any]:
    status = "True" if ok else "False"
    prev = next((c for c in old if isinstance(c, dict) and c.get("type") == ctype), None)
    since = prev.get("lastTransitionTime") if prev and prev.get("status") == status else None
    return {"type": ctype, "status": status, "lastTransitionTime": since or now, "reason": reason,
            "message": message}


# ------------------------------------------------------------------------------------------ validation
def _protected(group: str) -> bool:
    return group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))


def _validate_names(spec: Obj, errs: list[Cause]) -> None:
    names = _dict(spec.get("names"))
    plural = names.get("plural")
    if not plural:
        errs.append(("spec.names.plural", "FieldValueRequired", "Required value"))
    elif not isinstance(plural, str) or not _DNS_LABEL.match(plural):
        errs.append(("spec.names.plural", "FieldValueInvalid",
                     f"Invalid value: {go_value(plural)}: {_LABEL_RULE}"))
    kind = names.get("kind")
    if not kind:
        errs.append(("spec.names.kind", "FieldValueRequired", "Required value"))
    elif not isinstance(kind, str) or not _KIND.match(kind):
        errs.append(("spec.names.kind", "FieldValueInvalid",
                     f"Invalid value: {go_value(kind)}: may have mixed case, but should otherwise match: "
                     "[a-z]([-a-z0-9]*[a-z0-9])?"))
    for key in ("singular", "listKind"):
        value = names.get(key)
        if value is not None and not isinstance(value, str):
            errs.append((f"spec.names.{key}", "FieldValueInvalid", f"Invalid value: {go_value(value)}: "
                         "must be a string"))
    for i, short in enumerate(_list(names.get("shortNames"))):
        if not isinstance(short, str) or not _DNS_LABEL.match(short):
            errs.append((f"spec.names.shortNames[{i}]", "FieldValueInvalid",
                         f"Invalid value: {go_value(short)}: {_LABEL_RULE}"))


def _validate_columns(columns: Any, path: str, errs: list[Cause]) -> None:
    for i, col in enumerate(_list(columns)):
        here = f"{path}[{i}]"
        col = _dict(col)
        if not col.get("name"):
            errs.append((f"{here}.name", "FieldValueRequired", "Required value"))
        if col.get("type") not in _COLUMN_TYPES:
            errs.append((f"{here}.type", "FieldValueNotSupported",
                         f"Unsupported value: {go_value(col.get('type'))}: supported values: "
                         + ", ".join(f'"{t}"' for t in _COLUMN_TYPES)))
        path_text = col.get("jsonPath")
        if not path_text:
            errs.append((f"{here}.jsonPath", "FieldValueRequired", "Required value"))
        else:
            try:
                jsonpath.compile_path(str(path_text))
            except ValueError:
                errs.append((f"{here}.jsonPath", "FieldValueInvalid",
                             f"Invalid value: {go_value(path_text)}: must be a simple json path starting "
                             "with ."))


def _selectable_path(text: Any, root: Obj) -> str:
    """The field-selector name of a selectableFields jsonPath (".spec.color" -> "spec.color"), or "" when the
    path is not a simple field path to a string, integer or boolean field of the schema."""
    try:
        steps = jsonpath.compile_path(str(text))
    except ValueError:
        return ""
    node: Any = root
    for step in steps:
        if step.kind != "field" or not isinstance(node, dict):
            return ""
        node = _dict(node.get("properties")).get(step.key)
    if not isinstance(node, dict) or node.get("type") not in ("string", "integer", "boolean"):
        return ""
    return ".".join(step.key for step in steps)


def _validate_selectable(version: Obj, path: str, errs: list[Cause]) -> None:
    fields = _list(version.get("selectableFields"))
    if len(fields) > 8:
        errs.append((path, "FieldValueTooMany", f"Too many: {len(fields)}: must have at most 8 items"))
    root = _dict(_dict(version.get("schema")).get("openAPIV3Schema"))
    seen: set[str] = set()
    for i, entry in enumerate(fields):
        text = _dict(entry).get("jsonPath")
        name = _selectable_path(text, root)
        if not name:
            errs.append((f"{path}[{i}].jsonPath", "FieldValueInvalid",
                         f"Invalid value: {go_value(text)}: must be a simple path to a field of type string, "
                         "boolean or integer in the schema"))
        elif name in seen:
            errs.append((f"{path}[{i}].jsonPath", "FieldValueDuplicate",
                         f"Duplicate value: {go_value(text)}"))
        seen.add(name)


def _selector_getter(steps: tuple[jsonpath.Step, ...]) -> Callable[[Obj], str]:
    def get(obj: Obj) -> str:
        found = jsonpath.find(steps, obj)
        if not found or found[0] is None:
            return ""
        value = found[0]
        return ("true" if value else "false") if isinstance(value, bool) else str(value)
    return get


def _validate_versions(spec: Obj, errs: list[Cause]) -> None:
    versions = _list(spec.get("versions"))
    if not versions:
        errs.append(("spec.versions", "FieldValueInvalid",
                     "Invalid value: null: must have exactly one version marked as storage version"))
        return
    seen: set[str] = set()
    for i, v in enumerate(versions):
        here = f"spec.versions[{i}]"
        v = _dict(v)
        name = v.get("name")
        if not name or not isinstance(name, str) or not _DNS_LABEL.match(name):
            errs.append((f"{here}.name", "FieldValueInvalid", f"Invalid value: {go_value(name)}: a DNS-1035 "
                         "label must consist of lower case alphanumeric characters or '-'"))
        elif name in seen:
            errs.append((f"{here}.name", "FieldValueInvalid",
                         f"Invalid value: {go_value(name)}: must be unique"))
        seen.add(str(name))
        for flag in ("served", "storage"):
            if not isinstance(v.get(flag), bool):
                errs.append((f"{here}.{flag}", "FieldValueRequired", "Required value"))
        errs.extend(schema.structural_errors(_dict(v.get("schema")).get("openAPIV3Schema"),
                                             f"{here}.schema.openAPIV3Schema"))
        _validate_columns(v.get("additionalPrinterColumns"), f"{here}.additionalPrinterColumns", errs)
        _validate_selectable(v, f"{here}.selectableFields", errs)
    if sum(1 for v in versions if _dict(v).get("storage") is True) != 1:
        errs.append(("spec.versions", "FieldValueInvalid", f"Invalid value: {go_value(versions)}: "
                     "must have exactly one version marked as storage version"))


def validate_crd(obj: Obj, old: Obj | None, subresource: str) -> list[Cause]:
    """Field errors of a CRD write, with kube-apiserver's paths and wording."""
    if subresource:
        return []
    errs: list[Cause] = []
    spec = _dict(obj.get("spec"))
    group = spec.get("group")
    if not group:
        errs.append(("spec.group", "FieldValueRequired", "Required value"))
    elif not isinstance(group, str) or "." not in group:
        errs.append(("spec.group", "FieldValueInvalid",
                     f"Invalid value: {go_value(group)}: should be a domain with at least one dot"))
    scope = spec.get("scope")
    if scope not in ("Cluster", "Namespaced"):
        errs.append(("spec.scope", "FieldValueNotSupported" if scope else "FieldValueRequired",
                     f'Unsupported value: {go_value(scope)}: supported values: "Cluster", "Namespaced"'
                     if scope else "Required value"))
    _validate_names(spec, errs)
    _validate_versions(spec, errs)
    if spec.get("preserveUnknownFields") is True:
        errs.append(("spec.preserveUnknownFields", "FieldValueInvalid", "Invalid value: true: must be false"))
    name = obj["metadata"].get("name", "")
    if isinstance(group, str) and _protected(group) and \
            not _dict(obj["metadata"].get("annotations")).get(APPROVAL):
        errs.append((f"metadata.annotations[{APPROVAL}]", "FieldValueRequired",
                     f'Required value: protected groups must have approval annotation "{APPROVAL}", see '
                     "https://github.com/kubernetes/enhancements/pull/1111"))
    plural = _dict(spec.get("names")).get("plural")
    if plural and group and name != f"{plural}.{group}":
        errs.append(("metadata.name", "FieldValueInvalid",
                     f'Invalid value: {go_value(name)}: must be spec.names.plural+"."+spec.group'))
    if old is not None:
        old_spec = _dict(old.get("spec"))
        for key in ("group", "scope"):
            if old_spec.get(key) != spec.get(key):
                errs.append((f"spec.{key}", "FieldValueInvalid",
                             f"Invalid value: {go_value(spec.get(key))}: field is immutable"))
    return errs


# ------------------------------------------------------------------------------------------ custom kinds
def _column(col: Obj) -> Column:
    steps = jsonpath.compile_path(str(col["jsonPath"]))
    ctype = str(col.get("type", "string"))

    def cell(obj: Obj) -> Any:
        found = jsonpath.find(steps, obj)
        if not found:
            return None
        value = found[0]
        if ctype == "date":
            return _since(value)
        if ctype == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
        if ctype == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if ctype == "boolean" and isinstance(value, bool):
            return value
        return value if isinstance(value, str) else go_value(value)

    return Column(str(col["name"]), cell, type=ctype, format=str(col.get("format", "")),
                  description=str(col.get("description", "")), priority=int(col.get("priority", 0) or 0))


def _since(value: Any) -> str | None:
    """A date cell: the time since an RFC 3339 timestamp, as the API server renders it."""
    if not isinstance(value, str):
        return None
    try:
        then = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return "<invalid>"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return human_duration((datetime.now(UTC) - then).total_seconds())


def _converter(root: Obj) -> Callable[[Obj], Obj]:
    def to_storage(obj: Obj) -> Obj:
        return schema.apply_defaults(schema.prune(obj, root), root)
    return to_storage


def _unknown(root: Obj) -> Callable[[Obj], list[str]]:
    def unknown(obj: Obj) -> list[str]:
        return schema.unknown_fields(obj, root)
    return unknown


def _validator(root: Obj) -> Callable[[Obj, Obj | None, str], list[Cause]]:
    def validate(obj: Obj, old: Obj | None, subresource: str) -> list[Cause]:
        return schema.validate(obj, root)
    return validate


def kinds_for(crd: Obj) -> list[ResourceKind]:
    """The kind-table rows of an established CRD: one per served version, the storage version first."""
    spec = crd["spec"]
    names = _dict(crd.get("status", {}).get("acceptedNames")) or spec["names"]
    group, plural = spec["group"], names["plural"]
    versions = [v for v in spec["versions"] if v.get("served")]
    versions.sort(key=lambda v: not v.get("storage"))
    storage_id = f"{group}/{plural}"
    stored = any(v.get("storage") for v in versions)
    out: list[ResourceKind] = []
    for v in versions:
        root = v["schema"]["openAPIV3Schema"]
        columns = tuple(_column(c) for c in _list(v.get("additionalPrinterColumns")))
        selectable = {_selectable_path(f.get("jsonPath"), root): _selector_getter(
            jsonpath.compile_path(str(f.get("jsonPath")))) for f in _list(v.get("selectableFields"))}
        is_storage = bool(v.get("storage")) or (not stored and not out)
        out.append(ResourceKind(
            group, v["name"], plural, names["kind"], namespaced=spec["scope"] == "Namespaced",
            singular=names.get("singular") or names["kind"].lower(),
            short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
            verbs=ALL_VERBS, has_status="status" in _dict(v.get("subresources")), generation=True,
            strategic_merge=False,
            columns=(NAME, *columns) if columns else (NAME, AGE), field_selectors=selectable,
            to_storage=_converter(root), validate=_validator(root), unknown_fields=_unknown(root),
            storage="" if is_storage else storage_id))
    return out


# ------------------------------------------------------------------------------------------ the CRD kind
class CustomResourceDefinitions:
    """Serves CRDs on a store: the CRD row of the kind table, its status, and the kinds CRDs define."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.registry: Registry = store.registry
        self._served: set[str] = set()       # storage ids of the kinds CRDs define (never a built-in kind's)
        self.kind = ResourceKind(
            GROUP, "v1", PLURAL, "CustomResourceDefinition", namespaced=False,
            singular="customresourcedefinition", short_names=("crd", "crds"), categories=("api-extensions",),
            verbs=ALL_VERBS, has_status=True, generation=True, default=self._default,
            validate=validate_crd, delete_finalizer=CLEANUP, typed="V1CustomResourceDefinition",
            columns=(NAME, Column("Created At", lambda o: o.get("metadata", {}).get("creationTimestamp"),
                                  type="date", description="CreationTimestamp is a timestamp representing "
                                  "the server time when this object was created.")))

    def install(self) -> None:
        """Add the CRD kind to the store's table (unless there) and follow CRD changes."""
        existing = self.registry.by_path(GROUP, "v1", PLURAL)
        if existing is None:
            self.registry.add([self.kind])
        else:
            self.kind = existing
        with self.store.lock:
            self.store.add_bucket_locked(self.registry.stored_kind(self.kind))
        self.store.on_commit(self.kind.storage_id, self._on_commit)

    # ---- status
    def _conflict(self, spec: Obj, own: str) -> tuple[str, str] | None:
        names = _dict(spec.get("names"))
        group = spec.get("group")
        others = [k for k in self.registry.kinds
                  if k.group == group and not (k.storage_id == own and own in self._served)]
        for k in others:
            if k.plural == names.get("plural"):
                return "PluralConflict", f'"{k.plural}" is already in use'
            if k.kind == names.get("kind"):
                return "KindConflict", f'"{k.kind}" is already in use'
            if k.list_kind == names.get("listKind"):
                return "ListKindConflict", f'"{k.list_kind}" is already in use'
            taken = set(k.short_names) & set(_list(names.get("shortNames")))
            if taken:
                return "ShortNamesConflict", f'"{sorted(taken)[0]}" is already in use'
        return None

    def _default(self, obj: Obj, old: Obj | None) -> None:
        spec = obj["spec"] = copy.deepcopy(_dict(obj.get("spec")))
        names = spec["names"] = _dict(spec.get("names"))
        kind = names.get("kind")
        if isinstance(kind, str) and kind:
            names.setdefault("singular", kind.lower())
            names.setdefault("listKind", kind + "List")
        spec.setdefault("conversion", {"strategy": "None"})
        status = _dict(obj.get("status"))
        old_conditions = _list(status.get("conditions"))
        now = (obj["metadata"].get("creationTimestamp") if old is None else None) or now_rfc3339()
        group = spec.get("group")
        conflict = self._conflict(spec, f"{group}/{names.get('plural')}")
        accepted = dict(names) if conflict is None else _dict(status.get("acceptedNames"))
        stored = [str(v.get("name")) for v in _list(spec.get("versions")) if _dict(v).get("storage")]
        stored_versions = list(_list(status.get("storedVersions")))
        stored_versions += [v for v in stored if v not in stored_versions]
        established = conflict is None or bool(accepted)    # names accepted before stay accepted
        conditions = [
            _condition("NamesAccepted", conflict is None, conflict[0] if conflict else "NoConflicts",
                       conflict[1] if conflict else "no conflicts found", old_conditions, now),
            _condition("Established", established, "InitialNamesAccepted" if established else "NotAccepted",
                       "the initial names have been accepted" if established
                       else "not all names are accepted", old_conditions, now),
        ]
        obj["status"] = {"conditions": conditions, "acceptedNames": accepted,
                         "storedVersions": stored_versions}

    # ---- serving
    def _on_commit(self, event: Event) -> None:
        crd = event.stored.parse()
        spec = _dict(crd.get("spec"))
        names = _dict(spec.get("names"))
        storage_id = f"{spec.get('group')}/{names.get('plural')}"
        gone = event.type == DELETED or bool(crd["metadata"].get("deletionTimestamp"))
        established = any(c.get("type") == "Established" and c.get("status") == "True"
                          for c in _list(_dict(crd.get("status")).get("conditions")) if isinstance(c, dict))
        if gone:
            if storage_id in self._served:
                self.registry.replace(storage_id, [])
                self.store.remove_bucket_locked(storage_id)
                self._served.discard(storage_id)
            if event.type != DELETED:     # the objects are gone: the CRD's deletion completes
                self.store.remove_finalizer_locked(self.kind, crd["metadata"]["name"], CLEANUP)
            return
        if storage_id not in self._served and not established:
            return                      # never served (its names were refused)
        kinds = kinds_for(crd)
        schema_changed = storage_id in self._served and event.prev is not None and \
            _dict(event.prev.parse().get("spec")).get("versions") != spec.get("versions")
        self._served.add(storage_id)
        self.registry.replace(storage_id, kinds)
        stored_kind = self.registry.stored_kind(kinds[0])
        self.store.add_bucket_locked(stored_kind)
        if schema_changed and stored_kind.to_storage is not None:
            # Objects read back with the new schema are pruned and defaulted by it.
            self.store.convert_stored_locked(stored_kind, stored_kind.to_storage)
