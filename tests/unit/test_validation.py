"""Ingress validation: exact Kubernetes-style messages for NIC's rules and our deliberate additions."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ingressctl.kinds.ingress.annotation_validators import is_nginx_time
from ingressctl.kinds.ingress.validation import validate_ingress
from ingressctl.validation import ErrorType, FieldError, aggregate_message, go_quote

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
WILDCARD_MSG = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must "
    "consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. "
    "'*.example.com', regex used for validation is "
    "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
PATH_MSG = (
    "must start with / and must not include any whitespace character or ';' (e.g. '/' or '/path' or "
    "'/path/subpath-123', regex used for validation is '/[^\\s;]*')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name' or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def path(p: str = "/", ptype: str | None = "Prefix", svc: str = "svc", port: Any = 80) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "path": p,
        "backend": {
            "service": {"name": svc, "port": {"number": port} if isinstance(port, int) else {"name": port}}
        },
    }
    if ptype is not None:
        entry["pathType"] = ptype
    return entry


def ingress(*rules: dict[str, Any], annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "ing", "namespace": "default", "annotations": annotations or {}},
        "spec": {"rules": list(rules), **spec},
    }


def rule(host: str = "example.com", *paths: dict[str, Any]) -> dict[str, Any]:
    return {"host": host, "http": {"paths": list(paths or [path()])}}


def messages(ing: dict[str, Any], **kw: Any) -> list[str]:
    return [str(e) for e in validate_ingress(ing, **kw)]


def test_valid_ingress_has_no_errors() -> None:
    ing = ingress(
        rule(
            "cafe.example.com",
            path("/tea"),
            path("/coffee", "Exact", port="http"),
            path("", "ImplementationSpecific"),
        ),
        rule("*.example.com"),
        annotations={
            "nginx.org/proxy-read-timeout": "30s",
            "nginx.org/client-max-body-size": "4m",
            "nginx.org/lb-method": "least_conn",
            "unrelated/annotation": "$$$",
        },
        tls=[{"hosts": ["cafe.example.com"], "secretName": "cafe-secret"}],
        defaultBackend={"service": {"name": "default-svc", "port": {"number": 8080}}},
    )
    assert validate_ingress(ing) == []


@pytest.mark.parametrize(
    ("ing", "expected"),
    [
        pytest.param(
            ingress(rule("foo_bar")),
            [f'spec.rules[0].host: Invalid value: "foo_bar": {SUBDOMAIN_MSG}'],
            id="invalid-host",
        ),
        pytest.param(
            ingress(rule("Example.com")),
            [f'spec.rules[0].host: Invalid value: "Example.com": {SUBDOMAIN_MSG}'],
            id="uppercase-host",
        ),
        pytest.param(
            ingress(rule("foo.*.com")),
            [f'spec.rules[0].host: Invalid value: "foo.*.com": {WILDCARD_MSG}'],
            id="bad-wildcard",
        ),
        pytest.param(
            ingress(rule("10.0.0.1")),
            ['spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address'],
            id="ip-host",
        ),
        pytest.param(ingress(rule("")), ["spec.rules[0].host: Required value"], id="empty-host"),
        pytest.param(
            ingress(rule("a.com"), rule("a.com")),
            ['spec.rules[1].host: Duplicate value: "a.com"'],
            id="duplicate-host",
        ),
        pytest.param(ingress(), ["spec.rules: Required value"], id="no-rules"),
        pytest.param(
            ingress(rule("a.com", path("/foo bar"))),
            [f'spec.rules[0].http.paths[0].path: Invalid value: "/foo bar": {PATH_MSG}'],
            id="path-space",
        ),
        pytest.param(
            ingress(rule("a.com", path("/foo;bar"))),
            [f'spec.rules[0].http.paths[0].path: Invalid value: "/foo;bar": {PATH_MSG}'],
            id="path-semicolon",
        ),
        pytest.param(
            ingress(rule("a.com", path("foo"))),
            [f'spec.rules[0].http.paths[0].path: Invalid value: "foo": {PATH_MSG}'],
            id="path-relative",
        ),
        pytest.param(
            ingress(rule("a.com", path("/x{abc}"))),
            [
                'spec.rules[0].http.paths[0].path: Invalid value: "/x{abc}": must not include curly braces '
                "containing alphabetical characters"
            ],
            id="path-curly",
        ),
        pytest.param(
            ingress(rule("a.com", path("/x(", "ImplementationSpecific"))),
            [
                'spec.rules[0].http.paths[0].path: Invalid value: "/x(": must be a valid regular expression: '
                "missing ), unterminated subpattern at position 2"
            ],
            id="path-bad-regex",
        ),
        pytest.param(
            ingress(rule("a.com", path('/a"b', "ImplementationSpecific"))),
            [
                'spec.rules[0].http.paths[0].path: Invalid value: "/a\\"b": '
                "must have all '\"' (double quotes) escaped and must not end with an unescaped "
                "'\\' (backslash)"
            ],
            id="path-quote",
        ),
        pytest.param(
            ingress(rule("a.com", path("/etc/", "ImplementationSpecific"))),
            ['spec.rules[0].http.paths[0].path: Invalid value: "/etc/": must not contain invalid paths'],
            id="path-illegal",
        ),
        pytest.param(
            ingress(rule("a.com", path("/a//b", "Exact"))),
            ["spec.rules[0].http.paths[0].path: Invalid value: \"/a//b\": must not contain '//'"],
            id="path-double-slash",
        ),
        pytest.param(
            ingress(rule("a.com", path("", "Exact"))),
            [
                "spec.rules[0].http.paths[0].path: Required value: path is required for Exact and Prefix "
                "PathTypes"
            ],
            id="path-empty-exact",
        ),
        pytest.param(
            ingress(rule("a.com", path("/foo"), path("/bar"), path("/foo"))),
            ['spec.rules[0].http.paths[2].path: Duplicate value: "/foo"'],
            id="duplicate-path",
        ),
        pytest.param(
            ingress(rule("a.com", path("/foo", "Prefix"), path("/foo/", "Prefix"))),
            ['spec.rules[0].http.paths[1].path: Duplicate value: "/foo/"'],
            id="duplicate-prefix-slash",
        ),
        pytest.param(
            ingress(rule("a.com", path("/foo", "Exact"), path("/bar"), path("/foo", "Exact"))),
            ['spec.rules[0].http.paths[2].path: Duplicate value: "/foo"'],
            id="duplicate-exact",
        ),
        pytest.param(
            ingress(rule("a.com", path("/foo", "ImplementationSpecific"),
                         path("/foo", "ImplementationSpecific"))),
            ['spec.rules[0].http.paths[1].path: Duplicate value: "/foo"'],
            id="duplicate-implementation-specific",
        ),
        pytest.param(
            ingress(rule("a.com", path("/", ptype=None))),
            ["spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"],
            id="missing-pathtype",
        ),
        pytest.param(
            ingress(rule("a.com", path("/", ptype="Regex"))),
            [
                'spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex": supported values: '
                '"Exact", "ImplementationSpecific", "Prefix"'
            ],
            id="bad-pathtype",
        ),
        pytest.param(
            ingress(rule("a.com", path("/", port=70000))),
            [
                "spec.rules[0].http.paths[0].backend.service.port.number: Invalid value: 70000: must be "
                "between 1 and 65535, inclusive"
            ],
            id="port-too-big",
        ),
        pytest.param(
            ingress(rule("a.com", path("/", port="HTTP"))),
            [
                'spec.rules[0].http.paths[0].backend.service.port.name: Invalid value: "HTTP": must contain '
                "only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                'spec.rules[0].http.paths[0].backend.service.port.name: Invalid value: "HTTP": must contain '
                "at least one letter (a-z)",
            ],
            id="port-name-upper",
        ),
        pytest.param(
            ingress(rule("a.com", path("/", svc="Bad.Svc"))),
            [f'spec.rules[0].http.paths[0].backend.service.name: Invalid value: "Bad.Svc": {DNS1035_MSG}'],
            id="bad-service-name",
        ),
        pytest.param(
            ingress(rule("a.com", {"path": "/", "pathType": "Prefix"})),
            [
                'spec.rules[0].http.paths[0].backend: Invalid value: "": resource or service backend is '
                "required"
            ],
            id="missing-backend",
        ),
        pytest.param(
            ingress(
                rule(
                    "a.com",
                    {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "svc", "port": {}}}},
                )
            ),
            ["spec.rules[0].http.paths[0].backend: Required value: port name or number is required"],
            id="missing-port",
        ),
        pytest.param(
            ingress(
                rule(
                    "a.com",
                    {
                        "path": "/",
                        "pathType": "Prefix",
                        "backend": {"resource": {"kind": "Bucket", "name": "b"}},
                    },
                )
            ),
            ["spec.rules[0].http.paths[0].backend.resource: Forbidden: resource backends are not supported"],
            id="resource-backend",
        ),
        pytest.param(
            ingress(rule("a.com"), defaultBackend={"resource": {"kind": "Bucket", "name": "b"}}),
            ["spec.defaultBackend.resource: Forbidden: resource backends are not supported"],
            id="resource-default-backend",
        ),
    ],
)
def test_invalid_ingress_messages(ing: dict[str, Any], expected: list[str]) -> None:
    assert messages(ing) == expected


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (
            {"nginx.org/mergeable-ingress-type": "boss"},
            [
                'annotations.nginx.org/mergeable-ingress-type: Invalid value: "boss": '
                "must be one of: 'master' or 'minion'"
            ],
        ),
        (
            {"nginx.org/mergeable-ingress-type": ""},
            ["annotations.nginx.org/mergeable-ingress-type: Required value"],
        ),
        (
            {"nginx.org/proxy-connect-timeout": "10x"},
            ['annotations.nginx.org/proxy-connect-timeout: Invalid value: "10x": must be a time'],
        ),
        (
            {"nginx.org/client-max-body-size": "1t"},
            ['annotations.nginx.org/client-max-body-size: Invalid value: "1t": must be an offset'],
        ),
        (
            {"nginx.org/lb-method": "x"},
            ['annotations.nginx.org/lb-method: Invalid value: "x": invalid load balancing method: "x"'],
        ),
        (
            {"nginx.org/redirect-to-https": "yes"},
            ['annotations.nginx.org/redirect-to-https: Invalid value: "yes": must be a boolean'],
        ),
        (
            {"nginx.org/hsts-max-age": "10"},
            ["annotations.nginx.org/hsts-max-age: Forbidden: related annotation nginx.org/hsts: must be set"],
        ),
        (
            {"nginx.org/hsts": "maybe", "nginx.org/hsts-max-age": "10"},
            [
                'annotations.nginx.org/hsts: Invalid value: "maybe": must be a boolean',
                "annotations.nginx.org/hsts-max-age: Forbidden: related annotation nginx.org/hsts: "
                "must be a boolean",
            ],
        ),
        (
            {"nginx.com/health-checks": "true"},
            ["annotations.nginx.com/health-checks: Forbidden: annotation requires NGINX Plus"],
        ),
        (
            {"nginx.org/server-snippets": "return 200;"},
            [
                "annotations.nginx.org/server-snippets: Forbidden: "
                "snippet specified but snippets feature is not enabled"
            ],
        ),
        (
            {"nginx.org/websocket-services": "svc,other"},
            [
                'annotations.nginx.org/websocket-services: Invalid value: "svc,other": '
                "must be a comma-separated list of services. The following services were not found: other"
            ],
        ),
        (
            {"nginx.org/path-regex": "yes"},
            [
                "annotations.nginx.org/path-regex: Invalid value: \"yes\": allowed values: 'case_sensitive', "
                "'case_insensitive' or 'exact'"
            ],
        ),
        (
            {"nginx.org/listen-ports": "80,0"},
            [
                'annotations.nginx.org/listen-ports: Invalid value: "80,0": '
                "must be a comma-separated list of port numbers"
            ],
        ),
    ],
)
def test_annotation_messages(annotations: dict[str, str], expected: list[str]) -> None:
    assert messages(ingress(rule("a.com"), annotations=annotations)) == expected


def test_snippets_allowed_when_enabled() -> None:
    ing = ingress(rule("a.com"), annotations={"nginx.org/server-snippets": "return 200;"})
    assert messages(ing, snippets_enabled=True) == []


def test_annotations_come_first_in_sorted_order_then_spec() -> None:
    ing = ingress(rule("a_b"), annotations={"nginx.org/proxy-read-timeout": "x", "nginx.org/keepalive": "y"})
    assert [e.field for e in validate_ingress(ing)] == [
        "annotations.nginx.org/keepalive",
        "annotations.nginx.org/proxy-read-timeout",
        "spec.rules[0].host",
    ]


def test_master_and_minion_rules() -> None:
    master = ingress(rule("a.com"), annotations={"nginx.org/mergeable-ingress-type": "master"})
    assert messages(master) == ["spec.rules[0].http.paths: Too many: 1: must have at most 0 items"]
    master["spec"]["rules"] = [{"host": "a.com"}]
    assert messages(master) == []
    two = copy.deepcopy(master)
    two["spec"]["rules"].append({"host": "b.com"})
    assert messages(two) == ["spec.rules: Too many: 2: must have at most 1 items"]

    minion = ingress(rule("a.com"), annotations={"nginx.org/mergeable-ingress-type": "minion"})
    assert messages(minion) == []
    minion["spec"]["tls"] = [{"hosts": ["a.com"], "secretName": "s"}]
    assert messages(minion) == ["spec.tls: Too many: 1: must have at most 0 items"]
    bare = ingress({"host": "a.com"}, annotations={"nginx.org/mergeable-ingress-type": "minion"})
    assert messages(bare) == ["spec.rules[0].http.paths: Required value: must include at least one path"]


def test_aggregate_joins_like_to_aggregate() -> None:
    a = FieldError(ErrorType.REQUIRED, "spec.rules")
    b = FieldError(ErrorType.INVALID, "x", 3, "bad")
    assert aggregate_message([]) == ""
    assert aggregate_message([a]) == "spec.rules: Required value"
    assert aggregate_message([a, b, a]) == "[spec.rules: Required value, x: Invalid value: 3: bad]"


def test_go_quote_matches_strconv_quote() -> None:
    assert go_quote('a"b\\c\n\t\x01é') == '"a\\"b\\\\c\\n\\t\\x01é"'


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("30", True),
        ("30s", True),
        ("1m30s", True),
        ("500ms", True),
        ("1h 30m", True),
        ("1d2h", True),
        ("", False),
        ("s", False),
        ("1x", False),
        ("1m30", False),
        ("30s1m", False),
    ],
)
def test_nginx_time(value: str, ok: bool) -> None:
    assert is_nginx_time(value) is ok


def test_malformed_objects_never_raise() -> None:
    for spec in (
        {"rules": "nope"},
        {"rules": [None, 3, {"host": 5, "http": {"paths": [None, {"path": 7}]}}]},
        {
            "defaultBackend": "x",
            "rules": [
                {
                    "host": "a.com",
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": "s", "port": {"number": "80"}}},
                            }
                        ]
                    },
                }
            ],
        },
    ):
        errs = validate_ingress({"metadata": {"annotations": None}, "spec": spec})
        assert errs, spec
        assert all(isinstance(str(e), str) for e in errs)


@pytest.mark.parametrize(
    "paths",
    [
        pytest.param([path("/foo", "Prefix"), path("/foo", "Exact")], id="prefix-then-exact"),
        pytest.param([path("/foo", "Exact"), path("/foo", "Prefix")], id="exact-then-prefix"),
        pytest.param([path("/foo/", "Exact"), path("/foo", "Prefix")], id="exact-slash-and-prefix"),
        pytest.param([path("/foo", "Exact"), path("/foo", "ImplementationSpecific")], id="exact-and-impl"),
    ],
)
def test_one_path_with_different_path_types_is_not_a_duplicate(paths: list[dict[str, Any]]) -> None:
    assert messages(ingress(rule("a.com", *paths))) == []


def test_an_ingress_without_rules_needs_a_default_backend() -> None:
    backend = {"service": {"name": "echo", "port": {"number": 8080}}}
    assert messages(ingress(defaultBackend=backend)) == []
    assert messages(ingress()) == ["spec.rules: Required value"]
    bad = {"service": {"name": "Echo", "port": {"number": 8080}}}
    assert messages(ingress(defaultBackend=bad)) == [
        f'spec.defaultBackend.service.name: Invalid value: "Echo": {DNS1035_MSG}']
