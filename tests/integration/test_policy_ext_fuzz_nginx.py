"""Injection fuzzing of every string field of the policy types ingressMTLS, egressMTLS, cache, cors and
externalAuth against the real `nginx -t`, through a VirtualServer that uses all of them.

A fuzzed value (a valid sample with NGINX syntax inserted, or hostile text) is either rejected by Policy
validation, or renders a file whose statement tree has exactly the directives of the unfuzzed one (no
directive added, removed or moved) and which NGINX accepts. (A valid but different `crlFileName` names a
file that does not exist, and a valid `cacheZoneSize` may be more memory than the machine has: NGINX may
refuse those for that reason only.) Bounded: 300 examples.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from ingressctl.configs.configmaps import ConfigParams, generate_main_config
from ingressctl.configs.renderers import RenderContext
from ingressctl.configs.templates import TemplateExecutor, TemplateRenderError
from ingressctl.kinds.virtualserver.renderer import VirtualServerRenderer
from ingressctl.kinds.virtualserver.template_model import VirtualServerEx
from ingressctl.policies.base import PolicySecret, PolicyValidationConfig, ResolvedPolicy
from ingressctl.policies.validation import validate_policy
from ingressctl.secret_types import SecretReference
from tests.integration.test_annotations_fuzz_nginx import Staging
from tests.integration.test_virtualserver_fuzz_nginx import fuzz_values, shape
from tests.pki import CA
from tests.unit.test_injection_fuzz import Rendered, parse_tree

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Diffie-Hellman over finite fields")]

RENDERER = VirtualServerRenderer()
TEMPLATES = TemplateExecutor()
NS = "default"


def base_policies() -> dict[str, dict[str, Any]]:
    return {
        "mtls": {"ingressMTLS": {"clientCertSecret": "ca", "verifyClient": "on", "verifyDepth": 1,
                                 "crlFileName": "fuzz.crl"}},
        "egress": {"egressMTLS": {"tlsSecret": "client", "trustedCertSecret": "ca", "verifyServer": True,
                                  "sslName": "backend.example.com", "protocols": "TLSv1.2 TLSv1.3",
                                  "ciphers": "HIGH:!aNULL"}},
        "cache": {"cache": {"cacheZoneName": "menu", "cacheZoneSize": "1m", "levels": "1:2", "inactive": "1h",
                            "maxSize": "10m", "minFree": "1m", "time": "10m", "allowedCodes": [200],
                            "allowedMethods": ["GET"], "cacheKey": "$scheme$host$request_uri",
                            "cacheUseStale": ["error"], "manager": {"sleep": "50ms", "threshold": "200ms"},
                            "lock": {"enable": True, "timeout": "5s", "age": "5s"},
                            "conditions": {"noCache": ["$cookie_nocache"], "bypass": ["$arg_nocache"]}}},
        "cors": {"cors": {"allowOrigin": ["https://app.example.com", "https://*.example.org"],
                          "allowMethods": ["GET"], "allowHeaders": ["X-Token"], "exposeHeaders": ["X-Id"]}},
        "auth": {"externalAuth": {"authURI": "/auth", "authServiceName": "auth", "authServicePorts": [80],
                                  "authSigninURI": "https://login.example.com/start?rd=$request_uri",
                                  "authSigninRedirectBasePath": "/signin", "sslEnabled": True,
                                  "sslVerify": True, "trustedCertSecret": "ca",
                                  "sniName": "auth.example.com"}},
    }


Setter = Callable[[dict[str, dict[str, Any]], str], None]


def _field(name: str, *path: Any) -> Setter:
    def set_(policies: dict[str, dict[str, Any]], value: str) -> None:
        node: Any = next(iter(policies[name].values()))
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value
    return set_


FIELDS: dict[str, tuple[Setter, str]] = {
    "ingressMTLS.clientCertSecret": (_field("mtls", "clientCertSecret"), "ca"),
    "ingressMTLS.verifyClient": (_field("mtls", "verifyClient"), "on"),
    "ingressMTLS.crlFileName": (_field("mtls", "crlFileName"), "fuzz.crl"),
    "egressMTLS.tlsSecret": (_field("egress", "tlsSecret"), "client"),
    "egressMTLS.trustedCertSecret": (_field("egress", "trustedCertSecret"), "ca"),
    "egressMTLS.sslName": (_field("egress", "sslName"), "backend.example.com"),
    "egressMTLS.protocols": (_field("egress", "protocols"), "TLSv1.2 TLSv1.3"),
    "egressMTLS.ciphers": (_field("egress", "ciphers"), "HIGH:!aNULL"),
    "cache.cacheZoneName": (_field("cache", "cacheZoneName"), "menu"),
    "cache.cacheZoneSize": (_field("cache", "cacheZoneSize"), "1m"),
    "cache.levels": (_field("cache", "levels"), "1:2"),
    "cache.inactive": (_field("cache", "inactive"), "1h"),
    "cache.maxSize": (_field("cache", "maxSize"), "10m"),
    "cache.minFree": (_field("cache", "minFree"), "1m"),
    "cache.time": (_field("cache", "time"), "10m"),
    "cache.allowedMethods": (_field("cache", "allowedMethods", 0), "GET"),
    "cache.cacheKey": (_field("cache", "cacheKey"), "$scheme$host$request_uri"),
    "cache.cacheUseStale": (_field("cache", "cacheUseStale", 0), "error"),
    "cache.manager.sleep": (_field("cache", "manager", "sleep"), "50ms"),
    "cache.manager.threshold": (_field("cache", "manager", "threshold"), "200ms"),
    "cache.lock.timeout": (_field("cache", "lock", "timeout"), "5s"),
    "cache.lock.age": (_field("cache", "lock", "age"), "5s"),
    "cache.conditions.noCache": (_field("cache", "conditions", "noCache", 0), "$cookie_nocache"),
    "cache.conditions.bypass": (_field("cache", "conditions", "bypass", 0), "$arg_nocache"),
    "cors.allowOrigin": (_field("cors", "allowOrigin", 0), "https://app.example.com"),
    "cors.allowOrigin.wildcard": (_field("cors", "allowOrigin", 1), "https://*.example.org"),
    "cors.allowMethods": (_field("cors", "allowMethods", 0), "GET"),
    "cors.allowHeaders": (_field("cors", "allowHeaders", 0), "X-Token"),
    "cors.exposeHeaders": (_field("cors", "exposeHeaders", 0), "X-Id"),
    "externalAuth.authURI": (_field("auth", "authURI"), "/auth"),
    "externalAuth.authServiceName": (_field("auth", "authServiceName"), "auth"),
    "externalAuth.authSigninURI": (_field("auth", "authSigninURI"),
                                   "https://login.example.com/start?rd=$request_uri"),
    "externalAuth.authSigninRedirectBasePath": (_field("auth", "authSigninRedirectBasePath"), "/signin"),
    "externalAuth.trustedCertSecret": (_field("auth", "trustedCertSecret"), "ca"),
    "externalAuth.sniName": (_field("auth", "sniName"), "auth.example.com"),
}
FILE_FIELDS = {"ingressMTLS.crlFileName"}
# A valid but huge zone size is memory this machine may not have: NGINX may refuse it for that reason only.
MEMORY_FIELDS = {"cache.cacheZoneSize"}


class PolicyStaging(Staging):
    """The staging conf dir plus the files the policies name: a CA with its CRL, a client certificate."""

    def __init__(self, base: str) -> None:
        super().__init__(base)
        ca = CA("fuzz-ca")
        client = ca.issue("client")
        self.secrets = os.path.join(self.conf_dir, "secrets")
        with open(os.path.join(self.secrets, "default-ca"), "wb") as f:
            f.write(ca.cert_pem)
        with open(os.path.join(self.secrets, "fuzz.crl"), "wb") as f:
            f.write(ca.crl_pem())
        with open(os.path.join(self.secrets, "default-client"), "wb") as f:
            f.write(client.cert_pem + client.key_pem)
        os.makedirs(os.path.join(self.run_dir, "cache"), exist_ok=True)


def render(policies: dict[str, dict[str, Any]], staging: PolicyStaging) -> Rendered | str:
    secrets = {"clientCertSecret": PolicySecret(f"{NS}/ca", "nginx.org/ca", f"{staging.secrets}/default-ca"),
               "trustedCertSecret": PolicySecret(f"{NS}/ca", "nginx.org/ca", f"{staging.secrets}/default-ca"),
               "tlsSecret": PolicySecret(f"{NS}/client", "kubernetes.io/tls",
                                         f"{staging.secrets}/default-client")}
    resolved = {}
    for name, spec in policies.items():
        obj = {"metadata": {"name": name, "namespace": NS}, "spec": spec}
        errors = validate_policy(obj, PolicyValidationConfig())
        if errors:
            return f"validation: {errors[0]}"
        resolved[f"{NS}/{name}"] = ResolvedPolicy(f"{NS}/{name}", obj, secrets=secrets)
    vs = {"metadata": {"name": "fuzz", "namespace": NS}, "spec": {
        "host": "fuzz.example.com", "tls": {"secret": "fuzz-tls"},
        "policies": [{"name": "mtls"}, {"name": "cors"}, {"name": "auth"}],
        "upstreams": [{"name": "up", "service": "svc", "port": 443, "tls": {"enable": True}}],
        "routes": [{"path": "/a", "action": {"pass": "up"},
                    "policies": [{"name": "egress"}, {"name": "cache"}]},
                   {"path": "/b", "action": {"pass": "up"}}]}}
    ref = SecretReference(f"{NS}/fuzz-tls", path=f"{staging.secrets}/default-tls")
    ex = VirtualServerEx(vs, {"up": ["10.0.0.1:443"]}, ref, policies=resolved,
                         policy_endpoints={f"{NS}/auth:80": ("10.0.0.2:80",)})
    try:
        text = RENDERER.render(ex, RenderContext(staging.static, ConfigParams(), TEMPLATES)).text
    except TemplateRenderError as e:
        return f"template: {e}"
    main = TEMPLATES.execute_main_template(generate_main_config(staging.static, ConfigParams()))
    return Rendered(text, main)


@pytest.fixture(scope="module")
def staging() -> Iterator[PolicyStaging]:
    base = tempfile.mkdtemp(prefix="polfz-")
    try:
        yield PolicyStaging(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def reference(staging: PolicyStaging) -> list[Any]:
    r = render(base_policies(), staging)
    assert isinstance(r, Rendered), r
    assert "return 500;" not in r.ingress, r.ingress
    ok, out = staging.nginx_t(r)
    assert ok, f"{out}\n{r.ingress}"
    return shape(parse_tree(r.ingress))


def check(staging: PolicyStaging, reference: list[Any], field: str, value: str) -> bool:
    """False when rejected; True when rendered with the reference's shape and accepted by `nginx -t`."""
    if value == "":
        return False    # unsets an optional field (fewer directives by design); required ones are rejected
    policies = copy.deepcopy(base_policies())
    FIELDS[field][0](policies, value)
    r = render(policies, staging)
    if isinstance(r, str):
        return False
    assert shape(parse_tree(r.ingress)) == reference, \
        f"{field}={value!r} changed the directives:\n{r.ingress}"
    ok, out = staging.nginx_t(r)
    if not ok and field in FILE_FIELDS and "No such file" in out:
        return True
    if not ok and field in MEMORY_FIELDS and "Cannot allocate memory" in out:
        return True
    assert ok, f"nginx -t refused {field}={value!r}:\n{out}\n{r.ingress}"
    return True


def test_every_field_sample_renders_and_a_plain_injection_is_rejected(staging: PolicyStaging,
                                                                      reference: list[Any]) -> None:
    for field, (_, sample) in FIELDS.items():
        assert check(staging, reference, field, sample), field
        assert not check(staging, reference, field, sample + "\n}; evil on;"), field
        assert not check(staging, reference, field, sample + '"; evil on; "'), field


VALUES = fuzz_values(FIELDS)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
@given(case=VALUES)
def test_fuzzed_fields_are_rejected_or_pass_nginx_t_with_the_same_directives(
        staging: PolicyStaging, reference: list[Any], case: tuple[str, str]) -> None:
    check(staging, reference, *case)
