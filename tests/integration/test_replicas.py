"""Two controller replicas (`python -m ingressctl` processes, each with its own NGINX, ports and POD_NAME)
against one devcluster: both serve routed traffic, only the leader's status writes reach the API, a SIGKILLed
leader is replaced once its Lease expires, and a SIGTERMed leader releases its Lease so the other takes over
at once.

Who wrote what: each replica talks to the devcluster through its own recording TCP proxy (its kubeconfig
points there), which parses the HTTP requests passing through. So a status write is attributed to the
replica that sent it, from the wire, not from the replica's own account.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.request
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.helpers import free_ports, http_get, process_gone, wait_until
from tests.integration.harness import NS, Env, rule

pytestmark = pytest.mark.integration

LEASE = "nginx-ingress-leader-election"
LEASE_NS = "default"


@dataclass
class Request:
    method: str
    path: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class RecordingProxy:
    """A TCP relay to the devcluster that records every HTTP request it forwards (method, path, body)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._requests: list[Request] = []
        self._sockets: list[socket.socket] = []
        self.errors: list[str] = []
        self._closed = False
        threading.Thread(target=self._accept, name=f"proxy-{self.port}", daemon=True).start()

    def requests(self, method: str | None = None, contains: str = "", suffix: str = "") -> list[Request]:
        with self._lock:
            return [r for r in self._requests if (method is None or r.method == method)
                    and contains in r.path and r.path.split("?", 1)[0].endswith(suffix)]

    def status_writes(self) -> list[Request]:
        writes = self.requests(contains="/ingresses/", suffix="/status")
        return [r for r in writes if r.method in ("PUT", "PATCH")]

    def lease_writes(self) -> list[Request]:
        """Creates and updates of the Lease, in order."""
        return [r for r in self.requests(contains="/leases")
                if (r.method == "PUT" and f"/leases/{LEASE}" in r.path) or r.method == "POST"]

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        with self._lock:
            for s in self._sockets:
                with contextlib.suppress(OSError):
                    s.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            threading.Thread(target=self._relay_requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._relay, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _relay(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def _relay_requests(self, src: socket.socket, dst: socket.socket) -> None:
        buf = b""
        try:
            while data := src.recv(65536):
                dst.sendall(data)
                buf = self._parse(buf + data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def _parse(self, buf: bytes) -> bytes:
        """Record every complete request in `buf`; return the incomplete rest."""
        while True:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return buf
            lines = buf[:end].decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
            if "chunked" in headers.get("transfer-encoding", ""):
                self.errors.append(f"chunked request body not supported: {lines[0]}")
            length = int(headers.get("content-length") or 0)
            if len(buf) < end + 4 + length:
                return buf
            with self._lock:
                self._requests.append(Request(method, target, buf[end + 4:end + 4 + length]))
            buf = buf[end + 4 + length:]


class Replica:
    """`python -m ingressctl` with its own proxy to the devcluster, NGINX dirs and ports."""

    def __init__(self, env: Env, name: str, *, lease: int, renew: float, retry: float) -> None:
        self.name = name
        self.proxy = RecordingProxy(int(env.cluster.url.rsplit(":", 1)[1]))
        kubeconfig = env.cluster.kubeconfig()
        kubeconfig["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{self.proxy.port}"
        self.kubeconfig = os.path.join(env.tmp, f"kubeconfig-{name}")
        with open(self.kubeconfig, "w") as f:
            yaml.safe_dump(kubeconfig, f)
        self.run_dir = tempfile.mkdtemp(prefix="ic-rep-", dir="/tmp")
        self.conf_dir = os.path.join(env.tmp, f"conf-{name}")
        self.http_port, self.ready_port, self.metrics_port, https_port = free_ports(4)
        self.log_path = os.path.join(env.tmp, f"{name}.log")
        log = open(self.log_path, "w")  # noqa: SIM115 - handed to the child; closed below
        self.p = subprocess.Popen(
            [sys.executable, "-m", "ingressctl", "--kubeconfig", self.kubeconfig,
             "--nginx-conf-dir", self.conf_dir, "--nginx-run-dir", self.run_dir,
             "--default-http-listener-port", str(self.http_port),
             "--default-https-listener-port", str(https_port), "--nginx-status=false",
             "--ready-status-port", str(self.ready_port),
             "--enable-prometheus-metrics", "--prometheus-metrics-listen-port", str(self.metrics_port),
             "--nginx-configmaps", f"{NS}/nginx-config", "--report-ingress-status",
             "--leader-election-lease-duration", str(lease), "--leader-election-renew-deadline", str(renew),
             "--leader-election-retry-period", str(retry), "--log-level", "debug"],
            stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "POD_NAMESPACE": LEASE_NS, "POD_NAME": name},
        )
        log.close()

    def output(self) -> str:
        with open(self.log_path) as f:
            return f.read()[-4000:]

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ready_port}/nginx-ready", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def wait_ready(self) -> None:
        wait_until(lambda: self.ready() or self.p.poll() is not None, f"{self.name} ready")
        assert self.p.poll() is None, self.output()

    def metric(self, name: str) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + "{") or line.startswith(name + " "):
                    return float(line.rsplit(" ", 1)[1])
        raise AssertionError(f"{self.name}: no metric {name}")

    def nginx_pid(self) -> int:
        with open(os.path.join(self.run_dir, "nginx.pid")) as f:
            return int(f.read().strip())

    def close(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(30)
        with contextlib.suppress(OSError, ValueError):
            os.killpg(self.nginx_pid(), signal.SIGKILL)
        self.proxy.close()
        shutil.rmtree(self.run_dir, ignore_errors=True)


@pytest.fixture
def replicas(env: Env) -> Any:
    started: list[Replica] = []

    def start(name: str, **timings: Any) -> Replica:
        r = Replica(env, name, **timings)
        started.append(r)
        return r

    yield start
    for r in started:
        r.close()


def lease(env: Env) -> dict[str, Any]:
    return dict(env.get("leases", LEASE, namespace=LEASE_NS)["spec"])


def holder(env: Env) -> str:
    try:
        return str(lease(env).get("holderIdentity") or "")
    except Exception:
        return ""


def micro_time(text: str) -> datetime.datetime:
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def lb(env: Env, name: str) -> list[dict[str, Any]]:
    ing = env.get("ingresses", name)
    return list(((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress") or [])


def status_address(env: Env, address: str) -> None:
    env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nginx-config", "namespace": NS},
               "data": {"external-status-address": address}})


def wait_statuses(env: Env, names: list[str], address: str) -> None:
    for n in names:
        wait_until(lambda n=n: lb(env, n) == [{"ip": address}], f"status of {n} = {address}")


def api_status_writes(env: Env) -> int:
    return int(env.cluster.stats.count("update", "ingresses/status") +
               env.cluster.stats.count("patch", "ingresses/status"))


def written(r: Replica) -> set[str]:
    """The Ingresses whose status this replica wrote (as seen on the wire)."""
    return {w.path.split("?", 1)[0].split("/")[-2] for w in r.proxy.status_writes()}


def setup_cluster(env: Env, names: list[str]) -> None:
    env.service("web")
    env.endpoints("web", [env.backend("web")])
    for n in names:
        env.ingress(n, [rule(f"{n}.example.com", ("/", "web"))])
    status_address(env, "1.2.3.4")


def start_pair(env: Env, replicas: Any, **timings: Any) -> tuple[Replica, Replica]:
    """Two replicas started together; returns (leader, follower) as the Lease says."""
    a, b = replicas("replica-a", **timings), replicas("replica-b", **timings)
    a.wait_ready()
    b.wait_ready()
    name = wait_until(lambda: holder(env), "a leader")
    return (a, b) if name == "replica-a" else (b, a)


def test_both_serve_only_the_leader_writes_and_a_killed_leader_is_replaced(env: Env, replicas: Any) -> None:
    names = ["app-0", "app-1", "app-2"]
    setup_cluster(env, names)
    lease_s = 6
    leader, follower = start_pair(env, replicas, lease=lease_s, renew=4, retry=0.5)
    wait_statuses(env, names, "1.2.3.4")

    # Every replica serves traffic.
    for r in (leader, follower):
        for n in names:
            wait_until(lambda r=r, n=n: http_get(r.http_port, f"{n}.example.com").backend == "web",
                       f"{r.name} routes {n}")
    # Only the leader's writes reached the API server: it wrote each status, the follower none.
    assert written(leader) == set(names)
    assert follower.proxy.status_writes() == []
    assert api_status_writes(env) == len(leader.proxy.status_writes())
    wait_until(lambda: leader.metric("nginx_ingress_controller_status_flush_written") == len(names),
               "the leader's flush metric")
    assert follower.metric("nginx_ingress_controller_status_flush_written") == 0
    for r in (leader, follower):
        assert r.metric("nginx_ingress_controller_ready") == 1
        assert r.metric("nginx_ingress_controller_time_to_ready_seconds") > 0   # measured from process start

    # A new address: the leader writes it everywhere; the follower (which sees the same change) does not.
    status_address(env, "5.6.7.8")
    wait_statuses(env, names, "5.6.7.8")
    assert follower.proxy.status_writes() == []
    assert api_status_writes(env) == len(leader.proxy.status_writes())
    leader_writes = len(leader.proxy.status_writes())

    # The leader's Pod dies: the controller and its NGINX are killed.
    nginx = leader.nginx_pid()
    leader.p.kill()
    leader.p.wait(30)
    os.killpg(nginx, signal.SIGKILL)
    wait_until(lambda: process_gone(nginx), "the killed leader's nginx is gone")
    last = lease(env)
    assert last["holderIdentity"] == leader.name
    # An Ingress created while nobody leads: the follower serves it at once ...
    env.ingress("late", [rule("late.example.com", ("/", "web"))])
    wait_until(lambda: http_get(follower.http_port, "late.example.com").backend == "web",
               "the follower routes late")

    # ... and, once it has taken the Lease over, writes its status.
    wait_until(lambda: holder(env) == follower.name, "the follower takes the lease over")
    new = lease(env)
    assert new["leaseTransitions"] == last["leaseTransitions"] + 1
    # Never before the dead leader's Lease expired (it may still have been serving as leader until then).
    waited = (micro_time(new["acquireTime"]) - micro_time(last["renewTime"])).total_seconds()
    assert waited >= lease_s - 0.05, f"took the lease {waited:.2f}s after the last renewal"
    wait_statuses(env, [*names, "late"], "5.6.7.8")
    assert written(follower) == {"late"}     # the others already had the right status: not rewritten
    # The new leader keeps every status current.
    status_address(env, "9.9.9.9")
    wait_statuses(env, [*names, "late"], "9.9.9.9")
    assert written(follower) == {*names, "late"}
    assert len(leader.proxy.status_writes()) == leader_writes
    assert api_status_writes(env) == len(leader.proxy.status_writes()) + len(follower.proxy.status_writes())
    assert not leader.proxy.errors and not follower.proxy.errors


def test_sigterm_releases_the_lease_and_the_other_replica_takes_over_at_once(env: Env, replicas: Any) -> None:
    names = ["app-0", "app-1"]
    setup_cluster(env, names)
    lease_s = 30
    leader, follower = start_pair(env, replicas, lease=lease_s, renew=10, retry=0.5)
    wait_statuses(env, names, "1.2.3.4")
    assert follower.proxy.status_writes() == []
    nginx = leader.nginx_pid()

    # SIGTERM: stop taking work, release the Lease, quit NGINX gracefully, exit 0.
    leader.p.send_signal(signal.SIGTERM)
    assert leader.p.wait(60) == 0, leader.output()
    wait_until(lambda: process_gone(nginx), "the leader's nginx quit")
    writes = leader.proxy.lease_writes()
    release = writes[-1].json()["spec"]
    assert release["holderIdentity"] in ("", None), release     # the last thing it wrote: the release
    assert release["leaseDurationSeconds"] == 1
    last_renew = max(micro_time(w.json()["spec"]["renewTime"]) for w in writes[:-1]
                     if w.json()["spec"].get("holderIdentity") == leader.name)

    wait_until(lambda: holder(env) == follower.name, "the follower takes the released lease")
    acquired = micro_time(lease(env)["acquireTime"])
    # Taken over long before the old Lease would have expired (30 s): no waiting for expiry.
    assert acquired < last_renew + datetime.timedelta(seconds=lease_s / 2), (acquired, last_renew)

    # The new leader writes status; the old one is gone and wrote nothing more.
    before = len(leader.proxy.status_writes())
    status_address(env, "5.6.7.8")
    wait_statuses(env, names, "5.6.7.8")
    assert written(follower) == set(names)
    assert len(leader.proxy.status_writes()) == before
    assert http_get(follower.http_port, "app-0.example.com").backend == "web"
    assert not leader.proxy.errors and not follower.proxy.errors
