"""The scale benchmark's backends and load generator.

- Backends: an NGINX of their own (Python servers dropped connections under the churn's load and made
  their own failures), listening on 127.0.0.1 on one port per name, answering every request 200 with the
  header `X-Backend: <name>`.
- Load (a child process, so that its work does not share the benchmark's GIL): `clients` threads, each
  with one keep-alive connection to NGINX, sending GETs round robin over a
  list of (host, path) that must always answer 200 (whatever backend answers it). Anything else (another
  status, a connection closed or reset, a timeout) is a failed request, counted by kind; the thread then
  opens a new connection.
"""

from __future__ import annotations

import http.client
import multiprocessing
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter
from multiprocessing.connection import Connection
from typing import Any

from common import free_port


def _serve(conn: Connection) -> None:
    lock = threading.Lock()
    state: dict[str, Any] = {"run": False, "ok": 0, "failed": Counter(), "targets": [], "port": 0}

    def client(offset: int) -> None:
        c: http.client.HTTPConnection | None = None
        i = offset
        while True:
            if not state["run"] or not state["targets"]:
                if c is not None:
                    c.close()
                    c = None
                time.sleep(0.05)
                continue
            host, path = state["targets"][i % len(state["targets"])]
            i += 1
            why = ""
            try:
                if c is None:
                    c = http.client.HTTPConnection("127.0.0.1", state["port"], timeout=10)
                c.request("GET", path, headers={"Host": host})
                r = c.getresponse()
                r.read()
                if r.status != 200:
                    why = f"HTTP {r.status}"
            except (OSError, http.client.HTTPException) as e:
                why = type(e).__name__
                if c is not None:
                    c.close()
                c = None
            with lock:
                if why:
                    state["failed"][why] += 1
                else:
                    state["ok"] += 1

    conn.send("ready")
    threads_started = 0
    while True:
        try:
            cmd, arg = conn.recv()
        except EOFError:
            return
        result: Any = None
        with lock:
            if cmd == "start":
                port, targets, clients = arg
                state.update(port=port, targets=list(targets), ok=0, failed=Counter(), run=True)
                while threads_started < clients:
                    threading.Thread(target=client, args=(threads_started * 7,), daemon=True).start()
                    threads_started += 1
            elif cmd == "stop":
                state["run"] = False
                result = {"ok": state["ok"], "failed": dict(state["failed"])}
            elif cmd == "stats":
                result = {"ok": state["ok"], "failed": dict(state["failed"])}
        conn.send(result)


class Backends:
    """An NGINX serving one port per backend name (see the module docstring)."""

    def __init__(self, names: list[str], binary: str = "nginx") -> None:
        self.dir = tempfile.mkdtemp(prefix="bench-backends-", dir="/tmp")
        self.ports = {name: free_port() for name in names}
        servers = "".join(
            f"    server {{ listen 127.0.0.1:{port} backlog=4096; keepalive_requests 100000;\n"
            f"             location / {{ add_header X-Backend {name}; return 200 \"{name}\\n\"; }} }}\n"
            for name, port in self.ports.items())
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"daemon off;\nworker_processes 1;\nerror_log stderr error;\npid {self.dir}/nginx.pid;\n"
                    f"events {{ worker_connections 8192; }}\nhttp {{\n    access_log off;\n"
                    + "".join(f"    {d}_temp_path {self.dir}/{d};\n"
                              for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
                    + servers + "}\n")
        self.proc = subprocess.Popen([binary, "-c", conf, "-p", self.dir + "/"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                socket.create_connection(("127.0.0.1", next(iter(self.ports.values()))), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the backends' NGINX did not start")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


class LoadProcess:
    """Backends and the load generator in a child process, driven over a pipe."""

    def __init__(self, names: list[str], binary: str = "nginx") -> None:
        self.backends = Backends(names, binary)
        self.ports = self.backends.ports
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self._proc.start()
        if not self._conn.poll(60):
            raise RuntimeError("the load generator did not start")
        self._conn.recv()
        self._lock = threading.Lock()

    def _call(self, cmd: str, arg: Any = None) -> Any:
        with self._lock:
            self._conn.send((cmd, arg))
            return self._conn.recv()

    def start_load(self, nginx_port: int, targets: list[tuple[str, str]], clients: int) -> None:
        self._call("start", (nginx_port, targets, clients))

    def stop_load(self) -> dict[str, Any]:
        return dict(self._call("stop"))

    def stats(self) -> dict[str, Any]:
        return dict(self._call("stats"))

    def close(self) -> None:
        self._proc.kill()
        self._proc.join(5)
        self.backends.close()
