"""The renderers of ingressMTLS, egressMTLS, cache, cors and externalAuth through the shared generator: NIC's
names, levels, "one per context" rules, fail-closed errors, and VirtualServer precedence."""

from __future__ import annotations

from typing import Any

from ingressctl.kinds.virtualserver.policies import VSPolicies
from ingressctl.policies.base import (
    LEVEL_ROUTE,
    LEVEL_SPEC,
    LEVEL_SUBROUTE,
    PolicyContext,
    PolicySecret,
    ResolvedPolicy,
)
from ingressctl.policies.generator import generate_policies

CA = PolicySecret("ns/ca", "nginx.org/ca", "/s/ns-ca")
CA_CRL = PolicySecret("ns/ca", "nginx.org/ca", "/s/ns-ca", crl_path="/s/ns-ca")
CLIENT = PolicySecret("ns/client", "kubernetes.io/tls", "/s/ns-client")


def ref(name: str, spec: dict[str, Any], **secrets: PolicySecret) -> ResolvedPolicy:
    return ResolvedPolicy(f"ns/{name}", {"metadata": {"name": name, "namespace": "ns"}, "spec": spec},
                          secrets=secrets)


def ctx(level: str = LEVEL_ROUTE, **kw: Any) -> PolicyContext:
    return PolicyContext("virtualserver", "ns", "cafe", level, cache_dir="/cache", secrets_dir="/s",
                         error_server="unix:/run/502.sock", **kw)


def test_ingress_mtls_server_only_with_tls_one_per_server_and_crl_choice() -> None:
    mtls = {"ingressMTLS": {"clientCertSecret": "ca", "verifyClient": "optional", "verifyDepth": 3}}
    r = generate_policies([ref("m", mtls, clientCertSecret=CA_CRL)], ctx(LEVEL_SPEC, tls=True))
    assert r.error == "" and r.server == ["ssl_client_certificate /s/ns-ca;", "ssl_crl /s/ns-ca;",
                                          "ssl_verify_client optional;", "ssl_verify_depth 3;"]
    r = generate_policies([ref("m", mtls, clientCertSecret=CA)], ctx(LEVEL_ROUTE, tls=True))
    assert r.error == "IngressMTLS policy ns/m is not allowed in the route context"
    r = generate_policies([ref("m", mtls, clientCertSecret=CA)], ctx(LEVEL_SPEC, tls=False))
    assert r.error == "TLS must be enabled in VirtualServer for IngressMTLS policy ns/m"
    both = {"ingressMTLS": {"clientCertSecret": "ca", "crlFileName": "list.crl"}}
    r = generate_policies([ref("m", both, clientCertSecret=CA_CRL), ref("n", mtls, clientCertSecret=CA)],
                          ctx(LEVEL_SPEC, tls=True))
    assert "ssl_crl /s/list.crl;" in r.server and "ssl_verify_client on;" in r.server
    assert "if ($ssl_client_verify != SUCCESS) { return 400; }" in r.server
    assert any("ca.crl in ns/ca will be ignored and list.crl will be applied" in w for w in r.warnings)
    assert "Multiple IngressMTLS policies in the same context is not valid. IngressMTLS policy ns/n will " \
           "be ignored" in r.warnings


def test_ingress_mtls_secret_of_a_wrong_type_fails_closed() -> None:
    wrong = PolicySecret("ns/ca", "kubernetes.io/tls", "/s/ns-ca")
    r = generate_policies([ref("m", {"ingressMTLS": {"clientCertSecret": "ca"}}, clientCertSecret=wrong)],
                          ctx(LEVEL_SPEC, tls=True))
    assert r.error == ("IngressMTLS secret ns/ca is of a wrong type 'kubernetes.io/tls', must be "
                       "'nginx.org/ca'")
    assert r.server == [] and r.location == []


def test_egress_mtls_defaults_and_first_wins() -> None:
    r = generate_policies([ref("e", {"egressMTLS": {"tlsSecret": "client"}}, tlsSecret=CLIENT),
                           ref("f", {"egressMTLS": {"sslName": "x.example.com"}})], ctx())
    assert r.location[:2] == ["proxy_ssl_certificate /s/ns-client;",
                              "proxy_ssl_certificate_key /s/ns-client;"]
    for line in ("proxy_ssl_verify off;", "proxy_ssl_verify_depth 1;",
                 "proxy_ssl_protocols TLSv1 TLSv1.1 TLSv1.2;",
                 "proxy_ssl_ciphers DEFAULT;", "proxy_ssl_session_reuse on;", "proxy_ssl_server_name off;",
                 "proxy_ssl_name $proxy_host;", "grpc_ssl_name $proxy_host;"):
        assert line in r.location, line
    assert "x.example.com" not in " ".join(r.location)
    assert "EgressMTLS policy ns/f will be ignored" in " ".join(r.warnings)
    r = generate_policies([ref("e", {"egressMTLS": {"tlsSecret": "client"}}, tlsSecret=CLIENT)],
                          ctx(LEVEL_SPEC))
    assert r.location == [] and "proxy_ssl_certificate /s/ns-client;" in r.server


def test_cache_zone_names_per_owner_and_subroute() -> None:
    spec = {"cache": {"cacheZoneName": "menu", "cacheZoneSize": "10m", "time": "1m"}}
    r = generate_policies([ref("c", spec)], ctx())
    assert r.http == ["proxy_cache_path /cache/ns_cafe_vs_menu keys_zone=ns_cafe_vs_menu:10m "
                      "use_temp_path=off;"]
    assert r.location == ["proxy_cache ns_cafe_vs_menu;", 'proxy_cache_key "$scheme$proxy_host$request_uri";',
                          "proxy_cache_valid 1m;"]
    r = generate_policies([ref("c", spec), ref("d", spec)],
                          ctx(LEVEL_SUBROUTE, vsr_namespace="other-ns", vsr_name="tea"))
    assert r.http[0].startswith("proxy_cache_path /cache/ns_cafe_vs_other_ns_tea_menu ")
    assert "Cache policy ns/d will be ignored" in " ".join(r.warnings)
    r = generate_policies([ref("c", {"cache": {**spec["cache"], "allowedCodes": ["any"],
                                               "overrideUpstreamCache": True}})], ctx(LEVEL_SPEC))
    assert "proxy_cache_valid any 1m;" in r.server
    assert "proxy_ignore_headers Cache-Control Expires Set-Cookie Vary X-Accel-Expires;" in r.server


def test_cors_origin_forms_and_spec_level_goes_to_the_locations() -> None:
    r = generate_policies([ref("c", {"cors": {"allowOrigin": ["*"]}})], ctx())
    assert r.http == [] and 'add_header Access-Control-Allow-Origin "*" always;' in r.location
    assert not any("Vary" in line for line in r.location)
    r = generate_policies([ref("c", {"cors": {"allowOrigin": ["https://a.example.com"]}})], ctx())
    assert r.http == [] and 'add_header Vary "Origin" always;' in r.location
    assert 'add_header Access-Control-Allow-Origin "https://a.example.com" always;' in r.location
    r = generate_policies([ref("c", {"cors": {"allowOrigin": ["https://*.example.com"]}})], ctx(LEVEL_SPEC))
    assert r.http == ["\n".join(["map $http_origin $cors_origin_ns_cafe_vs_ns_c {", '    default "";',
                                 '    "~^https://[^.]+\\\\.example\\\\.com$" $http_origin;', "}"])]
    assert r.server == [] and r.location == []
    origin = "add_header Access-Control-Allow-Origin $cors_origin_ns_cafe_vs_ns_c always;"
    assert origin in r.inherited["cors"]


def test_external_auth_names_endpoints_and_signin() -> None:
    spec = {"externalAuth": {"authURI": "/check", "authServiceName": "auth-ns/auth",
                             "authSigninURI": "/login", "authSigninRedirectBasePath": "/start"}}
    r = generate_policies([ref("a", spec)], ctx(endpoints={"auth-ns/auth:80": ("10.0.0.9:8080",)}))
    assert r.http == ["upstream vs_ns_cafe_vs_exauth_ns_a {\n    server 10.0.0.9:8080;\n}"]
    assert r.location == ['auth_request "/_external_auth/check";', 'error_page 401 "/login";']
    internal, signin = r.locations
    assert internal.path == '= "/_external_auth/check"' and "internal;" in internal.lines
    assert 'proxy_pass "http://vs_ns_cafe_vs_exauth_ns_a/check";' in internal.lines
    assert signin.path == '"/start"' and "auth_request off;" in signin.lines
    # Without endpoints the upstream is the 502 server: auth_request then fails the request (500).
    r = generate_policies([ref("a", spec)], ctx())
    assert r.http == ["upstream vs_ns_cafe_vs_exauth_ns_a {\n    server unix:/run/502.sock;\n}"]
    ing = PolicyContext("ingress", "ns", "cafe-ing", "server",
                        endpoints={"auth-ns/auth:80": ("10.0.0.9:80",)})
    r = generate_policies([ref("a", spec)], ing)
    assert r.http[0].startswith("upstream ing_ns_cafe-ing_exauth_ns_a {")
    assert r.server[0] == 'auth_request "/_external_auth/check";'


def test_two_external_auth_policies_with_one_auth_uri_keep_the_first_location() -> None:
    one = ref("one", {"externalAuth": {"authURI": "/auth", "authServiceName": "a"}})
    two = ref("two", {"externalAuth": {"authURI": "/auth", "authServiceName": "b"}})
    vs = VSPolicies({"ns/one": one, "ns/two": two}, "ns", "cafe", tls=False)
    vs.route([{"name": "one"}], "/x")
    r = vs.route([{"name": "two"}], "/y")
    assert [loc.path for loc in vs.locations] == ['= "/_external_auth/auth"']
    assert "is already defined by another policy; ignored" in " ".join(r.warnings)


def test_two_cache_policies_defining_one_zone_differently_fail_the_later_context() -> None:
    small = ref("small", {"cache": {"cacheZoneName": "menu", "cacheZoneSize": "1m"}})
    big = ref("big", {"cache": {"cacheZoneName": "menu", "cacheZoneSize": "10m"}})
    vs = VSPolicies({"ns/small": small, "ns/big": big}, "ns", "cafe", tls=False)
    assert vs.route([{"name": "small"}], "/a").error == ""
    assert vs.route([{"name": "small"}], "/b").error == ""         # the same zone again: fine
    r = vs.route([{"name": "big"}], "/c")
    assert r.error == ("cache zone ns_cafe_vs_menu is already defined by another cache policy with other "
                       "parameters")
    assert [line for line in vs.http if line.startswith("proxy_cache_path")] == [
        "proxy_cache_path /var/cache/nginx/ns_cafe_vs_menu keys_zone=ns_cafe_vs_menu:1m use_temp_path=off;"]
