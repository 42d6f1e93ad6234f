"""TransportServer TLS termination (`spec.tls.secret`) without a cluster: the validation rules, the Secret
reference the Configuration indexes, and the rendered stream server (checked by the real `nginx -t`, with a
real certificate file written by the LocalSecretStore)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams, generate_main_config
from ingressctl.configs.renderers import RenderContext
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.controller.configuration import Configuration
from ingressctl.controller.secrets import LocalSecretStore
from ingressctl.kinds.transportserver.config import (
    Listener,
    TransportServerEx,
    TransportServerRenderer,
    TransportServerTemplate,
    build_stream_config,
)
from ingressctl.kinds.transportserver.globalconfiguration import Listeners
from ingressctl.kinds.transportserver.model import TransportServerModel
from ingressctl.kinds.transportserver.validation import validate_transportserver
from ingressctl.nginx.manager import Manager, render_config_version
from ingressctl.nginx.modules import stream_module
from ingressctl.secret_types import SecretReference
from tests.pki import CA, tls_secret

TCP = Listener("tls-tcp", 5443, "TCP", ipv4="127.0.0.1", ipv6="::1")
MISSING = "secret doesn't exist or of an unsupported type"
UNUSABLE = "The listener accepts no connections until the Secret is valid."


def ts_obj(name: str = "secure", *, listener: str = "tls-tcp", protocol: str = "TCP",
           **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "k8s.nginx.org/v1", "kind": "TransportServer",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"listener": {"name": listener, "protocol": protocol},
                     "upstreams": [{"name": "app", "service": "app-svc", "port": 7000}],
                     "action": {"pass": "app"}, **spec}}


def errors(obj: dict[str, Any], **kw: Any) -> list[str]:
    return [str(e) for e in validate_transportserver(obj, **kw)]


# ------------------------------------------------------------------------------------------ validation


def test_tls_with_a_secret_on_a_tcp_listener_is_valid() -> None:
    assert errors(ts_obj(tls={"secret": "echo-tls"})) == []
    assert errors(ts_obj(tls={"secret": "a.b-c"})) == []
    # NIC 5.5.2: an empty secret is not a validation error (a warning when rendered), nor is `tls: {}`.
    assert errors(ts_obj(tls={"secret": ""})) == []
    assert errors(ts_obj(tls={})) == []


def test_the_secret_name_must_be_a_dns1123_subdomain() -> None:
    assert errors(ts_obj(tls={"secret": "Echo_TLS"})) == [
        'spec.tls.secret: Invalid value: "Echo_TLS": a lowercase RFC 1123 subdomain must consist of lower '
        "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]
    too_long = "a" * 254
    assert errors(ts_obj(tls={"secret": too_long}))[0].startswith(
        f'spec.tls.secret: Invalid value: "{too_long}": must be no more than 253 characters')


def test_malformed_tls_fields_are_field_errors() -> None:
    assert errors(ts_obj(tls="echo-tls")) == ['spec.tls: Invalid value: "echo-tls": must be an object']
    assert errors(ts_obj(tls={"secret": 7})) == ['spec.tls.secret: Invalid value: "7": must be a string']
    assert errors(ts_obj(tls={"secret": ["x"]})) == [
        "spec.tls.secret: Invalid value: \"['x']\": must be a string"]


def test_tls_is_refused_on_a_udp_listener_which_nginx_cannot_load() -> None:
    assert errors(ts_obj(protocol="UDP", tls={"secret": "echo-tls"})) == [
        'spec.tls: Forbidden: TLS termination is only possible on TCP listeners (NGINX: "ssl" is '
        'incompatible with "udp")']
    # Without a secret nothing would be rendered with ssl: NIC's warning at render time, as on TCP.
    assert errors(ts_obj(protocol="UDP", tls={"secret": ""})) == []


def test_tls_is_forbidden_with_the_passthrough_listener() -> None:
    obj = ts_obj(listener="tls-passthrough", protocol="TLS_PASSTHROUGH", host="app.example.com",
                 tls={"secret": "echo-tls"})
    assert errors(obj, tls_passthrough=True) == [
        "spec.tls: Forbidden: cannot specify tls for TLS Passthrough TransportServers"]
    # Either half of the passthrough listener makes it one (NIC's isPotentialTLSPassthroughListener).
    half = ts_obj(listener="tls-passthrough", protocol="TCP", host="app.example.com", tls={"secret": "x"})
    assert "spec.tls: Forbidden: cannot specify tls for TLS Passthrough TransportServers" in \
        errors(half, tls_passthrough=True)
    assert errors(ts_obj(listener="tls-passthrough", protocol="TLS_PASSTHROUGH", host="app.example.com"),
                  tls_passthrough=True) == []


def test_a_host_on_a_tcp_listener_needs_tls_and_an_nginx_that_selects_stream_servers_by_sni() -> None:
    for sni in (False, True):
        assert errors(ts_obj(host="echo.example.com"), stream_server_name=sni) == [
            "spec.host: Required value: must specify spec.tls.secret when host is specified for non-TLS "
            "Passthrough TransportServers"]
    assert errors(ts_obj(host="echo.example.com", tls={"secret": "echo-tls"})) == [
        "spec.host: Forbidden: a host on a TCP listener (SNI selection with the stream server_name "
        "directive) needs NGINX 1.25.5 or newer"]
    tls = {"secret": "echo-tls"}
    assert errors(ts_obj(host="echo.example.com", tls=tls), stream_server_name=True) == []
    assert errors(ts_obj(host="Echo_1.example.com", tls=tls), stream_server_name=True) == [
        'spec.host: Invalid value: "Echo_1.example.com": a lowercase RFC 1123 subdomain must consist of '
        "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]


def test_transportservers_with_hosts_share_a_tcp_listener_and_one_host_goes_to_the_oldest() -> None:
    """NIC's listener table is keyed by listener and host: two hosts share a listener, a host-less
    TransportServer is one more key, and a second claim of one host loses with NIC's message."""
    conf = Configuration(ingress_class="nginx")
    conf.register_kind(TransportServerModel("nginx", lambda: Listeners("default/gc", {"tls-tcp": TCP}),
                                            stream_server_name=True))
    conf.set_startup_complete()
    tls = {"secret": "echo-tls"}
    conf.add_or_update("transportserver", ts_obj("cafe", host="cafe.example.com", tls=tls))
    conf.add_or_update("transportserver", ts_obj("mongo", host="mongo.example.com", tls=tls))
    conf.add_or_update("transportserver", ts_obj("plain"))
    late = ts_obj("late", host="cafe.example.com", tls=tls)
    late["metadata"]["creationTimestamp"] = "2024-02-01T00:00:00Z"
    conf.add_or_update("transportserver", late)
    assert sorted(r.key for r in conf.get_resources()) == ["default/cafe", "default/mongo", "default/plain"]
    assert [p.message for p in conf.host_problems().values()] == [
        "Listener tls-tcp with host cafe.example.com is taken by another resource "
        "(TransportServer default/cafe)"]


def test_the_configuration_indexes_the_secret_of_a_configured_transportserver() -> None:
    conf = Configuration(ingress_class="nginx")
    conf.register_kind(TransportServerModel("nginx", lambda: Listeners("default/gc", {"tls-tcp": TCP})))
    conf.set_startup_complete()
    conf.add_or_update("transportserver", ts_obj(tls={"secret": "echo-tls"}))
    conf.add_or_update("transportserver", ts_obj("plain", listener="other"))
    assert [r.key for r in conf.find_resources_for_secret("default", "echo-tls")] == ["default/secure"]
    assert conf.find_resources_for_secret("other", "echo-tls") == []       # its own namespace only
    conf.add_or_update("transportserver", ts_obj())                         # tls removed
    assert conf.find_resources_for_secret("default", "echo-tls") == []


# ------------------------------------------------------------------------------------------ rendering


def render(ex: TransportServerEx, run_dir: str = "/run") -> str:
    return TransportServerTemplate().render(build_stream_config(ex, run_dir=run_dir))


def warnings_of(ex: TransportServerEx, tmp_path: Path) -> list[str]:
    static = StaticConfigParams(conf_dir=str(tmp_path), run_dir=str(tmp_path), http_port=1, https_port=2)
    ctx = RenderContext(static, ConfigParams(), TemplateExecutor())
    return TransportServerRenderer().render(ex, ctx).warnings


def test_a_valid_secret_renders_ssl_listens_and_the_certificate(tmp_path: Path) -> None:
    ref = SecretReference("default/echo-tls", path="/etc/nginx/secrets/default-echo-tls",
                          secret_type="kubernetes.io/tls")
    ex = TransportServerEx(ts_obj(tls={"secret": "echo-tls"}), TCP, {"app": ["127.0.0.1:9"]}, tls_secret=ref)
    text = render(ex)
    for line in ("    listen 127.0.0.1:5443 ssl;\n", "    listen [::1]:5443 ssl;\n",
                 "    ssl_certificate /etc/nginx/secrets/default-echo-tls;\n",
                 "    ssl_certificate_key /etc/nginx/secrets/default-echo-tls;\n"):
        assert line in text, line
    assert text.index("listen [::1]:5443 ssl;") < text.index("ssl_certificate ") < text.index("proxy_pass")
    assert warnings_of(ex, tmp_path) == []
    plain = render(TransportServerEx(ts_obj(), TCP, {"app": ["127.0.0.1:9"]}))
    assert "ssl" not in plain and "listen 127.0.0.1:5443;" in plain


@pytest.mark.parametrize(("tls", "ref", "warning"), [
    ({"secret": "echo-tls"}, SecretReference("default/echo-tls", error=MISSING),
     f"TLS secret echo-tls is invalid: {MISSING}. {UNUSABLE}"),
    ({"secret": "echo-tls"}, None, f"TLS secret echo-tls is invalid: {MISSING}. {UNUSABLE}"),
    ({"secret": "echo-tls"},
     SecretReference("default/echo-tls", error="failed to validate TLS cert and key: private key does not "
                                               "match public key", secret_type="kubernetes.io/tls"),
     "TLS secret echo-tls is invalid: failed to validate TLS cert and key: private key does not match "
     f"public key. {UNUSABLE}"),
    ({"secret": "echo-ca"}, SecretReference("default/echo-ca", path="/s/default-echo-ca",
                                            secret_type="nginx.org/ca"),
     f"TLS secret echo-ca is of a wrong type 'nginx.org/ca', must be 'kubernetes.io/tls'. {UNUSABLE}"),
    ({"secret": ""}, None,
     "TLS secret is empty. The listener accepts no connections until spec.tls.secret names a valid Secret."),
    ({}, None,
     "TLS secret is empty. The listener accepts no connections until spec.tls.secret names a valid Secret."),
])
def test_an_unusable_secret_is_nics_warning_and_no_server_at_all(
        tmp_path: Path, tls: dict[str, Any], ref: SecretReference | None, warning: str) -> None:
    """NIC would listen without TLS; ingressctl renders the upstreams but no server, so nothing listens."""
    ex = TransportServerEx(ts_obj(tls=tls), TCP, {"app": ["127.0.0.1:9"]}, tls_secret=ref)
    text = render(ex)
    assert "upstream ts_default_secure_app" in text
    assert "\nserver {" not in text and "    listen " not in text and "proxy_pass" not in text
    assert "# No server: spec.tls has no usable Secret" in text
    assert warnings_of(ex, tmp_path) == [warning]


def test_the_rendered_tls_server_passes_nginx_t_with_the_secret_stores_file(tmp_path: Path) -> None:
    """The Secret store writes the PEM file (as for Ingresses); real NGINX loads the certificate from it."""
    mgr = Manager(binary="nginx", conf_dir=str(tmp_path / "conf"), run_dir=str(tmp_path / "run"))
    store = LocalSecretStore(mgr)
    issued = CA("test-ca").issue("echo.example.com", server=True, dns=("echo.example.com",))
    assert store.add_or_update_secret(tls_secret("echo-tls", "default", issued))
    ref = store.get_secret_reference("default/echo-tls")
    assert ref.error == "" and Path(ref.path).read_bytes() == issued.cert_pem + b"\n" + issued.key_pem
    static = StaticConfigParams(conf_dir=mgr.conf_dir, run_dir=mgr.run_dir, http_port=18080, https_port=18443,
                                nginx_status=False, stream=True, stream_module_path=stream_module("nginx"))
    main = TemplateExecutor().execute_main_template(generate_main_config(static, ConfigParams()))
    mgr.create_main_config(main)
    Path(mgr.paths.config_version_file).write_text(render_config_version(0, mgr.paths.config_version_socket))
    ex = TransportServerEx(ts_obj(tls={"secret": "echo-tls"}), TCP, {"app": ["127.0.0.1:9"]}, tls_secret=ref)
    mgr.create_config("stream-conf.d/ts_default_secure", render(ex, mgr.run_dir))
    missing = TransportServerEx(ts_obj("gone", tls={"secret": "gone"}), Listener("b", 5444, "TCP"), {},
                                tls_secret=store.get_secret_reference("default/gone"))
    mgr.create_config("stream-conf.d/ts_default_gone", render(missing, mgr.run_dir))
    ok, out = mgr.test_config()
    assert ok, out
