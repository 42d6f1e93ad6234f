"""Policy validation: the "exactly one type" rule, the type list, and the rules of accessControl, rateLimit,
basicAuth, apiKey, jwt and oidc with NIC's field-error messages."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

import pytest

from ingressctl import policies
from ingressctl.policies import POLICY_TYPES
from ingressctl.policies import policy_type_of as policy_type
from ingressctl.policies import validation as pv
from ingressctl.policies.base import PolicyValidationConfig
from ingressctl.policies.validation import validate_policy
from ingressctl.validation import FieldError, invalid


def policy(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "demo"}, "spec": spec}


def errors(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_policy(obj)]


def test_exactly_one_type_lists_the_registered_types_in_nics_order() -> None:
    msg = ('spec: Invalid value: "": must specify exactly one of: `accessControl`, `rateLimit`, '
           '`ingressMTLS`, `egressMTLS`, `basicAuth`, `apiKey`, `cache`, `cors`, `externalAuth`, `jwt`, '
           '`oidc`, `waf`')
    assert errors(policy()) == [msg]
    assert errors(policy(accessControl={"allow": ["10.0.0.1"]}, basicAuth={"secret": "s"})) == [msg]
    assert errors({"metadata": {}, "spec": "nonsense"}) == [msg]


def test_a_listed_type_is_dispatched_to_its_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, Mapping[str, Any]]] = []

    def check(field: str, spec: Mapping[str, Any], config: PolicyValidationConfig) -> list[FieldError]:
        seen.append((field, spec))
        return [invalid(f"{field}.allowOrigin", spec.get("allowOrigin"), "bad")]

    monkeypatch.setattr(pv, "POLICY_TYPES", tuple(dataclasses.replace(t, validate=check) if t.key == "cors"
                                                  else t for t in POLICY_TYPES))
    assert errors(policy(cors={"allowOrigin": "x"})) == ['spec.cors.allowOrigin: Invalid value: "x": bad']
    assert seen == [("spec.cors", {"allowOrigin": "x"})]
    assert policy_type(policy(cors={})) == "cors"


def test_every_policy_type_module_is_listed_once() -> None:
    """A type exists because `POLICY_TYPES` lists it: a type module left out of the list fails here."""
    defined = []
    for info in pkgutil.iter_modules(policies.__path__):
        module = importlib.import_module(f"ingressctl.policies.{info.name}")
        if hasattr(module, "TYPE"):
            defined.append(module.TYPE)
    assert sorted(t.key for t in defined) == sorted(t.key for t in POLICY_TYPES)
    assert len({t.key for t in POLICY_TYPES}) == len(POLICY_TYPES)


@pytest.mark.parametrize("spec", [
    {"accessControl": {"allow": ["10.0.0.0/8", "127.0.0.1", "::1", "2001:db8::/32"]}},
    {"accessControl": {"deny": ["192.168.1.1"]}},
    {"rateLimit": {"rate": "10r/s", "key": "${binary_remote_addr}", "zoneSize": "10M"}},
    {"rateLimit": {"rate": "10r/s", "key": "${binary_remote_addr}", "zoneSize": "32768"}},
    {"rateLimit": {"rate": "5r/m", "key": "k${http_x_user}${arg_a}${cookie_c}${request_method}",
                   "zoneSize": "32k", "burst": 3, "delay": 1, "noDelay": True, "dryRun": True,
                   "logLevel": "warn", "rejectCode": 429, "scale": True}},
    {"basicAuth": {"secret": "htpasswd", "realm": 'My \\"Realm\\"'}},
    {"apiKey": {"suppliedIn": {"header": ["X-API-Key"], "query": ["api_key"]}, "clientSecret": "keys"}},
    {"jwt": {"realm": "r", "secret": "jwk", "token": "$http_token"}},
    {"jwt": {"realm": "r", "jwksURI": "https://idp.example.com/keys", "keyCache": "1h"}},
    {"oidc": {"clientID": "c", "clientSecret": "s", "authEndpoint": "https://idp.example.com/auth",
              "tokenEndpoint": "https://idp.example.com/token", "jwksURI": "https://idp.example.com/certs",
              "scope": "openid+profile"}},
])
def test_valid_policies(spec: dict[str, Any]) -> None:
    assert errors(policy(**spec)) == []


@pytest.mark.parametrize(("spec", "message"), [
    ({"accessControl": {}}, 'spec.accessControl: Invalid value: "": must specify exactly one of: `allow`, '
                            '`deny`'),
    ({"accessControl": {"allow": ["1.1.1.1"], "deny": ["2.2.2.2"]}},
     "must specify exactly one of: `allow`, `deny`"),
    ({"accessControl": {"allow": ["10.0.0.1; deny all"]}},
     'spec.accessControl.allow[0]: Invalid value: "10.0.0.1; deny all": must be a CIDR or IP'),
    ({"accessControl": {"deny": []}}, "spec.accessControl.deny: Required value"),
    ({"rateLimit": {"key": "${uri}", "zoneSize": "1m"}}, "spec.rateLimit.rate: Required value"),
    ({"rateLimit": {"rate": "0r/s", "key": "${uri}", "zoneSize": "1m"}},
     "spec.rateLimit.rate: Invalid value"),
    ({"rateLimit": {"rate": "1r/s", "zoneSize": "1m"}}, "spec.rateLimit.key: Required value"),
    ({"rateLimit": {"rate": "1r/s", "key": "$uri", "zoneSize": "1m"}},
     "variables must be enclosed in curly braces"),
    ({"rateLimit": {"rate": "1r/s", "key": "${host}", "zoneSize": "1m"}},
     "'host' is not a supported variable"),
    ({"rateLimit": {"rate": "1r/s", "key": 'a"b', "zoneSize": "1m"}}, "must have all '\"' escaped"),
    ({"rateLimit": {"rate": "1r/s", "key": "${uri}", "zoneSize": "31k"}},
     'spec.rateLimit.zoneSize: Invalid value: "31k": must be greater than 31k or 0m'),
    ({"rateLimit": {"rate": "1r/s", "key": "${uri}", "zoneSize": "0m"}}, "must be greater than 31k or 0m"),
    # NIC takes a bare 40 (as if it were 40k); to NGINX it is 40 bytes, a zone too small to load.
    ({"rateLimit": {"rate": "1r/s", "key": "${uri}", "zoneSize": "40"}},
     'spec.rateLimit.zoneSize: Invalid value: "40": a size without a suffix is in bytes: must be at least '
     '32768'),
    ({"rateLimit": {"rate": "1r/s", "key": "${uri}", "zoneSize": "32767"}}, "must be at least 32768"),
    ({"rateLimit": {"rate": "1r/s", "key": "${uri}", "zoneSize": "1g"}}, "valid size suffix"),
    ({"rateLimit": {"rate": "1r/s", "key": "${uri}", "zoneSize": "1m", "burst": 0}},
     "spec.rateLimit.burst: Invalid value: 0: must be positive"),
    ({"rateLimit": {"rate": "1r/s", "key": "${uri}", "zoneSize": "1m", "logLevel": "debug"}},
     'spec.rateLimit.logLevel: Unsupported value: "debug"'),
    ({"rateLimit": {"rate": "1r/s", "key": "${uri}", "zoneSize": "1m", "rejectCode": 200}},
     "spec.rateLimit.rejectCode: Invalid value: 200: must be in the range [400, 599]"),
    ({"rateLimit": {"rate": "1r/s", "key": "${uri}", "zoneSize": "1m", "condition": {"default": True}}},
     "spec.rateLimit.condition: Invalid value: \"\": must specify exactly one of: `jwt`, `variables`"),
    ({"basicAuth": {}}, "spec.basicAuth.secret: Required value"),
    ({"basicAuth": {"secret": "Bad_Name"}}, 'spec.basicAuth.secret: Invalid value: "Bad_Name"'),
    ({"basicAuth": {"secret": "s", "realm": "a$b"}}, "spec.basicAuth.realm: Invalid value"),
    ({"basicAuth": {"secret": "s", "realm": 'a"b'}}, "spec.basicAuth.realm: Invalid value"),
    ({"basicAuth": {"secret": "s", "realm": "a\nb"}}, "must not contain control characters"),
    ({"apiKey": {"clientSecret": "k"}}, "spec.apiKey.suppliedIn: Required value"),
    ({"apiKey": {"suppliedIn": {"header": ["X Key"]}, "clientSecret": "k"}},
     'spec.apiKey.suppliedIn.header[0]: Invalid value: "X Key"'),
    ({"apiKey": {"suppliedIn": {"query": ["a-b"]}, "clientSecret": "k"}},
     'spec.apiKey.suppliedIn.query[0]: Invalid value: "a-b"'),
    ({"apiKey": {"suppliedIn": {"header": ["x-key"]}}}, "spec.apiKey.clientSecret: Required value"),
    ({"jwt": {"realm": "r"}}, "must specify exactly one of: `secret`, `jwksURI`"),
    ({"jwt": {"realm": "r", "jwksURI": "https://idp/keys"}}, "spec.jwt.keyCache: Required value"),
    ({"jwt": {"realm": "r", "secret": "s", "token": "$host"}}, "spec.jwt.token: Invalid value"),
    ({"oidc": {"clientID": "c", "clientSecret": "s"}}, "spec.oidc.authEndpoint: Required value"),
    ({"oidc": {"clientID": "c", "clientSecret": "s", "authEndpoint": "https://a.b/x", "tokenEndpoint":
               "https://a.b/t", "jwksURI": "https://a.b/k", "scope": "profile"}},
     "scope must include openid"),
])
def test_invalid_policies(spec: dict[str, Any], message: str) -> None:
    got = errors(policy(**spec))
    assert any(message in e for e in got), got
