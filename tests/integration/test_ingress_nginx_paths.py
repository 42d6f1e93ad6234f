"""ingress-nginx's `use-regex` and `rewrite-target` through the real controller (`--ingress-nginx-compat`),
devcluster, kubectl and a real NGINX: ingress-nginx's own rewrite example sends `/something/new` to the
backend as `/new`; regex mode makes every path of the host a case-insensitive regex anchored at the start,
the longest first; a target without capture groups replaces the whole URI; a target ingress-nginx's validator
refuses rejects the Ingress (nothing of it reaches NGINX) and harms no other Ingress."""

from __future__ import annotations

import pytest

from tests.helpers import wait_until
from tests.integration.harness import NS, Env
from tests.integration.ingress_nginx_helpers import apply_manifest, compat_controller, request, special
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration


def test_rewrite_target_and_use_regex(env: Env, kubectl: Kubectl) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.service("special")
    env.endpoints("special", [special(env, "special")])
    apply_manifest(env, kubectl, "rewrite.yaml")
    c = compat_controller(env)
    port = c.http_port
    for host in ("rewrite.bar.com", "regex.example.com", "whole.example.com"):
        wait_until(lambda h=host: request(port, h, "/something/x" if h.startswith("rewrite") else "/app")
                   .status in (200, 404), f"{host} served")

    def seen(host: str, path: str) -> str:
        r = request(port, host, path)
        assert r.status == 200, (host, path, r.status, r.body)
        return r.body

    # ingress-nginx's docs example: the second capture group is the URI the backend gets
    assert seen("rewrite.bar.com", "/something/new") == "special GET rewrite.bar.com/new\n"
    assert seen("rewrite.bar.com", "/something") == "special GET rewrite.bar.com/\n"
    assert seen("rewrite.bar.com", "/something/a/b?q=1") == "special GET rewrite.bar.com/a/b?q=1\n"
    assert seen("rewrite.bar.com", "/SomeThing/new") == "special GET rewrite.bar.com/new\n"  # (?i)
    assert request(port, "rewrite.bar.com", "/other").status == 404
    # use-regex: the longest regex first, case-insensitive, the Prefix path a plain regex prefix
    assert seen("regex.example.com", "/api/V2/items/7") == "special GET regex.example.com/api/V2/items/7\n"
    assert seen("regex.example.com", "/API/v1/other").startswith("web ")
    assert seen("regex.example.com", "/apix").startswith("web ")  # no element-wise Prefix in regex mode
    assert request(port, "regex.example.com", "/nothing").status == 404
    # a target without captures replaces the whole URI; the path stays a prefix regex
    assert seen("whole.example.com", "/app/deep/x") == "special GET whole.example.com/landing\n"
    assert seen("whole.example.com", "/application") == "special GET whole.example.com/landing\n"

    # A target ingress-nginx refuses rejects the Ingress; the others keep serving.
    done = kubectl.run("annotate", "--overwrite", "-n", NS, "ingress", "whole",
                       "nginx.ingress.kubernetes.io/rewrite-target=/x;return 200 pwned")
    assert done.returncode == 0, done.stderr
    env.wait_event("whole", "Rejected", "annotations.nginx.ingress.kubernetes.io/rewrite-target: "
                                        'Invalid value: "/x;return 200 pwned"')
    c.wait_status("whole.example.com", "/app", 404)
    assert seen("rewrite.bar.com", "/something/new") == "special GET rewrite.bar.com/new\n"
