"""devcluster's DefaultIngressClass admission on Ingress create: which Ingresses get a class, which class
(the newest default of several, then the smaller name), and that updates are never defaulted."""

from __future__ import annotations

from typing import Any

from ingressctl.devcluster.default_class import default_ingress_class
from ingressctl.devcluster.registry import Registry
from ingressctl.devcluster.resources import DEFAULT_KINDS, INGRESSCLASSES, INGRESSES, NAMESPACES
from ingressctl.devcluster.store import Store

DEFAULT = {"ingressclass.kubernetes.io/is-default-class": "true"}
BACKEND = {"service": {"name": "echo", "port": {"number": 80}}}


class Clock:
    def __init__(self) -> None:
        self.now = "2025-01-02T03:04:05Z"

    def __call__(self) -> str:
        return self.now


def make_store(clock: Clock) -> Store:
    store = Store(Registry(DEFAULT_KINDS), clock=clock)
    store.create(NAMESPACES, "", {"metadata": {"name": "ns"}})
    return store


def ingress_class(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"controller": "nginx.org/ingress-controller"}}


def create_ingress(store: Store, name: str, spec: dict[str, Any] | None = None,
                   annotations: dict[str, str] | None = None) -> dict[str, Any]:
    body = {"metadata": {"name": name, "annotations": annotations or {}},
            "spec": spec if spec is not None else {"defaultBackend": BACKEND}}
    obj: dict[str, Any] = store.create(INGRESSES, "ns", body).stored.parse()
    return obj


def test_no_default_class_leaves_the_ingress_alone() -> None:
    store = make_store(Clock())
    store.create(INGRESSCLASSES, "", ingress_class("nginx"))
    store.create(INGRESSCLASSES, "", ingress_class("other", {"ingressclass.kubernetes.io/is-default-class":
                                                             "True"}))  # only the exact string "true" counts
    assert "ingressClassName" not in create_ingress(store, "a")["spec"]


def test_the_default_class_is_filled_in_on_create_only() -> None:
    store = make_store(Clock())
    store.create(INGRESSCLASSES, "", ingress_class("nginx", DEFAULT))
    ing = create_ingress(store, "a")
    assert ing["spec"]["ingressClassName"] == "nginx"
    # An update that removes the class keeps it removed: the plugin admits creates only.
    del ing["spec"]["ingressClassName"]
    updated = store.update(INGRESSES, "ns", "a", ing).stored.parse()
    assert "ingressClassName" not in updated["spec"]
    # A spec holding rules only gets the field as well.
    rules = [{"host": "a.example.com"}]
    assert create_ingress(store, "b", spec={"rules": rules})["spec"] == {"rules": rules,
                                                                        "ingressClassName": "nginx"}


def test_an_explicit_class_or_the_class_annotation_wins() -> None:
    store = make_store(Clock())
    store.create(INGRESSCLASSES, "", ingress_class("nginx", DEFAULT))
    explicit = create_ingress(store, "a", spec={"ingressClassName": "other", "defaultBackend": BACKEND})
    assert explicit["spec"]["ingressClassName"] == "other"
    # An empty string is a value that was set: not defaulted (kube-apiserver checks for nil).
    empty = create_ingress(store, "b", spec={"ingressClassName": "", "defaultBackend": BACKEND})
    assert empty["spec"]["ingressClassName"] == ""
    annotated = create_ingress(store, "c", annotations={"kubernetes.io/ingress.class": "other"})
    assert "ingressClassName" not in annotated["spec"]


def test_with_several_default_classes_the_newest_wins_then_the_smaller_name() -> None:
    clock = Clock()
    store = make_store(clock)
    store.create(INGRESSCLASSES, "", ingress_class("old", DEFAULT))
    clock.now = "2025-01-02T03:05:00Z"
    store.create(INGRESSCLASSES, "", ingress_class("zeta", DEFAULT))
    store.create(INGRESSCLASSES, "", ingress_class("beta", DEFAULT))
    store.create(INGRESSCLASSES, "", ingress_class("newest-not-default"))
    assert create_ingress(store, "a")["spec"]["ingressClassName"] == "beta"
    store.delete(INGRESSCLASSES, "", "beta")
    assert create_ingress(store, "b")["spec"]["ingressClassName"] == "zeta"


def test_default_ingress_class_tolerates_malformed_classes() -> None:
    classes: list[dict[str, Any]] = [{"metadata": {"name": "x", "annotations": DEFAULT}},
                                     {"metadata": {"name": "y", "annotations": DEFAULT,
                                                   "creationTimestamp": "garbage"}},
                                     {"metadata": {"name": "z", "annotations": None}}]
    assert default_ingress_class(classes) == "x"
    assert default_ingress_class([]) is None
