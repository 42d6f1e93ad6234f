"""What every policy type is made of, and what the policy generator hands it (NIC's `generatePolicies`
contract).

Contract (types and owners build on it; changes are additive only):
- A type is one `PolicyType` value in its own module, listed in `ingressctl.policies.POLICY_TYPES`: its spec
  key, NIC's label for messages, its validator `(field, type_spec, config) -> [FieldError]`, its renderer
  `(type_spec, ctx) -> PolicyResult`, the Secret types its fields must have (`secret_fields`, field name ->
  Secret type), the Secret types it brings to the Secret store (`secret_types`), and its docs (the fields and
  NGINX cells of docs/policies.md's generated table).
- The caller resolves each reference of a context into a `ResolvedPolicy` (the Policy object or None when
  missing, its validation error, its Secrets as `PolicySecret`s keyed by the type's field name, e.g.
  `"secret"`, `"clientSecret"`), and describes the context in a `PolicyContext` (owner, level, NGINX
  capabilities, replica count, TLS).
- A renderer receives a copy of the context with the policy's namespace/name, its Secrets, `index` (its
  position among the policies of its type in this context) and `siblings` (the specs of every policy of its
  type in this context, in order; `sibling_keys` their "namespace/name"), so it can apply NIC's "first of
  a kind wins" / "concatenate" / "second one is an error" rules itself.
- `PolicyResult` lines are complete NGINX directives ("limit_req zone=... burst=5;") whose user values
  went through `configs.quoting`; owners emit them verbatim. `http` lines belong at http level and are
  meant to be deduplicated by the owner across its contexts (`dedupe`); `server` lines at server level
  (spec / Ingress server contexts), `location` lines inside each location of the context (including its
  internal split and match locations), `locations` are extra internal locations for the server.
  `inherited` (server-level contexts) maps a type to lines each location gets unless its own context has
  a policy of that type (`types` lists a context's types), for rules that cannot sit at server level and
  still be overridden by a location (NIC: the route's policy of a type wins over the spec's).
- Pure: nothing here reads the cluster or registers anything.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ingressctl.configs.config import PolicyLocation
from ingressctl.secret_types import SecretType
from ingressctl.validation import FieldError

LEVEL_SPEC = "spec"            # VirtualServer spec.policies: server context
LEVEL_ROUTE = "route"          # VirtualServer spec.routes[].policies: location context
LEVEL_SUBROUTE = "subroute"    # VirtualServerRoute spec.subroutes[].policies: location context
LEVEL_SERVER = "server"        # Ingress: server context
LEVEL_LOCATION = "location"    # Ingress: location context
SERVER_LEVELS = frozenset({LEVEL_SPEC, LEVEL_SERVER})
INGRESS_OWNER = "ingress"


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
    # What some types need from the static configuration and the cluster (`generator.policy_context_params`):
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


@dataclass(frozen=True)
class PolicyValidationConfig:
    """NIC's `PolicyValidationConfig`: the switches some types depend on."""

    is_plus: bool = False
    enable_snippets: bool = False
    enable_oidc: bool = False


PolicyTypeValidator = Callable[[str, Mapping[str, Any], PolicyValidationConfig], list[FieldError]]


@dataclass(frozen=True)
class PolicyType:
    """One policy type (see the module docstring); its module defines it as `TYPE`."""

    key: str                                   # the spec key: "rateLimit", "cors", ...
    label: str                                 # NIC's name of the type in messages: "Basic Auth", "CORS"
    validate: PolicyTypeValidator
    render: PolicyRenderer
    fields_doc: str                            # its fields and defaults (docs/policies.md's table)
    nginx_doc: str                             # the NGINX it makes (docs/policies.md's table)
    secret_fields: Mapping[str, str] = field(default_factory=dict)   # field -> the Secret type it names
    secret_types: tuple[SecretType, ...] = ()  # Secret types beyond TLS and htpasswd that it needs stored
    plus_only: bool = False                    # NGINX Plus: accepted, never rendered (the context fails)


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


def dedupe(lines: Iterable[str]) -> list[str]:
    """Lines without repeats, first occurrence order (http-level lines shared by several contexts)."""
    return list(dict.fromkeys(lines))


def policy_key(ctx: PolicyContext) -> str:
    """The "namespace/name" of the policy a renderer is called for."""
    return f"{ctx.policy_namespace}/{ctx.policy_name}"


def at_level(result: PolicyResult, ctx: PolicyContext) -> PolicyResult:
    """Move the context lines to the server when the context is the server."""
    if ctx.is_server_level:
        result.server, result.location = result.location, []
    return result


def ignored(label: str, ctx: PolicyContext) -> PolicyResult:
    """NIC's warning for a second policy of a type that allows one per context (the first one applies)."""
    return PolicyResult(warnings=[f"Multiple {label} policies in the same context is not valid. {label} "
                                  f"policy {policy_key(ctx)} will be ignored"])


def vsr_of(ctx: PolicyContext) -> tuple[str, str] | None:
    """The VirtualServerRoute that holds the policy (subroute contexts), else None."""
    return (ctx.vsr_namespace, ctx.vsr_name) if ctx.level == LEVEL_SUBROUTE and ctx.vsr_name else None


def plus_only(type_label: str) -> PolicyRenderer:
    """The renderer of an NGINX Plus type: the context fails closed with "... requires NGINX Plus"."""
    def render(spec: Mapping[str, Any], ctx: PolicyContext) -> PolicyResult:
        msg = f"{type_label} policy {policy_key(ctx)} requires NGINX Plus"
        return PolicyResult(warnings=[msg], error=msg)
    return render


def unescape(value: Any) -> str:
    """A validated string as NGINX should read it: validation requires `"` escaped as `\\"`, the quoting
    escapes again, so the escapes are undone first."""
    return re.sub(r'\\(["\\])', r"\1", str(value or ""))
