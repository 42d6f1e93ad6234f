"""The value parsers of ingress-nginx's one-directive annotations (`location_lines.py`): what they take, what
they refuse before NGINX would (a `$` that starts no capture group or known variable in `x-forwarded-prefix`
failed the reload of the rewriting location), and the lines an Ingress's values make."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ingressctl.configs.config import IngressMeta, IngressNginxConfig, Location, Server
from ingressctl.kinds.ingress.ingress_nginx import location_lines as ll


@pytest.mark.parametrize("value", ["/app", "", "app", "/$1", "/app$1x", "/$1/$2", "/$host/x",
                                   "/$http_x_prefix"])
def test_forwarded_prefix_takes_paths_captures_and_known_variables(value: str) -> None:
    assert ll.forwarded_prefix(value) == value


@pytest.mark.parametrize(("value", "message"), [
    ("/a$", "unknown NGINX variable(s): $"),
    ("/$:x", "unknown NGINX variable(s): $"),
    ("/$nosuch", "unknown NGINX variable(s): $nosuch"),
    ("/$_x", "unknown NGINX variable(s): $_x"),
    ("/a b", "must be a URI of letters"),
    ('/a"', "must be a URI of letters"),
    ("/a;b", "must be a URI of letters"),
])
def test_forwarded_prefix_refuses_what_nginx_cannot_read(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        ll.forwarded_prefix(value)


class _Out:
    def __init__(self) -> None:
        self.extras: dict[str, Any] = {}


def test_lines_in_their_order_and_the_prefix_for_rewriting_locations_only() -> None:
    parsed = {ll.LIMIT_RATE: 100, ll.LIMIT_RATE_AFTER: 50, ll.USE_PORT_IN_REDIRECTS: False,
              ll.RELATIVE_REDIRECTS: True, ll.PROXY_COOKIE_PATH: "/old /new",
              ll.PROXY_COOKIE_DOMAIN: "backend.internal example.com", ll.ENABLE_ACCESS_LOG: False,
              ll.ENABLE_REWRITE_LOG: True, ll.X_FORWARDED_PREFIX: "/$1x"}
    out = _Out()
    ll.combine(parsed, {}, out)
    assert out.extras[ll.EXTRA] == ll.LocationLines(
        ("limit_rate_after 50k;", "limit_rate 100k;", "port_in_redirect off;", "absolute_redirect off;",
         'proxy_cookie_domain "backend.internal" "example.com";', 'proxy_cookie_path "/old" "/new";',
         "access_log off;", "rewrite_log on;"),
        ('proxy_set_header X-Forwarded-Prefix "/$1x";',))


def test_defaults_write_nothing() -> None:
    out = _Out()
    ll.combine({ll.LIMIT_RATE: 0, ll.LIMIT_RATE_AFTER: 0, ll.RELATIVE_REDIRECTS: False,
                ll.ENABLE_ACCESS_LOG: True, ll.ENABLE_REWRITE_LOG: False}, {}, out)
    assert ll.EXTRA not in out.extras


def test_a_minion_without_satisfy_gets_the_masters_also_with_lines_of_its_own() -> None:
    master, plain, limited, strict = (IngressMeta(n, "ns") for n in ("team", "plain", "limited", "strict"))
    cfg = IngressNginxConfig(upstreams=(), ingress=master, servers=(Server("team.example.com", tuple(
        Location(f"/{m.name}", "", "up", "app", minion=m) for m in (plain, limited, strict))),))
    values = {
        ("ns", "team"): ll.lines_of({ll.satisfy.EXTRA: "any",
                                     ll.EXTRA: ll.LocationLines(("access_log off;",))}),
        ("ns", "limited"): ll.lines_of({ll.EXTRA: ll.LocationLines(("limit_rate 1k;",))}),
        ("ns", "strict"): ll.lines_of({ll.satisfy.EXTRA: "all"}),
    }
    out = ll.apply_location_lines(cfg, {k: v for k, v in values.items() if v is not None})
    assert [loc.policy_lines for loc in out.servers[0].locations] == [
        ("access_log off;", "satisfy any;"),   # nothing of its own: the master's
        ("limit_rate 1k;", "satisfy any;"),    # its own lines, the master's satisfy
        ("satisfy all;",),                     # its own satisfy (and so none of the master's lines)
    ]


def test_the_prefix_header_of_a_grpc_location_is_a_grpc_header() -> None:
    meta = IngressMeta("app", "ns")
    cfg = IngressNginxConfig(upstreams=(), ingress=meta, servers=(Server("app.example.com", (
        Location("/a", "~*", "up", "app", rewrite_pattern="^/a(.*)"),
        Location("/g", "~*", "up", "app", rewrite_pattern="^/g(.*)", grpc=True))),))
    lines = ll.LocationLines((), ('proxy_set_header X-Forwarded-Prefix "/a";',))
    out = ll.apply_location_lines(cfg, {("ns", "app"): lines})
    assert [loc.policy_lines for loc in out.servers[0].locations] == [
        ('proxy_set_header X-Forwarded-Prefix "/a";',), ('grpc_set_header X-Forwarded-Prefix "/a";',)]
