"""devcluster's CRD machinery on a store: dynamic kinds, versions, schema updates, names, deletion, load."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from ingressctl.devcluster import DEFAULT_KINDS
from ingressctl.devcluster.crd import CustomResourceDefinitions
from ingressctl.devcluster.errors import StatusError
from ingressctl.devcluster.objects import ADDED, DELETED, MODIFIED, Matcher
from ingressctl.devcluster.registry import Registry
from ingressctl.devcluster.resources import ResourceKind
from ingressctl.devcluster.selectors import SelectorError, parse_field_selector, parse_label_selector
from ingressctl.devcluster.store import Store
from tests.helpers import wait_until

GROUP = "example.com"


def widget_crd(*, versions: tuple[str, ...] = ("v1",), storage: str = "v1", scope: str = "Namespaced",
               properties: dict[str, Any] | None = None) -> dict[str, Any]:
    root = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": properties or {
            "size": {"type": "integer", "default": 1}, "colour": {"type": "string"}}},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{GROUP}"},
            "spec": {"group": GROUP, "scope": scope,
                     "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
                     "versions": [{"name": v, "served": True, "storage": v == storage,
                                   "subresources": {"status": {}}, "schema": {"openAPIV3Schema": root}}
                                  for v in versions]}}


def setup() -> tuple[Store, CustomResourceDefinitions]:
    store = Store(Registry(DEFAULT_KINDS))
    crds = CustomResourceDefinitions(store)
    crds.install()
    namespaces = store.registry.by_path("", "v1", "namespaces")
    assert namespaces is not None
    store.create(namespaces, "", {"metadata": {"name": "ns"}})
    return store, crds


def kind(store: Store, version: str = "v1") -> ResourceKind:
    found = store.registry.by_path(GROUP, version, "widgets")
    assert found is not None
    return found


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


def everything() -> Matcher:
    return Matcher(parse_label_selector(""), parse_field_selector("", {}))


def test_an_established_crd_adds_its_kind_and_defaults_its_names() -> None:
    store, crds = setup()
    stored = store.create(crds.kind, "", widget_crd()).stored.parse()
    names = stored["spec"]["names"]
    assert names["singular"] == "widget" and names["listKind"] == "WidgetList"
    assert stored["spec"]["conversion"] == {"strategy": "None"}
    assert stored["metadata"]["generation"] == 1
    k = kind(store)
    assert (k.kind, k.namespaced, k.short_names, k.has_status, k.generation) == \
        ("Widget", True, ("wd",), True, True)
    w = store.create(k, "ns", widget("a", colour="red", extra=1)).stored.parse()
    assert w["spec"] == {"colour": "red", "size": 1}          # pruned and defaulted
    with pytest.raises(StatusError) as exc:
        store.create(k, "ns", widget("b", size="big"))
    assert exc.value.code == 422 and exc.value.message == (
        'Widget.example.com "b" is invalid: spec.size: Invalid value: "string": spec.size in body must be of '
        'type integer: "string"')


def test_selectable_fields_are_field_selectors() -> None:
    store, crds = setup()
    crd = widget_crd()
    crd["spec"]["versions"][0]["selectableFields"] = [{"jsonPath": ".spec.colour"},
                                                      {"jsonPath": ".spec.size"}]
    store.create(crds.kind, "", crd)
    for name, colour, size in (("a", "red", 1), ("b", "blue", 2), ("c", "red", 2)):
        store.create(kind(store), "ns", widget(name, colour=colour, size=size))

    def names(selector: str) -> list[str]:
        fields = parse_field_selector(selector, kind(store).all_field_getters())
        matcher = Matcher(parse_label_selector(""), fields)
        return [s.name for s in store.list_page(kind(store), "ns", matcher=matcher).items]
    assert names("spec.colour=red") == ["a", "c"]
    assert names("spec.colour=red,spec.size=2") == ["c"]
    assert names("spec.size!=2") == ["a"]
    with pytest.raises(SelectorError, match=r"spec\.shape"):
        names("spec.shape=round")


def test_versions_share_one_storage() -> None:
    store, crds = setup()
    store.create(crds.kind, "", widget_crd(versions=("v1beta1", "v1"), storage="v1"))
    assert store.registry.stored_kind(kind(store, "v1beta1")) is kind(store, "v1")
    store.create(kind(store, "v1beta1"), "ns", {"apiVersion": f"{GROUP}/v1beta1", **widget("a")})
    assert [s.name for s in store.list_page(kind(store, "v1"), "ns", matcher=everything()).items] == ["a"]
    with pytest.raises(StatusError):
        store.create(kind(store, "v1"), "ns", {"apiVersion": f"{GROUP}/v1beta1", **widget("b")})


def test_a_schema_update_replaces_the_kind_and_keeps_the_objects() -> None:
    store, crds = setup()
    store.create(crds.kind, "", widget_crd())
    a_rv = store.create(kind(store), "ns", widget("a", colour="red")).stored.rv   # stored with size: 1
    cur = store.get(crds.kind, "", f"widgets.{GROUP}").parse()
    updated = widget_crd(properties={"colour": {"type": "string"}, "shape": {"type": "string"}})
    updated["metadata"] = cur["metadata"]
    after = store.update(crds.kind, "", f"widgets.{GROUP}", updated).stored.parse()
    assert after["metadata"]["generation"] == 2
    assert after["status"]["conditions"] == cur["status"]["conditions"]     # transition times kept
    assert store.create(kind(store), "ns", widget("b", shape="round", size=2)).stored.parse()["spec"] == \
        {"shape": "round"}
    assert [s.name for s in store.list_page(kind(store), "ns", matcher=everything()).items] == ["a", "b"]
    # The object stored under the old schema reads through the new one: its dropped field is gone, and a
    # strict patch is not refused for fields the client never sent. No event, same resourceVersion.
    a = store.get(kind(store), "ns", "a")
    assert a.parse()["spec"] == {"colour": "red"} and a.rv == a_rv
    store.patch(kind(store), "ns", "a", "merge", {"spec": {"shape": "square"}}, field_validation="Strict")
    changed_scope = copy.deepcopy(updated)
    changed_scope["spec"]["scope"] = "Cluster"
    changed_scope["metadata"] = after["metadata"]
    with pytest.raises(StatusError) as exc:
        store.update(crds.kind, "", f"widgets.{GROUP}", changed_scope)
    assert 'spec.scope: Invalid value: "Cluster": field is immutable' in exc.value.message


def test_deleting_the_crd_deletes_objects_and_ends_watches() -> None:
    store, crds = setup()
    store.create(crds.kind, "", widget_crd())
    for name in ("a", "b"):
        store.create(kind(store), "ns", widget(name))
    watcher, initial = store.watch(kind(store), "ns")
    crd_watcher, _ = store.watch(crds.kind, "", resource_version=str(store.resource_version))
    assert [e.type for e in initial] == [ADDED, ADDED]
    marked = store.delete(crds.kind, "", f"widgets.{GROUP}")
    assert not marked.deleted          # the first DELETE marks the CRD; its cleanup then removes it
    meta = marked.stored.parse()["metadata"]
    assert meta["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"] and meta["deletionTimestamp"]
    assert store.registry.by_path(GROUP, "v1", "widgets") is None
    objects = watcher.drain()
    assert [(e.type, e.stored.name) for e in objects] == [(DELETED, "a"), (DELETED, "b")]
    assert watcher.ended
    crd_events = crd_watcher.drain()
    assert [e.type for e in crd_events] == [MODIFIED, DELETED]
    # As kube-apiserver orders them: the CRD is marked, its objects go, then the CRD goes.
    assert crd_events[0].rv < objects[0].rv < objects[1].rv < crd_events[1].rv
    with pytest.raises(StatusError) as gone:
        store.get(crds.kind, "", f"widgets.{GROUP}")
    assert gone.value.code == 404
    with pytest.raises(StatusError) as exc:
        store.bucket(ResourceKind(GROUP, "v1", "widgets", "Widget"))
    assert exc.value.code == 404


def test_name_conflicts_keep_the_second_crd_unestablished() -> None:
    store, crds = setup()
    store.create(crds.kind, "", widget_crd())
    other = widget_crd()
    other["metadata"]["name"] = f"gadgets.{GROUP}"
    other["spec"]["names"] = {"kind": "Gadget", "plural": "gadgets", "shortNames": ["wd"]}
    status = store.create(crds.kind, "", other).stored.parse()["status"]
    names_accepted = next(c for c in status["conditions"] if c["type"] == "NamesAccepted")
    assert (names_accepted["status"], names_accepted["reason"], names_accepted["message"]) == \
        ("False", "ShortNamesConflict", '"wd" is already in use')
    assert store.registry.by_path(GROUP, "v1", "gadgets") is None
    builtin = widget_crd()
    builtin["metadata"]["name"] = "ingresses.networking.k8s.io"
    builtin["spec"].update(group="networking.k8s.io", names={"kind": "Ingress", "plural": "ingresses"})
    with pytest.raises(StatusError) as exc:     # a protected group needs the approval annotation
        store.create(crds.kind, "", builtin)
    assert "metadata.annotations[api-approved.kubernetes.io]: Required value" in exc.value.message
    builtin["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, testing"}
    status = store.create(crds.kind, "", builtin).stored.parse()["status"]
    assert [(c["status"], c["reason"]) for c in status["conditions"]] == [("False", "PluralConflict"),
                                                                          ("False", "NotAccepted")]
    ingresses = store.registry.by_path("networking.k8s.io", "v1", "ingresses")
    assert ingresses is not None and ingresses.validate is not None     # the built-in kind is untouched
    store.delete(crds.kind, "", "ingresses.networking.k8s.io")
    assert store.registry.by_path("networking.k8s.io", "v1", "ingresses") is ingresses


def test_bulk_load_of_a_crd_and_its_objects_together() -> None:
    store, _ = setup()
    crd = widget_crd(scope="Cluster")
    store.load([crd, {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"},
                      "spec": {"bogus": 1}}])
    [w] = store.list_page(kind(store), "", matcher=everything()).items
    assert w.parse()["spec"] == {"size": 1} and w.namespace == ""


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c["spec"].update(scope="Global"), 'spec.scope: Unsupported value: "Global"'),
    (lambda c: c["spec"].update(preserveUnknownFields=True),
     "spec.preserveUnknownFields: Invalid value: true"),
    (lambda c: c["spec"].update(group="example"), 'spec.group: Invalid value: "example": should be a domain'),
    (lambda c: c["spec"]["versions"][0].update(selectableFields=[{"jsonPath": ".spec"}]),
     'spec.versions[0].selectableFields[0].jsonPath: Invalid value: ".spec": must be a simple path'),
    (lambda c: c["spec"]["versions"][0].update(storage=False),
     "must have exactly one version marked as storage"),
    (lambda c: c["spec"]["versions"][0].update(additionalPrinterColumns=[
        {"name": "X", "type": "string", "jsonPath": "spec.x"}]),
     'additionalPrinterColumns[0].jsonPath: Invalid value: "spec.x"'),
    (lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].pop("type"),
     "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value"),
])
def test_invalid_crds_are_refused(mutate: Any, message: str) -> None:
    store, crds = setup()
    crd = widget_crd()
    mutate(crd)
    with pytest.raises(StatusError) as exc:
        store.create(crds.kind, "", crd)
    assert exc.value.code == 422 and message in exc.value.message, exc.value.message


def test_writers_racing_a_crd_deletion_get_404_never_an_internal_error() -> None:
    store, crds = setup()
    failures: list[BaseException] = []
    created: list[str] = []
    stop = threading.Event()

    def writer(prefix: str) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            try:
                k = kind(store)
                store.create(k, "ns", widget(f"{prefix}{i}"))
                created.append(f"{prefix}{i}")
                store.patch(k, "ns", f"{prefix}{i}", "merge", {"spec": {"colour": "red"}})
                store.list_page(k, "ns", matcher=everything())
                watcher, _ = store.watch(k, "ns")
                store.unregister(watcher)
            except AssertionError:
                continue        # the kind is not in the table at this moment
            except StatusError as e:
                if e.code != 404:
                    failures.append(e)
            except Exception as e:
                failures.append(e)

    threads = [threading.Thread(target=writer, args=(p,)) for p in "abc"]
    for t in threads:
        t.start()
    try:
        for _ in range(30):
            store.create(crds.kind, "", widget_crd())
            before = len(created)
            wait_until(lambda: len(created) > before, "a writer created an object")   # noqa: B023
            store.delete(crds.kind, "", f"widgets.{GROUP}")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert failures == []
    assert store.registry.by_path(GROUP, "v1", "widgets") is None
