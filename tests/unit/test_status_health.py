"""The readiness server: 503 until ready, then 200 "Ready\\n"; /healthz; ephemeral port; raising callbacks."""

from __future__ import annotations

import urllib.error
import urllib.request

from ingressctl.health import HealthServer


def get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_ready_flips_and_can_be_withdrawn() -> None:
    state = {"ready": False}
    s = HealthServer(is_ready=lambda: state["ready"], host="127.0.0.1", port=0)
    s.start()
    try:
        assert s.port != 0
        assert get(s.port, "/nginx-ready")[0] == 503
        state["ready"] = True
        assert get(s.port, "/nginx-ready") == (200, b"Ready\n")
        state["ready"] = False
        assert get(s.port, "/nginx-ready")[0] == 503
        assert get(s.port, "/healthz") == (200, b"ok\n")
        assert get(s.port, "/nope")[0] == 404
    finally:
        s.stop()


def test_raising_callbacks_mean_not_ready() -> None:
    def boom() -> bool:
        raise RuntimeError("x")

    s = HealthServer(is_ready=boom, is_alive=boom, host="127.0.0.1", port=0)
    s.start()
    try:
        assert get(s.port, "/nginx-ready")[0] == 503
        assert get(s.port, "/healthz")[0] == 503
        assert get(s.port, "/nginx-ready")[0] == 503   # still serving after errors
    finally:
        s.stop()
