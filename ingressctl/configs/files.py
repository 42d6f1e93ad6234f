"""The kind-agnostic file engine under the Configurator: conf.d files, nginx.conf, Secret files, and reloads.

Guarantees:
- Every file NGINX reads that the controller writes goes through here (conf.d files keyed by `ResourceKey`,
  nginx.conf, the files under secrets/), and so does every reload.
- A conf.d file is written only when its bytes change; each resource key owns one file name, given by its
  kind's renderer; two keys never share a file (a later one gets a stable suffix).
- `reload_if_needed()` reloads once if a file differs from what NGINX last loaded successfully, or if a reload
  was requested (a Secret file NGINX reads at reload changed). While reloads are disabled (batching) it does
  nothing and the changes accumulate.
- A failed reload never poisons later ones: the files changed since the last good reload go back to their last
  good version; the offending resources are found by testing halves with `nginx -t` on a staging copy (or,
  when `nginx -t` accepts everything but NGINX still refused it, e.g. a port it cannot bind, by real reloads);
  NGINX is reloaded with everything else, and the offenders are returned with NGINX's error. Their files keep
  the last good version, or are absent if they never had one. If the last good files no longer pass on their
  own, a passing starting point is searched for first; without one, the changes stay pending and the error is
  returned.
- Render failures recorded with `fail()` are returned in `ReloadOutcome.failed` by the next
  `reload_if_needed()`. `rejected` holds every resource whose latest config NGINX does not serve.
- Dynamic upstreams (with a `DynamicUpstreams`, when NGINX loads the dynamic-peers module): conf.d files
  (http {}, not the stream ones) are written in their dynamic form (fixed server slots). When every pending
  change differs from what NGINX last loaded only in the addresses of dynamic upstreams,
  `reload_if_needed()` pushes those addresses to NGINX instead of reloading (`ReloadOutcome.dynamic`); the
  files on disk hold them too, so a later reload or restart serves the same. If the push fails, it reloads
  as without the module.
- Routes (with a `RouteUpdates` in `routes`, when NGINX serves the routes module's table): the pending
  changes are planned and pushed by it instead (configs.route_updates: route blocks, new upstreams on
  spares, endpoint addresses); whatever it cannot push is reloaded.
- Not thread-safe: one sync thread owns it, as it owns NGINX.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from ingressctl.configs.dynamic_upstreams import DynamicUpstreams, SlotCounts, endpoint_changes
from ingressctl.configs.route_updates import RouteUpdates
from ingressctl.keys import ResourceKey
from ingressctl.logging import get_logger
from ingressctl.nginx.conf_dir import WrittenFile, content_digest
from ingressctl.nginx.dynamic_peers import DynamicUpdateError
from ingressctl.nginx.manager import Manager, ReloadError
from ingressctl.nginx.paths import STREAM_CONF_D_DIR

log = get_logger(__name__)

REASON_ENDPOINTS = "endpoints"
REASON_OTHER = "other"
SECRET_MODE = 0o600  # certificates and keys
_MAX_ERROR_CHARS = 2000
_TIMEOUT_MARK = "could not get newest config version"
_MAX_COMPLEMENT_TESTS = 64
# "nginx: " or "2026/01/02 03:04:05 " before the level, and "123#123: " after it.
_LOG_PREFIX = re.compile(r"^(nginx: |\d{4}/\d\d/\d\d \d\d:\d\d:\d\d )|(?<=\] )\d+#\d+: (\*\d+ )?")


@dataclass
class ReloadOutcome:
    """What a reload did: the one outcome type of the Configurator and the controller.

    reloaded: NGINX now serves a new config. failed: resource key -> why its latest config is not served
    (render error or NGINX's error). error: a failure not tied to one resource (the main config, NGINX not
    running, a reload timeout); when it comes without `reloaded`, the changes stay pending and are retried.
    """

    reloaded: bool
    failed: dict[ResourceKey, str] = field(default_factory=dict)
    error: str = ""
    dynamic: bool = False  # the changes reached NGINX without a reload (dynamic upstreams)
    # resource -> part -> why that part of its file is held back (configs.part_isolation)
    failed_parts: dict[ResourceKey, dict[ResourceKey, str]] = field(default_factory=dict)
    # failed resources whose file was served anyway, with their parts' new versions (configs.part_isolation)
    parts_served: set[ResourceKey] = field(default_factory=set)

    @property
    def batch_failed(self) -> bool:
        """Nothing was applied, and no resource is to blame: every resource of the batch failed."""
        return bool(self.error) and not self.reloaded


_UNCHANGED = object()


class WrittenAhead(NamedTuple):
    """What `ConfigFiles.write_ahead` did in a forked render process: the file it wrote, and that file's
    dynamic-upstream slot counts."""

    file: WrittenFile
    slots: SlotCounts | None


@dataclass
class _Change:
    key: ResourceKey
    old: str | None  # content at the last good reload; None: no file
    old_digest: bytes | None


class ConfigFiles:
    """See the module docstring."""

    def __init__(self, manager: Manager, dynamic: DynamicUpstreams | None = None) -> None:
        self._manager = manager
        self.dynamic = dynamic
        self.routes: RouteUpdates | None = None
        self._reloads_enabled = True
        self._reload_requested = False
        self._file_of: dict[ResourceKey, str] = {}  # key -> conf.d file name (without .conf)
        self._key_of: dict[str, ResourceKey] = {}  # file name -> key
        self._files: dict[str, bytes] = {}  # file name -> digest of the content on disk (not the content)
        self._changes: dict[str, _Change] = {}  # file name -> its state at the last good reload
        self._main_text = ""
        self._main_old: object = _UNCHANGED  # nginx.conf at the last good reload, if changed since
        self._render_failures: dict[ResourceKey, str] = {}  # reported by the next reload_if_needed
        self.rejected: dict[ResourceKey, str] = {}  # resources whose latest config NGINX does not serve
        # After prune_stale(), a conf.d file this engine does not track does not exist: written without the
        # Manager's look-up of the old file.
        self._pruned = False
        self._ahead: set[str] = set()  # names that `write_ahead` may have written (see expect_written_ahead)
        # The uid that owns the 0600 secret files (certificates and keys) when NGINX's workers must read
        # them (certificates loaded at handshakes under a root master); None: the writer's own.
        self.secret_owner: int | None = None

    def prune_stale(self) -> None:
        """Remove conf.d files this controller did not write (a previous run's leftovers)."""
        for name in self._manager.list_configs():
            self._manager.delete_config(name)
            log.info("removed a config file this controller did not write", file=name + ".conf")
        self._pruned = not self._files

    # ------------------------------------------------------------------ state

    def disable_reloads(self) -> None:
        self._reloads_enabled = False

    def enable_reloads(self) -> None:
        self._reloads_enabled = True

    @property
    def reloads_enabled(self) -> bool:
        return self._reloads_enabled

    def has_pending_changes(self) -> bool:
        """True if some file differs from what NGINX last loaded (or a render error waits to be reported)."""
        return (bool(self._pending()) or self._main_changed() or bool(self._render_failures)
                or self._reload_requested)

    def loaded_as_written(self) -> None:
        """Before NGINX starts: the files as they are now are what it loads first (nothing is pending)."""
        self._commit()

    def request_reload(self) -> None:
        """A file NGINX reads at reload (a certificate) changed: the next `reload_if_needed` reloads."""
        self._reload_requested = True

    # ------------------------------------------------------------------ nginx.conf

    @property
    def main_text(self) -> str:
        return self._main_text

    def init_main(self, text: str) -> None:
        """Write nginx.conf before NGINX starts (it becomes the last good version)."""
        self._manager.create_main_config(text)
        self._main_text = text
        self._main_old = _UNCHANGED

    def write_main(self, text: str) -> None:
        """Make nginx.conf hold `text`, remembering the last good version on the first change."""
        if text == self._main_text:
            return
        if self._main_old is _UNCHANGED:
            self._main_old = self._main_text
        self._manager.create_main_config(text)
        self._main_text = text

    # ------------------------------------------------------------------ Secret files

    def create_secret(self, name: str, content: bytes, mode: int = 0o600) -> str:
        """Write secrets/<name> (only if its bytes changed); returns the path."""
        return self._manager.create_secret(name, content, mode,
                                           self.secret_owner if mode == SECRET_MODE else None)

    def secret_path(self, name: str) -> str:
        return self._manager.secret_path(name)

    def write_secret_ahead(self, name: str, content: bytes, mode: int = 0o600) -> WrittenFile:
        """`create_secret`'s file, written by a forked process without recording it (`Manager`)."""
        return self._manager.write_secret_ahead(name, content, mode,
                                                self.secret_owner if mode == SECRET_MODE else None)

    def adopt_secret(self, name: str, written: WrittenFile) -> bool:
        return self._manager.adopt_secret(name, written)

    def discard_secret_ahead(self, name: str, written: WrittenFile) -> bool:
        return self._manager.discard_secret_ahead(name, written)

    def delete_secret(self, name: str) -> None:
        self._manager.delete_secret(name)

    def update_secret_file(self, name: str, content: bytes) -> bool:
        """Rewrite secrets/<name> if its bytes differ and request a reload; True if it changed. OSError if the
        write fails."""
        try:
            with open(self._manager.secret_path(name), "rb") as fh:
                current: bytes | None = fh.read()
        except OSError:
            current = None
        if current == content:
            return False
        self._manager.create_secret(name, content, SECRET_MODE, self.secret_owner)
        self.request_reload()
        return True

    # ------------------------------------------------------------------ conf.d files

    def file_name(self, key: ResourceKey, preferred: str) -> str:
        """The file of `key`: `preferred` (its kind's naming), with a stable suffix if another key has it."""
        name = self._file_of.get(key)
        if name is not None:
            return name
        name = preferred
        if name in self._key_of:
            name = f"{name}-{hashlib.sha256(str(key).encode()).hexdigest()[:8]}"
        self._file_of[key] = name
        self._key_of[name] = key
        return name

    def write_static(self, name: str, text: str) -> None:
        """A conf.d file no resource owns, written before NGINX starts; its name is never given to one."""
        self._key_of[name] = ResourceKey("", name)
        self._manager.create_config(name, text)

    def files(self) -> dict[ResourceKey, str]:
        """Every resource's file name (without .conf)."""
        return dict(self._file_of)

    def write(self, key: ResourceKey, name: str, text: str, ahead: WrittenAhead | None = None) -> None:
        """Make conf.d/<name>.conf hold `text` for `key` (a successful render; in its dynamic form when
        dynamic upstreams are on). `ahead`: what `write_ahead` of this very text returned in the process
        that rendered it; a first write of the file then takes over the file that process wrote, as long as
        it is still that file, without slotting, encoding or reading it (otherwise: as without `ahead`)."""
        self._render_failures.pop(key, None)
        digest = self._adopt(key, name, ahead) if ahead is not None else None
        if digest is None:
            dynamic = self._dynamic_of(name)
            if dynamic is not None:
                text = dynamic.slot(name, text)
            digest = self._write(name, key, text)
        change = self._changes.get(name)
        if change is None or change.old_digest == digest:
            self.rejected.pop(key, None)  # NGINX already serves exactly this

    def write_ahead(self, name: str, text: str) -> WrittenAhead:
        """In a process forked to render (configs.prerender): write conf.d/<name>.conf as `write` would for a
        file written for the first time; returns what `write(..., ahead=)` in the owning process needs to take
        the file over. Takes no lock; the names must be announced with `expect_written_ahead` before the
        fork. (Run in the owning process itself, on the items it measures, it leaves only the file's slot
        counts, which `write` takes over or `drop_written_ahead` forgets.)"""
        slots = None
        dynamic = self._dynamic_of(name)
        if dynamic is not None:
            text = dynamic.slot(name, text)
            slots = dynamic.slots_of(name)
        return WrittenAhead(self._manager.write_config_ahead(name, text), slots)

    def expect_written_ahead(self, names: Sequence[str]) -> None:
        """These files may be written by `write_ahead` in another process: `write` takes each over or reads it
        back (and writes it only if its bytes differ) instead of taking it for absent."""
        self._ahead.update(names)

    def _dynamic_of(self, name: str) -> DynamicUpstreams | None:
        """What slots file `name`: None without dynamic upstreams, and for stream {} files (the module serves
        http {} upstreams only)."""
        return None if name.startswith(f"{STREAM_CONF_D_DIR}/") else self.dynamic

    def _adopt(self, key: ResourceKey, name: str, ahead: WrittenAhead) -> bytes | None:
        """`_write` of a file written ahead (see `write`): its digest if taken over, None if not."""
        if name in self._files or name not in self._ahead or not self._manager.adopt_config(name, ahead.file):
            return None
        dynamic = self._dynamic_of(name)
        if dynamic is not None:
            dynamic.adopt(name, ahead.slots)
        if name not in self._changes:
            self._changes[name] = _Change(key, None, None)
        self._files[name] = ahead.file.digest
        return ahead.file.digest

    def drop_written_ahead(self) -> None:
        """Remove the files written ahead that no `write` took over (e.g. a resource whose render failed
        here), so NGINX never loads a file the engine does not know, and any slot counts `write_ahead` left
        for them in this process."""
        for name in self._ahead:
            if name not in self._files:
                self._manager.delete_config(name)
                if self.dynamic is not None:
                    self.dynamic.forget(name)
        self._ahead.clear()

    def fail(self, key: ResourceKey, error: str) -> None:
        """`key` could not be rendered: its file stays as it is; the error goes to the next outcome."""
        self._render_failures[key] = error

    def remove(self, key: ResourceKey) -> str | None:
        """Forget `key` and remove its file; returns the file name it had."""
        self._render_failures.pop(key, None)
        self.rejected.pop(key, None)
        name = self._file_of.pop(key, None)
        if name is None:
            return None
        if self.dynamic is not None:
            self.dynamic.forget(name)
        self._write(name, key, None)
        self._key_of.pop(name, None)
        return name

    def _write(self, name: str, key: ResourceKey, text: str | None) -> bytes | None:
        """Make the file hold `text` (None: no file); returns the digest of its bytes. The bytes are encoded
        and digested once, here, for the comparison and the Manager's write."""
        data = None if text is None else text.encode()
        digest = None if data is None else content_digest(data)
        current = self._files.get(name)
        if current == digest:
            return digest
        if name not in self._changes:
            old = self._manager.read_config(name) if current is not None else None
            self._changes[name] = _Change(key, old, current)
        self._put(name, data, digest)
        return digest

    def _put(self, name: str, content: str | bytes | None, digest: bytes | None = None) -> None:
        if content is None:
            self._manager.delete_config(name)
            self._files.pop(name, None)
        else:
            data = content.encode() if isinstance(content, str) else content
            digest = digest or content_digest(data)
            absent = self._pruned and name not in self._files and name not in self._ahead
            self._manager.create_config(name, data, absent=absent, digest=digest)
            self._files[name] = digest

    # ------------------------------------------------------------------ reload

    def _pending(self) -> dict[str, _Change]:
        return {n: c for n, c in self._changes.items() if self._files.get(n) != c.old_digest}

    def _main_changed(self) -> bool:
        return self._main_old is not _UNCHANGED and self._main_old != self._main_text

    def _commit(self) -> None:
        self._changes.clear()
        self._main_old = _UNCHANGED
        self._reload_requested = False

    def test_file(self, name: str, text: str) -> tuple[bool, str]:
        """`nginx -t` of the current files with conf.d/<name>.conf holding `text` (nothing is written or
        reloaded); NGINX's error lines when it fails (or why it cannot be tested: a custom nginx.conf
        including conf.d by an absolute path)."""
        try:
            ok, out = self._manager.test_configs({name: text})
        except ValueError as e:
            return False, str(e)
        return ok, "" if ok else self._clean(out)

    def reload_if_needed(self, reason: str = REASON_OTHER) -> ReloadOutcome:
        """Reload NGINX once if anything changed since the last good reload; see the module docstring."""
        if not self._reloads_enabled:
            return ReloadOutcome(reloaded=False)
        failed = dict(self._render_failures)
        self._render_failures.clear()
        pending = self._pending()
        main_changed = self._main_changed()
        if not pending and not main_changed and not self._reload_requested:
            self._commit()
            return ReloadOutcome(reloaded=False, failed=failed)
        if not self._manager.is_running():
            return ReloadOutcome(reloaded=False, failed=failed, error="nginx is not running")
        if pending and not main_changed and not self._reload_requested and self._push_endpoints(pending):
            self._commit()
            for change in pending.values():
                self.rejected.pop(change.key, None)
            return ReloadOutcome(reloaded=False, failed=failed, dynamic=True)
        try:
            self._manager.reload(is_endpoints_update=reason == REASON_ENDPOINTS)
        except ReloadError as e:
            if not pending and not main_changed:
                log.error("nginx reload for a changed secret failed", error=str(e))
                return ReloadOutcome(reloaded=False, failed=failed, error=str(e))
            outcome = self._recover(pending, main_changed, e, reason)
            outcome.failed = {**failed, **outcome.failed}
            return outcome
        self._commit()
        for change in pending.values():
            self.rejected.pop(change.key, None)
        return ReloadOutcome(reloaded=True, failed=failed)

    def _push_endpoints(self, pending: dict[str, _Change]) -> bool:
        """Apply `pending` without a reload if it changes only the addresses of dynamic upstreams; False
        when it does not, or when NGINX did not take the push (then a reload applies it)."""
        if self.dynamic is None:
            return False
        if self.routes is not None:
            return self.routes.push({name: (change.old, self._manager.read_config(name)
                                            if name in self._files else None)
                                     for name, change in pending.items()})
        servers: dict[str, tuple[str, ...]] = {}
        for name, change in pending.items():
            new = self._manager.read_config(name) if name in self._files else None
            if change.old is None or new is None:
                return False
            changed = endpoint_changes(change.old, new)
            if changed is None:
                return False
            servers.update(changed)
        try:
            self._manager.update_upstreams(servers)
        except DynamicUpdateError as e:
            log.warning("dynamic upstream update failed; reloading instead", error=str(e),
                        upstreams=len(servers))
            return False
        return True

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
        failed: dict[ResourceKey, str] = {}
        for name, change in pending.items():
            if name in offenders:
                failed[change.key] = self._clean(offenders[name])
                self.rejected[change.key] = failed[change.key]
            else:
                self.rejected.pop(change.key, None)
        log.warning("nginx reloaded without the offending resources", rejected=sorted(map(str, failed)),
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
