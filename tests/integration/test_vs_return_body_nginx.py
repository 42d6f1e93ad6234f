"""VirtualServer return bodies through devcluster, the controller and a real NGINX, served as NIC serves them:
NIC puts a body between double quotes as it is, so NGINX turns `\\n`, `\\t`, `\\r`, `\\\\`, `\\"` into their
characters (NIC 5.5's path-matching example writes its multi-line bodies in YAML single quotes that way).
Hostile bodies (a backslash before the closing quote, `\\\\"`, `\\$`, raw newlines, `;`, braces, variables NIC
does not allow) are either rejected with an error naming the field, harming no other resource, or served
exactly as NGINX reads the escapes; none ends the string or adds a directive."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ingressctl.kinds.virtualserver.validation import validate_virtual_server
from tests.integration.harness import NS, Env
from tests.integration.policy_servers import call
from tests.integration.vs_helpers import apply_vs, install_crds, virtual_server, wait_vs_state
from tests.unit.test_configs_quoting import _unescape
from tests.unit.test_vs_return_body import PIECES
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration

HOST = "path-matching.example.com"
# The form of NIC 5.5's examples/custom-resources/path-matching (our own routes and texts): YAML single
# quotes, so a backslash and an `n` reach the API; and a YAML double-quoted body with a real newline.
PATH_MATCHING = r"""
apiVersion: k8s.nginx.org/v1
kind: VirtualServer
metadata:
  name: path-matching
spec:
  host: path-matching.example.com
  upstreams:
  - name: gone
    service: gone-svc
    port: 80
  routes:
  - path: "=/logo.jpg"
    action:
      return:
        code: 200
        type: text/plain
        body: 'EXACT MATCH (=)\nPath Directive: =/logo.jpg\nRequest URI:    ${request_uri}\n'
  - path: "~ \\.jpg$"
    action:
      return:
        code: 200
        type: text/plain
        body: 'REGEX MATCH (~)\nPath Directive: ~ \\.jpg\tand\ttabs\nQuote: \"q\" ${host}\n'
  - path: /plain
    action:
      return:
        body: "OK\n"
  - path: /down
    action:
      pass: gone
    errorPages:
    - codes: [502]
      return:
        code: 503
        type: text/plain
        body: 'Upstream status: ${upstream_status}\nTry again.\r\n'
"""


def test_return_bodies_in_nics_published_form_are_served_as_nic_serves_them(env: Env) -> None:
    install_crds(env)
    env.service("gone-svc")
    env.endpoints("gone-svc", [])
    path = f"{env.tmp}/path-matching.yaml"
    with open(path, "w") as f:
        f.write(PATH_MATCHING)
    applied = Kubectl(env.kubeconfig, env.tmp).run("apply", "-n", NS, "-f", path)
    assert applied.returncode == 0, applied.stderr
    c = env.controller()
    wait_vs_state(env, "path-matching", "Valid", "AddedOrUpdated")
    r = call(c.http_port, HOST, "/logo.jpg")
    assert (r.status, r.body) == (200, "EXACT MATCH (=)\nPath Directive: =/logo.jpg\n"
                                       "Request URI:    /logo.jpg\n")
    assert r.headers["content-type"] == "text/plain"
    r = call(c.http_port, HOST, "/x/photo.jpg")
    assert (r.status, r.body) == (200, "REGEX MATCH (~)\nPath Directive: ~ \\.jpg\tand\ttabs\n"
                                       f'Quote: "q" {HOST}\n')
    assert call(c.http_port, HOST, "/plain").body == "OK\n"
    r = call(c.http_port, HOST, "/down")
    assert (r.status, r.body) == (503, "Upstream status: 502\nTry again.\r\n")


def _expected(body: str, uri: str) -> str:
    """What a client gets: NGINX's escapes applied, then the variables."""
    return _unescape(body).replace("${host}", HOST).replace("${request_uri}", uri)


def test_hostile_bodies_are_rejected_or_served_exactly_as_nginx_reads_them(env: Env) -> None:
    install_crds(env)
    env.service("gone-svc")
    env.endpoints("gone-svc", [])
    rng = random.Random(20261202)
    bodies = sorted({"".join(rng.choice(PIECES) for _ in range(rng.randint(1, 8))) for _ in range(300)})
    served: list[str] = []
    rejected: list[str] = []
    for body in bodies:
        probe = virtual_server("probe", HOST, routes=[{"path": "/", "action": {"return": {"body": body}}}])
        (rejected if validate_virtual_server(probe) else served).append(body)
    assert len(served) > 40 and len(rejected) > 40, (len(served), len(rejected))
    routes: list[dict[str, Any]] = [
        {"path": f"=/b/{i}", "action": {"return": {"code": 200, "type": "text/plain", "body": b}}}
        for i, b in enumerate(served)]
    routes += [{"path": f"=/e/{i}", "action": {"pass": "gone"},
                "errorPages": [{"codes": [502], "return": {"code": 503, "body": b}}]}
               for i, b in enumerate(served[:30]) if "${" not in b]
    vs = virtual_server("bodies", HOST, upstreams=[{"name": "gone", "service": "gone-svc", "port": 80}],
                        routes=routes)
    apply_vs(env, vs)
    for i, body in enumerate(rejected[:12]):    # each in a VirtualServer of its own, beside the good one
        apply_vs(env, virtual_server(f"bad-{i}", f"bad-{i}.example.com",
                                  routes=[{"path": "/", "action": {"return": {"body": body}}}]))
    c = env.controller()
    wait_vs_state(env, "bodies", "Valid", "AddedOrUpdated")
    for i, body in enumerate(rejected[:12]):
        st = wait_vs_state(env, f"bad-{i}", "Invalid", "Rejected")
        assert "spec.routes[0].action.return.body: Invalid value" in st["message"], (body, st)
    for i, body in enumerate(served):
        r = call(c.http_port, HOST, f"/b/{i}")
        assert (r.status, r.body) == (200, _expected(body, f"/b/{i}")), repr(body)
    for route in routes[len(served):]:
        p = route["path"].removeprefix("=")
        body = route["errorPages"][0]["return"]["body"]
        r = call(c.http_port, HOST, p)
        assert (r.status, r.body) == (503, _unescape(body)), repr(body)
