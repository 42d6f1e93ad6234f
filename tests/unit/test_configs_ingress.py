"""IngressEx -> model -> ingress.conf.j2: naming, pathType semantics, empty upstreams, TLS, default backends,
annotations, and that no value can add a directive."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingressctl.configs.config import (
    EXACT,
    PREFIX,
    IngressMeta,
    IngressNginxConfig,
    Location,
    Server,
    Upstream,
    UpstreamServer,
)
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.templates import TemplateExecutor, TemplateRenderError
from ingressctl.kinds.ingress.config import AnnotationError, generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.kinds.ingress.locations import location_keys, upstream_name
from ingressctl.secret_types import SecretReference
from tests.unit.test_configs_quoting import TokenizeError, nginx_tokens

STATIC = StaticConfigParams(run_dir="/run/ic", conf_dir="/etc/ic")
TEMPLATES = TemplateExecutor()


def backend(svc: str, port: int | str) -> dict[str, Any]:
    key = "number" if isinstance(port, int) else "name"
    return {"service": {"name": svc, "port": {key: port}}}


def path(p: str, svc: str, port: int | str = 80, path_type: str = "Prefix") -> dict[str, Any]:
    return {"path": p, "pathType": path_type, "backend": backend(svc, port)}


def ingress(name: str = "reports", namespace: str = "default", *, rules: list[dict[str, Any]] | None = None,
            tls: list[dict[str, Any]] | None = None, default_backend: dict[str, Any] | None = None,
            annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"rules": rules or []}
    if tls is not None:
        spec["tls"] = tls
    if default_backend is not None:
        spec["defaultBackend"] = default_backend
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}},
            "spec": spec}


def rule(host: str, *paths: dict[str, Any]) -> dict[str, Any]:
    return {"host": host, "http": {"paths": list(paths)}}


def reports_ex(**kw: Any) -> IngressEx:
    ing = ingress(rules=[rule("reports.example.com",
                              path("/reports-runner", "runner"),
                              path("/reports-cron", "cron", 8080),
                              path("/reports-admin", "admin", "http"))], **kw)
    return IngressEx(ing, {"reports.example.com": True}, {
        backend_key("runner", 80): ["10.0.0.2:8080", "10.0.0.1:8080"],
        backend_key("cron", 8080): ["10.0.1.1:9000"],
        backend_key("admin", "http"): ["10.0.2.1:80"],
    })


def render(ing_ex: IngressEx, config: ConfigParams | None = None,
           static: StaticConfigParams = STATIC) -> tuple[str, list[str]]:
    cfg, warnings = generate_nginx_config(ing_ex, static, config or ConfigParams())
    return TEMPLATES.execute_ingress_template(cfg), warnings


def block(text: str, header: str) -> str:
    """The text of the block that starts with `header {` (balanced braces)."""
    start = text.index(header + " {")
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    raise AssertionError(f"unbalanced block {header}")


def test_reports_example() -> None:
    text, warnings = render(reports_ex())
    assert warnings == []
    assert text.startswith("# configuration for default/reports\n")
    runner = block(text, "upstream default-reports-reports.example.com-runner-80")
    assert "zone ingressctl-upstreams;" in runner  # every upstream in one shared zone
    assert "random two least_conn;" in runner
    # One server per endpoint, sorted by address, with NIC's defaults.
    assert re.findall(r"server (\S+) max_fails=1 fail_timeout=10s max_conns=0;", runner) == [
        "10.0.0.1:8080", "10.0.0.2:8080"]
    assert "server 10.0.1.1:9000 " in block(text, "upstream default-reports-reports.example.com-cron-8080")
    assert "server 10.0.2.1:80 " in block(text, "upstream default-reports-reports.example.com-admin-http")
    # Upstreams sorted by name, one server block.
    assert re.findall(r"^upstream (\S+) \{", text, re.M) == [
        "default-reports-reports.example.com-admin-http",
        "default-reports-reports.example.com-cron-8080",
        "default-reports-reports.example.com-runner-80",
    ]
    assert text.count("\nserver {") == 1
    server = block(text, "\nserver")
    assert "    listen 80;\n    listen [::]:80;\n" in server
    assert "ssl" not in server
    assert "server_name reports.example.com;" in server
    assert 'set $resource_name "reports";' in server and 'set $resource_namespace "default";' in server
    assert re.findall(r"location (.*?) \{", server) == [
        "= /reports-runner", "/reports-runner/", "= /reports-cron", "/reports-cron/", "= /reports-admin",
        "/reports-admin/", "/"]
    cron = block(server, "location = /reports-cron")
    for line in (
        'set $service "cron";',
        "proxy_http_version 1.1;",
        "proxy_connect_timeout 60s;",
        "proxy_read_timeout 60s;",
        "proxy_send_timeout 60s;",
        "client_max_body_size 1m;",
        "proxy_set_header Host $host;",
        "proxy_set_header X-Real-IP $remote_addr;",
        "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
        "proxy_set_header X-Forwarded-Host $host;",
        "proxy_set_header X-Forwarded-Port $server_port;",
        "proxy_set_header X-Forwarded-Proto $scheme;",
        "proxy_buffering on;",
        "proxy_pass http://default-reports-reports.example.com-cron-8080;",
    ):
        assert f"        {line}\n" in cron, line
    assert "Connection" not in cron  # no keepalive, no websocket
    # No "/" path and no default backend: unmatched paths get 404 from this server.
    assert "location / {\n        try_files \"\" =404;\n    }" in server


def test_path_types() -> None:
    assert location_keys("/foo", "Exact") == [(EXACT, "/foo")]
    assert location_keys("/foo", "Prefix") == [(EXACT, "/foo"), (PREFIX, "/foo/")]
    assert location_keys("/foo/", "Prefix") == [(EXACT, "/foo"), (PREFIX, "/foo/")]
    assert location_keys("/", "Prefix") == [(PREFIX, "/")]
    assert location_keys("/foo", "ImplementationSpecific") == [(PREFIX, "/foo")]
    assert location_keys("/foo/", "ImplementationSpecific") == [(PREFIX, "/foo/")]


def test_exact_path_beats_prefix_path_with_the_same_path_in_any_order() -> None:
    for paths in ([path("/foo", "a"), path("/foo", "b", path_type="Exact")],
                  [path("/foo", "b", path_type="Exact"), path("/foo", "a")]):
        ex = IngressEx(ingress(rules=[rule("h.example.com", *paths)]), {"h.example.com": True}, {})
        text, warnings = render(ex)
        assert warnings == []
        assert "proxy_pass http://default-reports-h.example.com-b-80;" in block(text, "location = /foo")
        assert "proxy_pass http://default-reports-h.example.com-a-80;" in block(text, "location /foo/")
        assert text.count("location = /foo {") == 1


def test_duplicate_locations_are_dropped_with_a_warning() -> None:
    ex = IngressEx(ingress(rules=[rule("h.example.com", path("/foo", "a"), path("/foo/", "b"),
                                       path("/x", "c", path_type="ImplementationSpecific"),
                                       path("/x", "d", path_type="ImplementationSpecific"))]),
                   {"h.example.com": True}, {})
    text, warnings = render(ex)
    assert len(warnings) == 2 and all("duplicates an earlier path" in w for w in warnings)
    assert text.count("location /foo/ {") == 1 and text.count("location /x {") == 1
    assert "-b-80" not in text and "-d-80" not in text  # no unused upstreams


def test_upstream_names() -> None:
    assert upstream_name("ns", "ing", "h.example.com", "svc", 80) == "ns-ing-h.example.com-svc-80"
    assert upstream_name("ns", "ing", "", "svc", "http") == "ns-ing--svc-http"


def test_empty_endpoints_point_to_the_502_server() -> None:
    ex = reports_ex()
    ex.endpoints[backend_key("cron", 8080)] = []
    text, _ = render(ex)
    cron = block(text, "upstream default-reports-reports.example.com-cron-8080")
    assert "server unix:/run/ic/nginx-502-server.sock max_fails=1 fail_timeout=10s max_conns=0;" in cron
    assert cron.count("server ") == 1
    del ex.endpoints[backend_key("admin", "http")]
    text, _ = render(ex)
    assert "unix:/run/ic/nginx-502-server.sock" in block(
        text, "upstream default-reports-reports.example.com-admin-http")


def test_only_owned_hosts_get_a_server_and_repeated_hosts_merge() -> None:
    ing = ingress(rules=[rule("a.example.com", path("/a", "a")), rule("b.example.com", path("/b", "b")),
                         rule("a.example.com", path("/c", "c"))])
    text, _ = render(IngressEx(ing, {"a.example.com": True, "b.example.com": False}, {}))
    assert re.findall(r"server_name (\S+);", text) == ["a.example.com"]
    assert "location = /a {" in text and "location = /c {" in text and "/b" not in text


def test_default_backend_serves_slash_of_each_host_without_one() -> None:
    ing = ingress(rules=[rule("a.example.com", path("/a", "a")), rule("b.example.com", path("/", "b"))],
                  default_backend=backend("fallback", 8080))
    ex = IngressEx(ing, {"a.example.com": True, "b.example.com": True},
                   {backend_key("fallback", 8080): ["10.9.9.9:8080"]})
    text, _ = render(ex)
    servers = text.split("\nserver {")[1:]
    assert "proxy_pass http://default-reports--fallback-8080;" in servers[0]
    assert "=404;" not in servers[0]
    assert "fallback" not in servers[1]  # b has its own "/"
    assert "upstream default-reports--fallback-8080 {" in text
    assert "server 10.9.9.9:8080 " in text


def test_exact_slash_does_not_count_as_slash() -> None:
    ing = ingress(rules=[rule("a.example.com", path("/", "a", path_type="Exact"))],
                  default_backend=backend("fallback", 80))
    text, _ = render(IngressEx(ing, {"a.example.com": True}, {}))
    assert "location = / {" in text
    assert "proxy_pass http://default-reports--fallback-80;" in block(text, "    location /")


def tls_ex(ref: SecretReference | None, secret_name: str = "tls-secret") -> IngressEx:
    ing = ingress(rules=[rule("secure.example.com", path("/", "web"))],
                  tls=[{"hosts": ["secure.example.com"], "secretName": secret_name}])
    refs = {} if ref is None else {secret_name: ref}
    return IngressEx(ing, {"secure.example.com": True}, {}, secret_refs=refs)


def test_tls_with_a_valid_secret() -> None:
    text, warnings = render(tls_ex(SecretReference("default/tls-secret", "/etc/ic/secrets/default-tls-secret",
                                                   secret_type="kubernetes.io/tls")))
    assert warnings == []
    assert "    listen 443 ssl;\n    listen [::]:443 ssl;\n" in text
    assert "ssl_certificate /etc/ic/secrets/default-tls-secret;" in text
    assert "ssl_certificate_key /etc/ic/secrets/default-tls-secret;" in text
    assert "ssl_reject_handshake" not in text
    assert "return 301 https://$host:443$request_uri;" in text  # ssl-redirect defaults to true


@pytest.mark.parametrize("ref,expected", [
    (None, "TLS secret tls-secret is invalid: secret doesn't exist or of an unsupported type"),
    (SecretReference("default/tls-secret", error="tls: failed to find any PEM data"),
     "TLS secret tls-secret is invalid: tls: failed to find any PEM data"),
    (SecretReference("default/tls-secret", "/x", secret_type="Opaque"),
     "TLS secret tls-secret is of a wrong type 'Opaque', must be 'kubernetes.io/tls'"),
])
def test_tls_with_a_missing_or_invalid_secret_rejects_handshakes(ref: SecretReference | None,
                                                                  expected: str) -> None:
    text, warnings = render(tls_ex(ref))
    assert warnings == [expected]
    assert "listen 443 ssl;" in text and "ssl_reject_handshake on;" in text
    assert "ssl_certificate" not in text
    assert "return 301" not in text  # HTTP keeps working: no redirect to a TLS that cannot work
    assert "listen 80;" in text


def test_tls_without_secret_name_uses_the_wildcard_secret() -> None:
    text, warnings = render(tls_ex(None, secret_name=""))
    assert "ssl_reject_handshake on;" in text and "requires specifying a TLS secret" in warnings[0]
    static = StaticConfigParams(run_dir="/run/ic", wildcard_tls_path="/etc/ic/secrets/wildcard")
    text, warnings = render(tls_ex(None, secret_name=""), static=static)
    assert warnings == [] and "ssl_certificate /etc/ic/secrets/wildcard;" in text


def test_tls_host_match_is_exact() -> None:
    ing = ingress(rules=[rule("a.example.com", path("/", "web"))],
                  tls=[{"hosts": ["*.example.com"], "secretName": "s"}])
    text, _ = render(IngressEx(ing, {"a.example.com": True}, {}))
    assert "ssl" not in text


def test_annotations_override_the_config_map_and_bad_values_reject_the_ingress() -> None:
    anns = {"nginx.org/proxy-connect-timeout": "5s", "nginx.org/proxy-read-timeout": "2m",
            "nginx.org/client-max-body-size": "10m", "nginx.org/keepalive": "32"}
    text, warnings = render(reports_ex(annotations=anns), ConfigParams(proxy_send_timeout="30s"))
    loc = block(text, "location = /reports-cron")
    assert "proxy_connect_timeout 5s;" in loc and "proxy_read_timeout 2m;" in loc
    assert "client_max_body_size 10m;" in loc and "proxy_send_timeout 30s;" in loc
    assert warnings == []
    assert 'proxy_set_header Connection "";' in loc and "keepalive 32;" in text
    anns["nginx.org/proxy-send-timeout"] = "60s; evil on"
    with pytest.raises(AnnotationError) as e:
        render(reports_ex(annotations=anns))
    assert str(e.value) == ('annotation nginx.org/proxy-send-timeout: invalid value "60s; evil on": must be '
                            'a time: a number with optional units in the order y, M, w, d, h, m, s, ms (e.g. '
                            '60s, 1m30s, 500ms)')


def test_rewrites_and_snippets() -> None:
    anns = {"nginx.org/rewrites": "serviceName=runner rewrite=/v2",
            "nginx.org/location-snippets": "add_header X-A 1;"}
    text, warnings = render(reports_ex(annotations=anns))
    assert "proxy_pass http://default-reports-reports.example.com-runner-80/v2;" in block(
        text, "location = /reports-runner")
    assert "proxy_pass http://default-reports-reports.example.com-runner-80/v2/;" in block(
        text, "location /reports-runner/")
    assert "add_header" not in text and "snippets are not enabled" in warnings[0]
    static = StaticConfigParams(run_dir="/run/ic", enable_snippets=True)
    text, warnings = render(reports_ex(annotations=anns), static=static)
    assert warnings == [] and "        add_header X-A 1;\n" in block(text, "location = /reports-cron")


@pytest.mark.parametrize("bad_path", ["/a;b", "/a b", "/a{", "/a}", "/a$x", "/a\nb", 'x', "/a'b", '/a"b',
                                      "/a\\b", "~ /x"])
def test_unsafe_paths_are_left_out(bad_path: str) -> None:
    ing = ingress(rules=[rule("h.example.com", path(bad_path, "a"), path("/ok", "b"))])
    text, warnings = render(IngressEx(ing, {"h.example.com": True}, {}))
    assert len(warnings) == 1 and "is invalid; ignored" in warnings[0]
    assert "location = /ok {" in text and "-a-80" not in text


@pytest.mark.parametrize("bad_host", ["a.example.com;", "~^.*$", "a b", "A.example.com", "a.example.com\n"])
def test_unsafe_hosts_are_left_out(bad_host: str) -> None:
    ing = ingress(rules=[rule(bad_host, path("/", "a"))])
    text, warnings = render(IngressEx(ing, {bad_host: True}, {}))
    assert "server {" not in text and "is invalid" in warnings[0]


def test_invalid_endpoints_are_left_out() -> None:
    ex = reports_ex()
    ex.endpoints[backend_key("cron", 8080)] = ["10.0.0.1:80;", "10.0.0.5:80"]
    text, warnings = render(ex)
    assert "10.0.0.1:80;" not in text and "server 10.0.0.5:80 " in text and len(warnings) == 1


def test_wildcard_host_and_ipv6_endpoints() -> None:
    ing = ingress(rules=[rule("*.example.com", path("/", "a"))])
    ex = IngressEx(ing, {"*.example.com": True}, {backend_key("a", 80): ["[fd00::1]:8080"]})
    text, _ = render(ex)
    assert "server_name *.example.com;" in text
    assert "server [fd00::1]:8080 " in text and "upstream default-reports-*.example.com-a-80 {" in text


def test_disable_ipv6_and_ports() -> None:
    static = StaticConfigParams(run_dir="/run/ic", http_port=8081, https_port=8443, disable_ipv6=True)
    text, _ = render(tls_ex(SecretReference("d/t", "/p", secret_type="kubernetes.io/tls")), static=static)
    assert "listen 8081;" in text and "listen 8443 ssl;" in text and "[::]" not in text
    assert "return 301 https://$host:8443$request_uri;" in text


def test_invalid_ingress_name_raises() -> None:
    with pytest.raises(ValueError):
        generate_nginx_config(IngressEx(ingress(name="Bad Name"), {}, {}), STATIC, ConfigParams())


# --- No value can add a directive: render models built from arbitrary strings, bypassing the generator. ---

ALLOWED = {"upstream", "zone", "random", "server", "keepalive", "listen", "ssl_certificate",
           "ssl_certificate_key", "ssl_reject_handshake", "server_tokens", "server_name", "set", "if",
           "return", "try_files", "location",
           "proxy_http_version", "proxy_set_header", "proxy_connect_timeout", "proxy_read_timeout",
           "proxy_send_timeout", "client_max_body_size", "proxy_buffering", "proxy_pass"}


def directives(text: str) -> tuple[list[str], int]:
    """First words of all statements, and the number of blocks; asserts balanced braces."""
    tokens = nginx_tokens(text)
    names, depth, blocks, start = [], 0, 0, True
    for kind, value in tokens:
        if kind == "word":
            if start:
                names.append(value)
            start = False
        else:
            start = True
            if value == "{":
                depth += 1
                blocks += 1
            elif value == "}":
                depth -= 1
                assert depth >= 0
    assert depth == 0
    return names, blocks


HOSTILE = st.one_of(st.text(max_size=24), st.text(alphabet=st.sampled_from(list(' \t\n;{}"\'\\#$/a=~')),
                                               max_size=24))
FIELDS = ["host", "path", "service", "name", "namespace", "rewrite", "timeout", "address", "pem"]


def _model(field: str, value: str) -> IngressNginxConfig:
    v = {f: value if f == field else None for f in FIELDS}
    loc = Location(path=v["path"] or "/p", modifier=EXACT, upstream="u", service_name=v["service"] or "svc",
                   rewrite=v["rewrite"] or "", proxy_read_timeout=v["timeout"] or "60s")
    server = Server(name=v["host"] or "h.example.com", locations=(loc,), ssl=True,
                    ssl_certificate=v["pem"] or "/p.pem", ssl_certificate_key=v["pem"] or "/p.pem")
    return IngressNginxConfig(
        upstreams=(Upstream("u", (UpstreamServer(v["address"] or "10.0.0.1:80"),)),),
        servers=(server,),
        ingress=IngressMeta(name=v["name"] or "ing", namespace=v["namespace"] or "default"),
    )


@pytest.mark.parametrize("field", FIELDS)
@settings(max_examples=150, deadline=None)
@given(value=HOSTILE)
def test_arbitrary_model_values_never_add_a_directive(field: str, value: str) -> None:
    try:
        text = TEMPLATES.execute_ingress_template(_model(field, value))
    except TemplateRenderError:
        return
    try:
        names, blocks = directives(text)
    except TokenizeError as e:
        raise AssertionError(f"rendered config does not tokenize: {e}\n{text}") from e
    assert set(names) <= ALLOWED, text
    assert blocks == 3  # upstream, server, location
    assert names.count("location") == 1 and names.count("server_name") == 1 and names.count("proxy_pass") == 1


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3),
    max_leaves=8)
HOSTISH = st.sampled_from(["a.example.com", "*.example.com", "", "A.example.com", "a b", "a;b"]) | st.text(
    max_size=12)
PATHISH = st.sampled_from(["/", "/a", "/a/", "/a;b", "a", "/$x", "/a b"]) | st.text(max_size=12) | JSONISH
PATH_TYPES = st.sampled_from(["Exact", "Prefix", "ImplementationSpecific", "Other"]) | JSONISH
GOOD_BACKEND = {"service": {"name": "svc", "port": {"number": 80}}}
ANNOTATION_NAMES = st.sampled_from([
    "nginx.org/proxy-read-timeout", "nginx.org/rewrites", "nginx.org/keepalive", "nginx.org/lb-method",
    "nginx.org/websocket-services"])


@settings(max_examples=300, deadline=None)
@given(host=HOSTISH, p=PATHISH, path_type=PATH_TYPES, backend=JSONISH | st.just(GOOD_BACKEND), tls=JSONISH,
       default_backend=JSONISH, annotations=st.dictionaries(ANNOTATION_NAMES, st.text(max_size=16)),
       endpoints=st.lists(st.text(max_size=16), max_size=3))
def test_arbitrary_ingress_content_never_breaks_generation(
        host: Any, p: Any, path_type: Any, backend: Any, tls: Any, default_backend: Any,
        annotations: dict[str, str], endpoints: list[str]) -> None:
    paths = [{"path": p, "pathType": path_type, "backend": backend}]
    spec = {"rules": [{"host": host, "http": {"paths": paths}}], "tls": tls,
            "defaultBackend": default_backend}
    ing = {"metadata": {"name": "x", "namespace": "default", "annotations": annotations}, "spec": spec}
    ex = IngressEx(ing, {host: True} if isinstance(host, str) else {}, {backend_key("svc", 80): endpoints})
    try:
        cfg, warnings = generate_nginx_config(ex, STATIC, ConfigParams())
    except AnnotationError as e:
        assert e.errors and all(err.startswith("annotation nginx.org/") for err in e.errors)
        return
    text = TEMPLATES.execute_ingress_template(cfg)
    names, _ = directives(text)
    assert set(names) <= ALLOWED
    assert all(isinstance(w, str) and w for w in warnings)
