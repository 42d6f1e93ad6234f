"""The shared policy generator (NIC's `generatePolicies`): the policies of one context (a VirtualServer's
spec or route, a VirtualServerRoute's subroute, an Ingress server or location) as NGINX lines.

Contract (other policy types and owners build on it; changes are additive only):
- The caller resolves each reference of the context into a `ResolvedPolicy` (the Policy object or None
  when missing, its validation error, its Secrets as `PolicySecret`s keyed by the type's field name, e.g.
  `"secret"`, `"clientSecret"`), and describes the context in a `PolicyContext` (owner, level, NGINX
  capabilities, replica count, TLS). `generate_policies(refs, ctx)` returns one `PolicyResult`.
- Per type a renderer `(type_spec, ctx) -> PolicyResult` is registered in `POLICY_RENDERERS` under the
  type's spec key (`register_policy_renderer`). It receives a copy of the context with the policy's
  namespace/name, its Secrets, `index` (its position among the policies of its type in this context) and
  `siblings` (the specs of every policy of its type in this context, in order; `sibling_keys` their
  "namespace/name"), so it can apply NIC's
  "first of a kind wins" / "concatenate" / "second one is an error" rules itself. The Secret types each
  field must have are declared in `POLICY_SECRET_FIELDS` (type key -> field -> Secret type); the generator
  checks them before the renderer runs (a wrong type or an invalid Secret makes the context fail).
- Fail closed: a missing policy, an invalid policy, a bad Secret, a policy type without a renderer, or a
  renderer's `error` replace the whole context's result by an error result (`error` set, no lines): the
  owner renders `return 500;` for that context, and the warnings name the reason ("Policy ns/name is
  missing or invalid", or the renderer's text). Warnings of every policy are kept either way.
- `PolicyResult` lines are complete NGINX directives ("limit_req zone=... burst=5;") whose user values
  went through `configs.quoting`; owners emit them verbatim. `http` lines belong at http level and are
  meant to be deduplicated by the owner across its contexts (`dedupe`); `server` lines at server level
  (spec / Ingress server contexts), `location` lines inside each location of the context (including its
  internal split and match locations), `locations` are extra internal locations for the server.
  `inherited` (server-level contexts) maps a type to lines each location gets unless its own context has
  a policy of that type (`types` lists a context's types), for rules that cannot sit at server level and
  still be overridden by a location (NIC: the route's policy of a type wins over the spec's).
- Never reads the cluster; pure apart from the registries, which are filled at import time. The
  controller side: `controller.policy_kind.PolicyStore.resolve_for([(namespace, [refs, ...])])` resolves
  references (with their Secrets, for every field in `POLICY_SECRET_FIELDS`, through
  `controller.policy_secrets`); a Secret type the store does not know yet is added with
  `controller.secrets.register_secret_type`; `configs.policy_vs` is the VirtualServer's use of this module.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

LEVEL_SPEC = "spec"            # VirtualServer spec.policies: server context
LEVEL_ROUTE = "route"          # VirtualServer spec.routes[].policies: location context
LEVEL_SUBROUTE = "subroute"    # VirtualServerRoute spec.subroutes[].policies: location context
LEVEL_SERVER = "server"        # Ingress: server context
LEVEL_LOCATION = "location"    # Ingress: location context
SERVER_LEVELS = frozenset({LEVEL_SPEC, LEVEL_SERVER})


@dataclass(frozen=True)
class PolicySecret:
    """A Secret a policy refers to, as the controller resolved it."""

    key: str                          # "namespace/name"
    secret_type: str = ""             # the Secret's type; "" when missing
    path: str = ""                    # its file for NGINX (types that have one), "" otherwise
    error: str = ""                   # non-empty: missing or invalid (the store's message)
    crl_path: str = ""                # nginx.org/ca with a `ca.crl`: the file NGINX reads the CRL from


@dataclass(frozen=True)
class ResolvedPolicy:
    """One policy reference of a context, resolved by the caller."""

    key: str                                          # "namespace/name" of the reference
    policy: Mapping[str, Any] | None = None           # None: no such Policy (or not ours)
    error: str = ""                                   # the Policy failed validation
    secrets: Mapping[str, PolicySecret] = field(default_factory=dict)   # type field name -> Secret


@dataclass(frozen=True)
class PolicyContext:
    """Where the policies of one context render, and what the renderers may depend on."""

    owner_kind: str                       # "virtualserver" / "ingress"
    owner_namespace: str
    owner_name: str
    level: str                            # LEVEL_*
    vsr_namespace: str = ""               # set when a VirtualServerRoute holds the policy (subroute level)
    vsr_name: str = ""
    context_id: str = ""                  # unique per context within the owner (e.g. the route's index)
    tls: bool = False                     # the server terminates TLS
    capabilities: frozenset[str] = frozenset()   # NGINX capabilities (feature names)
    is_plus: bool = False
    replicas: int = 1                     # controller replicas (rateLimit.scale)
    # What the types of `policy_ext` need from the static configuration and the cluster:
    cache_dir: str = ""                   # root of the cache zones' directories (cache)
    secrets_dir: str = ""                 # where crlFileName files are expected (ingressMTLS)
    enable_snippets: bool = False         # externalAuth authSnippets
    error_server: str = ""                # the 502 server, for an auth upstream without endpoints
    endpoints: Mapping[str, tuple[str, ...]] = field(default_factory=dict)   # "ns/svc:port" -> ready
                                                                            # endpoints (externalAuth)
    # Filled by generate_policies for each renderer call:
    policy_namespace: str = ""
    policy_name: str = ""
    secrets: Mapping[str, PolicySecret] = field(default_factory=dict)
    index: int = 0                        # position among the policies of this type in the context
    siblings: tuple[Mapping[str, Any], ...] = ()   # specs of every policy of this type in the context
    sibling_keys: tuple[str, ...] = ()    # their "namespace/name", in the same order

    @property
    def is_server_level(self) -> bool:
        return self.level in SERVER_LEVELS


@dataclass(frozen=True)
class PolicyLocation:
    """An extra internal location a policy needs (e.g. an auth_request target)."""

    path: str                              # "= /_external_auth/x" style: modifier and path, already safe
    lines: tuple[str, ...]


@dataclass
class PolicyResult:
    """NGINX lines of one context (or one policy); `error` makes the context answer 500."""

    http: list[str] = field(default_factory=list)
    server: list[str] = field(default_factory=list)
    location: list[str] = field(default_factory=list)
    locations: list[PolicyLocation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str = ""
    # Server-level contexts only: lines for each location of the server whose own context has no policy of
    # that type (for what cannot be written at server level and still be overridden by a location).
    inherited: dict[str, list[str]] = field(default_factory=dict)
    types: list[str] = field(default_factory=list)     # the policy types of the context (generate_policies)

    def extend(self, other: PolicyResult) -> None:
        self.http.extend(other.http)
        self.server.extend(other.server)
        self.location.extend(other.location)
        self.locations.extend(other.locations)
        self.warnings.extend(other.warnings)
        for type_key, lines in other.inherited.items():
            self.inherited.setdefault(type_key, []).extend(lines)
        if other.error and not self.error:
            self.error = other.error

    @property
    def lines(self) -> list[str]:
        """The lines of the context's own block (server lines at server level, location lines otherwise)."""
        return [*self.server, *self.location]


PolicyRenderer = Callable[[Mapping[str, Any], PolicyContext], PolicyResult]
POLICY_RENDERERS: dict[str, PolicyRenderer] = {}
POLICY_SECRET_FIELDS: dict[str, dict[str, str]] = {}

# NIC's order of the types; also the order in which their lines are emitted within a context.
TYPE_ORDER: tuple[str, ...] = ("accessControl", "rateLimit", "ingressMTLS", "egressMTLS", "basicAuth",
                               "apiKey", "cache", "cors", "externalAuth", "jwt", "oidc")


def register_policy_renderer(key: str, renderer: PolicyRenderer,
                             secret_fields: Mapping[str, str] | None = None) -> None:
    """Register the renderer of a policy type and the Secret types its fields must have."""
    POLICY_RENDERERS[key] = renderer
    if secret_fields:
        POLICY_SECRET_FIELDS[key] = dict(secret_fields)


def policy_type_of(policy: Mapping[str, Any]) -> str:
    """The type key of a Policy object: the first key of its spec in TYPE_ORDER or POLICY_RENDERERS."""
    spec = policy.get("spec")
    if not isinstance(spec, Mapping):
        return ""
    for k in (*TYPE_ORDER, *POLICY_RENDERERS):
        if spec.get(k) is not None:
            return k
    return ""


def ref_key(ref: Any, default_namespace: str) -> str:
    """A policy reference (`{name, namespace?}`) as "namespace/name"; the namespace defaults to the one of
    the object that holds the reference."""
    r = ref if isinstance(ref, Mapping) else {}
    return f"{r.get('namespace') or default_namespace}/{r.get('name') or ''}"


def ref_keys(refs: Any, default_namespace: str) -> list[str]:
    """The keys of a list of references, in order, without repeats."""
    items = refs if isinstance(refs, list) else []
    return list(dict.fromkeys(ref_key(r, default_namespace) for r in items))


def missing_or_invalid(key: str) -> str:
    return f"Policy {key} is missing or invalid"


def name_part(value: str) -> str:
    """A name as part of an NGINX variable or zone name (NIC replaces dashes by underscores)."""
    return value.replace("-", "_").replace(".", "_")


MAX_NAME = 120


def short_name(value: str) -> str:
    """`name_part(value)`, cut to MAX_NAME characters with a digest of the whole when longer: NGINX keeps
    variable names in a hash whose buckets (`variables_hash_bucket_size`) must hold the longest one."""
    name = name_part(value)
    if len(name) <= MAX_NAME:
        return name
    return f"{name[:MAX_NAME - 17]}_{hashlib.sha256(name.encode()).hexdigest()[:16]}"


def secret_error(type_label: str, secret: PolicySecret | None, expected: str) -> str:
    """NIC's message for a policy Secret that cannot be used, or "" when it is fine."""
    if secret is None or (not secret.secret_type and secret.error):
        key = secret.key if secret else "?"
        return f"{type_label} secret {key} is invalid: secret doesn't exist or of an unsupported type"
    if secret.secret_type != expected:
        return (f"{type_label} secret {secret.key} is of a wrong type '{secret.secret_type}', "
                f"must be '{expected}'")
    if secret.error:
        return f"{type_label} secret {secret.key} is invalid: {secret.error}"
    return ""


_TYPE_LABELS = {"basicAuth": "Basic Auth", "apiKey": "APIKey", "ingressMTLS": "IngressMTLS",
                "egressMTLS": "EgressMTLS", "jwt": "JWT", "oidc": "OIDC", "externalAuth": "ExternalAuth"}


def _check_secrets(type_key: str, ref: ResolvedPolicy) -> str:
    for fname, expected in POLICY_SECRET_FIELDS.get(type_key, {}).items():
        spec = (ref.policy or {}).get("spec") or {}
        if not (spec.get(type_key) or {}).get(fname):
            continue    # optional field not set (required ones are enforced by validation)
        err = secret_error(_TYPE_LABELS.get(type_key, type_key), ref.secrets.get(fname), expected)
        if err:
            return err
    return ""


def generate_policies(refs: Sequence[ResolvedPolicy], ctx: PolicyContext) -> PolicyResult:
    """The NGINX lines of one context's policies (see the module docstring)."""
    out = PolicyResult()
    errors: list[str] = []
    by_type: dict[str, list[tuple[ResolvedPolicy, Mapping[str, Any]]]] = {}
    for ref in refs:
        if ref.policy is None or ref.error:
            out.warnings.append(missing_or_invalid(ref.key))
            errors.append(missing_or_invalid(ref.key))
            continue
        type_key = policy_type_of(ref.policy)
        if type_key not in POLICY_RENDERERS:
            msg = missing_or_invalid(ref.key)
            out.warnings.append(msg)
            errors.append(msg)
            continue
        spec = ref.policy.get("spec") or {}
        value = spec.get(type_key)
        by_type.setdefault(type_key, []).append((ref, value if isinstance(value, Mapping) else {}))
    order = [k for k in TYPE_ORDER if k in by_type] + [k for k in by_type if k not in TYPE_ORDER]
    for type_key in order:
        entries = by_type[type_key]
        siblings = tuple(spec for _, spec in entries)
        sibling_keys = tuple(_policy_key(ref) for ref, _ in entries)
        for i, (ref, spec) in enumerate(entries):
            err = _check_secrets(type_key, ref)
            if err:
                out.warnings.append(err)
                errors.append(err)
                continue
            meta = (ref.policy or {}).get("metadata") or {}
            pctx = dataclasses.replace(ctx, policy_namespace=str(meta.get("namespace") or ""),
                                       policy_name=str(meta.get("name") or ""), secrets=ref.secrets,
                                       index=i, siblings=siblings, sibling_keys=sibling_keys)
            result = POLICY_RENDERERS[type_key](spec, pctx)
            out.extend(result)
            if result.error:
                errors.append(result.error)
    if errors:
        return PolicyResult(warnings=list(dict.fromkeys(out.warnings)), error=errors[0], types=order)
    out.warnings = list(dict.fromkeys(out.warnings))
    out.types = order
    return out


def _policy_key(ref: ResolvedPolicy) -> str:
    meta = (ref.policy or {}).get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def dedupe(lines: Iterable[str]) -> list[str]:
    """Lines without repeats, first occurrence order (http-level lines shared by several contexts)."""
    return list(dict.fromkeys(lines))


# The types of this project register themselves in `policy_renderers.py` (imported below), so the registry
# is complete whenever this module is imported.
from ingressctl.configs import policy_ext as _policy_ext  # noqa: E402, F401  (registration)
from ingressctl.configs import policy_renderers as _policy_renderers  # noqa: E402,F401  (registration)
