"""Validating admission: an `admission.k8s.io/v1` AdmissionReview in, its response out, by resource kind.

Guarantees:
- `review(body, ...)` is pure apart from read-only lookups in the controller's Configuration: it never runs
  NGINX, never writes a file, never starts a process, never takes a lock. It either returns the response
  AdmissionReview (a dict) or raises `MalformedReview` with a message for a 400; any other exception is a
  validator bug, which the HTTP layer turns into a 500 (kube-apiserver then applies the failurePolicy).
- Validators are looked up by (API group, kind) of `request.kind` through one function (`validator_for`,
  fed by `VALIDATORS` / `register_validator`); a kind without a validator is allowed untouched, and so is
  every DELETE and CONNECT.
- Ingresses are validated by exactly the code the Configuration uses (`validate_ingress` with the
  controller's `is_plus` / `snippets_enabled`, joined by `aggregate_message`); an Ingress of another class
  is allowed without a look at its content, as the controller ignores it too.
- A custom kind of the resource-kind registry (VirtualServer, VirtualServerRoute, present only with custom
  resources enabled and served) is validated through its registry entry's Configuration part, exactly as
  the sync loop does (`is_ours`, then `validate`): `registry_lookup(kinds)` answers for the registry's kinds
  and falls back to `validator_for`; `VALIDATORS` itself is never changed by it. A registry kind outside
  the Configuration (Policy) brings its own validator (`admission`), used the same way.
- Cross-object checks only warn (AdmissionReview `warnings`): a host already owned by an Ingress that wins
  the ownership rule (older, then greater UID; not when both share hosts, as ingress-nginx's Ingresses do)
  and a minion whose host has no master. They read the
  Configuration's host index with single dict lookups (a parent kind's hosts, such as a VirtualServer's,
  are checked the same way), which the GIL makes atomic, so the sync thread is
  never blocked; the answer reflects the state of the last completed sync.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol

from ingressctl.controller.configuration import ConfigurationKind
from ingressctl.controller.kinds import ConfigurationView, Validator, Verdict
from ingressctl.controller.model import Claims, Entry, best, host_taken_warning, make_entry
from ingressctl.keys import INGRESS_KIND, ResourceKey, object_key
from ingressctl.kinds.ingress.annotation_validation import is_master, mergeable_type
from ingressctl.kinds.ingress.model import claimed_hosts
from ingressctl.kinds.ingress.validation import validate_ingress
from ingressctl.validation import aggregate_message

ADMISSION_API_VERSION: Final = "admission.k8s.io/v1"
OPERATIONS: Final = ("CREATE", "UPDATE", "DELETE", "CONNECT")
MAX_WARNINGS: Final = 20           # kube-apiserver truncates long warning lists; keep ours short
MAX_WARNING_LENGTH: Final = 512


class MalformedReview(ValueError):
    """The body is not an AdmissionReview this webhook can answer (HTTP 400)."""


# ---------------------------------------------------------------------------------------------------------
# Ingress


def validate_ingress_admission(obj: Mapping[str, Any], old: Mapping[str, Any] | None,
                               config: ConfigurationView) -> Verdict:
    """The controller's validation of an Ingress plus the host-ownership warnings."""
    if not config.has_correct_ingress_class(obj):
        return Verdict()
    errors = aggregate_message(validate_ingress(obj, is_plus=config.is_plus,
                                                snippets_enabled=config.snippets_enabled,
                                                ingress_nginx_compat=config.ingress_nginx_compat))
    if errors:
        return Verdict(message=f"{object_key(obj)} was rejected: {errors}")
    return Verdict(warnings=ingress_host_warnings(obj, config))


def _keeps(host: str, owner_key: ResourceKey, owner: Mapping[str, Any], key: ResourceKey,
           obj: Mapping[str, Any], config: ConfigurationView) -> bool:
    """Whether `owner` keeps `host` against `obj`: the Configuration's own ownership rule (`best`)."""
    def entry(k: ResourceKey, o: Mapping[str, Any]) -> Entry:
        shares = k.kind == INGRESS_KIND and config.shares_hosts(o)
        return make_entry(k, dict(o), Claims("regular", (host,), shares_hosts=shares))
    kept = entry(owner_key, owner)
    return best((kept, entry(key, obj)), host) is kept


def ingress_host_warnings(obj: Mapping[str, Any], config: ConfigurationView) -> list[str]:
    """Hosts of `obj` another configured resource keeps; for a minion, hosts without a master."""
    key = ResourceKey(INGRESS_KIND, object_key(obj))
    minion = mergeable_type(obj) == "minion"
    warnings: list[str] = []
    for host in dict.fromkeys(claimed_hosts(obj.get("spec") or {})):
        owner_key = config.host_owner(host)
        owner = config.get_object(owner_key) if owner_key and owner_key != key else None
        if minion:
            if owner_key is None or (owner_key != key and (owner is None or owner_key.kind != INGRESS_KIND
                                                            or not is_master(owner))):
                warnings.append(f"host {host} has no Ingress master: the minion is not configured until "
                                "a master for the host exists")
        else:
            warnings.extend(_host_taken(key, obj, host, config))
    return warnings


def _host_taken(key: ResourceKey, obj: Mapping[str, Any], host: str, config: ConfigurationView) -> list[str]:
    """The warning for `host` when another configured resource that wins the ownership rule keeps it."""
    owner_key = config.host_owner(host)
    owner = config.get_object(owner_key) if owner_key is not None and owner_key != key else None
    if owner is None or owner_key is None or not _keeps(host, owner_key, owner, key, obj, config):
        return []
    if owner_key.kind == INGRESS_KIND and config.shares_hosts(obj) and config.shares_hosts(owner):
        return []  # ingress-nginx Ingresses: the owner's server serves its paths too
    return [host_taken_warning(host, owner_key.ns_name, config.api_kind(owner_key))]


# ---------------------------------------------------------------------------------------------------------
# Dispatch by (group, kind)

VALIDATORS: dict[tuple[str, str], Validator] = {
    ("networking.k8s.io", "Ingress"): validate_ingress_admission,
}


def register_validator(group: str, kind: str, validator: Validator) -> None:
    """Add (or replace) the validator of a kind; a resource-kind registry entry calls this."""
    VALIDATORS[(group, kind)] = validator


def validator_for(group: str, kind: str) -> Validator | None:
    return VALIDATORS.get((group, kind))


# ---------------------------------------------------------------------------------------------------------
# Kinds of the resource-kind registry


class RegistryEntry(Protocol):
    """The part of a resource-kind registry entry admission reads."""

    @property
    def rt(self) -> Any: ...        # its ResourceType: .group and .kind

    @property
    def model(self) -> ConfigurationKind | None: ...


def kind_validator(model: ConfigurationKind) -> Validator:
    """A registry kind's validator: its Configuration part's class filter and validation (the sync loop's
    code), then, for a parent kind, the host-ownership warnings."""

    def validate(obj: Mapping[str, Any], old: Mapping[str, Any] | None, config: ConfigurationView) -> Verdict:
        if not model.is_ours(obj):
            return Verdict()
        errors = model.validate(obj)
        if errors:
            return Verdict(message=f"{model.api_kind} {object_key(obj)} was rejected: {errors}")
        claims = model.claims(obj)
        if claims.role != "parent":
            return Verdict()
        key = ResourceKey(model.kind, object_key(obj))
        hosts = dict.fromkeys(claims.hosts)
        return Verdict(warnings=[w for host in hosts for w in _host_taken(key, obj, host, config)])

    return validate


def registry_lookup(kinds: Iterable[RegistryEntry],
                    fallback: Callable[[str, str], Validator | None] = validator_for
                    ) -> Callable[[str, str], Validator | None]:
    """A lookup answering for every registry kind with a Configuration part (the built-in Ingress has none
    and stays with `fallback`)."""
    own = {(k.rt.group, k.rt.kind): kind_validator(k.model) for k in kinds if k.model is not None}
    own.update({(k.rt.group, k.rt.kind): v for k in kinds if k.model is None
                and (v := getattr(k, "admission", None)) is not None})

    def lookup(group: str, kind: str) -> Validator | None:
        return own.get((group, kind)) or fallback(group, kind)

    return lookup


# ---------------------------------------------------------------------------------------------------------
# AdmissionReview


def _field(d: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    value = d.get(name)
    if not isinstance(value, kind):
        raise MalformedReview(f"{where}.{name} must be a {'string' if kind is str else 'JSON object'}")
    return value


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def review(body: Any, config: ConfigurationView,
           lookup: Callable[[str, str], Validator | None] = validator_for) -> dict[str, Any]:
    """Answer a decoded AdmissionReview (see the module docstring)."""
    if not isinstance(body, dict):
        raise MalformedReview("the body must be a JSON object (an AdmissionReview)")
    if body.get("apiVersion") != ADMISSION_API_VERSION or body.get("kind") != "AdmissionReview":
        raise MalformedReview(f"expected apiVersion {ADMISSION_API_VERSION} and kind AdmissionReview, got "
                              f"{str(body.get('apiVersion'))[:100]!r} {str(body.get('kind'))[:100]!r}")
    request = _field(body, "request", dict, "AdmissionReview")
    uid = _field(request, "uid", str, "request")
    if not uid:
        raise MalformedReview("request.uid must not be empty")
    kind = _field(request, "kind", dict, "request")
    group, kind_name = kind.get("group", ""), kind.get("kind")
    if not isinstance(group, str) or not isinstance(kind_name, str) or not kind_name:
        raise MalformedReview("request.kind must have a string group and a non-empty kind")
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise MalformedReview(f"request.operation must be one of {', '.join(OPERATIONS)}")
    verdict = Verdict()
    validator = lookup(group, kind_name)
    if validator is not None and operation in ("CREATE", "UPDATE"):
        obj = _field(request, "object", dict, "request")
        old = request.get("oldObject")
        if operation == "UPDATE" and not isinstance(old, dict):
            raise MalformedReview("request.oldObject must be a JSON object on UPDATE")
        if not isinstance(obj.get("metadata", {}), dict):
            raise MalformedReview("request.object.metadata must be a JSON object")
        verdict = validator(obj, old if isinstance(old, dict) else None, config)
    response: dict[str, Any] = {"uid": uid, "allowed": not verdict.message}
    if verdict.message:
        response["status"] = {"code": 400, "message": verdict.message}
    if verdict.warnings:
        response["warnings"] = [_clip(w, MAX_WARNING_LENGTH) for w in verdict.warnings[:MAX_WARNINGS]]
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response}
