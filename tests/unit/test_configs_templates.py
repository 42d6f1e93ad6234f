"""TemplateExecutor: the Environment's settings, the main template, custom and ConfigMap templates."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ingressctl.configs.config import IngressMeta, IngressNginxConfig, MainConfig
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams, generate_main_config
from ingressctl.configs.quoting import NginxValueError
from ingressctl.configs.templates import (
    INGRESS_TEMPLATE,
    TemplateError,
    TemplateExecutor,
    TemplateRenderError,
    new_environment,
    num,
)
from tests.unit.test_configs_ingress import directives


def main_config(**static: object) -> MainConfig:
    static_params = StaticConfigParams(run_dir="/run/ic", **static)  # type: ignore[arg-type]
    return generate_main_config(static_params, ConfigParams())


def test_environment_settings() -> None:
    env = new_environment()
    assert env.undefined.__name__ == "StrictUndefined"
    assert env.autoescape is False and env.trim_blocks and env.lstrip_blocks and env.keep_trailing_newline


def test_main_template_has_what_the_manager_needs() -> None:
    text = TemplateExecutor().execute_main_template(main_config())
    for line in ("daemon off;", "error_log stderr notice;", "pid /run/ic/nginx.pid;",
                 "    client_body_temp_path /run/ic/client_body;", "    proxy_temp_path /run/ic/proxy;",
                 "        listen unix:/run/ic/nginx-status.sock;",
                 "        listen unix:/run/ic/nginx-502-server.sock;",
                 "    include config-version.conf;", "    include conf.d/*.conf;",
                 "    server_names_hash_bucket_size 256;", "    access_log /dev/stdout main;"):
        assert f"{line}\n" in text, line
    assert "map $http_upgrade $connection_upgrade {" in text
    names, _ = directives(text)
    assert "user" not in names


def test_default_server() -> None:
    text = TemplateExecutor().execute_main_template(main_config(http_port=8080, https_port=8443))
    assert "listen 8080 default_server;" in text and "listen [::]:8443 ssl default_server;" in text
    assert "ssl_reject_handshake on;" in text and "return 404;" in text
    assert "healthy" not in text
    text = TemplateExecutor().execute_main_template(main_config(
        default_server_tls_path="/etc/ic/secrets/default", health_status=True, health_status_uri="/hz",
        disable_ipv6=True, nginx_status=False, worker_user="root"))
    assert "ssl_reject_handshake" not in text and "ssl_certificate /etc/ic/secrets/default;" in text
    assert ('location /hz {\n            default_type text/plain;\n'
            '            return 200 "healthy\\n";') in text
    assert "[::]" not in text and "allow 127.0.0.1" not in text and text.count("stub_status;") == 1
    assert "\nuser root;\n" in text


def test_config_map_values_reach_the_main_template() -> None:
    params = ConfigParams(worker_processes="4", worker_connections=4096,
                          log_format=('$remote_addr "$request"',), server_names_hash_bucket_size=512,
                          default_server_return="444", access_log_off=True)
    text = TemplateExecutor().execute_main_template(
        generate_main_config(StaticConfigParams(run_dir="/r"), params))
    assert "worker_processes 4;" in text and "worker_connections 4096;" in text
    assert 'log_format main "$remote_addr \\"$request\\"";' in text
    assert "server_names_hash_bucket_size 512;" in text and "return 444;" in text
    assert "access_log off;" in text


def test_strict_undefined_catches_a_model_mismatch() -> None:
    tx = TemplateExecutor()
    tx.update_ingress_template("{{ servers[0].no_such_field }}")
    cfg = IngressNginxConfig(upstreams=(), servers=(), ingress=IngressMeta("a", "b"))
    with pytest.raises(TemplateRenderError):
        tx.execute_ingress_template(cfg)
    tx.update_ingress_template("{{ no_such_name }}")
    with pytest.raises(TemplateRenderError, match="no_such_name"):
        tx.execute_ingress_template(cfg)
    tx.update_main_template("{{ run_dir.nope }}")
    with pytest.raises(TemplateRenderError):
        tx.execute_main_template(main_config())


def test_the_builtin_ingress_template_reads_the_model_directly() -> None:
    """No `Environment.getattr`/`getitem` call per attribute and no `str()` around the filters' text; a model
    that lacks a field still fails at render time, as a TemplateRenderError."""
    env = new_environment(direct_access=True)
    source = env.loader.get_source(env, INGRESS_TEMPLATE)[0]  # type: ignore[union-attr]
    code = env.compile(source, INGRESS_TEMPLATE, raw=True)
    assert "(l_1_server).ssl" in code and "(l_1_server).ssl_ports)[0]" in code
    assert "environment.getattr(" not in code and "environment.getitem(" not in code
    assert "yield t_9((l_1_upstream).name)" in code and "str(t_" not in code
    assert "str_join(" not in code and "t_1((str(" in code
    plain = new_environment().compile(source, INGRESS_TEMPLATE, raw=True)
    assert "environment.getattr(l_1_server, 'ssl')" in plain
    tx = TemplateExecutor()
    cfg = IngressNginxConfig(upstreams=(), servers=(object(),), ingress=IngressMeta("a", "b"))  # type: ignore[arg-type]
    with pytest.raises(TemplateRenderError, match=r"AttributeError: .* no attribute 'grpc_only'"):
        tx.execute_ingress_template(cfg)


def test_custom_ingress_templates_keep_jinja_attribute_semantics() -> None:
    """A ConfigMap template reads a dict key with `.` and tests names with `is defined`, as Jinja2 does."""
    tx = TemplateExecutor()
    tx.update_ingress_template("{{ ingress.annotations.team }} {{ ingress.annotations.other is defined }} "
                               "{{ ingress['name'] }}\n")
    cfg = IngressNginxConfig(upstreams=(), servers=(), ingress=IngressMeta("a", "b", {"team": "blue"}))
    assert tx.execute_ingress_template(cfg) == "blue False a\n"
    tx.update_ingress_template("{{ servers[0] }}")
    with pytest.raises(TemplateRenderError, match="has no element 0"):  # StrictUndefined, not IndexError
        tx.execute_ingress_template(cfg)


def test_num_takes_integers_only_also_once_cached() -> None:
    assert num(1) == "1" and num(1) == "1"
    for value in (True, 1.0, "1"):
        with pytest.raises(NginxValueError, match="expected an integer"):
            num(value)


def test_an_unsafe_value_is_a_render_error() -> None:
    tx = TemplateExecutor()
    with pytest.raises(TemplateRenderError, match="unsafe value"):
        tx.execute_main_template(dataclasses.replace(main_config(), error_log_level="notice; user root"))


def test_custom_template_paths_and_overrides(tmp_path: Path) -> None:
    main = tmp_path / "main.j2"
    main.write_text("custom main {{ run_dir }}\n")
    ing = tmp_path / "ing.j2"
    ing.write_text("custom ingress {{ ingress.name }}\n")
    tx = TemplateExecutor(str(main), str(ing))
    cfg = IngressNginxConfig(upstreams=(), servers=(), ingress=IngressMeta("a", "b"))
    assert tx.execute_main_template(main_config()) == "custom main /run/ic\n"
    assert tx.execute_ingress_template(cfg) == "custom ingress a\n"
    assert not tx.is_main_builtin and not tx.is_ingress_builtin
    # A ConfigMap override replaces it; a broken one raises and the current one stays.
    tx.update_ingress_template("override {{ ingress.namespace }}\n")
    assert tx.execute_ingress_template(cfg) == "override b\n"
    with pytest.raises(TemplateError, match="line 1"):
        tx.update_ingress_template("{% for x in %}")
    assert tx.execute_ingress_template(cfg) == "override b\n"
    # Removing the override goes back to the --ingress-template-path file.
    tx.use_original_ingress_template()
    assert tx.execute_ingress_template(cfg) == "custom ingress a\n"


def test_broken_template_file_fails_at_start(tmp_path: Path) -> None:
    bad = tmp_path / "bad.j2"
    bad.write_text("{% if %}")
    with pytest.raises(TemplateError):
        TemplateExecutor(main_template_path=str(bad))
    with pytest.raises(TemplateError, match="cannot read"):
        TemplateExecutor(ingress_template_path=str(tmp_path / "missing.j2"))
