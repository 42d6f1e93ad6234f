"""The Ingress's registry entry and model builder (NIC's `createIngressEx` and `createMergeableIngresses`).

Guarantees:
- `IngressBuilder.apply` builds the IngressEx of a regular Ingress, or the MergeableIngresses of a master and
  its minions, from the informer caches (Services, EndpointSlices, the LocalSecretStore) and hands it to the
  Configurator. Warnings about backends (missing Service or port, ExternalName) are the Ingress's own; each
  minion's warnings go to that minion (NIC's ChildWarnings), not to the master.
- `prepare` does the building half of `apply` ahead (start-up, so that the renders can run in parallel);
  the next `apply` of that very object takes what it built, so each Ingress is built, and its events raised,
  once.
- Only the backends of hosts the Ingress owns are resolved (a minion: only the paths it won; a member of an
  ingress-nginx shared host: its paths of the hosts it shares with the owner, built here as the owner's
  `members`, their warnings and events their own).
- `nginx.org/use-cluster-ip: "true"` makes a backend's single endpoint the Service's cluster IP (with
  `--ingress-nginx-compat`, so does `nginx.ingress.kubernetes.io/service-upstream: "true"` when
  `nginx.org/use-cluster-ip` is absent).
- `nginx.org/policies` are resolved by `self.policies` (see `policy_ext_refs`); with `--ingress-nginx-compat`
  ingress-nginx's `auth-tls-*` add an ingressMTLS Policy of their own (`ingress_nginx/authtls.py`), its
  `proxy-ssl-*` an egressMTLS Policy (`ingress_nginx/proxyssl.py`); a
  missing, invalid or unsupported Policy gets a `Rejected` Warning event on the Ingress (or minion) that
  references it.
- A backend Service without endpoints gets a `NoEndpoints` Warning event on the Ingress (or minion) that
  routes to it, once per Ingress and Service until the reason changes (`endpoint_warnings`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ingressctl.controller.config_map_cache import CONFIGMAP_KIND
from ingressctl.controller.endpoints import BackendError, cluster_ip_endpoint, resolve_backend_endpoints
from ingressctl.controller.handlers import IngressHandler
from ingressctl.controller.ingress_class import IngressClasses
from ingressctl.controller.kinds import Applied, Enqueue, EventHandler, ResourceKind
from ingressctl.controller.model import Resource
from ingressctl.controller.status import KindStatusWriter
from ingressctl.k8s.resource import INGRESSES
from ingressctl.keys import INGRESS_KIND, ResourceKey
from ingressctl.kinds.ingress.annotations_ingress_nginx import SERVICE_UPSTREAM
from ingressctl.kinds.ingress.annotations_nginx_org import BASIC_AUTH_SECRET, USE_CLUSTER_IP
from ingressctl.kinds.ingress.endpoint_warnings import (
    REASON_NO_ENDPOINTS,
    EndpointWarnings,
    no_endpoints_reason,
)
from ingressctl.kinds.ingress.ingress_ex import INGRESS_TYPES, IngressEx, MergeableIngresses, backend_key
from ingressctl.kinds.ingress.ingress_nginx.authtls_policy import with_auth_tls
from ingressctl.kinds.ingress.ingress_nginx.basic_auth import auth_map_secret
from ingressctl.kinds.ingress.ingress_nginx.canary import canary_warnings
from ingressctl.kinds.ingress.ingress_nginx.default_backend import DEFAULT_BACKEND, service_of, service_port
from ingressctl.kinds.ingress.ingress_nginx.header_maps import referenced_keys
from ingressctl.kinds.ingress.ingress_nginx.passthrough import (
    MERGEABLE,
    IngressPassthroughs,
    https_services,
    wants_passthrough,
)
from ingressctl.kinds.ingress.ingress_nginx.proxyssl_policy import with_proxy_ssl
from ingressctl.kinds.ingress.ingress_nginx.www_redirect import certified_names
from ingressctl.kinds.ingress.model import IngressConfiguration, claimed_hosts
from ingressctl.kinds.ingress.refs import ingress_backends, ingress_secrets
from ingressctl.kinds.policy.refs import REASON_REJECTED, IngressPolicyResolver
from ingressctl.secret_types import SecretReference
from ingressctl.validation import parse_go_bool


def referenced_secret_keys(ingresses: Iterable[Mapping[str, Any]],
                           is_ours: Callable[[Mapping[str, Any]], bool]) -> Iterator[str]:
    """The keys ("namespace/name") of the Secrets that the Ingresses among `ingresses` that are ours reference
    (TLS and basic auth), possibly repeated: what building them will ask the Secret store for. Pure: reads
    only its arguments."""
    for ing in ingresses:
        if is_ours(ing):
            ns = str((ing.get("metadata") or {}).get("namespace") or "")
            for name in ingress_secrets(ing).names:
                yield f"{ns}/{name}"


class Caches(Protocol):
    """Reads of the informer caches (thread-safe)."""

    def get_object(self, plural: str, key: str) -> dict[str, Any] | None: ...

    def endpoint_slices(self, namespace: str, service: str) -> list[dict[str, Any]]: ...


class SecretReferences(Protocol):
    def get_secret_reference(self, key: str) -> SecretReference: ...

    def get_ca_reference(self, key: str) -> SecretReference: ...

    def get_auth_map_reference(self, key: str) -> SecretReference: ...


class IngressConfigurator(Protocol):
    """The Configurator's Ingress entry points."""

    def add_or_update_ingress(self, ing_ex: IngressEx) -> list[str]: ...

    def add_or_update_mergeable_ingress(self, mergeable: MergeableIngresses) -> list[str]: ...

    def minion_warnings(self, master_key: str) -> dict[str, list[str]]: ...


_MEMBER = " (member)"  # the no-endpoints bookkeeping of an Ingress's paths on other Ingresses' servers
Warn = Callable[[dict[str, Any], str, str], None]
"""A Warning event on an Ingress: (object, reason, message)."""


@dataclass
class _Built:
    """What `IngressBuilder` hands the Configurator for one Ingress (or master), with the warnings of its
    building and, for a master, its minions' own warnings."""

    key: ResourceKey
    renderable: IngressEx | MergeableIngresses
    warnings: list[str]
    child_warnings: dict[str, list[str]] = field(default_factory=dict)


class IngressBuilder:
    """See the module docstring."""

    def __init__(self, caches: Caches, secrets: SecretReferences, configurator: IngressConfigurator,
                 warn: Warn, *, ingress_nginx_compat: bool = False) -> None:
        self._caches = caches
        self._ingress_nginx_compat = ingress_nginx_compat
        self._secrets = secrets
        self._configurator = configurator
        self._warn = warn
        self._endpoint_warnings = EndpointWarnings()
        self._prepared: dict[ResourceKey, tuple[Resource, _Built]] = {}  # see prepare
        # nginx.org/policies: set when custom resources are enabled (the Policy kind's wiring); without it
        # the annotation is ignored with a warning.
        self.policies = IngressPolicyResolver(None, caches.get_object, caches.endpoint_slices)
        # ingress-nginx's ssl-passthrough: enabled by the TransportServer wiring (--enable-tls-passthrough),
        # which hands it the shared passthrough table; without it the annotation is ignored with a warning.
        self.passthrough = IngressPassthroughs()

    def forget(self, key: ResourceKey) -> None:
        self._endpoint_warnings.forget(key.ns_name)
        self._endpoint_warnings.forget(key.ns_name + _MEMBER)
        self.passthrough.forget(key)

    def prepare(self, resource: Resource) -> tuple[ResourceKey, object]:
        """The first half of `apply`, done ahead for a batch: builds what the Configurator renders (the
        IngressEx, or the MergeableIngresses of a master) with its warnings and events, and keeps it for the
        next `apply` of this very object. Returns (key, what the Configurator renders), for
        `Configurator.render_ahead`."""
        built = self._build(resource)
        self._prepared[resource.key_with_kind] = (resource, built)
        return built.key, built.renderable

    def drop_prepared(self) -> None:
        """Forget what `prepare` built and no `apply` took."""
        self._prepared.clear()

    def apply(self, resource: Resource) -> Applied:
        prepared = self._prepared.pop(resource.key_with_kind, None)
        built = prepared[1] if prepared is not None and prepared[0] is resource else self._build(resource)
        if isinstance(built.renderable, MergeableIngresses):
            result = self._configurator.add_or_update_mergeable_ingress(built.renderable)
            # Each minion's warnings go to its own events (NIC's ChildWarnings), not to the master's.
            child = {k: list(v) for k, v in built.child_warnings.items()}
            prefixed: set[str] = set()
            for minion_key, ws in self._configurator.minion_warnings(built.renderable.master.key).items():
                child.setdefault(minion_key, []).extend(ws)
                prefixed.update(f"minion {minion_key}: {w}" for w in ws)
            result = [w for w in result if w not in prefixed]
            self.passthrough.forget(resource.key_with_kind)
            return Applied(resource, built.warnings + result, child_warnings=child)
        warnings = list(self._configurator.add_or_update_ingress(built.renderable))
        if self._ingress_nginx_compat:
            warnings += self.passthrough.apply(built.renderable)
        child = {k: list(v) for k, v in built.child_warnings.items()}
        for member_key, ws in self._configurator.minion_warnings(built.renderable.key).items():
            child.setdefault(member_key, []).extend(ws)  # (the members of its shared hosts)
        return Applied(resource, built.warnings + warnings, child_warnings=child)

    def _build(self, resource: Resource) -> _Built:
        if not isinstance(resource, IngressConfiguration):
            raise TypeError(f"not an Ingress resource: {resource.key_with_kind}")
        if resource.is_master:
            return self._build_mergeable(resource)
        ex, ex_warnings = self.create_ingress_ex(resource)
        if self._ingress_nginx_compat:  # ssl-passthrough: the `/` backends terminate TLS themselves
            ex = dataclasses.replace(ex, https_services=https_services(ex.ingress, ex.valid_hosts))
        child: dict[str, list[str]] = {}
        if resource.members:  # ingress-nginx's shared hosts: their paths of the hosts, oldest first
            members = []
            for m in resource.members:
                mex, mw = self.create_ingress_ex(IngressConfiguration(
                    ingress=m.ingress, key=m.key, valid_hosts=dict.fromkeys(m.hosts, True)), member=True)
                members.append(mex)
                child.setdefault(m.key, []).extend(mw)
            ex = dataclasses.replace(ex, members=tuple(members))
        if resource.canaries:
            canaries = []
            for c in resource.canaries:
                spec = c.ingress.get("spec") or {}
                valid = {h: resource.valid_hosts.get(h, False) for h in claimed_hosts(spec)}
                ccfg = IngressConfiguration(ingress=c.ingress, key=c.key, valid_hosts=valid)
                cex, cw = self.create_ingress_ex(ccfg)
                canaries.append(cex)
                child[c.key] = canary_warnings(ex.ingress, c.ingress, ccfg.valid_hosts,
                                               [m.ingress for m in ex.members]) + cw
            ex = dataclasses.replace(ex, canaries=tuple(canaries))
        return _Built(ex.key_with_kind, ex, list(resource.warnings) + ex_warnings, child)

    def _build_mergeable(self, cfg: IngressConfiguration) -> _Built:
        master_ex, warnings = self.create_ingress_ex(cfg)
        minion_exes: list[IngressEx] = []
        child: dict[str, list[str]] = {k: list(v) for k, v in cfg.child_warnings.items()}
        for m in cfg.minions:
            mcfg = IngressConfiguration(ingress=m.ingress, key=m.key, valid_hosts=cfg.valid_hosts,
                                        is_minion=True, valid_minion_paths=m.valid_paths)
            mex, mw = self.create_ingress_ex(mcfg, valid_minion_paths=m.valid_paths)
            minion_exes.append(mex)
            child.setdefault(m.key, []).extend(mw)
            if self._ingress_nginx_compat and wants_passthrough(m.ingress):
                child[m.key].append(MERGEABLE)
        if self._ingress_nginx_compat and wants_passthrough(cfg.ingress):
            warnings.append(MERGEABLE)
        mergeable = MergeableIngresses(master=master_ex, minions=minion_exes)
        return _Built(master_ex.key_with_kind, mergeable, list(cfg.warnings) + warnings, child)

    def create_ingress_ex(self, cfg: IngressConfiguration, *,
                          valid_minion_paths: dict[str, bool] | None = None,
                          member: bool = False) -> tuple[IngressEx, list[str]]:
        """Services and endpoints of every backend, secret references. Returns the IngressEx and warnings
        about backends (missing Service or port, ExternalName). `member`: built for an owner's shared hosts
        (`is_member`; its no-endpoints warnings are told apart from those of its own resource)."""
        ing = cfg.ingress
        meta = ing.get("metadata") or {}
        ns = str(meta.get("namespace") or "")
        annotations = meta.get("annotations") or {}
        # Go's strconv.ParseBool, as validation checks it (an invalid value never gets this far).
        use_cluster_ip = parse_go_bool(str(annotations.get(USE_CLUSTER_IP, ""))) is True
        if self._ingress_nginx_compat and USE_CLUSTER_IP not in annotations:  # nginx.org's wins
            use_cluster_ip = parse_go_bool(str(annotations.get(SERVICE_UPSTREAM, ""))) is True
        warnings: list[str] = []
        endpoints: dict[str, list[str]] = {}
        seen: set[str] = set()
        no_endpoints: dict[str, str] = {}   # Service -> why it has no endpoints
        backends = ingress_backends(ing, valid_hosts=None if cfg.is_minion else cfg.valid_hosts,
                                    valid_paths=valid_minion_paths)
        for svc_name, port in backends:
            bkey = backend_key(svc_name, port)
            if bkey in seen:
                continue
            seen.add(bkey)
            svc = self._caches.get_object("services", f"{ns}/{svc_name}")
            try:
                if use_cluster_ip and svc is not None:
                    eps = cluster_ip_endpoint(svc, port)
                else:
                    slices = self._caches.endpoint_slices(ns, svc_name)
                    eps = resolve_backend_endpoints(ns, svc_name, port, svc, slices)
                    if not eps:
                        no_endpoints.setdefault(svc_name, no_endpoints_reason(ns, svc_name, port, slices))
            except BackendError as e:
                warnings.append(str(e))
                eps = []
            endpoints[bkey] = eps
        default_backend = None
        if self._ingress_nginx_compat and (dsvc := service_of(ing)):  # ingress-nginx's default-backend
            default_backend, eps, problem = self._default_backend(ns, dsvc)
            if problem:
                warnings.append(f"annotation {DEFAULT_BACKEND}: {problem}; ignored")
            elif default_backend is not None:
                endpoints[backend_key(*default_backend)] = eps
        seen_as = cfg.key + _MEMBER if member else cfg.key
        for message in self._endpoint_warnings.observe(seen_as, no_endpoints):
            self._warn(ing, REASON_NO_ENDPOINTS, message)
        # ingress-nginx's auth-map: the Secret read in full into a file of its own (not its `auth` key's)
        auth_map = auth_map_secret(annotations, ns) \
            if self._ingress_nginx_compat and BASIC_AUTH_SECRET not in annotations else ""
        secret_refs = {name: (self._secrets.get_auth_map_reference if name == auth_map
                              else self._secrets.get_secret_reference)(f"{ns}/{name}")
                       for name in ingress_secrets(ing, ingress_nginx=self._ingress_nginx_compat).names}
        policies, policy_endpoints, policy_warnings, rejected = self.policies.resolve(ing)
        if self._ingress_nginx_compat:  # auth-tls-* and proxy-ssl-*: an ingressMTLS / egressMTLS Policy
            policies, tls_warnings = with_auth_tls(ing, policies, self._secrets.get_secret_reference,
                                                   lambda k: self._caches.get_object("secrets", k))
            policies, ssl_warnings = with_proxy_ssl(ing, policies, self._secrets.get_secret_reference,
                                                    self._secrets.get_ca_reference)
            policy_warnings += tls_warnings + ssl_warnings
        warnings += policy_warnings
        for message in rejected:
            self._warn(ing, REASON_REJECTED, message)
        ex = IngressEx(ingress=ing, valid_hosts=dict(cfg.valid_hosts), endpoints=endpoints,
                       external_name_svcs=set(), secret_refs=secret_refs,
                       valid_minion_paths=dict(valid_minion_paths or {}), policies=policies,
                       policy_endpoints=policy_endpoints, default_backend=default_backend, is_member=member)
        if self._ingress_nginx_compat:  # ingress-nginx's from-to-www-redirect over HTTPS
            ex.www_tls_names = certified_names(ing, lambda n: self._caches.get_object("secrets", f"{ns}/{n}"))
            ex.config_maps = {k: self._caches.get_object(CONFIGMAP_KIND, k)
                              for k in referenced_keys(annotations, ns)}
        return ex, warnings

    def _default_backend(self, ns: str, name: str) -> tuple[tuple[str, int] | None, list[str], str]:
        """ingress-nginx's default-backend Service: (Service, first port), its ready endpoints, or why not."""
        svc = self._caches.get_object("services", f"{ns}/{name}")
        if svc is None:
            return None, [], f"Service {ns}/{name} not found"
        port = service_port(svc)
        if port is None:
            return None, [], f"Service {ns}/{name} has no ports"
        try:
            eps = resolve_backend_endpoints(ns, name, port, svc, self._caches.endpoint_slices(ns, name))
        except BackendError as e:
            return None, [], str(e)
        return (name, port), eps, ""


def ingress_kind(*, ingress_class: str | IngressClasses, caches: Caches, secrets: SecretReferences,
                 configurator: IngressConfigurator, status: KindStatusWriter, warn: Warn) -> ResourceKind:
    """The Ingress's registry entry."""
    classes = ingress_class if isinstance(ingress_class, IngressClasses) else IngressClasses(ingress_class)

    def handler(enqueue: Enqueue) -> EventHandler:
        return IngressHandler(enqueue, classes)

    return ResourceKind(name=INGRESS_KIND, rt=INGRESSES, handler=handler,
                        builder=IngressBuilder(caches, secrets, configurator, warn,
                                               ingress_nginx_compat=classes.compat), status=status,
                        metric_types=INGRESS_TYPES)

