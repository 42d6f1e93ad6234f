"""The controller end to end: devcluster, controller threads, real NGINX and backends; HTTP(S) routing."""

from __future__ import annotations

import pytest

from tests.helpers import wait_until
from tests.integration.harness import NS, Env, rule

pytestmark = pytest.mark.integration


def test_one_host_several_paths_several_services(env: Env) -> None:
    backends = {}
    for name in ("reports-runner", "reports-cron", "reports-admin"):
        env.service(name)
        backends[name] = env.backend(name)
        env.endpoints(name, [backends[name]])
    env.ingress("reports", [rule("reports.example.com", ("/reports-runner", "reports-runner"),
                                 ("/reports-cron", "reports-cron"),
                                 ("/reports-admin", "reports-admin", "http"))])
    c = env.controller()
    for name in backends:
        r = c.wait_backend("reports.example.com", f"/{name}", name)
        assert r.status == 200 and r.body.startswith(f"{name} GET reports.example.com/{name}")
    # Prefix follows the Kubernetes element-wise rule: /reports-cron/x matches, /reports-cronx does not.
    assert c.get("reports.example.com", "/reports-cron/sub").backend == "reports-cron"
    assert c.get("reports.example.com", "/reports-cronx").status == 404
    # Unknown host: the default server.
    assert c.get("unknown.example.com", "/reports-runner").status == 404
    env.wait_event("reports", "AddedOrUpdated", "Configuration for demo/reports was added or updated")
    assert c.reloads == 1


def test_several_hosts_and_other_class_ignored(env: Env) -> None:
    for name in ("a", "b", "c"):
        env.service(name)
        env.endpoints(name, [env.backend(name)])
    env.ingress("ing-a", [rule("a.example.com", ("/", "a"))])
    env.ingress("ing-b", [rule("b.example.com", ("/", "b"))])
    env.ingress("other", [rule("c.example.com", ("/", "c"))], cls="other")
    # The annotation wins. A real API server refuses to create this Ingress (the class field and the
    # annotation disagree), as devcluster does; it may exist from before that rule, so it is loaded.
    env.cluster.load([env.ingress("annotated", [rule("d.example.com", ("/", "c"))], cls="other",
                                  annotations={"kubernetes.io/ingress.class": "nginx"}, apply=False)])
    env.ingress("no-class", [rule("e.example.com", ("/", "c"))], cls=None)
    c = env.controller()
    c.wait_backend("a.example.com", "/", "a")
    c.wait_backend("b.example.com", "/x/y", "b")
    c.wait_backend("d.example.com", "/", "c")
    assert c.get("c.example.com", "/").status == 404
    assert c.get("e.example.com", "/").status == 404
    assert env.events("other") == [] and env.events("no-class") == []


def test_tls_termination_with_sni(env: Env) -> None:
    from tests.helpers import make_cert

    cert = make_cert("secure.example.com")
    env.create(cert.secret("secure-tls", NS))
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("secure", [rule("secure.example.com", ("/", "web"))],
                tls=[{"hosts": ["secure.example.com"], "secretName": "secure-tls"}])
    c = env.controller()
    r = wait_until(lambda: (x := c.https("secure.example.com", "/hello")).status == 200 and x, "https 200")
    assert r.backend == "web" and r.peer_cert_der == cert.der
    # HTTP redirects to HTTPS (ssl-redirect defaults to true for TLS hosts).
    plain = c.get("secure.example.com", "/hello")
    assert plain.status in (301, 308) and plain.headers["location"].startswith("https://secure.example.com:")
    # No certificate for an unknown SNI name: the default server rejects the handshake.
    with pytest.raises(OSError):
        c.https("nobody.example.com", "/")


def test_readiness_with_zero_ingresses(env: Env) -> None:
    import urllib.request

    c = env.controller()
    with urllib.request.urlopen(f"http://127.0.0.1:{c.ready_port}/nginx-ready", timeout=10) as r:
        assert r.status == 200 and r.read() == b"Ready\n"
    assert c.get("anything.example.com", "/").status == 404
    # Nothing to apply: the first drain renders exactly what NGINX started with, so it does not reload.
    assert c.reloads == 0 and c.manager.config_version == 0
