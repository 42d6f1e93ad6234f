"""Policies on Ingresses rendered through the real Ingress template and checked with the real `nginx -t`:
every supported type at server level and in minion locations, and each fail-closed case."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams, generate_main_config
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.kinds.ingress.config import generate_nginx_config, generate_nginx_config_for_mergeable
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses
from ingressctl.policies.base import PolicySecret, ResolvedPolicy
from ingressctl.secret_types import SecretReference
from tests.integration.test_annotations_fuzz_nginx import Staging
from tests.pki import CA, policy
from tests.unit.test_injection_fuzz import Rendered

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Diffie-Hellman over finite fields")]

TEMPLATES = TemplateExecutor()
NS = "demo"

CORS = {"allowOrigin": ["https://app.example.com", "https://*.example.org"], "allowMethods": ["GET", "POST"],
        "allowHeaders": ["X-Token"], "allowCredentials": True, "exposeHeaders": ["X-Id"], "maxAge": 600}
EXAUTH = {"authURI": "/auth", "authServiceName": "auth-ns/auth", "authServicePorts": [8080],
          "authSigninURI": "https://$host/oauth2/start?rd=${request_uri}"}
EGRESS = {"tlsSecret": "client", "trustedCertSecret": "ca", "verifyServer": True, "serverName": True,
          "sslName": "backend.example.com", "protocols": "TLSv1.2 TLSv1.3"}


@pytest.fixture(scope="module")
def staging() -> Iterator[Staging]:
    base = tempfile.mkdtemp(prefix="ingpol-")
    try:
        s = Staging(base)
        ca = CA("test-ca")
        client = ca.issue("client")
        with open(os.path.join(s.conf_dir, "secrets", "demo-ca"), "wb") as f:
            f.write(ca.cert_pem + ca.crl_pem())
        with open(os.path.join(s.conf_dir, "secrets", "demo-client"), "wb") as f:
            f.write(client.cert_pem + client.key_pem)
        yield s
    finally:
        shutil.rmtree(base, ignore_errors=True)


def resolved(staging: Staging, name: str, spec: dict[str, Any] | None, *, error: str = "") -> ResolvedPolicy:
    secrets_dir = os.path.join(staging.conf_dir, "secrets")
    ca = PolicySecret(f"{NS}/ca", "nginx.org/ca", os.path.join(secrets_dir, "demo-ca"),
                      crl_path=os.path.join(secrets_dir, "demo-ca"))
    client = PolicySecret(f"{NS}/client", "kubernetes.io/tls", os.path.join(secrets_dir, "demo-client"))
    secrets = {"clientCertSecret": ca, "trustedCertSecret": ca, "tlsSecret": client}
    return ResolvedPolicy(f"{NS}/{name}", None if spec is None else policy(name, NS, spec), error, secrets)


def ingress(name: str, host: str, paths: list[str], *, tls: bool = True,
            mergeable: str = "") -> dict[str, Any]:
    ann = {"nginx.org/mergeable-ingress-type": mergeable} if mergeable else {}
    rule: dict[str, Any] = {"host": host}
    if paths:
        rule["http"] = {"paths": [{"path": p, "pathType": "Prefix", "backend": {
            "service": {"name": "svc", "port": {"number": 80}}}} for p in paths]}
    spec: dict[str, Any] = {"rules": [rule]}
    if tls:
        spec["tls"] = [{"hosts": [host], "secretName": "tls"}]
    return {"metadata": {"name": name, "namespace": NS, "annotations": ann}, "spec": spec}


def ex(staging: Staging, obj: dict[str, Any], policies: list[ResolvedPolicy] | None,
       **kw: Any) -> IngressEx:
    tls = SecretReference(f"{NS}/tls", path=os.path.join(staging.conf_dir, "secrets", "default-tls"),
                          secret_type="kubernetes.io/tls")
    host = obj["spec"]["rules"][0]["host"]
    return IngressEx(obj, {host: True}, {"svc:80": ["127.0.0.1:8081"]}, secret_refs={"tls": tls},
                     policies=None if policies is None else tuple(policies),
                     policy_endpoints={"auth-ns/auth:8080": ("127.0.0.1:9999",)}, **kw)


def nginx_t(staging: Staging, text: str) -> None:
    main = TEMPLATES.execute_main_template(generate_main_config(staging.static, ConfigParams()))
    ok, out = staging.nginx_t(Rendered(text, main))
    assert ok, f"{out}\n{text}"


def render(staging: Staging, e: IngressEx) -> tuple[str, list[str]]:
    cfg, warnings = generate_nginx_config(e, staging.static, ConfigParams())
    text = TEMPLATES.execute_ingress_template(cfg)
    nginx_t(staging, text)
    return text, warnings


def server_block(text: str) -> str:
    return text[text.index("\nserver {"):]


def test_every_supported_type_at_server_level_loads(staging: Staging) -> None:
    pols = [resolved(staging, "ac", {"accessControl": {"allow": ["10.0.0.0/8"]}}),
            resolved(staging, "cors", {"cors": CORS}),
            resolved(staging, "egress", {"egressMTLS": EGRESS}),
            resolved(staging, "auth", {"externalAuth": EXAUTH}),
            resolved(staging, "mtls", {"ingressMTLS": {"clientCertSecret": "ca", "verifyDepth": 2}})]
    text, warnings = render(staging, ex(staging, ingress("all", "all.example.com", ["/", "/api"]), pols))
    assert warnings == []
    server = server_block(text)
    assert "return 500;" not in text
    for line in ("allow 10.0.0.0/8;", "deny all;", "proxy_ssl_verify on;",
                 "proxy_ssl_name backend.example.com;", 'auth_request "/_external_auth/auth";',
                 "ssl_verify_client on;", "ssl_verify_depth 2;",
                 'error_page 401 "https://$host/oauth2/start?rd=${request_uri}";',
                 'location = "/_external_auth/auth" {', 'location "/oauth2" {'):
        assert line in server, line
    # The CA Secret carries a CRL: ssl_crl reads the same file.
    assert re.search(r"ssl_crl \S+/demo-ca;", server)
    # CORS goes into the three locations (`/`, `= /api`, `/api/`), twice each (response and preflight); its
    # map and externalAuth's upstream at http level.
    origin = "add_header Access-Control-Allow-Origin $cors_origin_demo_all_ing_demo_cors always;"
    assert text.count(origin) == 6
    assert "map $http_origin $cors_origin_demo_all_ing_demo_cors {" in text
    assert '"~^https://[^.]+\\\\.example\\\\.org$" $http_origin;' in text
    assert "upstream ing_demo_all_exauth_demo_auth {" in text and "server 127.0.0.1:9999;" in text


@pytest.mark.parametrize(("refs", "warning"), [
    ([("rl", {"rateLimit": {"rate": "1r/s", "key": "${binary_remote_addr}", "zoneSize": "1m"}})],
     "Policy demo/rl of type rateLimit is not supported on Ingress resources"),
    ([("cache", {"cache": {"cacheZoneName": "c", "cacheZoneSize": "1m"}})],
     "Policy demo/cache of type cache is not supported on Ingress resources"),
    ([("missing", None)], "Policy demo/missing is missing or invalid"),
    ([("ac", {"accessControl": {"allow": ["10.0.0.1"]}}), ("bad", {"cors": {}})],
     "Policy demo/bad is missing or invalid"),
])
def test_unsupported_missing_or_invalid_policies_fail_the_server_closed(
        staging: Staging, refs: list[tuple[str, dict[str, Any] | None]], warning: str) -> None:
    pols = [resolved(staging, n, s, error="spec.cors.allowOrigin: Required value" if n == "bad" else "")
            for n, s in refs]
    text, warnings = render(staging, ex(staging, ingress("bad", "bad.example.com", ["/"]), pols))
    assert warning in warnings
    server = server_block(text)
    assert server.index("return 500;") < server.index("server_name")
    assert "allow 10.0.0.1" not in text


def test_ingress_mtls_needs_tls_and_a_server(staging: Staging) -> None:
    mtls = resolved(staging, "mtls", {"ingressMTLS": {"clientCertSecret": "ca"}})
    text, warnings = render(staging, ex(staging, ingress("plain", "plain.example.com", ["/"], tls=False),
                                        [mtls]))
    assert "TLS must be enabled in Ingress for IngressMTLS policy demo/mtls" in warnings
    assert "return 500;" in server_block(text)


def test_policies_of_minions_go_to_their_locations(staging: Staging) -> None:
    master = ex(staging, ingress("master", "m.example.com", [], mergeable="master"),
                [resolved(staging, "cors", {"cors": {"allowOrigin": ["*"]}})])
    m1 = ex(staging, ingress("m1", "m.example.com", ["/one"], tls=False, mergeable="minion"),
            [resolved(staging, "ac", {"accessControl": {"deny": ["10.1.0.0/16"]}}),
             resolved(staging, "auth", {"externalAuth": EXAUTH})],
            valid_minion_paths={"/one": True})
    m2 = ex(staging, ingress("m2", "m.example.com", ["/two"], tls=False, mergeable="minion"),
            [resolved(staging, "mtls", {"ingressMTLS": {"clientCertSecret": "ca"}})],
            valid_minion_paths={"/two": True})
    m3 = ex(staging, ingress("m3", "m.example.com", ["/three"], tls=False, mergeable="minion"),
            [resolved(staging, "own", {"cors": {"allowOrigin": ["https://own.example.com"]}})],
            valid_minion_paths={"/three": True})
    result = generate_nginx_config_for_mergeable(MergeableIngresses(master, [m1, m2, m3]), staging.static,
                                                 ConfigParams())
    text = TEMPLATES.execute_ingress_template(result.config)
    nginx_t(staging, text)
    assert result.minion_warnings["demo/m2"] == ["IngressMTLS policy demo/mtls is not allowed on a minion "
                                                 "Ingress"]
    blocks = {m.group(1): m.group(0) for m in re.finditer(r"location \S* ?(/\w+)/ \{.*?\n    \}", text, re.S)}
    assert "deny 10.1.0.0/16;" in blocks["/one"] and 'auth_request "/_external_auth/auth";' in blocks["/one"]
    assert 'Access-Control-Allow-Origin "*"' in blocks["/one"]         # the master's CORS
    assert "return 500;" in blocks["/two"] and "return 500;" not in blocks["/one"]
    assert 'Access-Control-Allow-Origin "https://own.example.com"' in blocks["/three"]
    assert 'Access-Control-Allow-Origin "*"' not in blocks["/three"]   # its own CORS wins
    assert "upstream ing_demo_m1_exauth_demo_auth {" in text
    assert text.count("return 500;") == 2     # /two as `location = /two` and `location /two/`


def test_without_the_annotation_nothing_changes(staging: Staging) -> None:
    obj = ingress("none", "none.example.com", ["/"])
    with_none, _ = render(staging, ex(staging, obj, None))
    with_empty, _ = render(staging, ex(staging, obj, []))
    assert with_none == with_empty


def test_a_minion_auth_location_colliding_with_the_masters_is_left_out(staging: Staging) -> None:
    other = {**EXAUTH, "authServiceName": "auth-ns/other"}
    master = ex(staging, ingress("master", "x.example.com", [], mergeable="master"),
                [resolved(staging, "auth", {"externalAuth": EXAUTH})])
    minion = ex(staging, ingress("m1", "x.example.com", ["/one"], tls=False, mergeable="minion"),
                [resolved(staging, "other", {"externalAuth": other})], valid_minion_paths={"/one": True})
    result = generate_nginx_config_for_mergeable(MergeableIngresses(master, [minion]), staging.static,
                                                 ConfigParams())
    text = TEMPLATES.execute_ingress_template(result.config)
    nginx_t(staging, text)
    assert text.count('location = "/_external_auth/auth" {') == 1
    assert "proxy_pass \"http://ing_demo_master_exauth_demo_auth/auth\";" in text
    assert result.minion_warnings["demo/m1"] == [
        f"location {path} of a policy is already defined by another policy of the server; ignored"
        for path in ('= "/_external_auth/auth"', '"/oauth2"')]


def test_ingress_mtls_skips_the_hosts_without_tls_with_a_warning(staging: Staging) -> None:
    obj = ingress("two", "secure.example.com", ["/"])
    obj["spec"]["rules"].append({"host": "plain.example.com", "http": obj["spec"]["rules"][0]["http"]})
    e = ex(staging, obj, [resolved(staging, "mtls", {"ingressMTLS": {"clientCertSecret": "ca"}})])
    e.valid_hosts["plain.example.com"] = True
    text, warnings = render(staging, e)
    assert warnings == ["IngressMTLS policy demo/mtls is ignored for a host without TLS"]
    secure = text.split("server_name secure.example.com;")[1]
    plain = text.split("server_name plain.example.com;")[1]
    assert "ssl_verify_client on;" in secure.split("server {")[0]
    assert "ssl_verify_client" not in plain and "return 500;" not in text


def test_locations_with_cors_headers_keep_the_servers_own_headers(staging: Staging) -> None:
    obj = ingress("hdr", "hdr.example.com", ["/"])
    obj["metadata"]["annotations"] = {"nginx.org/hsts": "true",
                                      "nginx.org/add-header": "X-Frame-Options: DENY"}
    text, _ = render(staging, ex(staging, obj, [resolved(staging, "cors", {"cors": {"allowOrigin": ["*"]}})]))
    location = text[text.index("    location / {"):]
    assert 'add_header Strict-Transport-Security "$hsts_header_val" always;' in location
    assert 'add_header X-Frame-Options "DENY";' in location
    assert location.index("X-Frame-Options") < location.index("Access-Control-Allow-Origin")
