"""Shared benchmark helpers: a devcluster in a child process, cluster shapes, the real controller as a child
process, and output (table, JSON, plot).

- `ClusterProcess` runs `DevCluster` in its own process (so its CPU does not share the controller's GIL; on a
  2-core machine both still share the machine) and answers commands over a pipe: generate a shape, set
  latency, read request statistics.
- Shapes: `plain_shape` (N Ingresses over M namespaces, one host each, each with its Service and
  EndpointSlice, a share with a TLS Secret), `annotated_shape` (the plain shape with every other Ingress
  carrying five annotations of one family: `ANNOTATION_SETS`) and `mergeable_shape` (NIC issue #9657:
  namespaces x masters x minions, one minion per master for each of the namespace's Services).
- `ControllerProcess` starts `python -m ingressctl` against a kubeconfig with NGINX on free ports and its
  files in a temporary directory, waits for `/nginx-ready`, and reads its peak RSS (VmHWM), NGINX's config
  version (= successful reloads) and its JSON log.
- NGINX: `nginx_t_seconds` (wall and CPU time of `nginx -t` of a configuration, e.g. a controller's
  `main_config_path`), `nginx_worker_pids` and `process_cpu_seconds` (the workers' CPU time).
- `plot_against_n`: a PNG of measured series against the number of Ingresses.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import multiprocessing
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CLASS = "nginx"
CONFIG_NS = "nginx-ingress"
CONFIG_MAP = "nginx-config"
POD_NAME = "ingressctl-bench"
STATUS = "ingresses/status"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ------------------------------------------------------------------------------------------- objects

_CERTS: dict[str, tuple[str, str]] = {}


def tls_pair(key_type: str = "rsa") -> tuple[str, str]:
    """One self-signed certificate and key (base64 of the PEM; RSA-2048 or ECDSA P-256), shared by every TLS
    Secret: NGINX still builds one SSL context per server block, which is what costs."""
    if key_type not in _CERTS:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec, rsa
        from cryptography.x509.oid import NameOID

        key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey = (
            rsa.generate_private_key(public_exponent=65537, key_size=2048) if key_type == "rsa"
            else ec.generate_private_key(ec.SECP256R1()))
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bench.example.com")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
                .not_valid_after(now + datetime.timedelta(days=30))
                .add_extension(x509.SubjectAlternativeName([x509.DNSName("*.example.com")]), critical=False)
                .sign(key, hashes.SHA256()))
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        fmt = serialization.PrivateFormat.TraditionalOpenSSL
        key_pem = key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption())
        _CERTS[key_type] = (base64.b64encode(cert_pem).decode(), base64.b64encode(key_pem).decode())
    return _CERTS[key_type]


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def service(ns: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns,
                                                                "labels": {"app": name}},
            "spec": {"type": "ClusterIP", "selector": {"app": name},
                     "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}}


def endpoint_slice(ns: str, svc: str, address: str, port: int) -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": f"{svc}-abcde", "namespace": ns,
                         "labels": {"kubernetes.io/service-name": svc,
                                    "endpointslice.kubernetes.io/managed-by":
                                        "endpointslice-controller.k8s.io"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [address], "conditions": {"ready": True, "serving": True},
                           "targetRef": {"kind": "Pod", "namespace": ns, "name": f"{svc}-0"}}],
            "ports": [{"name": "http", "port": port, "protocol": "TCP"}]}


def tls_secret(ns: str, name: str, key_type: str = "rsa") -> dict[str, Any]:
    crt, key = tls_pair(key_type)
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": name, "namespace": ns}, "data": {"tls.crt": crt, "tls.key": key}}


def ingress(ns: str, name: str, host: str, paths: list[tuple[str, str]], *, tls_secret_name: str = "",
            annotations: dict[str, str] | None = None, cls: str = CLASS) -> dict[str, Any]:
    rule: dict[str, Any] = {"host": host}
    if paths:
        rule["http"] = {"paths": [{"path": p, "pathType": "Prefix",
                                   "backend": {"service": {"name": svc, "port": {"number": 80}}}}
                                  for p, svc in paths]}
    spec: dict[str, Any] = {"ingressClassName": cls, "rules": [rule]}
    if tls_secret_name:
        spec["tls"] = [{"hosts": [host], "secretName": tls_secret_name}]
    md: dict[str, Any] = {"name": name, "namespace": ns}
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": md, "spec": spec}


def plain_shape(n: int, namespaces: int, tls_share: float, address: str = "127.0.0.1",
                port: int = 8080, key_type: str = "rsa", annotations: dict[str, str] | None = None,
                annotated_every: int = 2) -> Iterator[dict[str, Any]]:
    """N Ingresses `app-<i>` (host app-<i>.example.com, paths / and /api) spread over `namespaces`
    namespaces, each with its Service and EndpointSlice; every k-th (tls_share) has a TLS Secret; with
    `annotations`, every `annotated_every`-th Ingress (starting with the second) carries them."""
    for k in range(min(n, namespaces)):
        yield namespace(f"team-{k}")
    tls_every = round(1 / tls_share) if tls_share > 0 else 0
    for i in range(n):
        ns = f"team-{i % namespaces}"
        svc = f"svc-{i}"
        yield service(ns, svc)
        yield endpoint_slice(ns, svc, address, port)
        secret = ""
        if tls_every and i % tls_every == 0:
            secret = f"tls-{i}"
            yield tls_secret(ns, secret, key_type)
        yield ingress(ns, f"app-{i}", f"app-{i}.example.com", [("/", svc), ("/api", svc)],
                      tls_secret_name=secret,
                      annotations=annotations if annotations and i % annotated_every == 1 else None)


# Five commonly used annotations of each family with the same effect where the families allow it: a body
# limit, no HTTPS redirect, a read timeout and a rate limit (zones of the same size); ingress-nginx's fifth is
# an allow list (NIC has it only as a Policy), NIC's fifth the zone size that ingress-nginx's rate limit
# implies (5m).
ANNOTATION_SETS: dict[str, dict[str, str]] = {
    "nginx.org": {
        "nginx.org/client-max-body-size": "8m",
        "nginx.org/ssl-redirect": "false",
        "nginx.org/proxy-read-timeout": "120s",
        "nginx.org/limit-req-rate": "20r/s",
        "nginx.org/limit-req-zone-size": "5m",
    },
    "ingress-nginx": {
        "nginx.ingress.kubernetes.io/proxy-body-size": "8m",
        "nginx.ingress.kubernetes.io/ssl-redirect": "false",
        "nginx.ingress.kubernetes.io/proxy-read-timeout": "120",
        "nginx.ingress.kubernetes.io/whitelist-source-range": "127.0.0.0/8, 10.0.0.0/8",
        "nginx.ingress.kubernetes.io/limit-rps": "20",
    },
}


def annotated_shape(n: int, namespaces: int, tls_share: float, family: str, address: str = "127.0.0.1",
                    port: int = 8080, key_type: str = "rsa") -> Iterator[dict[str, Any]]:
    """The plain shape with half of its Ingresses carrying the five annotations of `ANNOTATION_SETS[family]`
    (ingress-nginx's are read with `--ingress-nginx-compat`)."""
    return plain_shape(n, namespaces, tls_share, address, port, key_type, annotations=ANNOTATION_SETS[family])


def shop_namespace(ns: str, services: int, address: str, port: int) -> Iterator[dict[str, Any]]:
    """A namespace of the #9657 layout with its Services `svc-<s>` and their EndpointSlices."""
    yield namespace(ns)
    for s in range(services):
        svc = f"svc-{s}"
        yield service(ns, svc)
        yield endpoint_slice(ns, svc, address, port)


def mergeable_shape(namespaces: int, masters: int, minions: int, address: str = "127.0.0.1",
                    port: int = 8080) -> Iterator[dict[str, Any]]:
    """NIC #9657: per namespace `masters` masters (one host each) and `minions` Services, each Service with
    one minion per master (path /<svc>)."""
    for k in range(namespaces):
        ns = f"shop-{k}"
        yield from shop_namespace(ns, minions, address, port)
        for m in range(masters):
            host = f"d{m}.shop-{k}.example.com"
            yield ingress(ns, f"master-{m}", host, [],
                          annotations={"nginx.org/mergeable-ingress-type": "master"})
            for s in range(minions):
                yield ingress(ns, f"minion-{m}-{s}", host, [(f"/svc-{s}", f"svc-{s}")],
                              annotations={"nginx.org/mergeable-ingress-type": "minion"})


INGRESS_NGINX_CLASS = "nginx-community"


def shared_shape(namespaces: int, hosts: int, paths: int, address: str = "127.0.0.1",
                 port: int = 8080) -> Iterator[dict[str, Any]]:
    """The #9657 layout as ingress-nginx users write it: per namespace `hosts` hosts, each named by `paths`
    Ingresses of an IngressClass of controller k8s.io/ingress-nginx (one path /svc-<s> each, no master):
    with `--ingress-nginx-compat`, one server per host serving all of them."""
    yield {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
           "metadata": {"name": INGRESS_NGINX_CLASS}, "spec": {"controller": "k8s.io/ingress-nginx"}}
    for k in range(namespaces):
        ns = f"shop-{k}"
        yield from shop_namespace(ns, paths, address, port)
        for m in range(hosts):
            host = f"d{m}.shop-{k}.example.com"
            for s in range(paths):
                yield ingress(ns, f"app-{m}-{s}", host, [(f"/svc-{s}", f"svc-{s}")], cls=INGRESS_NGINX_CLASS)


def base_objects(status_address: str) -> list[dict[str, Any]]:
    """The IngressClass, the controller's namespace and its ConfigMap (with external-status-address)."""
    return [
        {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": CLASS},
         "spec": {"controller": "nginx.org/ingress-controller"}},
        namespace(CONFIG_NS),
        config_map(status_address),
    ]


def config_map(status_address: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIG_MAP, "namespace": CONFIG_NS},
            "data": {"external-status-address": status_address, "worker-processes": "1"}}


def count_kinds(objects: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in objects:
        out[o["kind"]] = out.get(o["kind"], 0) + 1
    return out


# ------------------------------------------------------------------------------------------- devcluster

def _serve(conn: Connection, kubeconfig: str, history: int) -> None:
    from ingressctl.devcluster import DevCluster
    from ingressctl.logging import configure_logging
    from ingressctl.settings import LogSettings

    configure_logging(LogSettings(format="text", level="error"))
    shapes: dict[str, Callable[..., Iterator[dict[str, Any]]]] = {
        "plain": plain_shape, "annotated": annotated_shape, "mergeable": mergeable_shape,
        "shared": shared_shape}
    with DevCluster(history=history) as dc:
        dc.write_kubeconfig(kubeconfig)
        conn.send(dc.url)
        while True:
            try:
                cmd, args = conn.recv()
            except EOFError:
                return
            try:
                result: Any = None
                if cmd == "stop":
                    conn.send(None)
                    return
                if cmd == "load_shape":
                    shape, kwargs = args
                    objs = list(shapes[shape](**kwargs))
                    t0 = time.perf_counter()
                    dc.load(objs)
                    result = {"kinds": count_kinds(objs), "load_seconds": time.perf_counter() - t0}
                elif cmd == "load":
                    dc.load(args)
                elif cmd == "set_latency":
                    ms, verb, resource = args
                    dc.faults.set_latency(ms, verb=verb, resource=resource)
                elif cmd == "reset_faults":
                    dc.faults.reset()
                elif cmd == "reset_stats":
                    dc.stats.reset()
                elif cmd == "stats":
                    result = {"counts": {f"{v} {r}": n for (v, r), n in dc.stats.counts().items()},
                              "status_updates": dc.stats.count("update", STATUS),
                              "status_max_in_flight": dc.stats.max_in_flight("update", STATUS)}
                elif cmd == "status_updates":
                    result = dc.stats.count("update", STATUS)
                elif cmd == "rss":
                    result = _vm_hwm(os.getpid())
                else:
                    raise ValueError(f"unknown command {cmd!r}")
                conn.send(("ok", result))
            except Exception as e:  # reported to the parent
                conn.send(("error", repr(e)))


class ClusterProcess:
    """A devcluster in a child process, driven over a pipe."""

    def __init__(self, workdir: str, *, history: int = 50_000) -> None:
        self.kubeconfig = os.path.join(workdir, "kubeconfig")
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, self.kubeconfig, history), daemon=True)
        self._proc.start()
        if not self._conn.poll(120):
            raise RuntimeError("devcluster did not start")
        self.url = self._conn.recv()
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        return int(self._proc.pid or 0)

    def call(self, cmd: str, args: Any = None, timeout: float = 1800) -> Any:
        with self._lock:
            self._conn.send((cmd, args))
            if not self._conn.poll(timeout):
                raise RuntimeError(f"devcluster did not answer {cmd}")
            state, result = self._conn.recv()
        if state != "ok":
            raise RuntimeError(f"devcluster {cmd} failed: {result}")
        return result

    def load_shape(self, shape: str, **kwargs: Any) -> dict[str, Any]:
        return dict(self.call("load_shape", (shape, kwargs)))

    def load(self, objects: list[dict[str, Any]]) -> None:
        self.call("load", objects)

    def set_latency(self, ms: float, verb: str | None = None, resource: str | None = None) -> None:
        self.call("set_latency", (ms, verb, resource))

    def close(self) -> None:
        with contextlib.suppress(Exception), self._lock:
            self._conn.send(("stop", None))
            self._conn.poll(10)
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(5)


# ------------------------------------------------------------------------------------------- controller

def nginx_t_seconds(main_config_path: str, binary: str = "nginx") -> tuple[float, float]:
    """(wall, CPU) seconds of one `nginx -t` of a configuration; the CPU time (user + system of the child) is
    what other load on a shared machine disturbs least. RuntimeError when NGINX rejects it."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([binary, "-t", "-q", "-c", main_config_path], capture_output=True, text=True,
                          check=False)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"nginx -t failed: {proc.stderr.strip()[:500]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def nginx_worker_pids(controller_pid: int) -> list[int]:
    """The NGINX worker processes under a controller (its NGINX master's children)."""
    out = []
    todo = _children(controller_pid)
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cmd.startswith("nginx: worker process"):
            out.append(pid)
        todo.extend(_children(pid))
    return out


def _cpu_times(pid: int) -> tuple[float, float, float, float]:
    """utime, stime, cutime, cstime of /proc/<pid>/stat in seconds (zeros when the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return 0.0, 0.0, 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick, int(fields[13]) / tick, int(fields[14]) / tick


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (0 when it is gone)."""
    user, system, _, _ = _cpu_times(pid)
    return user + system


def process_cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process so far, its reaped children's included (0 when it is gone)."""
    user, system, children_user, children_system = _cpu_times(pid)
    return user + children_user, system + children_system


def _vm_hwm(pid: int) -> int:
    """Peak resident set size in bytes (VmHWM), 0 if unknown."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class ControllerProcess:
    """`python -m ingressctl` as a child process with NGINX on free ports and files in a temporary dir."""

    def __init__(self, kubeconfig: str, *, legacy: bool = False, extra: list[str] | None = None,
                 log_level: str = "info", workdir: str | None = None, profile: str | None = None) -> None:
        """`profile`: write a py-spy profile (collapsed stacks) of the controller to this path."""
        self.dir = tempfile.mkdtemp(prefix="ic-bench-", dir=workdir or "/tmp")
        self.http_port, self.https_port, self.ready_port = free_port(), free_port(), free_port()
        # NGINX's workers (`nobody` under root) read the certificates at handshakes: traversable, as deployed.
        for d in (workdir, self.dir):
            if d:
                os.chmod(d, 0o711)
        self.run_dir = os.path.join(self.dir, "run")
        self.main_config_path = os.path.join(self.dir, "conf", "nginx.conf")
        self.log_path = os.path.join(self.dir, "controller.log")
        self.args = [
            sys.executable, "-m", "ingressctl", "--kubeconfig", kubeconfig,
            "--nginx-conf-dir", os.path.join(self.dir, "conf"), "--nginx-run-dir", self.run_dir,
            "--default-http-listener-port", str(self.http_port),
            "--default-https-listener-port", str(self.https_port),
            "--ready-status-port", str(self.ready_port), "--nginx-status=false",
            "--nginx-reload-timeout", "900000",
            "--nginx-configmaps", f"{CONFIG_NS}/{CONFIG_MAP}", "--report-ingress-status",
            "--log-format", "json", "--log-level", log_level,
            *(["--legacy-startup"] if legacy else []), *(extra or []),
        ]
        if profile:
            spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
            self.args = [spy, "record", "--format", "raw", "--rate", "100", "--nonblocking", "-o", profile,
                         "--", *self.args]
        self.profiling = bool(profile)
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.ready_at = 0.0

    def start(self) -> None:
        env = dict(os.environ, POD_NAMESPACE=CONFIG_NS, POD_NAME=POD_NAME, PYTHONUNBUFFERED="1")
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(self.args, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     cwd=str(ROOT), start_new_session=True)

    @property
    def pid(self) -> int:
        """The controller's pid (the child of py-spy when profiling)."""
        assert self.proc is not None
        if not self.profiling:
            return self.proc.pid
        for _ in range(200):
            try:
                with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                    kids = f.read().split()
            except OSError:
                kids = []
            if kids:
                return int(kids[0])
            time.sleep(0.05)
        return self.proc.pid

    def is_ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ready_port}/nginx-ready", timeout=2) as r:
                return int(r.status) == 200
        except Exception:
            return False

    def wait_ready(self, timeout: float, interval: float = 0.05) -> float:
        """Seconds from process start to /nginx-ready 200 (late by up to `interval`: polling every 10 ms, as
        this did before, cost the controller ~4 s of CPU and GIL time at 10,000 Ingresses)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"controller exited with {self.proc.returncode}; log: {self.log_path}\n"
                                   + self.tail())
            if self.is_ready():
                self.ready_at = time.monotonic()
                return self.ready_at - self.started_at
            time.sleep(interval)
        raise TimeoutError(f"controller not ready after {timeout}s; log: {self.log_path}\n" + self.tail())

    def peak_rss(self) -> int:
        return _vm_hwm(self.pid)

    def config_version(self) -> int:
        """The config version NGINX serves (the number of successful reloads since start)."""
        import requests_unixsocket

        sock = os.path.join(self.run_dir, "nginx-config-version.sock").replace("/", "%2F")
        with requests_unixsocket.Session() as s:
            r = s.get(f"http+unix://{sock}/configVersion", timeout=10)
            return int(r.text.strip())

    def log_events(self) -> list[dict[str, Any]]:
        out = []
        with open(self.log_path, "rb") as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
        return out

    def find_log(self, event: str) -> dict[str, Any] | None:
        for e in self.log_events():
            if e.get("event") == event:
                return e
        return None

    def tail(self, n: int = 20) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return b"".join(f.readlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 60) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        with contextlib.suppress(Exception):
            self._log.close()

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------------------------------------- output

def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for k, r in enumerate(cells):
        print("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
        if k == 0:
            print("  ".join("-" * w for w in widths))


def write_json(out_dir: str | None, name: str, data: Any) -> str | None:
    if not out_dir:
        return None
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    with open(path, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
    return path


def machine() -> dict[str, Any]:
    return {"python": sys.version.split()[0], "cpus": os.cpu_count(), "load_average_1m": os.getloadavg()[0]}


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot_against_n(path: str, title: str, ylabel: str, series: dict[str, list[tuple[int, float]]], *,
                   goals: dict[str, float] | None = None, log_y: bool = False,
                   style: Callable[[str], str] | None = None) -> str | None:
    """A PNG of each named series of (N, value) points against the number of Ingresses (`style(name)`: its
    matplotlib format, default "o-"), with horizontal goal lines; None (and a note) without matplotlib."""
    if not have_matplotlib():
        print("matplotlib is not installed: no plot (pip install matplotlib, or the project's bench extra)")
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, pts in sorted(series.items()):
        pts = sorted(pts)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style(name) if style else "o-", label=name)
    for name, y in (goals or {}).items():
        ax.axhline(y, color="grey", lw=0.8, ls=":")
        ax.annotate(name, (0, y), xycoords=("axes fraction", "data"), fontsize=7, color="grey",
                    va="bottom")
    ax.set_xlabel("Ingresses")
    ax.set_ylabel(ylabel)
    if log_y:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def mb(n: int) -> str:
    return f"{n / 1e6:.0f}"


# ------------------------------------------------------------------------------------------- NGINX memory

def _pss(pid: int) -> int:
    """Proportional set size in bytes (shared pages split between the processes sharing them), 0 if gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def nginx_pss(run_dir: str) -> tuple[int, int]:
    """The summed PSS of the NGINX master named by `<run_dir>/nginx.pid` and all its children (workers of
    every generation still alive), and how many processes that is; (0, 0) without a master."""
    try:
        with open(os.path.join(run_dir, "nginx.pid")) as f:
            master = int(f.read().strip())
    except (OSError, ValueError):
        return 0, 0
    pids = [master]
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == master:
            pids.append(int(entry))
    return sum(_pss(p) for p in pids), len(pids)
