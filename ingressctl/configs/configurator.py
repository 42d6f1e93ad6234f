"""The Configurator (NIC's `configs.Configurator`): IngressEx -> files in conf.d -> one verified NGINX reload.

Guarantees:
- The constructor writes nginx.conf and removes conf.d files it did not write (a previous run's leftovers), so
  the Manager can start NGINX right after it with a config that holds only what this controller renders.
- `conf.d/<ns>-<name>.conf` is written only when its bytes change. No mutating method reloads NGINX: call
  `reload_if_needed()`, which reloads once if any file differs from what NGINX last loaded successfully (a
  change that renders to the same bytes, or that is undone before the reload, causes no reload). While reloads
  are disabled (batching) it does nothing and the changes accumulate.
- A failed reload never poisons later ones (a deliberate difference from NIC). The files changed since the
  last good reload go back to their last good version; the offending resources are found by testing halves
  with `nginx -t` on a staging copy (or, when `nginx -t` accepts everything but NGINX still refused it, e.g.
  a port it cannot bind, by real reloads); NGINX is reloaded with everything else, and the offenders are
  returned with NGINX's error. Their files keep the last good version, or are absent if they never had one.
  If the last good files no longer pass on their own (a certificate they name was deleted, say), a passing
  starting point is searched for first; without one, the changes stay pending and the error is returned.
- A resource whose config cannot be rendered (an invalid annotation, an unsafe value, a broken custom
  template) keeps its previous file; the error is returned in `ReloadOutcome.failed` by the next
  `reload_if_needed()`.
- The catch-all (an Ingress without rules that owns the class's catch-all): nginx.conf names its upstream
  (`$ingressctl_catch_all`), and while one exists every other server sends its unmatched paths and hosts
  there; when one appears or goes, every resource is rendered again (written only where bytes change).
- Mergeable Ingresses: a master and its minions are one resource, keyed and named by the master
  (`conf.d/<master-ns>-<master-name>.conf`); minions have no file. `get_ingress_counts()` counts regular
  Ingresses, masters and their minions.
- Not thread-safe: one sync thread owns the Configurator, as it owns NGINX.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ingressctl.configs.config import IngressNginxConfig, shared_zone_size
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams, generate_main_config
from ingressctl.configs.ingress import (
    catch_all_upstream,
    generate_nginx_config,
    generate_nginx_config_for_mergeable,
)
from ingressctl.configs.ingress_ex import IngressEx, MergeableIngresses
from ingressctl.configs.templates import TemplateError, TemplateExecutor, TemplateRenderError
from ingressctl.logging import get_logger
from ingressctl.nginx.manager import Manager, ReloadError

log = get_logger(__name__)

REASON_ENDPOINTS = "endpoints"
REASON_OTHER = "other"
DHPARAM_FILE = "dhparam.pem"
_MAX_ERROR_CHARS = 2000
_TIMEOUT_MARK = "could not get newest config version"
_MAX_COMPLEMENT_TESTS = 64
# "nginx: " or "2026/01/02 03:04:05 " before the level, and "123#123: " after it.
_LOG_PREFIX = re.compile(r"^(nginx: |\d{4}/\d\d/\d\d \d\d:\d\d:\d\d )|(?<=\] )\d+#\d+: (\*\d+ )?")


@dataclass
class ReloadOutcome:
    """What `reload_if_needed` did.

    reloaded: NGINX now serves a new config. failed: resource key ("namespace/name") -> why its latest config
    is not served (render error or NGINX's error). error: a failure not tied to one resource (the main config,
    NGINX not running, a reload timeout); the affected changes stay pending and are retried by the next call.
    """

    reloaded: bool
    failed: dict[str, str] = field(default_factory=dict)
    error: str = ""


_UNCHANGED = object()


@dataclass
class _Change:
    key: str
    old: str | None  # content at the last good reload; None: no file
    old_digest: bytes | None


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


class Configurator:
    """Renders Ingresses into conf.d and reloads NGINX through the Manager."""

    def __init__(self, manager: Manager, static: StaticConfigParams, config: ConfigParams,
                 templates: TemplateExecutor, *, is_wildcard_enabled: bool = False,
                 prune_stale_configs: bool = True) -> None:
        static = dataclasses.replace(static, conf_dir=manager.conf_dir, run_dir=manager.run_dir,
                                     secrets_dir=manager.secrets_dir)
        if is_wildcard_enabled and not static.wildcard_tls_path:
            wildcard = os.path.join(manager.secrets_dir, "wildcard")
            static = dataclasses.replace(static, wildcard_tls_path=wildcard)
        self._manager = manager
        self._static = static
        self._config = config
        self._templates = templates
        self._reloads_enabled = True
        self._ingresses: dict[str, IngressEx] = {}  # key -> the latest IngressEx given (regular Ingresses)
        self._mergeables: dict[str, MergeableIngresses] = {}  # master key -> the latest given
        self._minion_warnings: dict[str, dict[str, list[str]]] = {}  # master key -> minion key -> warnings
        self._replicas = 1
        self._dhparam_path = ""
        self._file_of: dict[str, str] = {}  # key -> conf.d file name (without .conf)
        self._key_of: dict[str, str] = {}  # file name -> key
        self._files: dict[str, bytes] = {}  # file name -> digest of the content on disk (not the content)
        self._changes: dict[str, _Change] = {}  # file name -> its state at the last good reload
        self._zone_bytes: dict[str, int] = {}  # file name -> what its upstreams reserve in the shared zone
        self._zone_total = 0
        self._zone_size = shared_zone_size(0)  # as nginx.conf declares it
        self._main_text = ""
        self._main_old: object = _UNCHANGED  # nginx.conf at the last good reload, if changed since
        self._render_failures: dict[str, str] = {}  # key -> error, reported by the next reload_if_needed
        self.rejected: dict[str, str] = {}  # key -> error: resources whose latest config NGINX does not serve
        self._catch_alls: dict[str, str] = {}  # key -> upstream of a catch-all Ingress rendered here

        if prune_stale_configs:
            for name in manager.list_configs():
                manager.delete_config(name)
                log.info("removed a config file this controller did not write", file=name + ".conf")
        for warning in self._update_templates(config):
            log.warning("template override ignored", error=warning)
        self._main_text = self._render_main()
        manager.create_main_config(self._main_text)

    # ------------------------------------------------------------------ state

    @property
    def static(self) -> StaticConfigParams:
        return self._static

    @property
    def config(self) -> ConfigParams:
        return self._config

    def has_pending_changes(self) -> bool:
        """True if some file differs from what NGINX last loaded (or a render error waits to be reported)."""
        return bool(self._pending()) or self._main_changed() or bool(self._render_failures)

    def get_ingress_counts(self) -> dict[str, int]:
        """For `ingress_resources_total{type}`: regular, master and minion Ingresses."""
        return {"regular": len(self._ingresses), "master": len(self._mergeables),
                "minion": sum(len(m.minions) for m in self._mergeables.values())}

    def minion_warnings(self, master_key: str) -> dict[str, list[str]]:
        """Per-minion warnings of the last render of a master (minion key -> warnings)."""
        return {k: list(v) for k, v in self._minion_warnings.get(master_key, {}).items()}

    def set_controller_replicas(self, replicas: int) -> None:
        """The number of controller replicas, for `nginx.org/limit-req-scale` (from the next render on)."""
        self._replicas = max(1, int(replicas))

    def disable_reloads(self) -> None:
        self._reloads_enabled = False

    def enable_reloads(self) -> None:
        self._reloads_enabled = True

    @property
    def reloads_enabled(self) -> bool:
        return self._reloads_enabled

    # ------------------------------------------------------------------ changes

    def add_or_update_ingress(self, ing_ex: IngressEx) -> list[str]:
        """Render one Ingress and write its file if the bytes changed; returns the warnings."""
        return self._add_or_update(ing_ex)

    def add_or_update_mergeable_ingress(self, mergeable: MergeableIngresses) -> list[str]:
        """Render a master with its minions into the master's file (written if the bytes changed).

        Returns the master's warnings followed by each minion's, prefixed with `minion <ns>/<name>: `
        (`minion_warnings(master_key)` has them per minion)."""
        return self._add_or_update_mergeable(mergeable)

    def add_or_update_mergeable_ingresses(self, mergeables: Sequence[MergeableIngresses]) -> list[str]:
        """Render several masters; warnings are prefixed with each master's key."""
        warnings: list[str] = []
        for m in mergeables:
            warnings.extend(f"{m.master.key}: {w}" for w in self._add_or_update_mergeable(m))
        return warnings

    def add_or_update_ingresses(self, ing_exes: Sequence[IngressEx]) -> list[str]:
        """Render several Ingresses; warnings are prefixed with each Ingress's key."""
        warnings: list[str] = []
        for ing_ex in ing_exes:
            warnings.extend(f"{ing_ex.key}: {w}" for w in self._add_or_update(ing_ex))
        return warnings

    def update_endpoints(self, ing_exes: Sequence[IngressEx]) -> None:
        """Re-render after an endpoint change; only files whose bytes changed are written (and reloaded by the
        next `reload_if_needed(REASON_ENDPOINTS)`)."""
        for ing_ex in ing_exes:
            self._add_or_update(ing_ex)

    def update_endpoints_for_mergeables(self, mergeables: Sequence[MergeableIngresses]) -> None:
        """`update_endpoints` for masters and their minions."""
        for m in mergeables:
            self._add_or_update_mergeable(m)

    def delete_ingress(self, key: str) -> None:
        """Forget an Ingress (regular, or a master with its minions) and remove its file."""
        self._ingresses.pop(key, None)
        self._mergeables.pop(key, None)
        self._minion_warnings.pop(key, None)
        self._render_failures.pop(key, None)
        self.rejected.pop(key, None)
        self._set_catch_all(key, "")
        name = self._file_of.pop(key, None)
        if name is None:
            return
        self._write(name, key, None)
        self._reserve_zone(name, 0)
        self._key_of.pop(name, None)

    def update_config(self, config: ConfigParams, ing_exes: Sequence[IngressEx],
                      mergeables: Sequence[MergeableIngresses] = ()) -> list[str]:
        """New ConfigMap params: re-render nginx.conf and the given Ingresses and masters (normally all of
        them; the next `reload_if_needed` reloads once)."""
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
            return self._manager.create_secret(DHPARAM_FILE, content.encode(), 0o600)
        except OSError as e:
            log.error("writing the DH parameters failed", error=str(e))
            return ""

    def _update_main(self) -> None:
        """Re-render nginx.conf and write it if it changed (reloaded by the next `reload_if_needed`)."""
        text = self._render_main()
        if text != self._main_text:
            if self._main_old is _UNCHANGED:
                self._main_old = self._main_text
            self._manager.create_main_config(text)
            self._main_text = text

    def _reserve_zone(self, name: str, reserved: int) -> None:
        """Account for what a file's upstreams reserve in the shared zone; nginx.conf is re-rendered when the
        zone's size steps."""
        self._zone_total += reserved - self._zone_bytes.pop(name, 0)
        if reserved:
            self._zone_bytes[name] = reserved
        size = shared_zone_size(self._zone_total)
        if size != self._zone_size:
            self._zone_size = size
            self._update_main()

    def _render_main(self) -> str:
        cfg = dataclasses.replace(generate_main_config(self._static, self._config,
                                                       dhparam_path=self._write_dhparam(),
                                                       upstream_zone_size=self._zone_size),
                                  catch_all_upstream=self._catch_all_upstream())
        try:
            return self._templates.execute_main_template(cfg)
        except TemplateRenderError as e:
            if self._templates.is_main_builtin:
                raise
            log.error("main template failed; using the built-in one", error=str(e))
            self._templates.use_original_main_template()
            return self._templates.execute_main_template(cfg)

    def _file_name(self, key: str) -> str:
        name = self._file_of.get(key)
        if name is not None:
            return name
        name = key.replace("/", "-")  # NIC's <namespace>-<name>
        if name in self._key_of:
            # "a-b/c" and "a/b-c" would share a file: the later one gets a stable suffix.
            name = f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"
        self._file_of[key] = name
        self._key_of[name] = key
        return name

    def _add_or_update(self, ing_ex: IngressEx) -> list[str]:
        key = ing_ex.key
        self._ingresses[key] = ing_ex
        self._mergeables.pop(key, None)  # a master that became a regular Ingress
        self._minion_warnings.pop(key, None)
        self._set_catch_all(key, catch_all_upstream(ing_ex))

        def render() -> tuple[IngressNginxConfig, list[str]]:
            return generate_nginx_config(ing_ex, self._static, self._config, replicas=self._replicas,
                                         to_catch_all=bool(self._catch_all_upstream()))

        return self._render_and_write(key, render)

    def _add_or_update_mergeable(self, mergeable: MergeableIngresses) -> list[str]:
        key = mergeable.master.key
        self._mergeables[key] = mergeable
        self._ingresses.pop(key, None)  # a regular Ingress that became a master
        self._set_catch_all(key, "")

        def render() -> tuple[IngressNginxConfig, list[str]]:
            result = generate_nginx_config_for_mergeable(mergeable, self._static, self._config,
                                                         replicas=self._replicas,
                                                         to_catch_all=bool(self._catch_all_upstream()))
            self._minion_warnings[key] = result.minion_warnings
            warnings = list(result.warnings)
            for minion_key, ws in result.minion_warnings.items():
                warnings.extend(f"minion {minion_key}: {w}" for w in ws)
            return result.config, warnings

        return self._render_and_write(key, render)

    def _catch_all_upstream(self) -> str:
        """The upstream nginx.conf names as `$ingressctl_catch_all` ("" without a catch-all)."""
        return self._catch_alls[min(self._catch_alls)] if self._catch_alls else ""

    def _set_catch_all(self, key: str, upstream: str) -> None:
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
            for ing_ex in list(self._ingresses.values()):
                self._add_or_update(ing_ex)
            for mergeable in list(self._mergeables.values()):
                self._add_or_update_mergeable(mergeable)

    def _render_and_write(self, key: str,
                          render: Callable[[], tuple[IngressNginxConfig, list[str]]]) -> list[str]:
        try:
            cfg, warnings = render()
            text = self._templates.execute_ingress_template(cfg)
        except (ValueError, TemplateRenderError) as e:
            error = f"error generating configuration for {key}: {e}"
            log.error("render failed", ingress=key, error=str(e))
            self._render_failures[key] = error
            return []
        except Exception as e:  # a bug must cost one Ingress, not the sync thread
            error = f"error generating configuration for {key}: {type(e).__name__}: {e}"
            log.exception("render failed unexpectedly", ingress=key)
            self._render_failures[key] = error
            return []
        self._render_failures.pop(key, None)
        name = self._file_name(key)
        digest = self._write(name, key, text)
        self._reserve_zone(name, sum(u.zone_bytes() for u in cfg.upstreams))
        change = self._changes.get(name)
        if change is None or change.old_digest == digest:
            self.rejected.pop(key, None)  # NGINX already serves exactly this
        return warnings

    def _write(self, name: str, key: str, text: str | None) -> bytes | None:
        """Make the file hold `text`, remembering its last good version on the first change; its digest."""
        digest = None if text is None else _digest(text)
        current = self._files.get(name)
        if current == digest:
            return digest
        if name not in self._changes:
            old = self._manager.read_config(name) if current is not None else None
            self._changes[name] = _Change(key, old, current)
        self._put(name, text, digest)
        return digest

    def _put(self, name: str, text: str | None, digest: bytes | None = None) -> None:
        """Make conf.d/<name>.conf hold `text` (None: no file)."""
        if text is None:
            self._manager.delete_config(name)
            self._files.pop(name, None)
        else:
            self._manager.create_config(name, text)
            self._files[name] = digest or _digest(text)

    # ------------------------------------------------------------------ reload

    def _pending(self) -> dict[str, _Change]:
        return {n: c for n, c in self._changes.items() if self._files.get(n) != c.old_digest}

    def _main_changed(self) -> bool:
        return self._main_old is not _UNCHANGED and self._main_old != self._main_text

    def _commit(self) -> None:
        self._changes.clear()
        self._main_old = _UNCHANGED

    def reload_if_needed(self, reason: str = REASON_OTHER) -> ReloadOutcome:
        """Reload NGINX once if anything changed since the last good reload; see the module docstring."""
        if not self._reloads_enabled:
            return ReloadOutcome(reloaded=False)
        failed = dict(self._render_failures)
        self._render_failures.clear()
        pending = self._pending()
        main_changed = self._main_changed()
        if not pending and not main_changed:
            self._commit()
            return ReloadOutcome(reloaded=False, failed=failed)
        if not self._manager.is_running():
            return ReloadOutcome(reloaded=False, failed=failed, error="nginx is not running")
        try:
            self._manager.reload(is_endpoints_update=reason == REASON_ENDPOINTS)
        except ReloadError as e:
            outcome = self._recover(pending, main_changed, e, reason)
            outcome.failed = {**failed, **outcome.failed}
            return outcome
        self._commit()
        for change in pending.values():
            self.rejected.pop(change.key, None)
        return ReloadOutcome(reloaded=True, failed=failed)

    def _recover(self, pending: dict[str, _Change], main_changed: bool, err: ReloadError,
                 reason: str) -> ReloadOutcome:
        """After a failed reload: restore, find the offenders, reload with the rest."""
        error_text = self._clean(err.output or str(err))
        if _TIMEOUT_MARK in str(err):
            # NGINX may still be applying it; nothing to blame. Keep the changes pending and retry later.
            log.error("nginx reload timed out; will retry", error=str(err))
            return ReloadOutcome(reloaded=False, error=str(err))
        log.warning("nginx reload failed; isolating the offending resources", changed=len(pending),
                    main_config=main_changed, error=error_text)
        candidates = {name: self._manager.read_config(name) if name in self._files else None
                      for name in pending}
        main_candidate = self._main_text
        # 1. Back to the last good state on disk.
        for name, change in pending.items():
            self._put(name, change.old)
        if main_changed:
            assert isinstance(self._main_old, str)
            self._manager.create_main_config(self._main_old)
        base_ok, base_out = self._manager.test_config()

        # 2. The main config alone (judged only against a base that passes).
        main_error = ""
        if main_changed:
            self._manager.create_main_config(main_candidate)
            ok, out = self._manager.test_config() if base_ok else (True, "")
            if ok:
                self._main_text = main_candidate
            else:
                main_error = f"main configuration rejected: {self._clean(out)}"
                assert isinstance(self._main_old, str)
                self._manager.create_main_config(self._main_old)
                self._main_text = self._main_old

        # 3. The conf.d files, by halves.
        names = sorted(pending)

        def nginx_t(subset: Sequence[str]) -> tuple[bool, str]:
            return self._manager.test_configs({n: candidates[n] for n in subset})

        def real_reload(subset: Sequence[str]) -> tuple[bool, str]:
            for n in names:
                self._put(n, candidates[n] if n in subset else pending[n].old)
            try:
                self._manager.reload(is_endpoints_update=reason == REASON_ENDPOINTS)
            except ReloadError as e:
                return False, e.output or str(e)
            return True, ""

        ok, out = nginx_t(names)
        offenders: dict[str, str] | None = {}
        if ok:
            # nginx -t accepts it all, yet the reload failed (e.g. a port it cannot bind): bisect by reloads.
            ok, out = (False, err.output or str(err)) if not main_error else real_reload(names)
            if not ok:
                offenders = _isolate(names, [], out, real_reload)
        elif base_ok:
            offenders = _isolate(names, [], out, nginx_t)
        else:
            # The last good files no longer pass on their own (e.g. a certificate they name was deleted, and
            # a pending change fixes that): look for a part whose removal leaves a passing config first.
            offenders = _isolate_without_base(names, out, nginx_t)
        if offenders is None:
            for name, text in candidates.items():
                self._put(name, text)
            msg = f"cannot isolate the failed reload: {error_text}; the last good configuration fails " \
                  f"nginx -t too: {self._clean(base_out)}"
            log.error("cannot isolate the failed reload", error=msg)
            return ReloadOutcome(reloaded=False, error=msg)
        # 4. Apply the rest and reload once.
        for name in names:
            self._put(name, pending[name].old if name in offenders else candidates[name])
        try:
            self._manager.reload(is_endpoints_update=reason == REASON_ENDPOINTS)
        except ReloadError as e2:
            return self._give_up(pending, main_changed, e2)
        self._commit()
        failed: dict[str, str] = {}
        for name, change in pending.items():
            if name in offenders:
                failed[change.key] = self._clean(offenders[name])
                self.rejected[change.key] = failed[change.key]
            else:
                self.rejected.pop(change.key, None)
        log.warning("nginx reloaded without the offending resources", rejected=sorted(failed),
                    main_config_rejected=bool(main_error))
        return ReloadOutcome(reloaded=True, failed=failed, error=main_error)

    def _give_up(self, pending: dict[str, _Change], main_changed: bool, err: ReloadError) -> ReloadOutcome:
        """Isolation did not produce a config NGINX takes: go back to the last good state for everything."""
        msg = self._clean(err.output or str(err))
        log.error("nginx reload failed after isolation; restoring the last good configuration", error=msg)
        for name, change in pending.items():
            self._put(name, change.old)
        if main_changed:
            assert isinstance(self._main_old, str)
            self._manager.create_main_config(self._main_old)
            self._main_text = self._main_old
        self._commit()
        try:
            self._manager.reload()
        except ReloadError as e3:
            log.error("nginx reload of the last good configuration failed", error=str(e3))
        failed = {c.key: msg for c in pending.values()}
        self.rejected.update(failed)
        return ReloadOutcome(reloaded=False, failed=failed, error=msg)

    def _clean(self, output: str) -> str:
        """NGINX's error lines, with staging paths shown as the real conf dir."""
        text = re.sub(re.escape(self._manager.run_dir) + r"/staging-[^/\s]+", self._manager.conf_dir, output)
        lines = [ln.strip() for ln in text.splitlines()]
        errors = [_LOG_PREFIX.sub("", ln) for ln in lines
                  if any(f"[{lvl}]" in ln for lvl in ("emerg", "alert", "crit", "error"))]
        result = "; ".join(errors) if errors else " ".join(ln for ln in lines if ln)
        return result[:_MAX_ERROR_CHARS]


def _isolate(items: Sequence[str], accepted: list[str], failing_output: str,
             test: Callable[[Sequence[str]], tuple[bool, str]]) -> dict[str, str]:
    """Offenders among `items`, given that `accepted` passes `test` and `accepted + items` fails with
    `failing_output`. Accepted items are appended to `accepted`. Returns {offender: error output}."""
    if not items:
        return {}
    if len(items) == 1:
        return {items[0]: failing_output}
    half = len(items) // 2
    offenders: dict[str, str] = {}
    for part in (items[:half], items[half:]):
        ok, out = test([*accepted, *part])
        if ok:
            accepted.extend(part)
        else:
            offenders.update(_isolate(part, accepted, out, test))
    return offenders


def _isolate_without_base(items: Sequence[str], failing_output: str,
                          test: Callable[[Sequence[str]], tuple[bool, str]]) -> dict[str, str] | None:
    """Offenders among `items` when the base alone fails (so `_isolate`'s premise does not hold).

    Look for a passing starting point: the items without one part, or one part alone (halves, then quarters,
    ... up to single items; at most `_MAX_COMPLEMENT_TESTS` tests), then isolate the offenders among the
    other items from there. None if no starting point is found.
    """
    items = list(items)
    tests = 0
    size = (len(items) + 1) // 2
    while len(items) > 1:
        for start in range(0, len(items), size):
            part = items[start:start + size]
            rest = items[:start] + items[start + size:]
            for base, others in ((rest, part), (part, rest)):
                tests += 1
                if tests > _MAX_COMPLEMENT_TESTS:
                    return None
                ok, _ = test(base)
                if ok:
                    return _isolate(others, list(base), failing_output, test)
        if size == 1:
            break
        size = (size + 1) // 2
    return None
