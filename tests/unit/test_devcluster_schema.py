"""devcluster's structural-schema engine: pruning, defaulting and validation with kube-apiserver's wording."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingressctl.devcluster import jsonpath, schema
from tests.helpers import contained

SPEC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["host"],
            "properties": {
                "host": {"type": "string", "minLength": 1, "maxLength": 20, "pattern": "^[a-z.]+$"},
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "ratio": {"type": "number", "exclusiveMaximum": True, "maximum": 1},
                "target": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "tags": {"type": "array", "minItems": 1, "maxItems": 2, "x-kubernetes-list-type": "set",
                         "items": {"type": "string"}},
                "upstreams": {"type": "array", "items": {
                    "type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"},
                                   "tls": {"type": "object", "properties": {
                                       "enable": {"type": "boolean", "default": False}}}}}},
            },
        },
        "status": {"type": "object", "properties": {"state": {"type": "string"}}},
    },
}


def errors_of(spec: dict[str, Any]) -> list[str]:
    return [f"{field}: {msg}" for field, _, msg in schema.validate({"spec": spec}, SPEC)]


def test_type_errors_name_the_field_path_as_the_api_server_does() -> None:
    assert errors_of({"host": "a", "upstreams": [{"name": "x", "port": "string"}]}) == [
        'spec.upstreams[0].port: Invalid value: "string": spec.upstreams[0].port in body must be of type '
        'integer: "string"']
    assert errors_of({"host": "a", "port": 1.5}) == [
        'spec.port: Invalid value: "number": spec.port in body must be of type integer: "number"']
    assert errors_of({"host": True}) == [
        'spec.host: Invalid value: "boolean": spec.host in body must be of type string: "boolean"']


def test_required_enum_pattern_and_bounds() -> None:
    assert errors_of({}) == ["spec.host: Required value"]
    assert errors_of({"host": "a", "mode": "c"}) == [
        'spec.mode: Unsupported value: "c": supported values: "a", "b"']
    assert errors_of({"host": "A_1"}) == [
        "spec.host: Invalid value: \"A_1\": spec.host in body should match '^[a-z.]+$'"]
    assert errors_of({"host": "a", "port": 70000}) == [
        "spec.port: Invalid value: 70000: spec.port in body should be less than or equal to 65535"]
    assert errors_of({"host": "a", "port": 0}) == [
        "spec.port: Invalid value: 0: spec.port in body should be greater than or equal to 1"]
    assert errors_of({"host": "a", "ratio": 1}) == [
        "spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1"]
    assert errors_of({"host": ""}) == [
        'spec.host: Invalid value: "": spec.host in body should be at least 1 chars long',
        "spec.host: Invalid value: \"\": spec.host in body should match '^[a-z.]+$'"]
    assert errors_of({"host": "a" * 21}) == ["spec.host: Too long: may not be more than 20 bytes"]


def test_arrays_int_or_string_nullable_and_maps() -> None:
    assert errors_of({"host": "a", "tags": []}) == [
        "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]
    assert errors_of({"host": "a", "tags": ["x", "y", "z"]}) == [
        "spec.tags: Too many: 3: must have at most 2 items"]
    assert errors_of({"host": "a", "tags": ["x", "x"]}) == ['spec.tags[1]: Duplicate value: "x"']
    assert errors_of({"host": "a", "target": 8080}) == errors_of({"host": "a", "target": "http"}) == []
    assert errors_of({"host": "a", "target": True}) == [
        'spec.target: Invalid value: "boolean": spec.target in body must be of type integer,string: '
        '"boolean"']
    assert errors_of({"host": "a", "note": None}) == []
    assert errors_of({"host": "a", "labels": {"k": 1}}) == [
        'spec.labels.k: Invalid value: "integer": spec.labels.k in body must be of type string: "integer"']
    assert errors_of({"host": "a", "upstreams": [{"port": 1}]}) == ["spec.upstreams[0].name: Required value"]


def test_value_validation_combinators() -> None:
    one = {"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}], "not": {"required": ["c"]},
        "anyOf": [{"properties": {"a": {"maxLength": 1}}}, {"properties": {"b": {"maxLength": 1}}}],
        "allOf": [{"properties": {"a": {"pattern": "^x"}}}]}}}

    def errs(spec: dict[str, Any]) -> list[str]:
        return [msg for _, _, msg in schema.validate({"spec": spec}, one)]
    assert errs({"a": "x"}) == errs({"b": "y"}) == []
    assert errs({"a": "x", "b": "y"}) == [
        'Invalid value: {"a":"x","b":"y"}: "spec" must validate one and only one schema (oneOf)']
    assert errs({"a": "xx", "b": "yy"}) == [
        'Invalid value: {"a":"xx","b":"yy"}: "spec" must validate at least one schema (anyOf)',
        'Invalid value: {"a":"xx","b":"yy"}: "spec" must validate one and only one schema (oneOf)']
    assert errs({"a": "y", "c": "1"}) == [
        "Invalid value: \"y\": spec.a in body should match '^x'",
        'Invalid value: {"a":"y","c":"1"}: "spec" must not validate the schema (not)']


def test_every_error_is_reported() -> None:
    assert len(errors_of({"mode": "c", "port": "x", "upstreams": [{}]})) == 4


def test_prune_drops_unknown_fields_but_keeps_preserved_and_map_fields() -> None:
    obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "bogus": 1},
           "spec": {"host": "a", "extra": 1, "labels": {"any": "v"}, "free": {"any": {"deep": 1}},
                    "upstreams": [{"name": "u", "colour": "red"}]},
           "status": {"state": "Valid", "other": 1}, "top": 1}
    before = copy.deepcopy(obj)
    out = schema.prune(obj, SPEC)
    assert obj == before     # the input is never modified
    assert out == {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"},
                   "spec": {"host": "a", "labels": {"any": "v"}, "free": {"any": {"deep": 1}},
                            "upstreams": [{"name": "u"}]},
                   "status": {"state": "Valid"}}


def test_unknown_fields_name_what_pruning_drops() -> None:
    obj = {"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "bogus": 1},
           "spec": {"host": "a", "extra": {"deep": 1}, "free": {"any": 1}, "labels": {"k": "v"},
                    "upstreams": [{"name": "u"}, {"name": "v", "colour": "red"}]}, "top": 1}
    assert schema.unknown_fields(obj, SPEC) == ["metadata.bogus", "spec.extra", "spec.upstreams[1].colour",
                                                "top"]
    assert schema.unknown_fields(schema.prune(obj, SPEC), SPEC) == []


def test_defaults_fill_missing_fields_at_every_depth_and_replace_nulls() -> None:
    obj = {"spec": {"host": "a", "upstreams": [{"name": "u", "tls": {}}, {"name": "v"}], "mode": None,
                    "port": None, "note": None}}
    before = copy.deepcopy(obj)
    out = schema.apply_defaults(obj, SPEC)
    assert obj == before
    assert out["spec"] == {"host": "a", "mode": "a", "note": None,
                           "upstreams": [{"name": "u", "tls": {"enable": False}}, {"name": "v"}]}
    explicit = schema.apply_defaults({"spec": {"host": "a", "mode": "b"}}, SPEC)
    assert explicit["spec"]["mode"] == "b"


@pytest.mark.parametrize("bad, message", [
    ({"properties": {"spec": {"type": "object"}}}, "Required value: must not be empty at the root"),
    ({"type": "string"}, 'Invalid value: "string": must be object at the root'),
    ({"type": "object", "properties": {"spec": {"properties": {}}}},
     "Required value: must not be empty for specified object fields"),
    ({"type": "object", "properties": {"spec": {"type": "map"}}}, 'Unsupported value: "map"'),
    ({"type": "object", "properties": {"s": {"type": "string", "pattern": "("}}},
     "must be a valid regular expression"),
    ({"type": "object", "properties": {"n": {"type": "integer", "default": "one"}}},
     'Invalid value: "string": default in body must be of type integer: "string"'),
    ({"type": "object", "properties": {"n": {"type": "integer", "maximum": 3, "default": 5}}},
     "Invalid value: 5: default in body should be less than or equal to 3"),
])
def test_structural_schema_errors(bad: dict[str, Any], message: str) -> None:
    errs = schema.structural_errors(bad, "spec.versions[0].schema.openAPIV3Schema")
    assert any(message in msg for _, _, msg in errs), errs
    assert schema.structural_errors(SPEC, "x") == []


def test_printer_column_json_paths() -> None:
    obj = {"status": {"externalEndpoints": [{"ip": "10.0.0.1", "ports": "[80,443]"}, {"ip": "10.0.0.2"}]},
           "metadata": {"labels": {"a.b/c": "x"}}}
    assert jsonpath.find(jsonpath.compile_path(".status.externalEndpoints[*].ip"), obj) == ["10.0.0.1",
                                                                                             "10.0.0.2"]
    assert jsonpath.find(jsonpath.compile_path("{.status.externalEndpoints[-1].ip}"), obj) == ["10.0.0.2"]
    assert jsonpath.find(jsonpath.compile_path(".metadata.labels['a.b/c']"), obj) == ["x"]
    assert jsonpath.find(jsonpath.compile_path("..ports"), obj) == ["[80,443]"]
    assert jsonpath.find(jsonpath.compile_path(".spec.host"), obj) == []
    with pytest.raises(ValueError):
        jsonpath.compile_path("status.state")
    with pytest.raises(ValueError):
        jsonpath.compile_path(".status[?(@.x)]")


# ------------------------------------------------------------------------------------------ properties
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 70000), st.floats(allow_nan=False,
                                                                                allow_infinity=False),
                     st.text(max_size=5))
_json = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["host", "mode", "port", "tags", "upstreams", "name", "tls", "enable",
                                     "labels", "free", "x", "note"]), inner, max_size=4)), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(spec=_json)
def test_prune_and_defaults_are_idempotent_and_never_invent_unknown_fields(spec: Any) -> None:
    obj = {"metadata": {"name": "n"}, "spec": spec, "extra": spec}
    pruned = schema.prune(obj, SPEC)
    assert contained(pruned, obj)                          # pruning only removes
    assert schema.prune(pruned, SPEC) == pruned
    defaulted = schema.apply_defaults(pruned, SPEC)
    assert schema.apply_defaults(defaulted, SPEC) == defaulted
    assert schema.prune(defaulted, SPEC) == defaulted       # defaults are known fields
    schema.validate(defaulted, SPEC)                        # never raises, whatever the input
