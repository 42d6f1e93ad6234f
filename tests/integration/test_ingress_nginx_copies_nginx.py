"""ingress-nginx's request copies (`mirror-target`, `mirror-host`, `mirror-request-body`) through the real
controller (`--ingress-nginx-compat`), devcluster, kubectl and a real NGINX, with the manifest of
tests/integration/data/ingress-nginx/mirror.yaml and a copy backend on the loopback address: the primary
backend answers and a copy arrives with the expected Host, URI and body (none with the body off); a copy
backend that is down or still busy does not change or hold up the client's answer; hostile values reject
only their Ingress."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import free_port, wait_until
from tests.integration.harness import NS, Env
from tests.integration.ingress_nginx_helpers import DATA, compat_controller, request, special
from tests.webhooks import Kubectl

pytestmark = pytest.mark.integration


class Copies:
    """The copies' backend: records (method, path, headers, body) of every request and answers 500 (an
    answer the client must never see); a request for `/hold` waits until `release` is set."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.holding = threading.Event()
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append((self.command, self.path, headers, body))
                if self.path.startswith("/hold"):
                    outer.holding.set()
                    outer.release.wait(120)
                self.send_response(500)
                self.send_header("Content-Length", "5")
                self.end_headers()
                self.wfile.write(b"copy\n")

            do_GET = do_POST = do_PUT = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def copy_of(self, path: str) -> tuple[str, str, dict[str, str], bytes]:
        """The copy whose URI is `path` (it may arrive after the client's answer), taken from the record."""
        found = wait_until(lambda: next((r for r in self.requests if r[1] == path), None),
                           f"a copy of {path}")
        self.requests.remove(found)
        return found


@pytest.fixture
def copies() -> Any:
    c = Copies()
    yield c
    c.stop()


def apply_copies_manifest(env: Env, kubectl: Kubectl, tmp_path: Path, copies: Copies) -> None:
    env.delete("ingressclasses", "nginx", None)
    env.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                "metadata": {"name": "ingressctl"}, "spec": {"controller": "nginx.org/ingress-controller"}})
    manifest = tmp_path / "mirror.yaml"
    manifest.write_text((DATA / "mirror.yaml").read_text().replace("COPIES", copies.address)
                        .replace("DOWN", f"127.0.0.1:{free_port()}"))
    done = kubectl.run("apply", "-f", str(manifest))
    assert done.returncode == 0, done.stderr


def test_requests_are_copied_and_the_client_gets_the_primary_answer(env: Env, kubectl: Kubectl,
                                                                    tmp_path: Path, copies: Copies) -> None:
    primary = special(env, "primary")
    env.service("primary")
    env.endpoints("primary", [primary])
    apply_copies_manifest(env, kubectl, tmp_path, copies)
    c = compat_controller(env)
    port = c.http_port
    wait_until(lambda: request(port, "shadowed.example.com").status == 200, "shadowed served")
    wait_until(lambda: request(port, "bodiless.example.com").status == 200, "bodiless served")

    # The copy: the original URI and body, with the Host of mirror-host; the client sees the primary's answer.
    r = request(port, "shadowed.example.com", "/orders?id=7", method="POST", body=b"order-7")
    assert (r.status, r.body) == (200, "primary POST shadowed.example.com/orders?id=7\n")
    method, path, headers, body = copies.copy_of("/orders?id=7")
    assert (method, body) == ("POST", b"order-7")
    assert headers["host"] == "test.env.example.com" and headers["content-length"] == "7"
    r = request(port, "shadowed.example.com", "/a/b")
    assert (r.status, r.body) == (200, "primary GET shadowed.example.com/a/b\n")
    assert copies.copy_of("/a/b")[0] == "GET"

    # mirror-request-body off: the copy has neither the body nor its length; the Host is the target's; the
    # primary still gets the body (its answer is the client's).
    r = request(port, "bodiless.example.com", "/items?x=1", method="POST", body=b"secret")
    assert (r.status, r.body) == (200, "primary POST bodiless.example.com/items?x=1\n")
    method, path, headers, body = copies.copy_of("/copy/items?x=1")
    assert (method, body) == ("POST", b"")
    assert headers["host"] == "127.0.0.1" and "content-length" not in headers
    assert "transfer-encoding" not in headers

    # The copies' backend busy: the client's answer comes while the copy is still held there.
    r = request(port, "shadowed.example.com", "/hold")
    assert (r.status, r.body) == (200, "primary GET shadowed.example.com/hold\n")
    wait_until(copies.holding.is_set, "the copy of /hold at its backend")
    assert not copies.release.is_set()
    copies.release.set()
    assert copies.copy_of("/hold")[0] == "GET"

    # The copies' backend down: the client's answer is the same.
    hits = primary.hits
    for path in ("/", "/x?y=1"):
        r = request(port, "unheard.example.com", path, method="POST", body=b"data")
        assert (r.status, r.body) == (200, f"primary POST unheard.example.com{path}\n")
    assert primary.hits == hits + 2

    # Hostile values: only their Ingress is rejected, with the reason; nothing of it reaches NGINX.
    env.wait_event("injected-target", "Rejected", "nginx.ingress.kubernetes.io/mirror-target: Invalid value")
    env.wait_event("injected-host", "Rejected", "nginx.ingress.kubernetes.io/mirror-host: Invalid value")
    for name in ("injected-target", "injected-host"):
        event = env.wait_event(name, "Rejected")
        assert event["type"] == "Warning"
        assert request(port, f"{name}.example.com", "/y").status == 404
        assert not Path(c.manager.conf_dir, "conf.d", f"{NS}-{name}.conf").exists()
    conf = "\n".join(p.read_text() for p in Path(c.manager.conf_dir, "conf.d").glob("*.conf"))
    assert "owned" not in conf and "X-Injected" not in conf
    assert request(port, "shadowed.example.com", "/still").status == 200
