"""Patch formats (RFC 7386, RFC 6902, strategic merge), selectors and protobuf decoding of the devcluster."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingressctl.devcluster import protobuf
from ingressctl.devcluster.patch import (
    FieldMeta,
    PatchError,
    PatchFormatError,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from ingressctl.devcluster.resources import PODS, SERVICES
from ingressctl.devcluster.selectors import SelectorError, parse_field_selector, parse_label_selector


# ----------------------------------------------------------------------------------------------- RFC 7386
@pytest.mark.parametrize(("target", "patch", "result"), [   # the examples of RFC 7386 appendix A
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
])
def test_merge_patch_rfc7386_examples(target: Any, patch: Any, result: Any) -> None:
    assert merge_patch(copy.deepcopy(target), patch) == result


# ----------------------------------------------------------------------------------------------- RFC 6902
def test_json_patch_operations() -> None:
    doc = {"a": {"b": [1, 2, 3]}, "c/d": 1, "e~f": 2}
    out = json_patch(doc, [
        {"op": "add", "path": "/a/b/1", "value": 9},
        {"op": "add", "path": "/a/b/-", "value": 4},
        {"op": "remove", "path": "/a/b/0"},
        {"op": "replace", "path": "/c~1d", "value": "x"},
        {"op": "test", "path": "/e~0f", "value": 2},
        {"op": "copy", "from": "/a/b", "path": "/copy"},
        {"op": "move", "from": "/e~0f", "path": "/moved"},
    ])
    assert out == {"a": {"b": [9, 2, 3, 4]}, "c/d": "x", "copy": [9, 2, 3, 4], "moved": 2}
    out["copy"].append(5)
    assert out["a"]["b"] == [9, 2, 3, 4], "copy must not alias"


@pytest.mark.parametrize("ops", [
    [{"op": "test", "path": "/a", "value": 2}],
    [{"op": "remove", "path": "/missing"}],
    [{"op": "replace", "path": "/missing", "value": 1}],
    [{"op": "add", "path": "/list/5", "value": 1}],
    [{"op": "add", "path": "/nope/deeper", "value": 1}],
    [{"op": "move", "from": "/list", "path": "/list/0"}],
    [{"op": "add", "path": "/list/01", "value": 1}],
])
def test_json_patch_failures(ops: list[dict[str, Any]]) -> None:
    with pytest.raises(PatchError):
        json_patch({"a": 1, "list": [0]}, ops)


@pytest.mark.parametrize("ops", [{"op": "add"}, [{"op": "nope", "path": "/a"}], [{"path": "/a"}],
                                 [{"op": "add", "path": "a", "value": 1}], [{"op": "add", "path": "/a"}]])
def test_json_patch_malformed(ops: Any) -> None:
    with pytest.raises(PatchFormatError):
        json_patch({"a": 1}, ops)


# ----------------------------------------------------------------------------------------------- strategic
def svc(*ports: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "s", "finalizers": ["a"]}, "spec": {"ports": list(ports), **spec}}


def test_strategic_merge_by_key_and_atomic_lists() -> None:
    out = strategic_merge_patch(svc({"port": 80, "name": "http"}, {"port": 443}, externalIPs=["1.1.1.1"]),
                                {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 9000}],
                                          "externalIPs": ["2.2.2.2"]}}, SERVICES.patch_meta)
    assert out["spec"]["ports"] == [{"port": 80, "name": "http", "targetPort": 8080}, {"port": 443},
                                    {"port": 9000}]
    assert out["spec"]["externalIPs"] == ["2.2.2.2"]


def test_strategic_directives() -> None:
    base = svc({"port": 80}, {"port": 443}, {"port": 8080}, selector={"app": "a", "tier": "t"})
    out = strategic_merge_patch(copy.deepcopy(base), {"spec": {
        "ports": [{"port": 443, "$patch": "delete"}],
        "selector": {"$patch": "replace", "app": "b"},
        "$setElementOrder/ports": [{"port": 8080}, {"port": 80}],
    }, "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["b"]}}, SERVICES.patch_meta)
    assert [p["port"] for p in out["spec"]["ports"]] == [8080, 80]
    assert out["spec"]["selector"] == {"app": "b"}
    assert out["metadata"]["finalizers"] == ["b"]
    replaced = strategic_merge_patch(copy.deepcopy(base), {"spec": {"ports": [{"$patch": "replace"},
                                                                              {"port": 1}]}},
                                     SERVICES.patch_meta)
    assert replaced["spec"]["ports"] == [{"port": 1}]
    deleted = strategic_merge_patch(copy.deepcopy(base), {"spec": {"selector": {"$patch": "delete"}}},
                                    SERVICES.patch_meta)
    assert "selector" not in deleted["spec"]
    nulled = strategic_merge_patch(copy.deepcopy(base), {"spec": {"selector": {"tier": None}}},
                                   SERVICES.patch_meta)
    assert nulled["spec"]["selector"] == {"app": "a"}


def test_strategic_nested_merge_keys_and_retain_keys() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "app", "image": "a:1", "env": [{"name": "A", "value": "1"}],
                        "ports": [{"containerPort": 80}]}],
        "volumes": [{"name": "data", "emptyDir": {}}]}}
    out = strategic_merge_patch(pod, {"spec": {
        "containers": [{"name": "app", "image": "a:2", "env": [{"name": "B", "value": "2"}],
                        "$setElementOrder/env": [{"name": "B"}, {"name": "A"}]},
                       {"name": "side", "image": "s:1", "$setElementOrder/env": []}],
        "volumes": [{"name": "data", "$retainKeys": ["name", "configMap"], "configMap": {"name": "cm"}}]}},
        PODS.patch_meta)
    app, side = out["spec"]["containers"]
    assert app["image"] == "a:2" and [e["name"] for e in app["env"]] == ["B", "A"]
    assert app["ports"] == [{"containerPort": 80}]
    assert side == {"name": "side", "image": "s:1"}
    assert out["spec"]["volumes"] == [{"name": "data", "configMap": {"name": "cm"}}]


def test_strategic_errors() -> None:
    with pytest.raises(PatchError):
        strategic_merge_patch(svc({"port": 80}), {"spec": {"ports": [{"name": "no-key"}]}},
                              SERVICES.patch_meta)
    with pytest.raises(PatchError):
        strategic_merge_patch(svc(), {"spec": {"$patch": "explode"}}, SERVICES.patch_meta)
    with pytest.raises(PatchFormatError):
        strategic_merge_patch(svc(), ["not", "a", "map"], SERVICES.patch_meta)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                               st.sampled_from("abc"), inner, max_size=3), max_leaves=10)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from("abcd"), json_values, max_size=4),
       st.dictionaries(st.sampled_from("abcd"), json_values, max_size=4))
def test_strategic_without_metadata_equals_merge_patch_on_plain_maps(target: dict[str, Any],
                                                                      patch: dict[str, Any]) -> None:
    """With no merge keys, strategic merge of plain data behaves like JSON merge patch (nulls delete)."""
    def plain(v: Any) -> bool:
        if isinstance(v, dict):
            return all(not k.startswith("$") and plain(x) for k, x in v.items())
        if isinstance(v, list):
            return all(plain(x) and not isinstance(x, (dict, list)) for x in v)
        return True
    if not plain(patch):
        return
    expected = merge_patch(json.loads(json.dumps(target)), json.loads(json.dumps(patch)))
    assert strategic_merge_patch(json.loads(json.dumps(target)), patch, FieldMeta()) == expected


# ----------------------------------------------------------------------------------------------- selectors
@pytest.mark.parametrize(("selector", "labels", "match"), [
    ("", {}, True),
    ("a=b", {"a": "b"}, True), ("a==b", {"a": "c"}, False), ("a!=b", {}, True), ("a!=b", {"a": "b"}, False),
    ("a in (x, y)", {"a": "y"}, True), ("a in (x,y)", {}, False), ("a notin (x)", {}, True),
    ("a notin (x)", {"a": "x"}, False), ("a", {"a": ""}, True), ("!a", {"a": ""}, False), ("!a", {}, True),
    ("a=b,c", {"a": "b"}, False), ("a=b, c", {"a": "b", "c": "1"}, True), ("a=", {"a": ""}, True),
    ("n>5", {"n": "7"}, True), ("n<5", {"n": "7"}, False), ("n>5", {"n": "x"}, False),
    ("kubernetes.io/service-name=web", {"kubernetes.io/service-name": "web"}, True),
    ("a in (b,),c=d", {"a": "", "c": "d"}, True),
])
def test_label_selectors(selector: str, labels: dict[str, str], match: bool) -> None:
    assert parse_label_selector(selector).matches(labels) is match


@pytest.mark.parametrize("selector", ["a in (b", "a=b,", "=b", "a b", "a in b", "a>b", "-a=b", "a=b c",
                                      "a==(b)", "a=" + "x" * 64])
def test_bad_label_selectors(selector: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector(selector)


def test_field_selectors() -> None:
    getters = {"metadata.name": lambda o: o["metadata"]["name"], "type": lambda o: o.get("type", "")}
    sel = parse_field_selector("metadata.name=a,type!=x", getters)
    assert sel.matches({"metadata": {"name": "a"}, "type": "y"})
    assert not sel.matches({"metadata": {"name": "a"}, "type": "x"})
    assert parse_field_selector(r"metadata.name==a\,b", getters).matches({"metadata": {"name": "a,b"}})
    assert sel.value_of("metadata.name") == "a" and sel.value_of("type") is None
    for bad in ("spec.x=1", "metadata.name", "nonsense"):
        with pytest.raises(SelectorError):
            parse_field_selector(bad, getters)


# ----------------------------------------------------------------------------------------------- protobuf
def _varint(n: int) -> bytes:
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _field(number: int, value: bytes | int | str) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _map_entry(number: int, key: str, value: bytes | str) -> bytes:
    return _field(number, _field(1, key) + _field(2, value))


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return protobuf.MAGIC + _field(1, _field(1, api_version) + _field(2, kind)) + _field(2, raw)


def test_protobuf_secret_and_service() -> None:
    meta = _field(1, "tls") + _field(2, "") + _field(3, "web") + _map_entry(11, "app", "x") + _field(7, 0)
    secret = _field(1, meta) + _map_entry(2, "tls.crt", b"\x00\x01") + _field(3, "kubernetes.io/tls")
    assert protobuf.decode(_envelope("v1", "Secret", secret)) == {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "data": {"tls.crt": "AAE="},
        "metadata": {"name": "tls", "namespace": "web", "labels": {"app": "x"}}}
    port = _field(1, "http") + _field(3, 80) + _field(4, _field(1, 1) + _field(3, "web"))
    port2 = _field(3, 443) + _field(4, _field(1, 0) + _field(2, 8443))
    spec = _field(1, port) + _field(1, port2) + _field(4, "ClusterIP") + _map_entry(2, "app", "x")
    svc_obj = protobuf.decode(_envelope("v1", "Service", _field(1, _field(1, "s")) + _field(2, spec)))
    assert svc_obj["spec"] == {"ports": [{"name": "http", "port": 80, "targetPort": "web"},
                                         {"port": 443, "targetPort": 8443}],
                               "type": "ClusterIP", "selector": {"app": "x"}}


def test_protobuf_ingress_inlines_the_rule_value() -> None:
    backend = _field(4, _field(1, "svc") + _field(2, _field(2, 80)))
    path = _field(1, "/") + _field(2, backend) + _field(3, "Prefix")
    rule = _field(1, "a.example.com") + _field(2, _field(1, _field(1, path)))
    spec = _field(3, rule) + _field(4, "nginx")
    raw = _field(1, _field(1, "i")) + _field(2, spec)
    obj = protobuf.decode(_envelope("networking.k8s.io/v1", "Ingress", raw))
    service = {"service": {"name": "svc", "port": {"number": 80}}}
    path_spec = {"path": "/", "pathType": "Prefix", "backend": service}
    assert obj["spec"] == {"ingressClassName": "nginx",
                           "rules": [{"host": "a.example.com", "http": {"paths": [path_spec]}}]}


TRUNCATED_SECRET = protobuf.MAGIC + _field(1, _field(1, "v1") + _field(2, "Secret")) + b"\x12\x05ab"


@pytest.mark.parametrize("body", [b"", b"{}", protobuf.MAGIC + b"\xff",
                                  _envelope("apps/v1", "Deployment", b""), TRUNCATED_SECRET])
def test_protobuf_errors(body: bytes) -> None:
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(body)
