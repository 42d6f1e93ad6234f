"""Reload verification, after NIC's `internal/nginx/verify.go`: the config version each generation of
workers serves, and the waits that tell a reload took effect.

Guarantees:
- `render_config_version` is config-version.conf: a server on a unix socket answering
  `GET /configVersion` with the version, and NIC's `$config_version_mismatch` map.
- `VersionClient.wait_for_version` returns only once NGINX answers with exactly that version; it raises
  TimeoutError (with the last observation) at the deadline, `Exited` when the master exits, and
  `EmergLogged` when the master printed an [emerg] or [crit] while applying the config (it keeps the old
  one then). Polling backs off after a wrong version and wakes up when NGINX prints, so it takes no CPU
  from a multi-second load.
- `wait_old_workers` returns once the previous generation stopped accepting connections (or, with a
  warning, at the deadline), so every connection made after a reload gets the new config.
"""

from __future__ import annotations

import re
import subprocess
import time

import requests
import requests_unixsocket

from ingressctl.logging import get_logger
from ingressctl.nginx.master import NginxOutput
from ingressctl.nginx.processes import ProcessIdentity, still_accepting
from ingressctl.nginx.stub_status import unix_socket_url

log = get_logger(__name__)

CONFIG_VERSION_PATH = "/configVersion"
_RETRIED_BIND = re.compile(r"\] \d+#\d+: bind\(\) to \S+ failed")
# After a wrong version: wait 25 ms, then a pause doubling up to 250 ms that NGINX's output ends early (it
# prints when new workers start).
_POLL_WRONG_VERSION_SLEEP = 0.025
_POLL_WRONG_VERSION_MAX_SLEEP = 0.25
_OLD_WORKER_POLL = 0.005
_POLL_REQUEST_TIMEOUT_CAP = 2.0


def render_config_version(version: int, socket_path: str) -> str:
    """config-version.conf: a server answering GET /configVersion with `version`, and NIC's mismatch map."""
    return (
        "# Written by ingressctl: the config version these workers serve, to verify reloads.\n"
        "map $http_x_expected_config_version $config_version_mismatch {\n"
        f'    "{version}" "";\n'
        '    default "mismatch";\n'
        "}\n"
        "server {\n"
        f"    listen unix:{socket_path};\n"
        "    access_log off;\n"
        f"    location = {CONFIG_VERSION_PATH} {{\n"
        "        default_type text/plain;\n"
        f"        return 200 {version};\n"
        "    }\n"
        "    location / {\n"
        "        return 404;\n"
        "    }\n"
        "}\n"
    )


class Exited(Exception):
    """The master exited while a version was awaited."""

    def __init__(self, returncode: int) -> None:
        super().__init__(f"nginx exited with code {returncode}")
        self.returncode = returncode


class EmergLogged(Exception):
    """The master printed these [emerg] or [crit] lines while applying a new config."""


class VersionClient:
    """Asks NGINX's workers which config version they serve, over `socket_path` (NIC's verifyClient)."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self._session: requests.Session | None = None

    def wait_for_version(self, proc: subprocess.Popen[bytes], version: int, deadline: float,
                         output: NginxOutput, *, output_seq: int, fail_on_emerg: bool) -> None:
        """Poll GET /configVersion until it returns `version` (NIC's WaitForCorrectVersion).

        Retries at once after a request error (back-to-back errors back off up to 25 ms, so a socket that does
        not exist yet is not polled in a busy loop). After a wrong version it waits 25 ms, then until NGINX
        prints a line or a pause passes that doubles up to 250 ms (a big config takes seconds to load, and
        polling must not take CPU from it).
        Raises TimeoutError (with the last observation), Exited, or EmergLogged when the master logged an
        [emerg] or [crit] while applying the new config (it keeps the old one then).
        """
        if self._session is None:
            self._session = requests_unixsocket.Session()
        session = self._session
        url = unix_socket_url(self.socket_path, CONFIG_VERSION_PATH)
        last = "no response yet"
        errors = 0
        pause = _POLL_WRONG_VERSION_SLEEP
        while True:
            rc = proc.poll()
            if rc is not None:
                raise Exited(rc)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"last: {last}")
            try:
                resp = session.get(url, timeout=min(remaining, _POLL_REQUEST_TIMEOUT_CAP),
                                   headers={"Connection": "close"})
            except requests.RequestException as e:
                last = f"request error: {e}"
                if errors:
                    time.sleep(min(_POLL_WRONG_VERSION_SLEEP, 0.001 * 2 ** min(errors, 5)))
                errors += 1
                continue
            errors = 0
            body = resp.text.strip()
            if resp.status_code == 200 and body == str(version):
                return
            last = f"HTTP {resp.status_code} {body[:100]!r}"
            if fail_on_emerg:
                # The master's [crit] lines fail a reload too (a full shared zone fails it without [emerg]).
                crit = f"[crit] {proc.pid}#"
                emerg = [line for line in output.since(output_seq) if "[emerg]" in line or crit in line]
                # A failed bind() is retried for ~2.5 s; "still could not bind()" ends that cycle.
                if any(not _RETRIED_BIND.search(line) for line in emerg):
                    raise EmergLogged("\n".join(emerg))
            # A big config takes NGINX seconds to load: back off, but wake up when it prints something.
            time.sleep(_POLL_WRONG_VERSION_SLEEP)
            output.wait(output.seq, min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, _POLL_WRONG_VERSION_MAX_SLEEP)


def wait_old_workers(old_workers: set[ProcessIdentity], deadline: float, proc_root: str) -> None:
    """Wait until the previous generation stopped accepting, so that every connection made after
    reload() returns gets the new config (the master tells old workers ~100 ms after new ones start)."""
    while old_workers:
        old_workers = still_accepting(old_workers, proc_root)
        if not old_workers:
            return
        if time.monotonic() > deadline:
            log.warning("old nginx workers still accept connections after the reload",
                        pids=sorted(w.pid for w in old_workers))
            return
        time.sleep(_OLD_WORKER_POLL)
