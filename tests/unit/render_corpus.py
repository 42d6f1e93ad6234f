"""A deterministic corpus of varied Ingresses and the text IngressRenderer gives each one.

The corpus mixes what changes the rendered configuration: annotations (alone and combined, valid and
invalid), TLS (valid, missing and wrong-type Secrets), path types and `nginx.org/path-regex`, duplicate
paths, default backends, the catch-all, wildcard hosts, gRPC, mergeable masters with minions, and several
render contexts (proxy defaults on or off, certificates per handshake, a catch-all present, replicas).

`render_corpus()` returns one text for the whole corpus. `tests/unit/data/render_corpus.txt` holds the output
of the renderer the corpus was recorded with; `test_configs_render_corpus` requires byte-identical output, so
a change of the model or templates that alters any generated configuration shows up as a diff. After an
intended output change, record the file again: `python -m tests.unit.render_corpus --write`.
"""

from __future__ import annotations

import dataclasses
import random
import sys
from pathlib import Path
from typing import Any

from ingressctl.configs.configmaps import ConfigParams, StaticConfigParams, proxy_defaults
from ingressctl.configs.renderers import IngressRenderer, RenderContext
from ingressctl.configs.templates import TemplateExecutor
from ingressctl.kinds.ingress.ingress_ex import IngressEx, MergeableIngresses, backend_key
from ingressctl.nginx.capabilities import Capabilities
from ingressctl.secret_types import SecretReference

GOLDEN = Path(__file__).parent / "data" / "render_corpus.txt"

# Annotation values, valid unless marked; each Ingress draws a few of these.
ANNOTATIONS: tuple[tuple[str, str], ...] = (
    ("nginx.org/proxy-connect-timeout", "10s"),
    ("nginx.org/proxy-read-timeout", "120s"),
    ("nginx.org/proxy-send-timeout", "30s"),
    ("nginx.org/client-max-body-size", "8m"),
    ("nginx.org/proxy-buffering", "false"),
    ("nginx.org/proxy-buffers", "8 8k"),
    ("nginx.org/proxy-buffer-size", "8k"),
    ("nginx.org/proxy-busy-buffers-size", "16k"),
    ("nginx.org/proxy-max-temp-file-size", "0"),
    ("nginx.org/proxy-hide-headers", "X-Powered-By,Server"),
    ("nginx.org/proxy-pass-headers", "X-Accel-Redirect"),
    ("nginx.org/proxy-set-headers", "X-Custom,X-Tenant: blue"),
    ("nginx.org/proxy-next-upstream", "error timeout http_502"),
    ("nginx.org/proxy-next-upstream-timeout", "5s"),
    ("nginx.org/proxy-next-upstream-tries", "3"),
    ("nginx.org/client-body-buffer-size", "64k"),
    ("nginx.org/lb-method", "least_conn"),
    ("nginx.org/lb-method", "ip_hash"),
    ("nginx.org/keepalive", "32"),
    ("nginx.org/max-fails", "3"),
    ("nginx.org/max-conns", "100"),
    ("nginx.org/fail-timeout", "5s"),
    ("nginx.org/upstream-zone-size", "512k"),
    ("nginx.org/upstream-zone-size", "0"),
    ("nginx.org/server-tokens", "false"),
    ("nginx.org/listen-ports", "8080,8081"),
    ("nginx.org/listen-ports-ssl", "8443"),
    ("nginx.org/redirect-to-https", "true"),
    ("nginx.org/ssl-redirect", "false"),
    ("nginx.org/http-redirect-code", "308"),
    ("nginx.org/hsts", "true"),
    ("nginx.org/hsts-max-age", "100"),
    ("nginx.org/hsts-include-subdomains", "true"),
    ("nginx.org/hsts-behind-proxy", "true"),
    ("nginx.org/ssl-ciphers", "HIGH:!aNULL"),
    ("nginx.org/ssl-prefer-server-ciphers", "true"),
    ("nginx.org/app-root", "/app"),
    ("nginx.org/add-header", "X-Frame-Options: DENY"),
    ("nginx.org/proxy-redirect-from", "http://a/ http://b/"),  # both, see _annotations
    ("nginx.org/proxy-redirect-from", "off"),
    ("nginx.org/rewrite-target", "/$1"),
    ("nginx.org/path-regex", "case_sensitive"),
    ("nginx.org/path-regex", "case_insensitive"),
    ("nginx.org/path-regex", "exact"),
    ("nginx.org/rewrites", "serviceName=svc-a rewrite=/v1;serviceName=svc-b rewrite=/"),
    ("nginx.org/websocket-services", "svc-a"),
    ("nginx.org/ssl-services", "svc-b"),
    ("nginx.org/grpc-services", "svc-a"),
    ("nginx.org/sticky-cookie-services", "serviceName=svc-a srv_id expires=1h path=/"),
    ("nginx.org/basic-auth-secret", "htpasswd"),
    ("nginx.org/basic-auth-realm", "Staff only"),
    ("nginx.org/limit-req-rate", "10r/s"),
    ("nginx.org/limit-req-burst", "20"),
    ("nginx.org/limit-req-no-delay", "true"),
    ("nginx.org/limit-req-delay", "5"),
    ("nginx.org/limit-req-dry-run", "true"),
    ("nginx.org/limit-req-log-level", "warn"),
    ("nginx.org/limit-req-reject-code", "503"),
    ("nginx.org/limit-req-scale", "true"),
    ("nginx.org/limit-req-key", "${binary_remote_addr}"),
    ("nginx.org/custom-http-errors", "404,503"),
    ("nginx.org/server-snippets", "add_header X-Server yes;"),
    ("nginx.org/location-snippets", "add_header X-Location yes;"),
    ("nginx.org/proxy-connect-timeout", "not-a-time"),   # invalid: the Ingress is rejected
    ("nginx.org/keepalive", "-1"),                       # invalid
)

PATHS: tuple[tuple[str, str], ...] = (
    ("/", "Prefix"), ("/api", "Prefix"), ("/api/", "Prefix"), ("/exact", "Exact"), ("/dir/", "Exact"),
    ("/impl", "ImplementationSpecific"), ("/v[0-9]+/items", "ImplementationSpecific"), ("/api", "Exact"),
    ("/static/", "Prefix"), ("/api", "Prefix"),
)


def _annotations(rng: random.Random, counts: tuple[int, ...]) -> dict[str, str]:
    """A few annotations of ANNOTATIONS (a "from to" proxy-redirect value becomes the pair of annotations)."""
    out = dict(rng.sample(ANNOTATIONS, rng.choice(counts)))
    redirect = out.get("nginx.org/proxy-redirect-from", "")
    if " " in redirect:
        out["nginx.org/proxy-redirect-from"], out["nginx.org/proxy-redirect-to"] = redirect.split()
    return out


def _backend(service: str, port: int | str) -> dict[str, Any]:
    ref: dict[str, Any] = {"number": port} if isinstance(port, int) else {"name": port}
    return {"service": {"name": service, "port": ref}}


def _ingress(rng: random.Random, i: int) -> tuple[IngressEx, str]:
    """One regular Ingress (and a note of what it holds, for the golden file's headers)."""
    ns, name = f"ns{i % 3}", f"ing{i}"
    hosts = [f"h{i}.example.com"] + ([f"*.w{i}.example.com"] if i % 7 == 3 else [])
    services = [("svc-a", 80), ("svc-b", 8443), ("svc-c", "http")]
    rules = []
    for host in hosts:
        paths = [{"path": p, "pathType": t, "backend": _backend(*rng.choice(services))}
                 for p, t in rng.sample(PATHS, rng.randint(1, 4))]
        rules.append({"host": host, "http": {"paths": paths}})
    spec: dict[str, Any] = {"rules": rules}
    if i % 5 == 1:
        spec["defaultBackend"] = _backend("svc-d", 80)
    refs: dict[str, SecretReference] = {}
    tls_kind = i % 6
    if tls_kind in (1, 2, 3, 4):
        spec["tls"] = [{"hosts": hosts, "secretName": f"tls-{i}"}]
        if tls_kind == 1:
            refs[f"tls-{i}"] = SecretReference(f"{ns}/tls-{i}", f"/etc/ic/secrets/{ns}-tls-{i}",
                                               secret_type="kubernetes.io/tls")
        elif tls_kind == 2:
            refs[f"tls-{i}"] = SecretReference(f"{ns}/tls-{i}", error="bad PEM",
                                               secret_type="kubernetes.io/tls")
        elif tls_kind == 3:
            refs[f"tls-{i}"] = SecretReference(f"{ns}/tls-{i}", "/x", secret_type="Opaque")
    refs["htpasswd"] = SecretReference(f"{ns}/htpasswd", f"/etc/ic/secrets/{ns}-htpasswd",
                                       secret_type="nginx.org/htpasswd")
    annotations = _annotations(rng, (0, 0, 1, 2, 4, 8))
    endpoints = {backend_key("svc-a", 80): ["10.0.0.1:8080", "10.0.0.2:8080"],
                 backend_key("svc-b", 8443): ["10.0.1.1:8443"],
                 backend_key("svc-c", "http"): [] if i % 4 == 0 else ["10.0.2.1:80"],
                 backend_key("svc-d", 80): ["10.0.3.1:80", "bad endpoint"]}
    ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"namespace": ns, "name": name, "annotations": annotations}, "spec": spec}
    note = f"{ns}/{name} annotations={sorted(annotations.items())}"
    return IngressEx(ing, dict.fromkeys(hosts, True), endpoints, secret_refs=refs), note


def _catch_all(i: int) -> IngressEx:
    ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"namespace": "ns0", "name": f"catch{i}", "annotations": {}},
           "spec": {"defaultBackend": _backend("svc-a", 80)}}
    return IngressEx(ing, {"": True}, {backend_key("svc-a", 80): ["10.9.0.1:80"]})


def _mergeable(rng: random.Random, i: int) -> MergeableIngresses:
    host = f"m{i}.example.com"

    def obj(name: str, kind: str, paths: list[str], annotations: dict[str, str]) -> dict[str, Any]:
        rule: dict[str, Any] = {"host": host}
        if paths:
            backend = _backend(f"{name}-svc", 80)
            rule["http"] = {"paths": [{"path": p, "pathType": "Prefix", "backend": backend} for p in paths]}
        spec: dict[str, Any] = {"rules": [rule]}
        if kind == "master" and i % 2:
            spec["tls"] = [{"hosts": [host], "secretName": "m-tls"}]
            spec["defaultBackend"] = _backend("def-svc", 80)
        return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                "metadata": {"namespace": "mns", "name": name, "annotations": {
                    "nginx.org/mergeable-ingress-type": kind, **annotations}}, "spec": spec}

    master_anns = _annotations(rng, (0, 2, 4))
    master = obj(f"master{i}", "master", [], master_anns)
    refs = {"m-tls": SecretReference("mns/m-tls", "/etc/ic/secrets/mns-m-tls",
                                     secret_type="kubernetes.io/tls"),
            "htpasswd": SecretReference("mns/htpasswd", "/etc/ic/secrets/mns-htpasswd",
                                        secret_type="nginx.org/htpasswd")}
    endpoints = {backend_key("def-svc", 80): ["10.5.0.1:80"]}
    minions = []
    for j, paths in enumerate((["/tea"], ["/coffee", "/tea"], ["/juice/"])):
        name = f"minion{i}-{j}"
        m = obj(name, "minion", paths, _annotations(rng, (0, 1, 3)))
        valid = {p: j == 0 or p != "/tea" for p in paths}
        minions.append(IngressEx(m, {host: True}, {backend_key(f"{name}-svc", 80): [f"10.6.{j}.1:80"]},
                                 secret_refs=refs, valid_minion_paths=valid))
    return MergeableIngresses(IngressEx(master, {host: True}, endpoints, secret_refs=refs), minions)


def contexts() -> list[tuple[str, RenderContext]]:
    """The render contexts every corpus resource is rendered in."""
    params = ConfigParams()
    static = StaticConfigParams(run_dir="/run/ic", conf_dir="/etc/ic", secrets_dir="/etc/ic/secrets",
                                enable_snippets=True)
    templates = TemplateExecutor()
    new_nginx = dataclasses.replace(static, capabilities=Capabilities(version=(1, 29, 6)),
                                    certificates_per_handshake=True,
                                    default_server_tls_path="/etc/ic/secrets/default")
    http2 = dataclasses.replace(params, http2=True, keepalive=8, proxy_connect_timeout="5s")
    return [
        ("plain", RenderContext(static, params, templates)),
        ("proxy-defaults", RenderContext(static, params, templates, proxy_defaults=proxy_defaults(params))),
        ("per-handshake+catch-all", RenderContext(new_nginx, params, templates, replicas=3,
                                                  catch_all="ns0-catch-svc-a-80",
                                                  proxy_defaults=proxy_defaults(params))),
        ("http2-configmap", RenderContext(static, http2, templates, proxy_defaults=proxy_defaults(http2))),
    ]


def corpus(seed: int = 15) -> list[tuple[str, object]]:
    rng = random.Random(seed)
    out: list[tuple[str, object]] = []
    for i in range(60):
        ex, note = _ingress(rng, i)
        out.append((note, ex))
    out.append(("catch-all", _catch_all(0)))
    for i in range(6):
        out.append((f"mergeable {i}", _mergeable(rng, i)))
    return out


def render_resources(renderer: IngressRenderer, ctx_name: str, ctx: RenderContext,
                     items: list[tuple[str, object]]) -> str:
    """Each resource's text, warnings, zone bytes and certificates (or its error) in one context."""
    chunks = []
    for note, resource in items:
        chunks.append(f"=== {ctx_name} | {note}\n")
        try:
            r = renderer.render(resource, ctx)
        except ValueError as e:
            chunks.append(f"!!! {type(e).__name__}: {e}\n")
            continue
        chunks.append(r.text)
        chunks.append(f"--- warnings {r.warnings}\n--- zone_bytes {r.zone_bytes} children "
                      f"{sorted(r.child_warnings.items())} "
                      f"certificates {sorted(r.certificates.items())}\n")
    return "".join(chunks)


def render_corpus() -> str:
    renderer = IngressRenderer()
    items = corpus()
    return "".join(render_resources(renderer, ctx_name, ctx, items) for ctx_name, ctx in contexts())


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(render_corpus(), encoding="utf-8")
    else:
        sys.stdout.write(render_corpus())
