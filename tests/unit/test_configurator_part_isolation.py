"""A shared host's member whose part of the owner's file NGINX refuses (a broken configuration-snippet): the
owner and the other members are served and keep taking changes, the member keeps its last served version
(or none), its error comes back as its own (`ReloadOutcome.failed_parts`), and a new version of it, or of
the owner, is tried again; an owner refused on its own keeps its last served version and its members'
changes are served. Against the in-memory NGINX of test_configs_configurator (refuses "BAD")."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.configurator import Configurator
from ingressctl.configs.part_isolation import search
from ingressctl.configs.renderers import IngressRenderer, Parts
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.keys import INGRESS_KIND, ResourceKey
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from tests.unit.test_configs_configurator import FakeManager

N = "nginx.ingress.kubernetes.io/"
HOST = "shop.example.com"
OWNER = ResourceKey(INGRESS_KIND, "demo/owner")


def key(name: str) -> ResourceKey:
    return ResourceKey(INGRESS_KIND, f"demo/{name}")


def ex(name: str, path: str, snippet: str = "", rv: str = "1", *, member: bool = False) -> IngressEx:
    annotations = {N + "configuration-snippet": snippet} if snippet else {}
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "demo", "resourceVersion": rv, "annotations": annotations},
        "spec": {"ingressClassName": "nginx", "rules": [{"host": HOST, "http": {"paths": [
            {"path": path, "pathType": "Prefix",
             "backend": {"service": {"name": name, "port": {"number": 80}}}}]}}]}}
    return IngressEx(obj, {HOST: True}, {backend_key(name, 80): ["10.0.0.1:80"]}, is_member=member)


def owner(rv: str = "1", *members: IngressEx) -> IngressEx:
    return dataclasses.replace(ex("owner", "/", rv=rv), members=members)


def configurator() -> tuple[Configurator, FakeManager]:
    m = FakeManager()
    static = StaticConfigParams(ingress_nginx_compat=True, enable_snippets=True)
    return Configurator(m, static, ConfigParams(), TemplateExecutor()), m  # type: ignore[arg-type]


def served(m: FakeManager) -> str:
    return m.loaded["demo-owner"]


def test_a_refused_member_keeps_its_last_served_version_and_the_rest_is_served() -> None:
    c, m = configurator()
    c.add_or_update_ingress(owner("1", ex("team-a", "/a", member=True), ex("team-b", "/b", member=True)))
    assert c.reload_if_needed().reloaded
    # team-a breaks its snippet and moves; team-b changes too, in the same reload.
    c.add_or_update_ingress(owner("1", ex("team-a", "/a2", "BAD on;", rv="2", member=True),
                                  ex("team-b", "/b2", "add_header X-B b;", rv="2", member=True)))
    tested: list[str] = []
    test_file = c.files.test_file

    def counted(name: str, text: str) -> tuple[bool, str]:
        tested.append(name)
        return test_file(name, text)

    c.files.test_file = counted  # type: ignore[method-assign]
    outcome = c.reload_if_needed()
    assert outcome.reloaded and outcome.failed == {} and c.rejected == {}
    assert list(outcome.failed_parts) == [OWNER]
    assert outcome.failed_parts[OWNER] == {
        key("team-a"): '[emerg] unknown directive "BAD" in /etc/ic/conf.d/demo-owner.conf:1'}
    text = served(m)
    assert "BAD" not in text and "location /a/" in text and "/a2" not in text   # team-a as last served
    assert "location /b2/" in text and "X-B" in text                           # team-b's new version
    assert tested == ["demo-owner"] * 3   # nginx -t of candidates: one per part and one more
    # The owner changes: its version tries team-a's again (refused again), the owner's change is served.
    c.add_or_update_ingress(owner("2", ex("team-a", "/a2", "BAD on;", rv="2", member=True),
                                  ex("team-b", "/b2", "add_header X-B b;", rv="2", member=True),
                                  ex("late", "/late", rv="1", member=True)))
    outcome = c.reload_if_needed()
    assert outcome.failed == {} and set(outcome.failed_parts[OWNER]) == {key("team-a")}
    assert "location /late/" in served(m) and "location /a/" in served(m)
    # Nothing changed of either: the held-back version is rendered again, no failing reload is tried.
    attempts = m.reload_attempts
    c.update_endpoints([owner("2", ex("team-a", "/a2", "BAD on;", rv="2", member=True),
                         ex("team-b", "/b2", "add_header X-B b;", rv="2", member=True),
                         ex("late", "/late", rv="1", member=True))])
    outcome = c.reload_if_needed()
    assert m.reload_attempts == attempts and set(outcome.failed_parts[OWNER]) == {key("team-a")}
    # team-a fixes its snippet: served, no error left.
    c.add_or_update_ingress(owner("2", ex("team-a", "/a2", "add_header X-A a;", rv="3", member=True),
                                  ex("team-b", "/b2", "add_header X-B b;", rv="2", member=True)))
    outcome = c.reload_if_needed()
    assert outcome.reloaded and outcome.failed == {} and outcome.failed_parts == {}
    text = served(m)
    assert "location /a2/" in text and "location /a/" not in text and "location /late/" not in text


def test_a_member_refused_from_its_first_version_is_left_out() -> None:
    c, m = configurator()
    c.add_or_update_ingress(owner("1", ex("bad", "/bad", "BAD;", member=True),
                                  ex("good", "/good", member=True)))
    outcome = c.reload_if_needed()
    assert outcome.reloaded and outcome.failed == {} and set(outcome.failed_parts[OWNER]) == {key("bad")}
    assert "location /good/" in served(m) and "/bad" not in served(m)


def test_an_owner_refused_on_its_own_is_blamed_alone_and_its_members_changes_are_served() -> None:
    c, m = configurator()
    c.add_or_update_ingress(owner("1", ex("good", "/good", member=True), ex("bad", "/bad", member=True)))
    assert c.reload_if_needed().reloaded

    def broken_owner(*members: IngressEx) -> IngressEx:
        return dataclasses.replace(ex("owner", "/owner2", "BAD;", rv="2"), members=members)

    c.add_or_update_ingress(broken_owner(ex("good", "/good2", rv="2", member=True),
                                         ex("bad", "/bad2", "BAD too;", rv="2", member=True)))
    outcome = c.reload_if_needed()
    assert outcome.reloaded and set(outcome.failed) == {OWNER} and outcome.parts_served == {OWNER}
    assert "unknown directive" in outcome.failed[OWNER]
    assert set(outcome.failed_parts[OWNER]) == {key("bad")}  # a member refused on its own is named too
    text = served(m)
    assert "BAD" not in text and "location / " in text and "/owner2" not in text  # the owner as last served
    assert "location /good2/" in text and "location /bad/" in text                # the members' versions
    # Re-rendered unchanged (endpoints): the owner's error again, no reload attempt.
    attempts = m.reload_attempts
    c.update_endpoints([broken_owner(ex("good", "/good2", rv="2", member=True),
                                     ex("bad", "/bad2", "BAD too;", rv="2", member=True))])
    outcome = c.reload_if_needed()
    assert m.reload_attempts == attempts
    assert set(outcome.failed) == {OWNER} and outcome.parts_served == {OWNER}
    # The owner fixed: all of it served.
    fixed = dataclasses.replace(ex("owner", "/owner2", rv="3"),
                                members=(ex("good", "/good2", rv="2", member=True),))
    c.add_or_update_ingress(fixed)
    outcome = c.reload_if_needed()
    assert (outcome.failed, outcome.failed_parts, outcome.parts_served) == ({}, {}, set())
    assert "location /owner2/" in served(m) and "/bad" not in served(m)


def test_an_owner_never_served_is_refused_whole() -> None:
    c, m = configurator()
    c.add_or_update_ingress(dataclasses.replace(ex("owner", "/", "BAD;"),
                                                members=(ex("a", "/a", member=True),)))
    outcome = c.reload_if_needed()
    assert set(outcome.failed) == {OWNER} and outcome.parts_served == set() and "demo-owner" not in m.loaded


def test_a_deleted_owner_forgets_its_held_back_parts() -> None:
    c, m = configurator()
    c.add_or_update_ingress(owner("1", ex("bad", "/bad", "BAD;", member=True)))
    assert c.reload_if_needed().failed_parts
    c.delete_ingress("demo/owner")
    outcome = c.reload_if_needed()
    assert outcome.reloaded and outcome.failed_parts == {} and "demo-owner" not in m.loaded
    c.add_or_update_ingress(owner("1", ex("bad", "/bad", "add_header X y;", member=True)))
    assert c.reload_if_needed().failed_parts == {}


@given(st.lists(st.booleans(), min_size=1, max_size=6), st.data())
def test_search_holds_back_exactly_the_refused_parts(bad: list[bool], data: Any) -> None:
    keys = [key(f"m{i}") for i in range(len(bad))]
    was_served = {k: data.draw(st.booleans()) for k in keys}
    parts = Parts("1", {k: "2" for k in keys})
    old = {k: f"old {k}" for k in keys if was_served[k]}

    def test(replace: Any) -> tuple[bool, str]:  # a new version is bad where `bad` says so
        new = [k for k in keys if k not in replace]
        assert all(replace[k] == old.get(k) for k in replace)
        refused = [k for k in new if bad[keys.index(k)]]
        return not refused, f"refused {refused}"

    found = search(parts, old, test)
    assert found is not None and set(found) == {k for k, b in zip(keys, bad, strict=True) if b}


def test_the_ingress_renderer_swaps_members_and_names_them_by_version() -> None:
    r = IngressRenderer()
    a, b = ex("a", "/a", rv="7", member=True), ex("b", "/b", rv="8", member=True)
    parts = r.parts(owner("3", a, b))
    assert (parts.version, parts.versions) == ("3", {key("a"): "7", key("b"): "8"})
    assert r.part_objects(owner("3", a, b)) == {key("a"): a, key("b"): b} and r.part_objects(a) == {}
    older = ex("a", "/old", rv="6", member=True)
    swapped = r.with_parts(owner("3", a, b), {key("a"): older, key("b"): None})
    assert isinstance(swapped, IngressEx) and swapped.members == (older,)
