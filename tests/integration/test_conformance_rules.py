"""Host and path rules as the Ingress spec defines them, through a real NGINX: Exact and Prefix paths (one
path with both types, trailing slashes, no automatic 301), wildcard hosts matching exactly one label (exact
hosts still winning, TLS for wildcard hosts), the spread over ten endpoints, and the HTTPS redirect of a TLS
host ending in a verified HTTPS answer."""

from __future__ import annotations

import http.client
import socket
import ssl
import tempfile
from typing import Any

import pytest

from tests.helpers import make_cert, tls_secret, wait_until
from tests.integration.harness import NS, Env, rule

pytestmark = pytest.mark.integration


def backends(env: Env, *names: str) -> None:
    for name in names:
        env.service(name)
        env.endpoints(name, [env.backend(name)])


def exact(host: str, *paths: tuple[Any, ...]) -> dict[str, Any]:
    return rule(host, *paths, path_type="Exact")


def mixed(host: str, *paths: tuple[str, str, str]) -> dict[str, Any]:
    """A rule whose paths each carry their own pathType: (path, service, pathType)."""
    r = rule(host, *((p, s) for p, s, _ in paths))
    for entry, (_, _, path_type) in zip(r["http"]["paths"], paths, strict=True):
        entry["pathType"] = path_type
    return r


def test_path_rules(env: Env) -> None:
    backends(env, "foo-exact", "foo-prefix", "aaa-bbb-prefix", "aaa-prefix", "aaa-bbb-slash",
             "foo-slash-exact")
    env.ingress("path-rules", [
        exact("exact.example.com", ("/foo", "foo-exact")),
        rule("prefix.example.com", ("/foo", "foo-prefix"), ("/aaa/bbb", "aaa-bbb-prefix"),
             ("/aaa", "aaa-prefix")),
        mixed("mixed.example.com", ("/foo", "foo-prefix", "Prefix"), ("/foo", "foo-exact", "Exact")),
        mixed("slash.example.com", ("/aaa/bbb/", "aaa-bbb-slash", "Prefix"),
              ("/foo/", "foo-slash-exact", "Exact")),
    ])
    c = env.controller()
    c.wait_backend("mixed.example.com", "/foo", "foo-exact")  # one Ingress: everything is loaded now
    expect = {
        ("exact.example.com", "/foo"): "foo-exact",
        ("exact.example.com", "/foo/"): 404,
        ("exact.example.com", "/FOO"): 404,
        ("exact.example.com", "/bar"): 404,
        ("prefix.example.com", "/foo"): "foo-prefix",
        ("prefix.example.com", "/foo/"): "foo-prefix",
        ("prefix.example.com", "/FOO"): 404,
        ("prefix.example.com", "/aaa/bbb"): "aaa-bbb-prefix",
        ("prefix.example.com", "/aaa/bbb/ccc"): "aaa-bbb-prefix",
        ("prefix.example.com", "/aaa/ccc"): "aaa-prefix",
        ("prefix.example.com", "/aaaccc"): 404,
        ("mixed.example.com", "/foo"): "foo-exact",
        ("mixed.example.com", "/foo/"): "foo-prefix",
        ("mixed.example.com", "/foo/x"): "foo-prefix",
        ("slash.example.com", "/aaa/bbb"): "aaa-bbb-slash",
        ("slash.example.com", "/aaa/bbb/"): "aaa-bbb-slash",
        ("slash.example.com", "/aaa/bbb/c"): "aaa-bbb-slash",
        ("slash.example.com", "/foo/"): "foo-slash-exact",
        ("slash.example.com", "/foo"): 404,  # not a 301 to /foo/
        ("slash.example.com", "/foo/x"): 404,
    }
    got = {}
    for (host, path), _ in expect.items():
        r = c.get(host, path)
        got[(host, path)] = r.backend if r.status == 200 else r.status
    assert got == expect
    assert env.events("path-rules", "AddedOrUpdated")  # accepted without warnings


def test_exact_path_with_trailing_slash_does_not_hide_a_prefix_of_its_parent(env: Env) -> None:
    backends(env, "root", "foo-slash-exact")
    env.ingress("slash", [mixed("slash.example.com", ("/", "root", "Prefix"),
                                ("/foo/", "foo-slash-exact", "Exact"))])
    c = env.controller()
    c.wait_backend("slash.example.com", "/foo/", "foo-slash-exact")
    assert c.get("slash.example.com", "/foo").backend == "root"
    assert c.get("slash.example.com", "/foo/bar").backend == "root"


def test_wildcard_host_matches_one_label_and_exact_hosts_win(env: Env) -> None:
    backends(env, "wildcard-foo-com", "foo-bar-com", "exact-foo-com")
    cert = make_cert("foo.bar.com")
    wildcard_cert = make_cert("*.foo.com")
    env.create(tls_secret("conformance-tls", NS, cert.cert_pem, cert.key_pem))
    env.create(tls_secret("wildcard-tls", NS, wildcard_cert.cert_pem, wildcard_cert.key_pem))
    env.ingress("host-rules", [rule("*.foo.com", ("/", "wildcard-foo-com")),
                               rule("foo.bar.com", ("/", "foo-bar-com", "http"))],
                tls=[{"hosts": ["foo.bar.com"], "secretName": "conformance-tls"},
                     {"hosts": ["*.foo.com"], "secretName": "wildcard-tls"}])
    env.ingress("exact", [rule("exact.foo.com", ("/", "exact-foo-com"))])
    c = env.controller()
    r = wait_until(lambda: (x := c.https("bar.foo.com", "/")).backend == "wildcard-foo-com" and x,
                   "https bar.foo.com -> wildcard")
    assert r.peer_cert_der == wildcard_cert.der
    assert c.get("exact.foo.com", "/").backend == "exact-foo-com"  # wins over the wildcard
    assert c.https("foo.bar.com", "/").backend == "foo-bar-com"
    # Plain HTTP: the TLS hosts redirect; the hosts the wildcard does not cover get the default server's 404.
    assert c.get("bar.foo.com", "/").status == 301
    for host in ("baz.bar.foo.com", "foo.com", "subdomain.bar.com"):
        assert c.get(host, "/").status == 404, host
    # Over HTTPS NGINX picks the wildcard server for the SNI name baz.bar.foo.com; it answers as the default
    # server would.
    assert c.https("baz.bar.foo.com", "/").status == 404


def test_https_redirect_then_a_verified_https_answer(env: Env) -> None:
    backends(env, "foo-bar-com")
    cert = make_cert("foo.bar.com")
    env.create(tls_secret("conformance-tls", NS, cert.cert_pem, cert.key_pem))
    env.ingress("host-rules", [rule("foo.bar.com", ("/", "foo-bar-com"))],
                tls=[{"hosts": ["foo.bar.com"], "secretName": "conformance-tls"}])
    c = env.controller()
    plain = c.wait_status("foo.bar.com", "/x", 301)
    assert plain.headers["location"] == f"https://foo.bar.com:{c.https_port}/x"
    with tempfile.NamedTemporaryFile(suffix=".pem") as ca:
        ca.write(cert.cert_pem)
        ca.flush()
        ctx = ssl.create_default_context(cafile=ca.name)  # verifies the chain and the host name
        conn = http.client.HTTPSConnection("127.0.0.1", c.https_port, context=ctx, timeout=10)
        # Connect to 127.0.0.1 but verify (and send SNI for) foo.bar.com.
        conn.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", c.https_port), 10),
                                    server_hostname="foo.bar.com")
        conn.request("GET", "/x", headers={"Host": "foo.bar.com"})
        r = conn.getresponse()
        assert r.status == 200 and r.getheader("X-Backend") == "foo-bar-com"
        conn.close()


def test_ten_endpoints_all_get_requests_within_100(env: Env) -> None:
    env.service("echo-service")
    pods = [env.backend(f"pod-{i}") for i in range(10)]
    env.endpoints("echo-service", pods)
    env.ingress("load-balancing",
                default_backend={"service": {"name": "echo-service", "port": {"number": 80}}})
    c = env.controller()
    wait_until(lambda: c.get("load-balancing", "/").status == 200, "the catch-all answers")
    seen = {c.get("load-balancing", "/").backend for _ in range(100)}
    assert seen == {p.name for p in pods}
