"""devcluster validates Ingresses and Secrets as kube-apiserver 1.32 does: field paths and wording."""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.devcluster.validation import validate_ingress, validate_secret

SVC = {"service": {"name": "web", "port": {"number": 80}}}


def ing(paths: list[dict[str, Any]] | None = None, host: str = "a.example.com",
        **spec: Any) -> dict[str, Any]:
    default = [{"path": "/", "pathType": "Prefix", "backend": SVC}]
    rules = [{"host": host, "http": {"paths": default if paths is None else paths}}]
    return {"metadata": {"name": "i"}, "spec": {"rules": rules, **spec}}


def messages(obj: dict[str, Any], old: dict[str, Any] | None = None, sub: str = "") -> list[str]:
    validate = validate_secret if "type" in obj else validate_ingress
    return [f"{field}: {msg}" for field, _, msg in validate(obj, old, sub)]


def path(p: str, path_type: str | None = "Prefix", backend: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"path": p, "backend": SVC if backend is None else backend}
    if path_type:
        out["pathType"] = path_type
    return out


def test_valid_ingresses_pass() -> None:
    assert messages(ing()) == []
    assert messages(ing(host="*.example.com")) == []
    assert messages(ing([path("", "ImplementationSpecific"), path("/a b;{}", "Prefix")], host="")) == []
    assert messages({"metadata": {}, "spec": {"defaultBackend": SVC}}) == []
    resource = {"resource": {"apiGroup": "x", "kind": "Bucket", "name": "b"}}
    assert messages(ing([path("/", backend=resource)])) == []


P = "spec.rules[0].http.paths[0]"
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
             "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
WILDCARD = ("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which "
            "must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric "
            "character (e.g. '*.example.com', regex used for validation is "
            "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
DNS1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
           "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
           "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


def svc(name: str = "web", **port: Any) -> dict[str, Any]:
    return {"service": {"name": name, "port": port}}


@pytest.mark.parametrize("obj, expected", [
    (ing([path("tea")]), [f'{P}.path: Invalid value: "tea": must be an absolute path']),
    (ing([path("tea", "ImplementationSpecific")]),
     [f'{P}.path: Invalid value: "tea": must be an absolute path']),
    (ing([path("/a//b", "Exact")]), [f"{P}.path: Invalid value: \"/a//b\": must not contain '//'"]),
    (ing([path("/a/..")]), [f"{P}.path: Invalid value: \"/a/..\": cannot end with '/..'"]),
    (ing([path("/", None)]), [f"{P}.pathType: Required value: pathType must be specified"]),
    (ing([path("/", "prefix")]), [f'{P}.pathType: Unsupported value: "prefix": supported values: "Exact", '
                                  '"ImplementationSpecific", "Prefix"']),
    (ing([path("/", backend={})]),
     [f'{P}.backend: Invalid value: "": resource or service backend is required']),
    (ing([path("/", backend={**SVC, "resource": {"kind": "K", "name": "n"}})]),
     [f'{P}.backend: Invalid value: "": cannot set both resource and service backends']),
    (ing([path("/", backend=svc())]), [f"{P}.backend: Required value: port name or number is required"]),
    (ing([path("/", backend=svc(number=70000))]),
     [f"{P}.backend.service.port.number: Invalid value: 70000: must be between 1 and 65535, inclusive"]),
    (ing([path("/", backend=svc("Web", number=80))]),
     [f'{P}.backend.service.name: Invalid value: "Web": {DNS1035}']),
    (ing([]), ["spec.rules[0].http.paths: Required value"]),
    (ing(host="10.0.0.1"),
     ['spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address']),
    (ing(host="a.*.example.com"), [f'spec.rules[0].host: Invalid value: "a.*.example.com": {WILDCARD}']),
    (ing(host="A.example.com"), [f'spec.rules[0].host: Invalid value: "A.example.com": {SUBDOMAIN}']),
    (ing(tls=[{"hosts": ["ok.example.com", "*.bad*.com"]}]),
     [f'spec.tls[0].hosts[1]: Invalid value: "*.bad*.com": {WILDCARD}']),
    (ing(ingressClassName="Nginx"), [f'spec.ingressClassName: Invalid value: "Nginx": {SUBDOMAIN}']),
    ({"metadata": {}, "spec": {}},
     ['spec: Invalid value: "": either `defaultBackend` or `rules` must be specified']),
])
def test_ingress_errors(obj: dict[str, Any], expected: list[str]) -> None:
    got = messages(obj)
    assert len(got) == len(expected), got
    assert got == expected


def test_tls_secret_names_with_ratcheting_on_update() -> None:
    bad = ing(tls=[{"hosts": ["a.example.com"], "secretName": "Cafe_Secret"}])
    assert messages(bad) == [f'spec.tls[0].secretName: Invalid value: "Cafe_Secret": {SUBDOMAIN}']
    assert messages(bad, old=bad) == []                        # an object that already has one may keep it
    good = ing(tls=[{"hosts": ["a.example.com"], "secretName": "cafe-secret"}])
    assert messages(bad, old=good) == [f'spec.tls[0].secretName: Invalid value: "Cafe_Secret": {SUBDOMAIN}']


def test_class_annotation_must_match_the_class_field_on_create() -> None:
    both = ing(ingressClassName="other")
    both["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "nginx"}
    assert messages(both) == ['annotations.kubernetes.io/ingress.class: Invalid value: "nginx": must match '
                              "`ingressClassName` when both are specified"]
    assert messages(both, old=both) == []                      # updates of existing objects are not refused
    both["spec"]["ingressClassName"] = "nginx"
    assert messages(both) == []


def test_ingress_status_is_checked_on_status_writes_only() -> None:
    bad_spec = ing([path("tea")])
    bad_spec["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}, {"hostname": "lb.example.com"}]}}
    assert messages(bad_spec, sub="status") == []
    bad_spec["status"]["loadBalancer"]["ingress"] = [{"ip": "lb.example.com"}, {"hostname": "192.0.2.1"}]
    assert messages(bad_spec, sub="status") == [
        'status.loadBalancer.ingress[0].ip: Invalid value: "lb.example.com": must be a valid IP address',
        'status.loadBalancer.ingress[1].hostname: Invalid value: "192.0.2.1": must be a DNS name, not an '
        "IP address"]


def test_secrets() -> None:
    tls = {"metadata": {"name": "s"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}}
    assert messages(tls) == ["data[tls.key]: Required value"]
    assert messages({**tls, "data": {}}) == ["data[tls.crt]: Required value", "data[tls.key]: Required value"]
    assert messages({**tls, "stringData": {"tls.key": "k"}}) == []
    opaque = {"metadata": {"name": "s"}, "type": "Opaque", "data": {"bad key": "eA=="}}
    assert messages(opaque)[0].startswith('data[bad key]: Invalid value: "bad key": a valid config key must')
    ok = {"metadata": {"name": "s"}, "type": "Opaque", "data": {"k": "eA=="}}
    assert messages({**ok, "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}, old=ok) == [
        'type: Invalid value: "kubernetes.io/tls": field is immutable']
