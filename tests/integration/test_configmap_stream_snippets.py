"""The ConfigMap's `stream-snippets` in the form of NIC's ingress-resources/tcp-udp example (a multi-document
file applied with kubectl, a `|` block of upstreams and UDP and TCP servers) through the real controller and
NGINX to real UDP and TCP echo servers; an upstream NGINX cannot resolve (the example's cluster DNS name)
gets a Warning on the ConfigMap while the last good configuration keeps serving; without a stream block the
key is refused with an `InvalidValue` event."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import yaml

from tests.helpers import free_port, wait_until
from tests.integration.harness import NS, Env, rule
from tests.integration.stream_servers import EchoServer, tcp_echo, udp_echo
from tests.integration.test_transportserver import CRD_TYPE, CRDS
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration

HOST = "web.example.com"
# As NIC's tcp-udp/nginx-config.yaml, with loopback addresses for the upstreams and the listeners.
CONFIG = """\
# TCP and UDP load balancing through the ConfigMap (NIC's tcp-udp example)
kind: ConfigMap
apiVersion: v1
metadata:
  name: nginx-config
  namespace: {ns}
data:
    stream-snippets: |
      upstream coredns-udp {{
          server {udp};
      }}

      server {{
          listen 127.0.0.1:{port} udp;
          proxy_pass coredns-udp;
          proxy_responses 1;
      }}

      upstream coredns-tcp {{
          server {tcp};
      }}

      server {{
          listen 127.0.0.1:{port};
          proxy_pass coredns-tcp;
      }}
---
"""


@pytest.fixture
def echoes() -> Iterator[tuple[EchoServer, EchoServer]]:
    udp, tcp = EchoServer("dns-udp", "UDP").start(), EchoServer("dns-tcp").start()
    yield udp, tcp
    udp.stop()
    tcp.stop()


def apply_text(env: Env, kubectl: Kubectl, text: str) -> None:
    path = os.path.join(env.tmp, "nginx-config.yaml")
    with open(path, "w") as f:
        f.write(text)
    out = kubectl.run("apply", "-f", path)
    assert out.returncode == 0, out.stderr


def test_stream_snippets_serve_udp_and_tcp(env: Env, kubectl: Kubectl,
                                           echoes: tuple[EchoServer, EchoServer]) -> None:
    udp, tcp = echoes
    for f in ("k8s.nginx.org_transportservers.yaml", "k8s.nginx.org_globalconfigurations.yaml"):
        env.kube.create(CRD_TYPE, None, yaml.safe_load((CRDS / f).read_text()))
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("web", [rule(HOST, ("/", "web"))])
    port = free_port()
    apply_text(env, kubectl, CONFIG.format(ns=NS, port=port, udp=f"127.0.0.1:{udp.port}",
                                           tcp=f"127.0.0.1:{tcp.port}"))
    c = env.controller(env.settings(nginx_configmaps=f"{NS}/nginx-config"))
    c.wait_backend(HOST, "/", "web")
    assert wait_until(lambda: udp_echo(port, b"query") == "dns-udp: query" or None, "UDP through snippets")
    assert wait_until(lambda: tcp_echo(port, b"query") == "dns-tcp: query" or None, "TCP through snippets")

    # The example as published names a cluster DNS name: NGINX cannot load it. The ConfigMap says so, and the
    # last good configuration (the snippets above, the Ingress) keeps serving.
    apply_text(env, kubectl, CONFIG.format(ns=NS, port=port, udp="coredns.default.svc.cluster.local:53",
                                           tcp="coredns.default.svc.cluster.local:53"))
    event = env.wait_event("nginx-config", "UpdatedWithError", "not applied", kind="ConfigMap")
    assert event["type"] == "Warning"
    assert 'host not found in upstream "coredns.default.svc.cluster.local:53"' in event["message"]
    assert udp_echo(port, b"again") == "dns-udp: again"
    assert c.get(HOST, "/").backend == "web"


def test_stream_snippets_without_stream_block_are_refused(env: Env, kubectl: Kubectl) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    env.ingress("web", [rule(HOST, ("/", "web"))])
    port = free_port()
    apply_text(env, kubectl, CONFIG.format(ns=NS, port=port, udp="127.0.0.1:1", tcp="127.0.0.1:1"))
    c = env.controller(env.settings(nginx_configmaps=f"{NS}/nginx-config", enable_custom_resources=False))
    c.wait_backend(HOST, "/", "web")
    event = env.wait_event("nginx-config", "InvalidValue", "stream-snippets", kind="ConfigMap")
    assert event["type"] == "Warning" and "no stream {} block" in event["message"]
    with open(os.path.join(c.settings.nginx.conf_dir, "nginx.conf")) as f:
        assert "upstream coredns" not in f.read()
