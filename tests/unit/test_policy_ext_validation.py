"""Validation of the ingressMTLS, egressMTLS, cache, cors and externalAuth Policy types."""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.policies.cache import validate_cache
from ingressctl.policies.cors import validate_cors
from ingressctl.policies.egress_mtls import validate_egress_mtls
from ingressctl.policies.external_auth import validate_external_auth
from ingressctl.policies.ingress_mtls import validate_ingress_mtls


def msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


# ---------------------------------------------------------------------------------------------- ingressMTLS

def test_ingress_mtls_valid_and_defaults() -> None:
    assert validate_ingress_mtls("spec.ingressMTLS", {"clientCertSecret": "ca"}) == []
    assert validate_ingress_mtls("spec.ingressMTLS", {"clientCertSecret": "ca", "verifyClient": "optional",
                                                      "verifyDepth": 0, "crlFileName": "web.crl"}) == []


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, "spec.ingressMTLS.clientCertSecret: Required value"),
    ({"clientCertSecret": "Bad_Name"}, 'spec.ingressMTLS.clientCertSecret: Invalid value: "Bad_Name": a '
                                       "lowercase RFC 1123 subdomain"),
    ({"clientCertSecret": "ca", "verifyClient": "maybe"},
     'spec.ingressMTLS.verifyClient: Unsupported value: "maybe": supported values: "on", "off", "optional", '
     '"optional_no_ca"'),
    ({"clientCertSecret": "ca", "verifyDepth": -1},
     "spec.ingressMTLS.verifyDepth: Invalid value: -1: must be positive or zero"),
    ({"clientCertSecret": "ca", "crlFileName": "../etc/passwd"},
     "spec.ingressMTLS.crlFileName: Invalid value"),
    ({"clientCertSecret": "ca", "crlFileName": "a;b"}, "spec.ingressMTLS.crlFileName: Invalid value"),
])
def test_ingress_mtls_errors(spec: dict[str, Any], expected: str) -> None:
    errors = msgs(validate_ingress_mtls("spec.ingressMTLS", spec))
    assert any(e.startswith(expected) for e in errors), errors


# ---------------------------------------------------------------------------------------------- egressMTLS

def test_egress_mtls_valid() -> None:
    assert validate_egress_mtls("spec.egressMTLS", {}) == []
    assert validate_egress_mtls("spec.egressMTLS", {
        "tlsSecret": "client", "trustedCertSecret": "ca", "verifyServer": True, "verifyDepth": 2,
        "sessionReuse": False, "serverName": True, "sslName": "backend.example.com",
        "protocols": "TLSv1.2 TLSv1.3", "ciphers": "HIGH:!aNULL:!MD5"}) == []


@pytest.mark.parametrize(("spec", "expected"), [
    ({"verifyServer": True},
     "spec.egressMTLS.trustedCertSecret: Required value: must be set when verifyServer is 'true'"),
    ({"tlsSecret": "UP"}, 'spec.egressMTLS.tlsSecret: Invalid value: "UP"'),
    ({"sslName": "bad name"}, 'spec.egressMTLS.sslName: Invalid value: "bad name"'),
    ({"verifyDepth": -2}, "spec.egressMTLS.verifyDepth: Invalid value: -2: must be positive or zero"),
    ({"protocols": "TLSv1.2; evil"}, 'spec.egressMTLS.protocols: Invalid value: "TLSv1.2; evil"'),
    ({"protocols": "TLSv9"}, 'spec.egressMTLS.protocols: Invalid value: "TLSv9"'),
    ({"ciphers": "HIGH;evil"}, 'spec.egressMTLS.ciphers: Invalid value: "HIGH;evil"'),
    ({"ciphers": "NOSUCHCIPHER"}, "spec.egressMTLS.ciphers: Invalid value: \"NOSUCHCIPHER\": must be an "
                                  "OpenSSL cipher list that selects at least one cipher"),
    ({"serverName": "yes"}, 'spec.egressMTLS.serverName: Invalid value: "yes": must be a boolean'),
])
def test_egress_mtls_errors(spec: dict[str, Any], expected: str) -> None:
    errors = msgs(validate_egress_mtls("spec.egressMTLS", spec))
    assert any(e.startswith(expected) for e in errors), errors


# ---------------------------------------------------------------------------------------------- cache

FULL_CACHE = {
    "cacheZoneName": "mycache", "cacheZoneSize": "10m", "levels": "1:2", "inactive": "60m", "maxSize": "1g",
    "minFree": "100m", "useTempPath": True, "manager": {"files": 100, "sleep": "50ms", "threshold": "200ms"},
    "allowedCodes": [200, 301, 404], "time": "30s", "allowedMethods": ["GET", "HEAD", "POST"],
    "cacheKey": "$scheme$host$request_uri", "overrideUpstreamCache": True,
    "cacheUseStale": ["error", "timeout", "updating"], "cacheRevalidate": True, "cacheBackgroundUpdate": True,
    "cacheMinUses": 2, "lock": {"enable": True, "timeout": "5s", "age": "10s"},
    "conditions": {"noCache": ["$cookie_nocache", "$arg_nocache"], "bypass": ["$http_pragma"]},
}


def test_cache_valid() -> None:
    assert validate_cache("spec.cache", {"cacheZoneName": "c", "cacheZoneSize": "1m"}) == []
    assert validate_cache("spec.cache", FULL_CACHE) == []
    assert validate_cache("spec.cache", {**FULL_CACHE, "allowedCodes": ["any"]}) == []


@pytest.mark.parametrize(("change", "expected"), [
    ({"cacheZoneName": None}, "spec.cache.cacheZoneName: Required value"),
    ({"cacheZoneName": "Bad"}, 'spec.cache.cacheZoneName: Invalid value: "Bad"'),
    ({"cacheZoneName": "a_"}, 'spec.cache.cacheZoneName: Invalid value: "a_"'),
    ({"cacheZoneSize": "10"}, 'spec.cache.cacheZoneSize: Invalid value: "10"'),
    ({"levels": "1:3"}, 'spec.cache.levels: Invalid value: "1:3"'),
    ({"levels": "1:2:2:2"}, 'spec.cache.levels: Invalid value: "1:2:2:2"'),
    ({"inactive": "10x"}, 'spec.cache.inactive: Invalid value: "10x"'),
    ({"maxSize": "1t"}, 'spec.cache.maxSize: Invalid value: "1t"'),
    ({"manager": {"files": 0}}, "spec.cache.manager.files: Invalid value: 0: must be at least 1"),
    ({"manager": {"sleep": "1m"}}, 'spec.cache.manager.sleep: Invalid value: "1m"'),
    ({"time": None}, "spec.cache.time: Required value: time is required when allowedCodes is set"),
    ({"allowedCodes": [99]}, "spec.cache.allowedCodes[0]: Invalid value: 99"),
    ({"allowedCodes": ["any", 200]}, 'spec.cache.allowedCodes[0]: Invalid value: "any": the string \'any\''),
    ({"allowedMethods": ["PUT"]}, 'spec.cache.allowedMethods[0]: Unsupported value: "PUT"'),
    ({"allowedMethods": ["GET", "GET"]}, 'spec.cache.allowedMethods[1]: Duplicate value: "GET"'),
    ({"cacheKey": "$host;evil"}, "spec.cache.cacheKey: Invalid value: \"$host;evil\": must not contain ';'"),
    ({"cacheKey": "$(id)"}, "spec.cache.cacheKey: Invalid value: \"$(id)\": must not contain '$('"),
    ({"cacheKey": "$host$"}, "spec.cache.cacheKey: Invalid value: \"$host$\": must not end with '$'"),
    ({"cacheKey": "$nosuchvar"}, 'spec.cache.cacheKey: Invalid value: "$nosuchvar": unknown NGINX variable'),
    ({"cacheKey": "a" * 1025}, "spec.cache.cacheKey: Invalid value"),
    ({"cacheUseStale": ["sometimes"]}, 'spec.cache.cacheUseStale[0]: Unsupported value: "sometimes"'),
    ({"cacheMinUses": 0}, "spec.cache.cacheMinUses: Invalid value: 0: must be at least 1"),
    ({"lock": {"timeout": "5s"}}, "spec.cache.lock.timeout: Forbidden: lock timeout and age require"),
    ({"conditions": {"noCache": ["$cookie_x y"]}}, 'spec.cache.conditions.noCache[0]: Invalid value'),
    ({"conditions": {"bypass": ["$bogus_var"]}}, 'spec.cache.conditions.bypass[0]: Invalid value'),
    ({"cachePurgeAllow": ["10.0.0.0/8"]}, "spec.cache.cachePurgeAllow: Forbidden: cache purge is only "
                                          "supported in NGINX Plus"),
])
def test_cache_errors(change: dict[str, Any], expected: str) -> None:
    spec = {k: v for k, v in {**FULL_CACHE, **change}.items() if v is not None}
    errors = msgs(validate_cache("spec.cache", spec))
    assert any(e.startswith(expected) for e in errors), errors


# ---------------------------------------------------------------------------------------------- cors

def test_cors_valid() -> None:
    assert validate_cors("spec.cors", {"allowOrigin": ["*"]}) == []
    assert validate_cors("spec.cors", {
        "allowOrigin": ["https://app.example.com", "http://localhost:3000", "https://*.example.org"],
        "allowMethods": ["GET", "POST", "OPTIONS"], "allowHeaders": ["Content-Type", "X-Token"],
        "allowCredentials": True, "exposeHeaders": ["X-Request-Id"], "maxAge": 0}) == []


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, "spec.cors.allowOrigin: Required value"),
    ({"allowOrigin": ["*", "https://a.com"]}, 'spec.cors.allowOrigin[0]: Invalid value: "*"'),
    ({"allowOrigin": ["https://a.com/path"]}, 'spec.cors.allowOrigin[0]: Invalid value: "https://a.com/path"'),
    ({"allowOrigin": ["https://user@a.com"]}, 'spec.cors.allowOrigin[0]: Invalid value'),
    ({"allowOrigin": ["ftp://a.com"]}, 'spec.cors.allowOrigin[0]: Invalid value'),
    ({"allowOrigin": ["https://*.com"]}, 'spec.cors.allowOrigin[0]: Invalid value: "https://*.com"'),
    ({"allowOrigin": ["https://*.*.a.com"]}, 'spec.cors.allowOrigin[0]: Invalid value'),
    ({"allowOrigin": ['https://a.com";evil']}, 'spec.cors.allowOrigin[0]: Invalid value'),
    ({"allowOrigin": ["https://a.com:70000"]}, 'spec.cors.allowOrigin[0]: Invalid value'),
    ({"allowOrigin": ["https://a.com", "https://a.com"]}, 'spec.cors.allowOrigin[1]: Duplicate value'),
    ({"allowOrigin": ["*"], "allowMethods": ["TRACE"]}, 'spec.cors.allowMethods[0]: Unsupported value'),
    ({"allowOrigin": ["*"], "allowMethods": ["GET", "HEAD"]}, "spec.cors.allowMethods: Invalid value"),
    ({"allowOrigin": ["*"], "allowHeaders": ["Cookie"]}, "spec.cors.allowHeaders[0]: Forbidden"),
    ({"allowOrigin": ["*"], "allowHeaders": ["Sec-Fetch-Mode"]}, "spec.cors.allowHeaders[0]: Forbidden"),
    ({"allowOrigin": ["*"], "allowHeaders": ["X A"]}, 'spec.cors.allowHeaders[0]: Invalid value: "X A"'),
    ({"allowOrigin": ["*"], "exposeHeaders": ["Set-Cookie"]}, "spec.cors.exposeHeaders[0]: Forbidden"),
    ({"allowOrigin": ["*"], "allowCredentials": True}, "spec.cors.allowCredentials: Forbidden"),
    ({"allowOrigin": ["*"], "maxAge": -1}, "spec.cors.maxAge: Invalid value: -1"),
])
def test_cors_errors(spec: dict[str, Any], expected: str) -> None:
    errors = msgs(validate_cors("spec.cors", spec))
    assert any(e.startswith(expected) for e in errors), errors


# ---------------------------------------------------------------------------------------------- externalAuth

def test_external_auth_valid() -> None:
    assert validate_external_auth("spec.externalAuth", {"authURI": "/auth", "authServiceName": "auth"},
                                  enable_snippets=False) == []
    assert validate_external_auth("spec.externalAuth", {
        "authURI": "/oauth2/auth", "authServiceName": "auth-ns/oauth2-proxy", "authServicePorts": [4180],
        "authSigninURI": "https://$host/oauth2/start?rd=${request_uri}",
        "authSigninRedirectBasePath": "/oauth2",
        "authSnippets": "proxy_set_header X-Extra 1;", "sslEnabled": True, "sslVerify": True,
        "sslVerifyDepth": 2, "trustedCertSecret": "auth-ns/ca", "sniName": "auth.example.com"},
        enable_snippets=True) == []


@pytest.mark.parametrize(("spec", "expected"), [
    ({"authServiceName": "a"}, "spec.externalAuth.authURI: Required value"),
    ({"authURI": "/a"}, "spec.externalAuth.authServiceName: Required value"),
    ({"authURI": "auth", "authServiceName": "a"}, 'spec.externalAuth.authURI: Invalid value: "auth"'),
    ({"authURI": "/a;evil", "authServiceName": "a"}, "spec.externalAuth.authURI: Invalid value"),
    ({"authURI": "/a/../b", "authServiceName": "a"}, "spec.externalAuth.authURI: Invalid value"),
    ({"authURI": "//evil.com/a", "authServiceName": "a"}, "spec.externalAuth.authURI: Invalid value"),
    ({"authURI": "/a", "authServiceName": "Bad_Svc"}, "spec.externalAuth.authServiceName: Invalid value"),
    ({"authURI": "/a", "authServiceName": "BAD/svc"}, "spec.externalAuth.authServiceName: Invalid value"),
    ({"authURI": "/a", "authServiceName": "a", "authServicePorts": [0]},
     "spec.externalAuth.authServicePorts[0]: Invalid value: 0"),
    ({"authURI": "/a", "authServiceName": "a", "authSigninURI": "/s $evil"},
     "spec.externalAuth.authSigninURI: Invalid value"),
    ({"authURI": "/a", "authServiceName": "a", "authSigninURI": "/s?x=$remote_addr"},
     "spec.externalAuth.authSigninURI: Invalid value"),
    ({"authURI": "/a", "authServiceName": "a", "authSigninRedirectBasePath": "x"},
     "spec.externalAuth.authSigninRedirectBasePath: Invalid value"),
    ({"authURI": "/a", "authServiceName": "a", "authSnippets": "deny all;"},
     "spec.externalAuth.authSnippets: Forbidden: snippets are not enabled"),
    ({"authURI": "/a", "authServiceName": "a", "sslVerify": True},
     "spec.externalAuth.sslVerify: Forbidden: sslVerify requires sslEnabled"),
    ({"authURI": "/a", "authServiceName": "a", "sslEnabled": True, "trustedCertSecret": "ca"},
     "spec.externalAuth.trustedCertSecret: Forbidden: trustedCertSecret requires sslVerify"),
    ({"authURI": "/a", "authServiceName": "a", "sslVerifyDepth": -1},
     "spec.externalAuth.sslVerifyDepth: Invalid value: -1"),
    ({"authURI": "/a", "authServiceName": "a", "sniName": "x;y"}, "spec.externalAuth.sniName: Invalid value"),
])
def test_external_auth_errors(spec: dict[str, Any], expected: str) -> None:
    errors = msgs(validate_external_auth("spec.externalAuth", spec, enable_snippets=False))
    assert any(e.startswith(expected) for e in errors), errors
