"""Configurator bookkeeping against an in-memory Manager: writes only on change, reload only when needed,
batching, and failed-reload isolation. (The same paths run against a real NGINX in
tests/integration/test_configurator.py.)

The fake NGINX refuses any file containing BAD (as `nginx -t` and reload would) and, to model a port it cannot
bind, any file containing BINDFAIL on reload only (`nginx -t` passes it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.configurator import Configurator, ReloadOutcome
from ingressctl.configs.files import _isolate, _isolate_without_base
from ingressctl.configs.templates import MAIN_TEMPLATE, TEMPLATES_DIR, TemplateExecutor
from ingressctl.keys import INGRESS_KIND, ResourceKey
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.nginx.conf_dir import WrittenFile, content_digest
from ingressctl.nginx.manager import ReloadError


def ikey(ns_name: str) -> ResourceKey:
    return ResourceKey(INGRESS_KIND, ns_name)


class FakeManager:
    def __init__(self, stale: Mapping[str, str] | None = None) -> None:
        self.conf_dir = "/etc/ic"
        self.run_dir = "/run/ic"
        self.secrets_dir = "/etc/ic/secrets"
        self.files: dict[str, str] = dict(stale or {})
        self.main = ""
        self.running = True
        self.reload_count = 0
        self.reload_attempts = 0
        self.writes = 0
        self.absent_writes = 0  # writes the file engine declared to be of a missing file
        self.tests = 0
        self.timeout = False
        self.loaded: dict[str, str] = {}  # what the fake NGINX serves
        self.secrets = {"s1"}  # a file containing "NEEDS:<secret>" fails without that secret

    def list_configs(self) -> list[str]:
        return sorted(self.files)

    def create_config(self, name: str, data: str | bytes, *, absent: bool = False,
                      digest: bytes | None = None) -> bool:
        # The file engine's promises: a file it calls absent does not exist, and a digest it passes is the
        # Manager's digest of these bytes (checked by every test here).
        assert not absent or name not in self.files, f"{name} called absent but exists"
        raw = data.encode() if isinstance(data, str) else data
        assert digest is None or digest == content_digest(raw), f"{name} written with a wrong digest"
        content = raw.decode()
        self.absent_writes += absent
        if self.files.get(name) == content:
            return False
        self.writes += 1
        self.files[name] = content
        return True

    def write_config_ahead(self, name: str, content: str) -> WrittenFile:
        self.files[name] = content  # in a forked process: its own copy
        return WrittenFile(content_digest(content.encode()), 0, len(content), 0)

    def adopt_config(self, name: str, written: WrittenFile) -> bool:
        # Only a file that holds what was written ahead (in this process's copy) is taken over.
        content = self.files.get(name)
        return content is not None and content_digest(content.encode()) == written.digest

    def delete_config(self, name: str) -> bool:
        return self.files.pop(name, None) is not None

    def read_config(self, name: str) -> str | None:
        return self.files.get(name)

    def create_main_config(self, content: str) -> bool:
        changed = content != self.main
        self.main = content
        return changed

    def is_running(self) -> bool:
        return self.running

    def _check(self, files: Mapping[str, str], main: str, *, runtime: bool) -> tuple[bool, str]:
        errors = [f'[emerg] unknown directive "BAD" in /run/ic/staging-x1/conf.d/{n}.conf:1'
                  for n, c in sorted(files.items()) if "BAD" in c]
        errors += [f'[emerg] cannot load certificate "/etc/ic/secrets/{c.split("NEEDS:")[1].split()[0]}"'
                   for _, c in sorted(files.items())
                   if "NEEDS:" in c and c.split("NEEDS:")[1].split()[0] not in self.secrets]
        if "BAD" in main:
            errors.append('[emerg] unknown directive "BAD" in /etc/ic/nginx.conf:1')
        if runtime:
            errors += [f"[emerg] bind() to 0.0.0.0:1 failed (98: Address already in use) for {n}"
                       for n, c in sorted(files.items()) if "BINDFAIL" in c]
        return not errors, "\n".join(f"nginx: {e}" for e in errors)

    def test_config(self, main_conf_path: str | None = None) -> tuple[bool, str]:
        self.tests += 1
        return self._check(self.files, self.main, runtime=False)

    def test_configs(self, overrides: Mapping[str, str | None]) -> tuple[bool, str]:
        self.tests += 1
        files = dict(self.files)
        for name, content in overrides.items():
            if content is None:
                files.pop(name, None)
            else:
                files[name] = content
        return self._check(files, self.main, runtime=False)

    def reload(self, is_endpoints_update: bool = False) -> None:
        self.reload_attempts += 1
        if self.timeout:
            raise ReloadError("could not get newest config version: could not get expected version: 3 "
                              "after 1ms")
        ok, out = self._check(self.files, self.main, runtime=True)
        if not ok:
            raise ReloadError(f"nginx reload failed: {out}", out)
        self.reload_count += 1
        self.loaded = dict(self.files)


# The ingress template writes the "content" annotation, so a test decides what NGINX will think of a file.
TEMPLATE = "# {{ ingress.namespace }}/{{ ingress.name }}\n{{ ingress.annotations.get('content', 'ok') }}\n"


def ex(name: str, content: str = "ok", namespace: str = "default") -> IngressEx:
    ing = {"metadata": {"name": name, "namespace": namespace, "annotations": {"content": content}},
           "spec": {"rules": [{"host": f"{name}.example.com", "http": {"paths": [
               {"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "svc", "port": {"number": 80}}}}]}}]}}
    return IngressEx(ing, {f"{name}.example.com": True}, {backend_key("svc", 80): ["10.0.0.1:80"]})


def configurator(manager: FakeManager | None = None, *,
                 builtin: bool = False) -> tuple[Configurator, FakeManager]:
    m = manager or FakeManager()
    tx = TemplateExecutor()
    if not builtin:
        tx.update_ingress_template(TEMPLATE)
    # The ConfigMap's ingress-template is what the Configurator applies; keep the test template in it.
    params = ConfigParams(ingress_template=None if builtin else TEMPLATE)
    c = Configurator(m, StaticConfigParams(), params, tx)  # type: ignore[arg-type]
    return c, m


def test_constructor_writes_main_and_prunes_stale_files() -> None:
    m = FakeManager(stale={"old-ingress": "BAD"})
    c, _ = configurator(m)
    assert m.files == {} and "daemon off;" in m.main and "unix:/run/ic/nginx-502-server.sock" in m.main
    assert c.static.run_dir == "/run/ic" and c.static.conf_dir == "/etc/ic"


def test_files_of_a_pruned_conf_dir_are_written_as_absent_until_they_exist() -> None:
    m = FakeManager(stale={"old-ingress": "ok", "default-a": "stale"})
    c, _ = configurator(m)  # prunes both: every later first write is of a missing file
    c.add_or_update_ingress(ex("a"))
    c.add_or_update_ingress(ex("b"))
    assert m.absent_writes == 2
    c.add_or_update_ingress(ex("a", content="changed"))  # exists now: the Manager compares with disk
    assert m.absent_writes == 2 and m.writes == 3
    c.delete_ingress("default/a")
    c.add_or_update_ingress(ex("a"))  # removed, so missing again
    assert m.absent_writes == 3


def test_without_pruning_no_file_is_assumed_absent() -> None:
    m = FakeManager(stale={"default-a": "left by a previous run"})
    c = Configurator(m, StaticConfigParams(), ConfigParams(), TemplateExecutor(),  # type: ignore[arg-type]
                     prune_stale_configs=False)
    c.add_or_update_ingress(ex("a"))
    c.add_or_update_ingress(ex("b"))
    assert m.absent_writes == 0 and m.writes == 2


def test_identical_render_causes_no_write_and_no_reload() -> None:
    c, m = configurator(builtin=True)
    assert c.add_or_update_ingress(ex("a")) == []
    assert c.reload_if_needed() == ReloadOutcome(reloaded=True)
    writes = m.writes
    c.add_or_update_ingress(ex("a"))
    c.update_endpoints([ex("a")])
    assert m.writes == writes
    assert c.reload_if_needed("endpoints") == ReloadOutcome(reloaded=False)
    assert m.reload_count == 1
    # An endpoint change that alters the bytes reloads once.
    changed = ex("a")
    changed.endpoints[backend_key("svc", 80)] = ["10.0.0.2:80"]
    c.update_endpoints([changed])
    assert c.reload_if_needed("endpoints").reloaded and m.reload_count == 2


def test_a_change_undone_before_the_reload_causes_no_reload() -> None:
    c, m = configurator()
    c.add_or_update_ingress(ex("a"))
    c.reload_if_needed()
    c.add_or_update_ingress(ex("a", "changed"))
    c.add_or_update_ingress(ex("a"))
    assert not c.has_pending_changes()
    assert c.reload_if_needed() == ReloadOutcome(reloaded=False) and m.reload_count == 1


def test_batching() -> None:
    c, m = configurator()
    c.disable_reloads()
    for name in "abc":
        c.add_or_update_ingress(ex(name))
        assert c.reload_if_needed() == ReloadOutcome(reloaded=False)
    assert m.reload_attempts == 0 and c.has_pending_changes()
    c.enable_reloads()
    assert c.reload_if_needed().reloaded and m.reload_count == 1
    assert set(m.loaded) == {"default-a", "default-b", "default-c"}


def test_delete() -> None:
    c, m = configurator()
    c.add_or_update_ingresses([ex("a"), ex("b")])
    c.reload_if_needed()
    c.delete_ingress("default/a")
    c.delete_ingress("default/never-seen")
    assert c.reload_if_needed().reloaded and set(m.loaded) == {"default-b"}
    assert c.resource_counts()["ingress"] == {"regular": 1, "master": 0, "minion": 0}


def test_nginx_not_running_keeps_changes_pending() -> None:
    c, m = configurator()
    m.running = False
    c.add_or_update_ingress(ex("a"))
    assert c.reload_if_needed().error == "nginx is not running"
    m.running = True
    assert c.reload_if_needed().reloaded


def test_failed_reload_isolates_the_offenders() -> None:
    c, m = configurator()
    c.add_or_update_ingresses([ex("a"), ex("b"), ex("updated")])
    assert c.reload_if_needed().reloaded
    c.disable_reloads()
    c.add_or_update_ingresses([ex("new-good"), ex("new-bad", "BAD"), ex("b", "b2"), ex("updated", "BAD"),
                               ex("c"), ex("d"), ex("e")])
    c.delete_ingress("default/a")
    c.enable_reloads()
    outcome = c.reload_if_needed()
    assert outcome.reloaded and outcome.error == ""
    assert set(outcome.failed) == {ikey("default/new-bad"), ikey("default/updated")}
    # NGINX's error, with the staging path shown as the conf dir.
    assert outcome.failed[ikey("default/new-bad")] == (
        '[emerg] unknown directive "BAD" in /etc/ic/conf.d/default-new-bad.conf:1')
    assert c.rejected == outcome.failed
    # The good changes are served; the offenders keep their last good file (or none).
    assert set(m.loaded) == {"default-b", "default-updated", "default-new-good", "default-c", "default-d",
                             "default-e"}
    assert "b2" in m.loaded["default-b"] and "BAD" not in m.loaded["default-updated"]
    assert m.files == m.loaded
    # No poisoning: the next change reloads fine, and fixing an offender clears it.
    c.add_or_update_ingress(ex("f"))
    assert c.reload_if_needed() == ReloadOutcome(reloaded=True)
    c.add_or_update_ingress(ex("new-bad", "fixed"))
    assert c.reload_if_needed() == ReloadOutcome(reloaded=True) and ikey("default/new-bad") not in c.rejected
    # Reverting an offender to its last good version clears it without a reload.
    c.add_or_update_ingress(ex("updated"))
    assert c.reload_if_needed() == ReloadOutcome(reloaded=False) and c.rejected == {}


def test_runtime_failure_is_isolated_by_real_reloads() -> None:
    c, m = configurator()
    c.add_or_update_ingress(ex("a"))
    c.reload_if_needed()
    c.add_or_update_ingresses([ex("b"), ex("port", "BINDFAIL"), ex("c")])
    outcome = c.reload_if_needed()
    assert outcome.reloaded and list(outcome.failed) == [ikey("default/port")]
    assert "Address already in use" in outcome.failed[ikey("default/port")]
    assert set(m.loaded) == {"default-a", "default-b", "default-c"}


def test_isolation_when_the_last_good_config_no_longer_passes() -> None:
    # A Secret was deleted: the last good file of "tls" names its certificate, the pending one does not.
    c, m = configurator()
    c.add_or_update_ingresses([ex("tls", "NEEDS:s1"), ex("a")])
    assert c.reload_if_needed().reloaded
    m.secrets.clear()
    c.add_or_update_ingresses([ex("tls", "reject handshakes"), ex("bad", "BAD"), ex("b"), ex("c")])
    outcome = c.reload_if_needed()
    assert outcome.reloaded and list(outcome.failed) == [ikey("default/bad")]
    assert set(m.loaded) == {"default-tls", "default-a", "default-b", "default-c"}
    assert "reject" in m.loaded["default-tls"]


def test_no_isolation_possible_keeps_everything_pending() -> None:
    c, m = configurator()
    c.add_or_update_ingress(ex("tls", "NEEDS:s1"))
    assert c.reload_if_needed().reloaded
    m.secrets.clear()
    c.add_or_update_ingress(ex("bad", "BAD"))
    outcome = c.reload_if_needed()
    assert not outcome.reloaded and "cannot isolate" in outcome.error and c.has_pending_changes()
    assert "BAD" in m.files["default-bad"]  # the desired state stays on disk for the retry
    c.add_or_update_ingress(ex("tls", "fixed"))
    c.delete_ingress("default/bad")
    assert c.reload_if_needed() == ReloadOutcome(reloaded=True)


def test_reload_timeout_keeps_changes_pending() -> None:
    c, m = configurator()
    c.add_or_update_ingress(ex("a"))
    m.timeout = True
    outcome = c.reload_if_needed()
    assert not outcome.reloaded and "could not get newest config version" in outcome.error
    assert m.files["default-a"].endswith("ok\n") and c.has_pending_changes()
    m.timeout = False
    assert c.reload_if_needed().reloaded


def test_render_errors_are_reported_by_the_next_reload_and_keep_the_old_file() -> None:
    c, m = configurator(builtin=True)
    c.add_or_update_ingress(ex("a"))
    c.reload_if_needed()
    before = m.files["default-a"]
    c._templates.update_ingress_template("{{ ingress.annotations['content'] | quote }}\n")
    c.add_or_update_ingress(ex("a", "x\n}\nserver {"))
    assert m.files["default-a"] == before
    outcome = c.reload_if_needed()
    a = ikey("default/a")
    assert outcome == ReloadOutcome(reloaded=False, failed={a: outcome.failed[a]})
    assert "unsafe value" in outcome.failed[ikey("default/a")]
    assert c.reload_if_needed() == ReloadOutcome(reloaded=False)  # reported once


def test_config_map_changes_the_main_config_and_a_bad_template_falls_back() -> None:
    c, m = configurator(builtin=True)
    c.add_or_update_ingress(ex("a"))
    c.reload_if_needed()
    warnings = c.update_config(ConfigParams(worker_connections=2048, main_template="{% if %}"), [ex("a")])
    assert len(warnings) == 1 and warnings[0].startswith("main-template: ")
    assert "worker_connections 2048;" in m.main
    assert c.reload_if_needed().reloaded and m.reload_count == 2


def test_a_main_config_nginx_refuses_is_reverted() -> None:
    c, m = configurator(builtin=True)
    c.add_or_update_ingress(ex("a"))
    c.reload_if_needed()
    good_main = m.main
    c.update_config(ConfigParams(main_template="BAD\n"), [ex("a"), ex("b")])
    outcome = c.reload_if_needed()
    assert outcome.reloaded and outcome.failed == {} and "main configuration rejected" in outcome.error
    assert m.main == good_main and set(m.loaded) == {"default-a", "default-b"}


def test_every_render_reads_the_current_params_replicas_and_main_template() -> None:
    """Renders share one context (and through it the model's shared settings) only while nothing in it
    changed: a new ConfigMap, replica count or main template is seen by the next render."""
    c, m = configurator(builtin=True)
    a = ex("a")
    a.ingress["metadata"]["annotations"] = {"nginx.org/limit-req-rate": "30r/s",
                                            "nginx.org/limit-req-scale": "true"}
    c.add_or_update_ingress(a)
    assert "rate=30r/s" in m.files["default-a"] and "proxy_connect_timeout" not in m.files["default-a"]
    c.set_controller_replicas(3)
    c.add_or_update_ingress(a)
    assert "rate=10r/s" in m.files["default-a"]
    c.update_config(ConfigParams(proxy_connect_timeout="7s"), [a])  # nginx.conf declares it, a inherits it
    assert "proxy_connect_timeout 7s;" in m.main and "proxy_connect_timeout" not in m.files["default-a"]
    with open(os.path.join(TEMPLATES_DIR, MAIN_TEMPLATE)) as f:  # a custom main template: nothing inherited
        c.update_config(ConfigParams(proxy_connect_timeout="7s", main_template=f.read()), [a])
    assert "proxy_connect_timeout 7s;" in m.files["default-a"]


def test_colliding_file_names_get_distinct_files() -> None:
    c, m = configurator()
    c.add_or_update_ingress(ex("b-c", namespace="a"))
    c.add_or_update_ingress(ex("c", namespace="a-b"))
    assert len(m.files) == 2 and "a-b-c" in m.files
    c.delete_ingress("a-b/c")
    assert list(m.files) == ["a-b-c"] and m.files["a-b-c"].startswith("# a/b-c")


def test_wildcard_path_comes_from_the_manager() -> None:
    m = FakeManager()
    c = Configurator(m, StaticConfigParams(), ConfigParams(), TemplateExecutor(),  # type: ignore[arg-type]
                     is_wildcard_enabled=True)
    assert c.static.wildcard_tls_path == "/etc/ic/secrets/wildcard"


@settings(max_examples=200, deadline=None)
@given(n=st.integers(min_value=1, max_value=40), data=st.data())
def test_isolate_finds_exactly_the_offenders(n: int, data: Any) -> None:
    items = [f"r{i:02d}" for i in range(n)]
    bad = set(data.draw(st.sets(st.sampled_from(items), min_size=1)))
    calls: list[Sequence[str]] = []

    def test(subset: Sequence[str]) -> tuple[bool, str]:
        calls.append(subset)
        hit = sorted(bad & set(subset))
        return not hit, f"error in {hit[0]}" if hit else ""

    found = _isolate(items, [], f"error in {min(bad)}", test)
    assert set(found) == bad
    for name, error in found.items():
        assert error == f"error in {name}"
    if len(bad) == 1:
        assert len(calls) <= 2 * max(1, (n - 1).bit_length())


def test_isolate_handles_offenders_that_only_fail_together() -> None:
    # x and y are fine alone but conflict (e.g. a duplicate upstream name): the later one is rejected.
    def test(subset: Sequence[str]) -> tuple[bool, str]:
        return not {"x", "y"} <= set(subset), "conflict"

    assert _isolate(["a", "x", "b", "y"], [], "conflict", test) == {"y": "conflict"}


@pytest.mark.parametrize("n", [1, 2, 7])
def test_isolate_all_bad(n: int) -> None:
    items = [str(i) for i in range(n)]
    assert set(_isolate(items, [], "e", lambda s: (not s, "e"))) == set(items)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(min_value=2, max_value=12), data=st.data())
def test_isolate_without_base_finds_the_offenders_when_a_change_repairs_the_base(n: int, data: Any) -> None:
    items = [f"r{i:02d}" for i in range(n)]
    fixer = data.draw(st.sampled_from(items))
    bad = set(data.draw(st.sets(st.sampled_from([i for i in items if i != fixer]), min_size=1, max_size=2)))

    def test(subset: Sequence[str]) -> tuple[bool, str]:
        hit = sorted(bad & set(subset))
        if hit:
            return False, f"error in {hit[0]}"
        return fixer in subset, "" if fixer in subset else "base is broken"

    found = _isolate_without_base(items, f"error in {min(bad)}", test)
    assert found is not None and set(found) == bad


def test_isolate_without_base_gives_up_when_nothing_passes() -> None:
    assert _isolate_without_base(["a", "b", "c"], "e", lambda s: (False, "e")) is None
    assert _isolate_without_base(["a"], "e", lambda s: (False, "e")) is None


def test_shared_upstream_zone_is_sized_from_the_upstreams() -> None:
    """nginx.conf declares the shared zone with room for every upstream; it steps up as Ingresses come and
    down as they go, and the next reload carries the new main config."""
    c, m = configurator(builtin=True)
    assert "zone ingressctl-upstreams 1m;" in m.main
    # Each Ingress of ex() has one upstream with one server: 3 KiB reserved.
    c.add_or_update_ingresses([ex(f"i{n}") for n in range(1000)])
    assert "zone ingressctl-upstreams 3m;" in m.main
    assert all("zone ingressctl-upstreams;" in text for text in m.files.values())
    assert c.reload_if_needed().reloaded and m.reload_count == 1
    for n in range(700):
        c.delete_ingress(f"default/i{n}")
    assert "zone ingressctl-upstreams 1m;" in m.main
    assert c.reload_if_needed().reloaded and m.reload_count == 2


def test_upstreams_go_to_the_front_only_while_nginx_conf_loads_the_module() -> None:
    """With the upstream-front module, every upstream block of an Ingress file starts with its directive; a
    custom main template that does not load the module gets files without it (NGINX would refuse the unknown
    directive), and the built-in one brings it back."""
    m = FakeManager()
    module = "/modules/ngx_http_ingressctl_upstream_front_module.so"
    static = StaticConfigParams(upstream_front_module_path=module)
    c = Configurator(m, static, ConfigParams(), TemplateExecutor())  # type: ignore[arg-type]
    c.add_or_update_ingress(ex("a"))
    line = "    ingressctl_upstream_front;\n"
    assert f"load_module {module};" in m.main
    assert m.files["default-a"].count(" {\n" + line) == m.files["default-a"].count("\nupstream ") == 1
    with open(os.path.join(TEMPLATES_DIR, MAIN_TEMPLATE)) as f:
        custom = f.read().replace("load_module {{ upstream_front_module_path | arg }};", "")
    c.update_config(ConfigParams(main_template=custom), [ex("a")])
    assert "upstream_front" not in m.main and line not in m.files["default-a"]
    c.update_config(ConfigParams(), [ex("a")])
    assert m.files["default-a"].count(" {\n" + line) == 1


def test_nginx_conf_includes_conf_d_through_the_scoped_include_only_when_it_loads_the_module() -> None:
    """With the scoped-include module, nginx.conf loads it and includes conf.d through its directive (and
    nowhere else); without it, NGINX's own include."""
    module = "/modules/ngx_http_ingressctl_include_scoped_module.so"
    for path in (module, ""):
        m = FakeManager()
        c = Configurator(m, StaticConfigParams(include_scoped_module_path=path), ConfigParams(),  # type: ignore[arg-type]
                         TemplateExecutor())
        c.add_or_update_ingress(ex("a"))
        scoped = "\n    ingressctl_include_scoped conf.d/*.conf;\n" in m.main
        assert scoped == bool(path) and (f"load_module {module};" in m.main) == bool(path)
        assert ("\n    include conf.d/*.conf;\n" in m.main) != bool(path), m.main


def test_rendered_ahead_files_are_byte_identical_and_each_resource_is_rendered_once() -> None:
    """`render_ahead` (forked processes) gives the files the renders on this thread give, with the
    upstream-front step applied in the other processes too; `add_or_update` takes each result once and
    renders here only what was not rendered ahead: a resource given anew, or after the render context
    changed."""
    module = "/modules/ngx_http_ingressctl_upstream_front_module.so"
    static = StaticConfigParams(upstream_front_module_path=module)
    exes = [ex(f"i{n}", namespace=f"ns{n % 7}") for n in range(240)]
    plain_m, ahead_m = FakeManager(), FakeManager()
    plain = Configurator(plain_m, static, ConfigParams(), TemplateExecutor())  # type: ignore[arg-type]
    ahead = Configurator(ahead_m, static, ConfigParams(), TemplateExecutor())  # type: ignore[arg-type]
    for e in exes:
        plain.add_or_update_ingress(e)
    stats = ahead.render_ahead([(e.key_with_kind, e) for e in exes], len(exes), processes=2, min_items=1)
    [child_share] = stats.child_ranges
    assert stats.processes == 2 and stats.by_children == len(child_share) > 0
    assert child_share.start == len(exes) // 16, "the first items were timed here"
    renderer = ahead._renderers[INGRESS_KIND]
    here: list[str] = []
    original = renderer.render

    def spy(resource: object, ctx: Any) -> Any:
        here.append(resource.key if isinstance(resource, IngressEx) else "?")
        return original(resource, ctx)

    renderer.render = spy  # type: ignore[method-assign]
    for e in exes:
        ahead.add_or_update_ingress(e)
    assert here == [], "a resource rendered ahead was rendered again"
    assert ahead_m.files == plain_m.files and len(plain_m.files) == len(exes)
    assert "ingressctl_upstream_front;" in ahead_m.files["ns1-i1"]
    # Each result is taken once: the same resource again renders here.
    ahead.add_or_update_ingress(exes[1])
    assert here == [exes[1].key]
    # A result whose resource is not the one given, or whose context changed, is not taken.
    stats = ahead.render_ahead([(e.key_with_kind, e) for e in exes[:4]], 4, processes=2, min_items=1,
                               measure=0)
    mine = [i for i in range(4) if i not in stats.child_ranges[0]]
    # This process's share, each item once; an item it took back from a late child comes after its own share
    # (how late the child is depends on how fast each side renders).
    assert here[0] == exes[1].key and sorted(here[1:]) == sorted(exes[i].key for i in mine) and 2 in mine
    here.clear()
    ahead.add_or_update_ingress(ex("i0", namespace="ns0"))          # an equal, but another, object
    ahead.set_controller_replicas(3)                                 # a new render context
    ahead.add_or_update_ingress(exes[2])
    assert here == [exes[0].key, exes[2].key]
    ahead.drop_rendered_ahead()
    ahead.add_or_update_ingress(exes[3])
    assert here[-1] == exes[3].key
