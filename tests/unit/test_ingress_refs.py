"""The Secret references of an Ingress: TLS Secrets in order, then the basic-auth Secret, de-duplicated;
a TLS entry without a Secret uses the wildcard one; malformed parts never raise."""

from __future__ import annotations

from typing import Any

import pytest

from ingressctl.kinds.ingress.annotations_nginx_org import BASIC_AUTH_SECRET
from ingressctl.kinds.ingress.refs import IngressSecrets, ingress_secrets


def test_tls_secrets_in_order_then_basic_auth_unique() -> None:
    ing = {"metadata": {"annotations": {BASIC_AUTH_SECRET: "auth"}},
           "spec": {"tls": [{"secretName": "b"}, {"secretName": "a"}, {"secretName": "b"},
                            {"secretName": "auth"}]}}
    assert ingress_secrets(ing) == IngressSecrets(("b", "a", "auth"), False)


@pytest.mark.parametrize("tls", [[{}], [{"secretName": ""}], [{"secretName": None}], [None], ["x"],
                                 [{"hosts": ["a.com"]}, {"secretName": "s"}]])
def test_a_tls_entry_without_a_secret_uses_the_default(tls: list[Any]) -> None:
    names = ("s",) if any(isinstance(t, dict) and t.get("secretName") for t in tls) else ()
    assert ingress_secrets({"spec": {"tls": tls}}) == IngressSecrets(names, True)


@pytest.mark.parametrize("ing", [{}, {"spec": None}, {"spec": []}, {"spec": {"tls": None}},
                                 {"spec": {"tls": {}}}, {"metadata": None},
                                 {"metadata": {"annotations": None}},
                                 {"metadata": {"annotations": ["x"]}},
                                 {"metadata": {"annotations": {BASIC_AUTH_SECRET: ""}}}])
def test_malformed_or_empty_references_nothing(ing: dict[str, Any]) -> None:
    assert ingress_secrets(ing) == IngressSecrets((), False)


def test_non_string_values_are_named_as_strings() -> None:
    ing = {"metadata": {"annotations": {BASIC_AUTH_SECRET: 5}}, "spec": {"tls": [{"secretName": 7}]}}
    assert ingress_secrets(ing) == IngressSecrets(("7", "5"), False)
