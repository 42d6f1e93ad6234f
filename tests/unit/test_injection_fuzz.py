"""A fuzzer for config injection: arbitrary strings in every annotation (of a regular Ingress and of a
minion), host, path and ConfigMap value either are rejected (by the controller's `validate_ingress`, or by
the config generator with an error) or render into EXACTLY the expected set of directives.

"Expected" is a structural schema learned from reference renders that switch every feature on: for each block
context (e.g. `server > location`) the set of (directive, number of arguments) pairs that the templates can
produce. A rendered config passes if NGINX's tokenizer (modelled in test_configs_quoting) reads balanced
blocks and every statement is in the schema of its context, with per-directive multiplicities respected
(one `proxy_pass` per location, one `server_name` per server, ...). An injected `;`, `{`, `}`, `#`, newline
or quote would add a statement, a block or an argument and fail the check.

Snippet annotations are fuzzed too: with snippets disabled validation must reject them. The ingress-nginx
family (`nginx.ingress.kubernetes.io/*`, `--ingress-nginx-compat`) is fuzzed row by row the same way, every
row of its table (refused ones must be rejected). ConfigMap snippet and
template keys are NGINX configuration (or Jinja2) by definition and are not fuzzed.

tests/integration/test_annotations_fuzz_nginx.py runs the same cases through `nginx -t`.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingressctl.configs.configmaps import (
    CONFIG_MAP_KEYS,
    ConfigParams,
    StaticConfigParams,
    generate_main_config,
)
from ingressctl.configs.parsing import LB_METHODS
from ingressctl.configs.templates import TemplateExecutor, TemplateRenderError
from ingressctl.kinds.ingress.annotation_table import Handling, Status
from ingressctl.kinds.ingress.annotations_ingress_nginx import INGRESS_NGINX
from ingressctl.kinds.ingress.annotations_nginx_org import NGINX_ORG
from ingressctl.kinds.ingress.config import (
    AnnotationError,
    generate_nginx_config,
    generate_nginx_config_for_mergeable,
)
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.kinds.ingress.ingress_nginx import canary
from ingressctl.kinds.ingress.ingress_nginx.authtls_policy import with_auth_tls
from ingressctl.kinds.ingress.ingress_nginx.proxyssl_policy import with_proxy_ssl
from ingressctl.kinds.ingress.ingress_nginx.translate import effective_status
from ingressctl.kinds.ingress.ingress_nginx.www_redirect import other_name
from ingressctl.kinds.ingress.validation import validate_ingress
from ingressctl.nginx.capabilities import MODULES, Capabilities
from ingressctl.policies.base import ResolvedPolicy
from ingressctl.secret_types import SecretReference
from tests.unit.test_configs_quoting import nginx_tokens

TEMPLATES = TemplateExecutor()
HOST = "fuzz.example.com"
NOT_FUZZED_CONFIG_MAP_KEYS = {"main-template", "ingress-template", "main-snippets", "http-snippets",
                              "stream-snippets", "server-snippets", "location-snippets"}
# Every annotation the parser or the model reads (not the Policies, which have fuzz tests of their own).
ANNOTATION_NAMES = sorted(r.key for r in NGINX_ORG.rows if r.handling in (
    Handling.FIELD, Handling.INGRESS, Handling.PROXY_REDIRECT, Handling.MERGEABLE))
CONFIG_MAP_NAMES = sorted(set(CONFIG_MAP_KEYS) - NOT_FUZZED_CONFIG_MAP_KEYS)
# Every row of the ingress-nginx family (read with --ingress-nginx-compat).
INN = "nginx.ingress.kubernetes.io/"
INGRESS_NGINX_NAMES = sorted(INGRESS_NGINX.by_key)
# Its rows that render something (the others are refused or ignored: any value must leave no trace).
INGRESS_NGINX_RENDERED = sorted(r.key for r in INGRESS_NGINX.rows if "snippet" not in r.key
                                and effective_status(r) not in (Status.IGNORED, Status.REFUSED))

# Values that pass validation, so that fuzzed variations reach the generator and the templates.
VALID: dict[str, list[str]] = {
    "nginx.org/proxy-connect-timeout": ["5s", "1h 30m"], "nginx.org/proxy-read-timeout": ["10", "1m30s"],
    "nginx.org/proxy-send-timeout": ["500ms"], "nginx.org/client-max-body-size": ["2g", "0"],
    "nginx.org/proxy-buffering": ["false"], "nginx.org/proxy-buffers": ["16 8k"],
    "nginx.org/proxy-buffer-size": ["8k"], "nginx.org/proxy-max-temp-file-size": ["0"],
    "nginx.org/proxy-hide-headers": ["X-A, X-B"], "nginx.org/proxy-pass-headers": ["X-C"],
    "nginx.org/proxy-set-headers": ["X-A, X-B: b", 'X-C: a "b" {c}; d'], "nginx.org/server-tokens": ["false"],
    "nginx.org/redirect-to-https": ["true"], "ingress.kubernetes.io/ssl-redirect": ["false"],
    "nginx.org/hsts": ["true"], "nginx.org/hsts-max-age": ["100"],
    "nginx.org/hsts-include-subdomains": ["true"],
    "nginx.org/hsts-behind-proxy": ["true"], "nginx.org/listen-ports": ["8081,8082"],
    "nginx.org/listen-ports-ssl": ["8443"],
    "nginx.org/lb-method": ["hash $request_uri consistent", "least_conn"],
    "nginx.org/keepalive": ["16"], "nginx.org/max-fails": ["3"], "nginx.org/max-conns": ["7"],
    "nginx.org/fail-timeout": ["30s"], "nginx.org/upstream-zone-size": ["512k", "0"],
    "nginx.org/use-cluster-ip": ["true"], "nginx.org/basic-auth-secret": ["users"],
    "nginx.org/basic-auth-realm": ["Cafe \\\"staff\\\""], "nginx.org/limit-req-rate": ["10r/s"],
    "nginx.org/limit-req-key": ["${binary_remote_addr}$uri"], "nginx.org/limit-req-zone-size": ["1m"],
    "nginx.org/limit-req-delay": ["2"], "nginx.org/limit-req-no-delay": ["true"],
    "nginx.org/limit-req-burst": ["5"], "nginx.org/limit-req-dry-run": ["true"],
    "nginx.org/limit-req-log-level": ["warn"], "nginx.org/limit-req-reject-code": ["503"],
    "nginx.org/limit-req-scale": ["true"], "nginx.org/rewrites": ["serviceName=svc-a rewrite=/v2"],
    "nginx.org/websocket-services": ["svc-a"], "nginx.org/ssl-services": ["svc-b"],
    "nginx.org/grpc-services": ["svc-b"], "nginx.org/path-regex": ["case_sensitive", "exact"],
    "nginx.org/server-snippets": ["add_header X 1;"], "nginx.org/location-snippets": ["add_header X 1;"],
    "nginx.org/mergeable-ingress-type": ["master"],
    # NIC 5.2-5.5
    "nginx.org/ssl-redirect": ["false"], "nginx.org/http-redirect-code": ["308"],
    "nginx.org/add-header": ['X-A: 1, X-B: b \\"q\\":always'], "nginx.org/app-root": ["/coffee"],
    "nginx.org/client-body-buffer-size": ["16k"], "nginx.org/proxy-busy-buffers-size": ["8k"],
    "nginx.org/proxy-next-upstream": ["error timeout http_502", "off"],
    "nginx.org/proxy-next-upstream-timeout": ["10s"], "nginx.org/proxy-next-upstream-tries": ["3"],
    "nginx.org/proxy-redirect-from": ["~^http://([^/]+)/(.*)$", "off", "default", "http://a/"],
    "nginx.org/proxy-redirect-to": ["https://$1/$2", "$scheme://b/"],
    "nginx.org/rewrite-target": ["/beverages", "/v2/$1"], "nginx.org/ssl-ciphers": ["HIGH:!aNULL"],
    "nginx.org/ssl-prefer-server-ciphers": ["true"],
    "nginx.org/sticky-cookie-services": ["serviceName=svc-a srv_id expires=1h path=/a httponly"],
    "header-map": ["X-Fuzz", "1; mode=block", "max-age=31536000; includeSubDomains"],
    "nginx.org/add-header-inherit": ["merge", "Off"], "nginx.org/custom-http-errors": ["404, 5xx", "502"],
    # ConfigMap keys
    "proxy-read-timeout": ["5s"], "client-max-body-size": ["3m"], "proxy-buffers": ["4 16k"],
    "proxy-hide-headers": ["X-A"], "server-tokens": ["false"], "http2": ["true"], "hsts": ["true"],
    "hsts-max-age": ["5"], "real-ip-header": ["X-Real-IP", "proxy_protocol"],
    "set-real-ip-from": ["10.0.0.0/8,unix:"], "lb-method": ["hash $remote_addr"],
    "default-server-return": ["302 https://example.com/x?y=1", "200 ok"], "worker-processes": ["3"],
    "worker-cpu-affinity": ["auto 0101"], "error-log-level": ["warn"],
    "access-log": ["syslog:server=127.0.0.1:514,tag=nginx main"], "log-format": ['$remote_addr "$request"'],
    "log-format-escaping": ["json"], "ssl-protocols": ["TLSv1.3"], "ssl-ciphers": ["HIGH:!aNULL"],
    "ssl-dhparam-file": [
        "-----BEGIN DH PARAMETERS-----\nMIIBCAKCAQEA0123456789abcdef\n-----END DH PARAMETERS-----"],
    "keepalive-timeout": ["30s"], "upstream-zone-size": ["64k"], "access-log-off": ["true"],
    "default-server-access-log-off": ["true"], "fail-timeout": ["5s"], "hsts-behind-proxy": ["true"],
    "hsts-include-subdomains": ["true"], "keepalive": ["8"], "keepalive-requests": ["100"],
    "map-hash-bucket-size": ["128"], "map-hash-max-size": ["4096"], "max-fails": ["2"],
    "proxy-buffer-size": ["16k"], "proxy-buffering": ["false"], "proxy-connect-timeout": ["3s"],
    "proxy-max-temp-file-size": ["0"], "proxy-pass-headers": ["X-P"], "proxy-protocol": ["true"],
    "proxy-send-timeout": ["7s"], "real-ip-recursive": ["true"], "redirect-to-https": ["true"],
    "server-names-hash-bucket-size": ["128"], "server-names-hash-max-size": ["2048"],
    "ssl-prefer-server-ciphers": ["true"], "ssl-redirect": ["false"], "variables-hash-bucket-size": ["128"],
    "variables-hash-max-size": ["2048"], "worker-connections": ["512"], "worker-rlimit-nofile": ["4096"],
    "worker-shutdown-timeout": ["10s"],
    "add-header": ["X-Frame-Options: DENY:always, X-B: 2"], "client-body-buffer-size": ["32k"],
    "http-redirect-code": ["307"], "proxy-busy-buffers-size": ["16k"],
    "add-header-inherit": ["merge"], "otel-exporter-endpoint": ["collector.example.com:4317", "http://c:4317"],
    "otel-exporter-header-name": ["X-Api-Key"], "otel-exporter-header-value": ["k-1 2"],
    "otel-service-name": ["ingressctl:nginx"], "otel-trace-in-http": ["true"],
    # ingress-nginx's annotations (--ingress-nginx-compat), in its value syntax
    INN + "backend-protocol": ["HTTPS", "grpcs"], INN + "proxy-body-size": ["8m", "100B", "1G"],
    INN + "proxy-connect-timeout": ["5"], INN + "proxy-read-timeout": ["120"],
    INN + "proxy-send-timeout": ["30"], INN + "proxy-buffer-size": ["16k", "1M"],
    INN + "proxy-buffers-number": ["8"], INN + "proxy-buffering": ["off", "on"],
    INN + "proxy-request-buffering": ["off"], INN + "proxy-max-temp-file-size": ["0", "1024m"],
    INN + "proxy-busy-buffers-size": ["8k"], INN + "client-body-buffer-size": ["64k"],
    INN + "proxy-next-upstream": ["error timeout http_502"], INN + "proxy-next-upstream-timeout": ["10"],
    INN + "proxy-next-upstream-tries": ["3"], INN + "proxy-redirect-from": ["http://a/", "off"],
    INN + "proxy-redirect-to": ["https://$host/"], INN + "proxy-http-version": ["1.1"],
    INN + "upstream-vhost": ["backend.internal", "$host:8080"], INN + "upstream-hash-by": ["$request_uri"],
    INN + "upstream-hash-by-subset": ["true", "false"], INN + "upstream-hash-by-subset-size": ["3", "0"],
    INN + "load-balance": ["ewma", "round_robin"], INN + "service-upstream": ["true"],
    INN + "custom-http-errors": ["404,503"], INN + "ssl-redirect": ["false", "true"],
    INN + "force-ssl-redirect": ["true"], INN + "app-root": ["/app"],
    INN + "permanent-redirect": ["https://new.example.com$request_uri"],
    INN + "permanent-redirect-code": ["308"],
    INN + "temporal-redirect": ["http://t.example.com/x?y=1"], INN + "temporal-redirect-code": ["307"],
    INN + "whitelist-source-range": ["10.0.0.0/8, 192.168.0.1"], INN + "allowlist-source-range": ["::1/128"],
    INN + "denylist-source-range": ["10.1.0.0/16"], INN + "limit-rps": ["5"], INN + "limit-rpm": ["300"],
    INN + "limit-connections": ["3"], INN + "limit-burst-multiplier": ["2"],
    INN + "limit-whitelist": ["127.0.0.1,10.0.0.0/8"], INN + "limit-allowlist": ["192.168.0.0/24"],
    INN + "ssl-ciphers": ["HIGH:!aNULL"], INN + "ssl-prefer-server-ciphers": ["true"],
    INN + "ssl-passthrough": ["true", "false"],
    INN + "rewrite-target": ["/$2", "$1", "/new/$host/x"], INN + "use-regex": ["true", "false"],
    INN + "default-backend": ["svc-b"], INN + "from-to-www-redirect": ["true"],
    INN + "canary": ["true"], INN + "canary-weight": ["30", "100"], INN + "canary-weight-total": ["1000"],
    INN + "canary-by-header": ["X-Canary"], INN + "canary-by-header-value": ["v2.1"],
    INN + "canary-by-header-pattern": ["^v(2|3)$"], INN + "canary-by-cookie": ["canary_user"],
    INN + "enable-cors": ["true"],
    INN + "limit-rate": ["100", "0"], INN + "limit-rate-after": ["1024"],
    INN + "use-port-in-redirects": ["true"],
    INN + "relative-redirects": ["true"], INN + "proxy-cookie-path": ["/ /app/", "off"],
    INN + "proxy-cookie-domain": ["localhost example.org", "off"], INN + "enable-access-log": ["false"],
    INN + "enable-rewrite-log": ["true"], INN + "x-forwarded-prefix": ["/app$1"],
    INN + "cors-allow-origin": ["https://a.example.com, https://*.b.example.com:8443", "*"],
    INN + "cors-allow-methods": ["GET, POST"], INN + "cors-allow-headers": ["X-A, Content-Type"],
    INN + "cors-allow-credentials": ["false"], INN + "cors-expose-headers": ["X-B, *"],
    INN + "cors-max-age": ["600"],
    INN + "auth-tls-secret": ["default/ca", "/ca"], INN + "auth-tls-verify-client": ["optional_no_ca", "on"],
    INN + "auth-tls-verify-depth": ["2"], INN + "auth-tls-pass-certificate-to-upstream": ["true"],
    INN + "auth-tls-error-page": ["https://errors.example.com/cert", "@errors"],
    INN + "auth-tls-match-cn": ["CN=(client|admin)$"],
    INN + "proxy-ssl-secret": ["default/backend"], INN + "proxy-ssl-verify": ["on", "off"],
    INN + "proxy-ssl-verify-depth": ["3", "0"], INN + "proxy-ssl-name": ["internal.backend.svc"],
    INN + "proxy-ssl-server-name": ["on", "off"], INN + "proxy-ssl-protocols": ["TLSv1.3 TLSv1.2"],
    INN + "proxy-ssl-ciphers": ["HIGH:!aNULL", "ECDHE-RSA-AES128-GCM-SHA256 DEFAULT"],
    INN + "configuration-snippet": ["add_header X 1;"], INN + "server-snippet": ["add_header X 1;"],
    INN + "auth-url": ["https://10.0.0.8:8443/check?u=$request_uri", "http://10.0.0.9/a"],
    INN + "auth-signin": ["https://login.example.com/start?rd=$scheme://$host$request_uri",
                          "https://login.example.com/start"],
    INN + "auth-signin-redirect-param": ["return_to"], INN + "auth-response-headers": ["X-User, X-Email"],
    INN + "auth-method": ["POST"], INN + "auth-request-redirect": ["https://app.example.com/landing"],
    INN + "auth-always-set-cookie": ["true"], INN + "satisfy": ["any", "all"],
    INN + "auth-type": ["basic"], INN + "auth-secret": ["htusers", "default/htusers", "missing"],  # 503
    INN + "custom-headers": ["hdrs", "default/hdrs", "missing"],  # missing: every location answers 503
    INN + "auth-proxy-set-headers": ["authhdrs", "default/authhdrs", "other/authhdrs"],  # other ns: 503
    INN + "auth-secret-type": ["auth-file", "auth-map"], INN + "auth-realm": ["Protected Area", "realm:/x~y"],
    INN + "affinity": ["cookie", " cookie "], INN + "affinity-mode": ["balanced", "persistent"],
    INN + "affinity-canary-behavior": ["sticky", "legacy"], INN + "session-cookie-name": ["route~1", "a/b"],
    INN + "session-cookie-expires": ["172800"], INN + "session-cookie-max-age": ["3600", "-1"],
    INN + "session-cookie-path": ["/app", "/a,b?c&d=e:f"], INN + "session-cookie-domain": [".example.com"],
    INN + "session-cookie-samesite": ["None", "strict"], INN + "session-cookie-conditional-samesite-none":
    ["true"], INN + "session-cookie-secure": ["true", "no"], INN + "session-cookie-change-on-failure": ["1"],
    INN + "mirror-target": ["https://10.0.0.10$request_uri", "http://10.0.0.11:8080/copy?h=$host&u=$uri"],
    INN + "mirror-host": ["copies.example.com", "10.0.0.12:8443"], INN + "mirror-request-body": ["off", "on"],
}
BASIC_AUTH = {INN + "auth-type", INN + "auth-secret", INN + "auth-secret-type", INN + "auth-realm"}
INJECTIONS = ["; evil on;", "\n}", "}", "{", '"', "'", "#", "$host", "\\", "\nreturn 200;", " ", ";", "\r",
              "} server { listen 1;", '" ; root /etc ; "', "\x00", "${x}",
              # Escapes: a backslash before the closing quote, an escaped backslash then a quote, `\$`.
              '\\"', '\\\\"', "\\$", "\\${host}", "\\n", "\\\n", '\\"; evil on; \\"', "\\\\"]
HOSTILE = st.text(alphabet=st.sampled_from(list(' \t\n\r;{}"\'\\#$/a=~*^()[],:0123456789sk')), max_size=40)


# The ConfigMaps of custom-headers and auth-proxy-set-headers (the builder's reads), the response headers
# the NGINX ConfigMap allows (global-allowed-response-headers), and the fuzzed parts of those ConfigMaps.
HEADER_MAPS: dict[str, dict[str, Any]] = {
    "default/hdrs": {"data": {"X-Frame-Options": "DENY", "X-Odd": "a$b {c}; \"d\" \\e `f` #g", "y": "1"}},
    "default/authhdrs": {"data": {"X-Auth-From": "$remote_addr", "X-Team": "shop (a) [b] ${host}"}}}
ALLOWED_RESPONSE_HEADERS = ("X-Frame-Options", "X-Odd", "y", "X-Fuzz")
HEADER_MAP_PARTS = [f"{m}:{part}" for m in ("hdrs", "authhdrs") for part in ("key", "value")]


def header_maps(part: str = "", fuzzed: str = "") -> dict[str, dict[str, Any] | None]:
    """HEADER_MAPS, with `fuzzed` as a new key or value of one of them (`part`: "<map>:key|value")."""
    maps: dict[str, dict[str, Any] | None] = {k: {"data": dict(v["data"])} for k, v in HEADER_MAPS.items()}
    if part:
        name, what = part.split(":")
        data = maps[f"default/{name}"]["data"]  # type: ignore[index]
        data.update({fuzzed: "v"} if what == "key" else {"X-Fuzz": fuzzed})
    return maps


@dataclass(frozen=True)
class Case:
    """One fuzzed input: `kind` is annotation, minion-annotation, host, path, header-name, configmap,
    ingress-nginx (an annotation of that family, with --ingress-nginx-compat), or header-map (a key or value
    of the ConfigMaps of custom-headers and auth-proxy-set-headers)."""

    kind: str
    name: str
    value: str
    path_regex: str = ""


def _value(name: str) -> st.SearchStrategy[str]:
    samples = VALID.get(name, ["x"])
    mutated = st.builds(lambda v, inj, at: v[:at] + inj + v[at:], st.sampled_from(samples),
                        st.sampled_from(INJECTIONS), st.integers(min_value=0, max_value=40))
    return st.one_of(st.sampled_from(samples), mutated, HOSTILE, st.text(max_size=30))


CASES: st.SearchStrategy[Case] = st.one_of(
    st.sampled_from(ANNOTATION_NAMES).flatmap(lambda n: st.builds(Case, st.just("annotation"), st.just(n),
                                                                  _value(n))),
    st.sampled_from(ANNOTATION_NAMES).flatmap(lambda n: st.builds(Case, st.just("minion-annotation"),
                                                                  st.just(n), _value(n))),
    st.sampled_from(CONFIG_MAP_NAMES).flatmap(lambda n: st.builds(Case, st.just("configmap"), st.just(n),
                                                                  _value(n))),
    st.sampled_from(INGRESS_NGINX_NAMES).flatmap(lambda n: st.builds(Case, st.just("ingress-nginx"),
                                                                     st.just(n), _value(n))),
    st.sampled_from(HEADER_MAP_PARTS).flatmap(lambda n: st.builds(Case, st.just("header-map"), st.just(n),
                                                                  _value("header-map"))),
    st.builds(Case, st.just("host"), st.just(""), st.one_of(
        HOSTILE, st.sampled_from(["a.example.com", "*.example.com"]),
        st.builds(lambda inj: "a" + inj + ".example.com", st.sampled_from(INJECTIONS)))),
    st.builds(Case, st.just("path"), st.just(""), st.one_of(
        HOSTILE, st.sampled_from(["/", "/a{2}[0-9]+$", "/b/(x|y)", "/c\\.d", "/e\\\"f"]),
        st.builds(lambda inj: "/api" + inj, st.sampled_from(INJECTIONS))),
        st.sampled_from(["", "case_sensitive", "case_insensitive", "exact", "ingress-nginx"])),
)


# ------------------------------------------------------------------------------------------------- render

CUSTOM_HTTP_ERRORS = "nginx.org/custom-http-errors"
CANARY_KEYS = set(canary.KEYS)
DEFAULT_BACKEND = {"service": {"name": "svc-b", "port": {"number": 80}}}


def _ingress(name: str, namespace: str, host: str, paths: list[tuple[str, str, str]],
             annotations: dict[str, str], *, tls: bool = False) -> dict[str, Any]:
    rule: dict[str, Any] = {"host": host}
    if paths:
        rule["http"] = {"paths": [{"path": p, "pathType": t, "backend": {"service": {"name": s, "port": {
            "number": 80}}}} for p, t, s in paths]}
    spec: dict[str, Any] = {"rules": [rule]}
    if CUSTOM_HTTP_ERRORS in annotations:  # its intercepted responses go to the default backend
        spec["defaultBackend"] = DEFAULT_BACKEND
    if tls:
        spec["tls"] = [{"hosts": [host], "secretName": "tls"}]
    return {"metadata": {"name": name, "namespace": namespace, "annotations": annotations, "uid": name,
                         "creationTimestamp": "2024-01-01T00:00:00Z"}, "spec": spec}


def secret_refs(conf_dir: str = "/etc/ic") -> dict[str, SecretReference]:
    return {"tls": SecretReference("default/tls", f"{conf_dir}/secrets/default-tls",
                                   secret_type="kubernetes.io/tls"),
            "users": SecretReference("default/users", f"{conf_dir}/secrets/default-users",
                                     secret_type="nginx.org/htpasswd"),
            "htusers": SecretReference("default/htusers", f"{conf_dir}/secrets/default-htusers",
                                       secret_type="Opaque")}


REFS = secret_refs()


def inn_policies(obj: dict[str, Any], static: StaticConfigParams) -> tuple[ResolvedPolicy, ...] | None:
    """The ingressMTLS Policy ingress-nginx's auth-tls-* make and the egressMTLS Policy of its proxy-ssl-*
    (the controller's part), with a CA Secret and a TLS Secret with ca.crt."""
    if not static.ingress_nginx_compat:
        return None
    ref = SecretReference("default/ca", f"{static.conf_dir}/secrets/default-ca", secret_type="nginx.org/ca")
    policies = with_auth_tls(obj, None, lambda key: ref, lambda key: None)[0]
    tls = SecretReference("default/backend", f"{static.conf_dir}/secrets/default-backend",
                          secret_type="kubernetes.io/tls")
    ca = SecretReference("default/backend", f"{static.conf_dir}/secrets/default-backend_ca.crt",
                         secret_type="kubernetes.io/tls")
    return with_proxy_ssl(obj, policies, lambda key: tls, lambda key: ca)[0]


ENDPOINTS = {backend_key("svc-a", 80): ["10.0.0.1:80", "10.0.0.2:80"],
             backend_key("svc-b", 80): ["10.0.1.1:80"]}
PATHS = [("/a", "Prefix", "svc-a"), ("/b", "Exact", "svc-b"), ("/c", "ImplementationSpecific", "svc-a")]


@dataclass
class Rendered:
    ingress: str  # conf.d file
    main: str  # nginx.conf


# An NGINX that has every directive and module the renderers know, so that all of them are fuzzed.
EVERYTHING = Capabilities(version=(1, 31, 3), modules=frozenset(MODULES),
                          load_modules=(("otel", "/usr/lib/nginx/modules/ngx_otel_module.so"),))


def static_params(run_dir: str = "/run/ic", conf_dir: str = "/etc/ic", **kw: Any) -> StaticConfigParams:
    kw.setdefault("capabilities", EVERYTHING)
    return StaticConfigParams(http_port=80, https_port=443, run_dir=run_dir, conf_dir=conf_dir,
                              secrets_dir=conf_dir + "/secrets", **kw)


def render_case(case: Case, static: StaticConfigParams | None = None) -> Rendered | str:
    """The rendered files, or why the case was rejected."""
    static = static or static_params()
    refs = secret_refs(static.conf_dir)
    config = ConfigParams()
    annotations: dict[str, str] = {}
    minion_annotations: dict[str, str] = {}
    host, paths = HOST, list(PATHS)
    canary_annotations: dict[str, str] = {}
    maps = header_maps()
    if case.kind == "header-map":  # a fuzzed key or value of a header ConfigMap
        static = dataclasses.replace(static, ingress_nginx_compat=True)
        maps = header_maps(case.name, case.value)
        annotations.update({INN + "custom-headers": "hdrs", INN + "auth-url": "http://10.0.0.9/check",
                            INN + "auth-proxy-set-headers": "authhdrs"})
    if static.ingress_nginx_compat or case.kind == "ingress-nginx":
        config = dataclasses.replace(config, ingress_nginx_allowed_response_headers=ALLOWED_RESPONSE_HEADERS)
    if case.kind == "ingress-nginx" and case.name in CANARY_KEYS:  # on a canary of the fuzzed Ingress
        static = dataclasses.replace(static, ingress_nginx_compat=True)
        canary_annotations = {INN + "canary": "true", INN + "canary-by-header": "X-Canary",
                              case.name: case.value}
        if case.name == INN + "canary-by-header":
            canary_annotations[INN + "canary-by-header-pattern"] = "^v"
    elif case.kind in ("annotation", "ingress-nginx"):
        annotations[case.name] = case.value
        if case.kind == "ingress-nginx":
            static = dataclasses.replace(static, ingress_nginx_compat=True)
            if case.name == INN + "default-backend":  # the errors it takes (the builder resolved its port)
                annotations[INN + "custom-http-errors"] = "404"
            if case.name == INN + "proxy-redirect-to":
                annotations[INN + "proxy-redirect-from"] = "http://a/"
            if case.name.startswith(INN + "cors-"):
                annotations[INN + "enable-cors"] = "true"
            if case.name.startswith((INN + "session-cookie-", INN + "affinity-")):
                annotations[INN + "affinity"] = "cookie"
            if case.name in (INN + "mirror-host", INN + "mirror-request-body"):
                annotations[INN + "mirror-target"] = "https://10.0.0.10$request_uri"
            if case.name.startswith(INN + "auth-tls-"):
                annotations.setdefault(INN + "auth-tls-secret", "default/ca")
            if case.name.startswith(INN + "proxy-ssl-"):
                annotations.setdefault(INN + "proxy-ssl-secret", "default/backend")
                annotations[INN + "backend-protocol"] = "HTTPS"
            if case.name in (INN + "limit-whitelist", INN + "limit-allowlist",
            INN + "limit-burst-multiplier"):
                annotations[INN + "limit-rps"] = "5"
            if case.name in BASIC_AUTH:  # ingress-nginx's basic auth: an Opaque Secret with the key auth
                annotations.setdefault(INN + "auth-type", "basic")
                annotations.setdefault(INN + "auth-secret", "htusers")
            elif case.name.startswith(INN + "auth-") and case.name != INN + "auth-url":
                annotations[INN + "auth-url"] = "http://10.0.0.9/check"
                if case.name == INN + "auth-signin-redirect-param":
                    annotations[INN + "auth-signin"] = "https://login.example.com/start"
    elif case.kind == "minion-annotation":
        minion_annotations[case.name] = case.value
    elif case.kind == "host":
        host = case.value
    elif case.kind == "path":
        paths = [(case.value, "Prefix", "svc-a"), ("/other", "Exact", "svc-b")]
        if case.path_regex == "ingress-nginx":  # its regex mode and rewrite (--ingress-nginx-compat)
            static = dataclasses.replace(static, ingress_nginx_compat=True)
            paths[0] = (case.value, "ImplementationSpecific", "svc-a")
            annotations.update({INN + "use-regex": "true", INN + "rewrite-target": "/$1"})
        elif case.path_regex:
            annotations["nginx.org/path-regex"] = case.path_regex
    elif case.kind == "configmap":
        data = {case.name: case.value}
        if case.name.startswith("otel-"):  # the other otel keys need the endpoint, the header both parts
            data.setdefault("otel-exporter-endpoint", "collector.example.com:4317")
            if case.name.startswith("otel-exporter-header-"):
                data.setdefault("otel-exporter-header-name", "X-Otel")
                data.setdefault("otel-exporter-header-value", "v")
        config, cm_errors = parse_config_map_checked(data, static.capabilities)
        if cm_errors:
            return f"configmap: {cm_errors}"
    # Annotations that need another one to be set.
    for anns in (annotations, minion_annotations):
        if "nginx.org/basic-auth-realm" in anns:
            anns.setdefault("nginx.org/basic-auth-secret", "users")
        if any(k.startswith("nginx.org/hsts-") for k in anns):
            anns.setdefault("nginx.org/hsts", "true")
        if "nginx.org/proxy-redirect-to" in anns:
            anns.setdefault("nginx.org/proxy-redirect-from", "~^http://([^/]+)/(.*)$")
        if anns.get("nginx.org/proxy-redirect-from", "off").strip() not in ("off", "default"):
            anns.setdefault("nginx.org/proxy-redirect-to", "/$1")
    if case.kind == "minion-annotation":
        master = _ingress("shop", "default", host, [], {"nginx.org/mergeable-ingress-type": "master"},
                          tls=True)
        if CUSTOM_HTTP_ERRORS in minion_annotations:
            master["spec"]["defaultBackend"] = DEFAULT_BACKEND
        minion_annotations["nginx.org/mergeable-ingress-type"] = "minion"
        minion = _ingress("cart", "team-a", host, paths, minion_annotations)
        for obj in (master, minion):
            errors = validate_ingress(obj, snippets_enabled=static.enable_snippets)
            if errors:
                return f"validation: {errors[0]}"
        if minion_annotations["nginx.org/mergeable-ingress-type"] != "minion":
            return "not a minion"
        mergeable = MergeableIngresses(
            IngressEx(master, {host: True}, dict(ENDPOINTS), secret_refs=refs),
            [IngressEx(minion, {host: True}, dict(ENDPOINTS), secret_refs=refs,
                       valid_minion_paths={p: True for p, _, _ in paths})])
        try:
            result = generate_nginx_config_for_mergeable(mergeable, static, config)
        except AnnotationError as e:
            return f"generator: {e}"
        if result.minion_warnings.get("team-a/cart", [""])[-1].startswith("the minion is not applied"):
            return "minion rejected by the generator"
        cfg = result.config
    else:
        obj = _ingress("cafe", "default", host, paths, annotations, tls=True)
        errors = validate_ingress(obj, snippets_enabled=static.enable_snippets,
                                  ingress_nginx_compat=static.ingress_nginx_compat)
        if errors:
            return f"validation: {errors[0]}"
        if annotations.get("nginx.org/mergeable-ingress-type", "") == "master":
            return "a master with paths is rejected by validation"
        canaries: tuple[IngressEx, ...] = ()
        if canary_annotations:  # a canary Ingress of the same host and paths (ingress_nginx/canary.py)
            canary_obj = _ingress("cafe-canary", "default", host, [(p, t, "svc-b") for p, t, _ in paths],
                                  canary_annotations)
            errors = validate_ingress(canary_obj, ingress_nginx_compat=True)
            if errors:
                return f"validation: {errors[0]}"
            canaries = (IngressEx(canary_obj, {host: True}, dict(ENDPOINTS)),)
        try:
            default = ("svc-b", 80) if INN + "default-backend" in annotations else None
            hosts = {host: True}
            if INN + "from-to-www-redirect" in annotations and other_name(host):
                hosts[other_name(host)] = True  # (the Configuration's weak claim, won)
            cfg, _ = generate_nginx_config(IngressEx(obj, hosts, dict(ENDPOINTS), secret_refs=refs,
                                                     policies=inn_policies(obj, static), canaries=canaries,
                                                     default_backend=default, config_maps=maps), static,
                                           config)
        except AnnotationError as e:
            return f"generator: {e}"
    try:
        ingress_text = TEMPLATES.execute_ingress_template(cfg)
        dhparam = f"{static.conf_dir}/secrets/dhparam.pem" if config.ssl_dhparam_file else ""
        main_cfg = generate_main_config(static, config, dhparam_path=dhparam)
        main_text = TEMPLATES.execute_main_template(main_cfg)
    except TemplateRenderError as e:
        return f"template: {e}"
    return Rendered(ingress_text, main_text)


def parse_config_map_checked(data: dict[str, str], capabilities: Capabilities = EVERYTHING,
                             ) -> tuple[ConfigParams, list[tuple[str, str]]]:
    from ingressctl.configs.configmaps import parse_config_map

    return parse_config_map(data, capabilities)


# ----------------------------------------------------------------------------------------------- structure

@dataclass
class Stmt:
    name: str
    args: tuple[str, ...]
    children: list[Stmt] | None  # None: a simple directive


def parse_tree(text: str) -> list[Stmt]:
    """NGINX's statement tree, from the tokenizer model; raises AssertionError on unbalanced structure."""
    root: list[Stmt] = []
    stack: list[list[Stmt]] = [root]
    words: list[str] = []
    for kind, value in nginx_tokens(text):
        if kind == "word":
            words.append(value)
        elif value == ";":
            assert words, "an empty statement"
            stack[-1].append(Stmt(words[0], tuple(words[1:]), None))
            words = []
        elif value == "{":
            assert words, "a block without a name"
            block = Stmt(words[0], tuple(words[1:]), [])
            stack[-1].append(block)
            assert block.children is not None
            stack.append(block.children)
            words = []
        else:
            assert not words and len(stack) > 1, "an unexpected '}'"
            stack.pop()
    assert not words and len(stack) == 1, "unbalanced blocks or a statement without ';'"
    return root


Context = tuple[str, ...]
Schema = dict[Context, set[tuple[str, int]]]
# Directives that may appear any number of times in one block; all others at most as often as in the
# reference renders (per block instance).
REPEATABLE = {"listen", "upstream", "location", "proxy_set_header", "grpc_set_header", "set",
              "proxy_hide_header", "proxy_pass_header", "set_real_ip_from", "limit_req_zone", "if", "allow",
              "deny", "geo", "map", "limit_conn_zone",
              "types", "text/html", "text/plain", "application/json"}
# Directives with one argument per item of a list value (log_format: one quoted argument per line, one CPU
# mask per worker, one word per protocol).
VARIADIC = {"log_format", "worker_cpu_affinity", "ssl_protocols", "proxy_next_upstream", "error_page",
            "proxy_cookie_domain", "proxy_cookie_path",  # `off` or `<from> <to>`
            "sticky"}  # `cookie <name>` and one argument per cookie attribute
# Directives every block of a context has exactly once.
REQUIRED = {("server",): {"server_name", "server_tokens"}, ("http", "server"): {"listen"},
            ("upstream",): {"server"}}


def _walk(stmts: list[Stmt], ctx: Context) -> Iterator[tuple[Context, list[Stmt]]]:
    yield ctx, stmts
    for s in stmts:
        if s.children is not None:
            yield from _walk(s.children, (*ctx, s.name))


def learn(texts: list[str]) -> tuple[Schema, dict[Context, Counter[str]]]:
    schema: Schema = {}
    counts: dict[Context, Counter[str]] = {}
    for text in texts:
        for ctx, stmts in _walk(parse_tree(text), ()):
            schema.setdefault(ctx, set()).update((s.name, len(s.args)) for s in stmts)
            c = Counter(s.name for s in stmts)
            counts.setdefault(ctx, Counter())
            for k, n in c.items():
                counts[ctx][k] = max(counts[ctx][k], n)
    return schema, counts


def _is_network(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


def check_structure(text: str, schema: Schema, counts: dict[Context, Counter[str]]) -> None:
    for ctx, stmts in _walk(parse_tree(text), ()):
        assert ctx in schema, f"unexpected block context {ctx}"
        names = {n for n, _ in schema[ctx]}
        for s in stmts:
            if ctx == ("geo",) and s.args == ("1",) and _is_network(s.name):
                continue  # an exempt source of ingress-nginx's limit-whitelist: `<cidr> 1;`
            if ctx == ("map",) and s.name.startswith("~") and len(s.args) == 1:
                continue  # a canary's regex (ingress-nginx's canary-by-header-value, -pattern)
            if ctx == ("split_clients",) and re.fullmatch(r"[0-9]+(\.[0-9]+)?%", s.name) and len(s.args) == 1:
                continue  # a canary's weight
            assert (s.name, len(s.args)) in schema[ctx] or (s.name in VARIADIC and s.name in names), \
                f"unexpected {s.name} with {len(s.args)} args in {ctx}"
        seen = Counter(s.name for s in stmts)
        for name, n in seen.items():
            if name not in REPEATABLE and not (name == "server" and ctx[-1:] == ("upstream",)) \
                    and not (ctx == ("geo",) and _is_network(name)) \
                    and not (ctx == ("map",) and name.startswith("~")) \
                    and not (ctx == ("split_clients",) and name.endswith("%")):
                assert n <= counts[ctx][name], f"{name} {n} times in {ctx}"
        for name in REQUIRED.get(ctx, ()):
            assert seen[name] >= 1, f"no {name} in a block of {ctx}"
        returns = any(s.name in ("return", "stub_status", "try_files") for s in stmts)
        if ctx and ctx[-1] == "location" and stmts and not returns:
            passes = [s.name for s in stmts if s.name in ("proxy_pass", "grpc_pass")]
            assert len(passes) == 1, f"a location with {passes}"


def _reference_texts() -> tuple[list[str], list[str]]:
    """Renders that switch every feature on (and off), to learn the schemas from."""
    skip = ("nginx.org/mergeable-ingress-type", "nginx.org/path-regex", "nginx.org/listen-ports")
    everything = {n: VALID[n][0] for n in ANNOTATION_NAMES if n in VALID and "snippets" not in n
                  and n not in skip}
    variants = [
        {}, everything, {**everything, "nginx.org/limit-req-no-delay": "false",
                         "nginx.org/lb-method": "hash $host", "nginx.org/hsts-behind-proxy": "false",
                         "nginx.org/path-regex": "case_insensitive"},
        {**everything, "nginx.org/lb-method": "random two least_conn", "nginx.org/path-regex": "exact"},
        {"nginx.org/lb-method": "random two", "nginx.org/grpc-services": "svc-a,svc-b"},
        *({"nginx.org/lb-method": m} for m in sorted(LB_METHODS)),
        {"nginx.org/limit-req-rate": "1r/s"},
        {"nginx.org/limit-req-rate": "1r/s", "nginx.org/limit-req-burst": "3"},
        {"nginx.org/limit-req-rate": "1r/s", "nginx.org/limit-req-delay": "3"},
        {**{k: v for k, v in everything.items()
            if k not in ("nginx.org/rewrites", "nginx.org/proxy-redirect-to")},
         "nginx.org/proxy-redirect-from": "off", "nginx.org/path-regex": "case_insensitive"},
        {"nginx.org/proxy-redirect-from": "http://a/", "nginx.org/proxy-redirect-to": "/"},
    ]
    inn = {n: VALID[n][0] for n in INGRESS_NGINX_RENDERED if n in VALID}
    inn_variants = [inn, {**inn, INN + "temporal-redirect": "", INN + "limit-whitelist": "",
                          INN + "limit-allowlist": "", INN + "backend-protocol": "HTTP"},
                    {INN + "enable-cors": "true"},  # ingress-nginx's CORS defaults (origin *)
                    {INN + "enable-cors": "true", INN + "cors-expose-headers": "X-B"},
                    {INN + "auth-tls-secret": "default/ca"},  # verify-client on
                    {INN + "proxy-ssl-secret": "default/backend", INN + "backend-protocol": "HTTPS"},
                    {INN + "proxy-redirect-from": "off", INN + "limit-rps": "5",
                    INN + "whitelist-source-range": "",
                     INN + "denylist-source-range": "10.0.0.1"},
                    {INN + "auth-type": "basic", INN + "auth-secret": "missing"}]  # denied: return 503
    maximal_cm, errors = parse_config_map_checked({k: VALID[k][0] for k in CONFIG_MAP_NAMES if k in VALID})
    assert errors == [], errors
    minimal_cm = ConfigParams()
    ingress_texts, main_texts = [], []
    static = static_params()
    for cm in (minimal_cm, maximal_cm, dataclasses.replace(maximal_cm, access_log="syslog:server=x",
                                                           access_log_off=False, log_format=(),
                                                           default_server_return="404",
                                                           worker_cpu_affinity="0101 1010"),
               ConfigParams(http2=True), ConfigParams(proxy_protocol=True)):
        compat = dataclasses.replace(static, ingress_nginx_compat=True)
        for anns, st_ in [*((a, static) for a in variants), *((a, compat) for a in inn_variants)]:
            for tls in (True, False):
                obj = _ingress("cafe", "default", HOST, PATHS, anns, tls=tls)
                allowed = dataclasses.replace(
                    cm, ingress_nginx_allowed_response_headers=ALLOWED_RESPONSE_HEADERS)
                cfg, _ = generate_nginx_config(IngressEx(obj, {HOST: True}, dict(ENDPOINTS),
                                                         secret_refs=dict(REFS), config_maps=header_maps(),
                                                         policies=inn_policies(obj, st_)), st_, allowed)
                ingress_texts.append(TEMPLATES.execute_ingress_template(cfg))
        for canary_anns in ({INN + "canary-weight": "30", INN + "canary-by-header": "X-Canary",
                             INN + "canary-by-cookie": "beta"},
                            {INN + "canary-by-header": "X-V", INN + "canary-by-header-pattern": "^v"}):
            cobj = _ingress("cafe-canary", "default", HOST, [(p, t, "svc-b") for p, t, _ in PATHS],
                            {INN + "canary": "true", **canary_anns})
            cfg, _ = generate_nginx_config(IngressEx(
                _ingress("cafe", "default", HOST, PATHS, {}, tls=True), {HOST: True}, dict(ENDPOINTS),
                secret_refs=dict(REFS), canaries=(IngressEx(cobj, {HOST: True}, dict(ENDPOINTS)),)),
                dataclasses.replace(static, ingress_nginx_compat=True), cm)
            ingress_texts.append(TEMPLATES.execute_ingress_template(cfg))
        www = _ingress("cafe", "default", HOST, PATHS, {INN + "from-to-www-redirect": "true"}, tls=True)
        cfg, _ = generate_nginx_config(IngressEx(www, {HOST: True, other_name(HOST): True}, dict(ENDPOINTS),
                                                 secret_refs=dict(REFS),
                                                 www_tls_names=frozenset({other_name(HOST)})),
                                       dataclasses.replace(static, ingress_nginx_compat=True), cm)
        ingress_texts.append(TEMPLATES.execute_ingress_template(cfg))
        # A wildcard host: its server answers the hosts deeper than one label as the default server does.
        wildcard = _ingress("wild", "default", "*.example.com", PATHS, {}, tls=True)
        cfg, _ = generate_nginx_config(IngressEx(wildcard, {"*.example.com": True}, dict(ENDPOINTS),
                                                 secret_refs=dict(REFS)), static, cm)
        ingress_texts.append(TEMPLATES.execute_ingress_template(cfg))
        master = _ingress("shop", "default", HOST, [], {"nginx.org/mergeable-ingress-type": "master",
                                                       **{k: v for k, v in everything.items()
                                                          if k.startswith("nginx.org/basic-auth")}}, tls=True)
        for minion_anns in (everything, {"nginx.org/proxy-redirect-from": "off"}):
            minion = _ingress("cart", "team-a", HOST, PATHS,
                              {**minion_anns, "nginx.org/mergeable-ingress-type": "minion"})
            if CUSTOM_HTTP_ERRORS in minion_anns:
                master = {**master, "spec": {**master["spec"], "defaultBackend": DEFAULT_BACKEND}}
            result = generate_nginx_config_for_mergeable(MergeableIngresses(
                IngressEx(master, {HOST: True}, dict(ENDPOINTS), secret_refs=dict(REFS)),
                [IngressEx(minion, {HOST: True}, dict(ENDPOINTS), secret_refs=dict(REFS),
                           valid_minion_paths={p: True for p, _, _ in PATHS})]), static, cm)
            ingress_texts.append(TEMPLATES.execute_ingress_template(result.config))
        main_texts.append(TEMPLATES.execute_main_template(generate_main_config(
            static, cm, dhparam_path="/etc/ic/secrets/dhparam.pem")))
    return ingress_texts, main_texts


_INGRESS_TEXTS, _MAIN_TEXTS = _reference_texts()
INGRESS_SCHEMA = learn(_INGRESS_TEXTS)
MAIN_SCHEMA = learn(_MAIN_TEXTS)


def check_rendered(r: Rendered) -> None:
    check_structure(r.ingress, *INGRESS_SCHEMA)
    check_structure(r.main, *MAIN_SCHEMA)


# ------------------------------------------------------------------------------------------------- tests

def test_reference_renders_cover_the_features() -> None:
    schema, _ = INGRESS_SCHEMA
    loc = schema[("server", "location")]
    for name in ("proxy_pass", "grpc_pass", "limit_req", "limit_req_dry_run", "auth_basic", "proxy_buffers",
                 "proxy_set_header", "grpc_set_header"):
        assert any(n == name for n, _ in loc), name
    assert ("if" in {n for n, _ in schema[("server",)]}) and ("server", "if") in schema
    assert ("limit_req_zone", 3) in schema[()]
    assert ("ssl_dhparam", 1) in MAIN_SCHEMA[0][("http",)]


def test_the_checker_catches_injections() -> None:
    good = next(t for t in _INGRESS_TEXTS if "proxy_read_timeout 10;" in t and "server_tokens off;" in t
                and "client_max_body_size 2g;" in t)
    check_structure(good, *INGRESS_SCHEMA)
    for bad in (good.replace("proxy_read_timeout 10;", "proxy_read_timeout 10; root /etc;"),
                good.replace("server_tokens off;", "server_tokens off; } server { listen 1;"),
                good.replace("client_max_body_size 2g;", "client_max_body_size 2g 3g;"),
                good.replace('set $service "svc-a";', 'set $service "svc-a"; proxy_pass http://evil;'),
                good.replace("server_name fuzz.example.com;", "server_name fuzz.example.com #;"),
                good.replace("listen 80;", "listen 80; } } server { listen 2;"),
                good + "}"):
        assert bad != good
        try:
            check_structure(bad, *INGRESS_SCHEMA)
        except AssertionError:
            continue
        raise AssertionError(f"not caught: {bad}")


def test_every_fuzzed_name_has_valid_samples() -> None:
    """The schema is learned from renders of these samples: a name without one would be unchecked."""
    assert [n for n in [*ANNOTATION_NAMES, *CONFIG_MAP_NAMES,
    *INGRESS_NGINX_RENDERED] if not VALID.get(n)] == []


def test_valid_samples_render() -> None:
    """Every valid sample is accepted and renders (so the fuzzer's mutations start from reachable code)."""
    for name in ANNOTATION_NAMES:
        for v in VALID.get(name, []):
            if "snippets" in name or name == "nginx.org/mergeable-ingress-type":
                continue
            r = render_case(Case("annotation", name, v))
            assert isinstance(r, Rendered), (name, v, r)
            check_rendered(r)
    for name in CONFIG_MAP_NAMES:
        for v in VALID.get(name, []):
            r = render_case(Case("configmap", name, v))
            assert isinstance(r, Rendered), (name, v, r)
            check_rendered(r)
    for name in INGRESS_NGINX_RENDERED:
        for v in VALID[name]:
            r = render_case(Case("ingress-nginx", name, v))
            assert isinstance(r, Rendered), (name, v, r)
            check_rendered(r)
            assert r.ingress != render_case(Case("annotation", name, v)).ingress or name in NO_TEXT, (name, v)
    for part in HEADER_MAP_PARTS:
        for v in VALID["header-map"]:
            r = render_case(Case("header-map", part, v))
            assert isinstance(r, Rendered), (part, v, r)
            check_rendered(r)
        r = render_case(Case("header-map", part, "X-Fuzz"))
        assert isinstance(r, Rendered) and "return 503;" not in r.ingress, (part, r)
        assert ('add_header "X-Fuzz"' in r.ingress if part == "hdrs:key" else "X-Fuzz" in r.ingress), part


# ingress-nginx rows whose sample renders nothing of its own on the fuzzed Ingress (a value equal to the
# default, a setting of the builder's endpoints, or one that only changes the upstream servers' addresses).
NO_TEXT = {INN + "proxy-buffering", INN + "proxy-http-version", INN + "service-upstream",
           INN + "load-balance", INN + "ssl-redirect", INN + "proxy-next-upstream"}


def test_refused_and_ignored_ingress_nginx_rows_never_render_their_value() -> None:
    """A row that is refused is rejected whatever its value; one that is ignored renders as if absent."""
    plain = render_case(Case("ingress-nginx", INN + "proxy-body-size", "1m"))
    assert isinstance(plain, Rendered)
    snippets = {INN + "configuration-snippet", INN + "server-snippet"}
    for name in sorted(set(INGRESS_NGINX_NAMES) - set(INGRESS_NGINX_RENDERED) - snippets):
        for value in ("true", "x;y", "1"):
            r = render_case(Case("ingress-nginx", name, value))
            if isinstance(r, Rendered):
                assert "x;y" not in r.ingress
                check_rendered(r)


@settings(max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=CASES)
def test_fuzzed_inputs_are_rejected_or_render_exactly_the_expected_directives(case: Case) -> None:
    r = render_case(case)
    if isinstance(r, str):
        return
    check_rendered(r)
    if "snippet" in case.name:
        raise AssertionError("a snippet annotation passed with snippets disabled")
