"""NIC 5.5's WAF and JWT-claim rate-limit examples (custom-resources app-protect-waf(-v5),
security-monitoring(-v5), rate-limit-jwt-claim), in their published form applied with kubectl, on
open-source NGINX: each Policy gets NIC's reason (a `waf` Policy is accepted like `jwt`/`oidc` and the
route fails closed with `WAF policy ... requires NGINX Plus`; a rate-limit key with `${jwt_claim_sub}` is
`Forbidden: is only supported in NGINX Plus`), the routes that use them answer 500, the others serve."""

from __future__ import annotations

import pytest

from tests.integration.harness import NS, Env
from tests.integration.policy_helpers import policy_env, wait_policy_state
from tests.integration.policy_servers import call
from tests.integration.vs_helpers import wait_vs_state
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration

MANIFESTS = """\
apiVersion: k8s.nginx.org/v1
kind: Policy
metadata:
  name: waf-policy
spec:
  waf:
    enable: true
    apBundle: "<policy_bundle_name>.tgz"
    securityLogs:
    - enable: true
      apLogBundle: "<log_bundle_name>.tgz"
      logDest: "syslog:server=syslog-svc.default:514"
---
apiVersion: k8s.nginx.org/v1
kind: Policy
metadata:
  name: rate-limit-jwt
spec:
  rateLimit:
    rate: 1r/s
    key: ${jwt_claim_sub}
    zoneSize: 10M
---
apiVersion: k8s.nginx.org/v1
kind: VirtualServer
metadata:
  name: webapp
spec:
  host: webapp.example.com
  upstreams:
  - name: webapp
    service: web
    port: 80
  routes:
  - path: /waf
    policies:
    - name: waf-policy
    action:
      pass: webapp
  - path: /jwt-claim
    policies:
    - name: rate-limit-jwt
    action:
      pass: webapp
  - path: /open
    action:
      pass: webapp
"""


def test_waf_and_jwt_claim_rate_limit_examples_fail_closed_with_nics_reasons(env: Env) -> None:
    policy_env(env)
    path = f"{env.tmp}/examples.yaml"
    with open(path, "w") as f:
        f.write(MANIFESTS)
    applied = Kubectl(env.kubeconfig, env.tmp).run("apply", "-n", NS, "-f", path)
    assert applied.returncode == 0, applied.stderr
    c = env.controller()
    c.wait_backend("webapp.example.com", "/open", "web")
    wait_policy_state(env, "waf-policy", "Valid")
    st = wait_policy_state(env, "rate-limit-jwt", "Invalid")
    assert "spec.rateLimit.key: Forbidden: is only supported in NGINX Plus" in st["message"], st
    assert "not a supported variable" not in st["message"], st
    st = wait_vs_state(env, "webapp", "Warning", "AddedOrUpdatedWithWarning")
    assert f"WAF policy {NS}/waf-policy requires NGINX Plus" in st["message"], st
    assert f"Policy {NS}/rate-limit-jwt is missing or invalid" in st["message"], st
    assert call(c.http_port, "webapp.example.com", "/waf").status == 500
    assert call(c.http_port, "webapp.example.com", "/jwt-claim").status == 500
