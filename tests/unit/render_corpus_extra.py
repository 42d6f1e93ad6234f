"""A second deterministic corpus for IngressRenderer: the template branches `render_corpus` does not reach.

`render_corpus` varies annotations over four render contexts. This one adds what only the ConfigMap, the
flags or other resources turn on (PROXY protocol, real IP, IPv6 off, TLS passthrough, `http2 on`, the health
endpoint, a wildcard certificate, buffer auto-adjustment, ConfigMap proxy settings and load balancing) and
Ingresses aimed at single branches (gRPC to TLS backends, `nodelay`, HSTS behind a proxy, server ciphers,
add_header_inherit, the default backend's own `/` with custom errors, gRPC buffer size, SSL listen ports,
nginx.org/policies on servers and minions, server snippets, a wildcard host's unmatched-host text). Every
Ingress of both corpora is rendered in every context here.

`tests/unit/data/render_corpus_extra.txt` holds the recorded output; `test_configs_render_corpus` requires it
byte for byte. After an intended output change: `python -m tests.unit.render_corpus_extra --write`.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from ingressctl.configs.configmaps import StaticConfigParams, parse_config_map, proxy_defaults
from ingressctl.configs.renderers import IngressRenderer, RenderContext
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.nginx.capabilities import Capabilities
from ingressctl.policies.base import PolicySecret, ResolvedPolicy
from ingressctl.secret_types import SecretReference
from tests.unit.render_corpus import corpus, render_resources

GOLDEN_EXTRA = Path(__file__).parent / "data" / "render_corpus_extra.txt"

_SERVICES = {backend_key("svc-a", 80): ["10.0.0.1:8080", "10.0.0.2:8080"],
             backend_key("svc-b", 8443): ["10.0.1.1:8443"],
             backend_key("svc-d", 80): ["10.0.3.1:80"]}
_POLICY_SECRETS = {
    "clientCertSecret": PolicySecret("px/ca", "nginx.org/ca", "/etc/ic/secrets/px-ca",
                                     crl_path="/etc/ic/secrets/px-ca"),
    "trustedCertSecret": PolicySecret("px/ca", "nginx.org/ca", "/etc/ic/secrets/px-ca"),
    "tlsSecret": PolicySecret("px/client", "kubernetes.io/tls", "/etc/ic/secrets/px-client"),
}
_POLICIES: dict[str, dict[str, Any]] = {
    "ac": {"accessControl": {"allow": ["10.0.0.0/8"]}},
    "cors": {"cors": {"allowOrigin": ["https://app.example.org", "https://*.example.org"],
                      "allowMethods": ["GET", "POST"], "allowHeaders": ["X-Token"], "allowCredentials": True,
                      "exposeHeaders": ["X-Id"], "maxAge": 600}},
    "egress": {"egressMTLS": {"tlsSecret": "client", "trustedCertSecret": "ca", "verifyServer": True,
                              "serverName": True, "sslName": "backend.example.com"}},
    "auth": {"externalAuth": {"authURI": "/auth", "authServiceName": "auth-ns/auth",
                              "authServicePorts": [8080]}},
    "mtls": {"ingressMTLS": {"clientCertSecret": "ca", "verifyDepth": 2}},
    "rl": {"rateLimit": {"rate": "1r/s"}},  # not supported on Ingresses: the server fails closed
}


def _resolved(name: str) -> ResolvedPolicy:
    if name == "missing":
        return ResolvedPolicy(f"px/{name}")
    obj = {"apiVersion": "k8s.nginx.org/v1", "kind": "Policy", "metadata": {"name": name, "namespace": "px"},
           "spec": _POLICIES[name]}
    return ResolvedPolicy(f"px/{name}", obj, secrets=_POLICY_SECRETS)


def _paths(*items: tuple[str, str, str, int]) -> list[dict[str, Any]]:
    return [{"path": p, "pathType": t, "backend": {"service": {"name": s, "port": {"number": n}}}}
            for p, t, s, n in items]


_TWO_PATHS = _paths(("/", "Prefix", "svc-a", 80), ("/api", "Prefix", "svc-b", 8443))


def _ex(name: str, annotations: dict[str, str], *, host: str = "", tls: bool = False,
        default_backend: bool = False, paths: list[dict[str, Any]] | None = None,
        policies: tuple[str, ...] | None = None, namespace: str = "px") -> IngressEx:
    host = host or f"{name}.example.com"
    rule = {"host": host, "http": {"paths": _TWO_PATHS if paths is None else paths}}
    spec: dict[str, Any] = {"rules": [rule]}
    refs = {"htpasswd": SecretReference(f"{namespace}/htpasswd", f"/etc/ic/secrets/{namespace}-htpasswd",
                                        secret_type="nginx.org/htpasswd")}
    if tls:
        spec["tls"] = [{"hosts": [host], "secretName": "tls"}]
        refs["tls"] = SecretReference(f"{namespace}/tls", f"/etc/ic/secrets/{namespace}-tls",
                                      secret_type="kubernetes.io/tls")
    if default_backend:
        spec["defaultBackend"] = {"service": {"name": "svc-d", "port": {"number": 80}}}
    if policies is not None:
        annotations = {**annotations, "nginx.org/policies": ",".join(policies)}
    ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"namespace": namespace, "name": name, "annotations": annotations}, "spec": spec}
    return IngressEx(ing, {host: True}, dict(_SERVICES), secret_refs=refs,
                     policies=None if policies is None else tuple(_resolved(p) for p in policies),
                     policy_endpoints={"auth-ns/auth:8080": ("10.7.0.1:8080",)})


def _mergeable(name: str, master_anns: dict[str, str], minion_anns: list[dict[str, str]], *,
               master_policies: tuple[str, ...] | None = None,
               minion_policies: tuple[str, ...] | None = None) -> MergeableIngresses:
    host = f"{name}.example.com"
    master = _ex(name, {"nginx.org/mergeable-ingress-type": "master", **master_anns}, host=host, tls=True,
                 default_backend=True, paths=[], policies=master_policies)
    del master.ingress["spec"]["rules"][0]["http"]
    minions = []
    for j, anns in enumerate(minion_anns):
        path = f"/m{j}"
        m = _ex(f"{name}-minion{j}", {"nginx.org/mergeable-ingress-type": "minion", **anns}, host=host,
                paths=_paths((path, "Prefix", "svc-a", 80)), policies=minion_policies if j == 0 else None)
        m.valid_minion_paths = {path: True}
        minions.append(m)
    return MergeableIngresses(master, minions)


def targeted() -> list[tuple[str, object]]:
    """Ingresses aimed at single template branches."""
    items: list[tuple[str, object]] = [
        ("grpc to TLS backends", _ex("grpcs", {"nginx.org/grpc-services": "svc-a,svc-b",
                                               "nginx.org/ssl-services": "svc-b",
                                               "nginx.org/proxy-buffer-size": "8k"}, tls=True)),
        ("grpc and http mixed", _ex("grpcmix", {"nginx.org/grpc-services": "svc-a",
                                                "nginx.org/proxy-set-headers": "X-Custom,X-Tenant: blue",
                                                "nginx.org/redirect-to-https": "true"})),
        ("limit-req nodelay", _ex("nodelay", {"nginx.org/limit-req-rate": "10r/s",
                                              "nginx.org/limit-req-burst": "5",
                                              "nginx.org/limit-req-no-delay": "true"})),
        ("hsts behind proxy", _ex("hstsproxy", {"nginx.org/hsts": "true",
                                                "nginx.org/hsts-behind-proxy": "true",
                                                "nginx.org/hsts-include-subdomains": "true"})),
        ("hsts with tls", _ex("hststls", {"nginx.org/hsts": "true", "nginx.org/hsts-max-age": "60"},
                              tls=True)),
        ("server ciphers", _ex("ciphers", {"nginx.org/ssl-ciphers": "HIGH:!aNULL",
                                           "nginx.org/ssl-prefer-server-ciphers": "true"}, tls=True)),
        ("add-header-inherit", _ex("inherit", {"nginx.org/add-header-inherit": "merge",
                                               "nginx.org/add-header": "X-A: 1,X-B: two words"})),
        ("default backend with custom errors", _ex(
            "errors", {"nginx.org/custom-http-errors": "404,503"}, default_backend=True,
            paths=_paths(("/api", "Prefix", "svc-a", 80)))),
        ("ssl listen ports", _ex("sslports", {"nginx.org/listen-ports": "8080",
                                              "nginx.org/listen-ports-ssl": "8443,9443"}, tls=True)),
        ("snippets everywhere", _ex("snip", {"nginx.org/server-snippets":
                                             "add_header X-S 1;\nadd_header X-T 2;",
                                             "nginx.org/location-snippets": "add_header X-L 1;"})),
        ("wildcard host", _ex("wild", {}, host="*.wild.example.com", tls=True)),
        ("tls without secret name", _ex("nosecret", {}, host="nosecret.example.com")),
        ("exact and prefix", _ex("paths", {"nginx.org/rewrites": "serviceName=svc-a rewrite=/v2/",
                                           "nginx.org/keepalive": "16", "nginx.org/lb-method": "round_robin"},
                                 paths=_paths(("/api", "Exact", "svc-a", 80), ("/api", "Prefix", "svc-a", 80),
                                              ("/dir/", "Exact", "svc-b", 8443),
                                              ("/files/", "Prefix", "svc-a", 80)))),
        ("websocket keepalive", _ex("ws", {"nginx.org/websocket-services": "svc-a",
                                           "nginx.org/keepalive": "8",
                                           "nginx.org/proxy-buffering": "false"})),
        ("server policies", _ex("pols", {}, tls=True, policies=("ac", "cors", "egress", "auth", "mtls"))),
        ("failing server policy", _ex("polfail", {}, tls=True, policies=("ac", "rl"))),
        ("missing policy", _ex("polmissing", {}, policies=("missing",))),
        ("mergeable with policies", _mergeable(
            "mpol", {"nginx.org/hsts": "true", "nginx.org/custom-http-errors": "502"},
            [{"nginx.org/basic-auth-secret": "htpasswd", "nginx.org/add-header-inherit": "merge",
              "nginx.org/custom-http-errors": "404"},
             {"nginx.org/add-header": "X-M: 1", "nginx.org/proxy-redirect-from": "off"}],
            master_policies=("cors",), minion_policies=("ac", "auth"))),
        ("mergeable failing minion policy", _mergeable(
            "mfail", {}, [{"nginx.org/grpc-services": "svc-a"}, {}], minion_policies=("mtls",))),
    ]
    no_secret = dict(items)["tls without secret name"]
    assert isinstance(no_secret, IngressEx)
    no_secret.ingress["spec"]["tls"] = [{"hosts": ["nosecret.example.com"]}]  # the wildcard certificate's
    return items


def contexts() -> list[tuple[str, RenderContext]]:
    """Render contexts of ConfigMaps and flags that `render_corpus.contexts` leaves at their defaults."""
    templates = TemplateExecutor()
    static = StaticConfigParams(run_dir="/run/ic", conf_dir="/etc/ic", secrets_dir="/etc/ic/secrets",
                                enable_snippets=True)
    new_nginx = Capabilities(version=(1, 29, 6))

    def cm(data: dict[str, str], capabilities: Capabilities | None = None) -> Any:
        params, errors = parse_config_map(data, capabilities or static.capabilities)
        assert not errors, errors
        return params

    real_ip = cm({"proxy-protocol": "true", "real-ip-header": "proxy_protocol",
                  "set-real-ip-from": "10.0.0.0/8,192.168.0.0/16", "real-ip-recursive": "true",
                  "default-server-return": "421 wrong host"})
    no_ipv6 = dataclasses.replace(static, disable_ipv6=True, health_status=True,
                                  wildcard_tls_path="/etc/ic/secrets/wildcard",
                                  default_server_tls_path="/etc/ic/secrets/default")
    passthrough = dataclasses.replace(static, tls_passthrough=True, capabilities=new_nginx,
                                      wildcard_tls_path="/etc/ic/secrets/wildcard")
    http2_new = cm({"http2": "true", "hsts": "true", "hsts-behind-proxy": "true", "add-header-inherit": "on",
                    "server-tokens": "false"}, new_nginx)
    proxy_cm = cm({"proxy-connect-timeout": "3s", "proxy-read-timeout": "90s", "proxy-buffering": "false",
                   "proxy-buffers": "2 4k", "proxy-buffer-size": "64k", "keepalive": "4",
                   "lb-method": "ip_hash",
                   "max-fails": "2", "fail-timeout": "3s", "client-max-body-size": "16m",
                   "proxy-hide-headers": "X-Powered-By", "proxy-pass-headers": "X-Accel",
                   "server-snippets": "add_header X-CM-Server 1;",
                   "location-snippets": "add_header X-CM-Location 1;", "redirect-to-https": "true",
                   "client-body-buffer-size": "32k"})
    autoadjust = dataclasses.replace(static, enable_directive_autoadjust=True)
    new_per_handshake = dataclasses.replace(static, capabilities=new_nginx, certificates_per_handshake=True,
                                            default_server_tls_path="/etc/ic/secrets/default")
    plain = cm({})
    return [
        ("real-ip+proxy-protocol, no ipv6, health", RenderContext(no_ipv6, real_ip, templates,
                                                                  proxy_defaults=proxy_defaults(real_ip))),
        ("passthrough+http2 on", RenderContext(passthrough, http2_new, templates,
                                               catch_all="ns0-catch-svc-a-80",
                                               proxy_defaults=proxy_defaults(http2_new))),
        ("configmap proxy settings, autoadjust", RenderContext(autoadjust, proxy_cm, templates, replicas=2,
                                                               proxy_defaults=proxy_defaults(proxy_cm))),
        ("new nginx, per handshake, no proxy defaults", RenderContext(new_per_handshake, plain, templates)),
    ]


def render_corpus_extra() -> str:
    items = targeted() + corpus()
    return "".join(render_resources(IngressRenderer(), ctx_name, ctx, items) for ctx_name, ctx in contexts())


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        GOLDEN_EXTRA.parent.mkdir(exist_ok=True)
        GOLDEN_EXTRA.write_text(render_corpus_extra(), encoding="utf-8")
    else:
        sys.stdout.write(render_corpus_extra())
