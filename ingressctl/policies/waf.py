"""The `waf` Policy type (NGINX App Protect WAF, NGINX Plus): accepted and validated, never rendered; a
context that uses it fails closed (500) with the warning "WAF policy ... requires NGINX Plus".

Validation: `apPolicy` and `apBundle` are mutually exclusive (NIC's rule), and neither carries a control
character.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingressctl.policies.base import PolicyType, PolicyValidationConfig, plus_only
from ingressctl.validation import FieldError, as_str, control, invalid


def validate_waf(field: str, spec: Mapping[str, Any], config: PolicyValidationConfig) -> list[FieldError]:
    errs: list[FieldError] = []
    if as_str(spec.get("apPolicy")) and as_str(spec.get("apBundle")):
        msg = "apPolicy and apBundle fields in the WAF policy are mutually exclusive"
        errs += [invalid(f"{field}.{name}", spec[name], msg) for name in ("apPolicy", "apBundle")]
    for name in ("apPolicy", "apBundle"):
        errs.extend(control(f"{field}.{name}", as_str(spec.get(name))))
    return errs


TYPE = PolicyType(
    key="waf",
    label="WAF",
    validate=validate_waf,
    render=plus_only("WAF"),
    plus_only=True,
    fields_doc="NIC's fields",
    nginx_doc="NGINX Plus with App Protect only: accepted, never served (see below)",
)
