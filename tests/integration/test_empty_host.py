"""-allow-empty-ingress-host through devcluster, the controller and NGINX: a rule without a host serves the
hosts no other server names, by the same mechanism as the class-wide catch-all (an Ingress without rules and
with a defaultBackend): one place, the oldest claimant wins, the other gets a Warning naming it and takes over
when it goes. Without the flag such a rule is rejected, as NIC does."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import wait_until
from tests.integration.harness import NS, Env, rule

pytestmark = pytest.mark.integration


def _hostless(path: str, service: str) -> dict[str, Any]:
    r = rule("", (path, service))
    del r["host"]
    return r


def test_a_rule_without_a_host_serves_unknown_hosts(env: Env) -> None:
    for name in ("tea", "coffee", "fallback"):
        env.service(name)
        env.endpoints(name, [env.backend(name)])
    c = env.controller(env.settings(allow_empty_ingress_host=True))
    env.ingress("named", [rule("cafe.example.com", ("/", "coffee"))])
    env.ingress("a-hostless", [_hostless("/tea", "tea")])
    r = wait_until(lambda: (x := c.get("anything.example.org", "/tea/x")).backend == "tea" and x,
                   "host-less rule")
    assert r.body == "tea GET anything.example.org/tea/x\n"
    assert c.get("cafe.example.com", "/tea").backend == "coffee"  # a named host keeps its own server
    assert c.get("anything.example.org", "/other").status == 404
    # A catch-all without rules competes for the same place: the host-less Ingress, older (or as old and
    # first by name), keeps it.
    env.ingress("catch-all", default_backend={"service": {"name": "fallback", "port": {"number": 80}}})
    e = env.wait_event("catch-all", "Rejected", f"by Ingress {NS}/a-hostless")
    assert e["type"] == "Warning"
    assert c.get("anything.example.org", "/tea").backend == "tea"
    # When the host-less Ingress goes, the catch-all takes over.
    env.delete("ingresses", "a-hostless")
    wait_until(lambda: c.get("anything.example.org", "/tea").backend == "fallback", "catch-all took over")


def test_without_the_flag_a_rule_without_a_host_is_rejected(env: Env) -> None:
    env.service("tea")
    env.endpoints("tea", [env.backend("tea")])
    c = env.controller()
    env.ingress("a-hostless", [_hostless("/tea", "tea")])
    env.wait_event("a-hostless", "Rejected", "spec.rules[0].host: Required value")
    assert c.get("anything.example.org", "/tea").status == 404
