"""VirtualServer and VirtualServerRoute validation: NIC's rules and field-error messages."""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.controller.model import make_entry
from ingressctl.keys import ResourceKey
from ingressctl.kinds.virtualserver.model import VirtualServerModel, VirtualServerRouteModel
from ingressctl.kinds.virtualserver.paths import vsr_fit_errors
from ingressctl.kinds.virtualserver.validation import (
    plus_only_warnings,
    validate_virtual_server,
    validate_virtual_server_route,
)
from ingressctl.validation import aggregate_message


def vs(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"host": "cafe.example.com",
                            "upstreams": [{"name": "tea", "service": "tea", "port": 80}],
                            "routes": [{"path": "/", "action": {"pass": "tea"}}]}
    return {"metadata": {"name": "cafe", "namespace": "demo"}, "spec": {**base, **spec}}


def errors(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_virtual_server(obj)]


def test_a_valid_virtual_server_has_no_errors() -> None:
    assert errors(vs()) == []


@pytest.mark.parametrize(("spec", "message"), [
    ({"host": ""}, "spec.host: Required value"),
    ({"host": "Cafe_1"}, 'spec.host: Invalid value: "Cafe_1": a lowercase RFC 1123 subdomain'),
    ({"upstreams": [{"name": "tea", "service": "tea", "port": 80}] * 2},
     'spec.upstreams[1].name: Duplicate value: "tea"'),
    ({"upstreams": [{"name": "tea", "service": "tea", "port": 0}]},
     "spec.upstreams[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"),
    ({"upstreams": [{"name": "tea", "service": "tea", "port": 80, "fail-timeout": "5x"}]},
     'spec.upstreams[0].fail-timeout: Invalid value: "5x": must be a time'),
    ({"upstreams": [{"name": "tea", "service": "tea", "port": 80, "next-upstream": "error bogus"}]},
     'spec.upstreams[0].next-upstream: Unsupported value: "bogus"'),
    ({"upstreams": [{"name": "tea", "service": "tea", "port": 80, "lb-method": "least_time header"}]},
     'spec.upstreams[0].lb-method: Invalid value: "least_time header": invalid load balancing method'),
    ({"routes": [{"path": "tea", "action": {"pass": "tea"}}]},
     'spec.routes[0].path: Invalid value: "tea": must start with /, ~, ^~ or ='),
    ({"routes": [{"path": "/", "action": {"pass": "tea"}}, {"path": "/", "action": {"pass": "tea"}}]},
     'spec.routes[1].path: Duplicate value: "/"'),
    ({"routes": [{"path": "~ (", "action": {"pass": "tea"}}]},
     'spec.routes[0].path: Invalid value: "~ (": must be a valid regular expression'),
    ({"routes": [{"path": "/", "action": {"pass": "coffee"}}]},
     'spec.routes[0].action.pass: Unsupported value: "coffee": supported values: "tea"'),
    ({"routes": [{"path": "/", "action": {"pass": "tea", "return": {"body": "x"}}}]},
     "spec.routes[0].action: Invalid value: \"\": must specify exactly one of"),
    ({"routes": [{"path": "/", "action": {"redirect": {"url": "http://${request_body}"}}}]},
     "'request_body' is not a supported variable"),
    ({"routes": [{"path": "/", "action": {"return": {"body": "$host"}}}]},
     "variables must be enclosed in curly braces"),
    ({"routes": [{"path": "/", "action": {"return": {"body": 'say "hi"'}}}]},
     "must have all '\"' escaped"),
    ({"routes": [{"path": "/", "action": {"redirect": {"url": "http://x", "code": 303}}}]},
     'spec.routes[0].action.redirect.code: Unsupported value: 303'),
    ({"routes": [{"path": "/", "splits": [{"weight": 50, "action": {"pass": "tea"}},
                                          {"weight": 40, "action": {"pass": "tea"}}]}]},
     "the sum of the weights of all splits must be equal to 100"),
    ({"routes": [{"path": "/", "action": {"pass": "tea"},
                  "matches": [{"conditions": [{"header": "X", "cookie": "c", "value": "v"}],
                               "action": {"pass": "tea"}}]}]},
     "spec.routes[0].matches[0].conditions[0]: Invalid value: \"\": must specify exactly one of"),
    ({"routes": [{"path": "/", "action": {"pass": "tea"},
                  "errorPages": [{"codes": [200], "return": {"body": "x"}}]}]},
     "spec.routes[0].errorPages[0].codes[0]: Invalid value: 200: must be in the range [300, 599]"),
    ({"tls": {"secret": "s", "redirect": {"basedOn": "header"}}},
     'spec.tls.redirect.basedOn: Unsupported value: "header"'),
    ({"routes": [{"path": "/", "action": {"return": {"body": "a\x07b"}}}]},
     "must not contain control characters"),
])
def test_nic_field_errors(spec: dict[str, Any], message: str) -> None:
    found = errors(vs(**spec))
    assert any(message in e for e in found), found


def test_all_errors_are_reported_together_in_nic_aggregate_form() -> None:
    bad = vs(host="", routes=[{"path": "x", "action": {"pass": "no"}}])
    msg = aggregate_message(validate_virtual_server(bad))
    assert msg.startswith("[spec.host: Required value, ") and msg.endswith("]")


def test_class_filter_and_claims() -> None:
    model = VirtualServerModel("nginx")
    assert model.is_ours(vs()) and model.is_ours(vs(ingressClassName="nginx"))
    assert not model.is_ours(vs(ingressClassName="other"))
    claims = model.claims(vs(tls={"secret": "cafe-tls"}))
    assert claims.role == "parent" and claims.hosts == ("cafe.example.com",)
    assert claims.services == (("demo", "tea"),) and claims.secrets == (("demo", "cafe-tls"),)


def test_plus_fields_are_warnings_not_errors() -> None:
    obj = vs(upstreams=[{"name": "tea", "service": "tea", "port": 80, "healthCheck": {"enable": True},
                         "sessionCookie": {"enable": True, "name": "s"}}])
    assert errors(obj) == []
    # sessionCookie is open source since NIC 5.4 (`sticky cookie`, on an NGINX that has it).
    assert plus_only_warnings(obj["spec"]) == [
        "spec.upstreams[0].healthCheck requires NGINX Plus; it is ignored"]


def test_virtual_server_route_rules() -> None:
    vsr = {"metadata": {"name": "tea", "namespace": "t"},
           "spec": {"host": "cafe.example.com", "upstreams": [{"name": "tea", "service": "tea", "port": 80}],
                    "subroutes": [{"path": "/tea", "action": {"pass": "tea"}},
                                  {"path": "/tea/x", "route": "a/b"}]}}
    found = [str(e) for e in validate_virtual_server_route(vsr)]
    assert "spec.subroutes[1].route: Forbidden: is not allowed in a subroute" in found
    vsr["spec"]["subroutes"].pop()
    assert validate_virtual_server_route(vsr) == []
    assert vsr_fit_errors("/tea", vsr) == []
    assert vsr_fit_errors("/coffee", vsr) == [
        "spec.subroutes[0].path: Invalid value: '/tea': must start with '/coffee'"]
    assert vsr_fit_errors("=/tea", vsr) != [] and vsr_fit_errors("~ /tea", vsr) != []
    model = VirtualServerRouteModel("nginx")
    key = ResourceKey("virtualserverroute", "t/tea")
    problem = model.child_problem(make_entry(key, vsr, model.claims(vsr)))
    assert (problem.reason, problem.is_error) == ("NoVirtualServerFound", False)
