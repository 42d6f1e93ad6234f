"""Tiered rate limits (`rateLimit.condition`): validation with NIC's rules, the per-context tier and key maps,
the context checks (one variable, one default, distinct matches) and the `apikey_` variables."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ingressctl.policies.base import (
    LEVEL_ROUTE,
    LEVEL_SPEC,
    PolicyContext,
    PolicyValidationConfig,
    ResolvedPolicy,
)
from ingressctl.policies.generator import generate_policies
from ingressctl.policies.rate_limit_tiers import context_suffix
from ingressctl.policies.validation import validate_policy


def rate_limit(match: str | None = None, *, name: str = "$request_method", default: bool | None = None,
               **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"rate": "1r/s", "key": "${binary_remote_addr}", "zoneSize": "1m", **extra}
    if match is not None:
        spec["condition"] = {"variables": [{"name": name, "match": match}]}
        if default is not None:
            spec["condition"]["default"] = default
    return spec


def errors(spec: dict[str, Any], config: PolicyValidationConfig | None = None) -> list[str]:
    obj = {"metadata": {"name": "p", "namespace": "demo"}, "spec": {"rateLimit": spec}}
    return [str(e) for e in validate_policy(obj, config)]


def test_valid_conditions() -> None:
    assert errors(rate_limit("~GET|HEAD")) == []
    assert errors(rate_limit("POST", default=True)) == []
    assert errors(rate_limit("~*^.*-premium$", name="$apikey_client_name",
                             key="${apikey_auth_token}")) == []
    assert errors(rate_limit(key="${apikey_client_name}${request_method}")) == []
    plus = PolicyValidationConfig(is_plus=True)
    assert errors(rate_limit(condition={"jwt": {"claim": "user_details.level", "match": "premium"}}),
                  plus) == []


@pytest.mark.parametrize("condition, message", [
    ({"default": True}, 'spec.rateLimit.condition: Invalid value: "": must specify exactly one of: `jwt`, '
                        '`variables`'),
    ({"jwt": {"claim": "c", "match": "m"}, "variables": [{"name": "$request_method", "match": "GET"}]},
     "must specify exactly one of: `jwt`, `variables`"),
    ({"jwt": {"claim": "c", "match": "m"}}, "spec.rateLimit.condition.jwt: Forbidden: jwt conditions require "
                                            "NGINX Plus"),
    ({"variables": []}, "spec.rateLimit.condition.variables: Required value"),
    ({"variables": [{"name": "$request_method", "match": "GET"},
                    {"name": "$request_method", "match": "PUT"}]},
     "spec.rateLimit.condition.variables: Too many: 2: must have at most 1 items"),
    ({"variables": [{"name": "$host", "match": "a"}]},
     'spec.rateLimit.condition.variables[0].name: Unsupported value: "$host"'),
    ({"variables": [{"match": "a"}]}, "spec.rateLimit.condition.variables[0].name: Required value"),
    ({"variables": [{"name": "$request_method", "match": 5}]},
     "spec.rateLimit.condition.variables[0].match: Invalid value: 5: must be a string"),
    ({"variables": [{"name": "$request_method"}]},
     "spec.rateLimit.condition.variables[0].match: Required value"),
    ({"variables": [{"name": "$request_method", "match": "GET POST"}]},
     "must not contain whitespace or quotes"),
    ({"variables": [{"name": "$request_method", "match": 'G"ET'}]}, "must not contain whitespace or quotes"),
    ({"variables": [{"name": "$request_method", "match": "~(GET"}]}, "must be a valid regular expression"),
    ({"variables": [{"name": "$request_method", "match": "default"}]}, "must not be an NGINX map keyword"),
    ({"variables": [{"name": "$request_method", "match": "GET"}], "default": "yes"},
     "spec.rateLimit.condition.default: Invalid value"),
    ("tiers", "spec.rateLimit.condition: Invalid value"),
])
def test_invalid_conditions(condition: Any, message: str) -> None:
    got = errors(rate_limit(condition=condition))
    assert any(message in e for e in got), got


def test_only_the_apikey_variables_an_api_key_policy_sets_are_accepted_in_keys() -> None:
    assert any("'apikey_other' is not a supported variable" in e
               for e in errors(rate_limit(key="${apikey_other}")))


def ref(name: str, spec: dict[str, Any]) -> ResolvedPolicy:
    return ResolvedPolicy(f"demo/{name}", {"metadata": {"name": name, "namespace": "demo"},
                                           "spec": {"rateLimit": spec}})


def ctx(level: str = LEVEL_ROUTE, context_id: str = "/api") -> PolicyContext:
    return PolicyContext("virtualserver", "demo", "cafe", level, context_id=context_id)


def test_tiers_render_a_tier_map_and_one_key_map_and_zone_per_policy() -> None:
    c = ctx()
    sfx = context_suffix(c)
    r = generate_policies([ref("read", rate_limit("~GET|HEAD", rate="5r/s", burst=2, noDelay=True,
                                                   rejectCode=429)),
                           ref("write", rate_limit("~PUT|POST", default=True))], c)
    assert not r.error, r.warnings
    tier_var = f"$rl_demo_cafe_variable_request_method_{sfx}"
    assert r.http == [
        f'map $request_method {tier_var} {{ "~GET|HEAD" rl_demo_cafe_match_demo_read; "~PUT|POST" '
        "rl_demo_cafe_match_demo_write; default rl_demo_cafe_match_demo_write; }",
        f'map {tier_var} $pol_rl_demo_read_demo_cafe_{sfx} {{ rl_demo_cafe_match_demo_read '
        '"Val${binary_remote_addr}"; default ""; }',
        f"limit_req_zone $pol_rl_demo_read_demo_cafe_{sfx} zone=pol_rl_demo_read_demo_cafe_{sfx}:1m "
        "rate=5r/s;",
        f'map $request_method {tier_var} {{ "~GET|HEAD" rl_demo_cafe_match_demo_read; "~PUT|POST" '
        "rl_demo_cafe_match_demo_write; default rl_demo_cafe_match_demo_write; }",
        f'map {tier_var} $pol_rl_demo_write_demo_cafe_{sfx} {{ rl_demo_cafe_match_demo_write '
        '"Val${binary_remote_addr}"; default ""; }',
        f"limit_req_zone $pol_rl_demo_write_demo_cafe_{sfx} zone=pol_rl_demo_write_demo_cafe_{sfx}:1m "
        "rate=1r/s;"]
    assert r.location == [f"limit_req zone=pol_rl_demo_read_demo_cafe_{sfx} burst=2 nodelay;",
                          "limit_req_log_level error;", "limit_req_status 429;",
                          f"limit_req zone=pol_rl_demo_write_demo_cafe_{sfx};"]


def test_contexts_get_their_own_maps_and_no_default_means_an_empty_tier() -> None:
    spec, route = ctx(LEVEL_SPEC, "spec"), ctx()
    assert context_suffix(spec) != context_suffix(route)
    r = generate_policies([ref("read", rate_limit("GET"))], spec)
    assert "default \"\"; }" in r.http[0] and r.server[0].startswith(
        f"limit_req zone=pol_rl_demo_read_demo_cafe_{context_suffix(spec)};")
    # A tiered and a plain policy in one context: the plain one limits every request as before.
    r = generate_policies([ref("read", rate_limit("GET")), ref("all", rate_limit())], route)
    assert 'limit_req_zone "${binary_remote_addr}" zone=pol_rl_demo_all_demo_cafe:1m rate=1r/s;' in r.http


@pytest.mark.parametrize("second, message", [
    (rate_limit("POST", default=True), "Tiered rate-limit Policies on demo/cafe contain conflicting default "
                                       "values"),
    (rate_limit("GET"), "Tiered rate-limit Policies on demo/cafe contain duplicate match values"),
    (rate_limit("get"), "Tiered rate-limit Policies on demo/cafe contain duplicate match values"),
    (rate_limit("x", name="$apikey_client_name"), "Tiered rate-limit Policies on demo/cafe must all use the "
                                                  "same condition variable"),
])
def test_conflicting_tiers_fail_the_context_closed(second: dict[str, Any], message: str) -> None:
    r = generate_policies([ref("a", rate_limit("GET", default=True)), ref("b", second)], ctx())
    assert r.error == message and r.warnings == [message] and r.http == [] and r.lines == []


def test_a_jwt_condition_requires_nginx_plus() -> None:
    r = generate_policies([ref("jwt", rate_limit(condition={"jwt": {"claim": "c", "match": "m"}}))], ctx())
    assert r.error == "RateLimit policy demo/jwt with a jwt condition requires NGINX Plus"


def test_long_names_are_cut_to_fit_nginx_variable_hash() -> None:
    # Namespaces and names at Kubernetes' limits would otherwise overflow variables_hash_bucket_size.
    ns, vs = "n" * 63, "v" * 200
    c = PolicyContext("virtualserver", ns, vs, LEVEL_ROUTE, context_id="/api")
    long_ref = ResolvedPolicy(f"{ns}/{'p' * 200}", {"metadata": {"name": "p" * 200, "namespace": ns},
                                                      "spec": {"rateLimit": rate_limit("GET")}})
    r = generate_policies([long_ref], c)
    words = {w.rstrip(";") for line in r.http for w in line.split()}
    variables = {w for w in words if w.startswith("$")} - {"$request_method"}
    tiers = {w for w in words if w.startswith("rl_")}
    assert variables and tiers and all(len(v) <= 121 for v in variables | tiers), variables | tiers
    other = dataclasses.replace(c, context_id="/other")     # another context: other variables
    assert not variables & {w for line in generate_policies([long_ref], other).http for w in line.split()}
