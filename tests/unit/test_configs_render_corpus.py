"""The Ingress renderer's output over a varied corpus is byte-identical to the recorded output (see
tests/unit/render_corpus.py): optimisations of the model and templates must not change any configuration."""

from __future__ import annotations

import dataclasses
import difflib
import re
from pathlib import Path

from ingressctl.configs.config import BasicAuth, Location
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.ingress import generate_nginx_config
from ingressctl.configs.ingress_ex import IngressEx
from ingressctl.configs.templates import INGRESS_TEMPLATE, TEMPLATES_DIR
from tests.unit.render_corpus import GOLDEN, corpus, render_corpus


def test_the_corpus_renders_exactly_as_recorded() -> None:
    expected = GOLDEN.read_text(encoding="utf-8")
    actual = render_corpus()
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), "recorded",
                                            "rendered", n=2))
        raise AssertionError(f"the rendered corpus differs from {GOLDEN.name}:\n{diff[:20000]}")


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


def _block_fields(template: str, flag: str) -> set[str]:
    """The `location.<field>` names tested (`if`, `elif`, `for`) inside `{% if location.<flag> %}` ... its
    `{% endif %}`."""
    start = template.index("{% if location." + flag + " %}")
    depth, pos = 0, start
    for m in re.finditer(r"{%-?\s*(if|endif)\b", template[start:]):
        depth += 1 if m.group(1) == "if" else -1
        if depth == 0:
            pos = start + m.end()
            break
    tags = re.findall(r"{%-?\s*(?:if|elif|for [a-z_]+ in)\s+([^%]*)%}", template[start:pos])
    return {name for tag in tags for name in re.findall(r"location\.([a-z_]+)", tag)} - {flag}


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


def test_each_setting_of_a_grouped_template_block_opens_the_block() -> None:
    """The template skips two blocks of location directives when a property says none of their settings is
    set: every setting the block uses must make the property true, or its directive would vanish."""
    template = (Path(TEMPLATES_DIR) / INGRESS_TEMPLATE).read_text()
    plain = Location(path="/", modifier="", upstream="u", service_name="s")
    for flag in ("has_extra_directives", "has_extra_proxy_directives"):
        fields = _block_fields(template, flag)
        assert len(fields) >= 8, fields
        assert not getattr(plain, flag)
        for name in fields:
            value = _truthy(getattr(plain, name))
            assert getattr(dataclasses.replace(plain, **{name: value}), flag), (flag, name)
