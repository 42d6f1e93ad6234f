"""Endpoint changes without reloads (the dynamic-peers NGINX module, which scripts/install-system-deps.sh
installs): a new endpoint gets traffic and a removed one gets none, with no reload and the same NGINX
workers; a change that needs a reload (more endpoints than slots, another lb-method) still gets one; a push
NGINX does not take falls back to a reload."""

from __future__ import annotations

import os

import pytest

from ingressctl.configs.routes import SPARE_PREFIX
from ingressctl.demo.backend import Backend
from ingressctl.nginx.processes import current_workers
from tests.helpers import wait_until
from tests.integration.harness import Controller, Env, rule
from tests.integration.vs_helpers import apply_vs, install_crds, virtual_server

pytestmark = pytest.mark.integration

HOST = "dyn.example.com"


def workers(c: Controller) -> set[int]:
    pid = c.manager.master_pid
    assert pid is not None
    return {w.pid for w in current_workers(pid, c.manager.proc_root)}


def conf_d(c: Controller) -> str:
    """Every conf.d file's text."""
    out = []
    for f in sorted(os.listdir(c.manager.paths.conf_d)):
        if f.endswith(".conf"):
            with open(os.path.join(c.manager.paths.conf_d, f), encoding="utf-8") as fh:
                out.append(fh.read())
    return "".join(out)


def spread(c: Controller, n: int = 24) -> dict[str, int]:
    """How `n` requests to HOST spread over the backends (by name)."""
    seen: dict[str, int] = {}
    for _ in range(n):
        r = c.get(HOST, "/")
        key = r.backend or f"HTTP {r.status}"
        seen[key] = seen.get(key, 0) + 1
    return seen


def start(env: Env, backends: list[Backend], annotations: dict[str, str] | None = None) -> Controller:
    env.service("web")
    env.endpoints("web", backends)
    env.ingress("dyn", [rule(HOST, ("/", "web"))], annotations=annotations)
    c = env.controller()
    assert c.lbc.configurator.files.dynamic is not None, "the dynamic-peers module must be installed"
    for b in backends:
        c.wait_backend(HOST, "/", b.name)
    c.wait_idle()
    return c


def test_endpoint_changes_reach_nginx_without_a_reload(env: Env) -> None:
    a, b, new = env.backend("a"), env.backend("b"), env.backend("new")
    c = start(env, [a, b])
    reloads, gen = c.reloads, workers(c)
    pushes = c.manager.dynamic_update_count

    env.endpoints("web", [a, b, new])  # scale up: the new Pod gets traffic
    wait_until(lambda: "new" in spread(c, 6), "the new endpoint gets traffic")
    c.wait_idle()
    env.endpoints("web", [b, new])  # scale down: the removed Pod gets nothing more
    wait_until(lambda: "a" not in spread(c, 6), "the removed endpoint gets no traffic")
    c.wait_idle()
    hits = a.hits
    assert set(spread(c, 30)) == {"b", "new"}
    assert a.hits == hits

    env.endpoints("web", [b], not_ready=[new])  # not ready: out as well
    wait_until(lambda: set(spread(c, 6)) == {"b"}, "the not-ready endpoint gets no traffic")
    c.wait_idle()
    env.endpoints("web", [b, new])  # ready again: back in its old slot
    wait_until(lambda: "new" in spread(c, 6), "the ready-again endpoint gets traffic")
    c.wait_idle()

    assert c.reloads == reloads, "an endpoint-only change reloaded NGINX"
    assert c.manager.endpoints_reload_count == 0
    assert workers(c) == gen, "the NGINX workers were replaced"
    assert c.manager.dynamic_update_count >= pushes + 4
    assert c.manager.dynamic_update_errors == 0
    served = c.manager.served_upstreams()
    (name,) = [n for n in served if "-web-" in n]
    slots, live = served[name]
    assert slots == 4 and set(live) == {b.address, new.address}
    # The file on disk holds the same endpoints, for the next reload or restart.
    text = conf_d(c)
    assert f"server {new.address} " in text and f"server {a.address} " not in text


def test_changes_that_need_a_reload_still_get_one(env: Env) -> None:
    a = env.backend("a")
    c = start(env, [a])
    reloads = c.reloads
    more = [env.backend(f"m{i}") for i in range(5)]
    # 6 endpoints do not fit the 2 slots: reloads with more (one EndpointSlice per backend port, so the
    # controller may see 2, 3, ... endpoints on the way: each count past the slots reloads once).
    env.endpoints("web", [a, *more])
    for m in more:
        c.wait_backend(HOST, "/", m.name)
    c.wait_idle()
    grown = c.reloads - reloads
    assert grown >= 1 and c.manager.endpoints_reload_count == grown
    served = c.manager.served_upstreams()
    # The Ingress's upstream (nginx.conf's spares for routed hosts aside, which serve nothing).
    assert [s for n, (s, _) in served.items() if not n.startswith(SPARE_PREFIX)] == [8]

    reloads = c.reloads
    env.ingress("dyn", [rule(HOST, ("/", "web"))], annotations={"nginx.org/lb-method": "least_conn"})
    wait_until(lambda: c.reloads == reloads + 1, "a reload for the new lb-method")
    c.wait_idle()
    gen = workers(c)
    env.endpoints("web", [a, *more[:3]])  # and endpoint changes are dynamic again with it
    wait_until(lambda: set(spread(c, 20)) == {"a", "m0", "m1", "m2"}, "scaled down")
    c.wait_idle()
    assert c.reloads == reloads + 1 and workers(c) == gen
    conf = conf_d(c)
    assert "least_conn;" in conf and "ingressctl_dynamic_peers;" in conf


def test_a_failed_push_falls_back_to_a_reload(env: Env) -> None:
    a, b = env.backend("a"), env.backend("b")
    c = start(env, [a])
    reloads = c.reloads
    socket = c.manager._dynamic_peers.socket_path
    c.manager._dynamic_peers.socket_path = os.path.join(c.manager.run_dir, "no-such.sock")
    env.endpoints("web", [a, b])
    c.wait_backend(HOST, "/", "b")
    c.wait_idle()
    assert c.manager.dynamic_update_errors == 1
    assert c.reloads == reloads + 1 and c.manager.endpoints_reload_count == 1

    c.manager._dynamic_peers.socket_path = socket  # NGINX takes the next one again
    env.endpoints("web", [b])
    wait_until(lambda: set(spread(c, 6)) == {"b"}, "the removed endpoint gets no traffic")
    c.wait_idle()
    assert c.reloads == reloads + 1 and c.manager.dynamic_update_errors == 1


def test_endpoints_reach_nginx_with_reloads_when_turned_off(env: Env) -> None:
    a, b = env.backend("a"), env.backend("b")
    env.service("web")
    env.endpoints("web", [a])
    env.ingress("dyn", [rule(HOST, ("/", "web"))])
    c = env.controller(dynamic_upstreams=False)
    c.wait_backend(HOST, "/", "a")
    c.wait_idle()
    assert c.lbc.configurator.files.dynamic is None
    reloads = c.reloads
    env.endpoints("web", [a, b])
    c.wait_backend(HOST, "/", "b")
    c.wait_idle()
    assert c.reloads == reloads + 1 and c.manager.dynamic_update_count == 0


def test_virtual_server_endpoint_changes_reach_nginx_without_a_reload(env: Env) -> None:
    """A VirtualServer's upstreams share the zone as well: its endpoint changes are pushed, not reloaded."""
    install_crds(env)
    a, b = env.backend("a"), env.backend("b")
    env.service("web")
    env.endpoints("web", [a])
    apply_vs(env, virtual_server("dyn", HOST, upstreams=[{"name": "web", "service": "web", "port": 80}],
                                 routes=[{"path": "/", "action": {"pass": "web"}}]))
    c = env.controller()
    c.wait_backend(HOST, "/", "a")
    c.wait_idle()
    reloads, gen = c.reloads, workers(c)

    env.endpoints("web", [a, b])
    wait_until(lambda: "b" in spread(c, 6), "the new endpoint gets traffic")
    env.endpoints("web", [b])
    wait_until(lambda: set(spread(c, 6)) == {"b"}, "the removed endpoint gets no traffic")
    c.wait_idle()
    assert c.reloads == reloads and workers(c) == gen, "a VirtualServer endpoint change reloaded NGINX"
    assert c.manager.endpoints_reload_count == 0 and c.manager.dynamic_update_errors == 0
    assert any(n.startswith("vs_") for n in c.manager.served_upstreams())
