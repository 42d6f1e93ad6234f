"""The Ingress renderer's output over a varied corpus is byte-identical to the recorded output (see
tests/unit/render_corpus.py): optimisations of the model and templates must not change any configuration."""

from __future__ import annotations

import dataclasses
import difflib

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.ingress import generate_nginx_config
from ingressctl.configs.ingress_ex import IngressEx
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
