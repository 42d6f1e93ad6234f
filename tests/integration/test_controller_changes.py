"""Changes while running: paths, backends, endpoints, deletes, Secrets, host conflicts (real HTTP)."""

from __future__ import annotations

import collections

import pytest

from tests.helpers import make_cert, wait_until
from tests.integration.harness import NS, Env, rule

pytestmark = pytest.mark.integration

HOST = "app.example.com"


def setup_services(env: Env, *names: str) -> None:
    for name in names:
        env.service(name)
        env.endpoints(name, [env.backend(name)])


def test_add_and_remove_a_path_and_change_a_backend(env: Env) -> None:
    setup_services(env, "one", "two", "three")
    env.ingress("app", [rule(HOST, ("/one", "one"))])
    c = env.controller()
    c.wait_backend(HOST, "/one", "one")
    assert c.get(HOST, "/two").status == 404

    env.ingress("app", [rule(HOST, ("/one", "one"), ("/two", "two"))])       # add a path
    c.wait_backend(HOST, "/two", "two")
    assert c.get(HOST, "/one").backend == "one"

    env.ingress("app", [rule(HOST, ("/two", "two"))])                        # remove a path
    c.wait_status(HOST, "/one", 404)
    assert c.get(HOST, "/two").backend == "two"

    env.ingress("app", [rule(HOST, ("/two", "three"))])                      # change the backend Service
    c.wait_backend(HOST, "/two", "three")


def test_scale_endpoints_up_and_down(env: Env) -> None:
    env.service("web")
    pods = [env.backend(f"web-{i}") for i in range(3)]
    env.endpoints("web", pods[:1])
    env.ingress("app", [rule(HOST, ("/", "web"))])
    c = env.controller()
    c.wait_backend(HOST, "/", "web-0")

    env.endpoints("web", pods)                                               # scale up: new pods get traffic
    def all_serve() -> bool:
        seen = collections.Counter(c.get(HOST, "/").backend for _ in range(30))
        return set(seen) == {"web-0", "web-1", "web-2"}
    wait_until(all_serve, "all three pods get traffic")

    env.endpoints("web", pods[2:])                              # scale down: removed ones get none
    c.wait_backend(HOST, "/", "web-2")
    c.wait_idle()
    before = {p.name: p.hits for p in pods}
    answers = {c.get(HOST, "/").backend for _ in range(30)}
    assert answers == {"web-2"}
    assert pods[0].hits == before["web-0"] and pods[1].hits == before["web-1"]

    env.endpoints("web", [], not_ready=[pods[2]])                            # no ready endpoint: 502
    c.wait_status(HOST, "/", 502)


def test_delete_ingress_gives_404_again(env: Env) -> None:
    setup_services(env, "web")
    env.ingress("app", [rule(HOST, ("/", "web"))])
    c = env.controller()
    c.wait_backend(HOST, "/", "web")
    env.delete("ingresses", "app")
    c.wait_status(HOST, "/", 404)


def test_delete_and_recreate_secret(env: Env) -> None:
    setup_services(env, "web")
    cert = make_cert(HOST)
    env.create(cert.secret("app-tls", NS))
    env.ingress("app", [rule(HOST, ("/", "web"))], tls=[{"hosts": [HOST], "secretName": "app-tls"}])
    c = env.controller()
    r = wait_until(lambda: (x := c.https(HOST, "/")).status == 200 and x, "https works")
    assert r.peer_cert_der == cert.der

    env.delete("secrets", "app-tls")
    # The host now rejects TLS handshakes; the Ingress gets a warning; plain HTTP keeps working.
    wait_until(lambda: _handshake_fails(c, HOST), "TLS handshake rejected after the secret was deleted")
    env.wait_event("app", "AddedOrUpdatedWithWarning", "app-tls")
    assert c.get(HOST, "/").backend == "web"

    cert2 = make_cert(HOST)
    env.create(cert2.secret("app-tls", NS))
    r = wait_until(lambda: (x := c.https(HOST, "/")).status == 200 and x.peer_cert_der == cert2.der and x,
                   "https works again with the new certificate")
    assert r.backend == "web"


def test_secret_rotation_in_place_reloads_even_if_config_is_identical(env: Env) -> None:
    setup_services(env, "web")
    cert = make_cert(HOST)
    env.create(cert.secret("app-tls", NS))
    env.ingress("app", [rule(HOST, ("/", "web"))], tls=[{"hosts": [HOST], "secretName": "app-tls"}])
    c = env.controller()
    wait_until(lambda: c.https(HOST, "/").peer_cert_der == cert.der, "first certificate served")
    cert2 = make_cert(HOST)
    env.apply(cert2.secret("app-tls", NS))
    wait_until(lambda: c.https(HOST, "/").peer_cert_der == cert2.der, "rotated certificate served")


def _handshake_fails(c: object, host: str) -> bool:
    try:
        c.https(host, "/")  # type: ignore[attr-defined]
    except OSError:
        return True
    return False


def test_conflicting_hosts_oldest_wins_and_deleting_it_hands_over(env: Env) -> None:
    setup_services(env, "first", "second")
    env.ingress("first", [rule(HOST, ("/", "first"))])
    c = env.controller()
    c.wait_backend(HOST, "/", "first")
    # A newer Ingress for the same host loses (creationTimestamp has second resolution: make it newer).
    wait_until(lambda: _now_seconds_after(env.get("ingresses", "first")), "a second passes", deadline=5)
    env.ingress("second", [rule(HOST, ("/", "second"))])
    env.wait_event("second", "Rejected", "All hosts are taken by other resources")
    assert c.get(HOST, "/").backend == "first"

    env.delete("ingresses", "first")
    c.wait_backend(HOST, "/", "second")
    env.wait_event("second", "AddedOrUpdated")


def _now_seconds_after(obj: dict[str, object]) -> bool:
    import datetime

    created = datetime.datetime.fromisoformat(str(obj["metadata"]["creationTimestamp"]))  # type: ignore[index]
    return datetime.datetime.now(datetime.UTC) - created >= datetime.timedelta(seconds=1.1)
