"""VirtualServer `spec.listener` (NIC 3.x+) end to end: the GlobalConfiguration's HTTP listeners as the
server's only listen ports, NIC's warnings for the misconfigured ones, and a GlobalConfiguration change
re-rendering the VirtualServer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ingressctl.kinds.transportserver.kind import GLOBALCONFIGURATIONS
from tests.helpers import free_port, http_get, https_get, make_cert, wait_until
from tests.integration.harness import NS, Env
from tests.integration.vs_helpers import CRD_DIR, CRDS, apply_vs, install_crds, virtual_server, wait_vs_state

pytestmark = pytest.mark.integration

HOST = "listen.example.com"
GC = "nginx-configuration"


def _gc(env: Env, listeners: list[dict[str, Any]]) -> None:
    body = {"apiVersion": "k8s.nginx.org/v1", "kind": "GlobalConfiguration",
            "metadata": {"name": GC, "namespace": NS}, "spec": {"listeners": listeners}}
    try:
        env.kube.create(GLOBALCONFIGURATIONS, NS, body)
    except Exception:
        cur = env.kube.get(GLOBALCONFIGURATIONS, NS, GC)
        env.kube.update(GLOBALCONFIGURATIONS, NS, GC, {**cur, "spec": body["spec"]})


def _vs(**listener: str) -> dict[str, Any]:
    return virtual_server("listen", HOST, upstreams=[{"name": "web", "service": "web", "port": 80}],
                          routes=[{"path": "/", "action": {"pass": "web"}}], tls={"secret": "listen-tls"},
                          listener=listener)


def _setup(env: Env) -> None:
    install_crds(env)
    for f in ("k8s.nginx.org_transportservers.yaml", "k8s.nginx.org_globalconfigurations.yaml"):
        env.kube.create(CRDS, None, yaml.safe_load((CRD_DIR / f).read_text()))
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.apply(make_cert(HOST).secret("listen-tls", NS))


def test_custom_listeners_from_the_global_configuration(env: Env) -> None:
    _setup(env)
    http_port, https_port, other = free_port(), free_port(), free_port()
    _gc(env, [{"name": "http-8083", "port": http_port, "protocol": "HTTP"},
              {"name": "https-8443", "port": https_port, "protocol": "HTTP", "ssl": True}])
    apply_vs(env, _vs(http="http-8083", https="https-8443"))
    c = env.controller(global_configuration=f"{NS}/{GC}")
    wait_until(lambda: http_get(http_port, HOST, "/").backend == "web", "the custom HTTP listener")
    assert https_get(https_port, HOST, "/").backend == "web"
    assert c.get(HOST, "/").status == 404          # no longer on the default port
    wait_vs_state(env, "listen", "Valid", "AddedOrUpdated")
    conf = Path(c.settings.nginx.conf_dir, "conf.d", f"vs_{NS}_listen.conf").read_text()
    assert f"listen {http_port};" in conf and f"listen {https_port} ssl;" in conf

    # The GlobalConfiguration changes the port: the VirtualServer follows.
    _gc(env, [{"name": "http-8083", "port": other, "protocol": "HTTP"},
              {"name": "https-8443", "port": https_port, "protocol": "HTTP", "ssl": True}])
    wait_until(lambda: http_get(other, HOST, "/").backend == "web", "the moved listener")

    # NIC's warnings: the wrong kind of listener on a side, an unknown one; those sides get no listener.
    apply_vs(env, _vs(http="https-8443", https="nope"))
    st = wait_vs_state(env, "listen", "Warning", "AddedOrUpdatedWithWarning")
    assert st["message"] == (
        f"Configuration for {NS}/listen was added or updated with warning(s): Listener https-8443 can't be "
        "use in `listener.http` context as SSL is enabled for that listener.; Listener nope is not defined "
        "in GlobalConfiguration")
    wait_until(lambda: _refused(other), "nothing listens for it any more")


def _refused(port: int) -> bool:
    try:
        http_get(port, HOST, "/", timeout=2)
    except OSError:
        return True
    return False


def test_listener_without_a_global_configuration_is_a_warning(env: Env) -> None:
    _setup(env)
    apply_vs(env, _vs(http="http-8083"))
    env.controller()
    st = wait_vs_state(env, "listen", "Warning", "AddedOrUpdatedWithWarning")
    assert st["message"].endswith(
        "with warning(s): Listeners defined, but no GlobalConfiguration is deployed")
