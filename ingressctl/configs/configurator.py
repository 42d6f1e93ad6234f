"""The Configurator (NIC's `configs.Configurator`): resources -> per-kind renderers -> the file engine -> one
verified NGINX reload.

Guarantees:
- The constructor writes nginx.conf and removes conf.d files it did not write (a previous run's leftovers), so
  the Manager can start NGINX right after it with a config that holds only what this controller renders.
- Kind-agnostic: each kind registers a `Renderer` (file naming, rendering, counts); resources are keyed by
  `ResourceKey`, so an Ingress and another kind's resource with the same namespace and name have different
  files, outcomes and rejections. Ingresses are served by `IngressRenderer` (`conf.d/<ns>-<name>.conf`).
- Every file write and every reload goes through the file engine (`ConfigFiles`, see its guarantees: write
  only changed bytes, no reload without a change, last good versions restored and offenders isolated after a
  failed reload). No mutating method reloads NGINX: call `reload_if_needed()`. While reloads are disabled
  (batching) the changes accumulate. Secret files (the LocalSecretStore's and the special TLS Secrets') are
  written through it too; a changed special Secret requests a reload.
- A resource whose config cannot be rendered (an invalid annotation, an unsafe value, a broken custom
  template) keeps its previous file; the error is returned in `ReloadOutcome.failed` by the next
  `reload_if_needed()`. When NGINX refuses a file that also serves parts of other resources (the members of
  an Ingress's shared hosts), what it refuses is found by nginx -t (configs.part_isolation) and the file is
  served with the last served versions of those parts (or of the resource itself, with its parts' new
  versions) in the same `reload_if_needed()`: the parts' errors are in `ReloadOutcome.failed_parts`, a
  resource served so is in `failed` and `parts_served`.
- The catch-all (an Ingress without rules that owns the class's catch-all, as its renderer tells): nginx.conf
  names its upstream (`$ingressctl_catch_all`), and while one exists every other server sends its unmatched
  paths and hosts there; when one appears or goes, every resource is rendered again (written only where
  bytes change).
- Mergeable Ingresses: a master and its minions are one resource, keyed and named by the master; minions have
  no file. `resource_counts()` counts them (for Ingresses: regular ones, masters and their minions).
- Load shape: the built-in nginx.conf declares the ConfigMap's proxy settings once (`proxy_defaults`) and
  Ingress locations equal to them inherit them; with a custom main template every location repeats them.
  With `certificates_per_handshake` the certificates of the Ingress TLS servers are loaded by NGINX at
  handshakes, not at reloads: their server names map to their PEM files in conf.d/ingressctl-certificates
  .conf (a `CertificateMap`, written before the reload that needs it), and the 0600 secret files belong to
  NGINX's worker user when the controller runs as root. While nginx.conf loads the upstream-front module,
  every upstream block of an http {} file starts with `ingressctl_upstream_front` (configs.upstream_front),
  so NGINX does not scan every earlier upstream for each `proxy_pass`.
- `render_ahead` (start-up) renders many resources at once in forked processes (configs.prerender); an
  `add_or_update` of one of those very objects under the same render context takes the result instead of
  rendering, so the files are byte for byte what rendering here would write.
- Not thread-safe: one sync thread owns the Configurator, as it owns NGINX."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence

from ingressctl.configs import escaped_uri
from ingressctl.configs.certificate_map import CertificateMap, worker_uid
from ingressctl.configs.config import ZONE_BYTES_PER_SERVER, error_server_address, shared_zone_size
from ingressctl.configs.configmaps import (
    ConfigParams,
    StaticConfigParams,
    generate_main_config,
    proxy_defaults,
)
from ingressctl.configs.dynamic_upstreams import DynamicUpstreams
from ingressctl.configs.files import REASON_ENDPOINTS, REASON_OTHER, ConfigFiles, ReloadOutcome, WrittenAhead
from ingressctl.configs.part_isolation import HeldBackParts
from ingressctl.configs.prerender import MEASURED_ITEMS, MIN_ITEMS, RenderAheadStats, render_ahead
from ingressctl.configs.renderers import (
    ChildCounter,
    IngressRenderer,
    PartSplitter,
    RenderContext,
    Rendered,
    Renderer,
)
from ingressctl.configs.route_state import RouteState
from ingressctl.configs.route_updates import RouteUpdates
from ingressctl.configs.routes import CERTIFICATE_VARIABLE, SPARES_KEY, capturing_names, spare_count
from ingressctl.configs.templates import TemplateError, TemplateExecutor, TemplateRenderError
from ingressctl.configs.upstream_front import front_upstreams
from ingressctl.keys import INGRESS_KIND, ResourceKey
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses
from ingressctl.logging import get_logger
from ingressctl.nginx.conf_dir import WrittenFile
from ingressctl.nginx.manager import Manager
from ingressctl.nginx.modules import DYNAMIC_PEERS, ROUTES, UPSTREAM_FRONT
from ingressctl.nginx.paths import STREAM_CONF_D_DIR
from ingressctl.nginx.routes import SOCKET_DIR, SOCKET_NAME, RoutesClient

log = get_logger(__name__)

__all__ = ["REASON_ENDPOINTS", "REASON_OTHER", "Configurator", "ReloadOutcome"]

DHPARAM_FILE = "dhparam.pem"
CERTIFICATE_MAP_FILE = "ingressctl-certificates"  # conf.d/<this>.conf: the CertificateMap
SPARES_FILE = "ingressctl-route-spares"  # conf.d/<this>.conf: the routes' spare upstreams (configs.routes)


class Configurator:
    """Renders resources into conf.d through per-kind renderers and reloads NGINX through the file engine."""

    def __init__(self, manager: Manager, static: StaticConfigParams, config: ConfigParams,
                 templates: TemplateExecutor, *, is_wildcard_enabled: bool = False,
                 prune_stale_configs: bool = True,
                 special_secrets: Mapping[str, bytes] | None = None,
                 certificates_per_handshake: bool = False) -> None:
        """`special_secrets`: secrets/<name> files written before nginx.conf (the default server's and the
        wildcard TLS Secrets' PEM files, which `static` names). `certificates_per_handshake`: Ingress TLS
        servers share the default server's SSL context, which loads their certificates at handshakes
        (through a `CertificateMap`; NGINX's workers must be able to reach the secrets dir)."""
        static = dataclasses.replace(static, conf_dir=manager.conf_dir, run_dir=manager.run_dir,
                                     secrets_dir=manager.secrets_dir)
        self._certificates: CertificateMap | None = None
        self.files = ConfigFiles(manager)
        if certificates_per_handshake:
            try:
                self.files.secret_owner = worker_uid(static.worker_user, manager.secrets_dir)
            except ValueError as e:
                log.warning("TLS certificates are loaded at reloads, not at handshakes", reason=str(e))
            else:
                self._certificates = CertificateMap(static.default_server_tls_path)
                static = dataclasses.replace(static, certificates_per_handshake=True)
        if is_wildcard_enabled and not static.wildcard_tls_path:
            wildcard = os.path.join(manager.secrets_dir, "wildcard")
            static = dataclasses.replace(static, wildcard_tls_path=wildcard)
        self._manager = manager
        self._static = static
        self._config = config
        self._templates = templates
        self._renderers: dict[str, Renderer] = {}
        # Kind -> its renderer as a ChildCounter, or None: checked once (a Protocol isinstance costs ~20 us,
        # twice per resource at 10,000 resources).
        self._child_counters: dict[str, ChildCounter | None] = {}
        self._splitters: dict[str, PartSplitter | None] = {}  # (the same, for PartSplitter)
        self._resources: dict[ResourceKey, object] = {}  # key -> the latest resource given
        self._counts: dict[str, dict[str, int]] = {}  # kind -> its renderer's counts of _resources, in step
        self._child_warnings: dict[ResourceKey, dict[str, list[str]]] = {}  # key -> child -> warnings
        self._replicas = 1
        self._ctx: tuple[tuple[object, ...], RenderContext] | None = None  # see _render_context
        self._zone_bytes: dict[ResourceKey, int] = {}  # key -> what its upstreams reserve in the shared zone
        self._zone_total = 0
        self._zone_size = shared_zone_size(0)  # as nginx.conf declares it
        self._catch_alls: dict[ResourceKey, str] = {}  # key -> upstream of a catch-all rendered here
        self._upstream_front = False  # nginx.conf loads the upstream-front module (configs.upstream_front)
        self._plain_request_uri = False  # nginx.conf does not define the escaped URI (configs.escaped_uri)
        self._routes = RouteState()  # routable hosts as routes while nginx.conf loads the routes module
        self._spares_written = False  # conf.d holds the routes' spares file
        # key -> (resource, context, text forms, result, its file if written ahead) (see render_ahead)
        self._ahead: dict[ResourceKey, tuple[object, RenderContext, tuple[bool, bool], Rendered,
                                             WrittenAhead | None]] = {}
        self._parts = HeldBackParts()  # the parts of shared files NGINX refused, held back
        self.register_renderer(IngressRenderer())

        if prune_stale_configs:
            self.files.prune_stale()
        for name, content in (special_secrets or {}).items():
            self.files.create_secret(name, content, 0o600)
        for warning in self._update_templates(config):
            log.warning("template override ignored", error=warning)
        self.files.init_main(self._render_main())
        self._sync_modules()
        # What the modules changed (the routes' spares and certificates) is there before NGINX starts.
        self._write_certificate_map()
        self.files.init_main(self._render_main())
        self.files.loaded_as_written()

    # ------------------------------------------------------------------ state

    def register_renderer(self, renderer: Renderer) -> None:
        """Serve a kind (replaces an earlier renderer of that kind)."""
        self._renderers[renderer.kind] = renderer
        child_counter = renderer if isinstance(renderer, ChildCounter) else None
        self._child_counters[renderer.kind] = child_counter
        self._splitters[renderer.kind] = renderer if isinstance(renderer, PartSplitter) else None
        held = [r for k, r in self._resources.items() if k.kind == renderer.kind]
        self._counts[renderer.kind] = dict(renderer.counts(held))
        if child_counter is not None:
            for child_kind, counts in child_counter.child_counts(held).items():
                self._counts[child_kind] = dict(counts)

    @property
    def static(self) -> StaticConfigParams:
        return self._static

    @property
    def config(self) -> ConfigParams:
        return self._config

    @property
    def rejected(self) -> dict[ResourceKey, str]:
        """Resources whose latest config NGINX does not serve, with why."""
        return self.files.rejected

    def has_pending_changes(self) -> bool:
        """True if some file differs from what NGINX last loaded (or a render error waits to be reported)."""
        return self.files.has_pending_changes()

    def file_names(self) -> dict[ResourceKey, str]:
        """Each rendered resource's conf.d file name (without .conf)."""
        return self.files.files()

    def resource_counts(self) -> dict[str, dict[str, int]]:
        """Per kind, the renderer's counts of the resources it holds, and of the child kinds a renderer's
        resources carry (VirtualServerRoutes inside their VirtualServers); kept up to date as resources come
        and go: reading them after every task costs nothing per resource."""
        return {kind: dict(counts) for kind, counts in self._counts.items()}

    def _hold(self, key: ResourceKey, resource: object | None) -> None:
        """Make `resource` the latest of `key` (None: forget it), keeping `_counts` in step."""
        old = self._resources.pop(key, None) if resource is None else self._resources.get(key)
        if resource is not None:
            self._resources[key] = resource
        renderer, counts = self._renderers.get(key.kind), self._counts.get(key.kind)
        if renderer is None or counts is None:
            return
        child_counter = self._child_counters.get(key.kind)
        for sign, r in ((-1, old), (1, resource)):
            if r is not None:
                for t, n in renderer.counts((r,)).items():
                    counts[t] = counts.get(t, 0) + sign * n
                if child_counter is not None:
                    for child_kind, cs in child_counter.child_counts((r,)).items():
                        child = self._counts.setdefault(child_kind, {})
                        for t, n in cs.items():
                            child[t] = child.get(t, 0) + sign * n

    def minion_warnings(self, master_key: str) -> dict[str, list[str]]:
        """Per-minion warnings of the last render of a master (minion key -> warnings)."""
        return self.child_warnings(ResourceKey(INGRESS_KIND, master_key))

    def child_warnings(self, key: ResourceKey) -> dict[str, list[str]]:
        """Warnings of the last render of `key` that belong to its children (a master's minions)."""
        return {k: list(v) for k, v in self._child_warnings.get(key, {}).items()}

    def set_controller_replicas(self, replicas: int) -> None:
        """The number of controller replicas, for `nginx.org/limit-req-scale` (from the next render on)."""
        self._replicas = max(1, int(replicas))

    def disable_reloads(self) -> None:
        self.files.disable_reloads()

    def enable_reloads(self) -> None:
        self.files.enable_reloads()

    @property
    def reloads_enabled(self) -> bool:
        return self.files.reloads_enabled

    # ------------------------------------------------------------------ changes (any kind)

    def add_or_update(self, key: ResourceKey, resource: object) -> list[str]:
        """Render one resource with its kind's renderer and write its file if the bytes changed; returns the
        warnings (an unknown kind is a render failure of that resource)."""
        self._hold(key, resource)
        self._child_warnings.pop(key, None)
        renderer = self._renderers.get(key.kind)
        if renderer is None:
            self.files.fail(key, f"error generating configuration for {key.ns_name}: no renderer for the "
                                 f"kind {key.kind!r}")
            return []
        self._set_catch_all(key, renderer.catch_all(resource))
        ctx = self._render_context()
        resource = self._parts.effective(key, self._splitters.get(key.kind), resource)
        try:
            rendered, written = (self._take_rendered_ahead(key, resource, ctx)
                                 or (self._render(renderer, key, resource, ctx), None))
        except (ValueError, TemplateRenderError) as e:
            log.error("render failed", resource=str(key), error=str(e))
            self.files.fail(key, f"error generating configuration for {key.ns_name}: {e}")
            return []
        except Exception as e:  # a bug must cost one resource, not the sync thread
            log.exception("render failed unexpectedly", resource=str(key))
            self.files.fail(key, f"error generating configuration for {key.ns_name}: {type(e).__name__}: {e}")
            return []
        if rendered.child_warnings:
            self._child_warnings[key] = rendered.child_warnings
        if self._certificates is not None:
            self._certificates.set(key, rendered.certificates)
        name = self.files.file_name(key, renderer.file_name(key))
        self.files.write(key, name, rendered.text, written)
        spares = self.files.dynamic.spare_slots(name) if self.files.dynamic is not None else 0
        self._reserve_zone(key, rendered.zone_bytes + spares * ZONE_BYTES_PER_SERVER)
        if self._routes.route_shapes.set(key, rendered.route_shapes):
            self._update_main()  # a body size no routed location had: nginx.conf declares its location
        self._set_captures(key, capturing_names(rendered.text))
        return rendered.warnings

    def _text_forms(self) -> tuple[bool, bool]:  # (upstream-front module loaded, no escaped URI defined)
        return self._upstream_front, self._plain_request_uri

    def _render(self, renderer: Renderer, key: ResourceKey, resource: object, ctx: RenderContext) -> Rendered:
        """The renderer's output with the text as its file gets it (a pure function of its arguments and of
        `_text_forms`, what nginx.conf loads and defines: `render_ahead` runs it in other processes)."""
        rendered = renderer.render(resource, ctx)
        if self._upstream_front and not renderer.file_name(key).startswith(f"{STREAM_CONF_D_DIR}/"):
            rendered = dataclasses.replace(rendered, text=front_upstreams(rendered.text))
        if self._plain_request_uri:
            rendered = dataclasses.replace(rendered, text=escaped_uri.plain(rendered.text))
        return rendered

    def render_ahead(self, items: Iterable[tuple[ResourceKey, object]], count: int, *, processes: int,
                     min_items: int = MIN_ITEMS, measure: int = MEASURED_ITEMS) -> RenderAheadStats:
        """Render `items` (key, resource; about `count` of them) ahead, in up to `processes` processes
        (configs.prerender; the shares sized by what the first `measure` items cost here). The next
        `add_or_update` of one of these very objects (by identity) under an unchanged render context takes
        its result instead of rendering, once; any other call renders as usual, and so does one whose render
        raised ahead (its error comes out of the normal path). The other processes also write the files of
        their share, and so does this one for the items it measures (`ConfigFiles.write_ahead`);
        `add_or_update` then takes each over as written, or rewrites it if it is no longer the file written.
        Results not taken, and files written ahead that no `add_or_update` took over, are dropped by the
        next `render_ahead` or by `drop_rendered_ahead()`, which a caller must run after its
        `add_or_update`s."""
        self.drop_rendered_ahead()
        ctx = self._render_context()

        def jobs() -> Iterator[tuple[ResourceKey, object, Renderer, str]]:
            for key, resource in items:
                renderer = self._renderers.get(key.kind)
                if renderer is not None:
                    name = self.files.file_name(key, renderer.file_name(key))
                    self.files.expect_written_ahead((name,))
                    yield key, resource, renderer, name

        def render(job: tuple[ResourceKey, object, Renderer, str]) -> tuple[Rendered, WrittenAhead | None]:
            return self._render(job[2], job[0], job[1], ctx), None

        def write(job: tuple[ResourceKey, object, Renderer, str],
                  result: tuple[Rendered, WrittenAhead | None]) -> tuple[Rendered, WrittenAhead | None]:
            return result[0], self.files.write_ahead(job[3], result[0].text)

        stats = RenderAheadStats()
        results = render_ahead(jobs(), count, render, in_child=write, processes=processes,
                               min_items=min_items, measure=measure, stats=stats)
        for (key, resource, _, _), result in results:
            if result is not None:
                self._ahead[key] = (resource, ctx, self._text_forms(), *result)
        return stats

    def drop_rendered_ahead(self) -> None:
        """Forget the results of `render_ahead` not taken yet, and remove the files other processes wrote
        ahead for resources not written here since."""
        self._ahead.clear()
        self.files.drop_written_ahead()

    def _take_rendered_ahead(self, key: ResourceKey, resource: object,
                             ctx: RenderContext) -> tuple[Rendered, WrittenAhead | None] | None:
        ahead = self._ahead.pop(key, None)
        if ahead is None:
            return None
        rendered_for, rendered_in, front, rendered, written = ahead
        if rendered_for is not resource or rendered_in is not ctx or front != self._text_forms():
            return None
        return rendered, written

    def _render_context(self) -> RenderContext:
        """The context of a render, made again only when one of its inputs changed: the model shares settings
        between resources by the identity of the params objects it is given (a ProxyDefaults made per render
        would defeat that)."""
        builtin = self._templates.is_main_builtin
        routes = self._routes.enabled and builtin and not self._catch_all_upstream()
        captures = self._routes.captures() if routes else frozenset()
        inputs = (self._static, self._config, self._templates, self._replicas, self._catch_all_upstream(),
                  builtin, routes, captures)
        if self._ctx is None or self._ctx[0] != inputs:
            defaults = proxy_defaults(self._config) if builtin else None
            route_ctx = (self._routes.context(self._static, self._config, defaults, captures)
                         if routes and defaults is not None else None)
            self._ctx = (inputs, RenderContext(self._static, self._config, self._templates, self._replicas,
                                               self._catch_all_upstream(), defaults, route_ctx))
        return self._ctx[1]

    def delete(self, key: ResourceKey) -> None:
        """Forget a resource and remove its file."""
        self._hold(key, None)
        self._child_warnings.pop(key, None)
        self._parts.forget(key)
        self._routes.route_shapes.set(key, frozenset())
        self._set_captures(key, frozenset())
        if self._certificates is not None:
            self._certificates.remove(key)
        self._set_catch_all(key, "")
        if self.files.remove(key) is not None:
            self._reserve_zone(key, 0)

    def _set_captures(self, key: ResourceKey, names: frozenset[str]) -> None:
        """Track the wildcard and regex server names of `key`'s file: NGINX gives them the hosts they match
        before the default server, so those hosts keep server blocks (configs.routes); when the names in
        use change, every other resource is rendered again."""
        if self._routes.set_captures(key, names):
            for other, resource in list(self._resources.items()):
                if other != key:
                    self.add_or_update(other, resource)

    def _catch_all_upstream(self) -> str:
        """The upstream nginx.conf names as `$ingressctl_catch_all` ("" without a catch-all)."""
        return self._catch_alls[min(self._catch_alls)] if self._catch_alls else ""

    def _set_catch_all(self, key: ResourceKey, upstream: str) -> None:
        """Track whether `key` is the catch-all (`upstream` non-empty). When the catch-all's upstream changes,
        nginx.conf names the new one; when a catch-all appears or goes, every other resource is rendered again
        (unmatched paths and wildcard hosts go to the catch-all, or get 404 again)."""
        before = self._catch_all_upstream()
        if upstream:
            self._catch_alls[key] = upstream
        else:
            self._catch_alls.pop(key, None)
        after = self._catch_all_upstream()
        if after == before:
            return
        self._update_main()
        if bool(after) != bool(before):
            for other, resource in list(self._resources.items()):
                self.add_or_update(other, resource)

    # ------------------------------------------------------------------ Ingresses

    def add_or_update_ingress(self, ing_ex: IngressEx) -> list[str]:
        """Render one Ingress and write its file if the bytes changed; returns the warnings."""
        return self.add_or_update(ing_ex.key_with_kind, ing_ex)

    def add_or_update_mergeable_ingress(self, mergeable: MergeableIngresses) -> list[str]:
        """Render a master with its minions into the master's file (written if the bytes changed).

        Returns the master's warnings followed by each minion's, prefixed with `minion <ns>/<name>: `
        (`minion_warnings(master_key)` has them per minion)."""
        return self.add_or_update(mergeable.master.key_with_kind, mergeable)

    def add_or_update_mergeable_ingresses(self, mergeables: Sequence[MergeableIngresses]) -> list[str]:
        """Render several masters; warnings are prefixed with each master's key."""
        warnings: list[str] = []
        for m in mergeables:
            warnings.extend(f"{m.master.key}: {w}" for w in self.add_or_update_mergeable_ingress(m))
        return warnings

    def add_or_update_ingresses(self, ing_exes: Sequence[IngressEx]) -> list[str]:
        """Render several Ingresses; warnings are prefixed with each Ingress's key."""
        warnings: list[str] = []
        for ing_ex in ing_exes:
            warnings.extend(f"{ing_ex.key}: {w}" for w in self.add_or_update_ingress(ing_ex))
        return warnings

    def update_endpoints(self, ing_exes: Sequence[IngressEx]) -> None:
        """Re-render after an endpoint change; only files whose bytes changed are written (and reloaded by the
        next `reload_if_needed(REASON_ENDPOINTS)`)."""
        for ing_ex in ing_exes:
            self.add_or_update_ingress(ing_ex)

    def update_endpoints_for_mergeables(self, mergeables: Sequence[MergeableIngresses]) -> None:
        """`update_endpoints` for masters and their minions."""
        for m in mergeables:
            self.add_or_update_mergeable_ingress(m)

    def delete_ingress(self, key: str) -> None:
        """Forget an Ingress ("namespace/name": regular, or a master with its minions) and remove its file."""
        self.delete(ResourceKey(INGRESS_KIND, key))

    # ------------------------------------------------------------------ main config

    def update_config(self, config: ConfigParams, ing_exes: Sequence[IngressEx],
                      mergeables: Sequence[MergeableIngresses] = ()) -> list[str]:
        """New ConfigMap params: re-render nginx.conf and the given Ingresses and masters (the next
        `reload_if_needed` reloads once)."""
        self._config = config
        warnings = self._update_templates(config)
        self._update_main()
        warnings.extend(self.add_or_update_ingresses(ing_exes))
        warnings.extend(self.add_or_update_mergeable_ingresses(mergeables))
        return warnings

    def _update_templates(self, config: ConfigParams) -> list[str]:
        warnings = []
        if config.main_template:
            try:
                self._templates.update_main_template(config.main_template)
            except TemplateError as e:
                warnings.append(f"main-template: {e}; using the default template")
                self._templates.use_original_main_template()
        else:
            self._templates.use_original_main_template()
        if config.ingress_template:
            try:
                self._templates.update_ingress_template(config.ingress_template)
            except TemplateError as e:
                warnings.append(f"ingress-template: {e}; using the default template")
                self._templates.use_original_ingress_template()
        else:
            self._templates.use_original_ingress_template()
        return warnings

    def _write_dhparam(self) -> str:
        """Write the ConfigMap's `ssl-dhparam-file` to secrets/dhparam.pem; its path ("" without one)."""
        content = self._config.ssl_dhparam_file
        if not content:
            return ""
        try:
            return self.files.create_secret(DHPARAM_FILE, content.encode(), 0o600)
        except OSError as e:
            log.error("writing the DH parameters failed", error=str(e))
            return ""

    def _update_main(self) -> None:
        """Re-render nginx.conf and write it if it changed (reloaded by the next `reload_if_needed`)."""
        self.files.write_main(self._render_main())
        self._sync_modules()

    def _sync_modules(self) -> None:
        """Dynamic upstreams are on while nginx.conf loads the dynamic-peers module, upstreams go to the
        front while it loads the upstream-front module, and routable hosts are routes while it loads the
        routes module (with dynamic upstreams; a custom main template may load none); when one changes,
        every resource is rendered again in the other form."""
        main = self.files.main_text
        dynamic = bool(self._static.dynamic_peers_module_path) and DYNAMIC_PEERS in main
        front = bool(self._static.upstream_front_module_path) and UPSTREAM_FRONT in main
        routes = dynamic and bool(self._static.routes_module_path) and ROUTES in main
        plain = not escaped_uri.defines(main)
        if (dynamic == (self.files.dynamic is not None) and front == self._upstream_front
                and routes == self._routes.enabled and plain == self._plain_request_uri):
            return
        self._plain_request_uri = plain
        if dynamic != (self.files.dynamic is not None):
            spare = error_server_address(self._static.run_dir)
            self.files.dynamic = DynamicUpstreams(spare) if dynamic else None
            log.info("dynamic upstreams", enabled=dynamic)
        if front != self._upstream_front:
            self._upstream_front = front
            log.info("upstreams declared at the front of NGINX's upstream list", enabled=front)
        if routes != self._routes.enabled:
            self._sync_routes(routes)
        for key, resource in list(self._resources.items()):
            self.add_or_update(key, resource)

    def _sync_routes(self, routes: bool) -> None:
        """Serve routable hosts from the routes module's table (configs.routes) or from server blocks."""
        self._routes.enabled = routes
        self._routes.updates = self.files.routes = None
        if routes:
            client = RoutesClient(os.path.join(self._manager.run_dir, SOCKET_DIR, SOCKET_NAME))
            self._routes.updates = self.files.routes = RouteUpdates(
                client, self._manager.update_upstreams, lambda: self._manager.reload_count)
        self._update_spares()
        if self._certificates is not None:
            self._certificates.default_variable = CERTIFICATE_VARIABLE if routes else ""
        log.info("plain Ingress hosts served from the routes module's table", enabled=routes)

    def _update_spares(self) -> None:
        """As many spares as the resources call for (configs.routes.spare_count), in a conf.d file of their
        own (a change reloads); none without routes, the built-in Ingress template or dynamic upstreams."""
        on = self._routes.enabled and self._templates.is_ingress_builtin and self.files.dynamic is not None
        reserved = self._routes.spares(spare_count(len(self._resources)) if on else 0, self._config,
                                       self._templates, self._static)
        if reserved is not None and (self._routes.spares_text or self._spares_written):
            # A file of conf.d's own, so that NGINX's scans of earlier upstreams stay short (scoped include).
            self.files.write_static(SPARES_FILE, self._routes.spares_text or "# no spares\n")
            self.files.request_reload()
            self._spares_written = True
            self._reserve_zone(SPARES_KEY, reserved)

    def _reserve_zone(self, key: ResourceKey, reserved: int) -> None:
        """Account for what a resource's upstreams reserve in the shared zone; nginx.conf is re-rendered when
        the zone's size steps."""
        self._zone_total += reserved - self._zone_bytes.pop(key, 0)
        if reserved:
            self._zone_bytes[key] = reserved
        size = shared_zone_size(self._zone_total)
        if size != self._zone_size:
            self._zone_size = size
            self._update_main()

    def _render_main(self) -> str:
        cfg = dataclasses.replace(generate_main_config(self._static, self._config,
                                                       dhparam_path=self._write_dhparam(),
                                                       upstream_zone_size=self._zone_size),
                                  catch_all_upstream=self._catch_all_upstream(),
                                  route_shapes=self._routes.shapes(self._config))
        try:
            return self._templates.execute_main_template(cfg)
        except TemplateRenderError as e:
            if self._templates.is_main_builtin:
                raise
            log.error("main template failed; using the built-in one", error=str(e))
            self._templates.use_original_main_template()
            return self._templates.execute_main_template(cfg)

    # ------------------------------------------------------------------ files outside conf.d, reload

    def write_static_config(self, name: str, text: str) -> None:
        """A conf.d file no resource owns (the latency metrics' log format), written before NGINX starts."""
        self.files.write_static(name, text)

    def create_secret(self, name: str, content: bytes, mode: int = 0o600) -> str:
        """Write secrets/<name> (the LocalSecretStore's files); returns the path."""
        return self.files.create_secret(name, content, mode)

    def secret_path(self, name: str) -> str:
        return self.files.secret_path(name)

    def write_secret_ahead(self, name: str, content: bytes, mode: int = 0o600) -> WrittenFile:
        """`create_secret`, in a forked process: see `LocalSecretStore.write_files_ahead`."""
        return self.files.write_secret_ahead(name, content, mode)

    def adopt_secret(self, name: str, written: WrittenFile) -> bool:
        return self.files.adopt_secret(name, written)

    def discard_secret_ahead(self, name: str, written: WrittenFile) -> bool:
        return self.files.discard_secret_ahead(name, written)

    def delete_secret(self, name: str) -> None:
        self.files.delete_secret(name)

    def update_special_secret(self, name: str, content: bytes) -> bool:
        """Rewrite a special TLS Secret's file (`default`, `wildcard`) if it changed and request a reload;
        True if it changed. OSError when the write fails."""
        return self.files.update_secret_file(name, content)

    def request_reload(self) -> None:
        """A file NGINX reads at reload changed: the next `reload_if_needed` reloads."""
        self.files.request_reload()

    def reload_if_needed(self, reason: str = REASON_OTHER) -> ReloadOutcome:
        """Reload NGINX once if anything changed since the last good reload (see `ConfigFiles`)."""
        self._update_spares()
        if self._certificates is not None and self._certificates.changed:
            self._write_certificate_map()
            self.files.request_reload()
        outcome = self.files.reload_if_needed(reason)
        if not self.reloads_enabled:
            return outcome
        again = self._hold_back_refused_parts(outcome.failed) if outcome.failed else set()
        if again:
            second = self.files.reload_if_needed(reason)
            kept = {k: e for k, e in outcome.failed.items() if k not in again}
            outcome = ReloadOutcome(reloaded=outcome.reloaded or second.reloaded,
                                    failed={**kept, **second.failed}, error=second.error or outcome.error,
                                    dynamic=outcome.dynamic or second.dynamic)
        if not outcome.batch_failed:
            self._parts.reloaded(outcome.failed)
        parts, own = self._parts.take_errors()
        outcome.failed_parts = {k: errors for k, errors in parts.items() if k not in outcome.failed}
        for k, error in own.items():
            if k not in outcome.failed:  # its file was served, with its last served version
                outcome.failed[k] = error
                outcome.parts_served.add(k)
        return outcome

    def _hold_back_refused_parts(self, failed: Mapping[ResourceKey, str]) -> set[ResourceKey]:
        """For each refused file with parts of other resources: find what NGINX refuses (nginx -t on
        candidates: the parts' new versions, else the resource's own), hold it back and render the file
        again. Returns the keys rendered again."""
        again: set[ResourceKey] = set()
        for key in list(failed):
            splitter, resource = self._splitters.get(key.kind), self._resources.get(key)
            if resource is None or splitter is None:
                continue
            renderer = self._renderers[key.kind]
            name = self.files.file_name(key, renderer.file_name(key))
            render = functools.partial(self._render, renderer, key, ctx=self._render_context())
            test = functools.partial(self.files.test_file, name)
            if self._parts.search_file(key, splitter, resource, failed[key], render, test):
                self.add_or_update(key, resource)
                again.add(key)
        return again

    def _write_certificate_map(self) -> None:
        """conf.d's map of the certificates loaded at handshakes (rendered once per reload, not per
        change)."""
        if self._certificates is not None:
            self.files.write_static(CERTIFICATE_MAP_FILE, self._certificates.text())
