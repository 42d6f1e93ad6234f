"""The Ingress renderer's output over a varied corpus is byte-identical to the recorded output (see
tests/unit/render_corpus.py): optimisations of the model and templates must not change any configuration."""

from __future__ import annotations

import difflib

from tests.unit.render_corpus import GOLDEN, render_corpus


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
