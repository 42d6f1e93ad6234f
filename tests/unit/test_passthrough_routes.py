"""ingress-nginx's ssl-passthrough: the `/` backend of each host, the shared passthrough table (owners, hand-
overs), the Ingress's stream file and the SNI split through real `nginx -t`, HTTPS from the HTTP locations,
and the annotation's row in the translation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams, generate_main_config
from ingressctl.configs.renderers import RenderContext
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.keys import INGRESS_KIND, ResourceKey
from ingressctl.kinds.ingress.annotation_table import Status
from ingressctl.kinds.ingress.config import generate_nginx_config
from ingressctl.kinds.ingress.ingress_ex import IngressEx, backend_key
from ingressctl.kinds.ingress.ingress_nginx.passthrough import (
    INGRESS_PASSTHROUGH_KIND,
    NOT_ENABLED,
    IngressPassthrough,
    IngressPassthroughRenderer,
    IngressPassthroughs,
    build,
    https_services,
    root_backends,
    socket_name,
)
from ingressctl.kinds.ingress.ingress_nginx.translate import translate
from ingressctl.kinds.passthrough import (
    PASSTHROUGH_KEY,
    PassthroughHosts,
    PassthroughRenderer,
    PassthroughTable,
)
from ingressctl.nginx.manager import Manager
from ingressctl.nginx.modules import stream_module
from ingressctl.nginx.verify import render_config_version

ANN = "nginx.ingress.kubernetes.io/ssl-passthrough"
HOST = "secure.example.com"


def path(p: str, svc: str, port: int | str = 443) -> dict[str, Any]:
    number = {"number": port} if isinstance(port, int) else {"name": port}
    return {"path": p, "pathType": "Prefix", "backend": {"service": {"name": svc, "port": number}}}


def ingress(value: str = "true", rules: list[dict[str, Any]] | None = None, *,
            default: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"ingressClassName": "nginx", "rules": rules if rules is not None else [
        {"host": HOST, "http": {"paths": [path("/api", "api", 80), path("/", "secure")]}}]}
    if default:
        spec["defaultBackend"] = {"service": {"name": default, "port": {"number": 8443}}}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "app", "namespace": "demo", "annotations": {ANN: value}}, "spec": spec}


class Files:
    """The Configurator's add_or_update / delete, recorded."""

    def __init__(self) -> None:
        self.held: dict[ResourceKey, object] = {}
        self.writes = 0

    def add_or_update(self, key: ResourceKey, resource: object) -> list[str]:
        self.held[key] = resource
        self.writes += 1
        return []

    def delete(self, key: ResourceKey) -> None:
        del self.held[key]


def test_the_root_path_then_the_default_backend_is_passed_through_and_other_hosts_warn() -> None:
    rules = [{"host": HOST, "http": {"paths": [path("/api", "api", 80), path("/", "secure")]}},
             {"host": "other.example.com", "http": {"paths": [path("/x", "x", 80)]}},
             {"host": "*.example.com", "http": {"paths": [path("/", "w")]}},
             {"http": {"paths": [path("/", "bare")]}},
             {"host": "lost.example.com", "http": {"paths": [path("/", "lost")]}}]
    valid = {HOST: True, "other.example.com": True, "*.example.com": True, "lost.example.com": False}
    hosts, warnings = root_backends(ingress(rules=rules), valid)
    assert hosts == {HOST: ("secure", 443)}   # not /api's; a host another resource owns is left out
    assert len(warnings) == 3
    assert any("other.example.com has no '/' path" in w for w in warnings)
    assert any("wildcard host *.example.com" in w for w in warnings)
    assert any("rule without host" in w for w in warnings)
    hosts, warnings = root_backends(ingress(rules=rules[1:2], default="fallback"), valid)
    assert hosts == {"other.example.com": ("fallback", 8443)} and warnings == []
    named = [{"host": HOST, "http": {"paths": [path("/", "secure", "https")]}}]
    assert root_backends(ingress(rules=named), {HOST: True})[0] == {HOST: ("secure", "https")}


def test_https_services_only_for_values_go_reads_as_true() -> None:
    for value in ("true", "1", "True"):
        assert https_services(ingress(value), {HOST: True}) == {"secure"}, value
    for value in ("false", "0", "", "maybe"):
        assert https_services(ingress(value), {HOST: True}) == frozenset(), value


def test_the_table_keeps_each_owners_hosts_and_hands_a_host_over_in_either_order() -> None:
    files = Files()
    table = PassthroughTable(8443, files)
    assert files.held[PASSTHROUGH_KEY] == PassthroughHosts(8443)      # the split from the first reload on
    ts, ing = ResourceKey("transportserver", "demo/ts"), ResourceKey(INGRESS_KIND, "demo/app")
    table.set(ts, {"a.example.com": "ts.sock"})
    table.set(ing, {"b.example.com": "ing.sock", "c.example.com": "ing.sock"})
    writes = files.writes
    table.set(ing, {"b.example.com": "ing.sock", "c.example.com": "ing.sock"})
    assert files.writes == writes                                       # unchanged: not written again
    assert {h: r.owner for h, r in table.routes().items()} == {
        "a.example.com": ts, "b.example.com": ing, "c.example.com": ing}
    # The Configuration hands a.example.com to the Ingress: the new owner's set first, the old one's forget
    # after it, or the other way round; the host ends up with the Ingress either way.
    for first_set in (True, False):
        t = PassthroughTable(8443, Files())
        t.set(ts, {"a.example.com": "ts.sock"})
        if first_set:
            t.set(ing, {"a.example.com": "ing.sock"})
            t.forget(ts)
        else:
            t.forget(ts)
            t.set(ing, {"a.example.com": "ing.sock"})
        assert {h: (r.owner, r.socket) for h, r in t.routes().items()} == {"a.example.com": (ing, "ing.sock")}
    table.forget(ing)
    assert set(table.routes()) == {"a.example.com"}
    split = files.held[PASSTHROUGH_KEY]
    assert isinstance(split, PassthroughHosts) and set(split.routes) == {"a.example.com"}


def ex(value: str = "true", endpoints: list[str] | None = None, **kw: Any) -> IngressEx:
    return IngressEx(ingress(value, **kw), {HOST: True},
                     {backend_key("secure", 443): endpoints if endpoints is not None else ["10.0.0.2:8443",
                                                                                           "10.0.0.1:8443"],
                      backend_key("api", 80): ["10.0.0.9:80"]})


def test_the_builder_part_writes_the_file_and_routes_and_drops_them_with_the_annotation() -> None:
    key = ResourceKey(INGRESS_KIND, "demo/app")
    pkey = ResourceKey(INGRESS_PASSTHROUGH_KIND, "demo/app")
    assert IngressPassthroughs().apply(ex()) == [NOT_ENABLED]          # no table: --enable-tls-passthrough
    assert "--enable-tls-passthrough" in NOT_ENABLED
    assert IngressPassthroughs().apply(ex("false")) == []
    files = Files()
    table = PassthroughTable(443, files)
    part = IngressPassthroughs(table, files)
    assert part.apply(ex()) == []
    resource = files.held[pkey]
    assert isinstance(resource, IngressPassthrough)
    sock = socket_name("demo", "app", ("secure", 443))
    assert resource.hosts == ((HOST, sock),)
    (backend,) = resource.backends                                       # only the `/` path's backend
    assert (backend.service, backend.port, backend.endpoints) == ("secure", 443, ("10.0.0.1:8443",
                                                                                   "10.0.0.2:8443"))
    assert table.routes()[HOST].owner == key and table.routes()[HOST].socket == sock
    assert part.apply(ex(endpoints=["10.0.0.3:8443"])) == []           # endpoints follow
    assert files.held[pkey].backends[0].endpoints == ("10.0.0.3:8443",)  # type: ignore[attr-defined]
    assert part.apply(ex("false")) == []                                 # the annotation removed
    assert pkey not in files.held and table.routes() == {}
    part.apply(ex())
    part.forget(key)                                                     # the Ingress deleted
    assert pkey not in files.held and table.routes() == {}
    part.forget(key)                                                     # twice: nothing to do


def test_the_stream_file_and_the_split_pass_nginx_t(tmp_path: Path) -> None:
    module = stream_module("nginx")
    mgr = Manager(binary="nginx", conf_dir=str(tmp_path / "conf"), run_dir=str(tmp_path / "run"))
    static = StaticConfigParams(conf_dir=mgr.conf_dir, run_dir=mgr.run_dir, http_port=18080, https_port=18443,
                                nginx_status=False, stream=True, stream_module_path=module,
                                tls_passthrough=True)
    mgr.create_main_config(TemplateExecutor().execute_main_template(generate_main_config(static,
                                                                                         ConfigParams())))
    Path(mgr.paths.config_version_file).write_text(render_config_version(0, mgr.paths.config_version_socket))
    ctx = RenderContext(static, ConfigParams(), TemplateExecutor())
    files = Files()
    table = PassthroughTable(18443, files)
    part = IngressPassthroughs(table, files)
    part.apply(ex())
    renderer = IngressPassthroughRenderer()
    pkey = ResourceKey(INGRESS_PASSTHROUGH_KIND, "demo/app")
    text = renderer.render(files.held[pkey], ctx).text
    sock = socket_name("demo", "app", ("secure", 443))
    for line in ('upstream "ingress_passthrough_demo_app_secure_443" {', "random two least_conn;",
                 'server "10.0.0.1:8443";', f'listen "unix:{mgr.run_dir}/{sock}" proxy_protocol;',
                 "set_real_ip_from unix:;", 'proxy_pass "ingress_passthrough_demo_app_secure_443";'):
        assert line in text, line
    assert len(sock) == len("ingress-pt-.sock") + 16                   # short: socket paths are limited
    empty = renderer.render(build(ex(endpoints=[]), {HOST: ("secure", 443)}), ctx).text
    assert f'server "unix:{mgr.run_dir}/non-existing-unix-socket.sock";' in empty
    split = PassthroughRenderer().render(files.held[PASSTHROUGH_KEY], ctx).text
    assert f'"{HOST}" "unix:{mgr.run_dir}/{sock}";' in split
    mgr.create_config(renderer.file_name(pkey), text)
    mgr.create_config(PassthroughRenderer().file_name(PASSTHROUGH_KEY), split)
    ok, out = mgr.test_config()
    assert ok, out


def test_the_http_locations_speak_https_to_the_passed_through_service_only() -> None:
    static = StaticConfigParams(run_dir="/run/ic", conf_dir="/etc/ic", ingress_nginx_compat=True)
    e = ex()
    e.https_services = https_services(e.ingress, e.valid_hosts)
    cfg, _ = generate_nginx_config(e, static, ConfigParams())
    text = TemplateExecutor().execute_ingress_template(cfg)
    assert "proxy_pass https://demo-app-secure.example.com-secure-443;" in text
    assert "proxy_pass http://demo-app-secure.example.com-api-80;" in text


def test_the_row_translates_and_bad_values_are_refused() -> None:
    tr = translate({ANN: "true"})
    assert tr.problems == () and [(x.key, x.status) for x in tr.report] == [(ANN, Status.TRANSLATED)]
    bad = translate({ANN: "maybe"})
    assert bad.errors and ANN in bad.errors[0]
