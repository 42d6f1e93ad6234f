"""A VirtualServer's spec-level policies guard the paths no route matches, as NIC's server-level policies do
(NIC's custom-resources/api-key example answers `/` with 401): the manifests, in the published forms (a
multi-document file with a Namespace, `---` separators, comments, lists, stringData and single-quoted
values), applied with kubectl; requests through the real controller and NGINX. An unrouted path answers the
policy's 401 / 403 first and 404 only once the request passes it."""

from __future__ import annotations

import os

import pytest

from tests.integration.harness import Env
from tests.integration.policy_helpers import basic, install_policy_crds, wait_policy_state
from tests.integration.policy_servers import call
from tests.integration.vs_helpers import wait_vs_state
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration

NS = "cafe-keys"
MANIFESTS = f"""\
# The api-key example's shapes: a spec-level apiKey policy on a VirtualServer with one route.
apiVersion: v1
kind: Namespace
metadata:
  name: {NS}
---
apiVersion: v1
kind: Secret
metadata:
  name: api-key-client-secret
  namespace: {NS}
type: nginx.org/apikey
stringData:
  client1: 'password'
  client2: 'another-password'
---
apiVersion: k8s.nginx.org/v1
kind: Policy
metadata:
  name: api-key-policy
  namespace: {NS}
spec:
  apiKey:
    suppliedIn:
      header:
      - "X-header-name"
      query:
      - "queryName"
    clientSecret: api-key-client-secret
---
apiVersion: v1
kind: Secret
metadata:
  name: cafe-passwd
  namespace: {NS}
type: nginx.org/htpasswd
stringData:
  htpasswd: 'foo:{{SHA}}Ys23Ag/5IOWqZCw9QGaVDdHwH00='   # the password is bar
---
apiVersion: k8s.nginx.org/v1
kind: Policy
metadata:
  name: basic-auth-policy
  namespace: {NS}
spec:
  basicAuth:
    realm: 'My Cafe App'
    secret: cafe-passwd
---
apiVersion: k8s.nginx.org/v1
kind: Policy
metadata:
  name: deny-local
  namespace: {NS}
spec:
  accessControl:
    deny:
    - 127.0.0.1
---
apiVersion: k8s.nginx.org/v1
kind: VirtualServer
metadata:
  name: cafe
  namespace: {NS}
spec:
  host: cafe.example.com
  policies:
  - name: api-key-policy
  upstreams:
  - name: coffee
    service: coffee-svc
    port: 80
  routes:
  - path: /coffee
    action:
      pass: coffee
---
apiVersion: k8s.nginx.org/v1
kind: VirtualServer
metadata:
  name: members
  namespace: {NS}
spec:
  host: members.example.com
  policies:
  - name: basic-auth-policy
  upstreams:
  - name: coffee
    service: coffee-svc
    port: 80
  routes:
  - path: /coffee
    action:
      pass: coffee
---
apiVersion: k8s.nginx.org/v1
kind: VirtualServer
metadata:
  name: closed
  namespace: {NS}
spec:
  host: closed.example.com
  policies:
  - name: deny-local
    namespace: {NS}
  upstreams:
  - name: coffee
    service: coffee-svc
    port: 80
  routes:
  - path: /coffee
    action:
      pass: coffee
"""


def test_spec_policies_guard_unrouted_paths(env: Env, kubectl: Kubectl) -> None:
    install_policy_crds(env)
    path = os.path.join(env.tmp, "cafe.yaml")
    with open(path, "w") as f:
        f.write(MANIFESTS)
    out = kubectl.run("apply", "-f", path)
    assert out.returncode == 0, out.stderr
    env.service("coffee-svc", namespace=NS)
    env.endpoints("coffee-svc", [env.backend("coffee")], namespace=NS)
    c = env.controller()
    for name in ("api-key-policy", "basic-auth-policy", "deny-local"):
        wait_policy_state(env, name, "Valid", namespace=NS)
    for vs in ("cafe", "members", "closed"):
        wait_vs_state(env, vs, "Valid", "AddedOrUpdated", namespace=NS)

    def get(host: str, p: str, **headers: str) -> tuple[int, str]:
        r = call(c.http_port, host, p, headers=headers)
        return r.status, r.backend

    # apiKey (spec level): the README's `curl .../` answers 401; a wrong key 403; a right key passes the
    # policy and then meets the 404 of a path no route serves.
    assert get("cafe.example.com", "/") == (401, "")
    assert get("cafe.example.com", "/tea", **{"X-header-name": "wrongpassword"}) == (403, "")
    assert get("cafe.example.com", "/tea", **{"X-header-name": "password"})[0] == 404
    assert get("cafe.example.com", "/?queryName=another-password")[0] == 404
    assert get("cafe.example.com", "/coffee", **{"X-header-name": "password"}) == (200, "coffee")
    assert get("cafe.example.com", "/coffee") == (401, "")
    # basicAuth and accessControl (spec level, server directives of the access phase) as well.
    assert get("members.example.com", "/")[0] == 401
    assert get("members.example.com", "/menu", **basic("foo", "bar"))[0] == 404
    assert get("members.example.com", "/coffee", **basic("foo", "bar")) == (200, "coffee")
    assert get("closed.example.com", "/")[0] == 403
    assert get("closed.example.com", "/coffee")[0] == 403
