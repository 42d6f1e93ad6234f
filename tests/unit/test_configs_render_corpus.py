"""The Ingress renderer's output over a varied corpus is byte-identical to the recorded output (see
tests/unit/render_corpus.py): optimisations of the model and templates must not change any configuration."""

from __future__ import annotations

import dataclasses
import difflib
import re
from pathlib import Path

import pytest

from ingressctl.configs.config import BasicAuth, Location, Server
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.templates import INGRESS_TEMPLATE, TEMPLATES_DIR
from ingressctl.kinds.ingress.config import generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx
from tests.unit.render_corpus import GOLDEN, corpus, render_corpus
from tests.unit.render_corpus_extra import GOLDEN_EXTRA, render_corpus_extra


def _same_as_recorded(golden: Path, actual: str) -> None:
    expected = golden.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), "recorded",
                                            "rendered", n=2))
        raise AssertionError(f"the rendered corpus differs from {golden.name}:\n{diff[:20000]}")


def test_the_corpus_renders_exactly_as_recorded() -> None:
    _same_as_recorded(GOLDEN, render_corpus())


def test_the_extra_corpus_renders_exactly_as_recorded() -> None:
    """ConfigMap, flag and policy branches the first corpus does not reach (see render_corpus_extra)."""
    _same_as_recorded(GOLDEN_EXTRA, render_corpus_extra())


def test_rendering_the_corpus_twice_gives_the_same_text() -> None:
    """Shared or cached parts of the model never leak from one Ingress into another's output."""
    assert render_corpus() == render_corpus()


def test_shared_settings_follow_the_params_they_were_made_from() -> None:
    """Ingresses share what their annotations make of the params, but a new ConfigMap (or an equal one
    built again) is read afresh, and a location's settings never carry another Ingress's values."""
    static = StaticConfigParams()
    first = next(r for note, r in corpus() if "annotations=[]" in note)
    assert isinstance(first, IngressEx)
    for timeout in ("7s", "60s", "7s"):
        params = dataclasses.replace(ConfigParams(), proxy_connect_timeout=timeout)
        cfg, _ = generate_nginx_config(first, static, params)
        assert {loc.proxy_connect_timeout for s in cfg.servers for loc in s.locations} == {timeout}
        assert all(loc.service_name and loc.upstream for s in cfg.servers for loc in s.locations)


def _block_tests(template: str, obj: str, flag: str) -> list[set[str]]:
    """The `<obj>.<field>` names of each test (`if`, `elif`, `for`) directly inside `{% if <obj>.<flag> %}`
    (tests nested in those only run when theirs passed)."""
    start = template.index("{% if " + obj + "." + flag + " %}")
    depth = 0
    tests = []
    for m in re.finditer(r"{%-?\s*(if|elif|for|endif|endfor)\b([^%]*)%}", template[start:]):
        keyword, expression = m.group(1), m.group(2)
        if keyword in ("endif", "endfor"):
            depth -= 1
            if depth == 0:
                break
            continue
        if depth == (2 if keyword == "elif" else 1):  # an elif belongs to the if that opened its level
            names = set(re.findall(obj + r"\.([a-z_]+)", expression.split(" in ", 1)[-1]))
            if names:
                tests.append(names)
        if keyword != "elif":
            depth += 1
    return tests


def _truthy(value: object) -> object:
    """A set value of the type of a field's default."""
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return 1
    if isinstance(value, str):
        return "x"
    if isinstance(value, tuple):
        return ("x",)
    return BasicAuth(realm="r", user_file="/f")  # the Optional fields in these blocks


LOCATION = Location(path="/", modifier="", upstream="u", service_name="s")


@pytest.mark.parametrize(("model", "obj", "flag"), [
    (LOCATION, "location", "has_extra_directives"),
    (LOCATION, "location", "has_extra_proxy_directives"),
    (Server(name="h"), "server", "has_real_ip_directives"),
    (Server(name="h"), "server", "has_header_directives"),
    (Server(name="h"), "server", "has_extra_directives"),
])
def test_each_setting_of_a_grouped_template_block_opens_the_block(model: object, obj: str, flag: str) -> None:
    """The template skips blocks of rarely set directives when a property says none of their settings is
    set: each test in the block needs a setting that makes the property true, or its directive would
    vanish."""
    template = (Path(TEMPLATES_DIR) / INGRESS_TEMPLATE).read_text()
    tests = _block_tests(template, obj, flag)
    assert len(tests) >= 4, tests
    assert not getattr(model, flag)

    def opens(name: str) -> bool:
        changed = dataclasses.replace(model, **{name: _truthy(getattr(model, name))})  # type: ignore[type-var]
        return bool(getattr(changed, flag))

    for names in tests:
        assert any(opens(name) for name in names), (flag, names)
