"""What keeps NGINX's load of a large configuration short, rendered without changing what is served:
certificates loaded at handshakes (servers without an SSL context of their own) and proxy settings declared
once in nginx.conf (locations that equal them inherit them)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from ingressctl.configs.config import MainConfig
from ingressctl.configs.configmaps import (
    ConfigParams,
    StaticConfigParams,
    generate_main_config,
    proxy_defaults,
)
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.kinds.ingress.config import generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx
from ingressctl.secret_types import SecretReference
from tests.unit.test_configs_ingress import block, ingress, path, rule

TEMPLATES = TemplateExecutor()
PEM = "/etc/ic/secrets/default-tls-secret"
PER_HANDSHAKE = StaticConfigParams(run_dir="/run/ic", certificates_per_handshake=True)
STANDARD_HEADERS = ("proxy_set_header Host $host;", "proxy_set_header X-Real-IP $remote_addr;",
                    "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
                    "proxy_set_header X-Forwarded-Host $host;",
                    "proxy_set_header X-Forwarded-Port $server_port;",
                    "proxy_set_header X-Forwarded-Proto $scheme;")


def tls_ex(annotations: dict[str, str] | None = None, *, ref: SecretReference | None = None) -> IngressEx:
    ing = ingress(rules=[rule("secure.example.com", path("/", "web"))], annotations=annotations,
                  tls=[{"hosts": ["secure.example.com"], "secretName": "tls-secret"}])
    ref = ref or SecretReference("default/tls-secret", PEM, secret_type="kubernetes.io/tls")
    return IngressEx(ing, {"secure.example.com": True}, {}, secret_refs={"tls-secret": ref})


def render(ing_ex: IngressEx, static: StaticConfigParams, config: ConfigParams | None = None, *,
           defaults: bool = False) -> Any:
    config = config or ConfigParams()
    cfg, warnings = generate_nginx_config(ing_ex, static, config,
                                          proxy_defaults=proxy_defaults(config) if defaults else None)
    return cfg, TEMPLATES.execute_ingress_template(cfg), warnings


def test_a_tls_server_leaves_its_certificate_to_the_default_servers_context() -> None:
    cfg, text, warnings = render(tls_ex(), PER_HANDSHAKE)
    server = cfg.servers[0]
    assert warnings == [] and server.certificate_per_handshake and server.ssl_certificate == PEM
    assert "listen 443 ssl;" in text and "ssl_certificate " not in text and "ssl_reject_handshake" not in text
    assert "return 301 https://$host:443$request_uri;" in text  # ssl-redirect unchanged


def test_the_default_server_loads_the_selected_servers_certificate_at_handshakes() -> None:
    main = TEMPLATES.execute_main_template(generate_main_config(PER_HANDSHAKE, ConfigParams()))
    default = block(main, "    server")
    assert "ssl_certificate $ingressctl_certificate;" in default
    assert "ssl_certificate_key $ingressctl_certificate;" in default
    assert "ssl_reject_handshake on;" in default  # unknown names are still refused
    with_default = StaticConfigParams(run_dir="/run/ic", certificates_per_handshake=True,
                                      default_server_tls_path="/etc/ic/secrets/default")
    default = block(TEMPLATES.execute_main_template(generate_main_config(with_default, ConfigParams())),
                    "    server")
    assert "ssl_reject_handshake" not in default and "$ingressctl_certificate" in default


CACHE_MODULE = "/usr/lib/nginx/modules/ngx_http_ingressctl_certificate_cache_module.so"


@pytest.mark.parametrize(("version", "module", "per_handshake", "nginx_cache", "our_cache"), [
    ((1, 22, 1), CACHE_MODULE, True, False, True),    # NGINX without ssl_certificate_cache: our module
    ((1, 22, 1), "", True, False, False),             # no module: parsed at every handshake
    ((1, 22, 1), CACHE_MODULE, False, False, False),  # loaded at reloads: the module is not loaded
    ((1, 31, 3), "", True, True, False),              # NGINX's own cache
    ((1, 31, 3), CACHE_MODULE, True, True, False),    # NGINX's own cache wins over the module
])
def test_certificates_loaded_at_handshakes_are_cached_by_nginx_or_by_the_module(
        version: tuple[int, ...], module: str, per_handshake: bool, nginx_cache: bool,
        our_cache: bool) -> None:
    from ingressctl.configs.configmaps import CERTIFICATE_CACHE_SIZE
    from ingressctl.nginx.capabilities import Capabilities

    static = StaticConfigParams(run_dir="/run/ic", certificates_per_handshake=per_handshake,
                                capabilities=Capabilities(version=version),
                                certificate_cache_module_path=module)
    main = TEMPLATES.execute_main_template(generate_main_config(static, ConfigParams()))
    assert (f"load_module {CACHE_MODULE};" in main) == our_cache
    http = block(main, "http")
    assert (f"\n    ingressctl_certificate_cache max={CERTIFICATE_CACHE_SIZE};\n" in http) == our_cache
    assert ("ssl_certificate_cache max=" in block(main, "    server")) == nginx_cache


@pytest.mark.parametrize("annotations", [
    {"nginx.org/listen-ports-ssl": "8443"},           # a port the default server does not listen on
    {"nginx.org/ssl-ciphers": "HIGH:!aNULL"},         # SSL settings of its own need a context of its own
    {"nginx.org/ssl-prefer-server-ciphers": "true"},
])
def test_servers_the_default_servers_context_cannot_serve_keep_their_own(annotations: dict[str, str]) -> None:
    cfg, text, warnings = render(tls_ex(annotations), PER_HANDSHAKE)
    assert warnings == [] and not cfg.servers[0].certificate_per_handshake
    assert f"ssl_certificate {PEM};" in text


def test_without_the_option_or_a_valid_secret_nothing_changes() -> None:
    cfg, text, _ = render(tls_ex(), StaticConfigParams(run_dir="/run/ic"))
    assert not cfg.servers[0].certificate_per_handshake and f"ssl_certificate {PEM};" in text
    cfg, text, warnings = render(tls_ex(ref=SecretReference("default/tls-secret", error="bad PEM")),
                                 PER_HANDSHAKE)
    assert not cfg.servers[0].certificate_per_handshake and "ssl_reject_handshake on;" in text and warnings


def locations(text: str) -> list[str]:
    return [block(text, f"    location {p}") for p in ("/", "/api/")]


def test_a_location_equal_to_the_defaults_inherits_them_from_nginx_conf() -> None:
    ing = IngressEx(ingress(rules=[rule("a.example.com", path("/", "web"), path("/api", "web"))]),
                    {"a.example.com": True}, {})
    _, text, _ = render(ing, StaticConfigParams(run_dir="/run/ic"), defaults=True)
    for loc in locations(text):
        assert "proxy_pass http://" in loc and "client_max_body_size 1m;" in loc
        assert "proxy_set_header" not in loc and "proxy_read_timeout" not in loc
        assert "proxy_http_version" not in loc and "proxy_buffering" not in loc
    main = TEMPLATES.execute_main_template(generate_main_config(StaticConfigParams(run_dir="/run/ic"),
                                                                ConfigParams()))
    http = main[:main.index("    server {")]
    for line in ("proxy_http_version 1.1;", *STANDARD_HEADERS, "proxy_connect_timeout 60s;",
                 "proxy_read_timeout 60s;", "proxy_send_timeout 60s;", "proxy_buffering on;"):
        assert f"    {line}\n" in http
    assert "client_max_body_size" not in http and 'Connection ""' not in http


@pytest.mark.parametrize("annotations,config", [
    ({"nginx.org/proxy-read-timeout": "5s"}, None),
    ({"nginx.org/websocket-services": "web"}, None),
    ({"nginx.org/redirect-to-https": "true"}, None),
    ({"nginx.org/proxy-set-headers": "X-Team"}, None),
    ({"nginx.org/keepalive": "8"}, None),
    ({}, ConfigParams(proxy_buffering=False)),       # the ConfigMap's value: inherited, see below
])
def test_a_location_that_differs_repeats_everything(annotations: dict[str, str],
                                                    config: ConfigParams | None) -> None:
    ing = IngressEx(ingress(rules=[rule("a.example.com", path("/", "web"))], annotations=annotations),
                    {"a.example.com": True}, {})
    _, text, warnings = render(ing, StaticConfigParams(run_dir="/run/ic"), config, defaults=True)
    loc = block(text, "    location /")
    assert warnings == []
    if not annotations:
        assert "proxy_set_header" not in loc and "proxy_buffering" not in loc
        return
    assert "proxy_http_version 1.1;" in loc and "proxy_connect_timeout" in loc and "proxy_buffering" in loc
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in loc


def test_snippets_or_a_custom_main_template_keep_every_directive_in_the_location() -> None:
    static = StaticConfigParams(run_dir="/run/ic", enable_snippets=True)
    for snippet in ({"nginx.org/location-snippets": "proxy_set_header X-A a;"},
                    {"nginx.org/server-snippets": "proxy_set_header X-A a;"}):
        ing = IngressEx(ingress(rules=[rule("a.example.com", path("/", "web"))], annotations=snippet),
                        {"a.example.com": True}, {})
        _, text, _ = render(ing, static, defaults=True)
        assert "proxy_set_header Host $host;" in block(text, "    location /")
    ing = IngressEx(ingress(rules=[rule("a.example.com", path("/", "web"))]), {"a.example.com": True}, {})
    _, text, _ = render(ing, static, defaults=False)  # what a custom main template gets
    assert "proxy_set_header Host $host;" in block(text, "    location /")


def test_a_configmap_keepalive_is_part_of_the_defaults() -> None:
    config = ConfigParams(keepalive=16)
    ing = IngressEx(ingress(rules=[rule("a.example.com", path("/", "web"))]), {"a.example.com": True}, {})
    _, text, _ = render(ing, StaticConfigParams(run_dir="/run/ic"), config, defaults=True)
    assert "proxy_set_header" not in block(text, "    location /")
    main: MainConfig = generate_main_config(StaticConfigParams(run_dir="/run/ic"), config)
    assert 'proxy_set_header Connection "";' in TEMPLATES.execute_main_template(main)


def test_minions_inherit_with_the_masters_keepalive() -> None:
    from ingressctl.kinds.ingress.config import generate_nginx_config_for_mergeable
    from tests.unit.test_configs_mergeable import ex, master, shop

    def minion_location(m: Any, config: ConfigParams) -> str:
        cfg = generate_nginx_config_for_mergeable(m, StaticConfigParams(run_dir="/run/ic"), config,
                                                  proxy_defaults=proxy_defaults(config)).config
        return block(TEMPLATES.execute_ingress_template(cfg), "    location /p0/")

    assert "proxy_set_header" not in minion_location(shop(1), ConfigParams())
    # The master's keepalive annotation differs from the ConfigMap's: its minions repeat everything.
    m = shop(1)
    m.master = ex(master(annotations={"nginx.org/keepalive": "4"}))
    loc = minion_location(m, ConfigParams())
    assert 'proxy_set_header Connection "";' in loc and "proxy_set_header Host $host;" in loc
    # ... and when the ConfigMap has the same keepalive, they inherit it.
    assert "proxy_set_header" not in minion_location(m, ConfigParams(keepalive=4))


def test_the_configurator_renders_the_certificate_map_once_per_reload() -> None:
    import shutil
    import tempfile

    from ingressctl.configs.configurator import CERTIFICATE_MAP_FILE, Configurator
    from tests.unit.test_configs_configurator import FakeManager

    m = FakeManager()
    m.secrets_dir = tempfile.mkdtemp(prefix="cm-secrets-")  # NGINX's workers must reach it (under root)
    os.chmod(m.secrets_dir, 0o711)
    try:
        c = Configurator(m, StaticConfigParams(), ConfigParams(), TEMPLATES,  # type: ignore[arg-type]
                         certificates_per_handshake=True)
        assert 'default "";' in m.files[CERTIFICATE_MAP_FILE] and "$ingressctl_certificate" in m.main
        c.add_or_update_ingress(tls_ex())
        assert "secure.example.com" not in m.files[CERTIFICATE_MAP_FILE]  # not before the reload
        assert c.reload_if_needed().reloaded
        assert f'"\\\\secure.example.com" "{PEM}";' in m.files[CERTIFICATE_MAP_FILE]
        writes = m.writes
        c.add_or_update_ingress(tls_ex())                                # nothing changed: nothing written
        assert not c.reload_if_needed().reloaded and m.writes == writes
        c.delete_ingress("default/reports")
        assert c.reload_if_needed().reloaded
        assert "secure.example.com" not in m.files[CERTIFICATE_MAP_FILE]
    finally:
        shutil.rmtree(m.secrets_dir, ignore_errors=True)
