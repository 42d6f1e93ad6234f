"""The shortcuts of Ingress validation (plain paths and backends, one read of the annotations) decide
exactly as the full checks: the same errors, in the same order, for valid and invalid Ingresses alike."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from ingressctl import validation
from ingressctl.kinds.ingress import annotation_validation
from ingressctl.kinds.ingress import validation as ingress_validation
from ingressctl.kinds.ingress.validation import (
    PATH_TYPES,
    _is_plain_backend,
    _is_plain_path,
    _path_errors,
    validate_backend,
    validate_ingress,
    validate_path,
)

PATHS = [
    "/", "/api", "/a/b/c", "/a_b-c/D9", "/api/", "//", "//api", "/a//b", "/api/.", "/api/..", "/./x", "/../x",
    "/a%2fb", "/a%2Fb", "/etc/passwd", "/etcetera", "/root", "/rootless", "/var", "/variable", "/a/var/b",
    "/a\\nb", "/a b", "/a;b", "/a{b}", "/a{1}", "/a(b", "/a[b", "/a*", "/a+b", "/a.b", "/a?b", '/a"b', "/a\\",
    "/caf\u00e9", "/\u0661", "api", "", "/a|b", "/a$", "/^a", "/a\tb", "/" + "x" * 300,
]

BACKENDS: list[Any] = [
    None, "svc", {}, {"resource": {"kind": "Bucket"}},
    {"resource": {"kind": "Bucket"}, "service": {"name": "web", "port": {"number": 80}}},
    {"service": None}, {"service": "web"}, {"service": {}},
    {"service": {"name": "web", "port": {"number": 80}}},
    {"service": {"name": "web", "port": {"number": 65535}}},
    {"service": {"name": "web", "port": {"number": 65536}}},
    {"service": {"name": "web", "port": {"number": 0}}},
    {"service": {"name": "web", "port": {"number": -1}}},
    {"service": {"name": "web", "port": {"number": True}}},
    {"service": {"name": "web", "port": {"number": "80"}}},
    {"service": {"name": "web", "port": {"number": 80.0}}},
    {"service": {"name": "web", "port": {"name": "http"}}},
    {"service": {"name": "web", "port": {"name": "http", "number": 80}}},
    {"service": {"name": "web", "port": {"name": "", "number": 80}}},
    {"service": {"name": "web", "port": {"name": None, "number": 80}}},
    {"service": {"name": "web", "port": {"name": 7, "number": 80}}},
    {"service": {"name": "web", "port": {}}},
    {"service": {"name": "web", "port": None}},
    {"service": {"name": "web", "port": 80}},
    {"service": {"name": "web"}},
    {"service": {"name": "", "port": {"number": 80}}},
    {"service": {"name": None, "port": {"number": 80}}},
    {"service": {"name": 5, "port": {"number": 80}}},
    {"service": {"name": "Web", "port": {"number": 80}}},
    {"service": {"name": "1web", "port": {"number": 80}}},
    {"service": {"name": "web-", "port": {"number": 80}}},
    {"service": {"name": "w" * 63, "port": {"number": 80}}},
    {"service": {"name": "w" * 64, "port": {"number": 80}}},
    {"service": {"name": "web.svc", "port": {"number": 80}}},
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("path_type", PATH_TYPES)
def test_plain_path_shortcut_never_hides_an_error(path: str, path_type: str) -> None:
    if path:
        assert validate_path(path, path_type, "f") == _path_errors(path, path_type, "f")
    if _is_plain_path(path):
        assert _path_errors(path, path_type, "f") == []


@pytest.mark.parametrize("backend", BACKENDS, ids=repr)
def test_plain_backend_shortcut_never_hides_an_error(backend: Any) -> None:
    if _is_plain_backend(backend):
        assert validate_backend(backend, "f") == []


def test_the_shortcuts_take_the_common_shapes() -> None:
    """The cases the shortcuts exist for (the start-up drain validates every Ingress): taken, not skipped."""
    assert _is_plain_path("/api/v1_x-y") and _is_plain_path("/")
    assert _is_plain_backend({"service": {"name": "web", "port": {"number": 80}}})
    assert not _is_plain_backend({"service": {"name": "web", "port": {"name": "http"}}})


def _ingress(paths: list[tuple[Any, Any, Any]], *, annotations: dict[str, Any] | None = None,
             tls_hosts: list[Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "app", "namespace": "default"}
    if annotations is not None:
        meta["annotations"] = annotations
    spec: dict[str, Any] = {"rules": [{"host": "app.example.com", "http": {"paths": [
        {"path": p, "pathType": t, "backend": b} for p, t, b in paths]}}]}
    if tls_hosts is not None:
        spec["tls"] = [{"hosts": tls_hosts, "secretName": "tls"}]
    return {"metadata": meta, "spec": spec}


def _corpus() -> list[dict[str, Any]]:
    rng = random.Random(15)
    types: list[Any] = [*PATH_TYPES, None, "", "Regex", 3]
    out = []
    for _ in range(400):
        k = rng.randint(1, 4)
        paths = [(rng.choice([*PATHS, 5, None]), rng.choice(types), copy.deepcopy(rng.choice(BACKENDS)))
                 for _ in range(k)]
        if rng.random() < 0.3:   # duplicates of a path already there
            paths.append(paths[0])
        annotations = rng.choice([None, {}, {"nginx.org/mergeable-ingress-type": "minion"},
                                  {"nginx.org/mergeable-ingress-type": "master"},
                                  {"nginx.org/websocket-services": "web,other"},
                                  {"nginx.org/rewrites": "serviceName=web rewrite=/"},
                                  {"nginx.org/proxy-connect-timeout": "x", "nginx.org/max-fails": "-1"},
                                  {"nginx.org/mergeable-ingress-type": 7}])
        out.append(_ingress(paths, annotations=annotations,
                            tls_hosts=rng.choice([None, ["app.example.com"], ["1.2.3.4", ""]])))
    return out


def test_validate_ingress_gives_the_full_checks_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every error message (and its order) is the one the full checks give, valid and broken Ingresses."""
    corpus = _corpus()
    fast = [[str(e) for e in validate_ingress(ing)] for ing in corpus]
    monkeypatch.setattr(ingress_validation, "_is_plain_path", lambda path: False)
    monkeypatch.setattr(ingress_validation, "_is_plain_backend", lambda backend: False)
    full = [[str(e) for e in validate_ingress(ing)] for ing in corpus]
    assert fast == full
    assert any(not errs for errs in fast) and any(errs for errs in fast)
    # Duplicates found by the shortcut carry the duplicate's own field.
    dup = _ingress([("/a", "Prefix", BACKENDS[8]), ("/a/", "Prefix", BACKENDS[8])])
    assert [str(e) for e in validate_ingress(dup)] == [
        'spec.rules[0].http.paths[1].path: Duplicate value: "/a/"']


def test_mergeable_type_reads_the_annotation_as_a_string() -> None:
    for value, expected in [("master", "master"), ("minion", "minion"), (7, "7"), (None, "None")]:
        assert annotation_validation.mergeable_type({"metadata": {"annotations": {
            "nginx.org/mergeable-ingress-type": value}}}) == expected
    for meta in [None, {}, {"annotations": None}, {"annotations": []}, {"annotations": {"other": "x"}}]:
        assert annotation_validation.mergeable_type({"metadata": meta}) == ""


def test_services_are_read_only_for_an_annotation_that_checks_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """The spec's Services are collected for annotations that name Services, not for every Ingress."""
    calls: list[int] = []
    real = annotation_validation.service_names

    def counting(ing: Any) -> set[str]:
        calls.append(1)
        return real(ing)

    monkeypatch.setattr(annotation_validation, "service_names", counting)
    plain = _ingress([("/", "Prefix", BACKENDS[8])])
    for extra in (None, {"unrelated": "x"}):
        assert validate_ingress(_ingress([("/", "Prefix", BACKENDS[8])], annotations=extra)) == []
    assert validate_ingress(plain) == [] and calls == []
    errs = validate_ingress(_ingress([("/", "Prefix", BACKENDS[8])],
                                     annotations={"nginx.org/websocket-services": "other"}))
    assert calls == [1] and [e.field for e in errs] == ["annotations.nginx.org/websocket-services"]



HOSTS = ["app.example.com", "a", "a-b.c-d", "1.2.3.4", "1.2.3.4.5", "01.2.3.4", "::1", "fd00::1", "Foo.com",
         "foo_bar.com", "-a.com", "a-.com", "a..b", ".a", "a.", "*.example.com", "*.1.2.3", "a.*.com", "*",
         "x" * 63 + ".com", ("a." * 127)[:253], ("a." * 127)[:254], "a" * 300, "caf\u00e9.com", "a b"]


def _full_host_check(host: str, field: str) -> list[str]:
    errs = []
    value = validation.go_quote(host)
    if validation._is_ip(host):
        errs.append(f"{field}: Invalid value: {value}: must be a DNS name, not an IP address")
    msgs = (validation.is_wildcard_dns1123_subdomain(host) if "*" in host
            else validation.is_dns1123_subdomain(host))
    errs.extend(f"{field}: Invalid value: {value}: {m}" for m in msgs)
    return errs


@pytest.mark.parametrize("host", HOSTS)
def test_validate_host_gives_the_full_checks_errors(host: str) -> None:
    assert [str(e) for e in validation.validate_host(host, "f")] == _full_host_check(host, "f")


def test_a_tls_host_is_checked_unless_a_rule_accepted_it() -> None:
    """A TLS host equal to a valid rule host is valid; any other TLS host gets its own errors."""
    def errors(rule_host: str, tls_hosts: list[Any]) -> list[str]:
        ing = _ingress([("/", "Prefix", BACKENDS[8])], tls_hosts=tls_hosts)
        ing["spec"]["rules"][0]["host"] = rule_host
        return [str(e) for e in validate_ingress(ing)]

    assert errors("app.example.com", ["app.example.com"]) == []
    bad = "Bad_Host"
    assert errors(bad, [bad, "1.2.3.4"]) == (_full_host_check(bad, "spec.rules[0].host")
                                             + _full_host_check(bad, "spec.tls[0].hosts[0]")
                                             + _full_host_check("1.2.3.4", "spec.tls[0].hosts[1]"))
    assert errors("app.example.com", ["other_host"]) == _full_host_check("other_host", "spec.tls[0].hosts[0]")
