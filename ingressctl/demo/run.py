"""`make run`: the whole system on one machine (docs/architecture.md, "The demo").

Starts a devcluster loaded with NIC's CRDs, `examples/` and `examples/tcp/`, one small HTTP backend per
Service (each answers with its own name), EndpointSlices pointing at those backends, a generated self-signed
certificate for every Ingress TLS Secret the manifests name but do not contain (and one for the default
server), and the real controller with a real NGINX on unprivileged ports (config and runtime files under
`--run-dir`, default `.run/`). Custom resources are enabled: a TransportServer forwards a GlobalConfiguration
listener (moved to a free port if its own is taken) to a Service over TCP. It then prints curl commands that
show the routing, with every port it uses, and runs until Ctrl-C.

`--check` runs those requests itself instead (every Ingress path must reach the backend of its Service, over
HTTPS for TLS hosts; every TransportServer's listener must reach its Service; an unknown host must get 404)
in a run dir of its own (a fresh temporary one unless `--run-dir` is given), and exits 0 if all pass, 1
otherwise.

Guarantees: the run dir is locked before anything in it is touched, so a second demo on the same run dir is
refused having changed nothing; an NGINX a killed demo left running is stopped before ports are picked;
every port is free at start (0 = pick one); everything started is stopped on exit, also after a failure; the
exit status is 0 on success, 1 on a failed check or start-up error.
"""

from __future__ import annotations

import argparse
import base64
import glob
import http.client
import os
import shutil
import signal
import socket
import ssl
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from ingressctl.demo.backend import Backend
from ingressctl.demo.rundir import RunDirLock, remember_nginx_run_dir, stop_leftover_nginx
from ingressctl.demo.virtualservers import VSCheck, run_check, virtual_server_checks
from ingressctl.k8s.store import SERVICE_NAME_LABEL
from ingressctl.logging import configure_logging, get_logger
from ingressctl.settings import (
    ControllerSettings,
    KubeSettings,
    LeaderElectionSettings,
    LogSettings,
    NginxSettings,
    ServingSettings,
    Settings,
)

log = get_logger(__name__)

DEFAULT_SERVER_SECRET = ("default", "ingressctl-demo-default-server")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_EXAMPLES = os.path.join(REPO, "examples")
# NIC's custom resource definitions (VirtualServer, ...): always loaded first, so examples may use them.
CRDS = os.path.join(REPO, "charts", "ingressctl", "crds")
# Examples of the custom resources that need their CRDs first (examples/tcp/ links them for devcluster).
DEFAULT_CR_EXAMPLES = os.path.join(DEFAULT_EXAMPLES, "tcp")


def free_port(preferred: int = 0, what: str = "") -> int:
    """`preferred` if it is free on 127.0.0.1, else a port the kernel picks (0: always pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", preferred))
        except OSError:
            s.bind(("127.0.0.1", 0))
            picked = s.getsockname()[1]
            print(f"{what or 'the'} port {preferred} is in use; the demo uses port {picked} instead",
                  file=sys.stderr)
        return int(s.getsockname()[1])


@dataclass
class Route:
    """One Ingress path and the backend that should answer it."""

    host: str
    path: str
    service: str
    namespace: str
    ingress: str = ""
    tls: bool = False

    def curl(self, port: int) -> str:
        return f"curl -H 'Host: {self.host}' http://127.0.0.1:{port}{self.path}"

    def curl_tls(self, port: int) -> str:
        return f"curl -k --resolve {self.host}:{port}:127.0.0.1 https://{self.host}:{port}{self.path}"


@dataclass
class StreamRoute:
    """A TransportServer and the listener port its connections arrive on."""

    transportserver: str   # namespace/name
    port: int
    service: str
    namespace: str

    def curl(self) -> str:
        return f"curl http://127.0.0.1:{self.port}/"


@dataclass
class Demo:
    """Everything the demo started, so that it can all be stopped."""

    run_dir: str
    manifests: list[str]
    http_port: int = 0
    https_port: int = 0
    ready_port: int = 0
    metrics_port: int = 0
    log_level: str = "warning"
    cluster: Any = None
    client: Any = None
    app: Any = None
    backends: dict[str, Backend] = field(default_factory=dict)
    routes: list[Route] = field(default_factory=list)
    stream_routes: list[StreamRoute] = field(default_factory=list)
    global_configuration: str | None = None
    ignored_hosts: list[str] = field(default_factory=list)
    kubeconfig: str = ""
    _tmp_run: str = ""
    _lock: RunDirLock | None = None

    def start(self) -> None:
        from ingressctl.app.root import App
        from ingressctl.devcluster import DevCluster
        from ingressctl.k8s.client import KubeClient

        # Nothing in the run dir is touched before the lock is held (DemoBusyError otherwise).
        self._lock = RunDirLock(self.run_dir)
        self._lock.acquire()
        # NGINX's workers (another user when the demo runs as root) open files below it while serving, and
        # the controller refuses to start when they cannot: traversable, not listable (a mkdtemp one is 0700).
        if (st := os.stat(self.run_dir)).st_uid == os.geteuid() and st.st_mode & 0o011 != 0o011:
            os.chmod(self.run_dir, stat.S_IMODE(st.st_mode) | 0o011)
        conf_dir = os.path.abspath(os.path.join(self.run_dir, "nginx", "conf"))
        run_dir = os.path.abspath(os.path.join(self.run_dir, "nginx", "run"))
        for pid in stop_leftover_nginx(self.run_dir, conf_dir, run_dir):
            print(f"stopped NGINX (pid {pid}) left running by a previous demo with this run dir",
                  file=sys.stderr)
        crds = manifest_files([CRDS]) if os.path.isdir(CRDS) else []
        self.cluster = DevCluster(manifests=[*crds, *self.manifests])
        self.cluster.start()
        kubeconfig = os.path.abspath(os.path.join(self.run_dir, "kubeconfig"))
        self.kubeconfig = self.cluster.write_kubeconfig(kubeconfig)
        self.client = KubeClient.from_kubeconfig(self.kubeconfig)
        self._start_backends()
        self._create_missing_tls_secrets()
        self.routes = self._routes()
        self.stream_routes = self._stream_routes()

        self.http_port = free_port(self.http_port, "HTTP")
        self.https_port = free_port(self.https_port, "HTTPS")
        self.ready_port = free_port(self.ready_port, "readiness")
        self.metrics_port = free_port(self.metrics_port, "metrics")
        if len(os.fsencode(run_dir)) > 60:  # unix socket paths are short; use /tmp for a deep checkout
            self._tmp_run = tempfile.mkdtemp(prefix="ingressctl-run-")
            run_dir = self._tmp_run
        remember_nginx_run_dir(self.run_dir, run_dir)
        settings = Settings(
            kube=KubeSettings(kubeconfig=self.kubeconfig, pod_namespace="default",
                              pod_name="ingressctl-demo"),
            nginx=NginxSettings(conf_dir=conf_dir, run_dir=run_dir, http_port=self.http_port,
                                https_port=self.https_port, status=False, reload_timeout_ms=30000),
            controller=ControllerSettings(ingress_class="nginx", nginx_configmaps=self._configmap(),
                                          default_server_tls_secret="/".join(DEFAULT_SERVER_SECRET),
                                          report_ingress_status=True, enable_custom_resources=True,
                                          global_configuration=self.global_configuration),
            leader_election=LeaderElectionSettings(enabled=True, lease_duration_s=15.0, renew_deadline_s=10.0,
                                                   retry_period_s=2.0),
            serving=ServingSettings(ready_status=True, ready_status_port=self.ready_port,
                                    enable_prometheus_metrics=True,
                                    prometheus_metrics_listen_port=self.metrics_port),
            log=LogSettings(level=self.log_level),
        )
        self.app = App(settings, health_host="127.0.0.1")
        self.app.start()
        if not self.app.controller.wait_ready(120):
            raise RuntimeError("the controller did not become ready within 120 s")

    def _configmap(self) -> str | None:
        from ingressctl.k8s.resource import CONFIGMAPS

        for cm in self.client.list(CONFIGMAPS, None)["items"]:
            md = cm["metadata"]
            if md.get("name") == "nginx-config":
                return f"{md['namespace']}/{md['name']}"
        return None

    def _start_backends(self) -> None:
        """One backend per Service with a selector; an EndpointSlice per Service pointing at it."""
        from ingressctl.k8s.resource import ENDPOINTSLICES, SERVICES

        for svc in self.client.list(SERVICES, None)["items"]:
            md, spec = svc["metadata"], svc.get("spec") or {}
            if spec.get("type") == "ExternalName" or not spec.get("ports"):
                continue
            name, ns = md["name"], md["namespace"]
            backend = Backend(name).start()
            self.backends[f"{ns}/{name}"] = backend
            self.client.create(ENDPOINTSLICES, ns, {
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": f"{name}-demo", "namespace": ns, "labels": {SERVICE_NAME_LABEL: name}},
                "addressType": "IPv4",
                "ports": [{"name": p.get("name", ""), "port": backend.port, "protocol": "TCP"}
                          for p in spec["ports"]],
                "endpoints": [{"addresses": [backend.host], "conditions": {"ready": True},
                               "targetRef": {"kind": "Pod", "namespace": ns, "name": f"{name}-0"}}],
            })

    def _create_missing_tls_secrets(self) -> None:
        """A self-signed certificate for each TLS Secret an Ingress names but the manifests lack, and one for
        the default server (so that HTTPS to an unknown host gets the default server's 404)."""
        from ingressctl.devcluster.tlsutil import generate
        from ingressctl.k8s.errors import ApiError
        from ingressctl.k8s.resource import INGRESSES, SECRETS

        wanted: dict[tuple[str, str], str] = {DEFAULT_SERVER_SECRET: "default.ingressctl.demo"}
        for ing in self.client.list(INGRESSES, None)["items"]:
            ns = ing["metadata"]["namespace"]
            for tls in (ing.get("spec") or {}).get("tls") or []:
                if tls.get("secretName"):
                    wanted.setdefault((ns, tls["secretName"]), (tls.get("hosts") or ["localhost"])[0])
        for (ns, name), host in wanted.items():
            cert = generate(host)
            secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                      "metadata": {"name": name, "namespace": ns},
                      "data": {"tls.crt": base64.b64encode(cert.cert_pem).decode(),
                               "tls.key": base64.b64encode(cert.key_pem).decode()}}
            try:
                self.client.create(SECRETS, ns, secret)
            except ApiError as e:
                if not e.is_already_exists:
                    raise

    def _routes(self) -> list[Route]:
        from ingressctl.k8s.resource import INGRESSES

        routes: list[Route] = []
        for ing in self.client.list(INGRESSES, None)["items"]:
            spec = ing.get("spec") or {}
            cls = (ing["metadata"].get("annotations") or {}).get("kubernetes.io/ingress.class") or spec.get(
                "ingressClassName")
            if cls != "nginx":
                self.ignored_hosts += [r["host"] for r in spec.get("rules") or [] if r.get("host")]
                continue
            tls_hosts = {h for t in spec.get("tls") or [] if t.get("secretName")
                         for h in t.get("hosts") or []}
            for rule in spec.get("rules") or []:
                for p in (rule.get("http") or {}).get("paths") or []:
                    svc = ((p.get("backend") or {}).get("service") or {}).get("name")
                    if rule.get("host") and svc:
                        ns = ing["metadata"]["namespace"]
                        routes.append(Route(rule["host"], p.get("path") or "/", svc, ns,
                                            ing["metadata"]["name"], tls=rule["host"] in tls_hosts))
        return routes

    def _stream_routes(self) -> list[StreamRoute]:
        """Move each GlobalConfiguration listener to a free port (its own if free) and find the
        TransportServers bound to them."""
        from ingressctl.kinds.transportserver.kind import GLOBALCONFIGURATIONS, TRANSPORTSERVERS

        ports: dict[str, int] = {}
        for gc in self.client.list(GLOBALCONFIGURATIONS, None)["items"]:
            md = gc["metadata"]
            self.global_configuration = f"{md['namespace']}/{md['name']}"
            for listener in (gc.get("spec") or {}).get("listeners") or []:
                listener["port"] = free_port(int(listener["port"]), f"listener {listener['name']}")
                ports[listener["name"]] = listener["port"]
            self.client.update(GLOBALCONFIGURATIONS, md["namespace"], md["name"], gc)
            break  # the controller serves one GlobalConfiguration
        routes = []
        for ts in self.client.list(TRANSPORTSERVERS, None)["items"]:
            spec, md = ts.get("spec") or {}, ts["metadata"]
            port = ports.get(str((spec.get("listener") or {}).get("name")))
            upstream = next((u for u in spec.get("upstreams") or []
                             if u.get("name") == (spec.get("action") or {}).get("pass")), None)
            if port and upstream:
                routes.append(StreamRoute(f"{md['namespace']}/{md['name']}", port, upstream["service"],
                                          md["namespace"]))
        return routes

    def check(self) -> bool:
        """Request every route (retrying briefly) and an unknown host; print one line per check."""
        ok = True
        for r in self.routes:
            expected = r.service if f"{r.namespace}/{r.service}" in self.backends else None
            if r.tls:
                status, backend, body = _get_until(self.https_port, r.host, r.path, expected, tls=True)
                good = status == 200 and backend == expected
                ok &= good
                print(f"{'PASS' if good else 'FAIL'}  {r.curl_tls(self.https_port)}  -> {status} "
                      f"{body.strip()!r}")
                status, _, _ = _get_until(self.http_port, r.host, r.path, None, want_status=301)
                good = status == 301
                ok &= good
                print(f"{'PASS' if good else 'FAIL'}  {r.curl(self.http_port)}  -> {status} (to HTTPS)")
                continue
            status, backend, body = _get_until(self.http_port, r.host, r.path, expected)
            good = status == 200 and backend == expected
            ok &= good
            print(f"{'PASS' if good else 'FAIL'}  {r.curl(self.http_port)}  -> {status} {body.strip()!r}")
        for host, why in [("unknown.example.com", "default server"),
                          *((h, "Ingress of another class") for h in self.ignored_hosts)]:
            status, _, _ = _get_until(self.http_port, host, "/", None, want_status=404)
            good = status == 404
            ok &= good
            print(f"{'PASS' if good else 'FAIL'}  curl -H 'Host: {host}' http://127.0.0.1:{self.http_port}/"
                  f"  -> {status} ({why})")
        status, _, _ = _get_until(self.https_port, "127.0.0.1", "/", None, want_status=404, tls=True)
        good = status == 404
        ok &= good
        print(f"{'PASS' if good else 'FAIL'}  curl -k https://127.0.0.1:{self.https_port}/  -> {status} "
              "(default server, generated certificate)")
        for vc in self._vs_checks():
            good, status, backend = run_check(self.http_port, vc)
            ok &= good
            print(f"{'PASS' if good else 'FAIL'}  {vc.curl(self.http_port)}  -> {status} {backend}"
                  f"{f' ({vc.note})' if vc.note else ''}")
        for sr in self.stream_routes:
            # The TransportServer forwards raw TCP: the backend behind it answers HTTP with its name.
            status, backend, body = _get_until(sr.port, "tcp.example", "/", sr.service)
            good = status == 200 and backend == sr.service
            ok &= good
            print(f"{'PASS' if good else 'FAIL'}  {sr.curl()}  -> {status} {body.strip()!r} "
                  f"(TCP through TransportServer {sr.transportserver})")
        ok &= self._check_status()
        return ok

    def _vs_checks(self) -> list[VSCheck]:
        from ingressctl.k8s.errors import ApiError

        try:
            return virtual_server_checks(self.client)
        except ApiError:    # custom resources not installed (another --manifests set)
            return []

    def _check_status(self) -> bool:
        """With an external-status-address, every Ingress of ours reports it in status.loadBalancer."""
        from ingressctl.k8s.resource import CONFIGMAPS, INGRESSES

        ref = self._configmap()
        if ref is None:
            return True
        ns, name = ref.split("/")
        address = (self.client.get(CONFIGMAPS, ns, name).get("data") or {}).get("external-status-address")
        if not address:
            return True
        keys = sorted({f"{r.namespace}/{i}" for r in self.routes for i in self._ingress_names(r)})

        def statuses() -> dict[str, list[str]]:
            out = {}
            for key in keys:
                ing_ns, ing_name = key.split("/")
                status = self.client.get(INGRESSES, ing_ns, ing_name).get("status") or {}
                lb = status.get("loadBalancer") or {}
                out[key] = [e.get("ip") or e.get("hostname") for e in lb.get("ingress") or []]
            return out

        end = time.monotonic() + 30
        got = statuses()
        while any(v != [address] for v in got.values()) and time.monotonic() < end:
            time.sleep(0.2)
            got = statuses()
        good = all(v == [address] for v in got.values())
        print(f"{'PASS' if good else 'FAIL'}  Ingress status.loadBalancer = {address}: {got}")
        return good

    def _ingress_names(self, route: Route) -> list[str]:
        return [route.ingress] if route.ingress else []

    def banner(self) -> str:
        lines = ["", "ingressctl demo is running: a devcluster, the controller and NGINX.", "",
                 f"  ports: HTTP {self.http_port}, HTTPS {self.https_port}, readiness {self.ready_port}, "
                 f"metrics {self.metrics_port}", ""]
        lines += [f"  {r.curl_tls(self.https_port) if r.tls else r.curl(self.http_port)}"
                  for r in self.routes]
        lines += [f"  {vc.curl(self.http_port)}{f'      # {vc.note}' if vc.note else ''}"
                  for vc in self._vs_checks()]
        lines += [f"  {sr.curl()}      # TCP through TransportServer {sr.transportserver}"
                  for sr in self.stream_routes]
        lines += [
            f"  curl -H 'Host: unknown.example.com' http://127.0.0.1:{self.http_port}/      # 404",
            f"  curl -k https://127.0.0.1:{self.https_port}/      # 404 (the default server's generated "
            "certificate)",
            "",
            f"  readiness:  curl http://127.0.0.1:{self.ready_port}/nginx-ready",
            f"  metrics:    curl -s http://127.0.0.1:{self.metrics_port}/metrics | grep reloads_total",
            f"  kubectl:    kubectl --kubeconfig {self.kubeconfig} get ingress,vs,ts,gc,svc,endpointslices "
            "-A",
            "",
            "Change the cluster with kubectl and watch NGINX follow. Ctrl-C stops everything.",
            "",
        ]
        return "\n".join(lines)

    def stop(self) -> None:
        if self.app is not None:
            self.app.stop()
        for b in self.backends.values():
            b.stop()
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.stop()
        if self._tmp_run:
            shutil.rmtree(self._tmp_run, ignore_errors=True)
        if self._lock is not None:
            self._lock.release()


def _get(port: int, host: str, path: str, *, tls: bool = False) -> tuple[int, str, str]:
    conn: http.client.HTTPConnection
    if tls:   # SNI names the host; the demo's certificates are self-signed
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        conn = _SNIConnection(host, "127.0.0.1", port, timeout=10, context=ctx)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers={"Host": host, "Connection": "close"})
        r = conn.getresponse()
        return r.status, r.getheader("X-Backend") or "", r.read().decode(errors="replace")
    finally:
        conn.close()


class _SNIConnection(http.client.HTTPSConnection):
    """HTTPS to an address with another name in SNI (curl's --resolve)."""

    def __init__(self, server_name: str, address: str, port: int, **kw: Any) -> None:
        super().__init__(address, port, **kw)
        self._server_name = server_name

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock,  # type: ignore[attr-defined]
                                              server_hostname=self._server_name)


def _get_until(port: int, host: str, path: str, backend: str | None, *, want_status: int = 200,
               deadline: float = 20.0, tls: bool = False) -> tuple[int, str, str]:
    end = time.monotonic() + deadline
    result: tuple[int, str, str] = (0, "", "")
    while True:
        try:
            result = _get(port, host, path, tls=tls)
        except OSError as e:
            result = (0, "", str(e))
        if result[0] == want_status and (backend is None or result[1] == backend):
            return result
        if time.monotonic() >= end:
            return result
        time.sleep(0.2)


def manifest_files(paths: Sequence[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = glob.glob(os.path.join(p, "*"))
            out += sorted(f for f in found if f.endswith((".yaml", ".yml", ".json")))
        else:
            out.append(p)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ingressctl.demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--manifests", nargs="*", default=[DEFAULT_EXAMPLES, DEFAULT_CR_EXAMPLES],
                   help="files or directories to load (after NIC's CRDs)")
    p.add_argument("--run-dir", default=None,
                   help="where NGINX's files and the kubeconfig go (default .run; with --check a temporary "
                        "directory of its own)")
    p.add_argument("--http-port", type=int, default=0,
                   help="NGINX's HTTP port (0, or a port in use: pick a free one)")
    p.add_argument("--https-port", type=int, default=0,
                   help="NGINX's HTTPS port (0, or a port in use: pick a free one)")
    p.add_argument("--metrics-port", type=int, default=0,
                   help="the Prometheus metrics port (0, or a port in use: pick a free one)")
    p.add_argument("--check", action="store_true", help="run the requests, print PASS/FAIL, exit 0 or 1")
    p.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
    a = p.parse_args(argv)
    configure_logging(LogSettings(format="text", level=a.log_level))

    own_run_dir = tempfile.mkdtemp(prefix="ingressctl-check-") if a.check and a.run_dir is None else ""
    demo = Demo(run_dir=own_run_dir or a.run_dir or ".run", manifests=manifest_files(a.manifests),
                http_port=a.http_port, https_port=a.https_port, metrics_port=a.metrics_port,
                log_level=a.log_level)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        demo.start()
        if a.check:
            ok = demo.check()
            print("demo check " + ("passed" if ok else "FAILED"))
            return 0 if ok else 1
        print(demo.banner(), flush=True)
        while not stop.wait(1.0):
            pass
        print("\nstopping...", flush=True)
        return 0
    except Exception as e:
        print(f"demo failed: {e}", file=sys.stderr)
        return 1
    finally:
        demo.stop()
        if own_run_dir:
            shutil.rmtree(own_run_dir, ignore_errors=True)

