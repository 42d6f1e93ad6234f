"""The shared policy generator: fail-closed contexts, the type list, Secret type checks and the renderers of
accessControl, rateLimit, basicAuth, apiKey, jwt and oidc."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from ingressctl.policies import POLICY_TYPES_BY_KEY, generator
from ingressctl.policies.api_key import apikey_map_entries
from ingressctl.policies.base import (
    LEVEL_ROUTE,
    LEVEL_SPEC,
    PolicyContext,
    PolicyResult,
    PolicySecret,
    ResolvedPolicy,
    dedupe,
)
from ingressctl.policies.generator import generate_policies


def pol(name: str, ns: str = "demo", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


def ref(name: str, secrets: Mapping[str, PolicySecret] | None = None, *, ns: str = "demo",
        **spec: Any) -> ResolvedPolicy:
    return ResolvedPolicy(f"{ns}/{name}", pol(name, ns, **spec), secrets=secrets or {})


def ctx(level: str = LEVEL_ROUTE, **kw: Any) -> PolicyContext:
    return PolicyContext("virtualserver", "demo", "cafe", level, **kw)


def test_missing_or_invalid_policy_fails_the_context_closed() -> None:
    ok = ref("allow", accessControl={"allow": ["10.0.0.1"]})
    result = generate_policies([ok, ResolvedPolicy("demo/nope")], ctx())
    assert result.error == "Policy demo/nope is missing or invalid"
    assert result.lines == [] and result.http == []
    assert result.warnings == ["Policy demo/nope is missing or invalid"]
    invalid = ResolvedPolicy("demo/bad", pol("bad", rateLimit={}),
                             error="spec.rateLimit.rate: Required value")
    assert generate_policies([invalid], ctx()).error == "Policy demo/bad is missing or invalid"


def test_access_control_concatenates_and_allow_wins() -> None:
    a = ref("a", accessControl={"allow": ["127.0.0.1"]})
    b = ref("b", accessControl={"allow": ["10.0.0.0/8"]})
    d = ref("d", accessControl={"deny": ["127.0.0.2"]})
    r = generate_policies([a, b], ctx())
    assert r.location == ["allow 127.0.0.1;", "allow 10.0.0.0/8;", "deny all;"] and not r.warnings
    r = generate_policies([d, a], ctx())
    assert r.location == ["allow 127.0.0.1;", "deny all;"]
    assert r.warnings == ["AccessControl policy (or policies) with deny rules is overridden by policy "
                          "(or policies) with allow rules"]
    r = generate_policies([d], ctx(LEVEL_SPEC))
    assert r.server == ["deny 127.0.0.2;", "allow all;"] and r.location == []


def test_rate_limit_zone_per_policy_and_owner_and_first_policy_settings() -> None:
    one = ref("rl-one", rateLimit={"rate": "10R/S", "key": "${binary_remote_addr}", "zoneSize": "10m",
                                   "burst": 5, "delay": 2, "rejectCode": 429, "dryRun": True,
                                   "logLevel": "warn"})
    two = ref("two", rateLimit={"rate": "1r/m", "key": "${http_x_user}", "zoneSize": "1M", "burst": 2,
                                "noDelay": True, "delay": 3})
    r = generate_policies([one, two], ctx())
    assert r.http == [
        'limit_req_zone "${binary_remote_addr}" zone=pol_rl_demo_rl_one_demo_cafe:10m rate=10r/s;',
        'limit_req_zone "${http_x_user}" zone=pol_rl_demo_two_demo_cafe:1M rate=1r/m;']
    assert r.location == ["limit_req zone=pol_rl_demo_rl_one_demo_cafe burst=5 delay=2;",
                          "limit_req_dry_run on;", "limit_req_log_level warn;", "limit_req_status 429;",
                          "limit_req zone=pol_rl_demo_two_demo_cafe burst=2 nodelay;"]
    assert any("dryRun=false is overridden to dryRun=true" in w for w in r.warnings)
    assert any("rejectCode=503 is overridden to rejectCode=429" in w for w in r.warnings)


@pytest.mark.parametrize(("rate", "replicas", "expected"), [
    ("10r/s", 1, "10r/s"), ("10r/s", 3, "3r/s"), ("1r/s", 2, "30r/m"), ("10r/m", 4, "2r/m")])
def test_rate_limit_scale_divides_by_replicas(rate: str, replicas: int, expected: str) -> None:
    r = generate_policies([ref("s", rateLimit={"rate": rate, "key": "${uri}", "zoneSize": "1m",
                                               "scale": True})], ctx(replicas=replicas))
    assert f"rate={expected};" in r.http[0]


def test_basic_auth_first_wins_and_needs_an_htpasswd_secret() -> None:
    good = PolicySecret("demo/users", "nginx.org/htpasswd", "/etc/nginx/secrets/demo-users")
    a = ref("a", {"secret": good}, basicAuth={"secret": "users", "realm": 'Cafe \\"staff\\"'})
    b = ref("b", {"secret": good}, basicAuth={"secret": "users"})
    r = generate_policies([a, b], ctx())
    assert r.location == ['auth_basic "Cafe \\"staff\\"";',
                          "auth_basic_user_file /etc/nginx/secrets/demo-users;"]
    assert r.warnings == ["Multiple basic auth policies in the same context is not valid. Basic auth policy "
                          "demo/b will be ignored"]
    wrong = PolicySecret("demo/users", "kubernetes.io/tls", "/x")
    r = generate_policies([ref("a", {"secret": wrong}, basicAuth={"secret": "users"})], ctx())
    assert r.error == "Basic Auth secret demo/users is of a wrong type 'kubernetes.io/tls', must be " \
                      "'nginx.org/htpasswd'"
    missing = PolicySecret("demo/users", error="secret doesn't exist or of an unsupported type")
    r = generate_policies([ref("a", {"secret": missing}, basicAuth={"secret": "users"})], ctx())
    assert r.error.startswith("Basic Auth secret demo/users is invalid: secret doesn't exist")
    broken = PolicySecret("demo/users", "nginx.org/htpasswd", error="htpasswd secret is invalid: x")
    r = generate_policies([ref("a", {"secret": broken}, basicAuth={"secret": "users"})], ctx())
    assert r.error == "Basic Auth secret demo/users is invalid: htpasswd secret is invalid: x"
    r = generate_policies([ref("a", {}, basicAuth={"secret": "users"})], ctx())
    assert r.error.startswith("Basic Auth secret ? is invalid")


def test_api_key_map_and_checks_and_a_second_one_is_an_error() -> None:
    keys = PolicySecret("demo/keys", "nginx.org/apikey", "/etc/nginx/secrets/demo-keys")
    spec = {"suppliedIn": {"header": ["X-API-Key"], "query": ["key"]}, "clientSecret": "keys"}
    r = generate_policies([ref("ak", {"clientSecret": keys}, apiKey=spec)], ctx(LEVEL_SPEC))
    assert r.http == ['map "${http_x_api_key}${arg_key}" $apikey_auth_demo_cafe_demo_ak { include '
                      '/etc/nginx/secrets/demo-keys; "" 401; default 403; }',
                      'map $apikey_auth_demo_cafe_demo_ak $apikey_auth_demo_cafe_demo_ak_client { '
                      '"~^=(?<client>.*)$" $client; default ""; }']
    checks = ["if ($apikey_auth_demo_cafe_demo_ak = 401) { return 401; }",
              "if ($apikey_auth_demo_cafe_demo_ak = 403) { return 403; }",
              "set $apikey_client_name $apikey_auth_demo_cafe_demo_ak_client;",
              'set $apikey_auth_token "${http_x_api_key}${arg_key}";']
    # At server level the checks go to each location without an apiKey of its own (a route's wins).
    assert r.server == [] and r.inherited == {"apiKey": checks} and r.types == ["apiKey"]
    r = generate_policies([ref("ak", {"clientSecret": keys}, apiKey=spec)], ctx())
    assert r.location == checks
    r = generate_policies([ref("ak", {"clientSecret": keys}, apiKey=spec),
                           ref("ak2", {"clientSecret": keys}, apiKey=spec)], ctx())
    assert r.error.startswith("Multiple API key policies in the same context is not valid")


def test_api_key_map_entries_are_exact_case_sensitive_regexes() -> None:
    text = apikey_map_entries({"client-a": "s3cr3t", "b": 'we"ird $key;{}'})
    assert text.splitlines() == ['"~^we\\\\\\"ird\\\\ \\\\$key\\\\;\\\\{\\\\}$" "=b";',
                                 '"~^s3cr3t$" "=client-a";']


@pytest.mark.parametrize("kind", ["jwt", "oidc"])
def test_plus_only_types_fail_closed(kind: str) -> None:
    obj = {"metadata": {"name": "p", "namespace": "demo"}, "spec": {kind: {"realm": "r"}}}
    r = generate_policies([ResolvedPolicy("demo/p", obj)], ctx())
    assert r.error.endswith("policy demo/p requires NGINX Plus") and r.warnings == [r.error]


def test_a_listed_type_gets_its_index_siblings_and_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[PolicyContext] = []

    def render(spec: Mapping[str, Any], c: PolicyContext) -> PolicyResult:
        calls.append(c)
        return PolicyResult(http=["proxy_cache_path /tmp/x keys_zone=z:1m;"], location=[f"# {spec['n']}"])

    cache = dataclasses.replace(POLICY_TYPES_BY_KEY["cache"], render=render,
                                secret_fields={"caSecret": "nginx.org/ca"})
    monkeypatch.setattr(generator, "POLICY_TYPES_BY_KEY", {**POLICY_TYPES_BY_KEY, "cache": cache})
    ca = PolicySecret("demo/ca", "nginx.org/ca", "/ca")
    r = generate_policies([ref("c1", {"caSecret": ca}, cache={"n": 1, "caSecret": "ca"}),
                           ref("c2", cache={"n": 2})], ctx())
    assert r.location == ["# 1", "# 2"] and dedupe(r.http) == ["proxy_cache_path /tmp/x keys_zone=z:1m;"]
    assert [(c.policy_name, c.index, len(c.siblings)) for c in calls] == [("c1", 0, 2), ("c2", 1, 2)]
    assert calls[0].secrets["caSecret"] == ca
    r = generate_policies([ref("c3", {"caSecret": PolicySecret("demo/ca", "kubernetes.io/tls")},
                               cache={"n": 3, "caSecret": "ca"})], ctx())
    assert "must be 'nginx.org/ca'" in r.error
