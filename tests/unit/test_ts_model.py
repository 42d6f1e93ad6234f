"""TransportServer and GlobalConfiguration without a cluster: listener parsing, validation, the
Configuration's listener ownership, rendering (checked by the real `nginx -t` with the stream module), the
stream config directory of the Manager, and the stream module lookup."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams, generate_main_config
from ingressctl.configs.renderers import RenderContext
from ingressctl.configs.templates import TemplateError, TemplateExecutor
from ingressctl.controller.configuration import Configuration
from ingressctl.keys import ResourceKey
from ingressctl.kinds.passthrough import PassthroughHosts, PassthroughRenderer, PassthroughRoute
from ingressctl.kinds.transportserver.config import (
    Listener,
    TransportServerEx,
    TransportServerTemplate,
    build_stream_config,
    count_types,
)
from ingressctl.kinds.transportserver.globalconfiguration import Listeners, parse_listeners
from ingressctl.kinds.transportserver.model import TransportServerModel
from ingressctl.kinds.transportserver.validation import validate_transportserver
from ingressctl.nginx.manager import Manager
from ingressctl.nginx.modules import parse_stream_module, stream_module
from ingressctl.nginx.verify import render_config_version

TCP = Listener("tcp-echo", 5353, "TCP")
UDP = Listener("udp-echo", 5353, "UDP", ipv4="127.0.0.1")


def ts_obj(name: str = "echo", *, seconds: int = 0, listener: str = "tcp-echo", protocol: str = "TCP",
           **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "k8s.nginx.org/v1", "kind": "TransportServer",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "creationTimestamp": f"2024-01-01T00:00:{seconds:02d}Z"},
            "spec": {"listener": {"name": listener, "protocol": protocol},
                     "upstreams": [{"name": "app", "service": "app-svc", "port": 7000}],
                     "action": {"pass": "app"}, **spec}}


def errors(obj: dict[str, Any], **kw: Any) -> list[str]:
    return [str(e) for e in validate_transportserver(obj, **kw)]


# ---------------------------------------------------------------------------------------- GlobalConfiguration


def test_listeners_are_parsed_and_bad_ones_dropped_with_field_errors() -> None:
    gc = {"spec": {"listeners": [
        {"name": "dns-tcp", "port": 5353, "protocol": "TCP"},
        {"name": "dns-udp", "port": 5353, "protocol": "UDP", "ipv4": "127.0.0.1", "ipv6": "::1"},
        {"name": "dup", "port": 5353, "protocol": "TCP"},                 # TCP conflicts with dns-tcp
        {"name": "dns-tcp", "port": 6000, "protocol": "TCP"},             # duplicate name
        {"name": "tls-passthrough", "port": 6001, "protocol": "TCP"},
        {"name": "web", "port": 80, "protocol": "HTTP"},                  # a controller port
        {"name": "bad", "port": 70000, "protocol": "SCTP", "ssl": True, "ipv4": "::1"},
        "not an object",
    ]}}
    listeners, errs = parse_listeners(gc, forbidden_ports={80, 443})
    assert listeners == {"dns-tcp": Listener("dns-tcp", 5353, "TCP"),
                         "dns-udp": Listener("dns-udp", 5353, "UDP", ipv4="127.0.0.1", ipv6="::1")}
    msgs = [str(e) for e in errs]
    assert msgs[0] == ("spec.listeners[2].port: Invalid value: 5353: conflicts with listener dns-tcp on the "
                       "same address and protocol")
    assert msgs[1] == 'spec.listeners[3].name: Duplicate value: "dns-tcp"'
    assert msgs[2].startswith("spec.listeners[4].name: Forbidden")
    assert msgs[3] == "spec.listeners[5].port: Forbidden: port 80 is forbidden (the controller uses it)"
    assert "spec.listeners[6].port: Invalid value: 70000" in msgs[4]
    assert any(m.startswith('spec.listeners[6].protocol: Unsupported value: "SCTP"') for m in msgs)
    assert any(m.startswith("spec.listeners[6].ssl: Forbidden") for m in msgs)
    assert any(m.startswith('spec.listeners[6].ipv4: Invalid value: "::1"') for m in msgs)
    assert msgs[-1].startswith("spec.listeners[7]: Invalid value")


def test_listeners_on_other_addresses_do_not_conflict() -> None:
    gc = {"spec": {"listeners": [{"name": "a", "port": 7000, "protocol": "TCP", "ipv4": "127.0.0.1",
                                  "ipv6": "::1"},
                                 {"name": "b", "port": 7000, "protocol": "TCP", "ipv4": "127.0.0.2",
                                  "ipv6": "::2"}]}}
    listeners, errs = parse_listeners(gc)
    assert set(listeners) == {"a", "b"} and errs == []
    assert Listeners("ns/gc", listeners).find("a", "UDP") is None          # name AND protocol
    assert parse_listeners({}) == ({}, [])


# ------------------------------------------------------------------------------------------ validation


def test_a_valid_transportserver_passes() -> None:
    obj = ts_obj(upstreamParameters={"connectTimeout": "5s", "nextUpstream": True, "nextUpstreamTries": 2},
                 sessionParameters={"timeout": "1m30s"})
    obj["spec"]["upstreams"][0].update(failTimeout="5s", maxFails=3, maxConns=10,
                                       loadBalancingMethod="hash $remote_addr consistent")
    assert errors(obj) == []


def test_validation_errors_name_each_field() -> None:
    obj = ts_obj(protocol="UDP", host="a.example.com", action={"pass": "nope"},
                 upstreamParameters={"connectTimeout": "5 s", "udpRequests": -1},
                 sessionParameters={"timeout": "forever"}, serverSnippets="deny all;")
    obj["spec"]["upstreams"].append({"name": "app", "service": "Bad_Svc", "port": 0,
                                     "loadBalancingMethod": "ip_hash", "maxFails": -1})
    assert errors(obj) == [
        "spec.host: Forbidden: host is not supported for UDP listeners",
        'spec.upstreams[1].service: Invalid value: "Bad_Svc": a DNS-1035 label must consist of lower case '
        "alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric "
        "character (e.g. 'my-name' or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        "spec.upstreams[1].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        "spec.upstreams[1].maxFails: Invalid value: -1: must be greater than or equal to 0",
        'spec.upstreams[1].loadBalancingMethod: Invalid value: "ip_hash": load balancing method is not '
        "valid: ip_hash",
        'spec.upstreams[1].name: Duplicate value: "app"',
        "spec.upstreamParameters.udpRequests: Invalid value: -1: must be greater than or equal to 0",
        'spec.upstreamParameters.connectTimeout: Invalid value: "5 s": must be a time, e.g. 10s or 1m30s',
        'spec.sessionParameters.timeout: Invalid value: "forever": must be a time, e.g. 10s or 1m30s',
        'spec.action.pass: Unsupported value: "nope": supported values: "app"',
        "spec.serverSnippets: Forbidden: snippet specified but snippets feature is not enabled",
    ]
    with_snippets = errors(ts_obj(serverSnippets="deny all;"), snippets_enabled=True)
    assert "spec.serverSnippets" not in " ".join(with_snippets)


def test_passthrough_needs_the_flag_and_matching_halves() -> None:
    assert errors(ts_obj(listener="tls-passthrough", protocol="TLS_PASSTHROUGH", host="a.com")) == [
        "spec.listener: Forbidden: TLS Passthrough is not enabled"]
    mismatch = errors(ts_obj(listener="tls-passthrough", protocol="TCP"))
    assert mismatch[0].startswith("spec.listener: Invalid value")
    assert errors(ts_obj(protocol="UDP", upstreamParameters={"udpResponses": 1})) == []
    assert errors(ts_obj(upstreamParameters={"udpResponses": 1})) == [
        "spec.upstreamParameters.udpResponses: Forbidden: only for UDP listeners"]


def test_malformed_objects_never_raise() -> None:
    for spec in ({}, {"listener": "x"}, {"upstreams": "x", "action": 3}, {"upstreams": [None, 3]}):
        assert errors({"spec": spec})
    assert errors({}) and errors({"spec": None})


# ------------------------------------------------------------------------------------------ Configuration


def configuration(listeners: dict[str, Listener]) -> Configuration:
    conf = Configuration(ingress_class="nginx")
    conf.register_kind(TransportServerModel("nginx", lambda: Listeners("default/gc", listeners)))
    conf.set_startup_complete()
    return conf


def tkey(name: str) -> ResourceKey:
    return ResourceKey("transportserver", f"default/{name}")


@pytest.mark.parametrize("younger_first", [False, True])
def test_the_oldest_transportserver_owns_a_listener_in_both_orders(younger_first: bool) -> None:
    conf = configuration({"tcp-echo": TCP})
    old, young = ts_obj("old", seconds=1), ts_obj("young", seconds=2)
    for obj in ([young, old] if younger_first else [old, young]):
        conf.add_or_update("transportserver", obj)
    assert conf.listener_owner("tcp-echo") == tkey("old")
    assert [r.key_with_kind for r in conf.get_resources()] == [tkey("old")]
    problem = conf.host_problems()[tkey("young")]
    assert problem.reason == "Rejected" and problem.message == (
        "Listener tcp-echo with host empty host is taken by another resource (TransportServer default/old)")
    changes, _ = conf.delete(tkey("old"))
    assert [(c.op, c.resource.key_with_kind) for c in changes] == [("Delete", tkey("old")),
                                                                    ("AddOrUpdate", tkey("young"))]


def test_a_listener_the_globalconfiguration_lacks_is_a_rejection_problem() -> None:
    conf = configuration({"udp-echo": UDP})
    changes, problems = conf.add_or_update("transportserver", ts_obj())
    assert changes == [] and [(p.reason, p.message) for p in problems] == [
        ("Rejected", "Listener tcp-echo doesn't exist")]
    # A UDP listener of that name does not serve a TCP TransportServer either.
    _, problems = conf.add_or_update("transportserver", ts_obj("u", listener="udp-echo"))
    assert [p.message for p in problems] == ["Listener udp-echo doesn't exist"]


def test_a_class_of_another_controller_is_ignored() -> None:
    conf = configuration({"tcp-echo": TCP})
    assert conf.add_or_update("transportserver", ts_obj(ingressClassName="other")) == ([], [])


# ------------------------------------------------------------------------------------------ rendering


def render(ex: TransportServerEx, tmp_path: Path, *, disable_ipv6: bool = True) -> str:
    return TransportServerTemplate().render(build_stream_config(ex, run_dir=str(tmp_path),
                                                                disable_ipv6=disable_ipv6))


def test_rendering_follows_the_spec(tmp_path: Path) -> None:
    obj = ts_obj(upstreamParameters={"connectTimeout": "5s", "nextUpstream": True,
                                     "nextUpstreamTimeout": "3s", "nextUpstreamTries": 2},
                 sessionParameters={"timeout": "30s"},
                 serverSnippets="tcp_nodelay on;", streamSnippets="# stream snippet")
    obj["spec"]["upstreams"][0].update(maxFails=3, failTimeout="5s", maxConns=7,
                                       loadBalancingMethod="least_conn", backup="spare", backupPort=7001)
    text = render(TransportServerEx(obj, TCP, {"app": ["10.0.0.2:7000", "10.0.0.1:7000"]},
                                    {"app": ["10.0.0.9:7001"]}), tmp_path, disable_ipv6=False)
    assert "upstream ts_default_echo_app {\n    zone ts_default_echo_app 512k;\n    least_conn;\n" \
           "    server 10.0.0.1:7000 max_fails=3 fail_timeout=5s max_conns=7;\n" \
           "    server 10.0.0.2:7000 max_fails=3 fail_timeout=5s max_conns=7;\n" \
           "    server 10.0.0.9:7001 max_fails=3 fail_timeout=5s max_conns=7 backup;\n}" in text
    for line in ("listen 5353;", "listen [::]:5353;", "proxy_pass ts_default_echo_app;", "proxy_timeout 30s;",
                 "proxy_connect_timeout 5s;", "proxy_next_upstream on;", "proxy_next_upstream_timeout 3s;",
                 "proxy_next_upstream_tries 2;", "tcp_nodelay on;", "# stream snippet"):
        assert line in text, line
    udp = render(TransportServerEx(ts_obj(protocol="UDP", listener="udp-echo",
                                          upstreamParameters={"udpRequests": 1, "udpResponses": 2}), UDP, {}),
                 tmp_path)
    assert "listen 127.0.0.1:5353 udp;" in udp and "proxy_requests 1;" in udp and "proxy_responses 2;" in udp
    assert "random two least_conn;" in udp and "proxy_next_upstream" not in udp
    assert f"server unix:{tmp_path}/non-existing-unix-socket.sock;" in udp          # no endpoints
    assert count_types([TransportServerEx(obj, TCP), TransportServerEx(ts_obj(protocol="UDP"), UDP)]) == {
        "passthrough": 0, "tcp": 1, "udp": 1}


def test_rendered_stream_configs_pass_nginx_t(tmp_path: Path) -> None:
    """The main template loads the stream module and includes stream-conf.d; real NGINX accepts both."""
    module = stream_module("nginx")
    mgr = Manager(binary="nginx", conf_dir=str(tmp_path / "conf"), run_dir=str(tmp_path / "run"))
    static = StaticConfigParams(conf_dir=mgr.conf_dir, run_dir=mgr.run_dir, http_port=18080, https_port=18443,
                                nginx_status=False, stream=True, stream_module_path=module,
                                tls_passthrough=True)
    main = TemplateExecutor().execute_main_template(generate_main_config(static, ConfigParams()))
    assert ("load_module" in main) == bool(module) and "include stream-conf.d/*.conf;" in main
    mgr.create_main_config(main)
    Path(mgr.paths.config_version_file).write_text(render_config_version(0, mgr.paths.config_version_socket))
    obj = ts_obj(upstreamParameters={"nextUpstream": True}, sessionParameters={"timeout": "1m"})
    echo_ex = TransportServerEx(obj, TCP, {"app": ["127.0.0.1:9"]})
    mgr.create_config("stream-conf.d/ts_default_echo", render(echo_ex, tmp_path))
    mgr.create_config("stream-conf.d/ts_default_dns",
                      render(TransportServerEx(ts_obj("dns", protocol="UDP", listener="udp-echo"), UDP, {}),
                             tmp_path))
    # TLS passthrough: the SNI split owns the HTTPS port; the default server terminates TLS on the socket.
    assert f"listen unix:{mgr.run_dir}/passthrough-https.sock ssl default_server proxy_protocol;" in main
    ctx = RenderContext(static, ConfigParams(), TemplateExecutor())
    hosts = PassthroughHosts(18443, {"pass.example.com": PassthroughRoute(
        ResourceKey("transportserver", "default/pass"), "passthrough-default_pass.sock")})
    split = PassthroughRenderer().render(hosts, ctx)
    assert f'"pass.example.com" "unix:{mgr.run_dir}/passthrough-default_pass.sock";' in split.text
    assert "ssl_preread on;" in split.text and "listen 18443;" in split.text
    mgr.create_config("stream-conf.d/tls-passthrough", split.text)
    pass_ts = ts_obj("pass", listener="tls-passthrough", protocol="TLS_PASSTHROUGH", host="pass.example.com")
    pass_text = render(TransportServerEx(pass_ts, Listener("tls-passthrough", 18443, "TLS_PASSTHROUGH"),
                                         {"app": ["127.0.0.1:9"]}), tmp_path)
    assert f"listen unix:{tmp_path}/passthrough-default_pass.sock proxy_protocol;" in pass_text
    assert "set_real_ip_from unix:;" in pass_text
    mgr.create_config("stream-conf.d/ts_default_pass", pass_text)
    ok, out = mgr.test_config()
    assert ok, out
    assert mgr.list_configs() == ["stream-conf.d/tls-passthrough", "stream-conf.d/ts_default_dns",
                                  "stream-conf.d/ts_default_echo", "stream-conf.d/ts_default_pass"]
    ok, out = mgr.test_configs({"stream-conf.d/ts_default_echo": "server { listen 1; bogus; }"})
    assert not ok and "stream-conf.d/ts_default_echo.conf" in out
    named = f"[emerg] in {mgr.conf_dir}/stream-conf.d/ts_default_echo.conf:1, {mgr.conf_dir}/conf.d/a.conf:2"
    assert mgr.configs_named_in(named) == ["stream-conf.d/ts_default_echo", "a"]
    assert os.path.exists(os.path.join(mgr.conf_dir, "stream-conf.d", "ts_default_echo.conf"))


def test_a_custom_template_is_used_and_a_broken_one_refused(tmp_path: Path) -> None:
    good = tmp_path / "ts.j2"
    good.write_text("# custom {{ ts.name }}\n")
    assert TransportServerTemplate(str(good)).render(
        build_stream_config(TransportServerEx(ts_obj(), TCP), run_dir="/r")) == "# custom echo\n"
    bad = tmp_path / "bad.j2"
    bad.write_text("{% for %}")
    with pytest.raises(TemplateError):
        TransportServerTemplate(str(bad))
    with pytest.raises(TemplateError):
        TransportServerTemplate(str(tmp_path / "missing.j2"))


# ------------------------------------------------------------------------------------------ Manager, module


@pytest.mark.parametrize("name", ["other-dir/x", "stream-conf.d/", "stream-conf.d/a/b", "stream-conf.d/.x"])
def test_only_the_stream_directory_may_qualify_a_config_name(tmp_path: Path, name: str) -> None:
    mgr = Manager(binary="nginx", conf_dir=str(tmp_path / "conf"), run_dir=str(tmp_path / "run"))
    with pytest.raises(ValueError, match="invalid"):
        mgr.create_config(name, "x")


def test_the_stream_module_is_found_from_nginx_v() -> None:
    dynamic = "configure arguments: --modules-path=/m --with-stream=dynamic"
    assert parse_stream_module(dynamic) == ("dynamic", "/m")
    assert parse_stream_module("configure arguments: --with-stream --with-http_ssl_module")[0] == "builtin"
    assert parse_stream_module("configure arguments: --with-http_ssl_module")[0] == "absent"
    out = subprocess.run(["nginx", "-V"], capture_output=True, text=True, check=False).stderr
    how, _ = parse_stream_module(out)
    path = stream_module("nginx")
    assert (how == "builtin" and path == "") or (how == "dynamic" and os.path.isfile(path))


@pytest.mark.parametrize("ingress_first", [False, True])
def test_a_passthrough_host_goes_to_the_oldest_of_ingress_and_transportserver(ingress_first: bool) -> None:
    conf = Configuration(ingress_class="nginx")
    conf.register_kind(TransportServerModel("nginx", lambda: Listeners(), tls_passthrough=True))
    conf.set_startup_complete()
    pass_ts = ts_obj("pass", seconds=1, listener="tls-passthrough", protocol="TLS_PASSTHROUGH",
                     host="pass.example.com")
    ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": "web", "namespace": "default", "uid": "uid-web",
                        "creationTimestamp": "2024-01-01T00:00:02Z"},
           "spec": {"ingressClassName": "nginx", "rules": [{"host": "pass.example.com", "http": {"paths": [
               {"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}
    problems = []
    for kind, obj in ([("ingress", ing), ("transportserver", pass_ts)] if ingress_first
                      else [("transportserver", pass_ts), ("ingress", ing)]):
        problems += conf.add_or_update(kind, obj)[1]
    assert conf.host_owner("pass.example.com") == tkey("pass")
    assert [r.key_with_kind for r in conf.get_resources()] == [tkey("pass")]
    ikey = ResourceKey("ingress", "default/web")
    assert conf.host_problems()[ikey].message == (
        "All hosts are taken by other resources: host pass.example.com by TransportServer default/pass")
    assert [p.key for p in problems][-1] == ikey
    changes, _ = conf.delete(tkey("pass"))
    assert [(c.op, c.resource.key_with_kind) for c in changes] == [("Delete", tkey("pass")),
                                                                    ("AddOrUpdate", ikey)]
