"""Policies in a VirtualServer's model: spec policies in the server, route policies in every location of
the route (split and match locations too), subroute inheritance, the spec apiKey inherited only where no
route apiKey is, http lines once, and failing contexts."""

from __future__ import annotations

from typing import Any

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams
from ingressctl.kinds.virtualserver.config import generate_vs_config
from ingressctl.kinds.virtualserver.template_model import VirtualServerEx
from ingressctl.policies.base import PolicySecret, ResolvedPolicy


def resolved(name: str, ns: str = "demo", **spec: Any) -> tuple[str, ResolvedPolicy]:
    key = f"{ns}/{name}"
    secrets = {}
    if "apiKey" in spec:
        secrets["clientSecret"] = PolicySecret(f"{ns}/keys", "nginx.org/apikey", f"/s/{ns}-keys")
    obj = {"metadata": {"name": name, "namespace": ns}, "spec": spec}
    return key, ResolvedPolicy(key, obj, secrets=secrets)


POLICIES = dict([
    resolved("one", accessControl={"allow": ["127.0.0.1"]}),
    resolved("two", accessControl={"allow": ["127.0.0.2"]}),
    resolved("rl", rateLimit={"rate": "5r/s", "key": "${uri}", "zoneSize": "1m"}),
    resolved("key", apiKey={"suppliedIn": {"header": ["X-Key"]}, "clientSecret": "keys"}),
    resolved("other-key", apiKey={"suppliedIn": {"query": ["k"]}, "clientSecret": "keys"}),
    resolved("jwt", jwt={"realm": "r", "secret": "j"}),
    resolved("vsr-pol", ns="team", accessControl={"deny": ["10.0.0.1"]}),
])
UPS = [{"name": "web", "service": "web", "port": 80}]


def refs(*names: str) -> list[dict[str, str]]:
    return [{"name": n} for n in names]


def build(spec: dict[str, Any], vsrs: list[dict[str, Any]] | None = None) -> tuple[Any, list[str]]:
    vs = {"metadata": {"name": "cafe", "namespace": "demo"},
          "spec": {"host": "cafe.example.com", "upstreams": UPS, **spec}}
    ex = VirtualServerEx(vs, {"web": ["10.0.0.9:80"]}, vsrs=vsrs or [], policies=POLICIES)
    static = StaticConfigParams(http_port=80, https_port=443, run_dir="/run", conf_dir="/etc/ic")
    return generate_vs_config(ex, static, ConfigParams(), replicas=1)


def loc(cfg: Any, path: str) -> Any:
    return next(x for x in cfg.server.locations if x.path == path)


def test_spec_route_split_and_match_locations() -> None:
    cfg, warnings = build({"policies": refs("one", "rl"), "routes": [
        {"path": "/a", "action": {"pass": "web"}, "policies": refs("two")},
        {"path": "/s", "splits": [{"weight": 50, "action": {"pass": "web"}},
                                  {"weight": 50, "action": {"pass": "web"}}], "policies": refs("two")},
        {"path": "/m", "matches": [{"conditions": [{"header": "x", "value": "y"}],
                                    "action": {"pass": "web"}}],
         "action": {"pass": "web"}, "policies": refs("rl")},
        {"path": "/plain", "action": {"pass": "web"}}]})
    assert warnings == []
    assert cfg.server.policy_lines == ["allow 127.0.0.1;", "deny all;",
                                       "limit_req zone=pol_rl_demo_rl_demo_cafe;",
                                       "limit_req_log_level error;", "limit_req_status 503;"]
    assert cfg.policy_http == ['limit_req_zone "${uri}" zone=pol_rl_demo_rl_demo_cafe:1m rate=5r/s;']
    assert loc(cfg, "/a").policy_lines == ["allow 127.0.0.2;", "deny all;"]
    internal = [x for x in cfg.server.locations if x.internal]
    assert len(internal) == 4 and all(x.policy_lines for x in internal)
    assert loc(cfg, "/s").policy_lines == [] and loc(cfg, "/s").rewrite_to     # the entry only rewrites
    assert loc(cfg, "/plain").policy_lines == []                               # the server's apply


def test_subroutes_use_their_own_or_inherit_the_route_policies_and_report_on_the_vsr() -> None:
    vsr = {"metadata": {"name": "juice", "namespace": "team"},
           "spec": {"host": "cafe.example.com", "upstreams": UPS, "subroutes": [
               {"path": "/juice/own", "action": {"pass": "web"}, "policies": refs("vsr-pol")},
               {"path": "/juice/none", "action": {"pass": "web"}},
               {"path": "/juice/empty", "action": {"pass": "web"}, "policies": []},
               {"path": "/juice/bad", "action": {"pass": "web"}, "policies": refs("one")}]}}
    cfg, warnings = build({"routes": [{"path": "/juice", "route": "team/juice", "policies": refs("one")}]},
                          [vsr])
    assert loc(cfg, "/juice/own").policy_lines == ["deny 10.0.0.1;", "allow all;"]
    assert loc(cfg, "/juice/none").policy_lines == ["allow 127.0.0.1;", "deny all;"]   # demo/one
    assert loc(cfg, "/juice/empty").policy_lines == ["allow 127.0.0.1;", "deny all;"]
    bad = loc(cfg, "/juice/bad")             # team/one does not exist: the VSR's namespace is the default
    assert bad.return_500 and bad.policy_lines == []
    assert warnings == [] and cfg.child_warnings == {"team/juice": ["Policy team/one is missing or invalid"]}


def test_spec_api_key_is_inherited_only_by_locations_without_their_own() -> None:
    cfg, _ = build({"policies": refs("key"), "routes": [
        {"path": "/", "action": {"pass": "web"}},
        {"path": "/own", "action": {"pass": "web"}, "policies": refs("other-key")}]})
    assert cfg.server.policy_lines == []
    spec_key = "$apikey_auth_demo_cafe_demo_key"
    assert loc(cfg, "/").policy_lines[:3] == [f"if ({spec_key} = 401) {{ return 401; }}",
                                              f"if ({spec_key} = 403) {{ return 403; }}",
                                              f"set $apikey_client_name {spec_key}_client;"]
    own = "$apikey_auth_demo_cafe_demo_other_key"
    assert loc(cfg, "/own").policy_lines[:3] == [f"if ({own} = 401) {{ return 401; }}",
                                                 f"if ({own} = 403) {{ return 403; }}",
                                                 f"set $apikey_client_name {own}_client;"]
    assert len(cfg.policy_http) == 4        # per policy: the key map and the client-name map


def test_failing_contexts() -> None:
    cfg, warnings = build({"policies": refs("nope"), "routes": [
        {"path": "/", "action": {"pass": "web"}, "policies": refs("jwt")}]})
    assert cfg.server.return_500 and cfg.server.policy_lines == []
    assert loc(cfg, "/").return_500
    assert warnings == ["Policy demo/nope is missing or invalid", "JWT policy demo/jwt requires NGINX Plus"]
