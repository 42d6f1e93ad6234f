"""The Configurator and the catch-all: nginx.conf names its upstream; when a catch-all appears or goes, the
other resources are rendered again (and only files whose bytes change are written); one reload for all."""

from __future__ import annotations

from typing import Any

from ingressctl.controller.model import CATCH_ALL_HOST
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from tests.unit.test_configs_configurator import configurator


def ex(name: str, path: str = "/api") -> IngressEx:
    ing = {"metadata": {"name": name, "namespace": "default"},
           "spec": {"rules": [{"host": f"{name}.example.com", "http": {"paths": [
               {"path": path, "pathType": "Prefix",
                "backend": {"service": {"name": "svc", "port": {"number": 80}}}}]}}]}}
    return IngressEx(ing, {f"{name}.example.com": True}, {backend_key("svc", 80): ["10.0.0.1:80"]})


def catch_all(name: str) -> IngressEx:
    ing: dict[str, Any] = {"metadata": {"name": name, "namespace": "default"},
                           "spec": {"defaultBackend": {"service": {"name": "echo", "port": {"number": 80}}}}}
    return IngressEx(ing, {CATCH_ALL_HOST: True}, {backend_key("echo", 80): ["10.0.0.2:80"]})


def test_a_catch_all_appearing_and_going_renders_the_others_again() -> None:
    c, m = configurator(builtin=True)
    assert 'map "" $ingressctl_catch_all {\n        default "";' in m.main
    c.add_or_update_ingresses([ex("api"), ex("root", "/")])
    c.reload_if_needed()
    reloads, root = m.reload_count, m.files["default-root"]
    c.add_or_update_ingress(catch_all("fallback"))
    assert "default default-fallback--echo-80;" in m.main
    assert "proxy_pass http://$ingressctl_catch_all;" in m.files["default-api"]
    assert m.files["default-root"] == root  # it has its own "/": unchanged
    assert 'server_name ~^ "";' in m.files["default-fallback"]
    assert c.reload_if_needed().reloaded and m.reload_count == reloads + 1
    c.delete_ingress("default/fallback")
    assert 'default "";' in m.main and "ingressctl_catch_all" not in m.files["default-api"]
    assert "default-fallback" not in m.files


def test_a_new_winner_changes_only_nginx_conf_and_the_two_files() -> None:
    c, m = configurator(builtin=True)
    c.add_or_update_ingresses([ex("api"), catch_all("old")])
    c.reload_if_needed()
    api = m.files["default-api"]
    writes = m.writes
    c.add_or_update_ingress(catch_all("new"))  # both rendered for a moment: the smaller key is named
    c.delete_ingress("default/old")
    assert "default default-new--echo-80;" in m.main and m.files["default-api"] == api
    assert m.writes == writes + 1  # the new catch-all's file; the old one's is removed
    # A catch-all that gets rules is no longer the catch-all.
    c.add_or_update_ingress(ex("new"))
    assert 'default "";' in m.main and "ingressctl_catch_all" not in m.files["default-api"]
