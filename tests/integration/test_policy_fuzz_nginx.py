"""Injection fuzzing of every Policy string field (and of API keys in their Secret) against the real
`nginx -t`.

A fuzzed value is either rejected (Policy validation, Secret validation or a render error) or renders a
VirtualServer file whose statement tree has exactly the directives of the unfuzzed one, with an API-key
file NGINX includes, and which NGINX accepts. Bounded: 300 examples, `nginx -t` only for rendered ones.
"""

from __future__ import annotations

import base64
import copy
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams, generate_main_config
from ingressctl.configs.renderers import RenderContext
from ingressctl.configs.templates import TemplateExecutor, TemplateRenderError
from ingressctl.kinds.virtualserver.renderer import VirtualServerRenderer
from ingressctl.kinds.virtualserver.template_model import VirtualServerEx
from ingressctl.policies.api_key import apikey_file, validate_apikey_secret
from ingressctl.policies.base import PolicySecret, ResolvedPolicy
from ingressctl.policies.validation import validate_policy
from ingressctl.secret_types import SecretValidationError
from tests.integration.test_annotations_fuzz_nginx import Staging
from tests.integration.test_virtualserver_fuzz_nginx import assert_same_shape_and_loads, fuzz_values, shape
from tests.unit.test_injection_fuzz import Rendered, parse_tree

pytestmark = pytest.mark.integration

RENDERER = VirtualServerRenderer()
TEMPLATES = TemplateExecutor()


def base_policies() -> dict[str, dict[str, Any]]:
    return {
        "ac": {"accessControl": {"allow": ["10.0.0.0/8"]}},
        "deny": {"accessControl": {"deny": ["192.168.0.1"]}},
        "rl": {"rateLimit": {"rate": "10r/s", "key": "${binary_remote_addr}", "zoneSize": "1m", "burst": 2,
                             "delay": 1, "logLevel": "warn", "rejectCode": 429}},
        "tier": {"rateLimit": {"rate": "1r/s", "key": "${apikey_client_name}", "zoneSize": "1m",
                               "condition": {"variables": [{"name": "$request_method", "match": "~^GET$"}],
                                             "default": True}}},
        "ba": {"basicAuth": {"secret": "users", "realm": "realm"}},
        "ak": {"apiKey": {"suppliedIn": {"header": ["X-Key"], "query": ["key"]}, "clientSecret": "keys"}},
        "jwt": {"jwt": {"realm": "realm", "secret": "jwk", "token": "$http_token"}},
    }


FIELDS: dict[str, tuple[tuple[Any, ...], str]] = {
    "accessControl.allow": (("ac", "accessControl", "allow", 0), "10.0.0.0/8"),
    "accessControl.deny": (("deny", "accessControl", "deny", 0), "192.168.0.1"),
    "rateLimit.rate": (("rl", "rateLimit", "rate"), "10r/s"),
    "rateLimit.key": (("rl", "rateLimit", "key"), "${binary_remote_addr}"),
    "rateLimit.zoneSize": (("rl", "rateLimit", "zoneSize"), "1m"),
    "rateLimit.logLevel": (("rl", "rateLimit", "logLevel"), "warn"),
    "rateLimit.condition.variables.match": (("tier", "rateLimit", "condition", "variables", 0, "match"),
                                            "~^GET$"),
    "rateLimit.condition.variables.name": (("tier", "rateLimit", "condition", "variables", 0, "name"),
                                           "$request_method"),
    "basicAuth.secret": (("ba", "basicAuth", "secret"), "users"),
    "basicAuth.realm": (("ba", "basicAuth", "realm"), "realm"),
    "apiKey.header": (("ak", "apiKey", "suppliedIn", "header", 0), "X-Key"),
    "apiKey.query": (("ak", "apiKey", "suppliedIn", "query", 0), "key"),
    "apiKey.clientSecret": (("ak", "apiKey", "clientSecret"), "keys"),
    "jwt.realm": (("jwt", "jwt", "realm"), "realm"),
    "jwt.secret": (("jwt", "jwt", "secret"), "jwk"),
    "jwt.token": (("jwt", "jwt", "token"), "$http_token"),
    "apiKey secret value": (("secret",), "s3cret"),
}


def _set(policies: dict[str, Any], path: tuple[Any, ...], value: str) -> None:
    node: Any = policies
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def render(policies: dict[str, Any], api_key: str, static: StaticConfigParams) -> Rendered | str:
    resolved: dict[str, ResolvedPolicy] = {}
    for name, spec in policies.items():
        obj = {"metadata": {"name": name, "namespace": "default"}, "spec": spec}
        errors = validate_policy(obj)
        if errors:
            return f"validation: {errors[0]}"
        secrets: dict[str, PolicySecret] = {}
        if "basicAuth" in spec:
            secret = spec["basicAuth"]["secret"]
            secrets["secret"] = PolicySecret(f"default/{secret}", "nginx.org/htpasswd",
                                             f"{static.conf_dir}/secrets/default-{secret}")
        if "apiKey" in spec:
            secret = spec["apiKey"]["clientSecret"]
            data = {"client": base64.b64encode(api_key.encode()).decode()}
            try:
                validate_apikey_secret({"type": "nginx.org/apikey", "data": data})
            except SecretValidationError as e:
                return f"secret: {e}"
            content, _ = apikey_file({"type": "nginx.org/apikey", "data": data})
            path = f"{static.conf_dir}/secrets/default-{secret}"
            with open(path, "wb") as f:
                f.write(content)
            secrets["clientSecret"] = PolicySecret(f"default/{secret}", "nginx.org/apikey", path)
        resolved[f"default/{name}"] = ResolvedPolicy(f"default/{name}", obj, secrets=secrets)
    vs = {"metadata": {"name": "fuzz", "namespace": "default"},
          "spec": {"host": "fuzz.example.com", "upstreams": [{"name": "up", "service": "svc", "port": 80}],
                   "policies": [{"name": "deny"}],
                   "routes": [{"path": f"/{n}", "action": {"pass": "up"}, "policies": [{"name": n}]}
                              for n in ("ac", "rl", "tier", "ba", "ak")]}}
    ex = VirtualServerEx(vs, {"up": ["10.0.0.1:80"]}, policies=resolved)
    try:
        text = RENDERER.render(ex, RenderContext(static, ConfigParams(), TEMPLATES)).text
    except TemplateRenderError as e:
        return f"template: {e}"
    main = TEMPLATES.execute_main_template(generate_main_config(static, ConfigParams()))
    return Rendered(text, main)


@pytest.fixture(scope="module")
def staging() -> Iterator[Staging]:
    base = tempfile.mkdtemp(prefix="polfz-")
    try:
        yield Staging(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def reference(staging: Staging) -> list[Any]:
    r = render(base_policies(), "s3cret", staging.static)
    assert isinstance(r, Rendered), r
    assert "return 500" not in r.ingress and "limit_req_zone" in r.ingress and "auth_basic" in r.ingress
    assert "map $request_method $rl_default_fuzz_variable_request_method_" in r.ingress
    ok, out = staging.nginx_t(r)
    assert ok, out
    return shape(parse_tree(r.ingress))


MEMORY_FIELDS = {"rateLimit.zoneSize"}


def check(staging: Staging, reference: list[Any], field: str, value: str) -> bool:
    """False when rejected; True when rendered with the reference's shape and accepted by `nginx -t`."""
    if value == "":
        return False    # unsets an optional field; required ones are rejected
    policies = copy.deepcopy(base_policies())
    path, _ = FIELDS[field]
    api_key = "s3cret"
    if path == ("secret",):
        api_key = value
    else:
        _set(policies, path, value)
    r = render(policies, api_key, staging.static)
    if isinstance(r, str):
        return False
    if field in MEMORY_FIELDS:
        # A huge but well-formed zone size renders as asked; whether the machine can map it is NGINX's call.
        assert shape(parse_tree(r.ingress)) == reference, f"{field}={value!r} changed the directives"
        ok, out = staging.nginx_t(r)
        assert ok or "Cannot allocate memory" in out, f"nginx -t refused {field}={value!r}:\n{out}"
        return True
    assert_same_shape_and_loads(staging, reference, r, f"{field}={value!r}")
    return True


def test_every_field_sample_renders_and_a_plain_injection_is_rejected(staging: Staging,
                                                                      reference: list[Any]) -> None:
    for field, (_, sample) in FIELDS.items():
        assert check(staging, reference, field, sample), field
        if field != "apiKey secret value":      # any printable key is fine: it is escaped, not rejected
            assert not check(staging, reference, field, sample + "\n}; evil on;"), field
    assert check(staging, reference, "apiKey secret value", 'k"ey; } evil on; {$x ~^\\')


VALUES = fuzz_values(FIELDS)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
@given(case=VALUES)
def test_fuzzed_fields_are_rejected_or_pass_nginx_t_with_the_same_directives(
        staging: Staging, reference: list[Any], case: tuple[str, str]) -> None:
    check(staging, reference, *case)
