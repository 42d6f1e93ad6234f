"""The NGINX Plus policy types as NIC's examples use them on open-source NGINX: `waf` is a type (accepted,
shape-checked like `jwt` and `oidc`, never rendered), and a rate-limit key's `${jwt_claim_*}` /
`${jwt_header_*}` are NIC's `Forbidden: is only supported in NGINX Plus` (accepted on NGINX Plus)."""

from __future__ import annotations

from typing import Any

from ingressctl.policies.base import PolicyValidationConfig
from ingressctl.policies.validation import validate_policy


def errors(spec: dict[str, Any], *, plus: bool = False) -> list[str]:
    obj = {"metadata": {"name": "p", "namespace": "default"}, "spec": spec}
    return [str(e) for e in validate_policy(obj, PolicyValidationConfig(is_plus=plus))]


def test_waf_is_a_policy_type_with_nics_shape_rule() -> None:
    assert errors({"waf": {"enable": True, "apBundle": "bundle.tgz"}}) == []
    assert errors({"waf": {"enable": True, "apPolicy": "default/dataguard-alarm"}}) == []
    msg = "apPolicy and apBundle fields in the WAF policy are mutually exclusive"
    assert errors({"waf": {"apPolicy": "a", "apBundle": "b.tgz"}}) == [
        f'spec.waf.apPolicy: Invalid value: "a": {msg}', f'spec.waf.apBundle: Invalid value: "b.tgz": {msg}']
    assert any("must specify exactly one of" in e and "`waf`" in e
               for e in errors({"waf": {}, "jwt": {"realm": "r", "secret": "s"}}))


def test_a_jwt_claim_in_a_rate_limit_key_needs_nginx_plus() -> None:
    spec = {"rateLimit": {"rate": "1r/s", "key": "${jwt_claim_sub}", "zoneSize": "10M"}}
    assert errors(spec) == ["spec.rateLimit.key: Forbidden: is only supported in NGINX Plus"]
    assert errors(spec, plus=True) == []
    spec["rateLimit"]["key"] = "${jwt_header_kid}${binary_remote_addr}"
    assert errors(spec) == ["spec.rateLimit.key: Forbidden: is only supported in NGINX Plus"]
    spec["rateLimit"]["key"] = "${jwt_claim_a-b}"      # not a variable name: as before
    assert errors(spec, plus=True) == ['spec.rateLimit.key: Invalid value: "${jwt_claim_a-b}": '
                                       "'jwt_claim_a-b' is not a supported variable"]
