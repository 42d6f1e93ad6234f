"""ingress-nginx's `$escaped_request_uri` is `$ingressctl_escaped_request_uri`, which the built-in nginx.conf
always defines: by loading the escape-URI module when it is installed, else by a map standing in for it; a
custom main template that defines neither gets files with `$request_uri` in its place (NGINX would refuse
the unknown variable), and the built-in one brings the variable back. (The module's escaping itself is
tested through a real NGINX in tests/integration/test_ingress_nginx_auth.py.)"""

from __future__ import annotations

import os
import re

from ingressctl.configs import escaped_uri
from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.configs.configurator import Configurator
from ingressctl.configs.templates import MAIN_TEMPLATE, TEMPLATES_DIR, TemplateExecutor
from ingressctl.kinds.ingress.ingress_ex import IngressEx
from tests.unit.test_configs_configurator import FakeManager
from tests.unit.test_ingress_nginx_authreq import ENDPOINTS, N, ingress

MODULE = "/modules/ngx_http_ingressctl_escape_uri_module.so"
MAP = "map $request_uri $ingressctl_escaped_request_uri {"


def signin_ingress() -> IngressEx:
    annotations = {N + "auth-url": "http://auth.example.com/check",
                   N + "auth-signin": "https://$host/oauth2/start?rd=$escaped_request_uri"}
    return IngressEx(ingress(annotations), {"app.example.com": True}, dict(ENDPOINTS))


def redirect(text: str) -> str:
    """The sign-in redirect (the same in each location's named location)."""
    (line,) = set(re.findall(r"return 302 [^;]*;", text))
    return line


def configurator(module: str) -> tuple[Configurator, FakeManager]:
    m = FakeManager()
    static = StaticConfigParams(ingress_nginx_compat=True, escape_uri_module_path=module)
    return Configurator(m, static, ConfigParams(), TemplateExecutor()), m  # type: ignore[arg-type]


def test_the_module_defines_the_variable_when_it_is_installed() -> None:
    c, m = configurator(MODULE)
    c.add_or_update_ingress(signin_ingress())
    assert f"load_module {MODULE};" in m.main and MAP not in m.main
    assert redirect(m.files["shop-app"]) == ('return 302 "https://$host/oauth2/start'
                                            '?rd=$ingressctl_escaped_request_uri";')


def test_without_the_module_a_map_stands_in() -> None:
    c, m = configurator("")
    c.add_or_update_ingress(signin_ingress())
    assert "escape_uri" not in m.main and MAP in m.main
    assert escaped_uri.VARIABLE in redirect(m.files["shop-app"])


def test_a_custom_main_template_defining_neither_gets_request_uri() -> None:
    c, m = configurator(MODULE)
    c.add_or_update_ingress(signin_ingress())
    with open(os.path.join(TEMPLATES_DIR, MAIN_TEMPLATE)) as f:
        custom = f.read().replace("load_module {{ escape_uri_module_path | arg }};", "")
    c.update_config(ConfigParams(main_template=custom), [signin_ingress()])
    assert "escape_uri" not in m.main and MAP not in m.main
    assert redirect(m.files["shop-app"]) == 'return 302 "https://$host/oauth2/start?rd=$request_uri";'
    c.update_config(ConfigParams(), [signin_ingress()])
    assert escaped_uri.VARIABLE in redirect(m.files["shop-app"])


def test_plain_leaves_other_text_as_it_is() -> None:
    text = "location / {\n    return 200;\n}\n"
    assert escaped_uri.plain(text) is text
    assert escaped_uri.plain(f"x {escaped_uri.VARIABLE} y") == "x $request_uri y"
