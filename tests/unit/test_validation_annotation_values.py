"""Validation of annotation values beyond NIC's validators: what the config generator would refuse
(limit-req-*, unknown NGINX variables, zone sizes, ...) rejects the Ingress up front, naming the annotation
and the value."""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.kinds.ingress.annotations import check_annotations
from ingressctl.kinds.ingress.validation import validate_ingress
from ingressctl.validation import aggregate_message, parse_go_bool


def ingress(annotations: dict[str, str]) -> dict[str, Any]:
    backend = {"service": {"name": "svc", "port": {"number": 80}}}
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "ing", "namespace": "default", "annotations": annotations},
        "spec": {"rules": [{"host": "a.example.com",
                            "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}]},
    }


def messages(annotations: dict[str, str], **kw: Any) -> list[str]:
    return [str(e) for e in validate_ingress(ingress(annotations), **kw)]


RATE = {"nginx.org/limit-req-rate": "10r/s"}
HSTS = {"nginx.org/hsts": "true"}


@pytest.mark.parametrize(("name", "value", "detail", "others"), [
    ("limit-req-rate", "ten", "must be a rate such as 10r/s or 30r/m", {}),
    ("limit-req-key", "${no_such_thing}", "unknown NGINX variable(s): $no_such_thing", RATE),
    ("limit-req-zone-size", "1k", "must be a size of at least 32k", RATE),
    ("limit-req-reject-code", "200", "must be between 400 and 599", RATE),
    ("limit-req-log-level", "debug", "must be one of info, notice, warn, error", RATE),
    ("limit-req-scale", "yes", "must be a boolean", RATE),
    ("hsts-max-age", "-1", "must be between 0 and 9223372036854775807", HSTS),
    ("upstream-zone-size", "1k", "must be a size of at least 32k (or 0 for no zone)", {}),
])
def test_values_the_generator_refuses_are_validation_errors(name: str, value: str, detail: str,
                                                            others: dict[str, str]) -> None:
    annotations = {**others, f"nginx.org/{name}": value}
    assert messages(annotations) == [f'annotations.nginx.org/{name}: Invalid value: "{value}": {detail}']
    # The same value is what the generator refuses.
    assert len(check_annotations(annotations)) == 1


def test_each_annotation_is_reported_once_by_its_nic_validator_first() -> None:
    # NIC's validator and the parser both refuse "abc": one error, NIC's message.
    assert messages({"nginx.org/proxy-read-timeout": "abc"}) == [
        'annotations.nginx.org/proxy-read-timeout: Invalid value: "abc": must be a time']
    assert messages({"nginx.org/use-cluster-ip": "yes"}) == [
        'annotations.nginx.org/use-cluster-ip: Invalid value: "yes": must be a boolean']


def test_errors_of_both_kinds_come_in_annotation_name_order_before_spec_errors() -> None:
    ing = ingress({"nginx.org/lb-method": "fastest", "nginx.org/limit-req-rate": "10r/s",
                   "nginx.org/limit-req-burst": "many", "nginx.org/keepalive": "x"})
    ing["spec"]["rules"][0]["host"] = ""
    assert [e.field for e in validate_ingress(ing)] == [
        "annotations.nginx.org/keepalive", "annotations.nginx.org/lb-method",
        "annotations.nginx.org/limit-req-burst", "spec.rules[0].host"]
    assert aggregate_message(validate_ingress(ing)).startswith("[annotations.nginx.org/keepalive: Invalid")


def test_valid_values_and_unknown_annotations_pass() -> None:
    assert messages({
        "nginx.org/limit-req-rate": "10r/s", "nginx.org/limit-req-key": "${binary_remote_addr}",
        "nginx.org/limit-req-zone-size": "10m", "nginx.org/limit-req-burst": "5",
        "nginx.org/limit-req-delay": "2", "nginx.org/limit-req-dry-run": "false",
        "nginx.org/limit-req-log-level": "warn", "nginx.org/limit-req-reject-code": "503",
        "nginx.org/limit-req-scale": "true", "nginx.org/use-cluster-ip": "T",
        "nginx.org/hsts": "true", "nginx.org/hsts-max-age": "3600",
        "example.com/anything": "${whatever}",
    }) == []


def test_snippets_stay_forbidden_without_enable_snippets_and_pass_with_it() -> None:
    anns = {"nginx.org/location-snippets": "add_header X-A 1;"}
    assert messages(anns) == [
        "annotations.nginx.org/location-snippets: Forbidden: snippet specified but snippets feature is not "
        "enabled"]
    assert messages(anns, snippets_enabled=True) == []


def test_long_values_are_named_in_full_in_the_field_error() -> None:
    value = "x" * 300
    errs = validate_ingress(ingress({"nginx.org/limit-req-rate": value}))
    assert len(errs) == 1 and errs[0].bad_value == value
    assert errs[0].detail == "must be a rate such as 10r/s or 30r/m"


@pytest.mark.parametrize(("value", "expected"), [
    *((v, True) for v in ("1", "t", "T", "TRUE", "true", "True")),
    *((v, False) for v in ("0", "f", "F", "FALSE", "false", "False")),
    *((v, None) for v in ("", "yes", "on", "tRUE", " true", "2")),
])
def test_use_cluster_ip_follows_go_parse_bool(value: str, expected: bool | None) -> None:
    assert parse_go_bool(value) is expected
    errors = messages({"nginx.org/use-cluster-ip": value})
    assert (errors == []) == (expected is not None)
