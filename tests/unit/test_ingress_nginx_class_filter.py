"""Which Ingresses are ours with and without `--ingress-nginx-compat` (controller/ingress_class.py), the
IngressClass handler that follows ingress-nginx's classes, the metric of the ingress-nginx annotations, and
that the render corpora are byte-identical with the flag on."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ingressctl.cli import parse_args
from ingressctl.controller.handlers import IngressClassHandler, IngressHandler
from ingressctl.controller.ingress_class import IngressClasses
from ingressctl.controller.task import Task
from ingressctl.kinds.ingress.model import IngressModel
from ingressctl.metrics.ingress_nginx import IngressNginxAnnotationsCollector
from tests.unit import render_corpus, render_corpus_extra

N = "nginx.ingress.kubernetes.io/"


def ing(cls: str | None = None, annotation: str | None = None, annotations: dict[str, str] | None = None,
        name: str = "a", rv: str = "1") -> dict[str, Any]:
    anns = dict(annotations or {})
    if annotation is not None:
        anns["kubernetes.io/ingress.class"] = annotation
    spec: dict[str, Any] = {"rules": []}
    if cls is not None:
        spec["ingressClassName"] = cls
    return {"metadata": {"name": name, "namespace": "d", "resourceVersion": rv, "annotations": anns},
            "spec": spec}


def ingress_class(name: str, controller: str, rv: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv}, "spec": {"controller": controller}}


@pytest.mark.parametrize(("obj", "off", "on"), [
    (ing("ours"), True, True),
    (ing(annotation="ours"), True, True),
    (ing("legacy-ingress-nginx"), False, True),
              # an IngressClass with controller k8s.io/ingress-nginx
    (ing(annotation="legacy-ingress-nginx"), False, True),
    (ing(annotation="nginx"), False, True),               # the legacy annotation, with or without a class
    (ing("nginx"), False, False),                         # spec.ingressClassName nginx names no such class
    (ing("other"), False, False),
    (ing(annotation="other", cls="ours"), False, False),  # the annotation wins over the spec
    (ing(annotation="", cls="ours"), True, True),         # an empty annotation does not
    (ing(), False, False),                                # no class: not ours (ingress-nginx's default too)
])
def test_class_semantics(obj: dict[str, Any], off: bool, on: bool) -> None:
    compat = IngressClasses("ours", ingress_nginx_compat=True, compat_names=["legacy-ingress-nginx"])
    assert IngressClasses("ours").is_ours(obj) is off
    assert compat.is_ours(obj) is on
    assert IngressModel(compat).is_ours(obj) is on
    assert IngressModel("ours").is_ours(obj) is off


def test_a_primary_class_named_nginx_serves_the_legacy_annotation_as_before() -> None:
    assert IngressClasses("nginx").is_ours(ing(annotation="nginx"))
    assert IngressClasses("nginx").is_ours(ing("nginx"))


def test_the_class_handler_follows_ingress_nginx_classes_and_requeues_their_ingresses() -> None:
    classes = IngressClasses("ours", ingress_nginx_compat=True)
    requeued: list[str] = []
    h = IngressClassHandler(classes, requeued.append)
    tasks: list[Task] = []
    ingresses = IngressHandler(tasks.append, classes)
    ingresses.on_add(ing("legacy"))
    assert tasks == []                                    # no such class yet
    h.on_add(ingress_class("legacy", "k8s.io/ingress-nginx"))
    assert requeued == ["legacy"] and classes.compat_names == {"legacy"}
    ingresses.on_add(ing("legacy"))
    assert len(tasks) == 1
    h.on_update(ingress_class("legacy", "k8s.io/ingress-nginx"), ingress_class("legacy",
    "k8s.io/ingress-nginx",
                                                                             "2"))
    assert requeued == ["legacy"]                         # nothing changed for its Ingresses
    h.on_update(ingress_class("legacy", "k8s.io/ingress-nginx", "2"), ingress_class("legacy", "example.com/x",
                                                                                  "3"))
    assert requeued == ["legacy", "legacy"] and classes.compat_names == frozenset()
    h.on_add(ingress_class("legacy", "k8s.io/ingress-nginx", "4"))
    h.on_delete(ingress_class("legacy", "k8s.io/ingress-nginx", "4"))
    assert requeued == ["legacy"] * 4 and classes.compat_names == frozenset()
    h.on_add(ingress_class("ours", "k8s.io/ingress-nginx"))  # the primary class is never a compat name
    h.on_add(ingress_class("mine", "nginx.org/ingress-controller"))
    assert classes.compat_names == frozenset() and requeued == ["legacy"] * 4
    # Compat off: an ingress-nginx IngressClass changes nothing.
    off = IngressClasses("ours")
    IngressClassHandler(off, requeued.append).on_add(ingress_class("legacy", "k8s.io/ingress-nginx"))
    assert off.compat_names == frozenset() and requeued == ["legacy"] * 4


def test_the_flag() -> None:
    assert parse_args([]).controller.ingress_nginx_compat is False
    assert parse_args(["-ingress-nginx-compat"]).controller.ingress_nginx_compat is True
    assert parse_args(["--ingress-nginx-compat=false"]).controller.ingress_nginx_compat is False


def test_the_metric_counts_ingresses_per_annotation_and_status() -> None:
    served = [ing("x", annotations={N + "proxy-body-size": "1m", N + "enable-opentelemetry": "true"},
                  name="a"),
              ing("x", annotations={N + "proxy-body-size": "2m", N + "server-alias": "a.example.com",
                                    N + "made-up": "1", N + "made-up-2": "2"}, name="b"),
              ing("x", annotations={"nginx.org/proxy-read-timeout": "5s"}, name="c"), ing("x", name="d")]
    c = IngressNginxAnnotationsCollector("nginx", lambda: served)
    assert dict(c.counts()) == {("translated", N + "proxy-body-size"): 2, ("ignored",
    N + "enable-opentelemetry"): 1,
                                ("refused", N + "server-alias"): 1, ("ignored", "other"): 2}
    (family,) = c.collect()
    assert family.name == "nginx_ingress_controller_ingress_nginx_annotations" and family.type == "gauge"
    assert {tuple(s.labels.values()): s.value for s in family.samples}[
        ("nginx", "translated", N + "proxy-body-size")] == 2
    served.clear()
    assert list(next(iter(c.collect())).samples) == []


def _compat(contexts: Any) -> Any:
    def with_compat() -> list[tuple[str, Any]]:
        return [(name, dataclasses.replace(ctx, static=dataclasses.replace(ctx.static,
        ingress_nginx_compat=True)))
                for name, ctx in contexts()]
    return with_compat


def test_the_render_corpora_are_byte_identical_with_the_flag_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The corpora have no ingress-nginx annotations: with the flag on, not one byte changes."""
    from tests.unit.test_configs_render_corpus import _same_as_recorded

    monkeypatch.setattr(render_corpus, "contexts", _compat(render_corpus.contexts))
    monkeypatch.setattr(render_corpus_extra, "contexts", _compat(render_corpus_extra.contexts))
    assert all(ctx.static.ingress_nginx_compat for _, ctx in render_corpus.contexts())
    _same_as_recorded(render_corpus.GOLDEN, render_corpus.render_corpus())
    _same_as_recorded(render_corpus_extra.GOLDEN_EXTRA, render_corpus_extra.render_corpus_extra())
