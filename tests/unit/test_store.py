"""ThreadSafeStore: keys, indices, replace() with tombstones; a hypothesis model check with relists."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingressctl.k8s.store import (
    BY_SERVICE_INDEX,
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    ThreadSafeStore,
    endpoint_slices_by_service,
    meta_namespace_key,
    split_meta_namespace_key,
)


def obj(name: str, ns: str | None = "default", rv: str = "1", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": rv}
    if ns:
        meta["namespace"] = ns
    if labels:
        meta["labels"] = dict(labels)
    return {"metadata": meta}


def slice_(name: str, svc: str, ns: str = "default", rv: str = "1") -> dict[str, Any]:
    return obj(name, ns, rv, **{"kubernetes.io/service-name": svc})


def test_keys() -> None:
    assert meta_namespace_key(obj("a", "ns")) == "ns/a"
    assert meta_namespace_key(obj("node1", None)) == "node1"
    assert meta_namespace_key(DeletedFinalStateUnknown("x/y", None)) == "x/y"
    with pytest.raises(ValueError):
        meta_namespace_key({"metadata": {}})
    assert split_meta_namespace_key("ns/a") == ("ns", "a")
    assert split_meta_namespace_key("a") == ("", "a")
    for bad in ("a/b/c", "", "ns/"):
        with pytest.raises(ValueError):
            split_meta_namespace_key(bad)


def test_add_update_delete_and_namespace_index() -> None:
    s = ThreadSafeStore()
    assert s.add(obj("a", "ns1")) is None
    s.add(obj("b", "ns1"))
    s.add(obj("c", "ns2"))
    assert sorted(s.list_keys()) == ["ns1/a", "ns1/b", "ns2/c"]
    assert sorted(meta_namespace_key(o) for o in s.by_index(NAMESPACE_INDEX, "ns1")) == ["ns1/a", "ns1/b"]
    old = s.update(obj("a", "ns1", rv="2"))
    assert old is not None and old["metadata"]["resourceVersion"] == "1"
    assert s.get(obj("a", "ns1"))["metadata"]["resourceVersion"] == "2"  # type: ignore[index]
    assert s.delete(obj("b", "ns1")) is not None
    assert s.delete(obj("b", "ns1")) is None  # missing: no-op
    assert s.delete(DeletedFinalStateUnknown("ns2/c", None)) is not None
    assert s.list_index_func_values(NAMESPACE_INDEX) == ["ns1"]
    assert len(s) == 1 and "ns1/a" in s


def test_custom_index_follows_label_changes() -> None:
    s = ThreadSafeStore({BY_SERVICE_INDEX: endpoint_slices_by_service})
    s.add(slice_("web-abc", "web"))
    s.add(slice_("web-def", "web"))
    s.add(slice_("api-1", "api"))
    s.add(slice_("web-xyz", "web", ns="other"))
    assert sorted(o["metadata"]["name"] for o in s.by_index(BY_SERVICE_INDEX, "default/web")) == [
        "web-abc", "web-def"]
    s.update(slice_("web-def", "api", rv="2"))  # relabelled: leaves the old index value
    assert [o["metadata"]["name"] for o in s.by_index(BY_SERVICE_INDEX, "default/web")] == ["web-abc"]
    assert len(s.by_index(BY_SERVICE_INDEX, "default/api")) == 2
    s.delete(slice_("web-abc", "web"))
    assert s.by_index(BY_SERVICE_INDEX, "default/web") == []
    assert "default/web" not in s.list_index_func_values(BY_SERVICE_INDEX)  # empty sets are removed
    assert sorted(s.index_keys(BY_SERVICE_INDEX, "default/api")) == ["default/api-1", "default/web-def"]
    with pytest.raises(KeyError):
        s.by_index("nope", "x")


def test_add_indexers_indexes_existing_items_and_rejects_duplicates() -> None:
    s = ThreadSafeStore()
    s.add(slice_("web-1", "web"))
    s.add_indexers({BY_SERVICE_INDEX: endpoint_slices_by_service})
    assert len(s.by_index(BY_SERVICE_INDEX, "default/web")) == 1
    with pytest.raises(ValueError):
        s.add_indexers({NAMESPACE_INDEX: endpoint_slices_by_service})


def test_failing_index_function_leaves_the_store_unchanged() -> None:
    def bad(o: dict[str, Any]) -> list[str]:
        if o["metadata"]["name"] == "boom":
            raise RuntimeError("bad index")
        return []

    s = ThreadSafeStore({"bad": bad})
    s.add(obj("ok"))
    with pytest.raises(RuntimeError):
        s.add(obj("boom"))
    assert s.list_keys() == ["default/ok"]


def test_replace_reports_tombstones_adds_and_changed_updates() -> None:
    s = ThreadSafeStore({BY_SERVICE_INDEX: endpoint_slices_by_service})
    a1, b1, c1 = slice_("a", "web", rv="1"), slice_("b", "web", rv="1"), slice_("c", "web", rv="1")
    for o in (a1, b1, c1):
        s.add(o)
    a2, c1_again, d1 = slice_("a", "api", rv="5"), slice_("c", "web", rv="1"), slice_("d", "web", rv="6")
    result = s.replace([a2, c1_again, d1], "10")
    assert result.deleted == [DeletedFinalStateUnknown("default/b", b1)]
    assert result.changes == [(a1, a2), (None, d1)]  # c unchanged (same RV): not reported
    assert result.added == [d1] and result.updated == [(a1, a2)]
    assert sorted(s.list_keys()) == ["default/a", "default/c", "default/d"]
    assert sorted(s.index_keys(BY_SERVICE_INDEX, "default/web")) == ["default/c", "default/d"]
    assert s.index_keys(BY_SERVICE_INDEX, "default/api") == ["default/a"]
    assert s.resource_version == "10"


def test_replace_with_duplicates_cluster_scoped_objects_and_bad_objects() -> None:
    s = ThreadSafeStore()
    first, again = obj("a", "ns1", rv="1"), obj("a", "ns1", rv="2")
    result = s.replace([first, obj("node1", None), again, obj("b", "ns1")], "5")
    assert sorted(s.list_keys()) == ["node1", "ns1/a", "ns1/b"]
    assert s.get_by_key("ns1/a") is again  # the last of duplicates wins
    assert sorted(new["metadata"]["name"] for _, new in result.changes) == ["a", "b", "node1"]
    assert sorted(s.index_keys(NAMESPACE_INDEX, "ns1")) == ["ns1/a", "ns1/b"]
    assert s.list_index_func_values(NAMESPACE_INDEX) == ["ns1"]
    s.replace([obj("a", "ns1", rv="2"), obj("a", "ns1", rv="2")], "6")  # one key listed twice
    assert s.index_keys(NAMESPACE_INDEX, "ns1") == ["ns1/a"]
    check_indices(s)
    for bad in ({"metadata": {"namespace": "x"}}, {"metadata": {"name": ""}}, {"nometa": 1},
                {"metadata": {"name": 7}}):
        with pytest.raises(ValueError):
            s.replace([obj("z"), bad], "7")
        assert s.list_keys() == ["ns1/a"] and s.resource_version == "6"  # unchanged


def test_replace_with_a_custom_key_function() -> None:
    s = ThreadSafeStore(key_func=lambda o: o["metadata"]["uid"])
    a, b = obj("a", "ns1"), obj("b", "ns2")
    a["metadata"]["uid"], b["metadata"]["uid"] = "u1", "u2"
    s.replace([a, b], "1")
    assert sorted(s.list_keys()) == ["u1", "u2"]
    assert s.index_keys(NAMESPACE_INDEX, "ns2") == ["u2"]
    check_indices(s)


def test_concurrent_writers_keep_indices_consistent() -> None:
    s = ThreadSafeStore({BY_SERVICE_INDEX: endpoint_slices_by_service})

    def writer(t: int) -> None:
        for i in range(300):
            s.add(slice_(f"s{t}-{i % 20}", f"svc{i % 3}", rv=str(i)))
            if i % 7 == 0:
                s.delete(slice_(f"s{t}-{(i + 3) % 20}", "x"))

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check_indices(s)


def check_indices(s: ThreadSafeStore) -> None:
    for name, fn in s.get_indexers().items():
        expected: dict[str, set[str]] = {}
        for key, o in s.items():
            for v in fn(o):
                expected.setdefault(v, set()).add(key)
        got = {v: set(s.index_keys(name, v)) for v in s.list_index_func_values(name)}
        assert got == expected, name


# -- model check --------------------------------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c", "d", "e"])
NAMESPACES = st.sampled_from(["ns1", "ns2"])
SERVICES = st.sampled_from(["web", "api"])
ops = st.one_of(
    st.tuples(st.just("upsert"), NAMES, NAMESPACES, SERVICES),
    st.tuples(st.just("delete"), NAMES, NAMESPACES, SERVICES),
    st.tuples(st.just("replace"), st.lists(st.tuples(NAMES, NAMESPACES, SERVICES), max_size=8),
              st.booleans(), st.just("")),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ops, max_size=40))
def test_store_matches_model_and_tombstones_cover_vanished_keys(seq: list[tuple[Any, ...]]) -> None:
    s = ThreadSafeStore({BY_SERVICE_INDEX: endpoint_slices_by_service})
    model: dict[str, dict[str, Any]] = {}
    for rv, op in enumerate(seq, start=1):
        if op[0] == "upsert":
            _, name, ns, svc = op
            o = slice_(name, svc, ns=ns, rv=str(rv))
            s.add(o)
            model[f"{ns}/{name}"] = o
        elif op[0] == "delete":
            _, name, ns, _svc = op
            s.delete_by_key(f"{ns}/{name}")
            model.pop(f"{ns}/{name}", None)
        else:
            _, entries, keep_rvs, _ = op
            listed: dict[str, dict[str, Any]] = {}
            for name, ns, svc in entries:
                key = f"{ns}/{name}"
                # keep_rvs: unchanged objects come back with the same RV (and must not be reported)
                same = keep_rvs and key in model
                listed[key] = dict(model[key]) if same else slice_(name, svc, ns=ns, rv=str(rv))
            before = dict(model)
            result = s.replace(list(listed.values()), str(rv))
            assert {t.key for t in result.deleted} == set(before) - set(listed)
            for t in result.deleted:
                assert t.obj is before[t.key]  # the last known object
            reported = {meta_namespace_key(new): old for old, new in result.changes}
            def rv_of(o: dict[str, Any]) -> str:
                return str(o["metadata"]["resourceVersion"])

            expected = {k: before.get(k) for k, o in listed.items()
                        if k not in before or rv_of(before[k]) != rv_of(o)}
            assert reported == expected
            model = listed
        assert {k: v["metadata"]["resourceVersion"] for k, v in s.items()} == \
               {k: v["metadata"]["resourceVersion"] for k, v in model.items()}
        for ns in ("ns1", "ns2"):
            assert {meta_namespace_key(o) for o in s.by_index(NAMESPACE_INDEX, ns)} == \
                   {k for k in model if k.startswith(ns + "/")}
        check_indices(s)
