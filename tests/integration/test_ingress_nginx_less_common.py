"""The less common ingress-nginx annotations through the real controller (`--ingress-nginx-compat`), kubectl,
devcluster and a real NGINX (tests/integration/data/ingress-nginx/less-common.yaml): temporal redirect codes,
the current names of the allowlists winning over the old ones, `load-balance`, `proxy-http-version` and
canary weights out of a total above 100, and canaries chosen by a header pattern."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import wait_until
from tests.integration.harness import NS, Env
from tests.integration.ingress_nginx_helpers import N, apply_manifest, compat_controller, request, special
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration

HOSTS = ("temporary", "oddcode", "allow", "limited", "ewma", "rr", "http10", "total", "pattern")


def test_less_common_annotations(env: Env, kubectl: Kubectl) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.service("replicas")
    env.endpoints("replicas", [special(env, f"replica-{i}") for i in range(3)])
    for name in ("stable", "canary"):
        env.service(name)
        env.endpoints(name, [special(env, name)])
    apply_manifest(env, kubectl, "less-common.yaml")
    c = compat_controller(env)
    port = c.http_port
    for host in HOSTS:
        wait_until(lambda h=host: request(port, f"{h}.example.com", source="127.0.0.2").status != 404,
                   f"{host} served")

    # temporal-redirect-code: 307 is taken; 399 is not a temporary code: 302, as ingress-nginx
    r = request(port, "temporary.example.com", "/x")
    assert (r.status, r.headers["location"]) == (307, "https://status.example.org/")
    assert request(port, "oddcode.example.com", "/x").status == 302

    # allowlist-source-range wins over whitelist-source-range
    assert request(port, "allow.example.com", source="127.0.0.2").status == 200
    assert request(port, "allow.example.com", source="127.0.0.3").status == 403

    # limit-allowlist wins over limit-whitelist: its client is never limited, the other one is
    assert {request(port, "limited.example.com", source="127.0.0.4").status for _ in range(10)} == {200}
    codes = [request(port, "limited.example.com", source="127.0.0.9").status for _ in range(10)]
    assert codes[0] == 200 and 503 in codes

    # load-balance: both spread the requests over the replicas; ewma is `random two least_conn`
    for host in ("ewma", "rr"):
        seen = {request(port, f"{host}.example.com").headers["x-backend"] for _ in range(30)}
        assert seen == {"replica-0", "replica-1", "replica-2"}, host
    conf = Path(c.manager.conf_dir, "conf.d", f"{NS}-balanced.conf").read_text()
    assert "random two least_conn;" in conf
    assert "least_conn" not in Path(c.manager.conf_dir, "conf.d", f"{NS}-round-robin.conf").read_text()
    env.wait_event("balanced", "AddedOrUpdatedWithWarning", f"{N}load-balance")

    # proxy-http-version: "1.0" is served over HTTP/1.1, with a warning naming it
    assert request(port, "http10.example.com").status == 200
    env.wait_event("http10", "AddedOrUpdatedWithWarning", f"{N}proxy-http-version")

    # canary-weight out of canary-weight-total (1000): 25% over 1,000 requests, within 5 points
    shares = [request(port, "total.example.com").headers["x-backend"] for _ in range(1000)]
    assert 200 <= shares.count("canary") <= 300 and shares.count("canary") + shares.count("stable") == 1000

    # canary-by-header-pattern: a header matching it goes to the canary, any other value to the primary
    def backend(value: str) -> str:
        return request(port, "pattern.example.com", headers={"X-Group": value}).headers["x-backend"]

    assert (backend("beta"), backend("alpha")) == ("canary", "canary")
    assert {backend(v) for v in ("gamma", "betamax", "Beta")} == {"stable"}
    assert request(port, "pattern.example.com").headers["x-backend"] == "stable"
